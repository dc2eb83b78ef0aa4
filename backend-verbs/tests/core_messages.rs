//! The xrdma core on a real device: two endpoints on one device (loopback), connected with
//! `driver::open`/`establish`, driven by `driver::turn` in real time. Messages of every edge
//! size arrive intact (xxh3 digest and length checked) and are ACKed.

mod common;

use bytes::Bytes;
use common::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use xrdma::driver::{self, Application, TurnScratch};
use xrdma::*;
use xrdma_verbs::hybrid::wait_any;
use xrdma_verbs::{Hybrid, HybridPolicy, TransportConfig, VerbsTransport};
use xxhash_rust::xxh3::xxh3_64;

#[derive(Default)]
struct Recorder {
    messages: Vec<Bytes>,
    sent: usize,
    failures: Vec<String>,
}

impl Application for Recorder {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { data, .. } => self.messages.push(data),
            Event::Sent { .. } => self.sent += 1,
            other => self.failures.push(format!("{other:?}")),
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Two endpoints, each on its own transport, with one connection between them.
fn connect(dev: &xrdma_verbs::Device) -> ([VerbsTransport; 2], [Endpoint; 2], [ConnId; 2]) {
    let mut ts = [
        VerbsTransport::new(dev, TransportConfig::default()).unwrap(),
        VerbsTransport::new(dev, TransportConfig::default()).unwrap(),
    ];
    let mut eps = [
        Endpoint::new(Config::default()).unwrap(),
        Endpoint::new(Config::default()).unwrap(),
    ];
    let [ta, tb] = &mut ts;
    let [ea, eb] = &mut eps;
    let ha = driver::open(ea, ta).unwrap();
    let hb = driver::open(eb, tb).unwrap();
    let ca = driver::establish(ea, ta, ha, &hb.info, 1).unwrap();
    let cb = driver::establish(eb, tb, hb, &ha.info, 0).unwrap();
    (ts, eps, [ca, cb])
}

#[test]
fn messages_of_every_edge_size_arrive_intact() {
    let Some(dev) = device_or_skip("messages_of_every_edge_size_arrive_intact") else {
        return;
    };
    let (mut ts, mut eps, conns) = connect(&dev);
    let mut apps = [Recorder::default(), Recorder::default()];
    let mut scratch = TurnScratch::default();
    // Around rxe's 1024 B MTU, the 4 KiB small/large boundary, the 64 KiB fragment size, and
    // one 8 MiB message (128 fragments).
    let sizes = [1023usize, 1024, 1025, 4096, 4097, 65536, 65537, 8 << 20];
    let msgs: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| pattern(n, i as u8))
        .collect();
    for m in &msgs {
        let now = ts[0].now();
        eps[0]
            .send(now, conns[0], Bytes::copy_from_slice(m))
            .unwrap();
    }
    let start = Instant::now();
    while (apps[1].messages.len() < sizes.len() || apps[0].sent < sizes.len())
        && start.elapsed() < Duration::from_secs(120)
    {
        for h in 0..2 {
            let now = ts[h].now();
            driver::turn(now, &mut eps[h], &mut ts[h], &mut apps[h], &mut scratch);
        }
        assert!(apps[0].failures.is_empty(), "{:?}", apps[0].failures);
        assert!(apps[1].failures.is_empty(), "{:?}", apps[1].failures);
    }
    eprintln!(
        "{} messages, {} bytes in {:?}",
        sizes.len(),
        sizes.iter().sum::<usize>(),
        start.elapsed()
    );
    assert_eq!(apps[1].messages.len(), sizes.len(), "messages received");
    assert_eq!(apps[0].sent, sizes.len(), "messages ACKed");
    for (i, (got, want)) in apps[1].messages.iter().zip(&msgs).enumerate() {
        assert_eq!(got.len(), want.len(), "length of message {i}");
        assert_eq!(xxh3_64(got), xxh3_64(want), "digest of message {i}");
    }
    let st = eps[0].stats(conns[0]).unwrap();
    // Eager frames: 1023, 1024 and 1025 B share one (3 × 16 B of headers + 3072 B = 3120 B
    // fit a 4160-byte receive buffer; adding 4096 B would not), 4096 B goes alone: 2.
    // Rendezvous WRITEs of at most 64 KiB: 1 (4097) + 1 (65536) + 2 (65537) + 8 MiB / 64 KiB
    // (128) = 132. Together 134.
    assert_eq!(st.eager_messages, 4);
    assert_eq!(st.fragments_sent, 134);
    assert_eq!(st.send_bytes, sizes.iter().sum::<usize>() as u64);
    assert_eq!(ts[0].poll_errors() + ts[1].poll_errors(), 0);
    // Large messages came as leases on their landing buffers, held until dropped.
    let large: usize = sizes.iter().filter(|&&n| n > 4096).sum();
    let held = eps[1].resources();
    assert_eq!(held.lent_out_bytes, Some(large as u64));
    assert!(held.landing_lent_bytes >= Some(large as u64), "{held:?}");
    apps[1].messages.clear();
    let now = ts[1].now();
    driver::turn(now, &mut eps[1], &mut ts[1], &mut apps[1], &mut scratch);
    let back = eps[1].resources();
    assert_eq!(
        (back.landing_lent_bytes, back.landing_in_use_bytes),
        (Some(0), 0)
    );
}

#[test]
fn a_message_filled_in_the_send_arena_is_written_in_place_and_lands_as_a_lease() {
    let test = "a_message_filled_in_the_send_arena_is_written_in_place_and_lands_as_a_lease";
    let Some(dev) = device_or_skip(test) else {
        return;
    };
    let (mut ts, mut eps, conns) = connect(&dev);
    let mut apps = [Recorder::default(), Recorder::default()];
    let mut scratch = TurnScratch::default();
    let len = (2 << 20) + 3;
    let mut buf = ts[0].send_buffer(len).expect("a device lends send buffers");
    buf.copy_from_slice(&pattern(len, 4));
    let now = ts[0].now();
    eps[0].send(now, conns[0], buf.freeze()).unwrap();
    let start = Instant::now();
    while (apps[1].messages.is_empty() || apps[0].sent == 0)
        && start.elapsed() < Duration::from_secs(60)
    {
        for h in 0..2 {
            let now = ts[h].now();
            driver::turn(now, &mut eps[h], &mut ts[h], &mut apps[h], &mut scratch);
        }
        assert!(apps[0].failures.is_empty(), "{:?}", apps[0].failures);
        assert!(apps[1].failures.is_empty(), "{:?}", apps[1].failures);
    }
    assert_eq!(apps[1].messages.len(), 1);
    assert_eq!(xxh3_64(&apps[1].messages[0]), xxh3_64(&pattern(len, 4)));
    let (tx, rx) = (eps[0].resources(), eps[1].resources());
    assert_eq!(tx.sent_in_place_bytes, Some(len as u64), "no staging copy");
    assert!(
        tx.staged_bytes < Some(64),
        "only the RTS: {:?}",
        tx.staged_bytes
    );
    assert_eq!(rx.lent_out_bytes, Some(len as u64), "no copy out");
}

/// Echoes every message back on the connection it came from.
#[derive(Default)]
struct Echo {
    echoed: usize,
    failures: Vec<String>,
}

impl Application for Echo {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { conn, data, .. } => match ep.send(now, conn, data) {
                Ok(_) => self.echoed += 1,
                Err(e) => self.failures.push(e.to_string()),
            },
            Event::Sent { .. } => {}
            other => self.failures.push(format!("{other:?}")),
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// One driver turn, then the hybrid loop's wait after it, as the verbs fabric runs them:
/// whether it blocked until its timeout (not woken by a completion).
fn hybrid_step<A: Application>(
    h: &mut Hybrid,
    ep: &mut Endpoint,
    t: &mut VerbsTransport,
    app: &mut A,
    scratch: &mut TurnScratch,
) -> bool {
    let next = driver::turn(t.now(), ep, t, app, scratch);
    let activity = t.completions_polled() + t.work_requests_posted();
    let until = next.map(|at| Duration::from_nanos(at.saturating_since(t.now()).as_ps() / 1000));
    if !h.idle(activity) {
        return false;
    }
    match h.wait(until) {
        Some(wait) => {
            let woken = wait_any(std::slice::from_mut(t), wait).unwrap();
            h.blocked(woken);
            !woken
        }
        None => false,
    }
}

#[test]
fn hybrid_workers_in_two_threads_echo_and_block_when_idle() {
    let Some(dev) = device_or_skip("hybrid_workers_in_two_threads_echo_and_block_when_idle") else {
        return;
    };
    let (ts, eps, conns) = connect(&dev);
    let [mut ta, mut tb] = ts;
    let [mut ea, mut eb] = eps;
    let done = AtomicBool::new(false);
    let sizes = [64usize, 4097, 65537];
    let policy = HybridPolicy {
        spin: Duration::from_micros(100),
        max_block: Duration::from_millis(50),
    };
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            let mut app = Echo::default();
            let mut drv = Hybrid::new(policy);
            let mut scratch = TurnScratch::default();
            while !done.load(Ordering::Acquire) {
                hybrid_step(&mut drv, &mut eb, &mut tb, &mut app, &mut scratch);
            }
            assert!(app.failures.is_empty(), "{:?}", app.failures);
            (app.echoed, drv.stats())
        });
        let mut app = Recorder::default();
        let mut drv = Hybrid::new(policy);
        let mut scratch = TurnScratch::default();
        for (i, &n) in sizes.iter().enumerate() {
            let now = ta.now();
            ea.send(now, conns[0], Bytes::from(pattern(n, i as u8)))
                .unwrap();
        }
        let start = Instant::now();
        while app.messages.len() < sizes.len() && start.elapsed() < Duration::from_secs(60) {
            hybrid_step(&mut drv, &mut ea, &mut ta, &mut app, &mut scratch);
        }
        // Idle for a while: the driver must block rather than spin.
        let idle = Instant::now();
        let mut timed_out = 0;
        while idle.elapsed() < Duration::from_millis(300) {
            if hybrid_step(&mut drv, &mut ea, &mut ta, &mut app, &mut scratch) {
                timed_out += 1;
            }
        }
        done.store(true, Ordering::Release);
        let (echoed, server_stats) = server.join().unwrap();
        assert!(app.failures.is_empty(), "{:?}", app.failures);
        assert_eq!(echoed, sizes.len());
        assert_eq!(app.messages.len(), sizes.len());
        for (i, &n) in sizes.iter().enumerate() {
            assert_eq!(app.messages[i], pattern(n, i as u8), "echo {i}");
        }
        // 300 ms idle with at most 50 ms per block: at least 300/50 − 1 = 5 timed-out blocks
        // (one block may be cut short by a late ACK completion).
        assert!(timed_out >= 5, "only {timed_out} idle blocks");
        eprintln!("client {:?}, server {:?}", drv.stats(), server_stats);
    });
}

/// Turn both hosts until `done` holds or `limit` passes; returns whether it held.
fn turn_until(
    ts: &mut [VerbsTransport; 2],
    eps: &mut [Endpoint; 2],
    apps: &mut [Recorder; 2],
    limit: Duration,
    mut done: impl FnMut(&[Recorder; 2]) -> bool,
) -> bool {
    let mut scratch = TurnScratch::default();
    let start = Instant::now();
    while !done(apps) {
        if start.elapsed() > limit {
            return false;
        }
        for h in 0..2 {
            let now = ts[h].now();
            driver::turn(now, &mut eps[h], &mut ts[h], &mut apps[h], &mut scratch);
        }
    }
    true
}

#[test]
fn a_qp_forced_into_error_fails_its_connection_and_is_never_reused() {
    let Some(dev) =
        device_or_skip("a_qp_forced_into_error_fails_its_connection_and_is_never_reused")
    else {
        return;
    };
    let (mut ts, mut eps, conns) = connect(&dev);
    let mut apps = [Recorder::default(), Recorder::default()];
    let now = ts[0].now();
    eps[0]
        .send(now, conns[0], Bytes::from(pattern(100, 1)))
        .unwrap();
    assert!(turn_until(
        &mut ts,
        &mut eps,
        &mut apps,
        Duration::from_secs(30),
        |a| { a[0].sent == 1 && a[1].messages.len() == 1 }
    ));
    let qps_before = ts[0].qp_count();
    // Force host 0's QP into the error state: an RDMA WRITE with a remote key the peer never
    // issued draws a remote access error NAK, which moves the requester's QP to ERR.
    let qpn = (0..u32::MAX >> 8)
        .find(|&q| ts[0].qp_caps(q).is_some())
        .expect("host 0 has a QP");
    let mr = ts[0].register_memory(4096).unwrap();
    let bad = SendWr {
        wr_id: u64::MAX,
        opcode: SendOpcode::RdmaWrite,
        sge: Sge {
            addr: mr.addr,
            len: 64,
            lkey: mr.lkey,
        },
        imm: 0,
        remote_addr: 0x1000,
        rkey: 0x00de_ad00,
        signaled: true,
    };
    ts[0].post_send(qpn, &bad).unwrap();
    let now = ts[0].now();
    eps[0]
        .send(now, conns[0], Bytes::from(pattern(100, 2)))
        .unwrap();
    // The connection fails with a typed error within the limit, and its message with it.
    assert!(
        turn_until(&mut ts, &mut eps, &mut apps, Duration::from_secs(60), |a| {
            a[0].failures.iter().any(|f| f.contains("ConnectionFailed"))
        }),
        "no typed failure: {:?}",
        apps[0].failures
    );
    assert!(
        apps[0]
            .failures
            .iter()
            .any(|f| f.contains("SendFailed") && f.contains("WorkCompletion")),
        "{:?}",
        apps[0].failures
    );
    assert!(!eps[0].is_open(conns[0]));
    // The next connection never gets the broken QP: the cache is empty, a new QP is made.
    let [ta, tb] = &mut ts;
    let [ea, eb] = &mut eps;
    let ha = driver::open(ea, ta).unwrap();
    assert!(
        !ha.reused_qp,
        "a failed connection's QP went to the QP cache"
    );
    assert_ne!(ha.info.qp.qpn, qpn);
    assert_eq!(ta.qp_count(), qps_before + 1);
    let hb = driver::open(eb, tb).unwrap();
    let ca = driver::establish(ea, ta, ha, &hb.info, 1).unwrap();
    driver::establish(eb, tb, hb, &ha.info, 0).unwrap();
    let now = ts[0].now();
    eps[0].send(now, ca, Bytes::from(pattern(100, 3))).unwrap();
    let sent_before = apps[0].sent;
    assert!(turn_until(
        &mut ts,
        &mut eps,
        &mut apps,
        Duration::from_secs(30),
        |a| { a[0].sent == sent_before + 1 && a[1].messages.len() == 2 }
    ));
    assert_eq!(apps[1].messages[1], pattern(100, 3));
}
