//! The host NIC: one RoCEv2 RC NIC per host, in three parts and the glue that joins them.
//!
//! - [`requester`]: the sending half of each QP — request packets from the send queue, ACKs,
//!   NAKs (go-back-N on a sequence error, the RNR wait) and READ responses that retire WQEs,
//!   and (its submodule `retransmit`) the retransmission timer;
//! - [`responder`]: the receiving half — request packets delivered into memory, receive WRs
//!   consumed, ACKs and NAKs queued, READ responses owed, CNPs for CE-marked packets;
//! - [`egress`]: the host's transmit side — control queue, round robin between QPs, DCQCN
//!   pacing, PFC pause, the uplink.
//!
//! Each part's module doc lists the state it owns and the events it handles. This module holds
//! what they share:
//!
//! # State
//! [`Host`] (one per host, `Simulation::hosts[h]`):
//! - `mem`: the host's registered memory (MRs with real bytes).
//! - `qps`: the QPs, QP index `i` having QPN `QPN_BASE + i`; never shrinks (a reset QP is
//!   reused).
//! - `cq`: work completions not yet polled, in completion order (one CQ per host).
//! - `congestion`: QPNs that received a CNP, not yet polled (`Transport::poll_congestion`).
//! - `egress`: see [`egress`].
//! - `wake_at`, `wake_queued`, `ready`: the driver's wake request and whether the host is in
//!   the simulation's ready list (see `Simulation::set_wake` and `Simulation::advance`).
//! - `clock`: the host model's CPU clock and the visibility time of each CQE in `cq` (see
//!   `host_model::clock`).
//!
//! [`Qp`]: `qpn`, `caps`, `state` (INIT until `connect_qp`, then RTS; ERR after a fatal
//! error until reset), `gen` (resets so far, salting the first PSN), `remote_host` and
//! `remote_qpn` (set by `connect_qp`; a packet from anywhere else is dropped), and the three
//! parts' state: `requester`, `responder`, `egress`.
//!
//! # Events
//! - A packet from the downlink fully arrived (`DownArrive` at a host's switch port,
//!   [`Simulation::nic_receive`]): a corrupted packet is dropped (bad ICRC); PFC frames go to
//!   the egress; a packet for an unknown QP, a QP in INIT or from another peer is dropped;
//!   then CNP → egress (DCQCN reaction point), ACK / NAK / READ response → requester, SEND /
//!   WRITE / READ request → responder (a CE mark first makes the responder's notification
//!   point send a CNP), and the NIC looks for a packet to send.
//! - A fatal error on a QP ([`Simulation::fail_qp`]): the QP goes to ERR and every
//!   outstanding WR is flushed.

mod egress;
mod requester;
mod responder;

pub(crate) use requester::Wqe;

use egress::{Egress, QpEgress};
use requester::Requester;
use responder::Responder;

use crate::host_model::clock::HostClock;
use crate::memory::Memory;
use crate::packet::{PktKind, F_CE, F_CORRUPT, PSN_MASK};
use crate::Simulation;
use std::collections::VecDeque;
use xrdma::{QpCaps, QpNum, SendOpcode, Span, Time, WcOpcode, WcStatus, WorkCompletion};

/// QPNs are `QPN_BASE + index` (QPNs 0 and 1 are special in InfiniBand).
pub(crate) const QPN_BASE: u32 = 0x100;

/// QP states used by the model (IB Spec 10.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QpState {
    Init,
    Rts,
    Err,
}

impl QpState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            QpState::Init => "INIT",
            QpState::Rts => "RTS",
            QpState::Err => "ERR",
        }
    }
}

/// One RC QP: identity, connection, state, and the requester's, responder's and egress's
/// state (see the module doc).
#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: QpNum,
    pub state: QpState,
    pub caps: QpCaps,
    /// Incremented on every reset; salts the initial PSN.
    pub gen: u32,
    pub remote_host: u32,
    pub remote_qpn: QpNum,
    /// The requester half: send queue, PSNs sent and acknowledged, RNR wait, retransmission
    /// timer.
    pub requester: Requester,
    /// Round-robin membership and DCQCN pacing.
    pub egress: QpEgress,
    /// The responder half: receive queue, expected PSN, ACKs owed, READs being answered.
    pub responder: Responder,
}

/// SplitMix64 finalizer (Steele, Lea & Flood, OOPSLA 2014).
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Deterministic initial PSN of QP `qpn` on `host` after `gen` resets, from the seed.
pub(crate) fn initial_psn(seed: u64, host: u32, qpn: u32, gen: u32) -> u32 {
    let x = splitmix(seed ^ splitmix((host as u64) << 32 | qpn as u64) ^ (gen as u64) << 48);
    (x as u32) & PSN_MASK
}

impl Qp {
    pub(crate) fn new(qpn: QpNum, caps: QpCaps, psn: u32) -> Self {
        Qp {
            qpn,
            state: QpState::Init,
            caps,
            gen: 0,
            remote_host: 0,
            remote_qpn: 0,
            requester: Requester::new(psn),
            egress: QpEgress::new(),
            responder: Responder::new(),
        }
    }

    /// Back to INIT with a new first PSN; queued WRs are dropped without completions.
    pub(crate) fn reset(&mut self, psn: u32) {
        let (qpn, caps, gen, in_ring) = (self.qpn, self.caps, self.gen, self.egress.in_ring);
        let rto_pending = self.requester.rto.pending;
        *self = Qp::new(qpn, caps, psn);
        self.gen = gen;
        // A timer event still queued finds the timer disarmed and does nothing.
        self.requester.rto.pending = rto_pending;
        // The QP may still be listed in the NIC's round-robin ring; keep the flag so it is
        // never listed twice. A pending ACK still in the control queue is forgotten: it goes
        // out unchanged and nothing folds new ACKs into it.
        self.egress.in_ring = in_ring;
    }

    /// Whether the egress has a packet to take from this QP: in RTS, a READ response owed or
    /// (outside an RNR wait) a request not yet sent.
    pub(crate) fn sendable(&self) -> bool {
        self.state == QpState::Rts
            && (!self.responder.read_jobs.is_empty()
                || (!self.requester.rnr_wait && self.requester.cursor < self.requester.sq.len()))
    }
}

impl Qp {
    /// When the NIC has the WQE of the QP's next request packet (the host model's
    /// [`Wqe::ready_at`]); zero when a READ response goes first or nothing is left to send.
    #[cold]
    #[inline(never)]
    pub(crate) fn wqe_ready_at(&self) -> Time {
        if !self.responder.read_jobs.is_empty() {
            return Time::ZERO;
        }
        let r = &self.requester;
        r.sq.get(r.cursor).map_or(Time::ZERO, |w| w.ready_at)
    }
}

/// Packets a message of `len` bytes takes at `mtu` payload bytes per packet (at least 1).
pub(crate) fn packets_for(len: u32, mtu: u32) -> u32 {
    len.div_ceil(mtu).max(1)
}

/// One host's NIC (see the module doc).
#[derive(Debug)]
pub(crate) struct Host {
    pub mem: Memory,
    pub qps: Vec<Qp>,
    pub cq: VecDeque<WorkCompletion>,
    pub congestion: VecDeque<QpNum>,
    /// The transmit side: control queue, round-robin ring, uplink, PFC pause.
    pub egress: Egress,
    /// When the driver wants this host woken ([`Time::MAX`]: never).
    pub wake_at: Time,
    /// Time of the one wake event that counts ([`Time::MAX`]: none queued).
    pub wake_queued: Time,
    pub ready: bool,
    /// The host model's CPU clock and CQE visibility (untouched with the ideal model).
    pub clock: HostClock,
    /// TCP sockets with news for the application, each once (`crate::tcp::host`).
    pub tcp_ready: Vec<u32>,
}

impl Host {
    pub(crate) fn new(id: u32) -> Self {
        Host {
            mem: Memory::new(id),
            qps: Vec::new(),
            cq: VecDeque::new(),
            congestion: VecDeque::new(),
            egress: Egress::new(),
            wake_at: Time::MAX,
            wake_queued: Time::MAX,
            ready: false,
            clock: HostClock::new(),
            tcp_ready: Vec::new(),
        }
    }

    pub(crate) fn qp_index(&self, qpn: QpNum) -> Option<usize> {
        let i = qpn.checked_sub(QPN_BASE)? as usize;
        (i < self.qps.len()).then_some(i)
    }
}

impl Simulation {
    /// A packet from the downlink has fully arrived at host `h`.
    pub(crate) fn nic_receive(&mut self, h: u32, id: u32) {
        let p = *self.pool.get(id);
        self.pool.release(id);
        if p.flags & F_CORRUPT != 0 {
            self.stats.icrc_drops += 1;
            self.note_discard(&p);
            return;
        }
        match p.kind {
            PktKind::Pause => {
                self.on_pause(h);
                return;
            }
            PktKind::Resume => {
                self.on_resume(h);
                return;
            }
            PktKind::Tcp => {
                self.tcp_arrive(h, p);
                return;
            }
            _ => {}
        }
        let host = &self.hosts[h as usize];
        let Some(qi) = host.qp_index(p.dst_qpn) else {
            self.stats.out_of_sequence_drops += 1;
            self.note_discard(&p);
            return;
        };
        let qp = &host.qps[qi];
        if qp.state == QpState::Init || qp.remote_host != p.src_host || qp.remote_qpn != p.src_qpn {
            self.stats.out_of_sequence_drops += 1;
            self.note_discard(&p);
            return;
        }
        match p.kind {
            PktKind::Cnp => {
                self.stats.cnps_received += 1;
                self.hosts[h as usize].congestion.push_back(p.dst_qpn);
                self.mark_ready(h);
                self.on_cnp(h, qi);
            }
            PktKind::Ack => self.on_ack(h, qi, p.psn),
            PktKind::Nak => self.on_nak(h, qi, p.psn, p.nak),
            PktKind::ReadResp => {
                if p.has(F_CE) {
                    self.maybe_cnp(h, qi);
                }
                self.on_read_resp(h, qi, &p);
            }
            PktKind::Data | PktKind::ReadReq => {
                if p.has(F_CE) {
                    self.maybe_cnp(h, qi);
                }
                self.on_request(h, qi, &p);
            }
            PktKind::Pause | PktKind::Resume | PktKind::Tcp => {}
        }
        self.nic_try_tx(h);
    }

    /// Add `wc`, generated now, to host `h`'s CQ and mark the host ready for its driver (with
    /// the host model: once the CQE is visible).
    #[inline]
    pub(crate) fn push_wc(&mut self, h: u32, wc: WorkCompletion) {
        self.push_wc_after(h, wc, Span::ZERO);
    }

    /// [`Simulation::push_wc`] for a completion that follows a DMA write of received data (a
    /// receive, a READ): with the host model it is generated `rx-dma-write` after now.
    #[inline]
    pub(crate) fn push_data_wc(&mut self, h: u32, wc: WorkCompletion) {
        let dma = self.cfg.host.rx_dma_write;
        self.push_wc_after(h, wc, dma);
    }

    /// Add `wc` to host `h`'s CQ, generated `dma` after now with the host model (the time is
    /// only computed on that path: the ideal host's completion path is the one without it).
    #[inline]
    fn push_wc_after(&mut self, h: u32, wc: WorkCompletion, dma: Span) {
        self.hosts[h as usize].cq.push_back(wc);
        self.stats.completions += 1;
        if self.host_on {
            self.cqe_generated(h, self.now + dma);
        } else {
            self.mark_ready(h);
        }
    }

    /// Add `wc` to host `h`'s CQ, generated at `at` (now, or later with the host model: a WR
    /// flushed when the posting call runs on the host's CPU clock).
    pub(crate) fn push_wc_from(&mut self, h: u32, wc: WorkCompletion, at: Time) {
        self.hosts[h as usize].cq.push_back(wc);
        self.stats.completions += 1;
        if self.host_on {
            self.cqe_generated(h, at);
        } else {
            self.mark_ready(h);
        }
    }

    /// Move QP `qi` to ERR: the WR holding `failed.0` completes with `failed.1`, every other
    /// outstanding send and receive WR with `WrFlushErr` (IB Spec 10.3.1, 11.6.2).
    pub(crate) fn fail_qp(&mut self, h: u32, qi: usize, failed: Option<(u32, WcStatus)>) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        let failed_idx =
            failed.and_then(|(psn, _)| qp.requester.find_wqe(psn, qp.requester.sq.len()));
        qp.state = QpState::Err;
        qp.requester.rnr_wait = false;
        qp.requester.rto.deadline = Time::MAX;
        qp.responder.in_msg = None;
        qp.responder.read_jobs.clear();
        qp.requester.cursor = 0;
        qp.requester.cursor_pkt = 0;
        let qpn = qp.qpn;
        let sq = std::mem::take(&mut qp.requester.sq);
        let rq = std::mem::take(&mut qp.responder.rq);
        for (j, w) in sq.iter().enumerate() {
            let status = match (failed_idx, failed) {
                (Some(fj), Some((_, s))) if fj == j => s,
                _ => WcStatus::WrFlushErr,
            };
            self.push_wc(h, flush_wc(w.wr.wr_id, status, wc_opcode(w.wr.opcode), qpn));
        }
        for r in rq {
            self.push_wc(
                h,
                flush_wc(r.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, qpn),
            );
        }
    }
}

/// A completion of WR `wr_id` on QP `qpn` with `status` and no data (a flushed or failed WR).
pub(crate) fn flush_wc(
    wr_id: u64,
    status: WcStatus,
    opcode: WcOpcode,
    qpn: QpNum,
) -> WorkCompletion {
    WorkCompletion {
        wr_id,
        status,
        opcode,
        qp_num: qpn,
        byte_len: 0,
        imm: None,
    }
}

/// The completion opcode of a send WR of opcode `op`.
pub(crate) fn wc_opcode(op: SendOpcode) -> WcOpcode {
    match op {
        SendOpcode::Send | SendOpcode::SendWithImm => WcOpcode::Send,
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
        SendOpcode::RdmaRead => WcOpcode::RdmaRead,
    }
}
