//! The fault injector's own behaviour, on the in-memory transport: each fault alone, its
//! counts, and transparency with every rate 0.

mod util;

use util::Pair;
use xrdma::fault::{FaultConfig, FaultCounts, FaultInjector, FaultState};
use xrdma::*;

/// Connect QP 0 of host 0 to QP 0 of host 1, with `recvs` receives posted on host 1 and a
/// 4 KiB buffer registered on each host.
fn wired(recvs: u64) -> (Pair, MemoryRegion, MemoryRegion) {
    let mut p = Pair::new();
    let mut bufs = Vec::new();
    let mut addrs = Vec::new();
    for h in 0..2 {
        let mut s = p.side(h);
        bufs.push(s.register_memory(4096).unwrap());
        addrs.push(s.create_qp(QpCaps::default()).unwrap());
    }
    p.side(0).connect_qp(0, &addrs[1]).unwrap();
    p.side(1).connect_qp(0, &addrs[0]).unwrap();
    for i in 0..recvs {
        let sge = Sge {
            addr: bufs[1].addr,
            len: 64,
            lkey: bufs[1].lkey,
        };
        p.side(1)
            .post_recv(
                0,
                &RecvWr {
                    wr_id: 100 + i,
                    sge,
                },
            )
            .unwrap();
    }
    (p, bufs[0], bufs[1])
}

fn send(wr_id: u64, buf: &MemoryRegion) -> SendWr {
    SendWr {
        wr_id,
        opcode: SendOpcode::SendWithImm,
        sge: Sge {
            addr: buf.addr,
            len: 8,
            lkey: buf.lkey,
        },
        imm: wr_id as u32,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    }
}

/// Post `n` SENDs from host 0 through a wrapper with `cfg`, then poll host 0 `polls` times;
/// returns the completions polled and the counts.
fn run(cfg: FaultConfig, n: u64, polls: usize) -> (Vec<WorkCompletion>, FaultCounts, Pair) {
    let (mut p, b0, _) = wired(n);
    let mut f = FaultInjector::new(p.side(0), cfg);
    for i in 0..n {
        let _ = f.post_send(0, &send(i, &b0));
    }
    let mut out = Vec::new();
    for _ in 0..polls {
        f.poll_cq(&mut out, 64);
    }
    let counts = f.counts();
    (out, counts, p)
}

#[test]
fn every_rate_zero_is_transparent() {
    let (mut p, b0, _) = wired(4);
    let mut f = FaultInjector::new(p.side(0), FaultConfig::default());
    for i in 0..4 {
        f.post_send(0, &send(i, &b0)).unwrap();
    }
    let mut out = Vec::new();
    assert_eq!(f.poll_cq(&mut out, 2), 2);
    assert_eq!(f.poll_cq(&mut out, 64), 2);
    assert_eq!(f.counts(), FaultCounts::default());
    let ids: Vec<u64> = out.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert!(out.iter().all(|w| w.status == WcStatus::Success));
}

#[test]
fn dropped_completions_are_never_reported() {
    let cfg = FaultConfig {
        drop: 1.0,
        ..FaultConfig::default()
    };
    let (out, counts, mut p) = run(cfg, 3, 3);
    assert!(out.is_empty());
    assert_eq!(counts.dropped, 3);
    // The WRs did complete: the peer received them.
    let mut rx = Vec::new();
    assert_eq!(p.side(1).poll_cq(&mut rx, 64), 3);
}

#[test]
fn duplicated_completions_are_reported_twice() {
    let cfg = FaultConfig {
        duplicate: 1.0,
        ..FaultConfig::default()
    };
    let (out, counts, _) = run(cfg, 2, 1);
    let ids: Vec<u64> = out.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, [0, 0, 1, 1]);
    assert_eq!(counts.duplicated, 2);
}

#[test]
fn delayed_completions_come_later_and_in_queue_order() {
    let cfg = FaultConfig {
        seed: 3,
        delay: 0.5,
        max_delay_polls: 3,
        ..FaultConfig::default()
    };
    let (mut p, b0, _) = wired(20);
    let mut f = FaultInjector::new(p.side(0), cfg);
    for i in 0..20 {
        f.post_send(0, &send(i, &b0)).unwrap();
    }
    let mut out = Vec::new();
    let first = f.poll_cq(&mut out, 64);
    assert!(first < 20 && f.state().pending() == 20 - first);
    for _ in 0..4 {
        f.poll_cq(&mut out, 64);
    }
    assert_eq!(f.state().pending(), 0);
    let ids: Vec<u64> = out.iter().map(|w| w.wr_id).collect();
    assert_eq!(
        ids,
        (0..20).collect::<Vec<_>>(),
        "one queue keeps its order"
    );
    assert!(f.counts().delayed > 0);
}

#[test]
fn an_error_puts_the_qp_in_error_until_it_is_reset() {
    let cfg = FaultConfig {
        error: 1.0,
        ..FaultConfig::default()
    };
    let (mut p, b0, _) = wired(4);
    let mut f = FaultInjector::new(p.side(0), cfg);
    f.post_send(0, &send(0, &b0)).unwrap();
    f.post_send(0, &send(1, &b0)).unwrap();
    let mut out = Vec::new();
    f.poll_cq(&mut out, 64);
    let st: Vec<WcStatus> = out.iter().map(|w| w.status).collect();
    assert_eq!(st, [WcStatus::RetryExcErr, WcStatus::WrFlushErr]);
    assert!(f.state().qp_in_error(0));
    // Posts to a QP in error complete at once, flushed, and do not reach the peer.
    f.post_send(0, &send(2, &b0)).unwrap();
    out.clear();
    f.poll_cq(&mut out, 64);
    assert_eq!((out[0].wr_id, out[0].status), (2, WcStatus::WrFlushErr));
    let c = f.counts();
    assert_eq!((c.errored, c.flushed), (1, 2));
    f.reset_qp(0).unwrap();
    assert!(!f.state().qp_in_error(0));
    drop(f);
    let mut rx = Vec::new();
    assert_eq!(p.side(1).poll_cq(&mut rx, 64), 2);
}

#[test]
fn refused_posts_return_an_error_and_post_nothing() {
    let cfg = FaultConfig {
        refuse_send: 1.0,
        refuse_recv: 1.0,
        ..FaultConfig::default()
    };
    let (mut p, b0, b1) = wired(0);
    let mut f = FaultInjector::new(p.side(0), cfg.clone());
    assert!(matches!(
        f.post_send(0, &send(0, &b0)),
        Err(TransportError::Other { .. })
    ));
    let (_, state) = f.into_parts();
    let mut g = FaultInjector::from_state(p.side(1), state);
    let sge = Sge {
        addr: b1.addr,
        len: 64,
        lkey: b1.lkey,
    };
    assert!(g.post_recv(0, &RecvWr { wr_id: 1, sge }).is_err());
    let c = g.counts();
    assert_eq!((c.refused_sends, c.refused_recvs, c.total()), (1, 1, 2));
    assert_eq!(*g.state().config(), cfg);
    let _ = FaultState::new(FaultConfig::default());
}
