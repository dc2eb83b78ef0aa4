//! Calls matched to their replies by correlation id, on the simulator, over seeds: many in
//! flight across connections, answered out of order, beside plain messages.

mod common;

use common::{pair, SEEDS};
use xrdma_app::{AppError, Bytes, Span};

/// A request of `size` bytes that no other request of a test equals.
fn request(size: usize, salt: u8) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u8).wrapping_mul(13) ^ salt)
        .collect()
}

/// The server's answer to `req`.
fn answer(req: &[u8]) -> Vec<u8> {
    req.iter().rev().map(|b| b ^ 0x5a).collect()
}

#[test]
fn calls_in_flight_on_two_connections_each_get_their_own_reply_at_every_seed() {
    for seed in SEEDS {
        let (mut server, mut client) = pair(seed);
        server.serve(|_c, m: Bytes| Some(answer(&m).into()));
        let conns = [
            client.connect(&server).expect("connects"),
            client.connect(&server).expect("connects again"),
        ];
        // Small and large (rendezvous) requests, alternating connections, all in flight.
        let sizes = [64, 100_000, 8, 4096, 1 << 20, 1, 70_000, 512];
        let calls: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let req = request(n, i as u8);
                let call = client
                    .start_call(conns[i % 2], req.clone())
                    .expect("started");
                (call, req)
            })
            .collect();
        // Waited for last to first: each reply is matched, not taken in arrival order.
        for (call, req) in calls.iter().rev() {
            let reply = client
                .wait_reply(*call, Span::from_ms(50))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(reply, answer(req), "seed {seed}: a {} B call", req.len());
        }
    }
}

#[test]
fn replies_sent_out_of_order_on_one_connection_reach_their_own_calls() {
    for seed in SEEDS {
        let (mut server, mut client) = pair(seed);
        let conn = client.connect(&server).expect("connects");
        let reqs: Vec<Vec<u8>> = (0..4).map(|i| request(32 + i, i as u8)).collect();
        let calls: Vec<_> = reqs
            .iter()
            .map(|r| client.start_call(conn, r.clone()).expect("started"))
            .collect();
        let mut taken = Vec::new();
        for _ in &reqs {
            taken.push(server.recv_call(Span::from_ms(1)).expect("a request"));
        }
        // Answered newest first, as a server whose older requests wait on a disk might.
        for r in taken.iter().rev() {
            server.reply(r, answer(&r.data)).expect("queued");
        }
        for (call, req) in calls.iter().zip(&reqs) {
            let reply = client.wait_reply(*call, Span::from_ms(1)).expect("a reply");
            assert_eq!(reply, answer(req), "seed {seed}");
        }
    }
}

#[test]
fn a_plain_message_is_neither_a_request_nor_a_reply() {
    let (mut server, mut client) = pair(1);
    let conn = client.connect(&server).expect("connects");
    let call = client.start_call(conn, &b"question"[..]).expect("started");
    let req = server.recv_call(Span::from_ms(1)).expect("the request");
    // A plain message goes ahead of the reply on the same connection.
    server.send(req.conn, &b"aside"[..]).expect("queued");
    server.reply(&req, &b"answer"[..]).expect("queued");
    let reply = client
        .wait_reply(call, Span::from_ms(1))
        .expect("the reply");
    assert_eq!(&reply[..], b"answer");
    let (_, aside) = client.recv(Span::from_ms(1)).expect("the plain message");
    assert_eq!(&aside[..], b"aside");
    // The server's plain receive does not take requests.
    let _pending = client.start_call(conn, &b"later"[..]).expect("started");
    let e = server.recv(Span::from_us(100)).unwrap_err();
    assert!(matches!(e, AppError::Timeout { .. }), "{e}");
    assert_eq!(
        &server
            .recv_call(Span::from_ms(1))
            .expect("the request")
            .data[..],
        b"later"
    );
}
