//! What an application asks of the message stack it runs on ([`Messages`]): send a whole
//! message on a connection, see how many wait, and name a connection's peer. xrdma's
//! [`Endpoint`] is one such stack; a run's workloads are written against this trait only,
//! so the same sender and receiver run over any stack the scenario chooses, and learn nothing
//! of which one they have. What comes back from a stack is an [`crate::Event`].

use crate::{ConnId, Endpoint, MsgId, Time, XrdmaError};
use bytes::Bytes;

/// A message stack as an application sees it (see the module doc).
pub trait Messages {
    /// Queue a whole message on `conn` at `now`; the application hears [`crate::Event::Sent`]
    /// once the peer has all of it, or [`crate::Event::SendFailed`].
    ///
    /// # Errors
    /// The stack's refusal: an unknown, failed or closed connection, or a message larger than
    /// the stack takes ([`XrdmaError`]).
    fn send(&mut self, now: Time, conn: ConnId, data: Bytes) -> Result<MsgId, XrdmaError>;
    /// Messages queued on `conn` and not yet wholly handed to the network (for applications
    /// that feed lazily).
    fn queued_messages(&self, conn: ConnId) -> usize;
    /// The peer label given when `conn` was set up (a host index or rank); `None` for an
    /// unknown connection.
    fn peer(&self, conn: ConnId) -> Option<u32>;
    /// Messages accepted by [`Messages::send`] so far (the host model charges each).
    fn messages_accepted(&self) -> u64;
}

impl Messages for Endpoint {
    fn send(&mut self, now: Time, conn: ConnId, data: Bytes) -> Result<MsgId, XrdmaError> {
        Endpoint::send(self, now, conn, data)
    }
    fn queued_messages(&self, conn: ConnId) -> usize {
        Endpoint::queued_messages(self, conn)
    }
    fn peer(&self, conn: ConnId) -> Option<u32> {
        Endpoint::peer(self, conn)
    }
    fn messages_accepted(&self) -> u64 {
        Endpoint::messages_accepted(self)
    }
}

/// Any message stack, as applications written for every stack take it
/// (`impl Application<AnyStack> for …`; a runner hands its concrete stack in as this).
pub type AnyStack = dyn Messages + 'static;
