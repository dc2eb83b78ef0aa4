//! The send side of an endpoint: which frame or fragment a connection posts next (grants,
//! announcements, coalesced eager messages, rendezvous WRITEs, the FIN), staged into the send
//! ring, within the window and the receive credits.

use super::wr_id;
use super::{
    ConnSetup, Connection, Endpoint, InflightFrame, Op, OutMessage, KIND_DATA, MAX_COALESCE,
    RTS_LOOKAHEAD,
};
use crate::error::{ConnId, XrdmaError};
use crate::fragment::{
    FrameKind, Grant, MessageHeader, CONTROL_BODY_MAX, GRANT_LEN, HEADER_LEN, MAX_BATCH,
};
use crate::{LocalMemory, MsgId, SendOpcode, SendWr, Seq, Sge, Time};

impl Endpoint {
    /// Produce `conn`'s next frame or fragment if window, credits, send queue and ring allow:
    /// a CTS first (it unblocks the peer), then the head message (eager frame, RTS, or the
    /// next fragment of a granted one), then a FIN once the queue is empty and closing.
    /// `Ok(None)` when blocked (the connection is re-queued when something frees).
    pub(super) fn next_send<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let eager_limit = self.cfg.eager_limit;
        let frag_size = self.cfg.fragment_size;
        let c = &self.conns[conn];
        if c.state.is_ended() {
            return Ok(None);
        }
        if !c.grants_out.is_empty() {
            // Every grant ready goes in one CTS, up to MAX_BATCH.
            let n = c.grants_out.len().min(MAX_BATCH);
            let mut body = [0u8; CONTROL_BODY_MAX];
            for (k, g) in c.grants_out.iter().take(n).enumerate() {
                body[k * GRANT_LEN..(k + 1) * GRANT_LEN].copy_from_slice(&g.encode());
            }
            let body = &body[..n * GRANT_LEN];
            let op = self.post_frame(now, conn, FrameKind::Cts, n as u64, body, None, mem)?;
            if op.is_some() {
                let c = &mut self.conns[conn];
                c.grants_out.drain(..n);
                c.stats.grants_sent += n as u64;
                c.stats.cts_frames += 1;
            }
            return Ok(op);
        }
        // Requests to send go out ahead of the data, so grants are back by the time the head
        // message's last fragment is posted (a message per round trip otherwise): one RTS
        // announces up to MAX_BATCH large messages not yet announced among the first
        // RTS_LOOKAHEAD queued ones. It goes when the head itself waits for one, when a full
        // batch has gathered (a streaming sender sends an RTS per MAX_BATCH messages), or when
        // the message right behind the head is unannounced and no announced one still waits
        // for its grant (so its grant is back while the head is on the wire, however few
        // messages the application keeps queued).
        // Each announced message: its tag (4 bytes) and length (4 bytes), big-endian.
        let mut body = [0u8; MAX_BATCH * 8];
        let mut announce = [0usize; MAX_BATCH];
        let mut n = 0;
        let mut awaiting_grant = false;
        // Nothing to announce (a stream of small messages): no look.
        let lookahead = if c.unannounced == 0 { 0 } else { RTS_LOOKAHEAD };
        for (i, m) in c.queue.iter().take(lookahead).enumerate() {
            let len = m.data.len() as u64;
            // Announced messages move toward the front (an urgent message put ahead of them
            // moves them back one), so one still waiting for a grant is almost always among
            // the first RTS_LOOKAHEAD; missed, an RTS merely goes out a little early.
            awaiting_grant |= m.rts_sent && m.grant.is_none();
            if len > eager_limit && !m.rts_sent && n < MAX_BATCH {
                body[n * 8..n * 8 + 4].copy_from_slice(&m.tag.to_be_bytes());
                body[n * 8 + 4..(n + 1) * 8].copy_from_slice(&(len as u32).to_be_bytes());
                announce[n] = i;
                n += 1;
            }
        }
        if n == MAX_BATCH || (n > 0 && (announce[0] == 0 || (announce[0] == 1 && !awaiting_grant)))
        {
            let first = c.queue[announce[0]].id;
            let body = &body[..n * 8];
            let op =
                self.post_frame(now, conn, FrameKind::Rts, n as u64, body, Some(first), mem)?;
            if op.is_some() {
                let c = &mut self.conns[conn];
                for &i in &announce[..n] {
                    c.queue[i].rts_sent = true;
                }
                c.unannounced -= n as u32;
                c.stats.rendezvous_messages += n as u64;
                c.stats.rts_frames += 1;
                return Ok(op);
            }
        }
        let c = &self.conns[conn];
        let Some(msg) = c.queue.front() else {
            if c.state.fin_due() && c.pending_rts.is_empty() {
                let op = self.post_frame(now, conn, FrameKind::Fin, 0, &[], None, mem)?;
                if op.is_some() {
                    self.conns[conn].state.on_fin_sent();
                }
                return Ok(op);
            }
            return Ok(None);
        };
        let total = msg.data.len() as u64;
        if total <= eager_limit {
            return self.post_eager(now, conn, 0, mem);
        }
        // Urgent small messages behind a large message in progress go out between its
        // fragments ([`Endpoint::send_urgent`]).
        let urgent_next = c
            .queue
            .get(1)
            .is_some_and(|m| m.urgent && m.data.len() as u64 <= eager_limit);
        let (in_progress, grant) = (msg.next_off > 0, msg.grant);
        if in_progress && urgent_next {
            if let Some(op) = self.post_eager(now, conn, 1, mem)? {
                return Ok(Some(op));
            }
        }
        let Some(grant) = grant else {
            return Ok(None); // its RTS is out (above); woken by the CTS
        };
        self.next_fragment(now, conn, grant, frag_size, mem)
    }

    /// Post the small messages from position `start` of `conn`'s queue as one eager frame:
    /// as many as fit one receive buffer ([`Config::recv_slot_bytes`]) and the window, up to
    /// [`MAX_COALESCE`], each a 16-byte header and its payload, back to back (XRDMA's
    /// batching of small messages: one SEND, one receive WR and one ACK for many). From
    /// position 1 (behind a large message in progress) only urgent messages go.
    pub(super) fn post_eager<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        start: usize,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let eager_limit = self.cfg.eager_limit;
        let room = self.cfg.recv_slot_bytes();
        let c = &self.conns[conn];
        let (mut n, mut wire, mut payload) = (0usize, 0u64, 0u64);
        for m in c.queue.range(start..).take(MAX_COALESCE) {
            let len = m.data.len() as u64;
            let w = wire + HEADER_LEN as u64 + len;
            let jumps = start > 0 && !m.urgent;
            if jumps || len > eager_limit || w > room || (n > 0 && !self.can_post(c, payload + len))
            {
                break;
            }
            n += 1;
            wire = w;
            payload += len;
        }
        if n == 0 || !self.can_post(c, payload) {
            return Ok(None);
        }
        // The frame asks for an immediate ACK when it leaves no room for the next queued
        // message (window, credits, send queue): this side then waits on that ACK.
        let ack_req = c.queue.get(start + n).is_some_and(|next| {
            let len = next.data.len() as u64;
            let next_payload = if len > eager_limit { 0 } else { len };
            !self.can_post_more(c, 1, payload, next_payload)
        });
        let c = &mut self.conns[conn];
        let Some(slot) = c.ring.alloc(wire) else {
            return Ok(None);
        };
        let local = c.setup.send_ring.addr + slot.offset;
        let ack = c.ack_due.then(|| c.expected_rx_seq.add(u32::MAX));
        // One gather of every record's header and payload: one range check per frame.
        let mut headers = [[0u8; HEADER_LEN]; MAX_COALESCE];
        for (h, (i, m)) in headers
            .iter_mut()
            .zip(c.queue.range(start..).take(n).enumerate())
        {
            *h = MessageHeader {
                kind: FrameKind::Eager,
                message_len: m.data.len() as u64,
                ack: if i == 0 { ack } else { None },
                tag: m.tag,
                ack_req: i == 0 && ack_req,
            }
            .encode();
        }
        let mut parts: [&[u8]; 2 * MAX_COALESCE] = [&[]; 2 * MAX_COALESCE];
        for (k, (h, m)) in headers
            .iter()
            .zip(c.queue.range(start..).take(n))
            .enumerate()
        {
            parts[2 * k] = h;
            parts[2 * k + 1] = &m.data;
        }
        let staged = mem.write(local, &parts[..2 * n]);
        if let Err(source) = staged {
            c.ring.free(slot.footprint);
            return Err(XrdmaError::Memory { conn, source });
        }
        self.copies.staged += wire;
        if ack.is_some() {
            c.ack_sent();
            c.stats.acks_piggybacked += 1;
        }
        // The frame completes exactly the messages it carries.
        let first = c.queue.get(start).map(|m| m.id);
        for m in c.queue.drain(start..start + n) {
            c.posted.push_back((m.id, m.stamps.posted(now)));
        }
        mark_head(&mut c.queue, now);
        c.sent_since_rx = true;
        c.stats.eager_messages += n as u64;
        c.stats.batched_frames += u64::from(n > 1);
        c.stats.send_bytes += payload;
        c.stats.fragments_sent += 1;
        let (seq, tag) =
            self.push_inflight(now, conn, slot.footprint, payload, n as u32, first, false);
        let c = &self.conns[conn];
        Ok(Some(frame_op(conn, &c.setup, local, wire, seq, tag)))
    }

    /// Whether `conn` may post one more signalled WR carrying `payload` bytes now.
    pub(super) fn can_post(&self, c: &Connection, payload: u64) -> bool {
        self.can_post_more(c, 0, 0, payload)
    }

    /// Whether `conn` could post one more WR carrying `payload` bytes once `frames` more
    /// frames of `bytes` payload bytes in all are booked beside what is in flight.
    pub(super) fn can_post_more(
        &self,
        c: &Connection,
        frames: usize,
        bytes: u64,
        payload: u64,
    ) -> bool {
        let max_frames = if self.cfg.receive_credits {
            (self.cfg.recv_depth / 2) as usize
        } else {
            usize::MAX
        };
        let in_flight = c.inflight_bytes + bytes;
        let window_full = in_flight > 0 && in_flight + payload > c.window.bytes();
        !window_full
            && c.inflight.len() + frames < max_frames
            && c.sq_outstanding as usize + frames < self.cfg.send_depth as usize
    }

    /// Stage and post one control frame (header, then `body`): a SEND with immediate into
    /// the peer's next receive buffer. `owner` is the message the frame belongs to (an RTS's
    /// first); its ACK completes no message (eager frames are [`Endpoint::post_eager`]'s).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn post_frame<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        kind: FrameKind,
        message_len: u64,
        body: &[u8],
        owner: Option<MsgId>,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let payload = if kind == FrameKind::Eager {
            body.len() as u64
        } else {
            0
        };
        if !self.can_post(&self.conns[conn], payload) {
            return Ok(None);
        }
        let c = &mut self.conns[conn];
        let wire = (HEADER_LEN + body.len()) as u64;
        let Some(slot) = c.ring.alloc(wire) else {
            return Ok(None);
        };
        let local = c.setup.send_ring.addr + slot.offset;
        let ack = c.ack_due.then(|| c.expected_rx_seq.add(u32::MAX));
        // Control frames are few, and each one's peer acts on it: ACKed at once.
        let header = MessageHeader {
            kind,
            message_len,
            ack,
            tag: 0,
            ack_req: true,
        };
        let staged = mem.write(local, &[&header.encode(), body]);
        if let Err(source) = staged {
            c.ring.free(slot.footprint);
            return Err(XrdmaError::Memory { conn, source });
        }
        self.copies.staged += (HEADER_LEN + body.len()) as u64;
        if ack.is_some() {
            c.ack_sent();
            c.stats.acks_piggybacked += 1;
        }
        let fin = kind == FrameKind::Fin;
        let (seq, tag) = self.push_inflight(now, conn, slot.footprint, payload, 0, owner, fin);
        let c = &self.conns[conn];
        Ok(Some(frame_op(conn, &c.setup, local, wire, seq, tag)))
    }

    /// Book a posted frame or fragment as in flight and return its sequence number and its
    /// send WR's tag.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_inflight(
        &mut self,
        now: Time,
        conn: ConnId,
        footprint: u64,
        payload_len: u64,
        completes: u32,
        msg: Option<MsgId>,
        fin: bool,
    ) -> (Seq, u32) {
        let c = &mut self.conns[conn];
        let seq = c.next_tx_seq;
        c.next_tx_seq = seq.next();
        if c.inflight.is_empty() {
            self.timers
                .set(conn.slot(), Some(now + self.cfg.ack_timeout));
        }
        c.inflight.push_back(InflightFrame {
            seq,
            footprint,
            payload_len,
            posted_at: now,
            completes,
            msg,
            fin,
        });
        c.inflight_bytes += payload_len;
        (seq, c.send_tag())
    }

    /// The next fragment of the granted head message: an RDMA WRITE with immediate into the
    /// landing buffer at the fragment's offset, never longer than the window.
    pub(super) fn next_fragment<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        grant: Grant,
        frag_size: u64,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let c = &self.conns[conn];
        let Some(msg) = c.queue.front() else {
            return Ok(None);
        };
        let total = msg.data.len() as u64;
        // A fragment never exceeds the window, so an ECN-shrunk window below the fragment size
        // still limits the bytes in flight.
        let len = (total - msg.next_off).min(frag_size).min(c.window.bytes());
        if !self.can_post(c, len) {
            return Ok(None);
        }
        let off = msg.next_off;
        let payload = msg.data.slice(off as usize..(off + len) as usize);
        // A message already in registered memory is posted from where it lies, kept alive
        // until the ACK; any other is staged into the ring.
        let (local, lkey, footprint, held) = match mem.registered_lkey(&payload) {
            Some(lkey) => {
                self.copies.in_place += len;
                (payload.as_ptr() as u64, lkey, 0, Some(payload))
            }
            None => {
                let c = &mut self.conns[conn];
                let Some(slot) = c.ring.alloc(len) else {
                    return Ok(None);
                };
                let local = c.setup.send_ring.addr + slot.offset;
                if let Err(source) = mem.write(local, &[&payload]) {
                    c.ring.free(slot.footprint);
                    return Err(XrdmaError::Memory { conn, source });
                }
                self.copies.staged += len;
                (local, c.setup.send_ring.lkey, slot.footprint, None)
            }
        };
        let c = &mut self.conns[conn];
        let Some(msg) = c.queue.front_mut() else {
            return Ok(None);
        };
        let id = msg.id;
        let stamps = msg.stamps.posted(now);
        let done = off + len >= total;
        msg.next_off += len;
        c.sent_since_rx = true;
        c.stats.send_bytes += len;
        c.stats.fragments_sent += 1;
        let (seq, tag) =
            self.push_inflight(now, conn, footprint, len, u32::from(done), Some(id), false);
        let c = &mut self.conns[conn];
        if let Some(bytes) = held {
            c.in_place.push_back((seq, bytes));
        }
        if done {
            c.posted.push_back((id, stamps));
            c.queue.pop_front();
            mark_head(&mut c.queue, now);
        }
        let wr = SendWr {
            wr_id: wr_id(conn, tag, KIND_DATA),
            opcode: SendOpcode::RdmaWriteWithImm,
            sge: Sge {
                addr: local,
                len: len as u32,
                lkey,
            },
            imm: seq.to_imm(),
            remote_addr: grant.addr + off,
            rkey: grant.rkey,
            signaled: false, // decided by the outbox (`signal`)
        };
        Ok(Some(Op::PostSend {
            qpn: c.setup.qpn,
            wr,
        }))
    }
}

/// Stamps the message now at the head of `queue` (if any, and not stamped yet) as at the
/// head since `now`.
fn mark_head(queue: &mut std::collections::VecDeque<OutMessage>, now: Time) {
    if let Some(m) = queue.front_mut() {
        m.stamps.head.get_or_insert(now);
    }
}

/// The SEND with immediate that carries a frame of `wire` bytes staged at `local` in `setup`'s
/// send ring, its sequence number in the immediate data, `tag` its send WR's tag.
fn frame_op(conn: ConnId, setup: &ConnSetup, local: u64, wire: u64, seq: Seq, tag: u32) -> Op {
    let wr = SendWr {
        wr_id: wr_id(conn, tag, KIND_DATA),
        opcode: SendOpcode::SendWithImm,
        sge: Sge {
            addr: local,
            len: wire as u32,
            lkey: setup.send_ring.lkey,
        },
        imm: seq.to_imm(),
        remote_addr: 0,
        rkey: 0,
        signaled: false, // decided by the outbox (`signal`)
    };
    Op::PostSend { qpn: setup.qpn, wr }
}
