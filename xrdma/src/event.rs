//! What flows across the endpoint's boundary: connection setup in, work requests ([`Op`]) and
//! application events ([`Event`]) out, and per-connection counters ([`ConnStats`]).

use crate::error::{ConnId, XrdmaError};
use crate::mr_pool::Region;
use crate::{QpAddress, QpCaps, QpNum, RecvWr, SendWr, Time};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Identifier of a message handed to [`crate::Endpoint::send`], unique within the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MsgId(pub u64);

/// Everything the core needs to run a connection whose QP is connected (or at least in INIT:
/// receives are posted first). All zero for a connection not yet connected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnSetup {
    /// The local QP.
    pub qpn: QpNum,
    /// An application label for the peer (host index, rank).
    pub peer: u32,
    /// Local staging ring frames and fragments are copied into before they are posted;
    /// [`crate::Config::ring_bytes`] long.
    pub send_ring: Region,
    /// The connection's receive buffers: `recv_depth` slots of
    /// [`crate::Config::recv_slot_bytes`] each, one per posted receive WR.
    pub recv_buffers: Region,
}

/// How far a connection's setup is ([`crate::Endpoint::setup_progress`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupProgress {
    /// Waiting for the outcome of an [`Op::CreateQp`] or [`Op::RegisterMemory`].
    Pending,
    /// The QP and buffers are ready: send `qp` to the peer, connect the QP, then
    /// [`crate::Endpoint::handle_connected`].
    Ready {
        /// The QP's address, for the peer.
        qp: QpAddress,
        /// Whether the QP came from the QP cache (a closed connection's QP, reset).
        reused_qp: bool,
    },
    /// The connection is established (or past it).
    Connected,
}

/// A work request, QP state change or registration the driver must hand to the transport.
/// The driver performs each op and reports its outcome, in the order the ops were polled
/// (see [`crate::driver`] for the contract).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// `ibv_post_send` on `qpn`, with `wr.signaled` as the core decided it: most send WRs are
    /// unsignaled, and the last one the core hands out for a QP before
    /// [`crate::Endpoint::poll_op`] returns `None` is signaled, so the driver posts every one
    /// it is handed, in order, before its next input (chains of any length allowed).
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
    /// Create an RC QP with `caps` for `conn`, which is being set up and found no QP in the
    /// QP cache (`Transport::create_qp`); report the outcome with
    /// [`crate::Endpoint::handle_qp_created`].
    CreateQp {
        /// The connection the QP is for.
        conn: ConnId,
        /// The capacities to create it with.
        caps: QpCaps,
    },
    /// Move `qpn` to RESET and back to INIT (`Transport::reset_qp`): its connection ended
    /// (closed, failed, or failed during setup). Report the outcome with
    /// [`crate::Endpoint::handle_qp_reset`]: the connection's buffers, its slot and (for a
    /// clean close) the QP itself then serve the next connection.
    ResetQp {
        /// The QP.
        qpn: QpNum,
    },
    /// Register `len` more bytes and give them to [`crate::Endpoint::add_memory`]: a large
    /// message's landing buffer, or a new connection's staging ring or receive buffers, do
    /// not fit the memory registered so far.
    RegisterMemory {
        /// Bytes to register (at least one 4 MiB chunk).
        len: u64,
    },
}

/// What the core tells the application.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A whole message arrived.
    Message {
        /// The connection it came on.
        conn: ConnId,
        /// The tag its sender gave ([`crate::Endpoint::send_tagged`]; 0 when none).
        tag: u32,
        /// Its bytes.
        data: Bytes,
    },
    /// One fragment of an arriving message, in order, when the endpoint streams fragments
    /// ([`crate::Config::deliver_fragments`]) instead of delivering whole messages. The message
    /// is complete when `offset + data.len() == message_len` (a small message, 0 bytes
    /// included, is one fragment). A small urgent message ([`crate::Endpoint::send_urgent`])
    /// may arrive between two fragments of a large one: tell them apart by `message_len`
    /// and `offset`.
    Fragment {
        /// The connection it came on.
        conn: ConnId,
        /// The message's tag ([`crate::Endpoint::send_tagged`]; 0 when none).
        tag: u32,
        /// Length of the whole message, bytes.
        message_len: u64,
        /// Offset of `data` within the message, bytes.
        offset: u64,
        /// The fragment's bytes.
        data: Bytes,
    },
    /// Every frame and fragment of a message was ACKed by the receiver; its buffers are free.
    Sent {
        /// The connection.
        conn: ConnId,
        /// The message.
        msg: MsgId,
        /// When it was accepted, reached the head of the queue, was granted, had its last
        /// piece posted and was ACKed ([`SendTiming`]).
        timing: SendTiming,
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
    /// The peer closed the connection ([`crate::Endpoint::close`] on its side): it sends no
    /// more messages. This side's queued messages still go out, then it closes too.
    PeerClosed {
        /// The connection.
        conn: ConnId,
    },
    /// Both sides closed and every frame was ACKed: the connection is gone, its buffers are
    /// kept for the next connection and its QP goes to the QP cache.
    Closed {
        /// The connection.
        conn: ConnId,
    },
}

impl Event {
    /// The connection the event is about (every event has one).
    pub fn conn(&self) -> ConnId {
        match self {
            Event::Message { conn, .. }
            | Event::Fragment { conn, .. }
            | Event::Sent { conn, .. }
            | Event::SendFailed { conn, .. }
            | Event::ConnectionFailed { conn, .. }
            | Event::PeerClosed { conn }
            | Event::Closed { conn } => *conn,
        }
    }
}

/// What one endpoint holds, for leak checks and the stat tool: registered memory, QPs made
/// and cached, buffers waiting for reuse. Counts, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct EndpointResources {
    /// MRs registered (4 MiB chunks and larger ones for big landing buffers).
    pub mr_chunks: usize,
    /// Bytes registered in them.
    pub registered_bytes: u64,
    /// QPs this endpoint created (QP cache misses): each is one `create_qp`.
    pub qps_created: u64,
    /// Connections whose QP came from the QP cache (hits).
    pub qps_reused: u64,
    /// QPs waiting in the QP cache.
    pub qps_cached: usize,
    /// Open connections: established, draining or closing (not being set up, not ended).
    pub open_connections: usize,
    /// Connection records: slots of the connection table, in use or released. An ended
    /// connection's slot serves the next one, so this stays at the most connections open at
    /// once (plus those whose QP reset is not yet reported).
    pub connection_records: usize,
    /// Staging rings and receive buffers of closed connections waiting for the next one.
    pub spare_buffer_sets: usize,
    /// Landing buffer bytes granted and not yet freed.
    pub landing_in_use_bytes: u64,
    /// Landing buffer bytes carved from the MR pool so far (free or in use).
    pub landing_carved_bytes: u64,
    /// Landing buffer bytes lent to the application now: messages it holds without a copy
    /// ([`crate::LocalMemory::lend`]); part of `landing_in_use_bytes`. This and the next two
    /// are `None` only in a result written before they were counted.
    #[serde(default)]
    pub landing_lent_bytes: Option<u64>,
    /// Bytes copied out of registered memory for the application so far: frames (headers
    /// included) and landed messages. Divided by the payload bytes received, it is the
    /// receiver's copies per payload byte.
    #[serde(default)]
    pub copied_out_bytes: Option<u64>,
    /// Bytes of landed messages handed to the application as leases, without a copy.
    #[serde(default)]
    pub lent_out_bytes: Option<u64>,
    /// Bytes copied into the send rings so far: frames (headers included) and fragments.
    /// Divided by the payload bytes sent, it is the sender's copies per payload byte.
    #[serde(default)]
    pub staged_bytes: Option<u64>,
    /// Bytes of fragments posted in place from registered memory the application's message
    /// already lay in, without a staging copy ([`crate::LocalMemory::registered_lkey`]).
    #[serde(default)]
    pub sent_in_place_bytes: Option<u64>,
}

/// Per-connection counters (the `stat` tool's columns). Bytes are payload bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConnStats {
    /// Payload bytes posted.
    pub send_bytes: u64,
    /// Payload bytes received in order.
    pub recv_bytes: u64,
    /// Fragments posted: eager SENDs and rendezvous WRITEs.
    pub fragments_sent: u64,
    /// Fragments received.
    pub fragments_received: u64,
    /// Messages fully ACKed.
    pub messages_sent: u64,
    /// Messages delivered to the application.
    pub messages_received: u64,
    /// Messages sent eagerly (one SEND into a posted receive buffer).
    pub eager_messages: u64,
    /// Eager frames that carried more than one message (XRDMA's batching of small messages);
    /// `eager_messages` counts the messages in them.
    #[serde(default)]
    pub batched_frames: u64,
    /// Messages sent by rendezvous (RTS, CTS, WRITEs into the granted landing buffer).
    pub rendezvous_messages: u64,
    /// Landing buffers granted to the peer.
    pub grants_sent: u64,
    /// RTS frames sent (each announces up to [`crate::fragment::MAX_BATCH`] large messages).
    pub rts_frames: u64,
    /// CTS frames sent (each carries up to [`crate::fragment::MAX_BATCH`] grants).
    pub cts_frames: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// ACKs received (separate or carried on a frame).
    pub acks_received: u64,
    /// ACKs carried in a frame header instead of a separate ACK SEND.
    pub acks_piggybacked: u64,
    /// ECN echoes: CNPs reported for this connection's QP, or a rise of the port's CNP count
    /// while it had bytes in flight ([`crate::Endpoint::handle_port_congestion`]).
    pub ecn_echoes: u64,
    /// Window decreases applied (at most one per RTT), on every signal.
    pub window_decreases: u64,
    /// Those of the window decreases that were on queueing delay.
    #[serde(default)]
    pub window_delay_decreases: u64,
    /// The smallest the send window has been, bytes.
    #[serde(default)]
    pub smallest_window: u64,
    /// Current send window, bytes.
    pub window: u64,
    /// Smoothed RTT, ps (0 before the first sample).
    pub srtt_ps: u64,
    /// Smallest RTT seen, ps (0 before the first sample).
    pub min_rtt_ps: u64,
}

/// The sender's instants of one message, all on the endpoint's clock, in order
/// `accepted ≤ head ≤ max(head, granted) ≤ last_post ≤ acked`.
/// Serialised with the instants in ps (`accepted-ps`, ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SendTiming {
    /// [`crate::Endpoint::send`] accepted it.
    #[serde(rename = "accepted-ps")]
    pub accepted: Time,
    /// It reached the head of its connection's queue (every message ahead of it wholly
    /// posted); a message coalesced behind the head into one eager frame counts as at the
    /// head when the frame is posted.
    #[serde(rename = "head-ps")]
    pub head: Time,
    /// Its landing buffer's grant (the CTS) arrived: rendezvous messages only. It may come
    /// before `head` (the RTS goes out ahead of the data).
    #[serde(rename = "granted-ps")]
    pub granted: Option<Time>,
    /// Its last frame or fragment was posted.
    #[serde(rename = "last-post-ps")]
    pub last_post: Time,
    /// The ACK that covers its last piece arrived: its buffers are free.
    #[serde(rename = "acked-ps")]
    pub acked: Time,
}

impl SendTiming {
    /// When the message could post its data: at the head and, for rendezvous, granted.
    pub fn ready(&self) -> Time {
        self.granted.map_or(self.head, |g| g.max(self.head))
    }
}
