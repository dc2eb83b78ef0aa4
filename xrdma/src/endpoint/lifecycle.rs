//! The endpoint's life cycle: completions in (success or error), timers, failing a
//! connection and finishing a close.

use super::{split_wr_id, Endpoint, Event, Op, KIND_ACK, KIND_DATA};
use crate::error::{ConnId, XrdmaError};
use crate::mr_pool::Region;
use crate::{LocalMemory, MsgId, Seq, Time, WcOpcode, WcStatus, WorkCompletion};

impl Endpoint {
    /// A work completion from the transport's CQ. `mem` gives access to the buffers.
    pub fn handle_completion<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        wc: &WorkCompletion,
        mem: &M,
    ) {
        let (conn, slot, kind) = split_wr_id(wc.wr_id);
        let Some(c) = self.conns.get_mut(conn as usize) else {
            return;
        };
        if c.failed || c.closed {
            return; // flushed WRs of a reclaimed connection
        }
        if wc.status != WcStatus::Success {
            let op = match kind {
                KIND_DATA => "data WR",
                KIND_ACK => "ACK SEND",
                _ => "receive",
            };
            self.fail(
                conn,
                XrdmaError::WorkCompletion {
                    conn,
                    status: wc.status,
                    op,
                },
            );
            return;
        }
        match kind {
            KIND_DATA | KIND_ACK => {
                c.sq_outstanding = c.sq_outstanding.saturating_sub(1);
                let ack_due = c.ack_due;
                self.wake_tx(conn);
                if ack_due {
                    self.queue_ack(conn);
                }
                self.maybe_closed(conn);
            }
            _ => {
                let setup = c.setup;
                let op = self.recv_op(conn, &setup, slot);
                self.ops.push_back(op);
                let imm = Seq(wc.imm.unwrap_or(0));
                match wc.opcode {
                    WcOpcode::RecvRdmaWithImm => self.on_fragment(conn, imm, wc.byte_len, mem),
                    _ if wc.byte_len == 0 => self.on_ack(now, conn, imm),
                    _ => {
                        let slot_len = self.cfg.recv_slot_bytes();
                        let addr = setup.recv_buffers.addr + u64::from(slot) * slot_len;
                        self.on_frame(now, conn, imm, addr, wc.byte_len, mem);
                    }
                }
            }
        }
    }

    /// Fire every timer due at `now`: an expired ACK timer fails its connection.
    pub fn handle_timeout(&mut self, now: Time) {
        while let Some(conn) = self.timers.expire(now) {
            let c = &self.conns[conn as usize];
            if let Some(f) = c.inflight.front() {
                let err = XrdmaError::AckTimeout {
                    conn,
                    seq: f.seq,
                    waited: now.saturating_sub(f.posted_at),
                };
                self.fail(conn, err);
            }
        }
    }

    /// Finish a close when both FINs are through, everything sent was ACKed and the last
    /// ACK SEND has completed: the peer has nothing more to hear from this QP.
    pub(super) fn maybe_closed(&mut self, conn: ConnId) {
        let c = &mut self.conns[conn as usize];
        let done = c.fin_acked
            && c.fin_received
            && c.inflight.is_empty()
            && c.sq_outstanding == 0
            && !c.ack_due
            && c.landings.is_empty()
            && c.pending_rts.is_empty()
            && c.grants_out.is_empty();
        if !done || c.closed || c.failed {
            return;
        }
        c.closed = true;
        let qpn = c.setup.qpn;
        let buffers = (c.setup.send_ring, c.setup.recv_buffers);
        self.by_qp.remove(&qpn);
        self.timers.set(conn, None);
        self.spare_buffers.push(buffers);
        self.events.push_back(Event::Closed { conn });
        self.ops.push_back(Op::ReleaseQp { qpn });
    }

    /// Fail `conn`: reclaim its buffers, fail every pending message, ask for a QP reset.
    pub(super) fn fail(&mut self, conn: ConnId, error: XrdmaError) {
        let c = &mut self.conns[conn as usize];
        if c.failed || c.closed {
            return;
        }
        c.failed = true;
        // In flight (each frame's own message and the messages it completes), then queued;
        // an RTS sent ahead names a queued message. Every message is failed once.
        let mut pending: Vec<MsgId> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut inflight: Vec<MsgId> = Vec::new();
        for f in c.inflight.drain(..) {
            inflight.extend(f.msg);
            inflight.extend_from_slice(f.completes.ids());
        }
        let queued = c.queue.drain(..).map(|m| m.id);
        for m in inflight.into_iter().chain(queued) {
            if seen.insert(m) {
                pending.push(m);
            }
        }
        c.inflight_bytes = 0;
        c.ring.reset();
        c.pending_rts.clear();
        c.grants_out.clear();
        c.ack_due = false;
        let landings: Vec<Region> = c.landings.drain(..).map(|l| l.buf).collect();
        let qpn = c.setup.qpn;
        for buf in landings {
            self.landing.free(buf);
        }
        self.waiting_memory.retain(|&w| w != conn);
        self.waiting_budget.retain(|&w| w != conn);
        self.timers.set(conn, None);
        for msg in pending {
            self.events.push_back(Event::SendFailed {
                conn,
                msg,
                error: error.clone(),
            });
        }
        self.events
            .push_back(Event::ConnectionFailed { conn, error });
        self.ops.push_back(Op::ResetQp { qpn });
    }
}
