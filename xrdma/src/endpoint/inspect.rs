//! Read-only views of what an endpoint holds: per-connection buffers, frames and messages
//! still in use, and the buffers kept for reuse. Tests use them to check that every buffer is
//! back in its pool once the connections are done; none gives `&mut` access to the pools.

use super::{ConnState, Endpoint};
use crate::error::ConnId;

/// What one connection still holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnUsage {
    /// Bytes of the staging ring waiting for an ACK.
    pub ring_used: u64,
    /// Frames and fragments posted and not yet ACKed.
    pub inflight: usize,
    /// Payload bytes of those frames and fragments.
    pub inflight_bytes: u64,
    /// Messages queued (not yet wholly posted).
    pub queued: usize,
    /// Landing buffers granted to the peer and not yet filled.
    pub landings: usize,
    /// Announced messages not yet granted a landing buffer.
    pub pending_rts: usize,
    /// Grants not yet sent.
    pub grants_out: usize,
    /// Send WRs posted whose completion has not been seen.
    pub send_wrs_outstanding: u32,
}

impl ConnUsage {
    /// Whether the connection holds nothing: no ring bytes, frames, messages, landing
    /// buffers or grants.
    pub fn is_idle(&self) -> bool {
        self.ring_used == 0
            && self.inflight == 0
            && self.inflight_bytes == 0
            && self.queued == 0
            && self.landings == 0
            && self.pending_rts == 0
            && self.grants_out == 0
    }
}

impl Endpoint {
    /// What `conn` still holds, or `None` for an unknown connection.
    pub fn usage(&self, conn: ConnId) -> Option<ConnUsage> {
        self.conns.get(conn).map(|c| ConnUsage {
            ring_used: c.ring.used(),
            inflight: c.inflight.len(),
            inflight_bytes: c.inflight_bytes,
            queued: c.queue.len(),
            landings: c.landings.len(),
            pending_rts: c.pending_rts.len(),
            grants_out: c.grants_out.len(),
            send_wrs_outstanding: c.sq_outstanding,
        })
    }

    /// Staging rings and receive buffer sets kept for the next connections (one pair per
    /// connection that ended and gave its buffers back).
    pub fn spare_buffer_count(&self) -> usize {
        self.spare_buffers.len()
    }

    /// Connections waiting for registered memory or landing budget to grant an RTS.
    pub fn waiting_grants(&self) -> usize {
        self.waiting_memory.len() + self.waiting_budget.len()
    }

    /// Messages [`Endpoint::send`] accepted so far, on every connection (the count of
    /// [`crate::MsgId`]s handed out).
    pub fn messages_accepted(&self) -> u64 {
        self.next_msg
    }

    /// Whether `conn` failed.
    pub fn is_failed(&self, conn: ConnId) -> bool {
        self.state(conn) == Some(ConnState::Failed)
    }

    /// Whether `conn` closed cleanly.
    pub fn is_closed(&self, conn: ConnId) -> bool {
        self.state(conn) == Some(ConnState::Closed)
    }
}
