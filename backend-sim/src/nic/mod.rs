//! The host NIC: RC queue pairs (the responder half here, the requester half in
//! `requester.rs`), egress arbitration and the host's uplink.
//!
//! Egress: one packet at a time at line rate. Control packets (ACK, NAK, CNP) go first, in
//! FIFO order; data packets are taken round-robin, one packet per turn, from the QPs in the
//! `ring` (QPs with something to send). Packets are built lazily when the link frees up, so a
//! rewind (RNR NAK, sequence-error NAK, retransmission timeout; see `retransmit.rs`) never has
//! to recall queued packets. With DCQCN on, a QP whose next packet may not start yet (its
//! rate limiter, see `pacing.rs`) is skipped in its turn.

mod egress;
mod requester;
mod responder;
mod retransmit;

pub(crate) use requester::flush_wc;

use egress::{Egress, QpEgress};
use responder::Responder;

use crate::memory::Memory;
use crate::packet::{psn_add, psn_diff, PktKind, F_CE, F_CORRUPT, PSN_MASK};
use crate::Simulation;
use std::collections::VecDeque;
use xrdma::{QpCaps, QpNum, SendWr, Time, WorkCompletion};

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

/// A posted send WR and its PSN range.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wqe {
    pub wr: SendWr,
    pub first_psn: u32,
    /// PSNs the WR consumes: packets of a SEND/WRITE, response packets of a READ.
    pub npkts: u32,
    /// READ response packets received so far.
    pub resp_got: u32,
}

#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: QpNum,
    pub state: QpState,
    pub caps: QpCaps,
    /// Incremented on every reset; salts the initial PSN.
    pub gen: u32,
    pub remote_host: u32,
    pub remote_qpn: QpNum,
    // Requester.
    pub sq: VecDeque<Wqe>,
    /// Index in `sq` of the WQE whose packets are sent next; WQEs before it are fully sent.
    pub cursor: usize,
    /// Next packet of `sq[cursor]`.
    pub cursor_pkt: u32,
    /// PSN the next posted WR starts at.
    pub sq_psn: u32,
    /// Highest PSN known to be acknowledged.
    pub acked_psn: u32,
    pub rnr_wait: bool,
    pub rnr_deadline: Time,
    pub rnr_count: u8,
    /// PSN after the highest request PSN ever sent (ACKs and NAKs beyond it are invalid).
    pub sent_psn: u32,
    /// Retransmission timeouts since the last progress.
    pub retry_count: u8,
    /// When the retransmission timer expires; [`Time::MAX`] when disarmed.
    pub rto_deadline: Time,
    /// A `RetransmitTimer` event for this QP is in the event queue.
    pub rto_pending: bool,
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
            sq: VecDeque::new(),
            cursor: 0,
            cursor_pkt: 0,
            sq_psn: psn,
            acked_psn: psn_add(psn, PSN_MASK),
            rnr_wait: false,
            rnr_deadline: Time::ZERO,
            rnr_count: 0,
            sent_psn: psn,
            retry_count: 0,
            rto_deadline: Time::MAX,
            rto_pending: false,
            egress: QpEgress::new(),
            responder: Responder::new(),
        }
    }

    /// Back to INIT with a new first PSN; queued WRs are dropped without completions.
    pub(crate) fn reset(&mut self, psn: u32) {
        let (qpn, caps, gen, in_ring) = (self.qpn, self.caps, self.gen, self.egress.in_ring);
        let rto_pending = self.rto_pending;
        *self = Qp::new(qpn, caps, psn);
        self.gen = gen;
        // A timer event still queued finds the timer disarmed and does nothing.
        self.rto_pending = rto_pending;
        // The QP may still be listed in the NIC's round-robin ring; keep the flag so it is
        // never listed twice. A pending ACK still in the control queue is forgotten: it goes
        // out unchanged and nothing folds new ACKs into it.
        self.egress.in_ring = in_ring;
    }

    pub(crate) fn sendable(&self) -> bool {
        self.state == QpState::Rts
            && (!self.responder.read_jobs.is_empty()
                || (!self.rnr_wait && self.cursor < self.sq.len()))
    }

    /// PSN of the next packet to send (behind `sent_psn` after a rewind).
    pub(crate) fn next_psn(&self) -> u32 {
        match self.sq.get(self.cursor) {
            Some(w) => psn_add(w.first_psn, self.cursor_pkt),
            None => self.sq_psn,
        }
    }

    /// Index of the WQE among the first `upto` whose PSN range holds `psn`.
    pub(crate) fn find_wqe(&self, psn: u32, upto: usize) -> Option<usize> {
        self.sq
            .iter()
            .take(upto)
            .position(|w| (0..w.npkts as i64).contains(&(psn_diff(psn, w.first_psn) as i64)))
    }
}

/// Packets a message of `len` bytes takes at `mtu` payload bytes per packet (at least 1).
pub(crate) fn packets_for(len: u32, mtu: u32) -> u32 {
    len.div_ceil(mtu).max(1)
}

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
        }
    }

    pub(crate) fn qp_index(&self, qpn: QpNum) -> Option<usize> {
        let i = qpn.checked_sub(QPN_BASE)? as usize;
        (i < self.qps.len()).then_some(i)
    }
}

impl Simulation {
    pub(crate) fn push_wc(&mut self, h: u32, wc: WorkCompletion) {
        self.hosts[h as usize].cq.push_back(wc);
        self.stats.completions += 1;
        self.mark_ready(h);
    }

    pub(crate) fn on_rnr_timer(&mut self, h: u32, qi: u32) {
        let qi = qi as usize;
        let Some(qp) = self.hosts[h as usize].qps.get_mut(qi) else {
            return;
        };
        if qp.state == QpState::Rts && qp.rnr_wait && qp.rnr_deadline == self.now {
            qp.rnr_wait = false;
            self.schedule_qp(h, qi);
        }
    }

    /// A packet from the downlink has fully arrived at host `h`.
    pub(crate) fn nic_receive(&mut self, h: u32, id: u32) {
        let p = *self.pool.get(id);
        self.pool.release(id);
        if p.flags & F_CORRUPT != 0 {
            self.stats.icrc_drops += 1;
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
            _ => {}
        }
        let host = &self.hosts[h as usize];
        let Some(qi) = host.qp_index(p.dst_qpn) else {
            self.stats.out_of_sequence_drops += 1;
            return;
        };
        let qp = &host.qps[qi];
        if qp.state == QpState::Init || qp.remote_host != p.src_host || qp.remote_qpn != p.src_qpn {
            self.stats.out_of_sequence_drops += 1;
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
            PktKind::Pause | PktKind::Resume => {}
        }
        self.nic_try_tx(h);
    }
}
