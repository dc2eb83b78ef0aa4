//! DCQCN reaction point: the formulas of Zhu et al. (SIGCOMM 2015, §3.3) step by step, their
//! effect in the simulator (CNP reactions, pacing, two-flow fairness) and lazy timers.

mod common;
use common::*;
use xrdma::{QpCaps, SendOpcode, Span, Time, Transport, WcStatus};
use xrdma_sim::{
    DcqcnConfig, DcqcnState, EcnConfig, IncreasePhase, PfcConfig, SimConfig, Simulation,
};

const G: f64 = 1.0 / 256.0;

/// The defaults with a 300 µs rate-increase timer (the HPCC artifact's firmware-style
/// `dcqcn` setting): the step-by-step tests below count timer expiries in its periods.
fn slow_timer() -> DcqcnConfig {
    DcqcnConfig {
        rate_increase_timer: Span::from_us(300),
        ..Default::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        assert!(close(a, b), "{} = {a}, expected {b}", stringify!($a));
    }};
}

#[test]
fn cnp_after_alpha_decay_moves_rc_rt_alpha_per_the_formula() {
    let p = slow_timer().resolve(100_000_000_000);
    let mut s = DcqcnState::new(&p);
    // First CNP at 0 from line rate, α = 1: R_T = 100 G, R_C = 100 G·(1 − 1/2) = 50 G,
    // α = (1 − g)·1 + g = 1.
    s.on_cnp(&p, Time::ZERO);
    assert_eq!((s.rt_bps, s.rc_bps, s.alpha), (100e9, 50e9, 1.0));
    // 175 µs later: ⌊175/55⌋ = 3 α decays (no rate increase: the timer period is 300 µs),
    // α = (255/256)^3 = 0.988326...
    let a3 = (1.0 - G) * (1.0 - G) * (1.0 - G);
    let t1 = at_us(175);
    let before = {
        let mut c = s;
        c.advance(&p, t1);
        c
    };
    assert_close!(before.alpha, a3);
    assert_eq!((before.rc_bps, before.rt_bps), (50e9, 100e9));
    // Second CNP: R_T ← R_C = 50 G; R_C ← 50 G·(1 − α/2) = 50 G·(1 − 0.4941633) = 25.291826 G;
    // α ← (1 − g)·α + g = 0.988372.
    s.on_cnp(&p, t1);
    assert_close!(s.rt_bps, 50e9);
    assert_close!(s.rc_bps, 50e9 * (1.0 - a3 / 2.0));
    assert_close!(s.alpha, (1.0 - G) * a3 + G);
    assert!((s.rc_bps - 25.291_826e9).abs() < 1e3);
    // Counters restart at the CNP.
    assert_eq!((s.timer_stage, s.byte_stage, s.bytes), (0, 0, 0));
    assert_eq!((s.alpha_at, s.timer_at), (t1, t1));
}

#[test]
fn alpha_decays_once_per_whole_period() {
    let p = DcqcnConfig::default().resolve(25_000_000_000);
    let mut s = DcqcnState::new(&p);
    s.on_cnp(&p, at_us(7));
    // 7 + 10·55 = 557 µs: ten whole periods at 556.999 µs is still nine.
    s.advance(&p, Time::from_ps(556_999_999));
    assert_close!(s.alpha, (1.0 - G).powi(9));
    s.advance(&p, at_us(557));
    assert_close!(s.alpha, (1.0 - G).powi(10));
    // Applying the periods lazily in one step gives the same α as in several steps.
    let mut t = DcqcnState::new(&p);
    t.on_cnp(&p, at_us(7));
    t.advance(&p, at_us(557));
    assert_close!(t.alpha, s.alpha);
    assert_eq!(t.alpha_at, at_us(557));
}

#[test]
fn fast_recovery_then_additive_then_hyper_increase() {
    // 25 Gb/s: R_AI = 5 Mb/s, R_HAI = 50 Mb/s (unscaled), F = 5, T = 300 µs, B = 10 MB.
    let p = slow_timer().resolve(25_000_000_000);
    assert_eq!((p.ai_bps, p.hai_bps, p.f), (5e6, 50e6, 5));
    let mut s = DcqcnState::new(&p);
    s.on_cnp(&p, Time::ZERO); // R_T = 25 G, R_C = 12.5 G, α = 1
    s.on_cnp(&p, at_us(10)); // R_T = 12.5 G, R_C = 6.25 G, α = 1 (no decay in 10 µs)
    assert_eq!((s.rt_bps, s.rc_bps, s.alpha), (12.5e9, 6.25e9, 1.0));
    // Five timer expiries (10 + 5·300 µs) are fast recovery, R_C ← (R_T + R_C)/2 each:
    // R_C = R_T − (R_T − 6.25 G)/2^5 = 12.5 G − 6.25 G/32 = 12.3046875 G; R_T unchanged.
    s.advance(&p, at_us(1510));
    assert_eq!(s.timer_stage, 5);
    assert_close!(s.rc_bps, 12.304_687_5e9);
    assert_close!(s.rt_bps, 12.5e9);
    // The sixth expiry (T = 6 > F, BC = 0) is a hyper increase with i = T − F = 1:
    // R_T = 12.5 G + 50 Mb/s = 12.55 G, R_C = (12.55 + 12.3046875)/2 G = 12.42734375 G.
    s.advance(&p, at_us(1810));
    assert_eq!(s.timer_stage, 6);
    assert_close!(s.rt_bps, 12.55e9);
    assert_close!(s.rc_bps, 12.427_343_75e9);
    // Sending 6·B bytes gives six byte-counter expiries with T = 6 > F: each is hyper with
    // i = T − F = 1 while BC ≤ F, and i = min(T, BC) − F = 1 at BC = 6; R_T grows by
    // 6 × 50 Mb/s and R_C halves its distance to R_T at every event.
    let mut rt = 12.55e9;
    let mut rc = 12.427_343_75e9;
    for _ in 0..6 {
        rt += 50e6;
        rc = (rt + rc) / 2.0;
    }
    s.on_sent(&p, 6 * 10_000_000);
    assert_eq!(s.byte_stage, 6);
    assert_close!(s.rt_bps, rt);
    assert_close!(s.rc_bps, rc);
    // T = 8 with BC = 8: hyper with i = min(T, BC) − F = 3.
    s.timer_stage = 8;
    s.byte_stage = 8;
    assert_eq!(s.increase(&p), IncreasePhase::Hyper);
    assert_close!(s.rt_bps, rt + 3.0 * 50e6);
    let rt = rt + 3.0 * 50e6;
    // Only the byte counter past F (T = 0 right after a CNP would reset both, so set the
    // stages directly): additive, R_T += R_AI = 5 Mb/s.
    s.timer_stage = 2;
    s.byte_stage = 6;
    assert_eq!(s.increase(&p), IncreasePhase::Additive);
    assert_close!(s.rt_bps, rt + 5e6);
    // Rates never exceed the line rate.
    s.timer_stage = 10_000;
    s.byte_stage = 10_000;
    s.increase(&p);
    assert_eq!(s.rt_bps, 25e9);
    assert!(s.rc_bps <= 25e9);
}

#[test]
fn rate_is_floored_at_min_rate_and_idle_time_restores_line_rate() {
    let p = slow_timer().resolve(100_000_000_000);
    let mut s = DcqcnState::new(&p);
    // α stays 1 across CNPs 1 µs apart: R_C = 100 G / 2^k, floored at 1 G from k = 7.
    for k in 0..10 {
        s.on_cnp(&p, at_us(k));
    }
    assert_eq!(s.rc_bps, 1e9);
    assert_eq!(s.rt_bps, 1e9);
    // Without sending, only the timer counts stages (BC = 0). The first five expiries are
    // fast recovery (R_C stays 1 G = R_T). The sixth, at 9 + 6·300 = 1809 µs, is hyper with
    // i = 1 and R_HAI = 50 Mb/s × 100/25 = 200 Mb/s: R_T = 1.2 G, R_C = (1.2 + 1)/2 = 1.1 G.
    s.advance(&p, at_us(1809));
    assert_eq!(s.timer_stage, 6);
    assert_close!(s.rt_bps, 1.2e9);
    assert_close!(s.rc_bps, 1.1e9);
    // The seventh: i = 2, R_T = 1.2 G + 400 Mb/s = 1.6 G, R_C = (1.6 + 1.1)/2 = 1.35 G.
    s.advance(&p, at_us(2109));
    assert_close!(s.rt_bps, 1.6e9);
    assert_close!(s.rc_bps, 1.35e9);
    // R_T gains 200 Mb/s · i at the i-th hyper step, so it passes 100 G once
    // 1 G + 200 Mb/s · n(n+1)/2 ≥ 100 G, i.e. n = 32 (T = 37, at 11.109 ms); long before 500 ms
    // R_C has closed the gap and both sit at the line rate.
    s.advance(&p, at_us(500_000));
    assert_eq!(s.timer_stage, 1666);
    assert_eq!((s.rc_bps, s.rt_bps), (100e9, 100e9));
}

#[test]
fn the_default_timer_recovers_a_cnps_cut_within_half_a_millisecond() {
    // One CNP at line rate halves R_C (α = 1); five fast-recovery expiries of the 55 µs
    // timer bring it to R_T − (R_T − R_C)/32 ≈ 98.4 % of the line rate by 275 µs. With a
    // 300 µs timer it was still at 75 % at 400 µs: after every CNP a sender ran slow for
    // 1.5 ms, long enough for two senders' rates to drift apart (worst 10 ms Jain 0.71).
    let p = DcqcnConfig::default().resolve(25_000_000_000);
    let mut s = DcqcnState::new(&p);
    s.on_cnp(&p, Time::ZERO);
    assert_eq!(s.rc_bps, 12.5e9);
    s.advance(&p, at_us(400));
    assert!(s.rc_bps >= 0.95 * 25e9, "R_C {} b/s at 400 µs", s.rc_bps);
}

#[test]
fn config_is_validated() {
    let bad = |d: DcqcnConfig| {
        SimConfig {
            dcqcn: Some(d),
            ..Default::default()
        }
        .validate()
        .is_err()
    };
    assert!(!bad(DcqcnConfig::default()));
    assert!(bad(DcqcnConfig {
        g: 0.0,
        ..Default::default()
    }));
    assert!(bad(DcqcnConfig {
        min_rate_bps: 200_000_000_000,
        ..Default::default()
    }));
    assert!(bad(DcqcnConfig {
        rate_increase_timer: Span::ZERO,
        ..Default::default()
    }));
    assert!(bad(DcqcnConfig {
        byte_counter_bytes: 0,
        ..Default::default()
    }));
}

/// Two senders (hosts 0, 1) WRITE to host 2; ECN marks everything queued beyond 0 bytes so
/// CNPs arrive every `cnp_interval`.
fn marked_pair(dcqcn: bool, idle_qps: u32) -> (Simulation, Vec<u32>) {
    let cfg = SimConfig {
        hosts: 3,
        ecn: Some(EcnConfig {
            kmin_bytes: 0,
            kmax_bytes: 0,
            pmax: 1.0,
        }),
        dcqcn: dcqcn.then(slow_timer),
        carry_payload: false,
        ..Default::default()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    let dst = sim.transport(2).register_memory(4 << 20).unwrap();
    let mut qps = Vec::new();
    for h in 0..2 {
        let (qa, _) = connect(&mut sim, h, 2);
        let src = sim.transport(h).register_memory(2 << 20).unwrap();
        let mut w = wr(h as u64, SendOpcode::RdmaWrite, &src, 2 << 20);
        w.remote_addr = dst.addr + h as u64 * (2 << 20);
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
        qps.push(qa);
    }
    for i in 0..idle_qps {
        let a = sim.transport(i % 2).create_qp(QpCaps::default()).unwrap();
        let b = sim.transport(2).create_qp(QpCaps::default()).unwrap();
        sim.transport(i % 2).connect_qp(a.qpn, &b).unwrap();
        sim.transport(2).connect_qp(b.qpn, &a).unwrap();
    }
    (sim, qps)
}

#[test]
fn every_cnp_in_a_run_follows_the_recurrence() {
    let (mut sim, _) = marked_pair(true, 0);
    // Expected state per sender, from the formula alone: R_C, R_T, α, time of the last CNP.
    let mut model: Vec<Option<(f64, f64, f64, Time)>> = vec![None, None];
    let mut cnps = 0;
    let mut ready = Vec::new();
    while sim.advance(&mut ready) {
        for &h in &ready {
            while let Some(q) = sim.transport(h).poll_congestion() {
                let i = h as usize;
                let now = sim.now();
                let got = sim.qp_rate(h, q).unwrap();
                // Between two CNPs (≥ 50 µs apart, < 300 µs at 2 senders) only α decays, by
                // ⌊Δ/55 µs⌋ periods; rate increases need a 300 µs quiet period or 10 MB.
                let (rc, a) = match model[i] {
                    None => (100e9, 1.0),
                    Some((rc, _, a, at)) => {
                        let dt = (now - at).as_ps();
                        assert!(dt < 300_000_000, "CNP gap {dt} ps");
                        let k = (dt / 55_000_000) as i32;
                        (rc, a * (1.0 - G).powi(k))
                    }
                };
                let want = ((rc * (1.0 - a / 2.0)).max(1e9), rc, (1.0 - G) * a + G, now);
                assert_close!(got.rc_bps, want.0);
                assert_close!(got.rt_bps, want.1);
                assert_close!(got.alpha, want.2);
                model[i] = Some(want);
                cnps += 1;
            }
            let mut wcs = Vec::new();
            sim.transport(h).poll_cq(&mut wcs, 16);
            assert!(wcs.iter().all(|w| w.status == WcStatus::Success));
        }
    }
    assert!(cnps >= 4, "{cnps} CNPs");
    assert_eq!(sim.stats().cnps_received, cnps);
}

#[test]
fn paced_sender_spaces_packets_by_its_rate() {
    // One sender, every queued packet marked: after the first CNP the QP sends at 50 G, so a
    // 2 MiB WRITE (2048 packets of 1106 B + one RETH) needs at least
    // 2048·1106·8 / 50e9 s ≈ 362 µs of its time at R_C ≤ 50 G instead of 181 µs at line rate.
    let run = |dcqcn: bool| {
        let (mut sim, _) = marked_pair(dcqcn, 0);
        let seen = run(&mut sim);
        seen.iter().map(|s| s.at).max().unwrap()
    };
    let free = run(false);
    let paced = run(true);
    // Two senders share the 100 G downlink, so without DCQCN the last completion is about
    // 2·2048·1106·80 ps ≈ 362 µs; with DCQCN both are cut to ≤ 50 G and recover only slowly,
    // so they finish later.
    assert!(free < at_us(380), "{free}");
    assert!(paced > free, "{paced} vs {free}");
}

#[test]
fn idle_qps_add_no_events() {
    let (mut a, _) = marked_pair(true, 0);
    let (mut b, _) = marked_pair(true, 256);
    run(&mut a);
    run(&mut b);
    assert_eq!(a.stats().events, b.stats().events);
    assert_eq!(a.trace_hash(), b.trace_hash());
}

/// Two senders into one 25 Gb/s link with DCQCN (ECN Kmin/Kmax = 100/400 KB, Pmax 0.2, the
/// HPCC artifact's 25 G setting), 100 MB each in 64 KiB WRITEs: the flows last about
/// 2·100 MB·8/25 Gb/s·1106/1024 ≈ 69 ms at line rate. DCQCN starts with α = 1, so the first
/// CNPs cut both rates hard; over a window after that start-up (10 ms to 60 ms) the delivered
/// bytes per sender, counted from the WRITEs' completion times, must add up to ≥ 90 % of the
/// payload line rate (25 Gb/s·1024/1106, with 82 B of headers per 1 KiB packet) and have Jain
/// fairness (x₁ + x₂)²/(2·(x₁² + x₂²)) ≥ 0.95.
#[test]
fn two_flows_share_a_25g_link_fairly() {
    let cfg = SimConfig {
        hosts: 3,
        link_rate_bps: 25_000_000_000,
        ecn: Some(EcnConfig {
            kmin_bytes: 100_000,
            kmax_bytes: 400_000,
            pmax: 0.2,
        }),
        pfc: Some(PfcConfig::default()),
        dcqcn: Some(DcqcnConfig::default()),
        carry_payload: false,
        ..Default::default()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    const MSG: u32 = 64 << 10;
    const N: u64 = 100_000_000 / MSG as u64 + 1;
    let dst = sim.transport(2).register_memory(N * MSG as u64).unwrap();
    for h in 0..2 {
        let (qa, _) = {
            let a = sim
                .transport(h)
                .create_qp(QpCaps {
                    max_send_wr: N as u32,
                    ..QpCaps::default()
                })
                .unwrap();
            let b = sim.transport(2).create_qp(QpCaps::default()).unwrap();
            sim.transport(h).connect_qp(a.qpn, &b).unwrap();
            sim.transport(2).connect_qp(b.qpn, &a).unwrap();
            (a.qpn, b.qpn)
        };
        let src = sim.transport(h).register_memory(MSG as u64).unwrap();
        for i in 0..N {
            let mut w = wr(i, SendOpcode::RdmaWrite, &src, MSG);
            w.remote_addr = dst.addr + i * MSG as u64;
            w.rkey = dst.rkey;
            sim.transport(h).post_send(qa, &w).unwrap();
        }
    }
    let seen = run(&mut sim);
    assert_eq!(seen.len() as u64, 2 * N);
    assert!(seen.iter().all(|s| s.wc.status == WcStatus::Success));
    let (t0, t1) = (at_us(10_000), at_us(60_000));
    let mut got = [0f64; 2];
    for s in &seen {
        if s.at > t0 && s.at <= t1 {
            got[s.host as usize] += s.wc.byte_len as f64;
        }
    }
    let secs = (t1 - t0).as_ps() as f64 * 1e-12;
    // Payload goodput limit: 25 G·1024/1106 (82 B of headers per 1024 B packet).
    let line = 25e9 * 1024.0 / 1106.0;
    let total = (got[0] + got[1]) * 8.0 / secs;
    let jain = (got[0] + got[1]).powi(2) / (2.0 * (got[0].powi(2) + got[1].powi(2)));
    let st = sim.stats();
    assert!(st.cnps_received > 0, "{st:?}");
    assert!(total >= 0.9 * line, "throughput {total} of {line}; {st:?}");
    assert!(jain >= 0.95, "Jain {jain}, bytes {got:?}");
}
