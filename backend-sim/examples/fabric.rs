//! Fat-tree benchmark:
//! `cargo run --release -p xrdma-sim --example fabric -- [k] [bytes] [msgs] [pattern]`.
//!
//! A k-ary fat-tree (k³/4 hosts, 100 Gb/s, 1 µs links, 1 KiB MTU, PFC on). `pattern` is
//! `perm` (default: host i sends `msgs` WRITEs of `bytes` to host (i + k³/8) mod k³/4, so
//! every flow crosses the core) or `incast` (every other host sends to host 0). Prints the
//! simulated completion, events, wall time, events per second, and how evenly ECMP spread
//! packets over the core switches.

use std::time::Instant;
use xrdma::{QpCaps, SendOpcode, SendWr, Sge, Transport};
use xrdma_sim::{PfcConfig, SimConfig, Simulation, Topology};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let k: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(16);
    let bytes: u32 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(64 << 10);
    let msgs: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(16);
    let incast = args.next().is_some_and(|p| p == "incast");
    let n = k * k * k / 4;
    let cfg = SimConfig {
        hosts: n,
        topology: Topology::FatTree {
            k,
            hosts_per_edge: None,
        },
        pfc: Some(PfcConfig::default()),
        ..Default::default()
    };
    let built = Instant::now();
    let mut sim = Simulation::new(cfg)?;
    let build_s = built.elapsed().as_secs_f64();
    // One destination region per receiver, rewritten by every message (bounded memory).
    let regions: Vec<_> = (0..n)
        .map(|h| sim.transport(h).register_memory(bytes as u64))
        .collect::<Result<_, _>>()?;
    for h in 0..n {
        let d = if incast { 0 } else { (h + n / 2) % n };
        if d == h {
            continue;
        }
        let qa = sim.transport(h).create_qp(QpCaps::default())?;
        let qb = sim.transport(d).create_qp(QpCaps::default())?;
        sim.transport(h).connect_qp(qa.qpn, &qb)?;
        sim.transport(d).connect_qp(qb.qpn, &qa)?;
        let src = sim.transport(h).register_memory(bytes as u64)?;
        let dst = regions[d as usize];
        for m in 0..msgs {
            let wr = SendWr {
                wr_id: m as u64,
                opcode: SendOpcode::RdmaWrite,
                sge: Sge {
                    addr: src.addr,
                    len: bytes,
                    lkey: src.lkey,
                },
                imm: 0,
                remote_addr: dst.addr,
                rkey: dst.rkey,
                signaled: true,
            };
            sim.transport(h).post_send(qa.qpn, &wr)?;
        }
    }
    let start = Instant::now();
    let mut ready = Vec::new();
    let mut wcs = Vec::new();
    let mut last = xrdma::Time::ZERO;
    let mut done = 0u64;
    while sim.advance(&mut ready) {
        for &h in &ready {
            wcs.clear();
            let got = sim.transport(h).poll_cq(&mut wcs, usize::MAX);
            if got > 0 {
                done += got as u64;
                last = sim.now();
            }
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let st = sim.stats();
    let core = k * k..sim.switch_count();
    let per_core: Vec<u64> = core
        .map(|c| {
            (0..k)
                .filter_map(|p| sim.port_stats(c, p))
                .map(|p| p.tx_packets)
                .sum()
        })
        .collect();
    let (lo, hi) = (
        per_core.iter().min().copied().unwrap_or(0),
        per_core.iter().max().copied().unwrap_or(0),
    );
    println!(
        "fat-tree k={k}: {n} hosts, {} switches (built in {build_s:.3} s); {} x {msgs} x {bytes} B; \
         {done} completions, last at {last}",
        sim.switch_count(),
        if incast { "incast" } else { "permutation" },
    );
    println!(
        "events {} in {wall:.3} s wall = {:.1} M events/s; drops {}, xoff {}, ecn {}; \
         packets per core switch min {lo} max {hi}",
        st.events,
        st.events as f64 / wall / 1e6,
        st.drops,
        st.pfc_xoff_sent,
        st.ecn_marks,
    );
    Ok(())
}
