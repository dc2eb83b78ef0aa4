//! End-to-end tests of the core over an in-memory two-host transport.

mod util;

use bytes::Bytes;
use util::Pair;
use xrdma::driver::{self, Application, TurnScratch};
use xrdma::*;

#[derive(Default)]
struct Recorder {
    events: Vec<Event>,
}

impl Application for Recorder {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        self.events.push(event);
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

struct World {
    pair: Pair,
    eps: [Endpoint; 2],
    apps: [Recorder; 2],
    conns: [ConnId; 2],
    scratch: TurnScratch,
}

impl World {
    fn new(cfg: Config) -> World {
        let mut pair = Pair::new();
        let mut eps = [
            Endpoint::new(cfg.clone()).unwrap(),
            Endpoint::new(cfg).unwrap(),
        ];
        let a = driver::open(&mut eps[0], &mut pair.side(0)).unwrap();
        let b = driver::open(&mut eps[1], &mut pair.side(1)).unwrap();
        let ca = driver::establish(&mut eps[0], &mut pair.side(0), a, &b.info, 1).unwrap();
        let cb = driver::establish(&mut eps[1], &mut pair.side(1), b, &a.info, 0).unwrap();
        World {
            pair,
            eps,
            apps: Default::default(),
            conns: [ca, cb],
            scratch: TurnScratch::default(),
        }
    }

    /// Turn both hosts until no completion is left to handle.
    fn settle(&mut self) {
        for _ in 0..10_000 {
            for h in 0..2 {
                let now = self.pair.now;
                let mut side = self.pair.side(h);
                driver::turn(
                    now,
                    &mut self.eps[h],
                    &mut side,
                    &mut self.apps[h],
                    &mut self.scratch,
                );
            }
            if !self.pair.busy() {
                return;
            }
        }
        panic!("did not settle");
    }

    fn received(&self, h: usize) -> Vec<Bytes> {
        self.apps[h]
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Message { data, .. } => Some(data.clone()),
                _ => None,
            })
            .collect()
    }
}

fn pattern(len: usize, salt: u8) -> Bytes {
    Bytes::from(
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
            .collect::<Vec<_>>(),
    )
}

#[test]
fn messages_of_every_edge_size_arrive_intact_and_are_acked() {
    let mut w = World::new(Config::default());
    let sizes = [0usize, 1, 65535, 65536, 65537, 131073, (1 << 20) + 1];
    for (i, &n) in sizes.iter().enumerate() {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(n, i as u8))
            .unwrap();
    }
    w.settle();
    let got = w.received(1);
    assert_eq!(got.len(), sizes.len());
    for (i, &n) in sizes.iter().enumerate() {
        assert_eq!(got[i], pattern(n, i as u8), "message {i} of {n} bytes");
    }
    let sent = w.apps[0]
        .events
        .iter()
        .filter(|e| matches!(e, Event::Sent { .. }))
        .count();
    assert_eq!(sent, sizes.len());
    let st = w.eps[0].stats(w.conns[0]).unwrap();
    // Fragments: 1 + 1 + 1 + 1 + 2 + 3 + 17 = 26.
    assert_eq!(st.fragments_sent, 26);
    assert_eq!(st.send_bytes, sizes.iter().sum::<usize>() as u64);
    assert_eq!(w.eps[1].stats(w.conns[1]).unwrap().fragments_received, 26);
}

#[test]
fn sequence_numbers_wrap_past_u32_max() {
    let cfg = Config {
        initial_seq: 0xFFFF_FFFE,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    // 5 single-fragment messages use seq FFFFFFFE, FFFFFFFF, 0, 1, 2.
    for i in 0..5u8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(100, i))
            .unwrap();
    }
    w.settle();
    assert_eq!(w.received(1).len(), 5);
    let sent = w.apps[0]
        .events
        .iter()
        .filter(|e| matches!(e, Event::Sent { .. }))
        .count();
    assert_eq!(sent, 5, "ACKs across the wrap must free every fragment");
}

#[test]
fn missing_ack_times_out_with_a_typed_error_and_reclaims() {
    let cfg = Config {
        ack_timeout: Time::from_us(50),
        ..Config::default()
    };
    let mut w = World::new(cfg);
    w.pair.drop_sends_from = Some(1); // host 1's ACKs vanish
    let m = w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(1000, 1))
        .unwrap();
    w.settle();
    assert_eq!(w.received(1).len(), 1);
    assert_eq!(w.eps[0].poll_timeout(), Some(Time::from_us(50)));
    w.pair.now = Time::from_us(49);
    w.settle();
    assert!(!w.apps[0]
        .events
        .iter()
        .any(|e| matches!(e, Event::SendFailed { .. })));
    w.pair.now = Time::from_us(50);
    w.settle();
    let failed: Vec<_> = w.apps[0]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::SendFailed {
                msg,
                error: XrdmaError::AckTimeout { waited, .. },
                ..
            } => Some((*msg, *waited)),
            _ => None,
        })
        .collect();
    assert_eq!(failed, vec![(m, Time::from_us(50))]);
    assert!(matches!(
        w.eps[0].send(w.pair.now, w.conns[0], pattern(1, 0)),
        Err(XrdmaError::ConnectionFailed { .. })
    ));
    assert_eq!(w.eps[0].poll_timeout(), None);
}

#[test]
fn ecn_echo_shrinks_the_window_by_beta() {
    let cfg = Config {
        beta: 0.8,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    let qpn = 0; // the first QP on host 0
    assert_eq!(w.eps[0].stats(w.conns[0]).unwrap().window, 65536);
    w.pair.notify_congestion(0, qpn);
    w.settle();
    let st = w.eps[0].stats(w.conns[0]).unwrap();
    // 0.8 * 65536 = 52428.8 -> 52428 bytes.
    assert_eq!(
        (st.window, st.ecn_echoes, st.window_decreases),
        (52428, 1, 1)
    );
}

#[test]
fn window_limits_payload_in_flight() {
    // A 16 KiB window with 4 KiB fragments: the window counts payload bytes, so exactly
    // 4 fragments (4 * 4096 = 16384 <= 16384) are posted before the first ACK.
    let cfg = Config {
        fragment_size: 4096,
        initial_window: 16384,
        min_window: 4096,
        max_window: 16384,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    w.pair.drop_sends_from = Some(1);
    w.eps[0]
        .send(Time::ZERO, w.conns[0], pattern(40_000, 3))
        .unwrap();
    w.settle();
    let st = w.eps[0].stats(w.conns[0]).unwrap();
    assert_eq!((st.fragments_sent, st.send_bytes), (4, 16384));
}

#[test]
fn a_window_below_the_fragment_size_shrinks_the_fragments() {
    // Window 16 KiB, fragments 64 KiB: one fragment of 16 KiB (not 64 KiB) may be in flight.
    let cfg = Config {
        initial_window: 16384,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    w.pair.drop_sends_from = Some(1);
    w.eps[0]
        .send(Time::ZERO, w.conns[0], pattern(100_000, 4))
        .unwrap();
    w.settle();
    let st = w.eps[0].stats(w.conns[0]).unwrap();
    assert_eq!((st.fragments_sent, st.send_bytes), (1, 16384));
    // With ACKs flowing the message still arrives whole: ceil(100000 / 16384) = 7 fragments
    // at the initial window (the window may grow, so at most 7).
    let mut w = World::new(Config {
        initial_window: 16384,
        ..Config::default()
    });
    w.eps[0]
        .send(Time::ZERO, w.conns[0], pattern(100_000, 4))
        .unwrap();
    w.settle();
    assert_eq!(w.received(1), vec![pattern(100_000, 4)]);
    let st = w.eps[0].stats(w.conns[0]).unwrap();
    assert!(
        (2..=7).contains(&st.fragments_sent),
        "{}",
        st.fragments_sent
    );
}

#[test]
fn streamed_fragments_rebuild_every_message_in_order() {
    let cfg = Config {
        deliver_fragments: true,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    let sizes = [0usize, 1, 65536, 65537, (1 << 20) + 1];
    for (i, &n) in sizes.iter().enumerate() {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(n, i as u8))
            .unwrap();
    }
    w.settle();
    // Rebuild messages from the fragments: each starts at offset 0 and ends at message_len.
    let mut got: Vec<Vec<u8>> = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    for e in &w.apps[1].events {
        let Event::Fragment {
            message_len,
            offset,
            data,
            ..
        } = e
        else {
            continue;
        };
        let buf = open.get_or_insert_with(Vec::new);
        assert_eq!(*offset, buf.len() as u64, "fragments arrive in order");
        buf.extend_from_slice(data);
        if buf.len() as u64 == *message_len {
            got.push(open.take().unwrap());
        }
    }
    assert!(open.is_none());
    assert!(!w.apps[1]
        .events
        .iter()
        .any(|e| matches!(e, Event::Message { .. })));
    assert_eq!(got.len(), sizes.len());
    for (i, &n) in sizes.iter().enumerate() {
        assert_eq!(got[i], pattern(n, i as u8).to_vec(), "message {i}");
    }
}

/// Echoes every message back on its connection.
#[derive(Default)]
struct Echo;

impl Application for Echo {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        if let Event::Message { conn, data } = event {
            ep.send(now, conn, data).unwrap();
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

#[test]
fn a_reply_carries_the_ack_of_its_request() {
    let mut w = World::new(Config::default());
    let mut echo = Echo;
    w.eps[0]
        .send(Time::ZERO, w.conns[0], pattern(64, 1))
        .unwrap();
    for _ in 0..10 {
        let now = w.pair.now;
        driver::turn(
            now,
            &mut w.eps[0],
            &mut w.pair.side(0),
            &mut w.apps[0],
            &mut w.scratch,
        );
        driver::turn(
            now,
            &mut w.eps[1],
            &mut w.pair.side(1),
            &mut echo,
            &mut w.scratch,
        );
    }
    // Host 1 answered the request with its reply, whose header carried the ACK: no separate
    // ACK SEND. Host 0 has nothing to send back, so it ACKs the reply with a separate SEND.
    let server = w.eps[1].stats(w.conns[1]).unwrap();
    assert_eq!((server.acks_piggybacked, server.acks_sent), (1, 0));
    let client = w.eps[0].stats(w.conns[0]).unwrap();
    assert_eq!((client.acks_piggybacked, client.acks_sent), (0, 1));
    assert_eq!((client.acks_received, client.messages_sent), (1, 1));
    assert_eq!(w.received(0), vec![pattern(64, 1)]);
}
