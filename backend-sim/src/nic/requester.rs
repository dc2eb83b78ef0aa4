//! The requester half of an RC QP: request packets from the send queue, ACKs and NAKs from
//! the responder (go-back-N on a sequence-error NAK, the RNR wait on an RNR NAK), READ
//! responses, and retiring completed WQEs in order. Loss recovery by timeout is the
//! [`retransmit`] submodule's.
//!
//! # State
//! [`Requester`] (`Qp::requester`); PSNs are 24-bit and compared modulo 2^24:
//! - `sq`: the posted send WQEs not yet completed, oldest first, at most `caps.max_send_wr`.
//!   Each [`Wqe`] holds the PSNs `[first_psn, first_psn + npkts)` (a READ: one request,
//!   `npkts` responses), contiguous from one WQE to the next and ending at `sq_psn`.
//! - `cursor`, `cursor_pkt`: the next packet to send is packet `cursor_pkt` of `sq[cursor]`
//!   (`0 ≤ cursor ≤ sq.len()`; `cursor_pkt < npkts`, always 0 for a READ and when
//!   `cursor == sq.len()`). WQEs before `cursor` are fully sent; a rewind moves the cursor
//!   back.
//! - `sq_psn`: the first PSN of the next posted WR.
//! - `acked_psn`: the highest PSN acknowledged (at start, the first PSN − 1). Only an
//!   acknowledgement (an ACK, the PSN before a NAKed one, a READ response) inside
//!   `(acked_psn, sent_psn)` moves it; WQEs complete in order once their last PSN is
//!   acknowledged (a READ: once its `resp_got` responses are all in).
//! - `sent_psn`: one past the highest request PSN ever sent; a rewind does not move it back,
//!   so a packet sent below it is a retransmission.
//! - `rnr_wait`, `rnr_deadline`, `rnr_count`: after an RNR NAK no request is sent until the
//!   `RnrTimer` at `rnr_deadline` (picoseconds; `RcParams::rnr_timer`);
//!   `rnr_count` RNR NAKs since the last progress (saturating) fail the QP with
//!   `RnrRetryExcErr` once they reach `rnr_retry` (never with `rnr_retry` 7).
//! - `rto`: the retransmission timer (see [`retransmit`]).
//!
//! # Events
//! - The egress takes the QP's next request packet ([`Simulation::next_request`]).
//! - ACK ([`Simulation::on_ack`]), NAK ([`Simulation::on_nak`]) and READ response
//!   ([`Simulation::on_read_resp`]) packets, from `nic_receive`.
//! - `RnrTimer` ([`Simulation::on_rnr_timer`]): the RNR wait ends, sending resumes at the
//!   NAKed packet.
//!
//! A WR is posted by `Transport::post_send` (in `transport.rs`): it appends a WQE at
//! `sq_psn` and schedules the QP at the egress.

mod retransmit;

use super::{wc_opcode, QpState};
use crate::config::{IMMDT_BYTES, RETH_BYTES};
use crate::engine::Event;
use crate::packet::{
    psn_add, psn_diff, MsgOp, NakCode, Packet, PktKind, F_FIRST, F_LAST, PSN_MASK,
};
use crate::Simulation;
use retransmit::Rto;
use std::collections::VecDeque;
use xrdma::{SendOpcode, SendWr, Time, WcStatus, WorkCompletion};

/// A posted send WR and its PSN range.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wqe {
    /// The WR as posted.
    pub wr: SendWr,
    /// PSN of its first packet (a READ: of its request and first response).
    pub first_psn: u32,
    /// PSNs the WR consumes: packets of a SEND/WRITE, response packets of a READ.
    pub npkts: u32,
    /// READ response packets received so far.
    pub resp_got: u32,
    /// When the NIC has the WQE and its payload (the host model's doorbell, WQE fetch and
    /// payload read after posting); its first packet does not start earlier. Zero with the
    /// ideal model.
    pub ready_at: Time,
}

/// The requester state of one QP (see the module doc for the invariants).
#[derive(Debug)]
pub(crate) struct Requester {
    /// Posted send WQEs not yet completed, oldest first.
    pub sq: VecDeque<Wqe>,
    /// Index in `sq` of the WQE whose packets are sent next; WQEs before it are fully sent.
    pub cursor: usize,
    /// Next packet of `sq[cursor]`.
    pub cursor_pkt: u32,
    /// PSN the next posted WR starts at.
    pub sq_psn: u32,
    /// Highest PSN known to be acknowledged.
    pub acked_psn: u32,
    /// Waiting out an RNR NAK: no request is sent.
    pub rnr_wait: bool,
    /// When the RNR wait ends (its `RnrTimer`).
    pub rnr_deadline: Time,
    /// RNR NAKs since the last progress.
    pub rnr_count: u8,
    /// PSN after the highest request PSN ever sent (ACKs and NAKs beyond it are invalid).
    pub sent_psn: u32,
    /// The retransmission (local ACK) timer.
    pub rto: Rto,
    /// Request packets sent again since the QP was connected (the `stat` tool's count).
    pub retransmitted: u64,
    /// RNR NAKs acted on since the QP was connected (RNR retries).
    pub rnr_retries: u64,
}

impl Requester {
    /// An empty send queue whose first request PSN is `psn`.
    pub(crate) fn new(psn: u32) -> Self {
        Requester {
            sq: VecDeque::new(),
            cursor: 0,
            cursor_pkt: 0,
            sq_psn: psn,
            acked_psn: psn_add(psn, PSN_MASK),
            rnr_wait: false,
            rnr_deadline: Time::ZERO,
            rnr_count: 0,
            sent_psn: psn,
            rto: Rto::new(),
            retransmitted: 0,
            rnr_retries: 0,
        }
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

    /// Advance the acknowledged PSN to `psn` if it lies in the sent, unacknowledged range;
    /// true when it moved (progress).
    pub(crate) fn advance_acked(&mut self, psn: u32) -> bool {
        if psn_diff(psn, self.acked_psn) > 0 && psn_diff(psn, self.sent_psn) < 0 {
            self.acked_psn = psn;
            self.rnr_count = 0;
            true
        } else {
            false
        }
    }
}

impl Simulation {
    /// The next request packet of QP `qi` on host `h`, built on `p` (addressed, `hdr` bytes):
    /// `None` during an RNR wait or when every WQE is sent.
    pub(crate) fn next_request(&mut self, h: u32, qi: usize, mut p: Packet) -> Option<Packet> {
        let (mtu, hdr) = (self.cfg.path_mtu(), self.cfg.header_bytes);
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.requester.rnr_wait {
            return None;
        }
        let w = *qp.requester.sq.get(qp.requester.cursor)?;
        p.rkey = w.wr.rkey;
        p.msg_len = w.wr.sge.len;
        p.imm = w.wr.imm;
        if w.wr.opcode == SendOpcode::RdmaRead {
            p.kind = PktKind::ReadReq;
            p.flags = F_FIRST | F_LAST;
            p.psn = w.first_psn;
            p.wire = hdr + RETH_BYTES;
            p.remote_addr = w.wr.remote_addr;
            qp.requester.cursor += 1;
            qp.requester.cursor_pkt = 0;
            self.request_sent(h, qi, psn_add(w.first_psn, w.npkts));
            return Some(p);
        }
        let k = qp.requester.cursor_pkt;
        let off = k * mtu;
        let payload = (w.wr.sge.len - off).min(mtu);
        let first = k == 0;
        let last = k + 1 == w.npkts;
        let (op, imm, write) = match w.wr.opcode {
            SendOpcode::Send => (MsgOp::Send, false, false),
            SendOpcode::SendWithImm => (MsgOp::SendImm, true, false),
            SendOpcode::RdmaWrite => (MsgOp::Write, false, true),
            _ => (MsgOp::WriteImm, true, true),
        };
        p.op = op;
        p.flags = if first { F_FIRST } else { 0 } | if last { F_LAST } else { 0 };
        p.psn = psn_add(w.first_psn, k);
        p.payload = payload;
        p.wire = hdr
            + payload
            + if first && write { RETH_BYTES } else { 0 }
            + if last && imm { IMMDT_BYTES } else { 0 };
        p.src_addr = w.wr.sge.addr + off as u64;
        p.remote_addr = w.wr.remote_addr + off as u64;
        if last {
            qp.requester.cursor += 1;
            qp.requester.cursor_pkt = 0;
        } else {
            qp.requester.cursor_pkt += 1;
        }
        self.request_sent(h, qi, psn_add(p.psn, 1));
        Some(p)
    }

    /// Complete WQEs at the head of the send queue that are fully acknowledged (READs: all
    /// responses received), in order.
    pub(crate) fn retire(&mut self, h: u32, qi: usize) {
        loop {
            let qp = &mut self.hosts[h as usize].qps[qi];
            if qp.requester.cursor == 0 {
                return;
            }
            let Some(w) = qp.requester.sq.front() else {
                return;
            };
            let done = if w.wr.opcode == SendOpcode::RdmaRead {
                w.resp_got == w.npkts
            } else {
                psn_diff(psn_add(w.first_psn, w.npkts - 1), qp.requester.acked_psn) <= 0
            };
            if !done {
                return;
            }
            let w = *w;
            qp.requester.sq.pop_front();
            qp.requester.cursor -= 1;
            let qpn = qp.qpn;
            if w.wr.signaled {
                let wc = WorkCompletion {
                    wr_id: w.wr.wr_id,
                    status: WcStatus::Success,
                    opcode: wc_opcode(w.wr.opcode),
                    qp_num: qpn,
                    byte_len: w.wr.sge.len,
                    imm: None,
                };
                if w.wr.opcode == SendOpcode::RdmaRead {
                    self.push_data_wc(h, wc);
                } else {
                    self.push_wc(h, wc);
                }
            }
        }
    }

    /// An ACK of `psn` for QP `qi` on host `h`: acknowledge up to `psn`, skip what a rewind
    /// would resend needlessly, retire completed WQEs.
    pub(crate) fn on_ack(&mut self, h: u32, qi: usize, psn: u32) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            return;
        }
        if qp.requester.advance_acked(psn) {
            qp.requester.skip_acked();
            self.retire(h, qi);
            self.on_progress(h, qi);
        }
    }

    /// A NAK of `psn` with `code` for QP `qi` on host `h`: everything before `psn` is
    /// acknowledged; a sequence error goes back to `psn`, an RNR NAK starts the RNR wait, an
    /// access or invalid-request NAK fails the QP.
    pub(crate) fn on_nak(&mut self, h: u32, qi: usize, psn: u32, code: NakCode) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts || psn_diff(psn, qp.requester.sent_psn) >= 0 {
            return;
        }
        // A NAK of `psn` acknowledges everything before it.
        if qp.requester.advance_acked(psn_add(psn, PSN_MASK)) {
            self.retire(h, qi);
            self.on_progress(h, qi);
        }
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            return;
        }
        match code {
            NakCode::SeqErr => {
                // Go back to the expected PSN, unless the NAK is stale (its PSN is already
                // acknowledged) or an RNR wait will resend from there anyway.
                if qp.requester.rnr_wait || psn != psn_add(qp.requester.acked_psn, 1) {
                    return;
                }
                qp.requester.seek(psn);
                self.retire(h, qi);
                self.schedule_qp(h, qi);
            }
            NakCode::Rnr => {
                if qp.requester.rnr_wait {
                    return;
                }
                let retry = self.cfg.rc.rnr_retry;
                if retry != 7 && qp.requester.rnr_count >= retry {
                    self.fail_qp(h, qi, Some((psn, WcStatus::RnrRetryExcErr)));
                    return;
                }
                // Saturating: with rnr_retry 7 (retry forever) the count only feeds the
                // counters, and a long stall outlasts 255 retries.
                qp.requester.rnr_count = qp.requester.rnr_count.saturating_add(1);
                qp.requester.rnr_retries += 1;
                qp.requester.rnr_wait = true;
                // Go back to the NAKed packet.
                if let Some(j) = qp.requester.find_wqe(psn, qp.requester.sq.len()) {
                    let w = qp.requester.sq[j];
                    qp.requester.cursor = j;
                    qp.requester.cursor_pkt = if w.wr.opcode == SendOpcode::RdmaRead {
                        0
                    } else {
                        psn_diff(psn, w.first_psn) as u32
                    };
                }
                let at = self.now + self.cfg.rc.rnr_timer();
                // Nothing is outstanding while waiting: the retry re-arms the timer.
                qp.requester.rto.deadline = Time::MAX;
                qp.requester.rnr_deadline = at;
                self.queue.push(
                    at,
                    Event::RnrTimer {
                        host: h,
                        qp: qi as u32,
                    },
                );
            }
            NakCode::RemAccess => self.fail_qp(h, qi, Some((psn, WcStatus::RemAccessErr))),
            NakCode::InvReq => self.fail_qp(h, qi, Some((psn, WcStatus::GeneralErr))),
        }
    }

    /// A READ response packet `p` for QP `qi` on host `h`: its payload is written at its place
    /// in the READ's local buffer if it is the next one expected, else dropped.
    pub(crate) fn on_read_resp(&mut self, h: u32, qi: usize, p: &Packet) {
        let mtu = self.cfg.path_mtu();
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            return;
        }
        let Some(j) = qp.requester.find_wqe(p.psn, qp.requester.cursor) else {
            self.stats.out_of_sequence_drops += 1;
            self.note_discard(p);
            return;
        };
        let w = qp.requester.sq[j];
        let k = psn_diff(p.psn, w.first_psn) as u32;
        if w.wr.opcode != SendOpcode::RdmaRead || k != w.resp_got {
            self.stats.out_of_sequence_drops += 1;
            self.note_discard(p);
            return;
        }
        qp.requester.sq[j].resp_got += 1;
        qp.requester.advance_acked(p.psn);
        let dst = w.wr.sge.addr + k as u64 * mtu as u64;
        self.copy_bytes(p.src_host, p.src_addr, h, dst, p.payload);
        self.stats.delivered_payload_bytes += p.payload as u64;
        self.note_delivered(p.src_host, h, p.payload as u64);
        self.retire(h, qi);
        self.on_progress(h, qi);
    }

    /// `RnrTimer` of QP `qi` on host `h`: the RNR wait ends if this is its deadline, and the
    /// QP is scheduled to resend from the NAKed packet.
    pub(crate) fn on_rnr_timer(&mut self, h: u32, qi: u32) {
        let qi = qi as usize;
        let Some(qp) = self.hosts[h as usize].qps.get_mut(qi) else {
            return;
        };
        if qp.state == QpState::Rts
            && qp.requester.rnr_wait
            && qp.requester.rnr_deadline == self.now
        {
            qp.requester.rnr_wait = false;
            self.schedule_qp(h, qi);
        }
    }
}
