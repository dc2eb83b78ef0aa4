//! What an application hears when a worker cannot do what it asked ([`AppError`]).

use xrdma::{ConnId, Span, XrdmaError};

/// Why a worker call failed. Every failure is one of these: a worker never hangs past the
/// time it was given, and never panics on what the network or the peer did.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Nothing came within the time given (on the worker's clock: simulated time on the
    /// simulator).
    #[error("nothing arrived within {waited}")]
    Timeout {
        /// The time waited.
        waited: Span,
    },
    /// The connection failed (its peer is gone, its QP went to error, its ACK timeout
    /// passed); its queued messages were reclaimed.
    #[error("connection {conn:?} failed: {error}")]
    ConnectionFailed {
        /// The connection.
        conn: ConnId,
        /// Why, as the core says ([`XrdmaError`]).
        error: XrdmaError,
    },
    /// The peer closed the connection: it sends nothing more.
    #[error("the peer closed connection {conn:?}")]
    PeerClosed {
        /// The connection.
        conn: ConnId,
    },
    /// The core refused the call (an unknown or closed connection, a message too large).
    #[error(transparent)]
    Refused(#[from] XrdmaError),
    /// Two workers of different networks (or one with itself) cannot be connected.
    #[error("{0}")]
    Setup(String),
    /// A call or request of another worker: its ids mean nothing here.
    #[error("this {0} belongs to another worker")]
    Foreign(&'static str),
    /// This worker's [`crate::Worker::serve`] handler panicked on a message; the message got
    /// no reply.
    #[error("the serve handler panicked on a message of connection {conn:?}: {message}")]
    HandlerPanicked {
        /// The message's connection.
        conn: ConnId,
        /// The panic's message, where it was a string.
        message: String,
    },
}
