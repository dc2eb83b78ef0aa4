//! The receive side of an endpoint: checking sequence numbers, taking frames out of the
//! receive buffers (coalesced eager messages, RTS, CTS, FIN), fragments into landing buffers,
//! and granting landing buffers within the memory registered and the landing budget.

use super::{Endpoint, Event, FragmentTail, Landed, Landing};
use crate::error::{ConnId, XrdmaError};
use crate::fragment::{FrameKind, Grant, MessageHeader, GRANT_LEN, HEADER_LEN, MAX_BATCH};
use crate::landing::class_of;
use crate::{Op, Seq, Time, MR_CHUNK_BYTES};
use bytes::Bytes;

impl Endpoint {
    /// Check `seq` is the next one expected on `conn` and advance; fails the connection and
    /// returns `false` otherwise.
    pub(super) fn accept_seq(&mut self, conn: ConnId, seq: Seq) -> bool {
        let c = &mut self.conns[conn];
        if seq != c.expected_rx_seq {
            let err = XrdmaError::OutOfSequence {
                conn,
                expected: c.expected_rx_seq,
                got: seq,
            };
            self.fail(conn, err);
            return false;
        }
        c.expected_rx_seq = seq.next();
        c.ack_due = true;
        c.rx_unacked += 1;
        c.pingpong = c.sent_since_rx;
        c.sent_since_rx = false;
        self.queue_ack(conn);
        true
    }

    pub(super) fn malformed(&mut self, conn: ConnId, reason: String) {
        self.fail(conn, XrdmaError::MalformedFragment { conn, reason });
    }

    /// A frame arrived, its sequence number accepted: `frame` holds its bytes, copied by the
    /// driver out of the receive buffer ([`Endpoint::handle_landed`]).
    ///
    /// Headers and control bodies are decoded from `frame`; an eager message is delivered as
    /// a slice of it (no copy: the messages of a coalesced frame share its one buffer).
    pub(super) fn on_frame(&mut self, now: Time, conn: ConnId, frame: &Bytes) {
        let byte_len = frame.len();
        let header = frame.get(..HEADER_LEN).and_then(MessageHeader::decode);
        let Some(h) = header else {
            self.malformed(conn, format!("a {byte_len}-byte frame has no valid header"));
            return;
        };
        if h.ack_req {
            self.conns[conn].ack_forced = true;
        }
        let body = &frame[HEADER_LEN..];
        let body_len = body.len();
        match h.kind {
            FrameKind::Eager => {
                // One or more messages back to back, each a header and its payload. The frame
                // is walked twice, checked whole (headers and lengths) before any message is
                // delivered, so a bad frame delivers nothing.
                if let Err(reason) = eager_records(frame, h, |_, _, _| ()) {
                    return self.malformed(conn, reason);
                }
                self.conns[conn].stats.fragments_received += 1;
                // The first walk checked the frame: this one cannot fail.
                let _ = eager_records(frame, h, |at, n, tag| {
                    self.conns[conn].stats.recv_bytes += n as u64;
                    self.deliver(conn, tag, n as u64, 0, frame.slice(at..at + n), true);
                });
            }
            FrameKind::Rts => {
                let n = h.message_len as usize;
                if n == 0 || n > MAX_BATCH || body_len != n * 8 {
                    let reason = format!(
                        "an RTS announcing {} messages in {body_len} bytes",
                        h.message_len,
                    );
                    self.malformed(conn, reason);
                    return;
                }
                let eager_limit = self.cfg.eager_limit;
                let c = &mut self.conns[conn];
                for chunk in body.chunks_exact(8) {
                    let (mut t, mut l) = ([0u8; 4], [0u8; 4]);
                    t.copy_from_slice(&chunk[..4]);
                    l.copy_from_slice(&chunk[4..]);
                    let len = u64::from(u32::from_be_bytes(l));
                    c.pending_rts.push_back((len, u32::from_be_bytes(t)));
                }
                if let Some(&(small, _)) = c.pending_rts.iter().find(|&&(l, _)| l <= eager_limit) {
                    let reason = format!("an RTS for {small} bytes, an eager size");
                    self.malformed(conn, reason);
                    return;
                }
                let max = self.cfg.max_message_size;
                if let Some(&(huge, _)) = c.pending_rts.iter().find(|&&(l, _)| l > max) {
                    let reason = format!("an RTS for {huge} bytes, above the {max}-byte maximum");
                    self.malformed(conn, reason);
                    return;
                }
                self.grant_pending(conn);
            }
            FrameKind::Cts => {
                let n = h.message_len as usize;
                if n == 0 || n > MAX_BATCH || body_len != n * GRANT_LEN {
                    let reason = format!("a CTS with {} grants in {body_len} bytes", h.message_len);
                    self.malformed(conn, reason);
                    return;
                }
                let c = &mut self.conns[conn];
                // Grants answer announced messages in order: each goes to the oldest queued
                // message still waiting for one.
                for chunk in body.chunks_exact(GRANT_LEN) {
                    let grant = Grant::decode(chunk);
                    let oldest = c.queue.iter_mut().find(|m| m.rts_sent && m.grant.is_none());
                    match (oldest, grant) {
                        (Some(m), Some(g)) if m.data.len() as u64 == g.len => {
                            m.grant = Some(g);
                            m.stamps.granted = Some(now);
                        }
                        (_, g) => {
                            let len = g.map_or(0, |g| g.len);
                            let reason = format!("a grant for {len} bytes matches no RTS");
                            self.malformed(conn, reason);
                            return;
                        }
                    }
                }
                self.wake_tx(conn);
            }
            FrameKind::Fin => {
                self.conns[conn].state.on_peer_fin();
                self.events.push_back(Event::PeerClosed { conn });
                self.wake_tx(conn);
            }
        }
        if let Some(acked) = h.ack {
            self.conns[conn].stats.acks_received += 1;
            self.on_ack_inner(now, conn, acked);
        }
    }

    /// A fragment of a large message landed (WRITE with immediate). Returns where its bytes
    /// are when the application is to get them now (the fragment when streaming, the whole
    /// message with its last fragment): the rest waits for [`Endpoint::handle_landed`].
    pub(super) fn on_fragment(
        &mut self,
        conn: ConnId,
        seq: Seq,
        byte_len: u32,
    ) -> Option<(u64, usize)> {
        if !self.accept_seq(conn, seq) {
            return None;
        }
        // A WRITE carries no header to ask with: fragments are ACKed at once.
        self.conns[conn].ack_forced = true;
        let streaming = self.cfg.deliver_fragments;
        let c = &mut self.conns[conn];
        let n = u64::from(byte_len);
        let Some(l) = c.landings.front_mut() else {
            let reason = format!("a {n}-byte WRITE with no granted landing buffer");
            self.malformed(conn, reason);
            return None;
        };
        if l.received + n > l.len {
            let reason = format!("fragments exceed the {}-byte message length", l.len);
            self.malformed(conn, reason);
            return None;
        }
        let offset = l.received;
        l.received += n;
        let done = l.received == l.len;
        let (buf, len, tag) = (l.buf, l.len, l.tag);
        if done {
            c.landings.pop_front();
        }
        let tail = FragmentTail {
            conn,
            buf,
            message_len: len,
            tag,
            offset: if streaming { offset } else { 0 },
            n,
            done,
        };
        if streaming || done {
            let want = if streaming { n } else { len };
            self.landed = Some(Landed::Fragment(tail));
            return Some((buf.addr + tail.offset, want as usize));
        }
        self.finish_fragment(tail, None, false);
        None
    }

    /// The rest of a landed fragment: deliver `data` (when the application gets bytes now),
    /// count it, and free a landing buffer that is full — or, when `data` is a lease on it
    /// (`lent`), keep it until the lease comes back ([`Endpoint::handle_returned`]).
    pub(super) fn finish_fragment(&mut self, t: FragmentTail, data: Option<Bytes>, lent: bool) {
        let conn = t.conn;
        if let Some(data) = data {
            self.deliver(conn, t.tag, t.message_len, t.offset, data, t.done);
        }
        let c = &mut self.conns[conn];
        c.stats.recv_bytes += t.n;
        c.stats.fragments_received += 1;
        if t.done {
            if lent {
                self.landing.lend(t.buf);
            } else {
                self.landing.free(t.buf);
            }
            // Either way it no longer counts against the landing budget.
            self.grant_waiting();
        }
    }

    /// Hand received bytes to the application: a whole message, or (streaming) one fragment.
    /// `last` marks the message's final bytes.
    pub(super) fn deliver(
        &mut self,
        conn: ConnId,
        tag: u32,
        message_len: u64,
        offset: u64,
        data: Bytes,
        last: bool,
    ) {
        let c = &mut self.conns[conn];
        if self.cfg.deliver_fragments {
            self.events.push_back(Event::Fragment {
                conn,
                tag,
                message_len,
                offset,
                data,
            });
        } else {
            self.events.push_back(Event::Message { conn, tag, data });
        }
        if last {
            c.stats.messages_received += 1;
        }
    }

    /// Grant landing buffers to `conn`'s pending RTSs, in order, while memory allows; ask the
    /// driver for more registered memory when it does not.
    pub(super) fn grant_pending(&mut self, conn: ConnId) {
        loop {
            let c = &self.conns[conn];
            if c.state.is_ended() {
                return;
            }
            let Some(&(len, tag)) = c.pending_rts.front() else {
                break;
            };
            // Receiver-side admission: grants wait while the landing buffers already granted
            // and this one would pass the budget (one is always allowed, so a message larger
            // than the budget still goes, alone). Freed buffers grant the waiters in turn.
            let in_use = self.landing.in_use_bytes() - self.landing.lent_bytes();
            if in_use > 0 && in_use + class_of(len) > self.cfg.landing_budget {
                let c = &mut self.conns[conn];
                if !c.budget_wait {
                    c.budget_wait = true;
                    self.waiting_budget.push_back(conn);
                }
                self.wake_tx(conn);
                return;
            }
            let Some(buf) = self.landing.alloc(len, &mut self.pool) else {
                if !self.waiting_memory.contains(&conn) {
                    self.waiting_memory.push(conn);
                }
                if !self.memory_requested {
                    self.memory_requested = true;
                    self.registrations.push_back(super::MemoryFor::Landing);
                    let len = class_of(len).max(MR_CHUNK_BYTES);
                    self.ops.push_back(Op::RegisterMemory { len });
                }
                return;
            };
            let c = &mut self.conns[conn];
            c.pending_rts.pop_front();
            c.landings.push_back(Landing {
                buf,
                len,
                tag,
                received: 0,
            });
            c.grants_out.push_back(Grant {
                addr: buf.addr,
                rkey: buf.rkey,
                len,
            });
        }
        self.wake_tx(conn);
    }

    /// Landing memory was freed: let the connections waiting for the budget try again, in
    /// turn (one that is still blocked goes to the back).
    pub(super) fn grant_waiting(&mut self) {
        for _ in 0..self.waiting_budget.len() {
            let Some(conn) = self.waiting_budget.pop_front() else {
                break;
            };
            self.conns[conn].budget_wait = false;
            self.grant_pending(conn);
        }
    }
}

/// Walk the messages of the eager frame `frame` whose first header is `first`: each
/// message's payload range `(offset, len)` within `frame` and its tag go to `each`, in order.
///
/// # Errors
/// What is malformed: a length past the frame's end, or an inner header that is not an
/// eager one without an ACK.
fn eager_records(
    frame: &[u8],
    first: MessageHeader,
    mut each: impl FnMut(usize, usize, u32),
) -> Result<(), String> {
    let (mut len, mut tag) = (first.message_len, first.tag);
    let mut at = HEADER_LEN;
    loop {
        let rest = (frame.len() - at) as u64;
        if len > rest {
            return Err(format!(
                "an eager message says {len} bytes and {rest} are left in its frame"
            ));
        }
        // `len` is at most `rest`, which fits the frame.
        let n = len as usize;
        each(at, n, tag);
        at += n;
        if at == frame.len() {
            return Ok(());
        }
        match frame
            .get(at..at + HEADER_LEN)
            .and_then(MessageHeader::decode)
        {
            Some(next) if next.kind == FrameKind::Eager && next.ack.is_none() => {
                (len, tag) = (next.message_len, next.tag);
                at += HEADER_LEN;
            }
            _ => return Err("a coalesced eager frame with a bad inner header".into()),
        }
    }
}
