//! Delayed ACKs ([`Config::ack_delay`]) over the in-memory two-host transport: a request
//! carries the ACK of the last reply, a one-way stream is never held up (whether the sender
//! waits for each ACK or fills its window), fragments are ACKed at once, and a held ACK goes
//! out when its delay is over.

mod util;

use util::world::{pattern, World};
use util::Echo;
use xrdma::*;

const DELAY: Span = Span::from_us(50);

/// `n` calls one after another (each sent when the last reply is in), the clock standing
/// still; the client's (acks piggybacked, acks sent).
fn ping_pong(delay: Span, n: usize) -> (World, (u64, u64)) {
    let mut w = World::new(Config {
        ack_delay: delay,
        ..Config::default()
    });
    let mut echo = Echo;
    for i in 0..n {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(64, i as u8))
            .unwrap();
        for _ in 0..10 {
            w.round(&mut echo);
        }
        assert_eq!(w.received(0).len(), i + 1, "reply {i}");
    }
    let s = w.eps[0].stats(w.conns[0]).unwrap();
    (w, (s.acks_piggybacked, s.acks_sent))
}

#[test]
fn with_a_delay_each_request_carries_the_ack_of_the_last_reply() {
    // At once: every reply costs the client an ACK SEND.
    assert_eq!(ping_pong(Span::ZERO, 5).1, (0, 5));
    // Delayed: requests 2..5 carry the ACKs of replies 1..4; the last one is held.
    let (mut w, acks) = ping_pong(DELAY, 5);
    assert_eq!(acks, (4, 0));
    let server = w.eps[1].stats(w.conns[1]).unwrap();
    assert_eq!((server.acks_piggybacked, server.messages_sent), (5, 4));
    // Its delay over, the held ACK goes out alone and the server's last reply is sent.
    assert_eq!(w.eps[0].poll_timeout(), Some(Time::ZERO + DELAY));
    w.pair.now = Time::ZERO + DELAY;
    let mut echo = Echo;
    for _ in 0..4 {
        w.round(&mut echo);
    }
    let client = w.eps[0].stats(w.conns[0]).unwrap();
    assert_eq!((client.acks_piggybacked, client.acks_sent), (4, 1));
    assert_eq!(w.eps[1].stats(w.conns[1]).unwrap().messages_sent, 5);
}

#[test]
fn a_window_limited_stream_under_delayed_acks_never_stalls() {
    let cfg = Config {
        ack_delay: DELAY,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    // 4000 B eager messages, one per frame, many windows' worth.
    let n = 1000;
    for i in 0..n {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(4000, i as u8))
            .unwrap();
    }
    // The clock stands still, so no delayed ACK falls due: a one-way stream is ACKed at
    // once, and the frame that fills the window asks for its ACK (AckReq) anyway.
    w.settle();
    assert_eq!(w.received(1).len(), n);
    let rx = w.eps[1].stats(w.conns[1]).unwrap();
    assert!(
        rx.acks_sent > 0 && rx.acks_sent < rx.fragments_received / 4,
        "{rx:?}"
    );
    // One-way: nothing is held, the tail included.
    assert_eq!(w.count(0, |e| matches!(e, Event::Sent { .. })), n);
}

#[test]
fn a_sender_that_waits_for_each_ack_is_never_held_up() {
    // One message at a time, each sent once the last is ACKed: with the clock standing
    // still, a held ACK would stop the stream for good (in a run, for ack-delay each).
    let mut w = World::new(Config {
        ack_delay: DELAY,
        ..Config::default()
    });
    for i in 0..200 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(64, i as u8))
            .unwrap();
        w.settle();
        let sent = w.count(0, |e| matches!(e, Event::Sent { .. }));
        assert_eq!(
            sent,
            i + 1,
            "message {i} ACKed with the clock standing still"
        );
    }
    assert_eq!(w.eps[1].stats(w.conns[1]).unwrap().acks_sent, 200);
}

#[test]
fn fragments_of_a_large_message_are_acked_at_once() {
    let mut w = World::new(Config {
        ack_delay: DELAY,
        ..Config::default()
    });
    let big = pattern(1 << 20, 3);
    w.eps[0].send(w.pair.now, w.conns[0], big.clone()).unwrap();
    w.settle();
    assert_eq!(w.received(1), vec![big]);
    // The whole message was ACKed with the clock standing still.
    assert_eq!(w.count(0, |e| matches!(e, Event::Sent { .. })), 1);
}

#[test]
fn an_ack_delay_above_a_quarter_of_the_ack_timeout_is_refused() {
    let cfg = Config {
        ack_delay: Span::from_ms(300),
        ..Config::default()
    };
    assert_eq!(cfg.validate().map_err(|e| e.field), Err("ack-delay"));
}
