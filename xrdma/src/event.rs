//! What flows across the endpoint's boundary: connection setup in, work requests ([`Op`]) and
//! application events ([`Event`]) out, and per-connection counters ([`ConnStats`]).

use crate::error::{ConnId, XrdmaError};
use crate::mr_pool::Region;
use crate::{QpNum, RecvWr, SendWr};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Identifier of a message handed to [`crate::Endpoint::send`], unique within the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MsgId(pub u64);

/// Everything the core needs to run a connection whose QP is connected (or at least in INIT:
/// receives are posted first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// A work request, QP state change or registration the driver must hand to the transport.
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
    /// Move `qpn` to RESET: its connection failed. Its buffers serve the next connection once
    /// the QP is reset ([`crate::Endpoint::reset_failed_qp`]).
    ResetQp {
        /// The QP.
        qpn: QpNum,
    },
    /// `qpn`'s connection closed cleanly: reset the QP and put it in the endpoint's QP cache
    /// ([`crate::Endpoint::release_qp`]) for the next connection.
    ReleaseQp {
        /// The QP.
        qpn: QpNum,
    },
    /// Register `len` more bytes and give them to [`crate::Endpoint::add_memory`]: a large
    /// message's landing buffer does not fit the memory registered so far.
    RegisterMemory {
        /// Bytes to register (at least one 4 MiB chunk).
        len: u64,
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
    /// is complete when `offset + data.len() == message_len` (a small message, 0 bytes
    /// included, is one fragment).
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
    /// Every frame and fragment of a message was ACKed by the receiver; its buffers are free.
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
    /// Open connections (not failed, not closed).
    pub open_connections: usize,
    /// Connection records kept, open or not (connection ids are never reused).
    pub connection_records: usize,
    /// Staging rings and receive buffers of closed connections waiting for the next one.
    pub spare_buffer_sets: usize,
    /// Landing buffer bytes granted and not yet freed.
    pub landing_in_use_bytes: u64,
    /// Landing buffer bytes carved from the MR pool so far (free or in use).
    pub landing_carved_bytes: u64,
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
