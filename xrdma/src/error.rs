//! Errors the core reports to the application.

use crate::{Seq, Time, TransportError, WcStatus};
use thiserror::Error;

/// Index of a connection within its [`crate::Endpoint`].
pub type ConnId = u32;

/// Why a send or a connection failed. Every variant names the connection.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
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
        waited: Time,
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
}
