//! End-to-end tests of the core over an in-memory two-host transport.

mod util;

use util::world::{pattern, World};
use util::{Echo, Pair};
use xrdma::driver;
use xrdma::*;

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
    // Frames and fragments: the 0 B and 1 B messages share one eager frame (both were queued
    // when it was posted), then 1 + 1 + 2 + 3 + 17 WRITEs: 25.
    assert_eq!(st.fragments_sent, 25);
    assert_eq!(st.eager_messages, 2);
    assert_eq!(
        st.batched_frames, 1,
        "the 0 B and 1 B messages share one frame"
    );
    assert_eq!(st.send_bytes, sizes.iter().sum::<usize>() as u64);
    assert_eq!(w.eps[1].stats(w.conns[1]).unwrap().fragments_received, 25);
}

#[test]
fn consecutive_send_wrs_of_a_qp_are_posted_as_chains() {
    let mut w = World::new(Config::default());
    let n = 4 << 20;
    w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(n, 7))
        .unwrap();
    w.settle();
    assert_eq!(w.received(1), vec![pattern(n, 7)]);
    // Every send WR went through post_send_chain; the fragments that the window lets out at
    // once share chains, none longer than CHAIN_MAX.
    let chains = &w.pair.chains[0];
    let st = w.eps[0].stats(w.conns[0]).unwrap();
    let posted: usize = chains.iter().sum();
    assert!(posted as u64 >= st.fragments_sent, "{posted} WRs, {st:?}");
    assert!(chains.iter().all(|&l| (1..=driver::CHAIN_MAX).contains(&l)));
    assert!(chains.iter().any(|&l| l > 1), "{chains:?}");
    assert!(chains.len() < posted, "{chains:?}");
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
        ack_timeout: Span::from_us(50),
        ..Config::default()
    };
    let mut w = World::new(cfg);
    w.pair.drop_acks_from = Some(1); // host 1's ACKs vanish
    let m = w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(1000, 1))
        .unwrap();
    w.settle();
    assert_eq!(w.received(1).len(), 1);
    assert_eq!(
        w.eps[0].poll_timeout(),
        Some(Time::ZERO + Span::from_us(50))
    );
    w.pair.now = Time::ZERO + Span::from_us(49);
    w.settle();
    assert!(!w.apps[0]
        .events
        .iter()
        .any(|e| matches!(e, Event::SendFailed { .. })));
    w.pair.now = Time::ZERO + Span::from_us(50);
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
    assert_eq!(failed, vec![(m, Span::from_us(50))]);
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
    w.pair.drop_acks_from = Some(1);
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
    w.pair.drop_acks_from = Some(1);
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

#[test]
fn a_reply_carries_the_ack_of_its_request() {
    let mut w = World::new(Config::default());
    let mut echo = Echo;
    w.eps[0]
        .send(Time::ZERO, w.conns[0], pattern(64, 1))
        .unwrap();
    for _ in 0..10 {
        w.round(&mut echo);
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

#[test]
fn small_messages_go_eager_and_large_ones_by_rendezvous() {
    let mut w = World::new(Config::default());
    // 4096 B is the eager limit: one SEND. 4097 B: RTS, CTS, one WRITE. 8 MiB: RTS, CTS and
    // 8 MiB / 64 KiB = 128 WRITEs into a landing buffer that needs its own 8 MiB registration.
    let sizes = [4096usize, 4097, 8 << 20];
    for (i, &n) in sizes.iter().enumerate() {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(n, i as u8))
            .unwrap();
    }
    w.settle();
    let got = w.received(1);
    assert_eq!(got.len(), 3);
    for (i, &n) in sizes.iter().enumerate() {
        assert_eq!(got[i], pattern(n, i as u8), "message {i} of {n} bytes");
    }
    let tx = w.eps[0].stats(w.conns[0]).unwrap();
    let rx = w.eps[1].stats(w.conns[1]).unwrap();
    assert_eq!((tx.eager_messages, tx.rendezvous_messages), (1, 2));
    assert_eq!(rx.grants_sent, 2);
    // Fragments: 1 eager + 1 + 128 WRITEs.
    assert_eq!((tx.fragments_sent, rx.fragments_received), (130, 130));
    assert_eq!(tx.messages_sent, 3);
    // Landing buffers: a 64 KiB class for 4097 B and an 8 MiB class, both back in the pool.
    let landing = w.eps[1].landing_pool();
    assert_eq!(landing.carved_bytes(), (64 << 10) + (8 << 20));
    assert_eq!(landing.in_use_bytes(), 0);
}

#[test]
fn a_freed_landing_buffer_serves_the_next_message_of_its_class() {
    let mut w = World::new(Config::default());
    for i in 0..3u8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(1 << 20, i))
            .unwrap();
        w.settle();
    }
    assert_eq!(w.received(1).len(), 3);
    // One 1 MiB class buffer carved once, reused by the second and third message.
    assert_eq!(w.eps[1].landing_pool().carved_bytes(), 1 << 20);
}

#[test]
fn a_streaming_sender_announces_and_is_granted_sixteen_messages_per_frame() {
    let mut w = World::new(Config::default());
    // 64 large messages queued at once: the head is unannounced, so the first RTS goes at once
    // with the first sixteen; a full batch of sixteen more is waiting in the 32-message
    // lookahead, so the second follows; then one RTS per sixteen messages as the queue drains:
    // 64 / 16 = 4 RTS frames. The receiver grants each RTS's sixteen in one CTS: 4 CTS frames.
    for i in 0..64u8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(65_536, i))
            .unwrap();
    }
    w.settle();
    let got = w.received(1);
    assert_eq!(got.len(), 64);
    for (i, m) in got.iter().enumerate() {
        assert_eq!(*m, pattern(65_536, i as u8));
    }
    let tx = w.eps[0].stats(w.conns[0]).unwrap();
    let rx = w.eps[1].stats(w.conns[1]).unwrap();
    assert_eq!((tx.rendezvous_messages, tx.rts_frames), (64, 4));
    assert_eq!((rx.grants_sent, rx.cts_frames), (64, 4));
}

#[test]
fn queued_small_messages_share_one_eager_frame() {
    let mut w = World::new(Config::default());
    // 100 messages of 100 B queued at once: a receive buffer holds 4096 + 64 = 4160 bytes
    // (4 KiB eager limit + header, rounded to 64), so a frame carries ⌊4160 / (16 + 100)⌋ = 35
    // messages: frames of 35, 35 and 30.
    for i in 0..100u8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(100, i))
            .unwrap();
    }
    w.settle();
    let got = w.received(1);
    assert_eq!(got.len(), 100);
    for (i, m) in got.iter().enumerate() {
        assert_eq!(*m, pattern(100, i as u8));
    }
    let tx = w.eps[0].stats(w.conns[0]).unwrap();
    assert_eq!((tx.eager_messages, tx.fragments_sent), (100, 3));
    assert_eq!(
        tx.batched_frames, 3,
        "all three frames carry more than one message"
    );
    assert_eq!(w.eps[1].stats(w.conns[1]).unwrap().fragments_received, 3);
    let sent = w.count(0, |e| matches!(e, Event::Sent { .. }));
    assert_eq!(sent, 100, "every coalesced message is reported sent once");
}

#[test]
fn the_landing_budget_admits_large_messages_in_turn() {
    // A 128 KiB budget: each 100 000-byte message takes a 128 KiB landing buffer, so the
    // receiver grants one at a time; 2 of the 4 announced wait until the message before them
    // has landed. All arrive intact and in order, and no more than 128 KiB is ever granted.
    let cfg = Config {
        landing_budget: 128 << 10,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    for i in 0..4u8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(100_000, i))
            .unwrap();
    }
    w.settle();
    let got = w.received(1);
    assert_eq!(got.len(), 4);
    for (i, m) in got.iter().enumerate() {
        assert_eq!(*m, pattern(100_000, i as u8));
    }
    let landing = w.eps[1].landing_pool();
    assert_eq!(landing.peak_in_use_bytes(), 128 << 10);
    assert_eq!(landing.in_use_bytes(), 0);
    // Without the budget all four are granted at once (one RTS announces them together).
    let mut w = World::new(Config::default());
    for i in 0..4u8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(100_000, i))
            .unwrap();
    }
    w.settle();
    assert_eq!(w.eps[1].landing_pool().peak_in_use_bytes(), 4 * (128 << 10));
}

#[test]
fn every_coalesced_message_completes_exactly_once_with_many_frames_in_flight() {
    // 400 × 1 KiB queued at once: four messages per eager frame, a hundred frames, many of
    // them in flight together. Each message id handed out by `send` is reported sent exactly
    // once: none twice, none never (a frame's ids were once taken from a queue that earlier
    // frames in flight still used, so some ids completed twice and others never).
    let mut w = World::new(Config::default());
    let mut ids: Vec<MsgId> = (0..400u32)
        .map(|i| {
            w.eps[0]
                .send(w.pair.now, w.conns[0], pattern(1024, i as u8))
                .unwrap()
        })
        .collect();
    w.settle();
    assert_eq!(w.received(1).len(), 400);
    let mut sent: Vec<MsgId> = w.apps[0]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Sent { msg, .. } => Some(*msg),
            _ => None,
        })
        .collect();
    assert!(
        w.eps[0].stats(w.conns[0]).unwrap().fragments_sent > 1,
        "more than one frame"
    );
    ids.sort();
    sent.sort();
    assert_eq!(sent, ids, "each message completes once");
}

#[test]
fn a_message_above_the_maximum_is_refused_and_nothing_is_queued() {
    let cfg = Config {
        max_message_size: 8192,
        ..Config::default()
    };
    let mut w = World::new(cfg);
    let err = w.eps[0].send(w.pair.now, w.conns[0], pattern(8193, 0));
    assert_eq!(
        err,
        Err(XrdmaError::MessageTooLarge {
            conn: w.conns[0],
            len: 8193,
            max: 8192
        })
    );
    assert_eq!(w.eps[0].queued_bytes(w.conns[0]), 0);
    assert!(w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(8192, 0))
        .is_ok());
    w.settle();
    assert_eq!(w.received(1), vec![pattern(8192, 0)]);
}

#[test]
fn in_memory_reads_copy_in_range_and_refuse_out_of_range() {
    let mut pair = Pair::new();
    let mut side = pair.side(0);
    let mr = side.register_memory(32).unwrap();
    side.write(mr.addr + 4, &[&[1, 2, 3]]).unwrap();
    let mut out = [9u8; 5];
    side.read_into(mr.addr + 3, &mut out).unwrap();
    assert_eq!(out, [0, 1, 2, 3, 0]);
    assert_eq!(side.read_bytes(mr.addr + 5, 2).unwrap(), &[2u8, 3][..]);
    for (addr, len) in [
        (mr.addr + 30, 3),
        (mr.addr + 32, 1),
        (0, 1),
        (mr.addr << 1, 1),
    ] {
        let want = TransportError::BadAddress {
            addr,
            len: len as u64,
            key: 0,
        };
        assert_eq!(
            side.read_bytes(addr, len).unwrap_err(),
            want,
            "{addr:#x}+{len}"
        );
        assert_eq!(side.write(addr, &[&vec![0; len]]).unwrap_err(), want);
    }
}

#[test]
fn a_messages_tag_reaches_the_receiver_whatever_way_it_travels() {
    // Eager alone, coalesced behind another, by rendezvous (its tag in the RTS), and
    // streamed as fragments: each message arrives with its own tag, the largest included.
    let sizes = [64usize, 0, 4096, 70_000, (1 << 20) + 1];
    let tags = [u32::MAX, 7, 0, 1 << 31, 0xDEAD_BEEF];
    for streaming in [false, true] {
        let mut w = World::new(Config {
            deliver_fragments: streaming,
            ..Config::default()
        });
        for (i, (&n, &tag)) in sizes.iter().zip(&tags).enumerate() {
            let data = pattern(n, i as u8);
            w.eps[0]
                .send_tagged(w.pair.now, w.conns[0], data, tag)
                .unwrap();
        }
        w.settle();
        let mut got: Vec<(u32, u64)> = Vec::new();
        for e in &w.apps[1].events {
            match e {
                Event::Message { tag, data, .. } => got.push((*tag, data.len() as u64)),
                Event::Fragment {
                    tag,
                    offset,
                    message_len,
                    data,
                    ..
                } if *offset + data.len() as u64 == *message_len => {
                    got.push((*tag, *message_len));
                }
                Event::Fragment { tag, .. } => {
                    // Every fragment of a message carries the message's tag.
                    assert!(tags.contains(tag), "a fragment tagged {tag:#x}");
                }
                _ => {}
            }
        }
        let want: Vec<(u32, u64)> = tags
            .iter()
            .zip(sizes)
            .map(|(&t, n)| (t, n as u64))
            .collect();
        assert_eq!(got, want, "streaming {streaming}");
    }
}
