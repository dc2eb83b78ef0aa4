//! Go-back-N loss recovery at the requester: the retransmission (local ACK) timer and the
//! rewinds of the send cursor.
//!
//! The responder NAKs the first packet of a gap with a PSN sequence error carrying the
//! expected PSN (`nic.rs`); the requester goes back to that PSN. When nothing comes back —
//! the tail of a message was lost, or the NAK itself — the timer goes back to the oldest
//! unacknowledged PSN (a READ at the head of the send queue whose responses are missing is
//! requested again). After `retry_cnt` retransmissions without progress the next timeout
//! fails the QP with `RetryExcErr` (IB Spec vol. 1, Retry Count).
//!
//! The timer is lazy: a QP has at most one `RetransmitTimer` event queued. Progress (an ACK
//! or response that moves the acknowledged PSN) only moves the deadline; the queued event
//! re-queues itself at the deadline when it fires early.

use crate::engine::Event;
use crate::nic::Qp;
use crate::packet::{psn_add, psn_diff};
use crate::Simulation;
use xrdma::{SendOpcode, Time, WcStatus};

impl Simulation {
    /// Record that QP `qi` on host `h` put a request on the wire whose PSNs end before `end`
    /// (a retransmission when `end` is not beyond `sent_psn`), and arm the timer if idle.
    pub(crate) fn request_sent(&mut self, h: u32, qi: usize, end: u32) {
        let timeout = self.cfg.rc.ack_timeout();
        let qp = &mut self.hosts[h as usize].qps[qi];
        if psn_diff(end, qp.sent_psn) > 0 {
            qp.sent_psn = end;
        } else {
            self.stats.retransmitted_packets += 1;
        }
        if qp.rto_deadline == Time::MAX && timeout != Time::MAX {
            self.arm_rto(h, qi, self.now + timeout);
        }
    }

    /// Set QP `qi`'s retransmission deadline to `at`, queueing its one timer event if none is
    /// pending (a pending event that fires early re-queues itself at the deadline).
    fn arm_rto(&mut self, h: u32, qi: usize, at: Time) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        qp.rto_deadline = at;
        if !qp.rto_pending {
            qp.rto_pending = true;
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
        qp.retry_count = 0;
        let outstanding = !qp.sq.is_empty() && (qp.cursor > 0 || qp.cursor_pkt > 0);
        if !outstanding || timeout == Time::MAX || qp.rnr_wait {
            qp.rto_deadline = Time::MAX;
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
        qp.rto_pending = false;
        if qp.state != crate::nic::QpState::Rts || qp.rto_deadline == Time::MAX {
            return false;
        }
        if t < qp.rto_deadline {
            let at = qp.rto_deadline;
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
        qp.rto_deadline = Time::MAX;
        let Some(front) = qp.sq.front().copied() else {
            return;
        };
        if qp.retry_count >= self.cfg.rc.retry_cnt {
            self.fail_qp(h, qi, Some((front.first_psn, WcStatus::RetryExcErr)));
            return;
        }
        qp.retry_count += 1;
        if front.wr.opcode == SendOpcode::RdmaRead && front.resp_got < front.npkts {
            qp.cursor = 0;
            qp.cursor_pkt = 0;
        } else {
            let oldest = psn_add(qp.acked_psn, 1);
            Self::seek(qp, oldest);
        }
        self.retire(h, qi);
        self.schedule_qp(h, qi);
    }

    /// Point the send cursor at the packet with PSN `psn` (the whole request for a READ);
    /// past the last WQE when no WQE holds `psn`.
    pub(crate) fn seek(qp: &mut Qp, psn: u32) {
        match qp.find_wqe(psn, qp.sq.len()) {
            Some(j) => {
                let w = &qp.sq[j];
                qp.cursor_pkt = if w.wr.opcode == SendOpcode::RdmaRead {
                    0
                } else {
                    psn_diff(psn, w.first_psn) as u32
                };
                qp.cursor = j;
            }
            None => {
                qp.cursor = qp.sq.len();
                qp.cursor_pkt = 0;
            }
        }
    }

    /// After a rewind, packets sent before it may still be acknowledged: move the cursor
    /// past what is acknowledged so it is not sent again.
    pub(crate) fn skip_acked(qp: &mut Qp) {
        let next = psn_add(qp.acked_psn, 1);
        if psn_diff(next, qp.next_psn()) > 0 {
            Self::seek(qp, next);
        }
    }
}
