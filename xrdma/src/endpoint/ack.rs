//! ACKs: the cumulative ACK a receiver owes (carried by its next frame, or a zero-length ACK
//! SEND, at once or after [`crate::Config::ack_delay`]) and the ACKs a sender receives
//! (frames freed, messages reported sent, the window fed with the RTT).

use super::{wr_id, Connection, Endpoint, Event, Op, KIND_ACK};
use crate::error::{ConnId, XrdmaError};
use crate::{SendOpcode, SendWr, Seq, Sge, Span, Time};

impl Connection {
    /// Our ACK went out (on a frame, or as an ACK SEND): nothing is owed until the next
    /// frame arrives.
    pub(super) fn ack_sent(&mut self) {
        self.ack_due = false;
        self.ack_forced = false;
        self.rx_unacked = 0;
    }
}

impl Endpoint {
    /// The next separate ACK SEND owed, if any: a connection that owes an ACK its frames did
    /// not carry, unless [`crate::Config::ack_delay`] lets it wait for one (then its delayed
    /// ACK timer is set): only in request/response (this side answered the frame before), so
    /// a one-way stream, whose sender may wait for its messages' ACKs, is ACKed at once.
    pub(super) fn next_ack_send(&mut self, now: Time) -> Option<Op> {
        while let Some(conn) = self.ack_list.pop_front() {
            let c = &mut self.conns[conn];
            c.in_ack_list = false;
            if c.state.is_ended() || !c.ack_due {
                continue;
            }
            let delay = self.cfg.ack_delay;
            let hold = c.pingpong && !c.ack_forced && c.rx_unacked < self.cfg.recv_depth / 4;
            if delay > Span::ZERO && hold {
                // Held for a frame of ours to carry it, at most `ack_delay`
                // (`handle_timeout` forces it then).
                if self.ack_timers.get(conn.slot()).is_none() {
                    self.ack_timers.set(conn.slot(), Some(now + delay));
                }
                continue;
            }
            if c.sq_outstanding >= self.cfg.send_depth {
                continue; // re-queued when a send completes
            }
            c.ack_sent();
            // An ACK is signaled: a close and an idle probe wait for its completion.
            c.unsignaled_run = 0;
            let tag = c.send_tag();
            c.stats.acks_sent += 1;
            let s = &c.setup;
            let wr = SendWr {
                wr_id: wr_id(conn, tag, KIND_ACK),
                opcode: SendOpcode::SendWithImm,
                sge: Sge {
                    addr: s.send_ring.addr,
                    len: 0,
                    lkey: s.send_ring.lkey,
                },
                imm: c.expected_rx_seq.add(u32::MAX).to_imm(), // newest in-order = expected − 1
                remote_addr: 0,
                rkey: 0,
                signaled: true,
            };
            return Some(Op::PostSend { qpn: s.qpn, wr });
        }
        None
    }

    /// Owe `conn`'s peer an ACK (it goes out by [`Endpoint::next_ack_send`]).
    pub(super) fn queue_ack(&mut self, conn: ConnId) {
        let c = &mut self.conns[conn];
        if !c.in_ack_list {
            c.in_ack_list = true;
            self.ack_list.push_back(conn);
        }
    }

    /// Delayed ACKs due at `now`: each is sent with the next ops, whatever the frames.
    pub(super) fn expire_ack_delays(&mut self, now: Time) {
        while let Some(slot) = self.ack_timers.expire(now) {
            let Some(conn) = self.conns.id_at(slot) else {
                continue;
            };
            let c = &mut self.conns[conn];
            if c.ack_due {
                c.ack_forced = true;
                self.queue_ack(conn);
            }
        }
    }

    pub(super) fn on_ack(&mut self, now: Time, conn: ConnId, acked: Seq) {
        self.conns[conn].stats.acks_received += 1;
        self.on_ack_inner(now, conn, acked);
    }

    pub(super) fn on_ack_inner(&mut self, now: Time, conn: ConnId, acked: Seq) {
        let c = &mut self.conns[conn];
        let last_sent = c.next_tx_seq.add(u32::MAX);
        if !acked.serial_le(last_sent) {
            self.fail(
                conn,
                XrdmaError::AckBeyondSent {
                    conn,
                    acked,
                    last_sent,
                },
            );
            return;
        }
        let mut acked_bytes = 0;
        let mut newest = None;
        while let Some(f) = c.inflight.front() {
            if !f.seq.serial_le(acked) {
                break;
            }
            c.ring.free(f.footprint);
            c.inflight_bytes -= f.payload_len;
            acked_bytes += f.payload_len;
            // RTT samples come from payload only: a control frame's RTT has no serialization
            // in it and would read as a smaller minimum, so full fragments would look queued.
            if f.payload_len > 0 {
                newest = Some((f.posted_at, f.payload_len));
            }
            for (msg, stamps) in c.posted.drain(..f.completes as usize) {
                let timing = stamps.done(f.posted_at, now);
                self.events.push_back(Event::Sent { conn, msg, timing });
            }
            c.stats.messages_sent += u64::from(f.completes);
            if f.fin {
                c.state.on_fin_acked();
            }
            c.inflight.pop_front();
        }
        while c
            .in_place
            .front()
            .is_some_and(|(seq, _)| seq.serial_le(acked))
        {
            c.in_place.pop_front();
        }
        if let Some((posted, len)) = newest {
            c.window.on_ack(now, acked_bytes, now - posted, len);
        }
        self.rearm(now, conn);
        self.wake_tx(conn);
        self.maybe_closed(conn);
    }
}
