//! The endpoint: one run-to-completion worker's connections and their protocol state.
//!
//! ## Wire protocol
//! - Each message is split into fragments ([`crate::fragment`]) of at most the fragment size,
//!   and never more than the current send window; each fragment is one RDMA WRITE with
//!   immediate into the peer's receive ring ([`crate::ring`]), its sequence number in the
//!   immediate data. A message's first fragment starts with a 16-byte
//!   [`crate::fragment::MessageHeader`] (the message length, and a cumulative ACK of the
//!   other direction when one is due); later fragments are payload only.
//! - Each WRITE with immediate consumes one receive WR at the peer; the peer reposts it at once
//!   and answers with a cumulative ACK: carried in the header of its next message's first
//!   fragment when it has one ready in the same turn (request/response), else a zero-length
//!   SEND with immediate whose immediate data is the newest in-order sequence number received.
//!   ACKs are coalesced: one per connection per batch of completions.
//! - The sender keeps every fragment's staging buffer until the ACK covering it arrives, and
//!   only then frees it and reports the message sent. If the oldest fragment waits longer than
//!   the ACK timeout, the connection fails, its buffers are reclaimed and every pending message
//!   is failed with a typed error.
//! - Fragments in flight per connection are capped by the send window (payload bytes), by half the
//!   receive depth (so data and ACKs together never find the peer's receive queue empty, which
//!   would cost an RNR NAK), and by the send queue depth.
//!
//! ## Driving it (sans-IO)
//! Inputs: [`Endpoint::send`], [`Endpoint::handle_completion`],
//! [`Endpoint::handle_congestion`], [`Endpoint::handle_timeout`],
//! [`Endpoint::handle_post_error`]. Outputs: [`Endpoint::poll_op`] (work requests to post),
//! [`Endpoint::poll_event`] (for the application), [`Endpoint::poll_timeout`] (next deadline).

use crate::error::{ConnId, XrdmaError};
use crate::fragment::{MessageHeader, HEADER_LEN};
use crate::mr_pool::{MrPool, Region};
use crate::ring::{place, SendRing};
use crate::timer::TimerTable;
use crate::window::SendWindow;
use crate::{
    Config, ConfigError, LocalMemory, QpNum, RecvWr, SendOpcode, SendWr, Seq, Sge, Time, WcOpcode,
    WcStatus, WorkCompletion,
};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Identifier of a message handed to [`Endpoint::send`], unique within the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MsgId(pub u64);

/// The peer's receive ring, as learned at connection setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteRing {
    /// Virtual address of the ring in the peer's address space.
    pub addr: u64,
    /// Ring length, bytes; must equal the local send ring's length.
    pub len: u64,
    /// Remote key of the peer's MR that holds the ring.
    pub rkey: u32,
}

/// Everything the core needs to run a connection whose QP is already connected (RTS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnSetup {
    /// The local QP.
    pub qpn: QpNum,
    /// An application label for the peer (host index, rank).
    pub peer: u32,
    /// Local staging ring; same length as `remote_ring`.
    pub send_ring: Region,
    /// Local landing ring the peer WRITEs into.
    pub recv_ring: Region,
    /// The peer's landing ring.
    pub remote_ring: RemoteRing,
}

/// A work request (or QP state change) the driver must hand to the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `ibv_post_send` on `qpn`.
    PostSend {
        /// The QP.
        qpn: QpNum,
        /// The WR.
        wr: SendWr,
    },
    /// `ibv_post_recv` on `qpn`.
    PostRecv {
        /// The QP.
        qpn: QpNum,
        /// The WR.
        wr: RecvWr,
    },
    /// Move `qpn` to RESET: its connection failed and its buffers were reclaimed.
    ResetQp {
        /// The QP.
        qpn: QpNum,
    },
}

/// What the core tells the application.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A whole message arrived.
    Message {
        /// The connection it came on.
        conn: ConnId,
        /// Its bytes.
        data: Bytes,
    },
    /// One fragment of an arriving message, in order, when the endpoint streams fragments
    /// ([`crate::Config::deliver_fragments`]) instead of delivering whole messages. The message
    /// is complete when `offset + data.len() == message_len` (a 0-byte message is one empty
    /// fragment).
    Fragment {
        /// The connection it came on.
        conn: ConnId,
        /// Length of the whole message, bytes.
        message_len: u64,
        /// Offset of `data` within the message, bytes.
        offset: u64,
        /// The fragment's bytes.
        data: Bytes,
    },
    /// Every fragment of a message was ACKed by the receiver; its buffers are free.
    Sent {
        /// The connection.
        conn: ConnId,
        /// The message.
        msg: MsgId,
    },
    /// A message will never be ACKed: its connection failed.
    SendFailed {
        /// The connection.
        conn: ConnId,
        /// The message.
        msg: MsgId,
        /// Why.
        error: XrdmaError,
    },
    /// The connection failed; its buffers were reclaimed and its QP is being reset.
    ConnectionFailed {
        /// The connection.
        conn: ConnId,
        /// Why.
        error: XrdmaError,
    },
}

/// Per-connection counters (the `stat` tool's columns). Bytes are payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConnStats {
    /// Payload bytes posted.
    pub send_bytes: u64,
    /// Payload bytes received in order.
    pub recv_bytes: u64,
    /// Fragments posted.
    pub fragments_sent: u64,
    /// Fragments received.
    pub fragments_received: u64,
    /// Messages fully ACKed.
    pub messages_sent: u64,
    /// Messages delivered to the application.
    pub messages_received: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// ACKs received (separate or carried on data).
    pub acks_received: u64,
    /// ACKs carried in a message header instead of a separate ACK SEND.
    pub acks_piggybacked: u64,
    /// ECN echoes (CNPs) reported for this connection's QP.
    pub ecn_echoes: u64,
    /// Window decreases applied (at most one per RTT).
    pub window_decreases: u64,
    /// Current send window, bytes.
    pub window: u64,
    /// Smoothed RTT, ps (0 before the first sample).
    pub srtt_ps: u64,
    /// Smallest RTT seen, ps (0 before the first sample).
    pub min_rtt_ps: u64,
}

struct OutMessage {
    id: MsgId,
    data: Bytes,
    next_off: u64,
}

struct InflightFragment {
    seq: Seq,
    footprint: u64,
    payload_len: u64,
    posted_at: Time,
    /// Set on a message's last fragment: ACKing it completes the message.
    completes: Option<MsgId>,
    msg: MsgId,
}

/// The message being received on a connection.
struct Assembly {
    /// Its length, from the header of its first fragment.
    len: u64,
    /// Payload bytes received so far.
    received: u64,
    /// The bytes, when whole messages are delivered (empty when fragments are streamed).
    buf: Vec<u8>,
}

struct Connection {
    setup: ConnSetup,
    failed: bool,
    // Send side.
    ring: SendRing,
    next_tx_seq: Seq,
    queue: VecDeque<OutMessage>,
    inflight: VecDeque<InflightFragment>,
    inflight_bytes: u64,
    window: SendWindow,
    sq_outstanding: u32,
    in_tx_ready: bool,
    // Receive side.
    recv_cursor: u64,
    expected_rx_seq: Seq,
    assembling: Option<Assembly>,
    ack_due: bool,
    in_ack_list: bool,
    stats: ConnStats,
}

const KIND_RECV: u64 = 1;
const KIND_DATA: u64 = 2;
const KIND_ACK: u64 = 3;

fn wr_id(conn: ConnId, kind: u64) -> u64 {
    (u64::from(conn) << 8) | kind
}

fn split_wr_id(id: u64) -> (ConnId, u64) {
    ((id >> 8) as ConnId, id & 0xFF)
}

/// The largest capacity reserved up front for a message being reassembled; longer messages
/// grow as their fragments arrive, so a corrupt length cannot allocate unbounded memory.
const MAX_RESERVE: u64 = 16 << 20;

/// One worker's protocol state: its connections, timers and MR pool books.
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

    /// Number of connections ever added.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Add a connection whose QP is in RTS (or at least INIT: receives are posted first).
    /// Queues `recv_depth` receive WRs for the driver to post.
    pub fn add_connection(&mut self, setup: ConnSetup) -> ConnId {
        let id = self.conns.len() as ConnId;
        let c = &self.cfg;
        self.conns.push(Connection {
            setup,
            failed: false,
            ring: SendRing::new(setup.send_ring.len.min(setup.remote_ring.len)),
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
            recv_cursor: 0,
            expected_rx_seq: Seq(c.initial_seq),
            assembling: None,
            ack_due: false,
            in_ack_list: false,
            stats: ConnStats {
                window: c.initial_window,
                ..ConnStats::default()
            },
        });
        self.by_qp.insert(setup.qpn, id);
        for _ in 0..self.cfg.recv_depth {
            self.ops.push_back(recv_op(id, &setup));
        }
        id
    }

    /// The peer label given at setup.
    pub fn peer(&self, conn: ConnId) -> Option<u32> {
        self.conns.get(conn as usize).map(|c| c.setup.peer)
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

    /// Queue a message on `conn`. It is fragmented and posted as the window allows; the
    /// application hears [`Event::Sent`] once every fragment is ACKed.
    ///
    /// # Errors
    /// [`XrdmaError::UnknownConnection`], [`XrdmaError::ConnectionFailed`].
    pub fn send(&mut self, _now: Time, conn: ConnId, data: Bytes) -> Result<MsgId, XrdmaError> {
        let c = self
            .conns
            .get_mut(conn as usize)
            .ok_or(XrdmaError::UnknownConnection(conn))?;
        if c.failed {
            return Err(XrdmaError::ConnectionFailed { conn });
        }
        let id = MsgId(self.next_msg);
        self.next_msg += 1;
        c.queue.push_back(OutMessage {
            id,
            data,
            next_off: 0,
        });
        if !c.in_tx_ready {
            c.in_tx_ready = true;
            self.tx_ready.push_back(conn);
        }
        Ok(id)
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

    /// A work completion from the transport's CQ. `mem` gives access to the rings.
    pub fn handle_completion<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        wc: &WorkCompletion,
        mem: &M,
    ) {
        let (conn, kind) = split_wr_id(wc.wr_id);
        let Some(c) = self.conns.get_mut(conn as usize) else {
            return;
        };
        if c.failed {
            return; // flushed WRs of a reclaimed connection
        }
        if wc.status != WcStatus::Success {
            let op = match kind {
                KIND_DATA => "data WRITE",
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
            }
            _ => {
                let setup = c.setup;
                self.ops.push_back(recv_op(conn, &setup));
                let imm = Seq(wc.imm.unwrap_or(0));
                match wc.opcode {
                    WcOpcode::RecvRdmaWithImm => self.on_fragment(now, conn, imm, wc.byte_len, mem),
                    _ => self.on_ack(now, conn, imm),
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

    /// The transport refused `op`: the connection fails.
    pub fn handle_post_error(&mut self, op: &Op, error: crate::TransportError) {
        let qpn = match op {
            Op::PostSend { qpn, .. } | Op::PostRecv { qpn, .. } | Op::ResetQp { qpn } => *qpn,
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

    /// The next work request to post. Fragments are staged into the send ring through `mem`
    /// as they are produced. Connections with data take turns, one fragment each.
    pub fn poll_op<M: LocalMemory + ?Sized>(&mut self, now: Time, mem: &mut M) -> Option<Op> {
        if let Some(op) = self.ops.pop_front() {
            return Some(op);
        }
        while let Some(&conn) = self.tx_ready.front() {
            match self.next_fragment(now, conn, mem) {
                Ok(Some(op)) => {
                    self.tx_ready.pop_front();
                    let c = &mut self.conns[conn as usize];
                    if c.queue.is_empty() {
                        c.in_tx_ready = false;
                    } else {
                        self.tx_ready.push_back(conn);
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
        // Separate ACK SENDs last: a connection that just posted a message's first fragment
        // has carried its ACK on it.
        while let Some(conn) = self.ack_list.pop_front() {
            let c = &mut self.conns[conn as usize];
            c.in_ack_list = false;
            if c.failed || !c.ack_due {
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
                wr_id: wr_id(conn, KIND_ACK),
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

    /// Produce one fragment of `conn`'s head message if window, credits, send queue and ring
    /// allow; `Ok(None)` when blocked (the connection is re-queued when something frees).
    fn next_fragment<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        mem: &mut M,
    ) -> Result<Option<Op>, XrdmaError> {
        let frag_size = self.cfg.fragment_size;
        let max_frags = (self.cfg.recv_depth / 2) as usize;
        let send_depth = self.cfg.send_depth;
        let c = &mut self.conns[conn as usize];
        if c.failed {
            return Ok(None);
        }
        let Some(msg) = c.queue.front() else {
            return Ok(None);
        };
        let total = msg.data.len() as u64;
        // A fragment never exceeds the window, so an ECN-shrunk window below the fragment size
        // still limits the bytes in flight.
        let window = c.window.bytes();
        let len = (total - msg.next_off).min(frag_size).min(window);
        let first = msg.next_off == 0;
        let header_len = if first { HEADER_LEN as u64 } else { 0 };
        let wire = header_len + len;
        let window_full = c.inflight_bytes > 0 && c.inflight_bytes + len > window;
        if window_full || c.inflight.len() >= max_frags || c.sq_outstanding >= send_depth {
            return Ok(None);
        }
        let Some(slot) = c.ring.alloc(wire) else {
            return Ok(None);
        };
        let local = c.setup.send_ring.addr + slot.offset;
        let payload = msg
            .data
            .slice(msg.next_off as usize..(msg.next_off + len) as usize);
        let mut staged = Ok(());
        if first {
            let ack = c.ack_due.then(|| c.expected_rx_seq.add(u32::MAX));
            if ack.is_some() {
                c.ack_due = false;
                c.stats.acks_piggybacked += 1;
            }
            let header = MessageHeader {
                message_len: total,
                ack,
            };
            staged = mem.write(local, &header.encode());
        }
        let staged = staged.and_then(|()| mem.write(local + header_len, &payload));
        if let Err(source) = staged {
            return Err(XrdmaError::Memory { conn, source });
        }
        let seq = c.next_tx_seq;
        c.next_tx_seq = seq.next();
        let id = msg.id;
        let done = msg.next_off + len >= total;
        if done {
            c.queue.pop_front();
        } else if let Some(m) = c.queue.front_mut() {
            m.next_off += len;
        }
        if c.inflight.is_empty() {
            self.timers.set(conn, Some(now + self.cfg.ack_timeout));
        }
        c.inflight.push_back(InflightFragment {
            seq,
            footprint: slot.footprint,
            payload_len: len,
            posted_at: now,
            completes: done.then_some(id),
            msg: id,
        });
        c.inflight_bytes += len;
        c.sq_outstanding += 1;
        c.stats.send_bytes += len;
        c.stats.fragments_sent += 1;
        let s = &c.setup;
        let wr = SendWr {
            wr_id: wr_id(conn, KIND_DATA),
            opcode: SendOpcode::RdmaWriteWithImm,
            sge: Sge {
                addr: local,
                len: wire as u32,
                lkey: s.send_ring.lkey,
            },
            imm: seq.to_imm(),
            remote_addr: s.remote_ring.addr + slot.offset,
            rkey: s.remote_ring.rkey,
            signaled: true,
        };
        Ok(Some(Op::PostSend { qpn: s.qpn, wr }))
    }

    fn on_fragment<M: LocalMemory + ?Sized>(
        &mut self,
        now: Time,
        conn: ConnId,
        seq: Seq,
        byte_len: u32,
        mem: &M,
    ) {
        let c = &mut self.conns[conn as usize];
        if seq != c.expected_rx_seq {
            let err = XrdmaError::OutOfSequence {
                conn,
                expected: c.expected_rx_seq,
                got: seq,
            };
            self.fail(conn, err);
            return;
        }
        let ring = c.setup.recv_ring;
        let len = u64::from(byte_len);
        if len > ring.len {
            let reason = format!(
                "fragment of {len} bytes does not fit a {} byte ring",
                ring.len
            );
            self.fail(conn, XrdmaError::MalformedFragment { conn, reason });
            return;
        }
        let (slot, cursor) = place(c.recv_cursor, len, ring.len);
        c.recv_cursor = cursor;
        let bytes = match mem.read(ring.addr + slot.offset, len as usize) {
            Ok(b) => b,
            Err(source) => {
                self.fail(conn, XrdmaError::Memory { conn, source });
                return;
            }
        };
        let streaming = self.cfg.deliver_fragments;
        let mut piggybacked = None;
        let (mut asm, payload) = match c.assembling.take() {
            Some(asm) => (asm, bytes),
            None => {
                let Some(h) = MessageHeader::decode(bytes) else {
                    let reason = format!("first fragment of {len} bytes has no message header");
                    self.fail(conn, XrdmaError::MalformedFragment { conn, reason });
                    return;
                };
                piggybacked = h.ack;
                let cap = if streaming {
                    0
                } else {
                    h.message_len.min(MAX_RESERVE) as usize
                };
                let asm = Assembly {
                    len: h.message_len,
                    received: 0,
                    buf: Vec::with_capacity(cap),
                };
                (asm, &bytes[HEADER_LEN..])
            }
        };
        let n = payload.len() as u64;
        if asm.received + n > asm.len {
            let reason = format!("fragments exceed the {}-byte message length", asm.len);
            self.fail(conn, XrdmaError::MalformedFragment { conn, reason });
            return;
        }
        let offset = asm.received;
        asm.received += n;
        if streaming {
            self.events.push_back(Event::Fragment {
                conn,
                message_len: asm.len,
                offset,
                data: Bytes::copy_from_slice(payload),
            });
        } else {
            asm.buf.extend_from_slice(payload);
        }
        c.expected_rx_seq = seq.next();
        c.stats.recv_bytes += n;
        c.stats.fragments_received += 1;
        if asm.received == asm.len {
            c.stats.messages_received += 1;
            if !streaming {
                self.events.push_back(Event::Message {
                    conn,
                    data: Bytes::from(asm.buf),
                });
            }
        } else {
            c.assembling = Some(asm);
        }
        c.ack_due = true;
        self.queue_ack(conn);
        if let Some(acked) = piggybacked {
            self.on_ack(now, conn, acked);
        }
    }

    fn on_ack(&mut self, now: Time, conn: ConnId, acked: Seq) {
        let c = &mut self.conns[conn as usize];
        c.stats.acks_received += 1;
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
            newest = Some(f.posted_at);
            if let Some(msg) = f.completes {
                c.stats.messages_sent += 1;
                self.events.push_back(Event::Sent { conn, msg });
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
    }

    fn wake_tx(&mut self, conn: ConnId) {
        let c = &mut self.conns[conn as usize];
        if !c.in_tx_ready && !c.queue.is_empty() && !c.failed {
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

    /// Fail `conn`: reclaim its rings, fail every pending message, ask for a QP reset.
    fn fail(&mut self, conn: ConnId, error: XrdmaError) {
        let c = &mut self.conns[conn as usize];
        if c.failed {
            return;
        }
        c.failed = true;
        let mut pending: Vec<MsgId> = Vec::new();
        for f in c.inflight.drain(..) {
            if pending.last() != Some(&f.msg) {
                pending.push(f.msg);
            }
        }
        for m in c.queue.drain(..) {
            if pending.last() != Some(&m.id) {
                pending.push(m.id);
            }
        }
        c.inflight_bytes = 0;
        c.ring.reset();
        c.assembling = None;
        c.ack_due = false;
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
        self.ops.push_back(Op::ResetQp { qpn: c.setup.qpn });
    }
}

fn recv_op(conn: ConnId, s: &ConnSetup) -> Op {
    Op::PostRecv {
        qpn: s.qpn,
        wr: RecvWr {
            wr_id: wr_id(conn, KIND_RECV),
            sge: Sge {
                addr: s.recv_ring.addr,
                len: 0,
                lkey: s.recv_ring.lkey,
            },
        },
    }
}
