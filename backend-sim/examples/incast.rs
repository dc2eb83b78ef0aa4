//! N-to-1 incast benchmark: `cargo run --release -p xrdma-sim --example incast -- [N] [bytes]`.
//! Prints simulated completion time, events, wall time and events per second.

use std::time::Instant;
use xrdma::{QpCaps, SendOpcode, SendWr, Sge, Transport};
use xrdma_sim::{PfcConfig, SimConfig, Simulation};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(256);
    let bytes: u32 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(2 << 20);
    let cfg = SimConfig {
        hosts: n + 1,
        pfc: Some(PfcConfig::default()),
        ..Default::default()
    };
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
    while sim.advance(&mut ready) {
        for &h in &ready {
            wcs.clear();
            if sim.transport(h).poll_cq(&mut wcs, 64) > 0 {
                last = sim.now();
            }
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let st = sim.stats();
    println!(
        "incast {n}:1 x {bytes} B: last completion {last}, base RTT {}",
        sim.config().base_rtt()
    );
    println!(
        "events {} in {:.3} s wall = {:.1} M events/s; drops {}, xoff {}, xon {}, max buffer {} B",
        st.events,
        wall,
        st.events as f64 / wall / 1e6,
        st.drops,
        st.pfc_xoff_sent,
        st.pfc_xon_sent,
        st.max_buffer_bytes
    );
    Ok(())
}
