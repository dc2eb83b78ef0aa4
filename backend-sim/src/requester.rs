//! The requester half of an RC QP: ACKs and NAKs from the responder (go-back-N on a
//! sequence-error NAK, the RNR wait on an RNR NAK), READ responses, retiring completed WQEs
//! in order, and moving a QP to the error state.

use crate::engine::Event;
use crate::nic::{Qp, QpState};
use crate::packet::{psn_add, psn_diff, NakCode, Packet, PSN_MASK};
use crate::Simulation;
use xrdma::{QpNum, SendOpcode, Time, WcOpcode, WcStatus, WorkCompletion};

impl Simulation {
    /// Complete WQEs at the head of the send queue that are fully acknowledged (READs: all
    /// responses received), in order.
    pub(crate) fn retire(&mut self, h: u32, qi: usize) {
        loop {
            let qp = &mut self.hosts[h as usize].qps[qi];
            if qp.cursor == 0 {
                return;
            }
            let Some(w) = qp.sq.front() else { return };
            let done = if w.wr.opcode == SendOpcode::RdmaRead {
                w.resp_got == w.npkts
            } else {
                psn_diff(psn_add(w.first_psn, w.npkts - 1), qp.acked_psn) <= 0
            };
            if !done {
                return;
            }
            let w = *w;
            qp.sq.pop_front();
            qp.cursor -= 1;
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
                self.push_wc(h, wc);
            }
        }
    }

    /// Advance the acknowledged PSN to `psn` if it lies in the sent, unacknowledged range;
    /// true when it moved (progress).
    fn advance_acked(qp: &mut Qp, psn: u32) -> bool {
        if psn_diff(psn, qp.acked_psn) > 0 && psn_diff(psn, qp.sent_psn) < 0 {
            qp.acked_psn = psn;
            qp.rnr_count = 0;
            true
        } else {
            false
        }
    }

    pub(crate) fn on_ack(&mut self, h: u32, qi: usize, psn: u32) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            return;
        }
        if Self::advance_acked(qp, psn) {
            Self::skip_acked(qp);
            self.retire(h, qi);
            self.on_progress(h, qi);
        }
    }

    pub(crate) fn on_nak(&mut self, h: u32, qi: usize, psn: u32, code: NakCode) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts || psn_diff(psn, qp.sent_psn) >= 0 {
            return;
        }
        // A NAK of `psn` acknowledges everything before it.
        if Self::advance_acked(qp, psn_add(psn, PSN_MASK)) {
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
                if qp.rnr_wait || psn != psn_add(qp.acked_psn, 1) {
                    return;
                }
                Self::seek(qp, psn);
                self.retire(h, qi);
                self.schedule_qp(h, qi);
            }
            NakCode::Rnr => {
                if qp.rnr_wait {
                    return;
                }
                let retry = self.cfg.rc.rnr_retry;
                if retry != 7 && qp.rnr_count >= retry {
                    self.fail_qp(h, qi, Some((psn, WcStatus::RnrRetryExcErr)));
                    return;
                }
                // Saturating: with rnr_retry 7 (retry forever) the count only feeds the
                // counters, and a long stall outlasts 255 retries.
                qp.rnr_count = qp.rnr_count.saturating_add(1);
                qp.rnr_wait = true;
                // Go back to the NAKed packet.
                if let Some(j) = qp.find_wqe(psn, qp.sq.len()) {
                    let w = qp.sq[j];
                    qp.cursor = j;
                    qp.cursor_pkt = if w.wr.opcode == SendOpcode::RdmaRead {
                        0
                    } else {
                        psn_diff(psn, w.first_psn) as u32
                    };
                }
                let at = self.now + self.cfg.rc.rnr_timer();
                // Nothing is outstanding while waiting: the retry re-arms the timer.
                qp.rto_deadline = Time::MAX;
                qp.rnr_deadline = at;
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

    pub(crate) fn on_read_resp(&mut self, h: u32, qi: usize, p: &Packet) {
        let mtu = self.cfg.path_mtu();
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            return;
        }
        let Some(j) = qp.find_wqe(p.psn, qp.cursor) else {
            self.stats.out_of_sequence_drops += 1;
            return;
        };
        let w = qp.sq[j];
        let k = psn_diff(p.psn, w.first_psn) as u32;
        if w.wr.opcode != SendOpcode::RdmaRead || k != w.resp_got {
            self.stats.out_of_sequence_drops += 1;
            return;
        }
        qp.sq[j].resp_got += 1;
        Self::advance_acked(qp, p.psn);
        let dst = w.wr.sge.addr + k as u64 * mtu as u64;
        self.copy_bytes(p.src_host, p.src_addr, h, dst, p.payload);
        self.stats.delivered_payload_bytes += p.payload as u64;
        self.note_delivered(p.src_host, h, p.payload as u64);
        self.retire(h, qi);
        self.on_progress(h, qi);
    }

    /// Move QP `qi` to ERR: the WR holding `failed.0` completes with `failed.1`, every other
    /// outstanding send and receive WR with `WrFlushErr` (IB Spec 10.3.1, 11.6.2).
    pub(crate) fn fail_qp(&mut self, h: u32, qi: usize, failed: Option<(u32, WcStatus)>) {
        let qp = &mut self.hosts[h as usize].qps[qi];
        let failed_idx = failed.and_then(|(psn, _)| qp.find_wqe(psn, qp.sq.len()));
        qp.state = QpState::Err;
        qp.rnr_wait = false;
        qp.rto_deadline = Time::MAX;
        qp.in_msg = None;
        qp.read_jobs.clear();
        qp.cursor = 0;
        qp.cursor_pkt = 0;
        let qpn = qp.qpn;
        let sq = std::mem::take(&mut qp.sq);
        let rq = std::mem::take(&mut qp.rq);
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

fn wc_opcode(op: SendOpcode) -> WcOpcode {
    match op {
        SendOpcode::Send | SendOpcode::SendWithImm => WcOpcode::Send,
        SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
        SendOpcode::RdmaRead => WcOpcode::RdmaRead,
    }
}
