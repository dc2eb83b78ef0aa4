//! Validation suite: simulated times and counts against analytical values derived in the
//! comments (store-and-forward timing, the N-to-1 incast bound T*, the RED marking law of
//! DCQCN, determinism), on a star and on multi-switch topologies.
//!
//! Notation: every link runs at B = 100 Gb/s (80 ps per byte) with D = 1 µs one way unless
//! noted; `ser(b) = 80·b` ps. Wire sizes (config.rs): a full data packet is
//! 1024 + 82 = 1106 B, plus 16 (RETH) on the first packet of a WRITE and 4 (ImmDt) on the
//! last packet of a WRITE with immediate; an ACK is 82 + 4 (AETH) = 86 B.

mod common;
use common::*;
use xrdma::{MemoryRegion, QpNum, SendOpcode, Span, Time, Transport, WcOpcode, WcStatus};
use xrdma_sim::{EcnConfig, PfcConfig, SimConfig, SimStats, Simulation, Topology};

const SER_ACK: u64 = 86 * PS_PER_BYTE_100G;

fn leaf_spine(uplink: Option<u64>) -> SimConfig {
    SimConfig {
        hosts: 8,
        topology: Topology::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 4,
            uplink_rate_bps: uplink,
        },
        ..Default::default()
    }
}

fn fat_tree4() -> SimConfig {
    SimConfig {
        hosts: 16,
        topology: Topology::FatTree {
            k: 4,
            hosts_per_edge: None,
        },
        ..Default::default()
    }
}

/// One 4096 B WRITE with immediate from `a` to `b`; returns (receive completion time, send
/// completion time).
fn isolated_write(cfg: SimConfig, a: u32, b: u32) -> (Time, Time) {
    let mut sim = Simulation::new(cfg).unwrap();
    let (qa, qb) = connect(&mut sim, a, b);
    let src = patterned(&mut sim, a, 4096, 9);
    let dst = sim.transport(b).register_memory(4096).unwrap();
    sim.transport(b).post_recv(qb, &recv(1, &dst, 0)).unwrap();
    let mut w = wr(2, SendOpcode::RdmaWriteWithImm, &src, 4096);
    w.remote_addr = dst.addr;
    w.rkey = dst.rkey;
    sim.transport(a).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.wc.status == WcStatus::Success));
    let r = seen.iter().find(|s| s.host == b).unwrap();
    assert_eq!(r.wc.opcode, WcOpcode::RecvRdmaWithImm);
    let s = seen.iter().find(|s| s.host == a).unwrap();
    (r.at, s.at)
}

/// Store-and-forward over `m` switches, equal rates, packets sent back to back with the
/// first one the largest: every switch port on the path is busy from the first packet's
/// arrival on (a later, smaller packet always arrives before the one ahead finishes), so the
/// first packet needs ser(w₁) + D per hop to reach switch j, and the last bit reaches the
/// receiver at  m·(ser(w₁) + D) + Σᵢ ser(wᵢ) + D.
/// The 4096 B WRITE with imm has wires 1122, 1106, 1106, 1110 (Σ = 4444 B = 355_520 ps,
/// ser(w₁) = 89_760 ps). Its last ACK (86 B) crosses m + 1 idle links back:
/// + (m + 1)·(ser(86) + D).
fn store_and_forward(m: u64) -> (u64, u64) {
    let recv = m * (89_760 + D) + 355_520 + D;
    (recv, recv + (m + 1) * (SER_ACK + D))
}

#[test]
fn isolated_message_matches_store_and_forward_on_every_topology() {
    // Star, m = 1: 1_089_760 + 1_355_520 = 2_445_280; + 2·1_006_880 = 4_459_040.
    let (r, s) = isolated_write(SimConfig::default(), 0, 1);
    assert_eq!((r.as_ps(), s.as_ps()), store_and_forward(1));
    assert_eq!(store_and_forward(1), (2_445_280, 4_459_040));
    // Leaf-spine, hosts 0 (leaf 0) → 5 (leaf 1): leaf, spine, leaf, m = 3:
    // 3·1_089_760 + 1_355_520 = 4_624_800; + 4·1_006_880 = 8_652_320.
    let (r, s) = isolated_write(leaf_spine(None), 0, 5);
    assert_eq!((r.as_ps(), s.as_ps()), (4_624_800, 8_652_320));
    // Same leaf (hosts 0 → 3): one switch, as the star.
    let (r, s) = isolated_write(leaf_spine(None), 0, 3);
    assert_eq!((r.as_ps(), s.as_ps()), store_and_forward(1));
    // Fat-tree k = 4, host 0 (pod 0) → host 9 (pod 2): edge, aggregation, core, aggregation,
    // edge, m = 5: 5·1_089_760 + 1_355_520 = 6_804_320; + 6·1_006_880 = 12_845_600.
    let (r, s) = isolated_write(fat_tree4(), 0, 9);
    assert_eq!((r.as_ps(), s.as_ps()), (6_804_320, 12_845_600));
    // Same pod, other edge (host 0 → host 2): edge, aggregation, edge, m = 3.
    let (r, s) = isolated_write(fat_tree4(), 0, 2);
    assert_eq!((r.as_ps(), s.as_ps()), store_and_forward(3));
}

#[test]
fn slower_uplinks_serialize_at_their_own_rate() {
    // Leaf-spine with 40 Gb/s leaf–spine links (200 ps/B), one 512 B WRITE with imm from
    // host 0 to host 4 (other leaf). Wire 82 + 512 + 16 + 4 = 614 B: 49_120 ps on a host
    // link, 122_800 ps on an uplink. Receive = 2·49_120 + 2·122_800 + 4·D = 4_343_840.
    // ACK 86 B: 6_880 ps (host links), 17_200 ps (uplinks): + 2·6_880 + 2·17_200 + 4·D
    // = 8_392_000.
    let cfg = leaf_spine(Some(40_000_000_000));
    let mut sim = Simulation::new(cfg).unwrap();
    let (qa, qb) = connect(&mut sim, 0, 4);
    let src = patterned(&mut sim, 0, 512, 1);
    let dst = sim.transport(4).register_memory(512).unwrap();
    sim.transport(4).post_recv(qb, &recv(1, &dst, 0)).unwrap();
    let mut w = wr(2, SendOpcode::RdmaWriteWithImm, &src, 512);
    w.remote_addr = dst.addr;
    w.rkey = dst.rkey;
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    let at = |h| seen.iter().find(|s| s.host == h).unwrap().at.as_ps();
    assert_eq!(at(4), 4_343_840);
    assert_eq!(at(0), 8_392_000);
}

/// `n` senders each WRITE `bytes` to host `dst`, one QP each; returns the simulation, the
/// completions and the senders' (QPN, MR).
fn incast_to(
    cfg: SimConfig,
    senders: &[u32],
    dst: u32,
    bytes: u32,
) -> (Simulation, Vec<Seen>, Vec<(QpNum, MemoryRegion)>) {
    let mut sim = Simulation::new(cfg).unwrap();
    let n = senders.len() as u64;
    let mr = sim
        .transport(dst)
        .register_memory(n * bytes as u64)
        .unwrap();
    let mut qps = Vec::new();
    for (i, &h) in senders.iter().enumerate() {
        let (qa, _) = connect(&mut sim, h, dst);
        let src = patterned(&mut sim, h, bytes as usize, h as u8);
        let mut w = wr(h as u64, SendOpcode::RdmaWrite, &src, bytes);
        w.remote_addr = mr.addr + i as u64 * bytes as u64;
        w.rkey = mr.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
        qps.push((qa, src));
    }
    let seen = run(&mut sim);
    (sim, seen, qps)
}

/// Incast bounds for `n` senders of `bytes` each (a multiple of 1024) into one 100 Gb/s
/// port, store-and-forward, `m` switches on the longest sender's path:
///
/// - exact lower bound T_lb: the bottleneck port must send every wire byte,
///   n·(bytes/1024·1106 + 16) B (one RETH per message), and cannot start before the first
///   packet (1122 B) is at the last switch; after the last bit leaves it, the packet needs D
///   to the receiver and its ACK at least two links back, 2·(ser(86) + D). With the nearest
///   sender one switch away: T_lb = ser(1122) + D + 80·n·(bytes/1024·1106 + 16) + D
///   + 2·(ser(86) + D).
/// - the usual T* = N·S·(1 + header/MTU)/B + base RTT, base RTT = 2m+2 links of data and
///   ACK serialization plus propagation: (m+1)·(ser(1106) + D) + (m+1)·(ser(86) + D). T*
///   counts the bottleneck serialization of one data packet twice (once in N·S·(1+h/MTU)/B,
///   once in the base RTT) and leaves out the RETH bytes, so it is not itself a strict lower
///   bound (for 256 × 64 KiB the 256 RETHs, 327_680 ps, outweigh the double-counted
///   88_480 ps and T* < T_lb); the tests assert T_lb ≤ last completion ≤ 1.05·T*. Under PFC
///   with the default XON (two packets below XOFF) the bottleneck never idles, and the
///   simulated completion equals T_lb.
fn incast_bounds(n: u64, bytes: u64, m: u64) -> (u64, u64) {
    let wire = n * (bytes / 1024 * 1106 + 16);
    let t_lb = 1122 * 80 + D + wire * 80 + D + 2 * (SER_ACK + D);
    let t_star = n * bytes / 1024 * 1106 * 80 + (m + 1) * (1106 * 80 + D + SER_ACK + D);
    (t_lb, t_star)
}

#[test]
fn star_incast_under_pfc_lies_between_the_bounds() {
    // 16 senders × 256 KiB into host 16 through a 1 MiB buffer: per-port share
    // 1_048_576/17 = 61_681 B, headroom 28_462 B, XOFF 33_219 B; the 4.5 MB burst needs PFC.
    // T_lb = 89_760 + D + 80·16·(256·1106 + 16) + D + 2·(6_880 + D) = 366_538_080 ps;
    // T* = 80·16·256·1106 + 2·(88_480 + D + 6_880 + D) = 362_414_080 + 4_190_720
    //    = 366_604_800 ps.
    let (t_lb, t_star) = incast_bounds(16, 256 * 1024, 1);
    assert_eq!((t_lb, t_star), (366_538_080, 366_604_800));
    let cfg = SimConfig {
        hosts: 17,
        switch_buffer_bytes: 1 << 20,
        pfc: Some(PfcConfig::default()),
        ..Default::default()
    };
    let senders: Vec<u32> = (0..16).collect();
    let (sim, seen, _) = incast_to(cfg, &senders, 16, 256 * 1024);
    let st = sim.stats();
    assert_eq!(st.drops, 0);
    assert!(st.pfc_xoff_sent > 0, "{st:?}");
    assert_eq!(seen.len(), 16);
    let last = seen.iter().map(|s| s.at.as_ps()).max().unwrap();
    assert!(last >= t_lb, "{last} ps below the lower bound {t_lb} ps");
    assert!(
        last <= t_star * 105 / 100,
        "{last} ps above 1.05·T* ({t_star} ps)"
    );
    // PFC never lets the bottleneck idle here (XON two packets below XOFF refills the queue
    // before it drains), so the completion reaches the lower bound exactly.
    assert_eq!(last, t_lb);
}

/// A star of `n + 1` hosts where `n` senders each WRITE 64 KiB to host `n`, with a buffer of
/// 40_000 B per port: headroom 2·12_500 + 3·1126 + 84 = 28_462 B, XOFF 11_538 B, so every
/// sender is paused repeatedly; the n·70_800 B burst is well above the buffer.
fn star_incast_at_scale(n: u32) {
    let cfg = SimConfig {
        hosts: n + 1,
        switch_buffer_bytes: (n as u64 + 1) * 40_000,
        pfc: Some(PfcConfig::default()),
        ..Default::default()
    };
    let t = cfg.pfc_thresholds().unwrap().unwrap();
    assert_eq!((t.headroom_bytes, t.xoff_bytes), (28_462, 11_538));
    let senders: Vec<u32> = (0..n).collect();
    let (sim, seen, _) = incast_to(cfg, &senders, n, 64 * 1024);
    let st = sim.stats();
    assert_eq!(st.drops, 0, "{st:?}");
    assert_eq!(seen.len(), n as usize);
    assert!(seen.iter().all(|s| s.wc.status == WcStatus::Success));
    assert!(st.max_buffer_bytes <= (n as u64 + 1) * 40_000);
    assert_eq!(st.delivered_payload_bytes, n as u64 * 64 * 1024);
    // Pause accounting: per-port counts add up to the switch totals, and every sender's
    // port paused its host, with consistent timestamps.
    let mut xoff = 0;
    let mut xon = 0;
    for h in 0..=n {
        let p = sim.port_stats(0, h).unwrap();
        xoff += p.xoff_sent;
        xon += p.xon_sent;
        if h < n {
            assert!(
                p.xoff_sent > 0 && p.xon_sent == p.xoff_sent,
                "port {h}: {p:?}"
            );
            let (first, last) = (p.first_xoff.unwrap(), p.last_xoff.unwrap());
            assert!(first <= last && last <= p.last_xon.unwrap());
            // Paused time as the switch counts it (XOFF decided → XON decided) is positive
            // and no longer than the span of the pauses.
            assert!(p.xoff_time > Span::ZERO);
            assert!(p.xoff_time <= p.last_xon.unwrap() - first);
            assert!(sim.paused_time(h) > Span::ZERO);
        }
    }
    assert_eq!((xoff, xon), (st.pfc_xoff_sent, st.pfc_xon_sent));
    let (t_lb, t_star) = incast_bounds(n as u64, 64 * 1024, 1);
    let last = seen.iter().map(|s| s.at.as_ps()).max().unwrap();
    assert!(
        last >= t_lb && last <= t_star * 105 / 100,
        "{last} vs [{t_lb}, 1.05·{t_star}]"
    );
}

#[test]
fn pfc_keeps_a_256_port_switch_lossless_under_255_to_1() {
    star_incast_at_scale(255);
}

#[test]
fn pfc_keeps_a_257_port_switch_lossless_under_256_to_1() {
    star_incast_at_scale(256);
}

/// Two senders (hosts 0, 1) SEND `pkts` full packets each to host 2 over a star with the
/// given ECN settings; returns the stats.
fn two_to_one(ecn: EcnConfig, seed: u64, pkts: u32) -> SimStats {
    let mut sim = Simulation::new(SimConfig {
        hosts: 3,
        ecn: Some(ecn),
        seed,
        ..Default::default()
    })
    .unwrap();
    let len = pkts * 1024;
    for h in 0..2 {
        let (qa, qb) = connect(&mut sim, h, 2);
        let src = patterned(&mut sim, h, len as usize, 0);
        let dst = sim.transport(2).register_memory(len as u64).unwrap();
        sim.transport(2).post_recv(qb, &recv(0, &dst, len)).unwrap();
        sim.transport(h)
            .post_send(qa, &wr(0, SendOpcode::Send, &src, len))
            .unwrap();
    }
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 4);
    sim.stats()
}

// Queue seen by each packet at the bottleneck (port 2). Every SEND packet is 1106 B (T =
// 88_480 ps); both senders start at 0, so packets A_k and B_k arrive together at
// t_k = k·T + D. A_1 finds the port idle and goes straight to the wire; B_1 finds q = 0
// (the packet on the wire is not counted). From then on the port sends one packet per T
// while two arrive, and at t_k (k ≥ 2) the arrival of A_k is processed before the port
// finishes (its UpArrive was scheduled first), so A_k sees k − 1 waiting packets; the port
// then starts the next one and B_k also sees k − 1. Hence both packets of round k see
// q_k = (k − 1)·1106 B.
const PKTS: u32 = 512;

#[test]
fn ecn_marking_threshold_end_to_end_is_exact() {
    // With Kmin = Kmax = K and Pmax = 1 a packet is marked iff q > K: marks = 2·#{k : (k−1)·1106
    // > K}. K = 399_266 = 361·1106: q ≤ K for k − 1 ≤ 361, so k − 1 ∈ 362..=511 are marked:
    // 2·150 = 300 marks. K one byte less: k − 1 = 361 is marked too: 302.
    let thr = |k| EcnConfig {
        kmin_bytes: k,
        kmax_bytes: k,
        pmax: 1.0,
    };
    assert_eq!(two_to_one(thr(399_266), 1, PKTS).ecn_marks, 300);
    assert_eq!(two_to_one(thr(399_265), 1, PKTS).ecn_marks, 302);
    // K above the largest queue, 511·1106 = 565_166: nothing is marked.
    assert_eq!(two_to_one(thr(565_166), 1, PKTS).ecn_marks, 0);
}

#[test]
fn ecn_marking_probability_follows_red_end_to_end() {
    // Kmin 100_000, Kmax 400_000, Pmax 0.2 (DCQCN defaults). With q_k = (k−1)·1106:
    // j = k − 1 ≤ 90 → p = 0 (q ≤ Kmin); 91 ≤ j ≤ 361 → p = 0.2·(1106·j − 100_000)/300_000;
    // j ≥ 362 → p = 1. Expected marks per run E = 2·Σ_j p(q_j), variance 2·Σ_j p(1−p)
    // (independent Bernoulli draws). Summed over 8 seeds, the count must lie within 4σ.
    let ecn = EcnConfig {
        kmin_bytes: 100_000,
        kmax_bytes: 400_000,
        pmax: 0.2,
    };
    let p = |j: u64| {
        let q = j * 1106;
        if q <= 100_000 {
            0.0
        } else if q > 400_000 {
            1.0
        } else {
            0.2 * (q - 100_000) as f64 / 300_000.0
        }
    };
    let seeds = 8u64;
    let mean: f64 = (0..PKTS as u64).map(|j| 2.0 * p(j)).sum::<f64>() * seeds as f64;
    let var: f64 = (0..PKTS as u64)
        .map(|j| 2.0 * p(j) * (1.0 - p(j)))
        .sum::<f64>()
        * seeds as f64;
    let got: u64 = (1..=seeds)
        .map(|s| two_to_one(ecn, s, PKTS).ecn_marks)
        .sum();
    let z = (got as f64 - mean) / var.sqrt();
    assert!(
        z.abs() < 4.0,
        "{got} marks, expected {mean:.1} ± {:.1}",
        var.sqrt()
    );
}

/// A fat-tree (k = 4) permutation with ECN marking on; returns (trace hash, stats).
fn fat_tree_run(seed: u64) -> (u64, SimStats) {
    let cfg = SimConfig {
        ecn: Some(EcnConfig {
            kmin_bytes: 5_000,
            kmax_bytes: 50_000,
            pmax: 0.5,
        }),
        seed,
        ..fat_tree4()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    // Hosts 0..8 send 128 KiB each to host 8 + (i mod 2): 4:1 incasts that queue.
    for h in 0..8u32 {
        let d = 8 + h % 2;
        let (qa, _) = connect(&mut sim, h, d);
        let src = patterned(&mut sim, h, 128 << 10, 0);
        let dst = sim.transport(d).register_memory(128 << 10).unwrap();
        let mut w = wr(0, SendOpcode::RdmaWrite, &src, 128 << 10);
        w.remote_addr = dst.addr;
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
    }
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 8);
    (sim.trace_hash(), sim.stats())
}

#[test]
fn same_seed_same_trace_other_seed_other_trace() {
    let (h1, s1) = fat_tree_run(1);
    let (h2, s2) = fat_tree_run(1);
    assert_eq!(h1, h2);
    assert_eq!(s1, s2);
    assert!(s1.ecn_marks > 0);
    let (h3, _) = fat_tree_run(2);
    assert_ne!(h1, h3);
}
