//! Go-back-N loss recovery at the requester: the retransmission (local ACK) timer and the
//! rewinds of the send cursor.
//!
//! The responder NAKs the first packet of a gap with a PSN sequence error carrying the
//! expected PSN (`nic::responder`); the requester goes back to that PSN. When nothing comes
//! back — the tail of a message was lost, or the NAK itself — the timer goes back to the
//! oldest unacknowledged PSN (a READ at the head of the send queue whose responses are missing
//! is requested again). After `retry_cnt` retransmissions without progress the next timeout
//! fails the QP with `RetryExcErr` (IB Spec vol. 1, Retry Count).
//!
//! The timer is lazy: a QP has at most one `RetransmitTimer` event queued. Progress (an ACK
//! or response that moves the acknowledged PSN) only moves the deadline; the queued event
//! re-queues itself at the deadline when it fires early.
//!
//! # State
//! [`Rto`] (`Qp::requester.rto`):
//! - `retry_count`: timeouts since the last progress; the timeout that finds it at
//!   `retry_cnt` fails the QP.
//! - `deadline`: when the timer expires (picoseconds; [`Time::MAX`]: disarmed). The first
//!   request sent while disarmed arms it `RcParams::ack_timeout`
//!   ahead; progress restarts it while sent requests are outstanding and disarms it when none
//!   are; an RNR wait, the expiry itself and the ERR state disarm it.
//! - `pending`: a `RetransmitTimer` event for the QP is queued (at most one). It survives a
//!   QP reset, so the stale event finds the timer disarmed and a new one is not queued twice.
//! - `lost_psn`: the highest PSN among the QP's discarded packets (requests it sent, responses
//!   sent to it) since its last timeout ([`Simulation::note_discard`]). A timeout when none of
//!   them lies at or past the oldest unacknowledged PSN resends nothing that was lost: it is
//!   *spurious* (the ACKs were only late, queued behind other traffic), and counted so.
//!
//! The send-cursor rewinds ([`Requester::seek`], [`Requester::skip_acked`]) act on the
//! requester's `cursor` and `cursor_pkt`.
//!
//! # Events
//! - `RetransmitTimer`: [`Simulation::retransmit_due`] (from the event loop: a disarmed or
//!   early event neither runs nor moves the clock), then [`Simulation::on_retransmit_timer`].
//! - A request packet put on the wire ([`Simulation::request_sent`], from the requester's
//!   `next_request`).
//! - Progress: the acknowledged PSN moved ([`Simulation::on_progress`], from ACKs, NAKs and
//!   READ responses).

use super::Requester;
use crate::engine::Event;
use crate::packet::{psn_add, psn_diff};
use crate::Simulation;
use xrdma::{SendOpcode, Span, Time, WcStatus};

/// The retransmission timer of one QP (see the module doc).
#[derive(Debug)]
pub(crate) struct Rto {
    /// Retransmission timeouts since the last progress.
    pub retry_count: u8,
    /// When the retransmission timer expires; [`Time::MAX`] when disarmed.
    pub deadline: Time,
    /// A `RetransmitTimer` event for this QP is in the event queue.
    pub pending: bool,
    /// Highest PSN of this QP's packets discarded since its last timeout (see the module doc).
    pub lost_psn: Option<u32>,
}

impl Rto {
    /// Disarmed, no retry yet, no event queued.
    pub(crate) fn new() -> Self {
        Rto {
            retry_count: 0,
            deadline: Time::MAX,
            pending: false,
            lost_psn: None,
        }
    }
}

impl Simulation {
    /// Record that packet `p` was discarded (a switch or a downed or lossy link dropped it, its
    /// ICRC failed, or the receiving QP could not take it): a request raises its sender's
    /// `lost_psn`, a response (ACK, NAK, READ response) its receiver's. Other kinds carry no
    /// PSN of an RC requester.
    pub(crate) fn note_discard(&mut self, p: &crate::packet::Packet) {
        use crate::packet::PktKind;
        let (h, qpn) = match p.kind {
            PktKind::Data | PktKind::ReadReq => (p.src_host, p.src_qpn),
            PktKind::ReadResp | PktKind::Ack | PktKind::Nak => (p.dst_host, p.dst_qpn),
            _ => return,
        };
        let Some(host) = self.hosts.get_mut(h as usize) else {
            return;
        };
        let Some(qi) = host.qp_index(qpn) else {
            return;
        };
        let lost = &mut host.qps[qi].requester.rto.lost_psn;
        if lost.map_or(true, |x| psn_diff(p.psn, x) > 0) {
            *lost = Some(p.psn);
        }
    }

    /// Record that QP `qi` on host `h` put a request on the wire whose PSNs end before `end`
    /// (a retransmission when `end` is not beyond `sent_psn`), and arm the timer if idle.
    pub(crate) fn request_sent(&mut self, h: u32, qi: usize, end: u32) {
        let timeout = self.cfg.rc.ack_timeout();
        let qp = &mut self.hosts[h as usize].qps[qi];
        if psn_diff(end, qp.requester.sent_psn) > 0 {
            qp.requester.sent_psn = end;
        } else {
            self.stats.retransmitted_packets += 1;
            qp.requester.retransmitted += 1;
        }
        if qp.requester.rto.deadline == Time::MAX && timeout != Span::MAX {
            self.arm_rto(h, qi, self.now + timeout);
        }
    }

    /// Set QP `qi`'s retransmission deadline to `at`, queueing its one timer event if none is
    /// pending (a pending event that fires early re-queues itself at the deadline).
    fn arm_rto(&mut self, h: u32, qi: usize, at: Time) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        qp.requester.rto.deadline = at;
        if !qp.requester.rto.pending {
            qp.requester.rto.pending = true;
            self.queue.push(
                at,
                Event::RetransmitTimer {
                    host: h,
                    qp: qi as u32,
                },
            );
        }
    }

    /// The acknowledged PSN of QP `qi` moved: reset the retry count and restart the timer
    /// (disarm it when nothing sent is outstanding).
    pub(crate) fn on_progress(&mut self, h: u32, qi: usize) {
        let timeout = self.cfg.rc.ack_timeout();
        let qp = &mut self.hosts[h as usize].qps[qi];
        qp.requester.rto.retry_count = 0;
        let outstanding =
            !qp.requester.sq.is_empty() && (qp.requester.cursor > 0 || qp.requester.cursor_pkt > 0);
        if !outstanding || timeout == Span::MAX || qp.requester.rnr_wait {
            qp.requester.rto.deadline = Time::MAX;
            return;
        }
        self.arm_rto(h, qi, self.now + timeout);
    }

    /// A retransmission timer event of QP `qi` on host `h` fired at `t`: whether it is due.
    /// A disarmed timer is dropped; one that fired before its (moved) deadline re-queues
    /// itself at the deadline. Neither moves the clock.
    pub(crate) fn retransmit_due(&mut self, h: u32, qi: u32, t: Time) -> bool {
        let Some(qp) = self.hosts[h as usize].qps.get_mut(qi as usize) else {
            return false;
        };
        qp.requester.rto.pending = false;
        if qp.state != crate::nic::QpState::Rts || qp.requester.rto.deadline == Time::MAX {
            return false;
        }
        if t < qp.requester.rto.deadline {
            let at = qp.requester.rto.deadline;
            self.arm_rto(h, qi as usize, at);
            return false;
        }
        true
    }

    /// The retransmission timer of QP `qi` on host `h` expired (see
    /// [`Simulation::retransmit_due`]): go back to the oldest unacknowledged PSN, or fail the
    /// QP after `retry_cnt` retries.
    pub(crate) fn on_retransmit_timer(&mut self, h: u32, qi: u32) {
        let qi = qi as usize;
        let Some(qp) = self.hosts[h as usize].qps.get_mut(qi) else {
            return;
        };
        self.stats.retransmit_timeouts += 1;
        qp.requester.rto.deadline = Time::MAX;
        let Some(front) = qp.requester.sq.front().copied() else {
            return;
        };
        let oldest = psn_add(qp.requester.acked_psn, 1);
        if qp
            .requester
            .rto
            .lost_psn
            .take()
            .map_or(true, |x| psn_diff(x, oldest) < 0)
        {
            self.stats.spurious_timeouts += 1;
        }
        if qp.requester.rto.retry_count >= self.cfg.rc.retry_cnt {
            self.fail_qp(h, qi, Some((front.first_psn, WcStatus::RetryExcErr)));
            return;
        }
        qp.requester.rto.retry_count += 1;
        if front.wr.opcode == SendOpcode::RdmaRead && front.resp_got < front.npkts {
            qp.requester.cursor = 0;
            qp.requester.cursor_pkt = 0;
        } else {
            qp.requester.seek(oldest);
        }
        self.retire(h, qi);
        self.schedule_qp(h, qi);
    }
}

impl Requester {
    /// Point the send cursor at the packet with PSN `psn` (the whole request for a READ);
    /// past the last WQE when no WQE holds `psn`.
    pub(crate) fn seek(&mut self, psn: u32) {
        match self.find_wqe(psn, self.sq.len()) {
            Some(j) => {
                let w = &self.sq[j];
                self.cursor_pkt = if w.wr.opcode == SendOpcode::RdmaRead {
                    0
                } else {
                    psn_diff(psn, w.first_psn) as u32
                };
                self.cursor = j;
            }
            None => {
                self.cursor = self.sq.len();
                self.cursor_pkt = 0;
            }
        }
    }

    /// After a rewind, packets sent before it may still be acknowledged: move the cursor
    /// past what is acknowledged so it is not sent again.
    pub(crate) fn skip_acked(&mut self) {
        let next = psn_add(self.acked_psn, 1);
        if psn_diff(next, self.next_psn()) > 0 {
            self.seek(next);
        }
    }
}
