//! Property tests of the core over the fault injector on the in-memory transport: random
//! workloads (sizes across the eager limit, the fragment size and a few MiB; coalesced small
//! messages; several connections; optional close) under random faults.
//!
//! Checked on every run: no message is delivered twice; every message handed to
//! `Endpoint::send` ends in exactly one `Sent` or `SendFailed`; what arrives on a connection is
//! a prefix of what was sent on it, byte for byte, and holds every message reported sent;
//! every buffer is back in its pool at the end (nothing in flight, no landing buffer in use,
//! an ended connection's buffers kept for reuse); and the run reaches quiescence within a
//! bounded number of steps and of simulated time. `PROPTEST_CASES` sets the case count.

mod util;

use bytes::Bytes;
use proptest::prelude::*;
use std::collections::BTreeMap;
use util::{Pair, Recorder};
use xrdma::driver::{self, TurnScratch};
use xrdma::fault::{FaultConfig, FaultCounts, FaultInjector, FaultState};
use xrdma::*;

/// One message of a workload: on connection `conn`, from host `from`, `len` bytes.
#[derive(Clone, Copy, Debug)]
struct Msg {
    conn: usize,
    from: usize,
    len: usize,
}

/// A workload: connections, messages queued at the start, and who closes.
#[derive(Clone, Debug)]
struct Workload {
    conns: usize,
    msgs: Vec<Msg>,
    /// Per connection: which hosts call `close` after queueing (bit 0: host 0, bit 1: host 1).
    close: Vec<u8>,
    recv_depth: u32,
    landing_budget: u64,
}

const ACK_TIMEOUT: Span = Span::from_us(100);
/// A run must be quiescent by then: the ACK timeout bounds every wait, and a failure
/// reaches the peer after at most one more.
const TIME_BOUND: Span = Span::from_us(1000);
const STEP_BOUND: usize = 20_000;

fn pattern(len: usize, salt: u8) -> Bytes {
    Bytes::from(
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
            .collect::<Vec<_>>(),
    )
}

/// What a run produced, for the checks.
struct Outcome {
    events: [Vec<Event>; 2],
    /// Per host: (message id, connection index, workload index) of each accepted send.
    ids: [Vec<(MsgId, usize, usize)>; 2],
    counts: [FaultCounts; 2],
    conns: Vec<[ConnId; 2]>,
    /// Per connection: the hosts whose `close` was accepted.
    closed: Vec<u8>,
    /// Per host: staging-ring and receive-buffer sets carved from the MR pool.
    buffer_sets: [usize; 2],
    eps: [Endpoint; 2],
    end: Time,
}

fn salt(i: usize) -> u8 {
    (i as u8).wrapping_mul(7).wrapping_add(1)
}

/// Run `w` with `faults` on both hosts (`None`: no wrapper at all).
fn run(w: &Workload, faults: Option<&FaultConfig>) -> Outcome {
    let cfg = Config {
        ack_timeout: ACK_TIMEOUT,
        recv_depth: w.recv_depth,
        landing_budget: w.landing_budget,
        ..Config::default()
    };
    let mut pair = Pair::new();
    let mut eps = [
        Endpoint::new(cfg.clone()).expect("config"),
        Endpoint::new(cfg).expect("config"),
    ];
    let mut apps: [Recorder; 2] = Default::default();
    let mut states = faults.map(|f| {
        [
            FaultState::new(f.clone()),
            FaultState::new(FaultConfig {
                seed: f.seed ^ 0x5555,
                ..f.clone()
            }),
        ]
    });
    let mut scratch = TurnScratch::default();

    // Calls `$body` with `$t`, host `$h`'s transport (wrapped or not).
    macro_rules! with_t {
        ($h:expr, |$t:ident| $body:expr) => {{
            let h = $h;
            match &mut states {
                Some(st) => {
                    let state =
                        std::mem::replace(&mut st[h], FaultState::new(FaultConfig::default()));
                    let mut $t = FaultInjector::from_state(pair.side(h), state);
                    let r = $body;
                    st[h] = $t.into_parts().1;
                    r
                }
                None => {
                    let mut $t = pair.side(h);
                    $body
                }
            }
        }};
    }

    let mut conns = Vec::new();
    let mut buffer_sets = [0usize; 2];
    for _ in 0..w.conns {
        for (h, ep) in eps.iter().enumerate() {
            if ep.spare_buffer_count() == 0 {
                buffer_sets[h] += 1; // `open` carves a new set, else it reuses a spare one
            }
        }
        let (e0, e1) = eps.split_at_mut(1);
        let a = with_t!(0, |t| driver::open(&mut e0[0], &mut t)).expect("open");
        let b = with_t!(1, |t| driver::open(&mut e1[0], &mut t)).expect("open");
        let ca = with_t!(0, |t| driver::establish(&mut e0[0], &mut t, a, &b.info, 1))
            .expect("establish");
        let cb = with_t!(1, |t| driver::establish(&mut e1[0], &mut t, b, &a.info, 0))
            .expect("establish");
        conns.push([ca, cb]);
    }
    let mut ids: [Vec<(MsgId, usize, usize)>; 2] = Default::default();
    for (i, m) in w.msgs.iter().enumerate() {
        let conn = conns[m.conn][m.from];
        if let Ok(id) = eps[m.from].send(Time::ZERO, conn, pattern(m.len, salt(i))) {
            ids[m.from].push((id, m.conn, i));
        }
    }
    // Per connection, the hosts whose `close` was accepted (bits as in `Workload::close`).
    let mut closed = vec![0u8; w.conns];
    for (k, &bits) in w.close.iter().enumerate() {
        for h in 0..2 {
            if bits & (1 << h) != 0 && eps[h].close(conns[k][h]).is_ok() {
                closed[k] |= 1 << h;
            }
        }
    }

    let mut now = Time::ZERO;
    let mut quiet = false;
    for _ in 0..STEP_BOUND {
        let mut next: Option<Time> = None;
        for h in 0..2 {
            pair.now = now;
            let wake = with_t!(h, |t| driver::turn(
                now,
                &mut eps[h],
                &mut t,
                &mut apps[h],
                &mut scratch
            ));
            next = match (next, wake) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        let held = states
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s.pending() > 0));
        if pair.busy() || held {
            continue;
        }
        match next {
            None => {
                quiet = true;
                break;
            }
            Some(t) => now = now.max(t),
        }
    }
    assert!(quiet, "no quiescence within {STEP_BOUND} steps (now {now})");
    if std::env::var_os("FAULTS_TRACE").is_some() {
        for (h, a) in apps.iter().enumerate() {
            for e in &a.events {
                eprintln!("host {h}: {e:?}");
            }
            for c in &conns {
                eprintln!(
                    "host {h}: {:?} {:?}",
                    eps[h].usage(c[h]),
                    eps[h].stats(c[h])
                );
            }
        }
    }
    assert!(now <= Time::ZERO + TIME_BOUND, "quiescent only at {now}");
    let [a, b] = apps;
    Outcome {
        events: [a.events, b.events],
        ids,
        counts: states.map_or([FaultCounts::default(); 2], |s| {
            [s[0].counts(), s[1].counts()]
        }),
        conns,
        closed,
        buffer_sets,
        eps,
        end: now,
    }
}

/// The properties every run must have, faults or not.
fn check(w: &Workload, o: &mut Outcome) {
    for h in 0..2 {
        // Each accepted message ends in exactly one Sent or SendFailed.
        let mut ends: BTreeMap<MsgId, usize> = BTreeMap::new();
        for e in &o.events[h] {
            if let Event::Sent { msg, .. } | Event::SendFailed { msg, .. } = e {
                *ends.entry(*msg).or_default() += 1;
            }
        }
        for &(id, k, i) in &o.ids[h] {
            assert_eq!(
                ends.remove(&id),
                Some(1),
                "host {h}: message {i} ({id:?} on connection {k}) must end exactly once"
            );
        }
        assert!(
            ends.is_empty(),
            "host {h}: ends of unknown messages {ends:?}"
        );

        // What arrived on each connection is a prefix of what the peer sent on it, and holds
        // every message reported sent.
        let peer = 1 - h;
        for (k, c) in o.conns.iter().enumerate() {
            let got: Vec<&Bytes> = o.events[h]
                .iter()
                .filter_map(|e| match e {
                    Event::Message { conn, data, .. } if *conn == c[h] => Some(data),
                    _ => None,
                })
                .collect();
            let sent: Vec<(MsgId, usize)> = o.ids[peer]
                .iter()
                .filter(|(_, kk, _)| *kk == k)
                .map(|&(id, _, i)| (id, i))
                .collect();
            assert!(
                got.len() <= sent.len(),
                "host {h} connection {k}: {} delivered, {} sent",
                got.len(),
                sent.len()
            );
            for (j, data) in got.iter().enumerate() {
                let i = sent[j].1;
                assert!(
                    **data == pattern(w.msgs[i].len, salt(i)),
                    "host {h} connection {k}: delivery {j} is not message {i}"
                );
            }
            for (j, (id, _)) in sent.iter().enumerate() {
                let acked = o.events[peer]
                    .iter()
                    .any(|e| matches!(e, Event::Sent { msg, .. } if msg == id));
                assert!(
                    !acked || j < got.len(),
                    "host {peer} connection {k}: message {j} reported sent, never delivered"
                );
            }
        }

        // Every buffer back: nothing held by an ended connection, no landing buffer in use,
        // every ended connection's buffers kept for reuse.
        let ep = &mut o.eps[h];
        let mut open_conns = 0;
        for (k, c) in o.conns.iter().enumerate() {
            let u = ep.usage(c[h]).expect("connection");
            let open = ep.is_open(c[h]);
            open_conns += usize::from(open);
            assert!(
                u.is_idle(),
                "host {h} connection {k} (open: {open}) still holds {u:?}"
            );
            // A close always ends; a peer that has nothing to send and hears nothing may stay
            // open (it learns of a failed peer at its next send).
            if o.closed[k] & (1 << h) != 0 {
                assert!(!open, "host {h} connection {k} was closed but never ended");
            }
        }
        assert_eq!(
            ep.landing_pool().in_use_bytes(),
            0,
            "host {h} landing buffers"
        );
        assert_eq!(ep.waiting_grants(), 0, "host {h} grants waiting");
        assert_eq!(
            ep.spare_buffer_count(),
            o.buffer_sets[h] - open_conns,
            "host {h}: every ended connection's buffers are spare"
        );
        assert_eq!(ep.poll_timeout(), None, "host {h} timer left");
    }
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 0usize..=200,
        2 => 4094usize..=4098,
        2 => 65534usize..=65538,
        1 => 100_000usize..=300_000,
        1 => (1usize << 20)..=(3 << 20),
    ]
}

fn workload() -> impl Strategy<Value = Workload> {
    (1usize..=3)
        .prop_flat_map(|conns| {
            (
                Just(conns),
                prop::collection::vec(
                    (0..conns, 0usize..2, size()).prop_map(|(conn, from, len)| Msg {
                        conn,
                        from,
                        len,
                    }),
                    0..14,
                ),
                prop::collection::vec(0u8..4, conns),
                prop_oneof![Just(8u32), Just(16), Just(256)],
                prop_oneof![Just(128u64 << 10), Just(1 << 30)],
            )
        })
        .prop_map(
            |(conns, msgs, close, recv_depth, landing_budget)| Workload {
                conns,
                msgs,
                close,
                recv_depth,
                landing_budget,
            },
        )
}

fn rate(max: f64) -> impl Strategy<Value = f64> {
    prop_oneof![2 => Just(0.0), 1 => 0.0..max]
}

fn faults() -> impl Strategy<Value = FaultConfig> {
    (
        any::<u64>(),
        rate(0.05),
        rate(0.1),
        rate(0.3),
        1u32..6,
        any::<bool>(),
        rate(0.03),
        rate(0.02),
        rate(0.02),
    )
        .prop_map(
            |(seed, drop, duplicate, delay, max_delay_polls, reorder, error, rs, rr)| FaultConfig {
                seed,
                drop,
                duplicate,
                delay,
                max_delay_polls,
                reorder,
                error,
                refuse_send: rs,
                refuse_recv: rr,
                ..FaultConfig::default()
            },
        )
}

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        // Found cases are kept as plain regression tests below.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases(48))]

    #[test]
    fn no_loss_no_duplicate_no_leak_under_faults(w in workload(), f in faults()) {
        let mut o = run(&w, Some(&f));
        check(&w, &mut o);
    }

    /// Delays that keep each queue's order are what a real CQ shows: nothing may fail.
    #[test]
    fn legal_delays_change_nothing_but_timing(w in workload(), seed in any::<u64>(), delay in 0.0..0.5f64) {
        let f = FaultConfig { seed, delay, ..FaultConfig::default() };
        let mut o = run(&w, Some(&f));
        check(&w, &mut o);
        for h in 0..2 {
            let failed = o.events[h].iter().find(|e| {
                matches!(e, Event::ConnectionFailed { .. } | Event::SendFailed { .. })
            });
            prop_assert!(failed.is_none(), "host {}: {:?}", h, failed);
        }
    }

    /// A wrapper with every rate 0 is transparent.
    #[test]
    fn a_transparent_wrapper_changes_nothing(w in workload()) {
        let bare = run(&w, None);
        let wrapped = run(&w, Some(&FaultConfig::default()));
        prop_assert_eq!(&bare.events, &wrapped.events);
        prop_assert_eq!(bare.end, wrapped.end);
        prop_assert_eq!(wrapped.counts, [FaultCounts::default(); 2]);
    }
}

// Cases the properties found, written out. Each failed before the fix named.

fn msg(conn: usize, from: usize, len: usize) -> Msg {
    Msg { conn, from, len }
}

/// A connection that failed kept its staging ring and receive buffers forever: they now
/// serve the next connection once its QP is reset.
#[test]
fn regression_a_failed_connection_gives_its_buffers_back() {
    let w = Workload {
        conns: 2,
        msgs: vec![],
        close: vec![0, 0],
        recv_depth: 256,
        landing_budget: 128 << 10,
    };
    let f = FaultConfig {
        seed: 30347431,
        duplicate: 0.0022694002013001107,
        delay: 0.25005464437204306,
        max_delay_polls: 2,
        reorder: true,
        error: 0.022700544138486132,
        refuse_recv: 0.010476038557189342,
        ..FaultConfig::default()
    };
    let mut o = run(&w, Some(&f));
    check(&w, &mut o);
}

/// A closing connection whose last send completion was lost waited for it forever: the
/// probe after the ACK timeout completes, which implies the lost one.
#[test]
fn regression_a_lost_send_completion_does_not_hold_up_a_close() {
    let w = Workload {
        conns: 1,
        msgs: vec![msg(0, 0, 0), msg(0, 0, 0)],
        close: vec![1],
        recv_depth: 8,
        landing_budget: 128 << 10,
    };
    let f = FaultConfig {
        seed: 16238282534720394883,
        drop: 0.041368194717378924,
        ..FaultConfig::default()
    };
    let mut o = run(&w, Some(&f));
    check(&w, &mut o);
}

/// A receiver whose last fragment's completion was lost held the landing buffer forever
/// (the sender timed out and reset its QP): it now probes the peer, whose QP is gone, and
/// fails.
#[test]
fn regression_a_lost_last_fragment_does_not_pin_its_landing_buffer() {
    let w = Workload {
        conns: 1,
        msgs: vec![msg(0, 0, 0), msg(0, 1, 1 << 20)],
        close: vec![2],
        recv_depth: 8,
        landing_budget: 128 << 10,
    };
    let f = FaultConfig {
        seed: 5377768115007292148,
        drop: 0.03192217328228471,
        max_delay_polls: 1,
        ..FaultConfig::default()
    };
    let mut o = run(&w, Some(&f));
    check(&w, &mut o);
}

/// A failed connection's landing buffers went back to the pool without waking the
/// connections waiting for the landing budget they held: those waited forever (their peers
/// probing them all along).
#[test]
fn regression_a_failed_connections_landing_budget_admits_the_waiters() {
    let w = Workload {
        conns: 2,
        msgs: vec![msg(0, 0, 0), msg(1, 0, 65537), msg(0, 0, 65534)],
        close: vec![0, 2],
        recv_depth: 8,
        landing_budget: 128 << 10,
    };
    let f = FaultConfig {
        seed: 16562639769663201802,
        error: 0.008564795753919227,
        max_delay_polls: 1,
        ..FaultConfig::default()
    };
    let mut o = run(&w, Some(&f));
    check(&w, &mut o);
}

/// A duplicated receive completion was taken for a new frame: out of sequence, the connection
/// failed (and a duplicated ACK reposted its receive buffer twice, so two frames could land in
/// one buffer). Completions whose WR is no longer outstanding are now ignored.
#[test]
fn regression_duplicated_completions_are_ignored() {
    let w = Workload {
        conns: 2,
        msgs: vec![
            msg(0, 0, 100),
            msg(0, 1, 4097),
            msg(1, 0, 70_000),
            msg(0, 0, 0),
            msg(1, 1, 200),
        ],
        close: vec![1, 3],
        recv_depth: 16,
        landing_budget: 1 << 30,
    };
    let f = FaultConfig {
        seed: 1,
        duplicate: 1.0,
        ..FaultConfig::default()
    };
    let mut o = run(&w, Some(&f));
    check(&w, &mut o);
    assert!(o.counts[0].duplicated > 0 && o.counts[1].duplicated > 0);
    for h in 0..2 {
        let failed = o.events[h]
            .iter()
            .find(|e| matches!(e, Event::ConnectionFailed { .. }));
        assert!(failed.is_none(), "host {h}: {failed:?}");
    }
}
