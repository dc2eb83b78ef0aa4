//! The [`Harness`] a backend implements to run the generic cases, and the work-request
//! constructors every case builds its WRs with.

use std::time::Duration;
use xrdma::{
    LocalMemory, MemoryRegion, QpNum, RecvWr, SendOpcode, SendWr, Sge, Time, Transport,
    WorkCompletion,
};

/// One end of a connected pair. Every case makes `A` the requester and `B` the responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The requester.
    A,
    /// The responder.
    B,
}

impl Side {
    /// 0 for `A`, 1 for `B`: the host index on backends that number their hosts.
    pub fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }
}

/// The RC parameters and memory of a pair a case asks for. A backend applies the RC
/// parameters to both QPs (as requester and as responder) and keeps its own defaults for the
/// rest (local ACK timeout, retry count, path MTU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PairSpec {
    /// RNR retries before a SEND fails with `RnrRetryExcErr` (3 bits; 7 retries forever,
    /// IB Spec 9.7.5.2.8). Default 7.
    pub rnr_retry: u8,
    /// The minimal RNR NAK timer code the responder advertises (5 bits, IB Spec table 45:
    /// 1 = 0.01 ms). Default 1, the simulator's default.
    pub min_rnr_timer: u8,
    /// Bytes of the one MR registered on each side, zeroed. Default 1 MiB.
    pub mr_bytes: u64,
}

impl Default for PairSpec {
    fn default() -> Self {
        PairSpec {
            rnr_retry: 7,
            min_rnr_timer: 1,
            mr_bytes: 1 << 20,
        }
    }
}

/// What [`Harness::connect`] made: one RC QP per side, connected to each other, and one MR
/// per side of [`PairSpec::mr_bytes`] bytes. No receive is posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The QP number on each side, indexed by [`Side::index`].
    pub qps: [QpNum; 2],
    /// The MR on each side, indexed by [`Side::index`].
    pub mrs: [MemoryRegion; 2],
}

impl Pair {
    /// The QP on `side`.
    pub fn qp(&self, side: Side) -> QpNum {
        self.qps[side.index()]
    }

    /// The MR on `side`.
    pub fn mr(&self, side: Side) -> MemoryRegion {
        self.mrs[side.index()]
    }
}

/// A completion and when it was polled: simulated time on the simulator and the in-memory
/// transport (exactly when the completion was produced), the transport's monotonic clock on
/// a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// [`Transport::now`] of the side when the completion was polled.
    pub at: Time,
    /// The completion.
    pub wc: WorkCompletion,
}

/// A backend under test: two transports and the means to let time pass.
///
/// Cases post WRs through [`Harness::transport`] and take completions only through
/// [`Harness::wait`] (never `poll_cq` directly), so a harness that drives a simulation can
/// stamp each completion with the time it was produced.
pub trait Harness {
    /// Make a fresh connected pair with `spec`'s RC parameters and memory; what an earlier
    /// call made may be dropped.
    ///
    /// # Panics
    /// When the backend cannot make the pair (a test failure, not a skip: a backend that may
    /// be absent decides before the harness exists).
    fn connect(&mut self, spec: &PairSpec) -> Pair;

    /// The transport of `side`, to post WRs, create, connect and reset QPs, and register
    /// memory.
    fn transport(&mut self, side: Side) -> impl Transport + '_;

    /// Let the backend progress until `n` completions are there on `side` or `limit` has
    /// passed (simulated time on a simulated backend, which also stops when nothing is left
    /// to happen; wall-clock time on a device). Returns at most `n` completions in the order
    /// polled; later ones stay for the next call.
    fn wait(&mut self, side: Side, n: usize, limit: Duration) -> Vec<Seen>;

    /// The `len` bytes at `addr` in `side`'s registered memory.
    ///
    /// # Panics
    /// When the range is not inside one MR of `side`.
    fn read(&mut self, side: Side, addr: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        self.transport(side)
            .read_into(addr, &mut out)
            .unwrap_or_else(|e| panic!("reading {len} B at {addr:#x} on {side:?}: {e}"));
        out
    }

    /// Copy `data` to `addr` in `side`'s registered memory.
    ///
    /// # Panics
    /// When the range is not inside one MR of `side`.
    fn write(&mut self, side: Side, addr: u64, data: &[u8]) {
        self.transport(side)
            .write(addr, &[data])
            .unwrap_or_else(|e| panic!("writing {} B at {addr:#x} on {side:?}: {e}", data.len()));
    }
}

/// `len` bytes at `offset` into `mr`.
pub fn sge(mr: &MemoryRegion, offset: u64, len: u32) -> Sge {
    Sge {
        addr: mr.addr + offset,
        len,
        lkey: mr.lkey,
    }
}

/// A signaled send WR with no immediate data and no remote range: a SEND, or the base of
/// [`rdma_wr`]. Every send WR of the suite is built here.
pub fn send_wr(wr_id: u64, opcode: SendOpcode, sge: Sge) -> SendWr {
    SendWr {
        wr_id,
        opcode,
        sge,
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    }
}

/// A signaled RDMA WRITE or READ between `sge` and `offset` into the peer's `remote` MR.
pub fn rdma_wr(
    wr_id: u64,
    opcode: SendOpcode,
    sge: Sge,
    remote: &MemoryRegion,
    offset: u64,
) -> SendWr {
    SendWr {
        remote_addr: remote.addr + offset,
        rkey: remote.rkey,
        ..send_wr(wr_id, opcode, sge)
    }
}

/// A receive WR into `sge`. Every receive WR of the suite is built here.
pub fn recv_wr(wr_id: u64, sge: Sge) -> RecvWr {
    RecvWr { wr_id, sge }
}

/// Deterministic test bytes: byte `i` is `i·31 + salt (mod 256)`.
pub fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}
