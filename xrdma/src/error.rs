//! Errors the core reports to the application.

use crate::{Seq, Span, TransportError, WcStatus};
use thiserror::Error;

/// A connection of one [`crate::Endpoint`]: the slot its record occupies in the endpoint's
/// connection table and the generation of that slot.
///
/// Slots are reused: once a connection has ended (closed or failed), its QP reset has been
/// reported and the application has polled the event that ended it, its slot serves the next
/// connection the endpoint opens, with the generation one higher. An
/// id kept from an ended connection therefore never names its successor: the endpoint answers
/// it with [`XrdmaError::StaleConnection`] (or `None` from a read-only view) instead.
///
/// [`ConnId::index`] is dense (below the number of slots, [`crate::Endpoint::connection_count`]),
/// so applications may index per-connection vectors by it, as long as they start a slot afresh
/// when the id in it changes (compare the whole id). Displayed as `index` for a slot's first
/// connection and `index#generation` after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId {
    index: u32,
    generation: u32,
}

impl ConnId {
    /// The id of generation `generation` of slot `index`.
    pub const fn new(index: u32, generation: u32) -> ConnId {
        ConnId { index, generation }
    }

    /// The slot: dense, below the number of slots of the endpoint.
    pub const fn index(self) -> usize {
        self.index as usize
    }

    /// The slot's generation: how many connections used the slot before this one.
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// The slot as a `u32` (the key of per-slot tables such as the timer table).
    pub(crate) const fn slot(self) -> u32 {
        self.index
    }
}

impl std::fmt::Display for ConnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.generation == 0 {
            write!(f, "{}", self.index)
        } else {
            write!(f, "{}#{}", self.index, self.generation)
        }
    }
}

/// Why a send or a connection failed. Every variant names the connection.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum XrdmaError {
    /// The oldest unACKed fragment waited longer than the ACK timeout; the connection's
    /// buffers were reclaimed.
    #[error("connection {conn}: no ACK for fragment {seq} within {waited}")]
    AckTimeout {
        /// The connection.
        conn: ConnId,
        /// Sequence number of the oldest unACKed fragment.
        seq: Seq,
        /// How long it had waited.
        waited: Span,
    },
    /// A message longer than [`crate::Config::max_message_size`] was handed to
    /// [`crate::Endpoint::send`]; nothing was queued.
    #[error("connection {conn}: a {len}-byte message exceeds the {max}-byte maximum")]
    MessageTooLarge {
        /// The connection.
        conn: ConnId,
        /// The message's length, bytes.
        len: u64,
        /// The maximum, bytes.
        max: u64,
    },
    /// A work request completed in error (`ibv_wc_status` other than success).
    #[error("connection {conn}: {op} completed with {status:?}")]
    WorkCompletion {
        /// The connection.
        conn: ConnId,
        /// The failed status.
        status: WcStatus,
        /// Which work request ("data WRITE", "ACK SEND", "receive").
        op: &'static str,
    },
    /// The transport refused to post a work request.
    #[error("connection {conn}: posting failed: {source}")]
    Post {
        /// The connection.
        conn: ConnId,
        /// The transport's reason.
        source: TransportError,
    },
    /// Registered memory could not be read or written.
    #[error("connection {conn}: registered memory access failed: {source}")]
    Memory {
        /// The connection.
        conn: ConnId,
        /// The transport's reason.
        source: TransportError,
    },
    /// A fragment arrived with an unexpected sequence number (RC delivers in order, so this is
    /// a protocol violation by the peer).
    #[error("connection {conn}: fragment {got} arrived, expected {expected}")]
    OutOfSequence {
        /// The connection.
        conn: ConnId,
        /// The sequence number expected next.
        expected: Seq,
        /// The one that arrived.
        got: Seq,
    },
    /// An ACK named a sequence number that was never sent.
    #[error("connection {conn}: ACK for {acked}, but the last fragment sent is {last_sent}")]
    AckBeyondSent {
        /// The connection.
        conn: ConnId,
        /// The cumulative ACK received.
        acked: Seq,
        /// The newest fragment sent.
        last_sent: Seq,
    },
    /// A frame or fragment was inconsistent with the protocol state (bad header, data with no
    /// granted landing buffer, more bytes than the message has).
    #[error("connection {conn}: malformed fragment: {reason}")]
    MalformedFragment {
        /// The connection.
        conn: ConnId,
        /// What was wrong.
        reason: String,
    },
    /// The connection failed earlier; nothing more can be sent on it.
    #[error("connection {conn} has failed")]
    ConnectionFailed {
        /// The connection.
        conn: ConnId,
    },
    /// The connection was closed ([`crate::Endpoint::close`], or by the peer); nothing more
    /// can be sent on it.
    #[error("connection {conn} is closed")]
    ConnectionClosed {
        /// The connection.
        conn: ConnId,
    },
    /// No connection has this id.
    #[error("no connection {0}")]
    UnknownConnection(ConnId),
    /// The id names a connection that ended; its slot now serves a newer connection.
    #[error("connection {0} ended; its slot serves a newer connection")]
    StaleConnection(ConnId),
    /// The connection is still being set up (its QP or buffers are not ready, or it is not
    /// connected to its peer yet): nothing can be sent on it yet.
    #[error("connection {conn} is not established")]
    NotEstablished {
        /// The connection.
        conn: ConnId,
    },
    /// Setting the connection up failed: the transport could not create or connect its QP or
    /// register its buffers. The connection is failed; its QP (reset) and its buffers serve
    /// the next connection.
    #[error("connection {conn}: setup failed: {source}")]
    Setup {
        /// The connection.
        conn: ConnId,
        /// The transport's reason.
        source: TransportError,
    },
    /// The endpoint's connection table is full (every one of
    /// [`crate::endpoint::MAX_CONNECTIONS`] slots serves a connection that has not ended).
    #[error("the endpoint already has {max} connections")]
    TooManyConnections {
        /// The number of slots.
        max: usize,
    },
}
