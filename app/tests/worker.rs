//! The worker API on the simulator: calls, messages, timeouts and failures, over seeds.

mod common;

use common::{pair, SEEDS};
use xrdma_app::{AppError, Bytes, Config, SimConfig, Span, Worker, XrdmaError};

fn bytes(size: usize, salt: u8) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u8).wrapping_mul(7) ^ salt)
        .collect()
}

#[test]
fn calls_of_every_size_get_their_own_reply_at_every_seed() {
    for seed in SEEDS {
        let (mut server, mut client) = pair(seed);
        // The reply differs from the request, so an echo of the wrong message shows.
        server.serve(|_c, m: Bytes| Some(m.iter().map(|b| b ^ 0xff).collect::<Vec<u8>>().into()));
        let conn = client.connect(&server).expect("connects");
        for (k, size) in [0usize, 1, 64, 4096, 4097, 65_536, 300_000]
            .into_iter()
            .enumerate()
        {
            let req = bytes(size, k as u8);
            let reply = client
                .call(conn, req.clone(), Span::from_ms(50))
                .expect("a reply");
            let want: Vec<u8> = req.iter().map(|b| b ^ 0xff).collect();
            assert_eq!(reply, want, "seed {seed}, {size} B");
        }
        client
            .flush(Span::from_ms(10))
            .expect("every request ACKed");
    }
}

#[test]
fn messages_wait_for_the_worker_that_receives_them_in_order() {
    for seed in SEEDS {
        let (mut server, mut client) = pair(seed);
        let conn = client.connect(&server).expect("connects");
        for k in 0..20u8 {
            client
                .send(conn, bytes(100 * usize::from(k), k))
                .expect("queued");
        }
        client
            .flush(Span::from_ms(10))
            .expect("ACKed while the server never asked");
        for k in 0..20u8 {
            let (_, m) = server.recv(Span::from_ms(1)).expect("waiting");
            assert_eq!(
                m,
                bytes(100 * usize::from(k), k),
                "seed {seed}, message {k}"
            );
        }
    }
}

#[test]
fn a_receive_with_nothing_coming_times_out_at_its_deadline() {
    let (mut server, _client) = pair(1);
    let t0 = server.now();
    let e = server.recv(Span::from_us(250)).unwrap_err();
    assert!(
        matches!(e, AppError::Timeout { waited } if waited == Span::from_us(250)),
        "{e}"
    );
    // Simulated time went to the deadline, and no further.
    assert_eq!(server.now().saturating_since(t0), Span::from_us(250));
}

#[test]
fn a_call_whose_peer_does_not_answer_times_out() {
    let (server, mut client) = pair(1);
    let conn = client.connect(&server).expect("connects");
    let e = client
        .call(conn, &b"anyone?"[..], Span::from_us(100))
        .unwrap_err();
    assert!(matches!(e, AppError::Timeout { .. }), "{e}");
}

#[test]
fn a_peer_that_closes_is_a_typed_error_not_a_hang() {
    let (mut server, mut client) = pair(1);
    let conn = client.connect(&server).expect("connects");
    client.send(conn, &b"hello"[..]).expect("queued");
    let (at_server, _) = server.recv(Span::from_ms(1)).expect("the message");
    server.close(at_server).expect("closes");
    server.run_for(Span::from_us(50)).expect("runs");
    let e = client.recv(Span::from_ms(1)).unwrap_err();
    assert!(
        matches!(e, AppError::PeerClosed { conn: c } if c == conn),
        "{e}"
    );
}

#[test]
fn a_flush_to_a_peer_that_closed_but_still_acks_succeeds() {
    // flush reported PeerClosed while the closed peer was still taking and ACKing every
    // message sent before its close arrived.
    for seed in SEEDS {
        let (mut server, mut client) = pair(seed);
        let conn = client.connect(&server).expect("connects");
        client.send(conn, &b"hello"[..]).expect("queued");
        let (at_server, _) = server.recv(Span::from_ms(1)).expect("the message");
        server.close(at_server).expect("closes");
        for _ in 0..3 {
            client.send(conn, vec![9u8; 1 << 20]).expect("queued");
        }
        client
            .flush(Span::from_ms(10))
            .expect("every message ACKed");
        for _ in 0..3 {
            let (_, m) = server
                .recv(Span::from_ms(1))
                .expect("delivered after the close");
            assert_eq!(m.len(), 1 << 20, "seed {seed}");
        }
        // The close itself is still reported, by the next call that takes events.
        let e = client.recv(Span::from_ms(1)).unwrap_err();
        assert!(matches!(e, AppError::PeerClosed { .. }), "seed {seed}: {e}");
    }
}

#[test]
fn unacked_counts_what_is_sent_until_its_ack() {
    for seed in SEEDS {
        let (server, mut client) = pair(seed);
        let conn = client.connect(&server).expect("connects");
        for k in 1..=3 {
            client.send(conn, vec![1u8; 100]).expect("queued");
            assert_eq!(client.unacked(), k, "seed {seed}");
        }
        client.flush(Span::from_ms(1)).expect("ACKed");
        assert_eq!(client.unacked(), 0, "seed {seed}");
    }
}

#[test]
fn an_endpoint_that_streams_fragments_is_refused_not_silent() {
    // Workers were made, then every recv and call timed out: a worker takes whole messages.
    let cfg = Config {
        deliver_fragments: true,
        ..Config::default()
    };
    let e = Worker::simulated(SimConfig::default(), &cfg)
        .err()
        .expect("refused");
    assert!(
        matches!(&e, AppError::Setup(m) if m.contains("deliver-fragments")),
        "{e}"
    );
}

#[test]
fn what_cannot_be_done_is_refused_at_once() {
    let (server, mut client) = pair(1);
    let (_, other) = pair(2);
    assert!(matches!(client.connect(&other), Err(AppError::Setup(_))));
    let conn = client.connect(&server).expect("connects");
    let huge = vec![0u8; usize::try_from(Config::default().max_message_size).unwrap() + 1];
    assert!(matches!(client.send(conn, huge), Err(AppError::Refused(_))));
}

#[test]
fn the_late_reply_of_a_call_that_timed_out_is_not_the_next_calls() {
    for seed in SEEDS {
        let (mut server, mut client) = pair(seed);
        server.serve(|_c, m: Bytes| Some(m));
        let conn = client.connect(&server).expect("connects");
        // A 1 MiB echo takes far more than 1 µs: the call gives up, its reply comes later.
        let big = bytes(1 << 20, 1);
        let e = client.call(conn, big, Span::from_us(1)).unwrap_err();
        assert!(matches!(e, AppError::Timeout { .. }), "seed {seed}: {e}");
        let small = bytes(64, 2);
        let reply = client
            .call(conn, small.clone(), Span::from_ms(50))
            .expect("a reply");
        assert_eq!(
            reply, small,
            "seed {seed}: the next call got the late reply"
        );
    }
}

#[test]
fn a_reply_the_core_refuses_is_the_servers_error_by_name() {
    let cfg = Config {
        max_message_size: 64 * 1024,
        ..Config::default()
    };
    let mut hosts = Worker::simulated(SimConfig::default(), &cfg).expect("a simulated fabric");
    let (mut server, mut client) = (hosts.remove(0), hosts.remove(0));
    // Every reply is twice the largest message the core takes.
    server.serve(|_c, _m: Bytes| Some(vec![0u8; 128 * 1024].into()));
    let conn = client.connect(&server).expect("connects");
    client.send(conn, &b"x"[..]).expect("queued");
    let e = server.run_for(Span::from_ms(1)).unwrap_err();
    assert!(
        matches!(e, AppError::Refused(XrdmaError::MessageTooLarge { .. })),
        "{e}"
    );
}
