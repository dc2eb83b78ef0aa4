//! The receive side of an endpoint: checking sequence numbers, taking frames out of the
//! receive buffers (coalesced eager messages, RTS, CTS, FIN), fragments into landing buffers,
//! and granting landing buffers within the memory registered and the landing budget.

use super::{Endpoint, Event, Landing};
use crate::error::{ConnId, XrdmaError};
use crate::fragment::{
    FrameKind, Grant, MessageHeader, CONTROL_BODY_MAX, GRANT_LEN, HEADER_LEN, MAX_BATCH,
};
use crate::landing::class_of;
use crate::{LocalMemory, Op, Seq, Time, TransportError, MR_CHUNK_BYTES};
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
        self.queue_ack(conn);
        true
    }

    pub(super) fn malformed(&mut self, conn: ConnId, reason: String) {
        self.fail(conn, XrdmaError::MalformedFragment { conn, reason });
    }

    /// Copy `out.len()` bytes at `addr` into `out`; on a memory error fail `conn` and return
    /// `false`.
    fn read_or_fail<M: LocalMemory + ?Sized>(
        &mut self,
        conn: ConnId,
        mem: &M,
        addr: u64,
        out: &mut [u8],
    ) -> bool {
        match mem.read_into(addr, out) {
            Ok(()) => true,
            Err(source) => {
                self.fail(conn, XrdmaError::Memory { conn, source });
                false
            }
        }
    }

    /// A frame arrived in the receive buffer at `addr`.
    ///
    /// Headers and control bodies are copied to the stack; an eager message's payload is
    /// copied once, from the receive buffer straight into the buffer it is delivered in.
    pub(super) fn on_frame<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        seq: Seq,
        addr: u64,
        byte_len: u32,
        mem: &M,
    ) {
        if !self.accept_seq(conn, seq) {
            return;
        }
        let mut head = [0u8; HEADER_LEN];
        let header = if (byte_len as usize) < HEADER_LEN {
            None
        } else {
            if !self.read_or_fail(conn, mem, addr, &mut head) {
                return;
            }
            MessageHeader::decode(&head)
        };
        let Some(h) = header else {
            self.malformed(conn, format!("a {byte_len}-byte frame has no valid header"));
            return;
        };
        let body_addr = addr + HEADER_LEN as u64;
        let body_len = byte_len as usize - HEADER_LEN;
        match h.kind {
            FrameKind::Eager => {
                // One or more messages back to back, each a header and its payload. The frame
                // is walked twice, checked whole (headers and lengths) before any message is
                // delivered, so a bad frame delivers nothing and a good one allocates only its
                // messages.
                let check = eager_records(
                    mem,
                    h.message_len,
                    body_addr,
                    body_len as u64,
                    |_, _| Ok(()),
                );
                match check {
                    Ok(()) => {}
                    Err(FrameError::Malformed(reason)) => return self.malformed(conn, reason),
                    Err(FrameError::Memory(source)) => {
                        return self.fail(conn, XrdmaError::Memory { conn, source })
                    }
                }
                self.conns[conn].stats.fragments_received += 1;
                let delivered =
                    eager_records(mem, h.message_len, body_addr, body_len as u64, |at, n| {
                        // `n` is at most the frame's length, a `u32`.
                        let data = mem.read_bytes(at, n as usize)?;
                        self.conns[conn].stats.recv_bytes += n;
                        self.deliver(conn, n, 0, data, true);
                        Ok(())
                    });
                // The first walk checked the frame; only the memory can fail here.
                if let Err(FrameError::Memory(source)) = delivered {
                    self.fail(conn, XrdmaError::Memory { conn, source });
                    return;
                }
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
                let mut control = [0u8; CONTROL_BODY_MAX];
                let body = &mut control[..body_len];
                if !self.read_or_fail(conn, mem, body_addr, body) {
                    return;
                }
                let eager_limit = self.cfg.eager_limit;
                let c = &mut self.conns[conn];
                for chunk in body.chunks_exact(8) {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(chunk);
                    c.pending_rts.push_back(u64::from_be_bytes(b));
                }
                if let Some(&small) = c.pending_rts.iter().find(|&&l| l <= eager_limit) {
                    let reason = format!("an RTS for {small} bytes, an eager size");
                    self.malformed(conn, reason);
                    return;
                }
                let max = self.cfg.max_message_size;
                if let Some(&huge) = c.pending_rts.iter().find(|&&l| l > max) {
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
                let mut control = [0u8; CONTROL_BODY_MAX];
                let body = &mut control[..body_len];
                if !self.read_or_fail(conn, mem, body_addr, body) {
                    return;
                }
                let c = &mut self.conns[conn];
                // Grants answer announced messages in order: each goes to the oldest queued
                // message still waiting for one.
                for chunk in body.chunks_exact(GRANT_LEN) {
                    let grant = Grant::decode(chunk);
                    let oldest = c.queue.iter_mut().find(|m| m.rts_sent && m.grant.is_none());
                    match (oldest, grant) {
                        (Some(m), Some(g)) if m.data.len() as u64 == g.len => m.grant = Some(g),
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

    /// A fragment of a large message landed (WRITE with immediate).
    pub(super) fn on_fragment<M: LocalMemory + ?Sized>(
        &mut self,
        conn: ConnId,
        seq: Seq,
        byte_len: u32,
        mem: &M,
    ) {
        if !self.accept_seq(conn, seq) {
            return;
        }
        let streaming = self.cfg.deliver_fragments;
        let c = &mut self.conns[conn];
        let n = u64::from(byte_len);
        let Some(l) = c.landings.front_mut() else {
            let reason = format!("a {n}-byte WRITE with no granted landing buffer");
            self.malformed(conn, reason);
            return;
        };
        if l.received + n > l.len {
            let reason = format!("fragments exceed the {}-byte message length", l.len);
            self.malformed(conn, reason);
            return;
        }
        let offset = l.received;
        l.received += n;
        let done = l.received == l.len;
        let (buf, len) = (l.buf, l.len);
        let range = if streaming {
            Some((buf.addr + offset, n))
        } else if done {
            Some((buf.addr, len))
        } else {
            None
        };
        if done {
            c.landings.pop_front();
        }
        if let Some((addr, n)) = range {
            let data = match mem.read_bytes(addr, n as usize) {
                Ok(b) => b,
                Err(source) => {
                    self.fail(conn, XrdmaError::Memory { conn, source });
                    return;
                }
            };
            let data_offset = if streaming { offset } else { 0 };
            self.deliver(conn, len, data_offset, data, done);
        }
        let c = &mut self.conns[conn];
        c.stats.recv_bytes += n;
        c.stats.fragments_received += 1;
        if done {
            self.landing.free(buf);
            self.grant_waiting();
        }
    }

    /// Hand received bytes to the application: a whole message, or (streaming) one fragment.
    /// `last` marks the message's final bytes.
    pub(super) fn deliver(
        &mut self,
        conn: ConnId,
        message_len: u64,
        offset: u64,
        data: Bytes,
        last: bool,
    ) {
        let c = &mut self.conns[conn];
        if self.cfg.deliver_fragments {
            self.events.push_back(Event::Fragment {
                conn,
                message_len,
                offset,
                data,
            });
        } else {
            self.events.push_back(Event::Message { conn, data });
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
            let Some(&len) = c.pending_rts.front() else {
                break;
            };
            // Receiver-side admission: grants wait while the landing buffers already granted
            // and this one would pass the budget (one is always allowed, so a message larger
            // than the budget still goes, alone). Freed buffers grant the waiters in turn.
            let in_use = self.landing.in_use_bytes();
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

/// Why an eager frame could not be walked.
enum FrameError {
    /// The frame is malformed: what is wrong with it.
    Malformed(String),
    /// Its bytes could not be read.
    Memory(TransportError),
}

/// Walk the messages of an eager frame whose first header says `first_len` bytes and whose
/// body (the bytes after that header) is `body_len` bytes at `body_addr`: each message's
/// payload range `(addr, len)` goes to `each`, in order. Inner headers are read from `mem`.
///
/// # Errors
/// [`FrameError::Malformed`]: a length past the frame's end, or an inner header that is not
/// an eager one without an ACK; [`FrameError::Memory`]: a read, or `each`, failed.
fn eager_records<M: LocalMemory + ?Sized>(
    mem: &M,
    first_len: u64,
    body_addr: u64,
    body_len: u64,
    mut each: impl FnMut(u64, u64) -> Result<(), TransportError>,
) -> Result<(), FrameError> {
    let mut len = first_len;
    let (mut at, mut rest) = (body_addr, body_len);
    loop {
        if len > rest {
            return Err(FrameError::Malformed(format!(
                "an eager message says {len} bytes and {rest} are left in its frame"
            )));
        }
        each(at, len).map_err(FrameError::Memory)?;
        at += len;
        rest -= len;
        if rest == 0 {
            return Ok(());
        }
        let mut head = [0u8; HEADER_LEN];
        let next = if rest < HEADER_LEN as u64 {
            None
        } else {
            mem.read_into(at, &mut head).map_err(FrameError::Memory)?;
            MessageHeader::decode(&head)
        };
        match next {
            Some(next) if next.kind == FrameKind::Eager && next.ack.is_none() => {
                len = next.message_len;
                at += HEADER_LEN as u64;
                rest -= HEADER_LEN as u64;
            }
            _ => {
                return Err(FrameError::Malformed(
                    "a coalesced eager frame with a bad inner header".into(),
                ))
            }
        }
    }
}
