//! Spurious retransmission timeouts: a local ACK timeout shorter than the queueing delay
//! fires with nothing lost, and the counters say so; a timeout after a real loss does not
//! count as spurious.

mod common;
use common::*;
use xrdma::{LocalMemory, RcParams, SendOpcode, Transport, WcStatus};
use xrdma_sim::{EcnConfig, PfcConfig, SimConfig, Simulation};

/// `n` senders WRITE `len` bytes each to host `n` over a lossless (PFC) switch whose egress
/// queue to the receiver grows to milliseconds, with a local ACK timeout of
/// 4.096 µs · 2^`timeout` and ECN marking drawn from `seed`; the simulation after the run.
fn pfc_incast(n: u32, len: u32, timeout: u8, seed: u64) -> Simulation {
    let mut sim = Simulation::new(SimConfig {
        hosts: n + 1,
        pfc: Some(PfcConfig::default()),
        ecn: Some(EcnConfig {
            kmin_bytes: 400_000,
            kmax_bytes: 1_600_000,
            pmax: 0.2,
        }),
        seed,
        rc: RcParams {
            local_ack_timeout: timeout,
            ..RcParams::default()
        },
        ..Default::default()
    })
    .unwrap();
    let dst = sim
        .transport(n)
        .register_memory(u64::from(n) * u64::from(len))
        .unwrap();
    let mut srcs = Vec::new();
    for h in 0..n {
        let (qa, _) = connect(&mut sim, h, n);
        let src = patterned(&mut sim, h, len as usize, (h % 85) as u8 * 3 + 1);
        let mut w = wr(u64::from(h), SendOpcode::RdmaWrite, &src, len);
        w.remote_addr = dst.addr + u64::from(h) * u64::from(len);
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
        srcs.push(src);
    }
    let seen = run(&mut sim);
    assert_eq!(seen.len() as u32, n);
    assert!(
        seen.iter().all(|s| s.wc.status == WcStatus::Success),
        "{seen:?}"
    );
    for (h, src) in srcs.iter().enumerate() {
        let want = sim
            .transport(h as u32)
            .read_bytes(src.addr, len as usize)
            .unwrap();
        let got = sim
            .transport(n)
            .read_bytes(dst.addr + h as u64 * u64::from(len), len as usize)
            .unwrap();
        assert_eq!(got, want, "WRITE of sender {h}");
    }
    sim
}

#[test]
fn timeouts_on_a_lossless_fabric_are_all_spurious() {
    // 256 × 64 KiB share the receiver's link packet by packet, so each QP's ACKs come
    // 256 packet times (~21.5 µs) apart, past a 4.096 µs · 2^2 = 16.4 µs timeout; nothing is
    // ever dropped.
    for seed in 1..=6 {
        let sim = pfc_incast(256, 64 << 10, 2, seed);
        let st = sim.stats();
        assert_eq!(
            st.drops + st.icrc_drops + st.link_down_drops,
            0,
            "seed {seed}"
        );
        assert!(st.retransmit_timeouts > 0, "seed {seed}: {st:?}");
        assert_eq!(
            st.spurious_timeouts, st.retransmit_timeouts,
            "seed {seed}: {st:?}"
        );
    }
}

#[test]
fn a_timeout_long_enough_for_the_queue_never_fires() {
    for seed in 1..=3 {
        let st = pfc_incast(256, 64 << 10, 12, seed).stats().clone();
        assert_eq!(
            (st.retransmit_timeouts, st.spurious_timeouts),
            (0, 0),
            "seed {seed}"
        );
    }
}
