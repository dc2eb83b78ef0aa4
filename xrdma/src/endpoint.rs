//! The endpoint: one run-to-completion worker's connections and their protocol state.
//!
//! ## Wire protocol
//! - Every frame is a SEND with immediate into a receive buffer the peer posted in advance
//!   (`recv_depth` buffers of [`crate::Config::recv_slot_bytes`] per connection), starting with
//!   a 16-byte [`MessageHeader`] (kind, length, and a cumulative ACK of the other direction
//!   when one is due). The immediate data is the frame's sequence number.
//! - **Small messages** (at most [`crate::Config::eager_limit`] bytes, 4 KiB by default) go
//!   eagerly: one `Eager` frame holds the header and the whole payload. Small messages queued
//!   together are coalesced: one frame carries as many header-and-payload records as fit one
//!   receive buffer (up to [`MAX_COALESCE`]), for one WR, one receive and one ACK.
//! - **Large messages** go by rendezvous: an `Rts` frame announces the lengths of up to
//!   [`MAX_BATCH`] queued large messages; the receiver takes a landing buffer of each
//!   message's size class from its pool ([`crate::landing`]) — registering more memory first
//!   if it must — and answers with a `Cts` frame carrying up to [`MAX_BATCH`] grants (address,
//!   rkey, length: [`Grant`]); the sender then RDMA WRITEs each payload straight into its
//!   buffer as fragments of at most the fragment size (64 KiB) and never more than the current
//!   send window, each a WRITE with immediate whose immediate data is its sequence number. The
//!   receiver delivers the message when its last byte has landed and puts the buffer back in
//!   the pool. Announcements and grants are answered in order, so they need no tag.
//! - Every frame and WRITE with immediate consumes one receive WR at the peer; the peer reposts
//!   it at once and answers with a cumulative ACK: carried in the header of its next frame when
//!   it has one ready in the same turn (request/response), else a zero-length SEND with
//!   immediate whose immediate data is the newest in-order sequence number received. ACKs are
//!   coalesced: one per connection per batch of completions.
//! - The sender keeps every frame's and fragment's staging buffer until the ACK covering it
//!   arrives, and only then frees it and reports the message sent. If the oldest one waits
//!   longer than the ACK timeout, the connection fails, its buffers are reclaimed and every
//!   pending message is failed with a typed error.
//! - Frames and fragments in flight per connection are capped by the send window (payload
//!   bytes), by half the receive depth (so data and ACKs together never find the peer's
//!   receive queue empty, which would cost an RNR NAK), and by the send queue depth.
//! - **Close**: [`Endpoint::close`] lets the queued messages go out, then sends a `Fin` frame;
//!   the peer reports [`Event::PeerClosed`], sends what it has queued and its own `Fin`. A side
//!   whose `Fin` is ACKed, which has the peer's `Fin`, and whose last ACK has completed reports
//!   [`Event::Closed`]; its buffers serve the next connection and its QP goes, reset, to the
//!   endpoint's [`QpCache`] ([`Op::ReleaseQp`]).
//!
//! ## Driving it (sans-IO)
//! Inputs: [`Endpoint::send`], [`Endpoint::close`], [`Endpoint::handle_completion`],
//! [`Endpoint::handle_congestion`], [`Endpoint::handle_timeout`],
//! [`Endpoint::handle_post_error`], [`Endpoint::add_memory`]. Outputs: [`Endpoint::poll_op`]
//! (work requests to post), [`Endpoint::poll_event`] (for the application),
//! [`Endpoint::poll_timeout`] (next deadline).

use crate::error::{ConnId, XrdmaError};
use crate::fragment::{
    FrameKind, Grant, MessageHeader, CONTROL_BODY_MAX, GRANT_LEN, HEADER_LEN, MAX_BATCH,
};
use crate::landing::{class_of, LandingPool};
use crate::mr_pool::{MrPool, Region};
use crate::qp_cache::QpCache;
use crate::ring::SendRing;
use crate::timer::TimerTable;
use crate::window::SendWindow;
use crate::{
    Config, ConfigError, LocalMemory, MemoryRegion, QpAddress, QpNum, RecvWr, SendOpcode, SendWr,
    Seq, Sge, Time, Transport, TransportError, WcOpcode, WcStatus, WorkCompletion, MR_CHUNK_BYTES,
};
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

pub use crate::event::{ConnSetup, ConnStats, Event, MsgId, Op};

struct OutMessage {
    id: MsgId,
    data: Bytes,
    next_off: u64,
    /// A large message whose RTS has gone out.
    rts_sent: bool,
    /// The landing buffer the receiver granted (large messages).
    grant: Option<Grant>,
}

struct InflightFrame {
    seq: Seq,
    footprint: u64,
    payload_len: u64,
    posted_at: Time,
    /// Set on a message's last frame or fragment: ACKing it completes the message.
    completes: Option<MsgId>,
    /// The message this belongs to (`None` for CTS and FIN frames).
    msg: Option<MsgId>,
    /// Further messages an eager frame completes, waiting in order in the connection's
    /// `batch_ids`.
    batch: u16,
    fin: bool,
}

/// A large message landing in a granted buffer.
struct Landing {
    buf: Region,
    len: u64,
    received: u64,
}

struct Connection {
    setup: ConnSetup,
    failed: bool,
    closed: bool,
    /// No more application messages are accepted; a FIN follows the queued ones.
    closing: bool,
    // Send side.
    ring: SendRing,
    next_tx_seq: Seq,
    queue: VecDeque<OutMessage>,
    inflight: VecDeque<InflightFrame>,
    inflight_bytes: u64,
    window: SendWindow,
    sq_outstanding: u32,
    in_tx_ready: bool,
    grants_out: VecDeque<Grant>,
    /// Messages of coalesced eager frames in flight after each frame's first, in order.
    batch_ids: VecDeque<MsgId>,
    fin_sent: bool,
    fin_acked: bool,
    // Receive side.
    expected_rx_seq: Seq,
    /// Lengths of RTSs not yet granted, oldest first.
    pending_rts: VecDeque<u64>,
    /// Granted landing buffers, in the order their messages arrive.
    landings: VecDeque<Landing>,
    fin_received: bool,
    ack_due: bool,
    in_ack_list: bool,
    stats: ConnStats,
}

impl Connection {
    fn has_tx_work(&self) -> bool {
        !self.grants_out.is_empty()
            || !self.queue.is_empty()
            || (self.closing && !self.fin_sent && self.pending_rts.is_empty())
    }
}

/// The most small messages one eager frame carries.
pub const MAX_COALESCE: usize = 64;

/// Queued messages (the head included) among which large ones may be announced by an RTS
/// before their turn.
const RTS_LOOKAHEAD: usize = 2 * MAX_BATCH;

const KIND_RECV: u64 = 1;
const KIND_DATA: u64 = 2;
const KIND_ACK: u64 = 3;

/// `wr_id` layout: connection in bits 32..64, receive slot in bits 8..32, kind in bits 0..8.
fn wr_id(conn: ConnId, slot: u32, kind: u64) -> u64 {
    (u64::from(conn) << 32) | (u64::from(slot & 0xFF_FFFF) << 8) | kind
}

fn split_wr_id(id: u64) -> (ConnId, u32, u64) {
    (
        (id >> 32) as ConnId,
        ((id >> 8) & 0xFF_FFFF) as u32,
        id & 0xFF,
    )
}

/// One worker's protocol state: its connections, timers, MR pool, landing buffers and QP
/// cache.
pub struct Endpoint {
    cfg: Config,
    conns: Vec<Connection>,
    by_qp: BTreeMap<QpNum, ConnId>,
    ops: VecDeque<Op>,
    events: VecDeque<Event>,
    tx_ready: VecDeque<ConnId>,
    ack_list: VecDeque<ConnId>,
    timers: TimerTable,
    next_msg: u64,
    pool: MrPool,
    landing: LandingPool,
    /// Connections with an RTS waiting for registered memory.
    waiting_memory: Vec<ConnId>,
    /// Connections with an RTS waiting for landing budget ([`Config::landing_budget`]).
    waiting_budget: VecDeque<ConnId>,
    memory_requested: bool,
    /// Staging rings and receive buffers of closed connections, for the next ones.
    spare_buffers: Vec<(Region, Region)>,
    qp_cache: QpCache,
}

impl Endpoint {
    /// A new endpoint.
    ///
    /// # Errors
    /// The first configuration field out of range.
    pub fn new(cfg: Config) -> Result<Self, ConfigError> {
        cfg.validate()?;
        Ok(Endpoint {
            cfg,
            conns: Vec::new(),
            by_qp: BTreeMap::new(),
            ops: VecDeque::new(),
            events: VecDeque::new(),
            tx_ready: VecDeque::new(),
            ack_list: VecDeque::new(),
            timers: TimerTable::new(),
            next_msg: 0,
            pool: MrPool::new(),
            landing: LandingPool::new(),
            waiting_memory: Vec::new(),
            waiting_budget: VecDeque::new(),
            memory_requested: false,
            spare_buffers: Vec::new(),
            qp_cache: QpCache::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The MR pool books (the driver registers chunks into it).
    pub fn mr_pool(&mut self) -> &mut MrPool {
        &mut self.pool
    }

    /// The landing buffers of large messages (books only; the memory is in the MR pool).
    pub fn landing_pool(&self) -> &LandingPool {
        &self.landing
    }

    /// The QP cache: QPs of this endpoint's closed connections, reset for reuse.
    pub fn qp_cache(&mut self) -> &mut QpCache {
        &mut self.qp_cache
    }

    /// The staging ring and receive buffers of a closed connection, if one is waiting for
    /// reuse (the driver uses them before carving new ones).
    pub fn take_spare_buffers(&mut self) -> Option<(Region, Region)> {
        self.spare_buffers.pop()
    }

    /// Number of connections ever added.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Add a connection whose QP is in RTS (or at least INIT: receives are posted first).
    /// Queues `recv_depth` receive WRs, one per receive buffer slot, for the driver to post.
    pub fn add_connection(&mut self, setup: ConnSetup) -> ConnId {
        let id = self.conns.len() as ConnId;
        let c = &self.cfg;
        self.conns.push(Connection {
            setup,
            failed: false,
            closed: false,
            closing: false,
            ring: SendRing::new(setup.send_ring.len),
            next_tx_seq: Seq(c.initial_seq),
            queue: VecDeque::new(),
            inflight: VecDeque::new(),
            inflight_bytes: 0,
            window: {
                let w = SendWindow::new(
                    c.initial_window,
                    c.min_window,
                    c.max_window,
                    c.alpha,
                    c.beta,
                    c.target_delay,
                );
                if c.adaptive_window {
                    w
                } else {
                    w.fixed()
                }
            },
            sq_outstanding: 0,
            in_tx_ready: false,
            grants_out: VecDeque::new(),
            batch_ids: VecDeque::new(),
            fin_sent: false,
            fin_acked: false,
            expected_rx_seq: Seq(c.initial_seq),
            pending_rts: VecDeque::new(),
            landings: VecDeque::new(),
            fin_received: false,
            ack_due: false,
            in_ack_list: false,
            stats: ConnStats {
                window: c.initial_window,
                ..ConnStats::default()
            },
        });
        self.by_qp.insert(setup.qpn, id);
        let slots = self.recv_slots(&setup);
        for slot in 0..slots {
            let op = self.recv_op(id, &setup, slot);
            self.ops.push_back(op);
        }
        id
    }

    /// Receive slots of a connection: `recv_depth`, or fewer when its buffers are shorter.
    fn recv_slots(&self, setup: &ConnSetup) -> u32 {
        let fit = setup.recv_buffers.len / self.cfg.recv_slot_bytes();
        fit.min(u64::from(self.cfg.recv_depth)) as u32
    }

    fn recv_op(&self, conn: ConnId, s: &ConnSetup, slot: u32) -> Op {
        let slot_len = self.cfg.recv_slot_bytes();
        Op::PostRecv {
            qpn: s.qpn,
            wr: RecvWr {
                wr_id: wr_id(conn, slot, KIND_RECV),
                sge: Sge {
                    addr: s.recv_buffers.addr + u64::from(slot) * slot_len,
                    len: slot_len as u32,
                    lkey: s.recv_buffers.lkey,
                },
            },
        }
    }

    /// The peer label given at setup.
    pub fn peer(&self, conn: ConnId) -> Option<u32> {
        self.conns.get(conn as usize).map(|c| c.setup.peer)
    }

    /// Whether `conn` is open: not failed and not fully closed.
    pub fn is_open(&self, conn: ConnId) -> bool {
        self.conns
            .get(conn as usize)
            .is_some_and(|c| !c.failed && !c.closed)
    }

    /// Counters of one connection.
    pub fn stats(&self, conn: ConnId) -> Option<ConnStats> {
        self.conns.get(conn as usize).map(|c| {
            let mut s = c.stats;
            s.window = c.window.bytes();
            s.window_decreases = c.window.decreases();
            s.srtt_ps = c.window.srtt().map_or(0, Time::as_ps);
            s.min_rtt_ps = c.window.min_rtt().map_or(0, Time::as_ps);
            s
        })
    }

    /// Queue a message on `conn`. It is sent eagerly or by rendezvous, fragmented and posted
    /// as the window allows; the application hears [`Event::Sent`] once all of it is ACKed.
    ///
    /// # Errors
    /// [`XrdmaError::UnknownConnection`], [`XrdmaError::ConnectionFailed`],
    /// [`XrdmaError::ConnectionClosed`].
    pub fn send(&mut self, _now: Time, conn: ConnId, data: Bytes) -> Result<MsgId, XrdmaError> {
        let c = self
            .conns
            .get_mut(conn as usize)
            .ok_or(XrdmaError::UnknownConnection(conn))?;
        if c.failed {
            return Err(XrdmaError::ConnectionFailed { conn });
        }
        if c.closing || c.closed {
            return Err(XrdmaError::ConnectionClosed { conn });
        }
        let id = MsgId(self.next_msg);
        self.next_msg += 1;
        c.queue.push_back(OutMessage {
            id,
            data,
            next_off: 0,
            rts_sent: false,
            grant: None,
        });
        self.wake_tx(conn);
        Ok(id)
    }

    /// Close `conn` gracefully: messages already queued still go out; then a FIN. The
    /// application hears [`Event::Closed`] once both sides have closed and everything was
    /// ACKed. Closing a closing connection does nothing.
    ///
    /// # Errors
    /// [`XrdmaError::UnknownConnection`], [`XrdmaError::ConnectionFailed`].
    pub fn close(&mut self, conn: ConnId) -> Result<(), XrdmaError> {
        let c = self
            .conns
            .get_mut(conn as usize)
            .ok_or(XrdmaError::UnknownConnection(conn))?;
        if c.failed {
            return Err(XrdmaError::ConnectionFailed { conn });
        }
        if !c.closing {
            c.closing = true;
            self.wake_tx(conn);
        }
        Ok(())
    }

    /// Bytes queued on `conn` and not yet posted (for applications that feed lazily).
    pub fn queued_bytes(&self, conn: ConnId) -> u64 {
        self.conns.get(conn as usize).map_or(0, |c| {
            c.queue
                .iter()
                .map(|m| m.data.len() as u64 - m.next_off)
                .sum()
        })
    }

    /// Registered memory the driver obtained for an [`Op::RegisterMemory`]: landing buffers
    /// waiting for it are granted now.
    pub fn add_memory(&mut self, mr: MemoryRegion) {
        self.pool.add_chunk(mr);
        self.memory_requested = false;
        let waiting = std::mem::take(&mut self.waiting_memory);
        for conn in waiting {
            self.grant_pending(conn);
        }
    }

    /// Reset `qpn` (a cleanly closed connection's QP) through `t` and keep it in the QP cache
    /// for the next connection with the same capacities: what a driver does with
    /// [`Op::ReleaseQp`].
    ///
    /// # Errors
    /// The transport's error from `reset_qp` (the QP is then not cached).
    pub fn release_qp<T: Transport + ?Sized>(
        &mut self,
        t: &mut T,
        qpn: QpNum,
    ) -> Result<QpAddress, TransportError> {
        let caps = crate::driver::qp_caps(&self.cfg);
        self.qp_cache.put(t, qpn, caps)
    }

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

    /// The transport reported a congestion notification (CNP) for `qpn` at `now`.
    pub fn handle_congestion(&mut self, now: Time, qpn: QpNum) {
        let Some(&conn) = self.by_qp.get(&qpn) else {
            return;
        };
        let c = &mut self.conns[conn as usize];
        c.stats.ecn_echoes += 1;
        c.window.on_congestion(now);
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

    /// The transport refused `op`: its connection fails (for a refused registration, every
    /// connection waiting for landing memory fails).
    pub fn handle_post_error(&mut self, op: &Op, error: TransportError) {
        let qpn = match op {
            Op::PostSend { qpn, .. }
            | Op::PostRecv { qpn, .. }
            | Op::ResetQp { qpn }
            | Op::ReleaseQp { qpn } => *qpn,
            Op::RegisterMemory { .. } => {
                self.memory_requested = false;
                for conn in std::mem::take(&mut self.waiting_memory) {
                    let source = error.clone();
                    self.fail(conn, XrdmaError::Memory { conn, source });
                }
                return;
            }
        };
        if let Some(&conn) = self.by_qp.get(&qpn) {
            self.fail(
                conn,
                XrdmaError::Post {
                    conn,
                    source: error,
                },
            );
        }
    }

    /// The earliest deadline the driver must call [`Endpoint::handle_timeout`] at.
    pub fn poll_timeout(&mut self) -> Option<Time> {
        self.timers.earliest()
    }

    /// Whether events are waiting for [`Endpoint::poll_event`].
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next work request to post. Frames and fragments are staged into the send ring
    /// through `mem` as they are produced. Connections with data take turns, one each.
    pub fn poll_op<M: LocalMemory + ?Sized>(&mut self, now: Time, mem: &mut M) -> Option<Op> {
        if let Some(op) = self.ops.pop_front() {
            return Some(op);
        }
        while let Some(&conn) = self.tx_ready.front() {
            match self.next_send(now, conn, mem) {
                Ok(Some(op)) => {
                    self.tx_ready.pop_front();
                    let c = &mut self.conns[conn as usize];
                    if c.has_tx_work() {
                        self.tx_ready.push_back(conn);
                    } else {
                        c.in_tx_ready = false;
                    }
                    return Some(op);
                }
                Ok(None) => {
                    self.tx_ready.pop_front();
                    self.conns[conn as usize].in_tx_ready = false;
                }
                Err(e) => {
                    self.tx_ready.pop_front();
                    self.conns[conn as usize].in_tx_ready = false;
                    self.fail(conn, e);
                    return self.ops.pop_front();
                }
            }
        }
        // Separate ACK SENDs last: a connection that just posted a frame has carried its ACK
        // on it.
        while let Some(conn) = self.ack_list.pop_front() {
            let c = &mut self.conns[conn as usize];
            c.in_ack_list = false;
            if c.failed || c.closed || !c.ack_due {
                continue;
            }
            if c.sq_outstanding >= self.cfg.send_depth {
                continue; // re-queued when a send completes
            }
            c.ack_due = false;
            c.sq_outstanding += 1;
            c.stats.acks_sent += 1;
            let s = &c.setup;
            let wr = SendWr {
                wr_id: wr_id(conn, 0, KIND_ACK),
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

    /// Produce `conn`'s next frame or fragment if window, credits, send queue and ring allow:
    /// a CTS first (it unblocks the peer), then the head message (eager frame, RTS, or the
    /// next fragment of a granted one), then a FIN once the queue is empty and closing.
    /// `Ok(None)` when blocked (the connection is re-queued when something frees).
    fn next_send<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let eager_limit = self.cfg.eager_limit;
        let frag_size = self.cfg.fragment_size;
        let c = &self.conns[conn as usize];
        if c.failed || c.closed {
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
            let op =
                self.post_frame(now, conn, FrameKind::Cts, n as u64, body, None, false, mem)?;
            if op.is_some() {
                let c = &mut self.conns[conn as usize];
                c.grants_out.drain(..n);
                c.stats.grants_sent += n as u64;
                c.stats.cts_frames += 1;
            }
            return Ok(op);
        }
        // Requests to send go out ahead of the data, so grants are back by the time the head
        // message's last fragment is posted (a message per round trip otherwise): one RTS
        // announces up to MAX_BATCH large messages not yet announced among the first
        // RTS_LOOKAHEAD queued ones. It goes when the head itself waits for one, or when a
        // full batch has gathered, so a streaming sender sends an RTS per MAX_BATCH messages.
        let mut body = [0u8; MAX_BATCH * 8];
        let mut announce = [0usize; MAX_BATCH];
        let mut n = 0;
        for (i, m) in c.queue.iter().take(RTS_LOOKAHEAD).enumerate() {
            let len = m.data.len() as u64;
            if len > eager_limit && !m.rts_sent {
                body[n * 8..(n + 1) * 8].copy_from_slice(&len.to_be_bytes());
                announce[n] = i;
                n += 1;
                if n == MAX_BATCH {
                    break;
                }
            }
        }
        if n == MAX_BATCH || (n > 0 && announce[0] == 0) {
            let first = c.queue[announce[0]].id;
            let body = &body[..n * 8];
            let op = self.post_frame(
                now,
                conn,
                FrameKind::Rts,
                n as u64,
                body,
                Some(first),
                false,
                mem,
            )?;
            if op.is_some() {
                let c = &mut self.conns[conn as usize];
                for &i in &announce[..n] {
                    c.queue[i].rts_sent = true;
                }
                c.stats.rendezvous_messages += n as u64;
                c.stats.rts_frames += 1;
                return Ok(op);
            }
        }
        let c = &self.conns[conn as usize];
        let Some(msg) = c.queue.front() else {
            if c.closing && !c.fin_sent && c.pending_rts.is_empty() {
                let op = self.post_frame(now, conn, FrameKind::Fin, 0, &[], None, false, mem)?;
                if op.is_some() {
                    self.conns[conn as usize].fin_sent = true;
                }
                return Ok(op);
            }
            return Ok(None);
        };
        let total = msg.data.len() as u64;
        if total <= eager_limit {
            return self.post_eager(now, conn, mem);
        }
        let Some(grant) = msg.grant else {
            return Ok(None); // its RTS is out (above); woken by the CTS
        };
        self.next_fragment(now, conn, grant, frag_size, mem)
    }

    /// Post the small messages at the head of `conn`'s queue as one eager frame: as many as
    /// fit one receive buffer ([`Config::recv_slot_bytes`]) and the window, up to
    /// [`MAX_COALESCE`], each a 16-byte header and its payload, back to back (XRDMA's
    /// batching of small messages: one SEND, one receive WR and one ACK for many).
    fn post_eager<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let eager_limit = self.cfg.eager_limit;
        let room = self.cfg.recv_slot_bytes();
        let c = &self.conns[conn as usize];
        let (mut n, mut wire, mut payload) = (0usize, 0u64, 0u64);
        for m in c.queue.iter().take(MAX_COALESCE) {
            let len = m.data.len() as u64;
            let w = wire + HEADER_LEN as u64 + len;
            if len > eager_limit || w > room || (n > 0 && !self.can_post(c, payload + len)) {
                break;
            }
            n += 1;
            wire = w;
            payload += len;
        }
        if n == 0 || !self.can_post(c, payload) {
            return Ok(None);
        }
        let c = &mut self.conns[conn as usize];
        let Some(slot) = c.ring.alloc(wire) else {
            return Ok(None);
        };
        let local = c.setup.send_ring.addr + slot.offset;
        let ack = c.ack_due.then(|| c.expected_rx_seq.add(u32::MAX));
        let mut at = local;
        let mut staged = Ok(());
        for (i, m) in c.queue.iter().take(n).enumerate() {
            let header = MessageHeader {
                kind: FrameKind::Eager,
                message_len: m.data.len() as u64,
                ack: if i == 0 { ack } else { None },
            };
            staged = staged
                .and_then(|()| mem.write(at, &header.encode()))
                .and_then(|()| mem.write(at + HEADER_LEN as u64, &m.data));
            at += HEADER_LEN as u64 + m.data.len() as u64;
        }
        if let Err(source) = staged {
            c.ring.free(slot.footprint);
            return Err(XrdmaError::Memory { conn, source });
        }
        if ack.is_some() {
            c.ack_due = false;
            c.stats.acks_piggybacked += 1;
        }
        let first = c.queue.front().map(|m| m.id);
        for _ in 0..n {
            if let Some(m) = c.queue.pop_front() {
                c.batch_ids.push_back(m.id);
            }
        }
        // The first message rides in `completes`; the rest wait in `batch_ids`.
        c.batch_ids.pop_front();
        c.stats.eager_messages += n as u64;
        c.stats.send_bytes += payload;
        c.stats.fragments_sent += 1;
        let seq = self.push_inflight(now, conn, slot.footprint, payload, first, first, false);
        let c = &mut self.conns[conn as usize];
        if let Some(f) = c.inflight.back_mut() {
            f.batch = (n - 1) as u16;
        }
        let wr = SendWr {
            wr_id: wr_id(conn, 0, KIND_DATA),
            opcode: SendOpcode::SendWithImm,
            sge: Sge {
                addr: local,
                len: wire as u32,
                lkey: c.setup.send_ring.lkey,
            },
            imm: seq.to_imm(),
            remote_addr: 0,
            rkey: 0,
            signaled: true,
        };
        Ok(Some(Op::PostSend {
            qpn: c.setup.qpn,
            wr,
        }))
    }

    /// Whether `conn` may post one more signalled WR carrying `payload` bytes now.
    fn can_post(&self, c: &Connection, payload: u64) -> bool {
        let max_frames = (self.cfg.recv_depth / 2) as usize;
        let window_full = c.inflight_bytes > 0 && c.inflight_bytes + payload > c.window.bytes();
        !window_full && c.inflight.len() < max_frames && c.sq_outstanding < self.cfg.send_depth
    }

    /// Stage and post one frame (header, then `body`): a SEND with immediate into the peer's
    /// next receive buffer. `owner` is the message the frame belongs to (eager, RTS);
    /// `completes` says its ACK completes that message (eager).
    #[allow(clippy::too_many_arguments)]
    fn post_frame<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        kind: FrameKind,
        message_len: u64,
        body: &[u8],
        owner: Option<MsgId>,
        completes: bool,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let payload = if kind == FrameKind::Eager {
            body.len() as u64
        } else {
            0
        };
        if !self.can_post(&self.conns[conn as usize], payload) {
            return Ok(None);
        }
        let c = &mut self.conns[conn as usize];
        let wire = (HEADER_LEN + body.len()) as u64;
        let Some(slot) = c.ring.alloc(wire) else {
            return Ok(None);
        };
        let local = c.setup.send_ring.addr + slot.offset;
        let ack = c.ack_due.then(|| c.expected_rx_seq.add(u32::MAX));
        let header = MessageHeader {
            kind,
            message_len,
            ack,
        };
        let staged = mem
            .write(local, &header.encode())
            .and_then(|()| mem.write(local + HEADER_LEN as u64, body));
        if let Err(source) = staged {
            c.ring.free(slot.footprint);
            return Err(XrdmaError::Memory { conn, source });
        }
        if ack.is_some() {
            c.ack_due = false;
            c.stats.acks_piggybacked += 1;
        }
        let fin = kind == FrameKind::Fin;
        let done = if completes { owner } else { None };
        let seq = self.push_inflight(now, conn, slot.footprint, payload, done, owner, fin);
        let c = &self.conns[conn as usize];
        let wr = SendWr {
            wr_id: wr_id(conn, 0, KIND_DATA),
            opcode: SendOpcode::SendWithImm,
            sge: Sge {
                addr: local,
                len: wire as u32,
                lkey: c.setup.send_ring.lkey,
            },
            imm: seq.to_imm(),
            remote_addr: 0,
            rkey: 0,
            signaled: true,
        };
        Ok(Some(Op::PostSend {
            qpn: c.setup.qpn,
            wr,
        }))
    }

    /// Book a posted frame or fragment as in flight and return its sequence number.
    #[allow(clippy::too_many_arguments)]
    fn push_inflight(
        &mut self,
        now: Time,
        conn: ConnId,
        footprint: u64,
        payload_len: u64,
        completes: Option<MsgId>,
        msg: Option<MsgId>,
        fin: bool,
    ) -> Seq {
        let c = &mut self.conns[conn as usize];
        let seq = c.next_tx_seq;
        c.next_tx_seq = seq.next();
        if c.inflight.is_empty() {
            self.timers.set(conn, Some(now + self.cfg.ack_timeout));
        }
        c.inflight.push_back(InflightFrame {
            seq,
            footprint,
            payload_len,
            posted_at: now,
            completes,
            msg,
            batch: 0,
            fin,
        });
        c.inflight_bytes += payload_len;
        c.sq_outstanding += 1;
        seq
    }

    /// The next fragment of the granted head message: an RDMA WRITE with immediate into the
    /// landing buffer at the fragment's offset, never longer than the window.
    fn next_fragment<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        grant: Grant,
        frag_size: u64,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let c = &self.conns[conn as usize];
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
        let c = &mut self.conns[conn as usize];
        let Some(slot) = c.ring.alloc(len) else {
            return Ok(None);
        };
        let Some(msg) = c.queue.front_mut() else {
            return Ok(None);
        };
        let local = c.setup.send_ring.addr + slot.offset;
        let off = msg.next_off;
        let payload = msg.data.slice(off as usize..(off + len) as usize);
        if let Err(source) = mem.write(local, &payload) {
            c.ring.free(slot.footprint);
            return Err(XrdmaError::Memory { conn, source });
        }
        let id = msg.id;
        let done = off + len >= total;
        msg.next_off += len;
        c.stats.send_bytes += len;
        c.stats.fragments_sent += 1;
        let seq = self.push_inflight(
            now,
            conn,
            slot.footprint,
            len,
            done.then_some(id),
            Some(id),
            false,
        );
        let c = &mut self.conns[conn as usize];
        if done {
            c.queue.pop_front();
        }
        let wr = SendWr {
            wr_id: wr_id(conn, 0, KIND_DATA),
            opcode: SendOpcode::RdmaWriteWithImm,
            sge: Sge {
                addr: local,
                len: len as u32,
                lkey: c.setup.send_ring.lkey,
            },
            imm: seq.to_imm(),
            remote_addr: grant.addr + off,
            rkey: grant.rkey,
            signaled: true,
        };
        Ok(Some(Op::PostSend {
            qpn: c.setup.qpn,
            wr,
        }))
    }

    /// Check `seq` is the next one expected on `conn` and advance; fails the connection and
    /// returns `false` otherwise.
    fn accept_seq(&mut self, conn: ConnId, seq: Seq) -> bool {
        let c = &mut self.conns[conn as usize];
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

    fn malformed(&mut self, conn: ConnId, reason: String) {
        self.fail(conn, XrdmaError::MalformedFragment { conn, reason });
    }

    /// A frame arrived in the receive buffer at `addr`.
    fn on_frame<M: LocalMemory + ?Sized>(
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
        let bytes = match mem.read(addr, byte_len as usize) {
            Ok(b) => b,
            Err(source) => {
                self.fail(conn, XrdmaError::Memory { conn, source });
                return;
            }
        };
        let Some(h) = MessageHeader::decode(bytes) else {
            self.malformed(conn, format!("a {byte_len}-byte frame has no valid header"));
            return;
        };
        let body = &bytes[HEADER_LEN..];
        match h.kind {
            FrameKind::Eager => {
                // One or more messages back to back, each a header and its payload.
                let mut len = h.message_len;
                let mut rest = body;
                let mut records = Vec::new();
                loop {
                    let Some(data) = usize::try_from(len).ok().and_then(|l| rest.get(..l)) else {
                        let reason = format!(
                            "an eager message says {len} bytes and {} are left in its frame",
                            rest.len()
                        );
                        self.malformed(conn, reason);
                        return;
                    };
                    records.push(Bytes::copy_from_slice(data));
                    rest = &rest[data.len()..];
                    if rest.is_empty() {
                        break;
                    }
                    match MessageHeader::decode(rest) {
                        Some(next) if next.kind == FrameKind::Eager && next.ack.is_none() => {
                            len = next.message_len;
                            rest = &rest[HEADER_LEN..];
                        }
                        _ => {
                            let reason = "a coalesced eager frame with a bad inner header";
                            self.malformed(conn, reason.into());
                            return;
                        }
                    }
                }
                let c = &mut self.conns[conn as usize];
                c.stats.fragments_received += 1;
                for data in records {
                    let n = data.len() as u64;
                    self.conns[conn as usize].stats.recv_bytes += n;
                    self.deliver(conn, n, 0, data, true);
                }
            }
            FrameKind::Rts => {
                let n = h.message_len as usize;
                if n == 0 || n > MAX_BATCH || body.len() != n * 8 {
                    let reason = format!(
                        "an RTS announcing {} messages in {} bytes",
                        h.message_len,
                        body.len()
                    );
                    self.malformed(conn, reason);
                    return;
                }
                let eager_limit = self.cfg.eager_limit;
                let c = &mut self.conns[conn as usize];
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
                self.grant_pending(conn);
            }
            FrameKind::Cts => {
                let n = h.message_len as usize;
                if n == 0 || n > MAX_BATCH || body.len() != n * GRANT_LEN {
                    let reason = format!(
                        "a CTS with {} grants in {} bytes",
                        h.message_len,
                        body.len()
                    );
                    self.malformed(conn, reason);
                    return;
                }
                let c = &mut self.conns[conn as usize];
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
                let c = &mut self.conns[conn as usize];
                c.fin_received = true;
                self.events.push_back(Event::PeerClosed { conn });
                if !c.closing {
                    c.closing = true;
                }
                self.wake_tx(conn);
            }
        }
        if let Some(acked) = h.ack {
            self.conns[conn as usize].stats.acks_received += 1;
            self.on_ack_inner(now, conn, acked);
        }
    }

    /// A fragment of a large message landed (WRITE with immediate).
    fn on_fragment<M: LocalMemory + ?Sized>(
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
        let c = &mut self.conns[conn as usize];
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
            let data = match mem.read(addr, n as usize) {
                Ok(b) => Bytes::copy_from_slice(b),
                Err(source) => {
                    self.fail(conn, XrdmaError::Memory { conn, source });
                    return;
                }
            };
            let data_offset = if streaming { offset } else { 0 };
            self.deliver(conn, len, data_offset, data, done);
        }
        let c = &mut self.conns[conn as usize];
        c.stats.recv_bytes += n;
        c.stats.fragments_received += 1;
        if done {
            self.landing.free(buf);
            self.grant_waiting();
        }
    }

    /// Hand received bytes to the application: a whole message, or (streaming) one fragment.
    /// `last` marks the message's final bytes.
    fn deliver(&mut self, conn: ConnId, message_len: u64, offset: u64, data: Bytes, last: bool) {
        let c = &mut self.conns[conn as usize];
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
    fn grant_pending(&mut self, conn: ConnId) {
        loop {
            let c = &self.conns[conn as usize];
            if c.failed || c.closed {
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
                if !self.waiting_budget.contains(&conn) {
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
                    let len = class_of(len).max(MR_CHUNK_BYTES);
                    self.ops.push_back(Op::RegisterMemory { len });
                }
                return;
            };
            let c = &mut self.conns[conn as usize];
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
    fn grant_waiting(&mut self) {
        for _ in 0..self.waiting_budget.len() {
            let Some(conn) = self.waiting_budget.pop_front() else {
                break;
            };
            self.grant_pending(conn);
        }
    }

    fn on_ack(&mut self, now: Time, conn: ConnId, acked: Seq) {
        self.conns[conn as usize].stats.acks_received += 1;
        self.on_ack_inner(now, conn, acked);
    }

    fn on_ack_inner(&mut self, now: Time, conn: ConnId, acked: Seq) {
        let c = &mut self.conns[conn as usize];
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
                newest = Some(f.posted_at);
            }
            if let Some(msg) = f.completes {
                c.stats.messages_sent += 1;
                self.events.push_back(Event::Sent { conn, msg });
            }
            for _ in 0..f.batch {
                if let Some(msg) = c.batch_ids.pop_front() {
                    c.stats.messages_sent += 1;
                    self.events.push_back(Event::Sent { conn, msg });
                }
            }
            if f.fin {
                c.fin_acked = true;
            }
            c.inflight.pop_front();
        }
        if let Some(posted) = newest {
            c.window.on_ack(acked_bytes, now.saturating_sub(posted));
        }
        let deadline = c
            .inflight
            .front()
            .map(|f| f.posted_at + self.cfg.ack_timeout);
        self.timers.set(conn, deadline);
        self.wake_tx(conn);
        self.maybe_closed(conn);
    }

    fn wake_tx(&mut self, conn: ConnId) {
        let c = &mut self.conns[conn as usize];
        if !c.in_tx_ready && !c.failed && !c.closed && c.has_tx_work() {
            c.in_tx_ready = true;
            self.tx_ready.push_back(conn);
        }
    }

    fn queue_ack(&mut self, conn: ConnId) {
        let c = &mut self.conns[conn as usize];
        if !c.in_ack_list {
            c.in_ack_list = true;
            self.ack_list.push_back(conn);
        }
    }

    /// Finish a close when both FINs are through, everything sent was ACKed and the last
    /// ACK SEND has completed: the peer has nothing more to hear from this QP.
    fn maybe_closed(&mut self, conn: ConnId) {
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
    fn fail(&mut self, conn: ConnId, error: XrdmaError) {
        let c = &mut self.conns[conn as usize];
        if c.failed || c.closed {
            return;
        }
        c.failed = true;
        // In flight (each frame's message, then the rest of coalesced eager frames), then
        // queued; an RTS sent ahead names a queued message. Every message is failed once.
        let mut pending: Vec<MsgId> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let inflight: Vec<MsgId> = c.inflight.drain(..).filter_map(|f| f.msg).collect();
        let batched = c.batch_ids.drain(..);
        let queued = c.queue.drain(..).map(|m| m.id);
        for m in inflight.into_iter().chain(batched).chain(queued) {
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
