//! The endpoint: one run-to-completion worker's connections and their protocol state.
//!
//! ## Wire protocol
//! - Every frame is a SEND with immediate into a receive buffer the peer posted in advance
//!   (`recv_depth` buffers of [`crate::Config::recv_slot_bytes`] per connection), starting with
//!   a 16-byte [`MessageHeader`](crate::fragment::MessageHeader) (kind, tag, length, and a
//!   cumulative ACK of the other direction when one is due). The immediate data is the
//!   frame's sequence number.
//! - **Small messages** (at most [`crate::Config::eager_limit`] bytes, 4 KiB by default) go
//!   eagerly: one `Eager` frame holds the header and the whole payload. Small messages queued
//!   together are coalesced: one frame carries as many header-and-payload records as fit one
//!   receive buffer (up to [`MAX_COALESCE`]), for one WR, one receive and one ACK.
//! - Every message carries the application's tag ([`Endpoint::send_tagged`], a correlation
//!   id; 0 when none) in its header, or in its RTS entry when it goes by rendezvous, and
//!   arrives with it ([`Event::Message`]).
//! - **Large messages** go by rendezvous: an `Rts` frame announces the tags and lengths of
//!   up to [`MAX_BATCH`] queued large messages; the receiver takes a landing buffer of each
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
//!   pending message is failed with a typed error. A connection that waits on its peer with
//!   nothing in flight (for a grant, for the rest of a landing message, or to finish a close)
//!   probes it with a repeated ACK after the ACK timeout: the NIC completes it, or fails it
//!   once the peer's QP is gone, so every wait is bounded.
//! - Each WR's `wr_id` carries a tag numbering the posts to its queue; a queue completes in
//!   order, so a completion's tag implies every older one's and a repeated or late one is
//!   ignored ([`crate::fault`] lists what the core does for each kind of faulty completion).
//! - Frames and fragments in flight per connection are capped by the send window (payload
//!   bytes), by half the receive depth (so data and ACKs together never find the peer's
//!   receive queue empty, which would cost an RNR NAK), and by the send queue depth.
//! - **Close**: [`Endpoint::close`] lets the queued messages go out, then sends a `Fin` frame;
//!   the peer reports [`Event::PeerClosed`], sends what it has queued and its own `Fin`. A side
//!   whose `Fin` is ACKed, which has the peer's `Fin`, and whose last ACK has completed reports
//!   [`Event::Closed`]; its QP is reset ([`Op::ResetQp`]) and then goes to the endpoint's
//!   [`QpCache`], and its buffers and its connection slot serve the next connection.
//!
//! ## Connections
//! A connection's record lives in a slot of the endpoint's connection table
//! ([`crate::slab::Slab`]); its [`ConnId`] names the slot and the slot's generation. Its life
//! is a [`ConnState`] (the transitions are listed in [`state`]). Once it has ended (closed or
//! failed), its QP reset has been reported and the application has polled the event that
//! ended it, the slot serves the next [`Endpoint::open`] with the generation one higher: the
//! table never grows past the most connections alive at once, and an old id is answered with
//! [`XrdmaError::StaleConnection`] instead of naming its successor.
//!
//! ## Driving it (sans-IO)
//! The endpoint never calls a transport, reads a clock or blocks. Inputs: [`Endpoint::open`],
//! [`Endpoint::send`], [`Endpoint::close`], [`Endpoint::handle_completion`] (and
//! [`Endpoint::handle_landed`] with the bytes it asks for),
//! [`Endpoint::handle_congestion`], [`Endpoint::handle_timeout`],
//! [`Endpoint::handle_qp_created`], [`Endpoint::handle_connected`],
//! [`Endpoint::handle_qp_reset`], [`Endpoint::add_memory`], [`Endpoint::handle_post_error`].
//! Outputs: [`Endpoint::poll_op`] (work requests to post, QPs to create or reset, memory to
//! register), [`Endpoint::poll_event`] (for the application), [`Endpoint::poll_timeout`]
//! (next deadline), [`Endpoint::setup_progress`] (a connection being set up). The driver's
//! side of the contract is in [`crate::driver`]. Each input's `now` is at or after the
//! previous input's: an RTT is `now - posted`, which panics on a clock that went back.

use crate::error::{ConnId, XrdmaError};
use crate::fragment::{Grant, MAX_BATCH};
use crate::landing::LandingPool;
use crate::mr_pool::{MrPool, Region};
use crate::qp_cache::QpCache;
use crate::ring::SendRing;
use crate::slab::Slab;
use crate::timer::TimerTable;
use crate::window::{SendWindow, WindowParams};
use crate::{Config, ConfigError, LocalMemory, QpNum, RecvWr, Seq, Sge, Time, TransportError};
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

pub use crate::event::{ConnSetup, ConnStats, EndpointResources, Event, MsgId, Op, SetupProgress};

mod ack;
mod capability;
mod inspect;
mod lifecycle;
mod queue;
mod receive;
mod send;
mod setup;
mod signal;
mod snapshot;
pub mod state;
mod timing;

pub use crate::event::SendTiming;
pub use inspect::ConnUsage;
use setup::{HalfSetup, MemoryFor, Resetting};
pub use snapshot::{ConnSnapshot, EndpointSnapshot, QpObservations};
pub use state::ConnState;
use timing::Stamps;

struct OutMessage {
    id: MsgId,
    /// The application's tag ([`Endpoint::send_tagged`]), carried to the receiver.
    tag: u32,
    data: Bytes,
    next_off: u64,
    /// A large message whose RTS has gone out.
    rts_sent: bool,
    /// The landing buffer the receiver granted (large messages).
    grant: Option<Grant>,
    /// The instants it has been stamped with ([`SendTiming`]).
    stamps: Stamps,
    /// Queued by [`Endpoint::send_urgent`]: ahead of every normal message not yet started.
    urgent: bool,
}

struct InflightFrame {
    seq: Seq,
    footprint: u64,
    payload_len: u64,
    posted_at: Time,
    /// How many messages ACKing this completes, the oldest of the connection's
    /// [`Connection::posted`]: a message's last fragment completes one, an eager frame every
    /// message it carries, so frames ACKed together or one at a time complete exactly their
    /// own messages.
    completes: u32,
    /// The message this belongs to (`None` for CTS and FIN frames).
    msg: Option<MsgId>,
    fin: bool,
}

/// A completion waiting for its landed bytes ([`Endpoint::handle_landed`]).
#[derive(Clone, Copy, Debug)]
enum Landed {
    /// A frame of `byte_len` bytes at `addr` in a receive buffer (key `lkey`).
    Frame {
        conn: ConnId,
        addr: u64,
        byte_len: u32,
        lkey: u32,
    },
    /// A fragment in a landing buffer.
    Fragment(FragmentTail),
}

/// Bytes copied between the application and registered memory, and bytes that moved in place.
#[derive(Clone, Copy, Debug, Default)]
struct Copies {
    /// Copied out by the driver ([`Endpoint::handle_landed`]).
    copied_out: u64,
    /// Lent out with no copy ([`Endpoint::handle_lent`]).
    lent_out: u64,
    /// Staged into the send rings (headers included).
    staged: u64,
    /// Sent in place from registered memory ([`crate::LocalMemory::registered_lkey`]).
    in_place: u64,
}

/// What is left to do for a landed fragment once its bytes are in.
#[derive(Clone, Copy, Debug)]
struct FragmentTail {
    conn: ConnId,
    buf: Region,
    message_len: u64,
    /// The message's tag.
    tag: u32,
    /// Offset of the delivered bytes in the message (0 when the whole message is).
    offset: u64,
    /// The fragment's length.
    n: u64,
    /// Whether it is the message's last.
    done: bool,
}

/// A large message landing in a granted buffer.
struct Landing {
    buf: Region,
    len: u64,
    /// Its tag, from its RTS.
    tag: u32,
    received: u64,
}

struct Connection {
    setup: ConnSetup,
    /// Where the connection is in its life ([`state`] lists the transitions).
    state: ConnState,
    /// What a connection in [`ConnState::Connecting`] has got so far.
    half: HalfSetup,
    // Send side.
    ring: SendRing,
    next_tx_seq: Seq,
    queue: VecDeque<OutMessage>,
    /// Large messages in `queue` whose RTS has not gone out: while there are none, the send
    /// path skips looking for messages to announce.
    unannounced: u32,
    inflight: VecDeque<InflightFrame>,
    /// Fragments posted in place from the application's registered memory, oldest first: each
    /// one's sequence number and bytes, kept alive until its ACK
    /// ([`crate::LocalMemory::registered_lkey`]).
    in_place: VecDeque<(Seq, Bytes)>,
    /// Messages wholly posted and not yet ACKed, in the order their frames were posted, with
    /// their stamps ([`InflightFrame::completes`] says which frame completes which).
    posted: VecDeque<(MsgId, Stamps)>,
    inflight_bytes: u64,
    window: SendWindow,
    sq_outstanding: u32,
    /// Tag of the oldest send WR whose completion is outstanding ([`wr_id`]).
    sq_oldest: u32,
    /// Where the outbox holds this connection's newest send WR while it is not known
    /// whether it ends its burst ([`signal`]).
    held: Option<u64>,
    /// Send WRs decided unsignaled since the last signaled one ([`signal`]).
    unsignaled_run: u32,
    /// Receive slots posted, oldest first, and the tag of the oldest.
    rq: VecDeque<u32>,
    rq_oldest: u32,
    in_tx_ready: bool,
    grants_out: VecDeque<Grant>,
    // Receive side.
    expected_rx_seq: Seq,
    /// Whether the connection is in the endpoint's queue of grants waiting for budget.
    budget_wait: bool,
    /// Lengths and tags of announced messages not yet granted, oldest first.
    pending_rts: VecDeque<(u64, u32)>,
    /// Granted landing buffers, in the order their messages arrive.
    landings: VecDeque<Landing>,
    ack_due: bool,
    /// Frames accepted since our last ACK went out.
    rx_unacked: u32,
    /// This side posted payload (an eager frame, a fragment) since the last frame it
    /// accepted.
    sent_since_rx: bool,
    /// The connection is in request/response: this side had answered the frame before the
    /// last one it accepted (Linux's `pingpong` mode). Only then is an ACK delayed.
    pingpong: bool,
    /// The owed ACK goes out at once, whatever [`Config::ack_delay`] says (its delay is
    /// over, or an idle probe).
    ack_forced: bool,
    /// When the connection last made progress (a completion, an ACK): an idle connection
    /// waiting on its peer probes it `ack_timeout` after this.
    last_progress: Time,
    in_ack_list: bool,
    stats: ConnStats,
}

impl Connection {
    /// A connection in [`ConnState::Connecting`], with nothing yet.
    fn new(c: &Config) -> Connection {
        Connection {
            setup: ConnSetup::default(),
            state: ConnState::Connecting,
            half: HalfSetup::default(),
            ring: SendRing::new(0),
            next_tx_seq: Seq(c.initial_seq),
            queue: VecDeque::new(),
            unannounced: 0,
            inflight: VecDeque::new(),
            in_place: VecDeque::new(),
            posted: VecDeque::new(),
            inflight_bytes: 0,
            window: {
                let w = SendWindow::new(WindowParams::from_config(c));
                if c.adaptive_window {
                    w
                } else {
                    w.fixed()
                }
            },
            sq_outstanding: 0,
            sq_oldest: 0,
            held: None,
            unsignaled_run: 0,
            rq: VecDeque::new(),
            rq_oldest: 0,
            in_tx_ready: false,
            grants_out: VecDeque::new(),
            expected_rx_seq: Seq(c.initial_seq),
            budget_wait: false,
            pending_rts: VecDeque::new(),
            landings: VecDeque::new(),
            ack_due: false,
            rx_unacked: 0,
            sent_since_rx: false,
            pingpong: false,
            ack_forced: false,
            last_progress: Time::ZERO,
            in_ack_list: false,
            stats: ConnStats {
                window: c.initial_window,
                ..ConnStats::default()
            },
        }
    }

    fn has_tx_work(&self) -> bool {
        !self.grants_out.is_empty()
            || !self.queue.is_empty()
            || (self.state.fin_due() && self.pending_rts.is_empty())
    }

    /// Whether, with nothing in flight, the connection still waits on its peer: for a grant,
    /// for the rest of a message landing in a buffer it granted, or to finish a close.
    fn waits_on_peer(&self) -> bool {
        self.state.is_live()
            && (!self.queue.is_empty() || !self.landings.is_empty() || self.state.is_closing())
    }

    /// Book one more send WR posted; returns its tag.
    fn send_tag(&mut self) -> u32 {
        let tag = self.sq_oldest.wrapping_add(self.sq_outstanding) & TAG_MASK;
        self.sq_outstanding += 1;
        tag
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

/// The most connection slots an endpoint has (2^20: a slot's index fits the 20 bits a
/// `wr_id` has for it).
pub const MAX_CONNECTIONS: usize = 1 << 20;

/// Bits of a connection's generation a `wr_id` carries.
pub(super) const GEN_BITS: u32 = 12;
const GEN_MASK: u32 = (1 << GEN_BITS) - 1;

/// `wr_id` layout: the connection's slot in bits 32..52 and the low 12 bits of its generation
/// in bits 52..64, the WR's tag in bits 8..32, kind in bits 0..8. A tag numbers the posts to
/// one of the connection's two queues (mod 2^24); each queue completes in order, so a
/// completion's tag tells a duplicate or a late one (not outstanding: ignored) from a genuine
/// one, whose arrival also implies every older one. The generation tells a completion of an
/// ended connection (left in the CQ after its QP was reset) from one of the connection that
/// now has its slot; the two would have to be 4096 generations apart to be mistaken, and the
/// driver drains the CQ on every turn.
fn wr_id(conn: ConnId, tag: u32, kind: u64) -> u64 {
    (u64::from(conn.generation() & GEN_MASK) << 52)
        | (u64::from(conn.slot()) << 32)
        | (u64::from(tag & TAG_MASK) << 8)
        | kind
}

/// The 24 bits of a WR tag.
const TAG_MASK: u32 = 0xFF_FFFF;

/// The slot, generation bits, tag and kind of a `wr_id`.
fn split_wr_id(id: u64) -> (u32, u32, u32, u64) {
    (
        ((id >> 32) & (MAX_CONNECTIONS as u64 - 1)) as u32,
        (id >> 52) as u32,
        ((id >> 8) & 0xFF_FFFF) as u32,
        id & 0xFF,
    )
}

/// One worker's protocol state: its connections, timers, MR pool, landing buffers and QP
/// cache.
pub struct Endpoint {
    cfg: Config,
    conns: Slab<Connection>,
    by_qp: BTreeMap<QpNum, ConnId>,
    ops: VecDeque<Op>,
    /// Send WRs produced and not yet handed out by [`Endpoint::poll_op`] ([`signal`]).
    outbox: signal::Outbox,
    events: VecDeque<Event>,
    tx_ready: VecDeque<ConnId>,
    ack_list: VecDeque<ConnId>,
    timers: TimerTable,
    /// Delayed ACKs' deadlines ([`Config::ack_delay`]), by connection slot.
    ack_timers: TimerTable,
    next_msg: u64,
    pool: MrPool,
    landing: LandingPool,
    /// Connections with an RTS waiting for registered memory.
    waiting_memory: Vec<ConnId>,
    /// Connections with an RTS waiting for landing budget ([`Config::landing_budget`]).
    waiting_budget: VecDeque<ConnId>,
    memory_requested: bool,
    /// What each [`Op::RegisterMemory`] not yet answered was for, oldest first (the driver
    /// answers them in order).
    registrations: VecDeque<MemoryFor>,
    /// Staging rings and receive buffers of ended connections, for the next ones.
    spare_buffers: Vec<(Region, Region)>,
    /// QPs of ended connections waiting for [`Endpoint::handle_qp_reset`].
    resetting: Vec<Resetting>,
    qp_cache: QpCache,
    /// The completion [`Endpoint::handle_completion`] asked the landed bytes of.
    landed: Option<Landed>,
    /// Bytes copied between the application's buffers and registered memory, or spared.
    copies: Copies,
    /// What the transport delivers, once told ([`Endpoint::set_capabilities`]).
    caps: Option<crate::Capabilities>,
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
            conns: Slab::new(MAX_CONNECTIONS),
            by_qp: BTreeMap::new(),
            ops: VecDeque::new(),
            outbox: signal::Outbox::default(),
            events: VecDeque::new(),
            tx_ready: VecDeque::new(),
            ack_list: VecDeque::new(),
            timers: TimerTable::new(),
            ack_timers: TimerTable::new(),
            next_msg: 0,
            pool: MrPool::new(),
            landing: LandingPool::new(),
            waiting_memory: Vec::new(),
            waiting_budget: VecDeque::new(),
            memory_requested: false,
            registrations: VecDeque::new(),
            spare_buffers: Vec::new(),
            resetting: Vec::new(),
            qp_cache: QpCache::new(),
            landed: None,
            copies: Copies::default(),
            caps: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The MR pool's books (read-only: chunks come in through [`Endpoint::add_memory`]).
    pub fn mr_pool(&self) -> &MrPool {
        &self.pool
    }

    /// The landing buffers of large messages (books only; the memory is in the MR pool).
    pub fn landing_pool(&self) -> &LandingPool {
        &self.landing
    }

    /// The QP cache (read-only): QPs of this endpoint's closed connections, reset for reuse.
    pub fn qp_cache(&self) -> &QpCache {
        &self.qp_cache
    }

    /// What the endpoint holds now (see [`EndpointResources`]).
    pub fn resources(&self) -> EndpointResources {
        EndpointResources {
            mr_chunks: self.pool.mr_count(),
            registered_bytes: self.pool.registered_bytes(),
            qps_created: self.qp_cache.misses(),
            qps_reused: self.qp_cache.hits(),
            qps_cached: self.qp_cache.len(),
            open_connections: self.conns.iter().filter(|(_, c)| c.state.is_live()).count(),
            connection_records: self.conns.len(),
            spare_buffer_sets: self.spare_buffers.len(),
            landing_in_use_bytes: self.landing.in_use_bytes(),
            landing_carved_bytes: self.landing.carved_bytes(),
            landing_lent_bytes: Some(self.landing.lent_bytes()),
            copied_out_bytes: Some(self.copies.copied_out),
            lent_out_bytes: Some(self.copies.lent_out),
            staged_bytes: Some(self.copies.staged),
            sent_in_place_bytes: Some(self.copies.in_place),
        }
    }

    /// Connection records (slots of the connection table, in use or waiting for reuse).
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Why `conn` does not resolve: unknown, or stale.
    fn lookup_error(&self, conn: ConnId) -> XrdmaError {
        if self.conns.is_stale(conn) {
            XrdmaError::StaleConnection(conn)
        } else {
            XrdmaError::UnknownConnection(conn)
        }
    }

    /// Receive slots of a connection: `recv_depth`, or fewer when its buffers are shorter.
    fn recv_slots(&self, setup: &ConnSetup) -> u32 {
        let fit = setup.recv_buffers.len / self.cfg.recv_slot_bytes();
        fit.min(u64::from(self.cfg.recv_depth)) as u32
    }

    /// The receive WR that posts `slot` of `conn` (booked as posted).
    fn recv_op(&mut self, conn: ConnId, s: &ConnSetup, slot: u32) -> Op {
        let slot_len = self.cfg.recv_slot_bytes();
        let c = &mut self.conns[conn];
        let tag = c.rq_oldest.wrapping_add(c.rq.len() as u32) & TAG_MASK;
        c.rq.push_back(slot);
        Op::PostRecv {
            qpn: s.qpn,
            wr: RecvWr {
                wr_id: wr_id(conn, tag, KIND_RECV),
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
        self.conns.get(conn).map(|c| c.setup.peer)
    }

    /// `conn`'s state, or `None` for an unknown or stale id.
    pub fn state(&self, conn: ConnId) -> Option<ConnState> {
        self.conns.get(conn).map(|c| c.state)
    }

    /// Whether `conn` is open: established, draining or closing (not being set up, not
    /// failed, not fully closed).
    pub fn is_open(&self, conn: ConnId) -> bool {
        self.conns.get(conn).is_some_and(|c| c.state.is_live())
    }

    /// Counters of one connection.
    pub fn stats(&self, conn: ConnId) -> Option<ConnStats> {
        self.conns.get(conn).map(|c| {
            let mut s = c.stats;
            s.window = c.window.bytes();
            s.window_decreases = c.window.decreases();
            s.window_delay_decreases = c.window.delay_decreases();
            s.smallest_window = c.window.smallest();
            s.srtt_ps = c.window.srtt().map_or(0, crate::Span::as_ps);
            s.min_rtt_ps = c.window.min_rtt().map_or(0, crate::Span::as_ps);
            s
        })
    }

    /// Close `conn` gracefully: messages already queued still go out; then a FIN. The
    /// application hears [`Event::Closed`] once both sides have closed and everything was
    /// ACKed. Closing a closing or closed connection does nothing.
    ///
    /// # Errors
    /// [`XrdmaError::UnknownConnection`], [`XrdmaError::StaleConnection`],
    /// [`XrdmaError::NotEstablished`], [`XrdmaError::ConnectionFailed`].
    pub fn close(&mut self, conn: ConnId) -> Result<(), XrdmaError> {
        let Some(c) = self.conns.get_mut(conn) else {
            return Err(self.lookup_error(conn));
        };
        match c.state {
            ConnState::Failed => Err(XrdmaError::ConnectionFailed { conn }),
            ConnState::Connecting => Err(XrdmaError::NotEstablished { conn }),
            _ => {
                if c.state.on_close() {
                    self.wake_tx(conn);
                }
                Ok(())
            }
        }
    }

    /// Messages queued on `conn` and not yet wholly posted (for applications that feed
    /// lazily).
    pub fn queued_messages(&self, conn: ConnId) -> usize {
        self.conns.get(conn).map_or(0, |c| c.queue.len())
    }

    /// Bytes queued on `conn` and not yet posted (for applications that feed lazily).
    pub fn queued_bytes(&self, conn: ConnId) -> u64 {
        self.conns.get(conn).map_or(0, |c| {
            c.queue
                .iter()
                .map(|m| m.data.len() as u64 - m.next_off)
                .sum()
        })
    }

    /// The transport reported a congestion notification (CNP) for `qpn` at `now`.
    pub fn handle_congestion(&mut self, now: Time, qpn: QpNum) {
        let Some(&conn) = self.by_qp.get(&qpn) else {
            return;
        };
        let Some(c) = self.conns.get_mut(conn) else {
            return;
        };
        c.stats.ecn_echoes += 1;
        c.window.on_congestion(now);
    }

    /// The transport refused `op`: its connection fails (for a refused registration, every
    /// connection waiting for that memory fails). A refused [`Op::CreateQp`] or
    /// [`Op::ResetQp`] is the same input as [`Endpoint::handle_qp_created`] or
    /// [`Endpoint::handle_qp_reset`] with the error.
    pub fn handle_post_error(&mut self, op: &Op, error: TransportError) {
        let qpn = match *op {
            Op::PostSend { qpn, .. } | Op::PostRecv { qpn, .. } => qpn,
            Op::CreateQp { conn, .. } => return self.handle_qp_created(conn, Err(error)),
            Op::ResetQp { qpn } => return self.handle_qp_reset(qpn, Err(error)),
            Op::RegisterMemory { .. } => return self.memory_refused(error),
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
        match (self.timers.earliest(), self.ack_timers.earliest()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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
    ///
    /// The driver calls it until it returns `None` and posts every op it hands out before
    /// the next input: the send WRs of a QP are unsignaled except every
    /// [`Config::signal_interval`]-th, every ACK SEND, and the last one handed out for that
    /// QP before `None` (the `signal` module gives the rule), so a send queue never waits for a
    /// completion that no posted WR asks for. Posting them in chains of any length, in
    /// order, keeps that true.
    pub fn poll_op<M: LocalMemory + ?Sized>(&mut self, now: Time, mem: &mut M) -> Option<Op> {
        loop {
            // Ops other than the outbox's send WRs were produced after all of those, so they
            // wait for them (the front then ends its burst).
            if self.outbox_waiting() {
                let others = !self.ops.is_empty() || self.tx_ready.is_empty();
                if let Some(op) = self.pop_outbox(others) {
                    return Some(op);
                }
            } else if let Some(op) = self.ops.pop_front() {
                return Some(op);
            }
            let Some(conn) = self.tx_ready.pop_front() else {
                break;
            };
            match self.next_send(now, conn, mem) {
                Ok(Some(op)) => {
                    let c = &mut self.conns[conn];
                    let more = c.has_tx_work();
                    if more {
                        self.tx_ready.push_back(conn);
                    } else {
                        c.in_tx_ready = false;
                    }
                    if let Some(op) = self.produced(conn, op, more) {
                        return Some(op);
                    }
                }
                Ok(None) => {
                    self.conns[conn].in_tx_ready = false;
                    self.end_burst(conn, None);
                }
                Err(e) => {
                    self.conns[conn].in_tx_ready = false;
                    self.fail(conn, e);
                }
            }
        }
        // Separate ACK SENDs last: a connection that just posted a frame has carried its ACK
        // on it.
        self.next_ack_send(now)
    }

    fn wake_tx(&mut self, conn: ConnId) {
        let c = &mut self.conns[conn];
        if !c.in_tx_ready && !c.state.is_ended() && c.has_tx_work() {
            c.in_tx_ready = true;
            self.tx_ready.push_back(conn);
        }
    }
}
