//! The `Transport` trait: the verbs-level boundary between the xrdma core and a backend.
//!
//! The trait mirrors the ibverbs objects a run-to-completion worker owns (IB Spec vol. 1,
//! ch. 10–11; `ibv_post_send(3)`, `ibv_poll_cq(3)`): registered memory regions (MR), reliable
//! connected queue pairs (RC QP), work requests (WR) posted to a QP's send and receive queues,
//! and work completions (WC) polled from one completion queue (CQ). The simulator implements it
//! with a packet-level NIC model, the verbs backend with `rdma-sys`.
//!
//! Conventions every backend follows:
//! - Addresses are virtual addresses in the host's address space; `addr`/`len` of an [`Sge`]
//!   must lie inside the MR named by its `lkey`, remote ranges inside the MR named by `rkey`.
//! - Immediate data is a host-order `u32` here; the backend puts it on the wire big-endian
//!   (IB Spec 9.4.3 ImmDt, which verbs exposes as `__be32 imm_data`).
//! - One CQ per transport: every completion of every QP comes out of [`Transport::poll_cq`].
//! - A WR that completes in error also moves its QP to the error state; later WRs on it complete
//!   with [`WcStatus::WrFlushErr`].
//! - An unsignaled send WR ([`SendWr::signaled`] `false`) produces no completion when it
//!   succeeds, but one when it fails or is flushed (error completions are always reported, as
//!   verbs does); its success is implied by the completion of a later signaled WR of the same
//!   send queue (the completions of one queue come in order, IB Spec vol. 1 §10.8.3).
//! - Every QP is connected with the backend's [`RcParams`] ([`Transport::rc_params`]): one set
//!   of RC attributes from the caller's configuration, the same on every backend.

use crate::{Capabilities, RcParams, Time};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A queue pair number (24 bits on the wire, IB Spec 9.2 BTH DestQP).
pub type QpNum = u32;

/// A registered memory region: what `ibv_reg_mr` returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRegion {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// Local key, named in an [`Sge`] to use this memory in a local WR.
    pub lkey: u32,
    /// Remote key, given to a peer so it can RDMA WRITE/READ into this memory.
    pub rkey: u32,
}

/// Capacities asked for when creating a QP (`struct ibv_qp_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QpCaps {
    /// Maximum outstanding send WRs.
    pub max_send_wr: u32,
    /// Maximum outstanding receive WRs.
    pub max_recv_wr: u32,
    /// Maximum bytes sent inline (copied into the WQE at post time).
    pub max_inline_data: u32,
}

impl Default for QpCaps {
    fn default() -> Self {
        QpCaps {
            max_send_wr: 1024,
            max_recv_wr: 1024,
            max_inline_data: 0,
        }
    }
}

/// What a peer needs to connect its QP to ours: exchanged out of band (TCP, rdma_cm, or
/// directly in the simulator) before `INIT → RTR → RTS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QpAddress {
    /// Port GID (RoCE: an IPv6 or IPv4-mapped address; the simulator puts the host index in
    /// the last four bytes).
    pub gid: [u8; 16],
    /// Local identifier (InfiniBand) or host index (simulator); 0 on RoCE.
    pub lid: u32,
    /// The QP number.
    pub qpn: QpNum,
    /// The first packet sequence number (24 bits) this QP sends with.
    pub psn: u32,
}

/// One scatter/gather element: `len` bytes at `addr` inside the MR whose local key is `lkey`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// Virtual address of the first byte.
    pub addr: u64,
    /// Length in bytes (may be 0).
    pub len: u32,
    /// Local key of the MR that holds the range.
    pub lkey: u32,
}

/// Send-queue operations (`enum ibv_wr_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SendOpcode {
    /// Two-sided SEND: consumes one receive WR at the peer.
    Send,
    /// SEND carrying 32-bit immediate data.
    SendWithImm,
    /// One-sided RDMA WRITE into `remote_addr`/`rkey`; no receive WR consumed.
    RdmaWrite,
    /// RDMA WRITE whose last packet carries immediate data; consumes one receive WR at the
    /// peer, which sees a [`WcOpcode::RecvRdmaWithImm`] completion.
    RdmaWriteWithImm,
    /// One-sided RDMA READ from `remote_addr`/`rkey` into the local SGE.
    RdmaRead,
}

/// A send work request (`struct ibv_send_wr` with one SGE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Operation.
    pub opcode: SendOpcode,
    /// Local data (source for SEND/WRITE, destination for READ).
    pub sge: Sge,
    /// Immediate data (host order), used by `*WithImm` opcodes.
    pub imm: u32,
    /// Remote virtual address for WRITE/READ.
    pub remote_addr: u64,
    /// Remote key for WRITE/READ.
    pub rkey: u32,
    /// Ask for a completion when the WR finishes successfully (`IBV_SEND_SIGNALED`,
    /// `ibv_post_send(3)`). An unsignaled WR completes silently on success, and with a
    /// completion when it fails or is flushed. A send queue frees the slots of unsignaled WRs
    /// only when a later signaled WR of it completes, so a queue holding `max_send_wr`
    /// unsignaled WRs never drains: the last WR posted before the send queue could fill (in
    /// particular the last WR of a chain that fills it) must be signaled.
    pub signaled: bool,
}

/// A receive work request (`struct ibv_recv_wr` with one SGE; `len` 0 is allowed, which is
/// enough for WRITE-with-immediate and zero-length SENDs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWr {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Where a SEND's payload lands.
    pub sge: Sge,
}

/// Completion status (`enum ibv_wc_status`, the subset a backend reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WcStatus {
    /// The WR completed.
    Success,
    /// A SEND's payload was longer than the receive buffer (`IBV_WC_LOC_LEN_ERR`).
    LocLenErr,
    /// A local key or range was invalid (`IBV_WC_LOC_PROT_ERR`).
    LocProtErr,
    /// The QP was in error; the WR was flushed (`IBV_WC_WR_FLUSH_ERR`).
    WrFlushErr,
    /// The remote key or range was invalid (`IBV_WC_REM_ACCESS_ERR`).
    RemAccessErr,
    /// The peer kept answering RNR NAK past the RNR retry count (`IBV_WC_RNR_RETRY_EXC_ERR`).
    RnrRetryExcErr,
    /// No ACK after the transport retry count (`IBV_WC_RETRY_EXC_ERR`).
    RetryExcErr,
    /// Any other failure (`IBV_WC_GENERAL_ERR`).
    GeneralErr,
}

/// Completion opcode (`enum ibv_wc_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WcOpcode {
    /// A SEND (with or without immediate) finished.
    Send,
    /// An RDMA WRITE (with or without immediate) finished.
    RdmaWrite,
    /// An RDMA READ finished; the data is in the local SGE.
    RdmaRead,
    /// A SEND arrived into a posted receive.
    Recv,
    /// An RDMA WRITE with immediate arrived; it consumed a posted receive.
    RecvRdmaWithImm,
}

/// A work completion (`struct ibv_wc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkCompletion {
    /// The `wr_id` of the WR this completes.
    pub wr_id: u64,
    /// Outcome.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
    /// The local QP the WR belonged to.
    pub qp_num: QpNum,
    /// Bytes received (receive completions) or transferred; 0 when in error.
    pub byte_len: u32,
    /// Immediate data (host order) when the sender used a `*WithImm` opcode.
    pub imm: Option<u32>,
}

impl WorkCompletion {
    /// The completion of a WR flushed from a QP in the error state (`IBV_WC_WR_FLUSH_ERR`):
    /// no bytes, no immediate data.
    pub fn flushed(wr_id: u64, opcode: WcOpcode, qp_num: QpNum) -> WorkCompletion {
        WorkCompletion {
            wr_id,
            status: WcStatus::WrFlushErr,
            opcode,
            qp_num,
            byte_len: 0,
            imm: None,
        }
    }
}

/// Errors a transport returns synchronously from a verb call (the `errno` of `ibv_*`).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TransportError {
    /// No such QP on this transport.
    #[error("QP {0} does not exist")]
    NoSuchQp(QpNum),
    /// The QP is not in a state that allows the call (e.g. posting a send before RTS).
    #[error("QP {qpn} is in state {state}, which does not allow {op}")]
    BadQpState {
        /// The QP.
        qpn: QpNum,
        /// Its current state, as verbs names it (RESET, INIT, RTR, RTS, ERR).
        state: &'static str,
        /// What was attempted.
        op: &'static str,
    },
    /// The send or receive queue is full (`ENOMEM` from `ibv_post_*`).
    #[error("QP {qpn} {queue} queue is full ({depth} WRs outstanding)")]
    QueueFull {
        /// The QP.
        qpn: QpNum,
        /// "send" or "recv".
        queue: &'static str,
        /// Its depth.
        depth: u32,
    },
    /// An address range is not inside a registered MR with that key.
    #[error("address range {addr:#x}+{len} is not inside an MR with key {key:#x}")]
    BadAddress {
        /// Start of the range.
        addr: u64,
        /// Length of the range.
        len: u64,
        /// The key that was given.
        key: u32,
    },
    /// The peer address cannot be reached (unknown host, no route, GID mismatch).
    #[error("peer {0} is unreachable")]
    Unreachable(String),
    /// Memory could not be registered.
    #[error("memory registration of {len} bytes failed: {reason}")]
    RegistrationFailed {
        /// Bytes asked for.
        len: u64,
        /// Why.
        reason: String,
    },
    /// Any other backend failure, with the verb that failed and the OS or device reason.
    #[error("{verb} failed: {reason}")]
    Other {
        /// The verb (e.g. `ibv_modify_qp`).
        verb: &'static str,
        /// The reason.
        reason: String,
    },
}

/// Access to the host's registered memory, so the core can stage outgoing bytes and read
/// arrived ones without touching pointers. Ranges must lie inside one registered MR.
///
/// Bytes move by copy, except through [`LocalMemory::lend`]. The NIC may write into an MR at
/// any time (a peer's RDMA WRITE, an incoming SEND), and a `&[u8]` over such memory would
/// promise Rust that the bytes cannot change while it is held. A read of a range the device is
/// still writing gives unspecified (stale or mixed) bytes but is never undefined behaviour;
/// the core reads a range only after polling the completion that ends the device's writes to
/// it, and writes only ranges it has not handed to the device. It asks to lend only a landing
/// buffer whose message has wholly landed, and grants it to no peer until the lease comes back
/// ([`LocalMemory::poll_returned`]), so the protocol gives no peer the right to write it.
///
/// No method has a provided body, as for [`Transport`]: a wrapper of a transport that took a
/// provided `read_bytes` would read through `read_into` instead of the backend's own copy.
pub trait LocalMemory {
    /// Copy the `out.len()` bytes at `addr` into `out`.
    ///
    /// # Errors
    /// [`TransportError::BadAddress`] (with `key` 0) when `addr..addr + out.len()` is not
    /// inside one registered MR; `out` is then left as it was.
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError>;

    /// The `len` bytes at `addr`, copied into a new buffer: one allocation of `len` bytes and
    /// one copy, for callers that keep the bytes (the core's delivered messages).
    ///
    /// A backend copies straight into the new allocation; a memory without such a path
    /// answers [`read_bytes_through`] (a zeroed buffer filled by [`LocalMemory::read_into`]).
    ///
    /// # Errors
    /// [`TransportError::BadAddress`] as for [`LocalMemory::read_into`].
    fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError>;

    /// Copy `parts`, back to back, to `addr` (a gather: one range check for all of them,
    /// as the core stages a frame's headers and payloads in one call).
    ///
    /// # Errors
    /// [`TransportError::BadAddress`] (with `key` 0 and the whole length) when the range is
    /// not inside one registered MR; nothing is written then.
    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError>;

    /// The `len` bytes at `addr` handed out without a copy: a [`Bytes`] over the registered
    /// memory itself, which the application holds for as long as it likes (a *lease*). When
    /// the lease and every clone and slice of it are dropped, on any thread, `addr` comes back
    /// from [`LocalMemory::poll_returned`]; until then the caller must not let the device or a
    /// peer write the range (the core grants the landing buffer to no one).
    ///
    /// `None` when this memory does not lend (the simulator, whose memory lives inside the
    /// fabric; the in-memory test transport) or the range is not inside one registered MR: the
    /// caller then copies the bytes out with [`LocalMemory::read_bytes`].
    fn lend(&mut self, addr: u64, len: usize) -> Option<Bytes>;

    /// The address given to [`LocalMemory::lend`] of one lease dropped since the last call, if
    /// any, oldest first. A memory that never lends answers `None`.
    fn poll_returned(&mut self) -> Option<u64>;

    /// The lkey of the MR that holds `data` where it is, when a WR may read it in place: its
    /// address is then `data.as_ptr()` (the process's own memory is registered, as on the
    /// verbs backend), and a large message already in registered memory (a lease echoed back,
    /// a buffer from the backend's send arena) is posted with no staging copy. The caller must
    /// keep `data` alive until the WR is done.
    ///
    /// `None` when `data` does not lie inside one registered MR, or when registered memory is
    /// not addressed by pointer (the simulator, the in-memory transport): the caller stages a
    /// copy with [`LocalMemory::write`].
    fn registered_lkey(&self, data: &[u8]) -> Option<u32>;

    /// `len` zeroed bytes of registered memory for the application to fill and send: a large
    /// message frozen from it is then posted in place ([`LocalMemory::registered_lkey`]).
    /// The memory returns to the backend when the message and every copy of its `Bytes` are
    /// dropped.
    ///
    /// `None` when this memory lends none (the simulator, the in-memory transport), or the
    /// registration fails: the caller then fills a [`crate::SendBuffer::new`], which is
    /// staged when sent.
    fn send_buffer(&mut self, len: usize) -> Option<crate::SendBuffer>;
}

/// The total length of a gather's `parts`, bytes.
pub fn gather_len(parts: &[&[u8]]) -> u64 {
    parts.iter().map(|p| p.len() as u64).sum()
}

/// A verbs-level RDMA transport for one host (one device port, one PD, one CQ).
///
/// All calls are non-blocking. Control-path calls (`register_memory`, `create_qp`,
/// `connect_qp`, `reset_qp`) may be slow on real hardware; the data path (`post_*`,
/// `poll_cq`) must not allocate per call in a backend that wants to be fast.
///
/// No method has a provided body. A wrapper that did not write one out would silently run
/// the provided body in place of the wrapped transport's; without them, every implementation
/// spells out every method (a backend that cannot observe something answers the neutral value
/// the method names), and a method added here fails to compile wherever it is missing. A
/// wrapper of another transport implements [`crate::layer::TransportLayer`] instead, whose one
/// blanket implementation of this trait forwards every call the wrapper does not intercept.
pub trait Transport: LocalMemory {
    /// The transport's notion of now. The simulator returns virtual time; the verbs backend a
    /// monotonic clock. Only drivers call this; the core never does.
    fn now(&self) -> Time;

    /// Register `len` bytes of zeroed memory (`ibv_reg_mr` with local write, remote write and
    /// remote read access).
    ///
    /// # Errors
    /// [`TransportError::RegistrationFailed`] when the memory cannot be had.
    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError>;

    /// Create an RC QP in the RESET→INIT state and return the address a peer connects to.
    ///
    /// # Errors
    /// [`TransportError::Other`] when the device refuses (e.g. too many QPs).
    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError>;

    /// Move `qpn` through RTR to RTS, connected to `remote`.
    ///
    /// # Errors
    /// [`TransportError::NoSuchQp`], [`TransportError::BadQpState`] unless the QP is in INIT
    /// (or RESET), [`TransportError::Unreachable`] when `remote` is not a known peer.
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError>;

    /// Move `qpn` to RESET (outstanding WRs are discarded without completions) and back to
    /// INIT with a new first PSN, so it can be connected again: the QP cache's reuse path.
    /// Returns the QP's new address.
    ///
    /// # Errors
    /// [`TransportError::NoSuchQp`].
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError>;

    /// Post one send WR (`ibv_post_send`).
    ///
    /// # Errors
    /// [`TransportError::NoSuchQp`], [`TransportError::BadQpState`] unless RTS,
    /// [`TransportError::QueueFull`], [`TransportError::BadAddress`] for a bad local SGE.
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError>;

    /// Post `wrs` to `qpn`'s send queue in order, as one chain with one doorbell where the
    /// backend can (verbs: one `ibv_post_send` of a linked list). The semantics are those of
    /// posting each WR with [`Transport::post_send`] in turn: the WRs before the first one
    /// that fails are posted, that one and those after it are not.
    ///
    /// # Errors
    /// [`ChainError`]: how many WRs were posted and why the next one was not (the errors of
    /// [`Transport::post_send`]).
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError>;

    /// Post one receive WR (`ibv_post_recv`); allowed from INIT on.
    ///
    /// # Errors
    /// [`TransportError::NoSuchQp`], [`TransportError::QueueFull`],
    /// [`TransportError::BadAddress`].
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError>;

    /// Move up to `max` completions into `out` (appending), returning how many were moved
    /// (`ibv_poll_cq`).
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize;

    /// The next QP that received a congestion notification (a RoCEv2 CNP, i.e. the receiver
    /// saw ECN CE marks on its packets) since the last call, or `None`. A backend that cannot
    /// observe CNPs per QP always returns `None` and says so in
    /// [`Capabilities::cnp_per_qp`]; the generic driver then never calls it.
    fn poll_congestion(&mut self) -> Option<QpNum>;

    /// CNPs the port received as a DCQCN reaction point since the last call, at `now` on the
    /// driver's clock (a backend may read its counter only every so often and return 0 in
    /// between). Only a backend that declares [`Capabilities::cnp_per_port`] counts them;
    /// another one returns 0, and the generic driver calls it only on such a backend.
    fn poll_port_cnps(&mut self, now: Time) -> u64;

    /// The RC attributes this transport applies to every QP it connects, as applied: the
    /// configured [`RcParams`] with the path MTU lowered to the port's MTU where that is
    /// smaller. Set through the backend's configuration (the simulator's `SimConfig`, the
    /// verbs backend's `TransportConfig`).
    fn rc_params(&self) -> RcParams;

    /// What this backend observes and delivers (congestion signals, counters).
    fn capabilities(&self) -> Capabilities;

    /// What the transport can tell of QP `qpn` for the `stat` tool: its state and the
    /// requester's retransmissions and RNR retries since the QP was last connected. Every
    /// field it cannot observe is `None` (a backend that observes nothing answers
    /// [`QpObservation::default`]).
    fn observe_qp(&self, qpn: QpNum) -> QpObservation;
}

/// One QP as its transport observes it ([`Transport::observe_qp`]); `None` where it cannot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpObservation {
    /// The QP state in the verbs' names (`INIT`, `RTR`, `RTS`, `ERR`, …).
    pub state: Option<&'static str>,
    /// Request packets the requester sent again (go-back-N after a sequence-error NAK, an
    /// RNR NAK or a local ACK timeout).
    pub retransmitted_packets: Option<u64>,
    /// RNR NAKs the requester received and waited out (each one RNR retry).
    pub rnr_retries: Option<u64>,
}

/// The `len` bytes at `addr` of `mem`, read into a zeroed buffer with
/// [`LocalMemory::read_into`]: the [`LocalMemory::read_bytes`] of a memory that cannot copy
/// straight into a new allocation.
///
/// # Errors
/// [`TransportError::BadAddress`] as for [`LocalMemory::read_into`].
pub fn read_bytes_through<M: LocalMemory + ?Sized>(
    mem: &M,
    addr: u64,
    len: usize,
) -> Result<Bytes, TransportError> {
    let mut buf = vec![0u8; len];
    mem.read_into(addr, &mut buf)?;
    Ok(Bytes::from(buf))
}

/// A chain of send WRs posted only in part ([`Transport::post_send_chain`]).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{posted} WRs of the chain were posted; the next one was not: {error}")]
pub struct ChainError {
    /// How many WRs, from the start of the chain, were posted.
    pub posted: usize,
    /// Why WR number `posted` was not.
    pub error: TransportError,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One MR of `bytes.len()` bytes at `base`, read by [`read_bytes_through`].
    struct Flat {
        base: u64,
        bytes: Vec<u8>,
    }

    impl LocalMemory for Flat {
        fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<(), TransportError> {
            let bad = TransportError::BadAddress {
                addr,
                len: out.len() as u64,
                key: 0,
            };
            let off = usize::try_from(addr.checked_sub(self.base).ok_or(bad.clone())?)
                .map_err(|_| bad.clone())?;
            let src = off
                .checked_add(out.len())
                .and_then(|end| self.bytes.get(off..end))
                .ok_or(bad)?;
            out.copy_from_slice(src);
            Ok(())
        }
        fn write(&mut self, _addr: u64, _parts: &[&[u8]]) -> Result<(), TransportError> {
            unreachable!("not used")
        }
        fn read_bytes(&self, addr: u64, len: usize) -> Result<Bytes, TransportError> {
            read_bytes_through(self, addr, len)
        }
        fn lend(&mut self, _addr: u64, _len: usize) -> Option<Bytes> {
            None
        }
        fn poll_returned(&mut self) -> Option<u64> {
            None
        }
        fn registered_lkey(&self, _data: &[u8]) -> Option<u32> {
            None
        }
        fn send_buffer(&mut self, _len: usize) -> Option<crate::SendBuffer> {
            None
        }
    }

    #[test]
    fn read_bytes_copies_the_range_and_refuses_what_lies_outside() {
        let mem = Flat {
            base: 0x1000,
            bytes: (0..16).collect(),
        };
        assert_eq!(mem.read_bytes(0x1004, 3).unwrap(), &[4u8, 5, 6][..]);
        assert_eq!(mem.read_bytes(0x1010, 0).unwrap(), &[][..]);
        for (addr, len) in [(0x0fff, 1), (0x100f, 2), (0x1010, 1)] {
            assert!(
                matches!(
                    mem.read_bytes(addr, len),
                    Err(TransportError::BadAddress { addr: a, len: l, key: 0 }) if a == addr && l == len as u64
                ),
                "{addr:#x}+{len}"
            );
        }
    }
}
