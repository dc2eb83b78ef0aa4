//! Shared helpers for the integration tests.
#![allow(dead_code)]

use xrdma::{
    LocalMemory, MemoryRegion, QpCaps, QpNum, RecvWr, SendOpcode, SendWr, Sge, Span, Time,
    Transport, WorkCompletion,
};
use xrdma_sim::{HostId, Simulation};

/// Picoseconds per byte at 100 Gb/s: 8 bit / 1e11 bit/s = 80 ps.
pub const PS_PER_BYTE_100G: u64 = 80;
/// Default one-way link delay, 1 µs.
pub const D: u64 = 1_000_000;

/// The instant `us` microseconds after time zero.
pub fn at_us(us: u64) -> Time {
    Time::ZERO + Span::from_us(us)
}

/// Create and connect one QP on each of hosts `a` and `b`; returns (qpn on a, qpn on b).
pub fn connect(sim: &mut Simulation, a: HostId, b: HostId) -> (QpNum, QpNum) {
    let qa = sim.transport(a).create_qp(QpCaps::default()).unwrap();
    let qb = sim.transport(b).create_qp(QpCaps::default()).unwrap();
    sim.transport(a).connect_qp(qa.qpn, &qb).unwrap();
    sim.transport(b).connect_qp(qb.qpn, &qa).unwrap();
    (qa.qpn, qb.qpn)
}

/// Register `len` bytes on `host` filled with a pattern derived from `salt`.
pub fn patterned(sim: &mut Simulation, host: HostId, len: usize, salt: u8) -> MemoryRegion {
    let mr = sim.transport(host).register_memory(len as u64).unwrap();
    let data: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect();
    sim.transport(host).write(mr.addr, &[&data]).unwrap();
    mr
}

pub fn wr(wr_id: u64, opcode: SendOpcode, mr: &MemoryRegion, len: u32) -> SendWr {
    SendWr {
        wr_id,
        opcode,
        sge: Sge {
            addr: mr.addr,
            len,
            lkey: mr.lkey,
        },
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    }
}

pub fn recv(wr_id: u64, mr: &MemoryRegion, len: u32) -> RecvWr {
    RecvWr {
        wr_id,
        sge: Sge {
            addr: mr.addr,
            len,
            lkey: mr.lkey,
        },
    }
}

/// A completion with the host and time it was observed.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    pub host: HostId,
    pub at: Time,
    pub wc: WorkCompletion,
}

/// Drive `sim` until nothing is left, collecting every completion. `on_ready` may act on a
/// ready host (e.g. post receives at a wake time).
pub fn run_with(
    sim: &mut Simulation,
    mut on_ready: impl FnMut(&mut Simulation, HostId),
) -> Vec<Seen> {
    let mut ready = Vec::new();
    let mut out = Vec::new();
    let mut wcs = Vec::new();
    while sim.advance(&mut ready) {
        for &h in &ready {
            let at = sim.now();
            wcs.clear();
            sim.transport(h).poll_cq(&mut wcs, usize::MAX);
            out.extend(wcs.iter().map(|&wc| Seen { host: h, at, wc }));
            on_ready(sim, h);
        }
    }
    out
}

pub fn run(sim: &mut Simulation) -> Vec<Seen> {
    run_with(sim, |_, _| {})
}

pub mod harness;
