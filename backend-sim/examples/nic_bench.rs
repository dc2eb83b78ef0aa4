//! N-to-1 RDMA WRITE incast with the NIC options:
//! `cargo run --release -p xrdma-sim --example nic_bench -- [N] [bytes] [flags]`
//! where flags are any of `nopayload` (MRs without bytes), `dcqcn` (DCQCN with ECN at
//! Kmin/Kmax = 100/400 KB scaled by link rate / 25 Gb/s, Pmax 0.2) and `lossy` (PFC off).
//! Prints simulated completion, events, wall time and events per second.

use std::time::Instant;
use xrdma::{QpCaps, SendOpcode, SendWr, Sge, Transport};
use xrdma_sim::{DcqcnConfig, EcnConfig, PfcConfig, SimConfig, Simulation};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: u64| -> Result<u64, std::num::ParseIntError> {
        args.get(i)
            .filter(|a| a.chars().all(|c| c.is_ascii_digit()))
            .map_or(Ok(d), |a| a.parse())
    };
    let n = num(0, 256)? as u32;
    let bytes = num(1, 2 << 20)? as u32;
    let flag = |f: &str| args.iter().any(|a| a == f);
    let mut cfg = SimConfig {
        hosts: n + 1,
        pfc: (!flag("lossy")).then(PfcConfig::default),
        carry_payload: !flag("nopayload"),
        ..Default::default()
    };
    if flag("dcqcn") {
        let scale = cfg.link_rate_bps / 25_000_000_000;
        cfg.ecn = Some(EcnConfig {
            kmin_bytes: 100_000 * scale,
            kmax_bytes: 400_000 * scale,
            pmax: 0.2,
        });
        cfg.dcqcn = Some(DcqcnConfig::default());
    }
    let mut sim = Simulation::new(cfg)?;
    let dst = sim.transport(n).register_memory(n as u64 * bytes as u64)?;
    for h in 0..n {
        let qa = sim.transport(h).create_qp(QpCaps::default())?;
        let qb = sim.transport(n).create_qp(QpCaps::default())?;
        sim.transport(h).connect_qp(qa.qpn, &qb)?;
        sim.transport(n).connect_qp(qb.qpn, &qa)?;
        let src = sim.transport(h).register_memory(bytes as u64)?;
        let wr = SendWr {
            wr_id: h as u64,
            opcode: SendOpcode::RdmaWrite,
            sge: Sge {
                addr: src.addr,
                len: bytes,
                lkey: src.lkey,
            },
            imm: 0,
            remote_addr: dst.addr + h as u64 * bytes as u64,
            rkey: dst.rkey,
            signaled: true,
        };
        sim.transport(h).post_send(qa.qpn, &wr)?;
    }
    let start = Instant::now();
    let mut ready = Vec::new();
    let mut wcs = Vec::new();
    let mut last = xrdma::Time::ZERO;
    let mut done = 0;
    while sim.advance(&mut ready) {
        for &h in &ready {
            wcs.clear();
            if sim.transport(h).poll_cq(&mut wcs, 64) > 0 {
                last = sim.now();
                done += wcs.len();
            }
            while sim.transport(h).poll_congestion().is_some() {}
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let st = sim.stats();
    println!("incast {n}:1 x {bytes} B {args:?}: {done} completions, last {last}");
    println!(
        "events {} in {:.3} s wall = {:.1} M events/s",
        st.events,
        wall,
        st.events as f64 / wall / 1e6
    );
    println!(
        "drops {}, xoff {}, xon {}, ecn marks {}, cnps {}, retransmitted {}, timeouts {}, max buffer {} B",
        st.drops,
        st.pfc_xoff_sent,
        st.pfc_xon_sent,
        st.ecn_marks,
        st.cnps_received,
        st.retransmitted_packets,
        st.retransmit_timeouts,
        st.max_buffer_bytes
    );
    Ok(())
}
