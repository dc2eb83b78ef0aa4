//! Selective signalling over the in-memory pair: which send WRs the core asks a completion
//! for, how many completions a stream costs, and that errors, closes and QP reuse work with
//! unsignaled WRs outstanding. The in-memory send queue frees an unsignaled WR's slot only
//! when a later completion of its queue is polled, as a device does.

mod util;

use util::logged::{settle_logged, turn_logged, Log};
use util::world::{pattern, World};
use xrdma::driver::CHAIN_MAX;
use xrdma::*;

/// 4 KiB messages: one per eager frame (a receive buffer holds one header and 4 KiB), so
/// each message is one send WR.
const MSG: usize = 4096;

/// A configuration where only the signalling rule bounds a burst: a window and receive
/// credits large enough for `msgs` frames at once, and `signal_interval`.
fn roomy(signal_interval: u32) -> Config {
    Config {
        initial_window: 8 << 20,
        max_window: 8 << 20,
        recv_depth: 2048,
        send_depth: 4096,
        signal_interval,
        ..Config::default()
    }
}

fn sent(w: &World, h: usize) -> usize {
    w.count(h, |e| matches!(e, Event::Sent { .. }))
}

#[test]
fn a_burst_of_small_messages_asks_for_one_completion_per_interval() {
    let mut w = World::new(roomy(8));
    let mut logs = [Log::default(), Log::default()];
    for i in 0..200 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(MSG, i as u8))
            .unwrap();
    }
    settle_logged(&mut w, &mut logs);
    assert_eq!(w.received(1).len(), 200);
    assert_eq!(sent(&w, 0), 200);
    let data: Vec<_> = logs[0]
        .posted
        .iter()
        .filter(|(_, wr)| wr.sge.len > 0)
        .collect();
    assert_eq!(data.len(), 200, "one WR per message");
    // One burst of 200 WRs: every 8th is signaled (the 200th also ends the burst).
    let signaled: Vec<usize> = data
        .iter()
        .enumerate()
        .filter(|(_, (_, wr))| wr.signaled)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(signaled, (7..200).step_by(8).collect::<Vec<_>>());
    assert_eq!(logs[0].send_cqes, 25, "a CQE per 8 WRs at the sender");
    assert_eq!(logs[0].send_errors, 0);
}

#[test]
fn a_stream_of_small_messages_costs_fewer_completions_than_wrs() {
    // The defaults: the window (64 KiB at first) cuts the stream into bursts.
    let mut w = World::new(Config::default());
    let mut logs = [Log::default(), Log::default()];
    let mut queued = 0u8;
    for _round in 0..20 {
        for _ in 0..25 {
            w.eps[0]
                .send(w.pair.now, w.conns[0], pattern(MSG, queued))
                .unwrap();
            queued = queued.wrapping_add(1);
        }
        turn_logged(&mut w, 0, &mut logs[0]);
        turn_logged(&mut w, 1, &mut logs[1]);
    }
    settle_logged(&mut w, &mut logs);
    assert_eq!(w.received(1).len(), 500);
    assert_eq!(sent(&w, 0), 500);
    let wrs = logs[0].posted.len() as u64;
    let cqes = logs[0].send_cqes;
    assert!(wrs >= 500, "{wrs} WRs");
    assert_eq!(cqes, logs[0].signaled() as u64, "one CQE per signaled WR");
    assert!(cqes * 10 <= wrs, "{cqes} CQEs for {wrs} WRs");
    // The receiver's ACK SENDs are each a burst of one: all signaled.
    assert!(logs[1].posted.iter().all(|(_, wr)| wr.signaled));
}

#[test]
fn signal_interval_1_signals_every_wr() {
    let mut w = World::new(roomy(1));
    let mut logs = [Log::default(), Log::default()];
    for i in 0..40 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(MSG, i))
            .unwrap();
    }
    settle_logged(&mut w, &mut logs);
    assert_eq!(sent(&w, 0), 40);
    assert_eq!(logs[0].signaled(), logs[0].posted.len());
    assert_eq!(logs[0].send_cqes, logs[0].posted.len() as u64);
}

#[test]
fn a_single_message_is_signaled() {
    let mut w = World::new(Config::default());
    let mut logs = [Log::default(), Log::default()];
    w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(100, 1))
        .unwrap();
    turn_logged(&mut w, 0, &mut logs[0]);
    assert_eq!(logs[0].posted.len(), 1);
    assert!(logs[0].posted[0].1.signaled);
    settle_logged(&mut w, &mut logs);
    assert_eq!(w.received(1), vec![pattern(100, 1)]);
    assert_eq!(logs[0].send_cqes, 1);
}

/// `n` 4 KiB messages queued at once go out in one turn of host 0; returns its log.
fn one_burst(n: usize) -> (World, Log) {
    let mut w = World::new(roomy(64));
    for i in 0..n {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(MSG, i as u8))
            .unwrap();
    }
    let mut log = Log::default();
    turn_logged(&mut w, 0, &mut log);
    assert_eq!(log.posted.len(), n);
    (w, log)
}

#[test]
fn a_burst_that_fills_one_chain_ends_signaled() {
    let (mut w, log) = one_burst(CHAIN_MAX);
    assert_eq!(log.chains, vec![CHAIN_MAX], "one chain, one doorbell");
    let flags: Vec<bool> = log.posted.iter().map(|(_, wr)| wr.signaled).collect();
    let mut want = vec![false; CHAIN_MAX];
    want[CHAIN_MAX - 1] = true;
    assert_eq!(flags, want);
    let mut logs = [log, Log::default()];
    settle_logged(&mut w, &mut logs);
    assert_eq!(sent(&w, 0), CHAIN_MAX);
    assert_eq!(logs[0].send_cqes, 1);
}

#[test]
fn a_burst_one_past_the_chain_limit_signals_only_its_last_wr() {
    let (mut w, log) = one_burst(CHAIN_MAX + 1);
    // The chain limit cuts the burst; the first chain ends unsignaled because the second,
    // posted in the same flush, ends signaled.
    assert_eq!(log.chains, vec![CHAIN_MAX, 1]);
    let signaled: Vec<usize> = (0..log.posted.len())
        .filter(|&i| log.posted[i].1.signaled)
        .collect();
    assert_eq!(signaled, vec![CHAIN_MAX]);
    let mut logs = [log, Log::default()];
    settle_logged(&mut w, &mut logs);
    assert_eq!(sent(&w, 0), CHAIN_MAX + 1);
    assert_eq!(logs[0].send_cqes, 1);
    let qpn = logs[0].posted[0].0;
    assert_eq!(w.pair.hosts[0].send_slots_used(qpn), Some(0));
}

#[test]
fn two_connections_keep_their_round_robin_order_and_each_ends_signaled() {
    let mut w = World::new(roomy(64));
    let first = w.conns[0];
    w.connect();
    let second = w.conns[0];
    for i in 0..5 {
        for c in [first, second] {
            w.eps[0].send(w.pair.now, c, pattern(MSG, i)).unwrap();
        }
    }
    let mut log = Log::default();
    turn_logged(&mut w, 0, &mut log);
    let qps: Vec<QpNum> = log.posted.iter().map(|(q, _)| *q).collect();
    assert_eq!(qps.len(), 10);
    let (a, b) = (qps[0], qps[1]);
    assert_ne!(a, b);
    assert_eq!(
        qps,
        [a, b].repeat(5),
        "the connections take turns, one WR each"
    );
    let signaled: Vec<usize> = (0..10).filter(|&i| log.posted[i].1.signaled).collect();
    assert_eq!(signaled, vec![8, 9], "each QP's last WR");
}

#[test]
fn an_error_on_an_unsignaled_wr_fails_the_connection_and_flushes_the_rest() {
    // Four receives at the peer and no credits: the fifth SEND finds none (the in-memory
    // transport spends the RNR retries at once), mid-burst, unsignaled.
    let cfg = Config {
        recv_depth: 4,
        receive_credits: false,
        ..roomy(64)
    };
    let mut w = World::new(cfg);
    let mut logs = [Log::default(), Log::default()];
    for i in 0..8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(MSG, i))
            .unwrap();
    }
    turn_logged(&mut w, 0, &mut logs[0]);
    assert_eq!(logs[0].posted.len(), 8);
    assert!(
        !logs[0].posted[4].1.signaled,
        "the failing WR is unsignaled"
    );
    settle_logged(&mut w, &mut logs);
    // The error completes though unsignaled; the three WRs after it are flushed, each with a
    // completion; the four before it succeeded silently.
    assert_eq!((logs[0].send_cqes, logs[0].send_errors), (4, 4));
    let failed: Vec<&Event> = w.apps[0]
        .events
        .iter()
        .filter(|e| matches!(e, Event::ConnectionFailed { .. }))
        .collect();
    assert!(
        matches!(
            failed.as_slice(),
            [Event::ConnectionFailed {
                error: XrdmaError::WorkCompletion {
                    status: WcStatus::RnrRetryExcErr,
                    ..
                },
                ..
            }]
        ),
        "{failed:?}"
    );
    // Every message ends once: the four delivered ones may have been ACKed before the
    // failure, the rest fail.
    let failed_msgs = w.count(0, |e| matches!(e, Event::SendFailed { .. }));
    assert_eq!(sent(&w, 0) + failed_msgs, 8);
    assert!(failed_msgs >= 4);
    // The failed connection's buffers serve a new connection, which carries traffic.
    w.connect();
    let mut logs = [Log::default(), Log::default()];
    w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(MSG, 9))
        .unwrap();
    settle_logged(&mut w, &mut logs);
    assert_eq!(w.received(1).last(), Some(&pattern(MSG, 9)));
    assert_eq!(logs[0].send_errors, 0);
}

#[test]
fn a_close_with_unsignaled_wrs_outstanding_finishes_and_the_qp_is_reused() {
    let mut w = World::new(roomy(64));
    let mut logs = [Log::default(), Log::default()];
    for i in 0..40 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(MSG, i))
            .unwrap();
    }
    turn_logged(&mut w, 0, &mut logs[0]);
    // 39 unsignaled WRs and a signaled one are posted; none of their completions is polled.
    assert_eq!(logs[0].signaled(), 1);
    let qpn = logs[0].posted[0].0;
    assert_eq!(w.pair.hosts[0].send_slots_used(qpn), Some(40));
    let usage = w.eps[0].usage(w.conns[0]).unwrap();
    assert_eq!(usage.send_wrs_outstanding, 40);
    w.eps[0].close(w.conns[0]).unwrap();
    settle_logged(&mut w, &mut logs);
    assert_eq!(w.received(1).len(), 40);
    for h in 0..2 {
        assert_eq!(
            w.count(h, |e| matches!(e, Event::Closed { .. })),
            1,
            "host {h}"
        );
        assert_eq!(w.eps[h].qp_cache().len(), 1, "host {h}'s QP is cached");
    }
    assert_eq!(w.pair.hosts[0].send_slots_used(qpn), Some(0));
    assert_eq!(w.connect(), [true, true]);
    let mut logs = [Log::default(), Log::default()];
    for i in 0..40 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(MSG, i))
            .unwrap();
    }
    settle_logged(&mut w, &mut logs);
    assert_eq!(w.received(1).len(), 80);
}
