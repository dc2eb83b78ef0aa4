//! Multi-switch fabrics: fat-tree permutation with ECMP, switch-to-switch PFC, leaf-spine
//! oversubscription, topology validation.
//!
//! Notation as in tests/validation.rs: 100 Gb/s = 80 ps per byte, D = 1 µs, a full data
//! packet is 1106 B on the wire (+16 B RETH on a WRITE's first packet), an ACK 86 B.

mod common;
use common::*;
use xrdma::{LocalMemory, SendOpcode, Span, Transport, WcStatus};
use xrdma_sim::{PfcConfig, PortPeer, SimConfig, SimConfigError, Simulation, Topology};

const SER_ACK: u64 = 86 * PS_PER_BYTE_100G;

fn fat_tree(k: u32) -> SimConfig {
    SimConfig {
        hosts: k * k * k / 4,
        topology: Topology::FatTree {
            k,
            hosts_per_edge: None,
        },
        pfc: Some(PfcConfig::default()),
        ..Default::default()
    }
}

/// Switch indices of the cores of a k-ary fat-tree: after k·k/2 edge and k·k/2 aggregation
/// switches.
fn cores(k: u32) -> std::ops::Range<u32> {
    k * k..k * k + k * k / 4
}

/// Packets sent by all ports of switch `s`.
fn switch_tx(sim: &Simulation, s: u32) -> u64 {
    let ports = sim.switch_stats(s).unwrap().ports;
    (0..ports)
        .map(|p| sim.port_stats(s, p).unwrap().tx_packets)
        .sum()
}

#[test]
fn fat_tree_permutation_completes_losslessly_and_uses_every_core() {
    // k = 4: 16 hosts, 4 pods of 4 hosts, 4 cores. Host i sends to (i + k³/8) mod 16
    // = (i + 8) mod 16, i.e. pod p to pod p + 2: every flow crosses the core. Each host
    // opens 4 QPs of 64 KiB each, so 64 QPs are hashed over 2 aggregations × 2 cores.
    let k = 4;
    let n = 16u32;
    let qps_per_host = 4u32;
    let bytes = 64 * 1024u32;
    let mut sim = Simulation::new(fat_tree(k)).unwrap();
    assert_eq!(sim.switch_count(), 20);
    let mut expect = Vec::new();
    for i in 0..n {
        let d = (i + n / 2) % n;
        let dst = sim
            .transport(d)
            .register_memory((qps_per_host * bytes) as u64)
            .unwrap();
        for q in 0..qps_per_host {
            let (qa, _) = connect(&mut sim, i, d);
            let src = patterned(&mut sim, i, bytes as usize, (i * 4 + q) as u8);
            let mut w = wr(q as u64, SendOpcode::RdmaWrite, &src, bytes);
            w.remote_addr = dst.addr + (q * bytes) as u64;
            w.rkey = dst.rkey;
            sim.transport(i).post_send(qa, &w).unwrap();
            expect.push((i, src, d, w.remote_addr));
        }
    }
    let seen = run(&mut sim);
    assert_eq!(seen.len(), (n * qps_per_host) as usize);
    assert!(seen.iter().all(|s| s.wc.status == WcStatus::Success));
    let st = sim.stats();
    assert_eq!(st.drops, 0);
    assert_eq!(
        st.delivered_payload_bytes,
        (n * qps_per_host * bytes) as u64
    );
    for (i, src, d, addr) in expect {
        let want = sim
            .transport(i)
            .read_bytes(src.addr, bytes as usize)
            .unwrap()
            .to_vec();
        assert_eq!(
            sim.transport(d).read_bytes(addr, bytes as usize).unwrap(),
            &want[..]
        );
    }
    // Every data packet crosses exactly one core on the way out and every ACK one on the
    // way back: the cores together forward all 64·64 data packets and all ACKs
    // (ack_every = 1: one ACK per data packet), 2·4096 = 8192 packets.
    let per_core: Vec<u64> = cores(k).map(|c| switch_tx(&sim, c)).collect();
    assert!(per_core.iter().all(|&c| c > 0), "{per_core:?}");
    assert_eq!(per_core.iter().sum::<u64>(), 2 * 64 * 64);
    assert_eq!(st.data_packets + st.ack_packets, 2 * 64 * 64);
}

#[test]
fn cross_pod_incast_pauses_switch_to_switch_and_stays_lossless() {
    // Fat-tree k = 4, every host of pods 1..4 (hosts 4..16, 12 senders) WRITEs 128 KiB to
    // host 0, through switches with 4 ports × 45_000 B of buffer: headroom 2·12_500 +
    // 3·1126 + 84 = 28_462 B, XOFF 16_538 B. Host 0's edge switch can only hold a sliver of
    // the 1.7 MB burst, so it must pause its aggregation switches, which pause the cores,
    // and so on back to the senders.
    let cfg = SimConfig {
        switch_buffer_bytes: 4 * 45_000,
        ..fat_tree(4)
    };
    let mut sim = Simulation::new(cfg).unwrap();
    let bytes = 128 * 1024u32;
    let dst = sim.transport(0).register_memory(12 * bytes as u64).unwrap();
    for (i, h) in (4..16u32).enumerate() {
        let (qa, _) = connect(&mut sim, h, 0);
        let src = patterned(&mut sim, h, bytes as usize, h as u8);
        let mut w = wr(0, SendOpcode::RdmaWrite, &src, bytes);
        w.remote_addr = dst.addr + i as u64 * bytes as u64;
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
    }
    let seen = run(&mut sim);
    let st = sim.stats();
    assert_eq!(st.drops, 0, "{st:?}");
    assert_eq!(seen.len(), 12);
    assert_eq!(st.delivered_payload_bytes, 12 * bytes as u64);
    // Switch-to-switch PAUSE: some aggregation or core port was paused by its peer switch,
    // and host 0's edge switch (switch 0) sent XOFF up to its aggregations (ports 2, 3).
    let paused_switch_ports: u64 = (0..20)
        .flat_map(|s| (0..4).map(move |p| (s, p)))
        .filter(|&(s, p)| matches!(sim.port_peer(s, p), Some(PortPeer::Switch { .. })))
        .map(|(s, p)| sim.port_stats(s, p).unwrap().pauses_received)
        .sum();
    assert!(paused_switch_ports > 0);
    for p in 2..4 {
        let ps = sim.port_stats(0, p).unwrap();
        assert!(ps.xoff_sent > 0 && ps.xoff_time > Span::ZERO, "{ps:?}");
    }
    for s in 0..20 {
        assert!(sim.switch_stats(s).unwrap().max_buffer_bytes <= 4 * 45_000);
    }
    // Bounds, m = 5 switches (edge, aggregation, core, aggregation, edge):
    // T_lb = 5·(ser(1122) + D) (first packet at host 0's edge) + 80·12·(128·1106 + 16)
    //        (every wire byte through the bottleneck) + D + 6·(ser(86) + D) (the last ACK
    //        back over 6 links);
    // T* = 12·128 KiB·1106/1024·80 + base RTT over 6 links each way
    //    = 80·12·128·1106 + 6·(88_480 + D) + 6·(6_880 + D).
    let t_lb = 5 * (89_760 + D) + 80 * 12 * (128 * 1106 + 16) + D + 6 * (SER_ACK + D);
    let t_star = 80 * 12 * 128 * 1106 + 6 * (88_480 + D) + 6 * (SER_ACK + D);
    let last = seen.iter().map(|s| s.at.as_ps()).max().unwrap();
    assert!(
        last >= t_lb && last <= t_star * 105 / 100,
        "{last} vs [{t_lb}, 1.05·{t_star}]"
    );
}

/// Four hosts of leaf 0 each WRITE 256 KiB to their counterpart on leaf 1 (host i → 4 + i)
/// over one spine; returns the last completion in ps.
fn leaf_to_leaf(uplink_rate_bps: u64) -> u64 {
    let cfg = SimConfig {
        hosts: 8,
        topology: Topology::LeafSpine {
            leaves: 2,
            spines: 1,
            hosts_per_leaf: 4,
            uplink_rate_bps: Some(uplink_rate_bps),
        },
        pfc: Some(PfcConfig::default()),
        ..Default::default()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    for h in 0..4 {
        let (qa, _) = connect(&mut sim, h, 4 + h);
        let src = patterned(&mut sim, h, 256 << 10, 0);
        let dst = sim.transport(4 + h).register_memory(256 << 10).unwrap();
        let mut w = wr(0, SendOpcode::RdmaWrite, &src, 256 << 10);
        w.remote_addr = dst.addr;
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
    }
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 4);
    assert_eq!(sim.stats().drops, 0);
    seen.iter().map(|s| s.at.as_ps()).max().unwrap()
}

#[test]
fn leaf_spine_oversubscription_limits_throughput() {
    // 4:1 oversubscribed (4 × 100 Gb/s hosts over one 100 Gb/s uplink): the uplink must
    // carry 4·(256·1106 + 16) = 1_132_608 B = 90_608_640 ps. Lower bound: the first packet
    // reaches leaf 0 after ser(1122) + D; after the uplink's last bit, the last packet
    // (1106 B) needs D to the spine, ser + D to leaf 1, ser + D to the host, and its ACK
    // 4·(ser(86) + D) back: T_lb = 89_760 + D + 90_608_640 + D + 2·(88_480 + D)
    // + 4·(6_880 + D) = 98_902_880 ps.
    let over = leaf_to_leaf(100_000_000_000);
    let t_lb = 89_760 + D + 90_608_640 + D + 2 * (88_480 + D) + 4 * (SER_ACK + D);
    assert_eq!(t_lb, 98_902_880);
    assert!(over >= t_lb && over <= t_lb * 105 / 100, "{over} vs {t_lb}");
    // Not oversubscribed (400 Gb/s uplink, 20 ps/B): each host link is its own bottleneck,
    // 256·1106 + 16 = 283_152 B = 22_652_160 ps. After the host's last bit: D, 400 G ser of
    // the last packet (22_120) + D at leaf 0, the same at the spine, 100 G ser (88_480) + D
    // at leaf 1; the ACK: 2·6_880 + 2·(86·20 = 1_720) + 4·D.
    // T_lb = 22_652_160 + 4·D + 2·22_120 + 88_480 + 2·6_880 + 2·1_720 + 4·D = 30_802_080.
    let full = leaf_to_leaf(400_000_000_000);
    let t_lb = 22_652_160 + 4 * D + 2 * 22_120 + 88_480 + 2 * SER_ACK + 2 * 1_720 + 4 * D;
    assert_eq!(t_lb, 30_802_080);
    assert!(full >= t_lb && full <= t_lb * 105 / 100, "{full} vs {t_lb}");
}

#[test]
fn attachments_follow_the_documented_wiring() {
    let sim = Simulation::new(fat_tree(4)).unwrap();
    // Host 5: edge switch 5/2 = 2 (pod 1), local port 5 mod 2 = 1.
    assert_eq!(sim.host_attachment(5), Some((2, 1)));
    assert_eq!(sim.port_peer(2, 1), Some(PortPeer::Host(5)));
    // Edge 2 (pod 1, e = 0) port k/2 + a = 3 → aggregation (pod 1, a = 1) = 8 + 2 + 1 = 11,
    // whose port e = 0 leads back.
    assert_eq!(
        sim.port_peer(2, 3),
        Some(PortPeer::Switch {
            switch: 11,
            port: 0
        })
    );
    // Aggregation 11 (a = 1) port 2 + j = 3 → core a·2 + j = 3 (switch 19), port pod = 1.
    assert_eq!(
        sim.port_peer(11, 3),
        Some(PortPeer::Switch {
            switch: 19,
            port: 1
        })
    );
    assert_eq!(sim.port_peer(20, 0), None);
    assert_eq!(sim.host_attachment(16), None);
    // 1024-host fat-tree (k = 16): 256 + 64 = 320 switches of 16 ports.
    let big = Simulation::new(fat_tree(16)).unwrap();
    assert_eq!(big.switch_count(), 320);
    assert_eq!(big.switch_stats(319).unwrap().ports, 16);
    assert_eq!(big.host_attachment(1023), Some((127, 7)));
}

#[test]
fn validation_names_the_topology_problem() {
    let field = |c: SimConfig| match c.validate() {
        Err(SimConfigError::Invalid { field, reason }) => (field, reason),
        Ok(()) => ("ok", String::new()),
    };
    // Host count must match k³/4 = 16.
    let (f, r) = field(SimConfig {
        hosts: 17,
        ..fat_tree(4)
    });
    assert_eq!(f, "hosts");
    assert!(r.contains("holds 16"), "{r}");
    // Headroom per switch kind: leaf-spine with 64 leaves, 2 spines, 4 hosts per leaf and a
    // 1 MiB buffer. Leaves have 6 ports: share 174_762 B ≥ 28_462 B headroom, fine. Spines
    // have 64 ports: share 16_384 B < 28_462 B, rejected, naming the spines.
    let c = SimConfig {
        hosts: 256,
        switch_buffer_bytes: 1 << 20,
        pfc: Some(PfcConfig::default()),
        topology: Topology::LeafSpine {
            leaves: 64,
            spines: 2,
            hosts_per_leaf: 4,
            uplink_rate_bps: None,
        },
        ..Default::default()
    };
    let (f, r) = field(c.clone());
    assert_eq!(f, "pfc.headroom_bytes");
    assert!(r.starts_with("spine switches (64 ports)"), "{r}");
    // Faster uplinks raise the headroom: leaves of 4 + 2 ports with 400 Gb/s uplinks need
    // 2·50_000 + 3·1126 + 84 = 103_462 B per port; a 6 × 100_000 B buffer is too small for
    // the leaves (share 100_000 B).
    let c = SimConfig {
        hosts: 8,
        switch_buffer_bytes: 600_000,
        pfc: Some(PfcConfig::default()),
        topology: Topology::LeafSpine {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 4,
            uplink_rate_bps: Some(400_000_000_000),
        },
        ..Default::default()
    };
    let (f, r) = field(c);
    assert_eq!(f, "pfc.headroom_bytes");
    assert!(
        r.starts_with("leaf switches (6 ports)") && r.contains("103462"),
        "{r}"
    );
    let (f, _) = field(SimConfig {
        hosts: 16,
        topology: Topology::FatTree {
            k: 66,
            hosts_per_edge: None,
        },
        ..Default::default()
    });
    assert_eq!(f, "topology.k");
    // Oversubscribed fat-tree: 3 hosts per edge at k = 4 → 4·2·3 = 24 hosts, ratio 3/2.
    let t = Topology::FatTree {
        k: 4,
        hosts_per_edge: Some(3),
    };
    assert_eq!(t.host_count(), Some(24));
    assert_eq!(t.oversubscription(100), 1.5);
    assert_eq!(
        field(SimConfig {
            hosts: 24,
            topology: t,
            ..Default::default()
        })
        .0,
        "ok"
    );
}
