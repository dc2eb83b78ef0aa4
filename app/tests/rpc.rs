//! Calls matched to their replies by correlation id, on the simulator, over seeds: many in
//! flight across connections, answered out of order, beside plain messages.

mod common;

use common::{pair, SEEDS};
use xrdma_app::{AppError, Bytes, Config, SimConfig, Span, Worker};

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
        for (call, req) in calls.into_iter().rev() {
            let reply = client
                .wait_reply(call, Span::from_ms(50))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(reply, answer(&req), "seed {seed}: a {} B call", req.len());
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
        for r in taken.into_iter().rev() {
            let a = answer(&r.data);
            server.reply(r, a).expect("queued");
        }
        for (call, req) in calls.into_iter().zip(&reqs) {
            let reply = client.wait_reply(call, Span::from_ms(1)).expect("a reply");
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
    server.reply(req, &b"answer"[..]).expect("queued");
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

#[test]
fn another_workers_call_or_request_is_refused_by_name() {
    // Three hosts: two clients of one server. Their connections and call ids coincide, so
    // only the worker a call or request belongs to tells them apart.
    let mut hosts = Worker::simulated(
        SimConfig {
            hosts: 3,
            ..SimConfig::default()
        },
        &Config::default(),
    )
    .expect("a simulated fabric");
    let (mut s, mut b) = (hosts.remove(0), hosts.remove(1));
    let mut a = hosts.remove(0);
    let (ca, cb) = (a.connect(&s).expect("a"), b.connect(&s).expect("b"));
    let call_a = a.start_call(ca, &b"for A"[..]).expect("started");
    let call_b = b.start_call(cb, &b"for B"[..]).expect("started");
    let e = b.wait_reply(call_a, Span::from_ms(1)).unwrap_err();
    assert!(matches!(e, AppError::Foreign("call")), "{e}");
    let req = s.recv_call(Span::from_ms(1)).expect("a request");
    let e = b.reply(req, &b"not mine"[..]).unwrap_err();
    assert!(matches!(e, AppError::Foreign("request")), "{e}");
    // B's own call is untouched; the server answers what it still holds.
    let req = s.recv_call(Span::from_ms(1)).expect("the other request");
    let reply = format!("to {}", String::from_utf8_lossy(&req.data));
    s.reply(req, reply.into_bytes()).expect("queued");
    let got = b.wait_reply(call_b, Span::from_ms(1)).expect("B's reply");
    assert_eq!(&got[..], b"to for B");
}

#[test]
fn a_panicking_handler_is_the_servers_error_not_the_callers_panic() {
    let (mut server, mut client) = pair(1);
    server.serve(|_c, m: Bytes| {
        assert!(&m[..] != b"boom", "a handler that cannot take this");
        Some(m)
    });
    let conn = client.connect(&server).expect("connects");
    let e = client
        .call(conn, &b"boom"[..], Span::from_ms(1))
        .unwrap_err();
    assert!(matches!(e, AppError::Timeout { .. }), "{e}");
    let e = server.run_for(Span::from_us(10)).unwrap_err();
    assert!(matches!(e, AppError::HandlerPanicked { .. }), "{e}");
    // The next call is answered.
    let ok = client
        .call(conn, &b"fine"[..], Span::from_ms(1))
        .expect("a reply");
    assert_eq!(&ok[..], b"fine");
}
