//! The endpoint's life cycle: completions in (success or error), timers, failing a
//! connection and finishing a close.

use super::{split_wr_id, Endpoint, Event, Landed, GEN_BITS, KIND_ACK, KIND_DATA, TAG_MASK};
use crate::error::{ConnId, XrdmaError};
use crate::mr_pool::Region;
use crate::{MsgId, Seq, Time, TransportError, WcOpcode, WcStatus, WorkCompletion};
use bytes::Bytes;

impl Endpoint {
    /// The connection a completion belongs to, with its WR's tag and kind, if it is one of
    /// a connection that has not ended (a completion left in the CQ by a slot's previous
    /// connection, or a flushed WR of a reclaimed connection, has none).
    fn completion_conn(&self, wc: &WorkCompletion) -> Option<(ConnId, u32, u64)> {
        let (slot, generation, tag, kind) = split_wr_id(wc.wr_id);
        let (conn, c) = self.conns.get_by_bits(slot, generation, GEN_BITS)?;
        (!c.state.is_ended()).then_some((conn, tag, kind))
    }

    /// A work completion from the transport's CQ. Returns `Some((addr, len))` when handling
    /// it needs bytes that landed in registered memory — a SEND's frame in its receive buffer,
    /// or the fragment (when fragments are delivered as they land) or whole message (with its
    /// last fragment) in a landing buffer: the driver copies them out
    /// (`LocalMemory::read_bytes`) and hands them to [`Endpoint::handle_landed`] before any
    /// other input. The core itself reads no memory.
    pub fn handle_completion(&mut self, now: Time, wc: &WorkCompletion) -> Option<(u64, usize)> {
        if self.landed.is_some() {
            self.handle_landed(now, Err(not_handed_in()));
        }
        let (conn, tag, kind) = self.completion_conn(wc)?;
        let c = &mut self.conns[conn];
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
            return None;
        }
        match kind {
            KIND_DATA | KIND_ACK => {
                // A send queue completes in order: this completion implies every older one
                // (whose completions were lost); one not outstanding is a duplicate or was
                // overtaken, and is ignored.
                let older = tag.wrapping_sub(c.sq_oldest) & TAG_MASK;
                if older >= c.sq_outstanding {
                    return None;
                }
                c.sq_oldest = tag.wrapping_add(1) & TAG_MASK;
                c.sq_outstanding -= older + 1;
                let ack_due = c.ack_due;
                self.wake_tx(conn);
                if ack_due {
                    self.queue_ack(conn);
                }
                self.maybe_closed(conn);
            }
            _ => {
                // Receives complete in order too: the older ones completed with their
                // completions lost (their frames are lost: the next sequence check fails the
                // connection if one carried data), and their buffers are free again.
                let older = tag.wrapping_sub(c.rq_oldest) & TAG_MASK;
                if older as usize >= c.rq.len() {
                    return None;
                }
                let setup = c.setup;
                let mut slot = 0;
                for _ in 0..=older {
                    let c = &mut self.conns[conn];
                    slot = c.rq.pop_front().unwrap_or(0);
                    c.rq_oldest = c.rq_oldest.wrapping_add(1) & TAG_MASK;
                    let op = self.recv_op(conn, &setup, slot);
                    self.ops.push_back(op);
                }
                let imm = Seq(wc.imm.unwrap_or(0));
                match wc.opcode {
                    WcOpcode::RecvRdmaWithImm => {
                        if let Some(range) = self.on_fragment(conn, imm, wc.byte_len) {
                            return Some(range); // rearmed in `handle_landed`
                        }
                    }
                    _ if wc.byte_len == 0 => self.on_ack(now, conn, imm),
                    _ => {
                        if self.accept_seq(conn, imm) {
                            let slot_len = self.cfg.recv_slot_bytes();
                            let addr = setup.recv_buffers.addr + u64::from(slot) * slot_len;
                            let byte_len = wc.byte_len;
                            self.landed = Some(Landed::Frame {
                                conn,
                                addr,
                                byte_len,
                                lkey: setup.recv_buffers.lkey,
                            });
                            return Some((addr, byte_len as usize)); // rearmed in `handle_landed`
                        }
                    }
                }
            }
        }
        self.rearm(now, conn);
        None
    }

    /// The bytes [`Endpoint::handle_completion`] asked for (copied out of registered memory
    /// by the driver), or why they could not be read: the completion's frame or fragment is
    /// handled now. Bytes of another length than asked, or an error, fail the connection.
    pub fn handle_landed(&mut self, now: Time, bytes: Result<Bytes, TransportError>) {
        self.land(now, bytes, false);
    }

    /// Whether the bytes [`Endpoint::handle_completion`] asked for may be lent rather than
    /// copied ([`crate::LocalMemory::lend`]): a whole large message in its landing buffer,
    /// which no peer may write again until the lease comes back. Frames in receive buffers
    /// are copied: a receive buffer held by the application would stall the peer's SENDs
    /// (RNR), and one ≤ 4 KiB frame costs less to copy than to lend and return.
    pub fn landed_lendable(&self) -> bool {
        matches!(self.landed, Some(Landed::Fragment(t)) if t.done && t.offset == 0 && !self.cfg.deliver_fragments)
    }

    /// As [`Endpoint::handle_landed`], with `lease`: the bytes lent by the memory itself
    /// ([`crate::LocalMemory::lend`]), asked for only when [`Endpoint::landed_lendable`]
    /// said so. The landing buffer stays in use, granted to no peer, until
    /// [`Endpoint::handle_returned`] brings its address back. A lease not asked for is taken
    /// as a copy would be.
    pub fn handle_lent(&mut self, now: Time, lease: Bytes) {
        let lent = self.landed_lendable();
        self.land(now, Ok(lease), lent);
    }

    /// A lease handed out by [`Endpoint::handle_lent`] was dropped: `addr` is its landing
    /// buffer's, from [`crate::LocalMemory::poll_returned`]. The buffer is free again for
    /// the next grant of its size class. An address lent by no one is ignored.
    pub fn handle_returned(&mut self, _now: Time, addr: u64) {
        self.landing.give_back(addr);
    }

    fn land(&mut self, now: Time, bytes: Result<Bytes, TransportError>, lent: bool) {
        let Some(landed) = self.landed.take() else {
            return;
        };
        let (conn, addr, len, key) = match landed {
            Landed::Frame {
                conn,
                addr,
                byte_len,
                lkey,
            } => (conn, addr, u64::from(byte_len), lkey),
            Landed::Fragment(t) => {
                let len = if self.cfg.deliver_fragments {
                    t.n
                } else {
                    t.message_len
                };
                (t.conn, t.buf.addr + t.offset, len, t.buf.lkey)
            }
        };
        if !self.conns.get(conn).is_some_and(|c| !c.state.is_ended()) {
            return;
        }
        let bytes = bytes.and_then(|b| {
            if b.len() as u64 == len {
                Ok(b)
            } else {
                Err(TransportError::BadAddress { addr, len, key })
            }
        });
        if let Ok(b) = &bytes {
            if lent {
                self.copies.lent_out += b.len() as u64;
            } else {
                self.copies.copied_out += b.len() as u64;
            }
        }
        match (bytes, landed) {
            (Err(source), _) => self.fail(conn, XrdmaError::Memory { conn, source }),
            (Ok(frame), Landed::Frame { .. }) => self.on_frame(now, conn, &frame),
            (Ok(data), Landed::Fragment(t)) => self.finish_fragment(t, Some(data), lent),
        }
        self.rearm(now, conn);
    }

    /// Set `conn`'s timer after progress at `now`: the ACK timeout of its oldest frame in
    /// flight; else, while it waits on its peer (for a grant, or to finish a close), an idle
    /// deadline `ack_timeout` from now, at which it probes the peer.
    ///
    /// An idle deadline already set is left where it is (moving it on every completion
    /// would push a timer-heap entry per completion): when it fires early,
    /// [`Endpoint::handle_timeout`] defers it to `ack_timeout` after the last progress.
    pub(super) fn rearm(&mut self, now: Time, conn: ConnId) {
        let c = &mut self.conns[conn];
        c.last_progress = now;
        let deadline = match c.inflight.front() {
            _ if c.state.is_ended() => None,
            Some(f) => Some(f.posted_at + self.cfg.ack_timeout),
            None if c.waits_on_peer() => self
                .timers
                .get(conn.slot())
                .or(Some(now + self.cfg.ack_timeout)),
            None => None,
        };
        self.timers.set(conn.slot(), deadline);
    }

    /// Fire every timer due at `now`. An expired ACK timer fails its connection. A connection
    /// that waited on its peer with nothing in flight for the ACK timeout probes it with an
    /// ACK (which the peer ignores, as a repeat): the NIC completes it, or, if the peer is
    /// gone, completes it in error and the connection fails. A completion lost is implied
    /// by the probe's, so a close waiting only for one finishes.
    pub fn handle_timeout(&mut self, now: Time) {
        self.expire_ack_delays(now);
        while let Some(slot) = self.timers.expire(now) {
            let Some(conn) = self.conns.id_at(slot) else {
                continue;
            };
            let c = &mut self.conns[conn];
            if let Some(f) = c.inflight.front() {
                let err = XrdmaError::AckTimeout {
                    conn,
                    seq: f.seq,
                    // The front's deadline is at or after its posting, and it expired.
                    waited: now - f.posted_at,
                };
                self.fail(conn, err);
            } else if c.waits_on_peer() {
                let quiet_until = c.last_progress + self.cfg.ack_timeout;
                if now < quiet_until {
                    // Progress since the deadline was set: not idle that long yet.
                    self.timers.set(conn.slot(), Some(quiet_until));
                    continue;
                }
                c.ack_due = true;
                c.ack_forced = true;
                self.queue_ack(conn);
                self.timers
                    .set(conn.slot(), Some(now + self.cfg.ack_timeout));
            }
        }
    }

    /// Finish a close when both FINs are through, everything sent was ACKed and the last
    /// ACK SEND has completed: the peer has nothing more to hear from this QP.
    pub(super) fn maybe_closed(&mut self, conn: ConnId) {
        let c = &mut self.conns[conn];
        let done = c.state.fins_done()
            && c.inflight.is_empty()
            && c.sq_outstanding == 0
            && !c.ack_due
            && c.landings.is_empty()
            && c.pending_rts.is_empty()
            && c.grants_out.is_empty();
        if !done {
            return;
        }
        c.state.on_closed();
        let qpn = c.setup.qpn;
        let buffers = (c.setup.send_ring, c.setup.recv_buffers);
        self.by_qp.remove(&qpn);
        self.timers.set(conn.slot(), None);
        self.events.push_back(Event::Closed { conn });
        self.reset_qp(qpn, conn, Some(buffers), true);
    }

    /// Fail `conn`: reclaim its buffers, fail every pending message, ask for a QP reset.
    pub(super) fn fail(&mut self, conn: ConnId, error: XrdmaError) {
        let c = &mut self.conns[conn];
        if !c.state.is_live() {
            return; // ended already; a connection being set up fails by `fail_setup`
        }
        c.state.on_failed();
        self.drop_unposted(conn);
        let c = &mut self.conns[conn];
        // In flight (each frame's own message and the messages it completes), then queued;
        // an RTS sent ahead names a queued message. Every message is failed once.
        let mut pending: Vec<MsgId> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut inflight: Vec<MsgId> = Vec::new();
        for f in c.inflight.drain(..) {
            inflight.extend(f.msg);
            inflight.extend(c.posted.drain(..f.completes as usize).map(|(id, _)| id));
        }
        c.posted.clear();
        c.in_place.clear();
        c.unannounced = 0;
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
        let freed = !landings.is_empty();
        for buf in landings {
            self.landing.free(buf);
        }
        self.waiting_memory.retain(|&w| w != conn);
        self.waiting_budget.retain(|&w| w != conn);
        if freed {
            // The landing budget those buffers held now admits the connections waiting for it.
            self.grant_waiting();
        }
        self.timers.set(conn.slot(), None);
        for msg in pending {
            self.events.push_back(Event::SendFailed {
                conn,
                msg,
                error: error.clone(),
            });
        }
        self.events
            .push_back(Event::ConnectionFailed { conn, error });
        let c = &self.conns[conn];
        let buffers = (c.setup.send_ring, c.setup.recv_buffers);
        self.reset_qp(qpn, conn, Some(buffers), false);
    }
}

/// The error for a completion whose bytes the driver did not hand in before its next input.
fn not_handed_in() -> TransportError {
    TransportError::Other {
        verb: "read_bytes",
        reason: "the landed bytes were not handed in (handle_landed)".into(),
    }
}
