//! The QP cache: queue pairs of closed connections, reset and kept for the next connection.
//!
//! Creating an RC QP is the slow part of connection setup on real hardware: `ibv_create_qp`
//! allocates the send and receive queues and, on a ConnectX NIC, runs firmware commands,
//! while moving an existing QP RESET → INIT → RTR → RTS is a handful of `ibv_modify_qp`
//! calls. XRDMA therefore never destroys a closed connection's QP: it moves it back to RESET
//! and hands it to the next connection that asks for the same capacities.
//!
//! A cache belongs to one endpoint on one transport (one worker: QP numbers are only
//! meaningful on the transport that created them). It only keeps the books: the endpoint asks
//! the driver to create a QP on a miss ([`crate::Op::CreateQp`]) and to reset a closed
//! connection's QP ([`crate::Op::ResetQp`]) before putting it here.

use crate::{QpAddress, QpCaps};
use std::collections::BTreeMap;

/// Capacities as an ordered key: (max send WRs, max receive WRs, max inline bytes).
type CapsKey = (u32, u32, u32);

fn key(caps: QpCaps) -> CapsKey {
    (caps.max_send_wr, caps.max_recv_wr, caps.max_inline_data)
}

/// Reset QPs waiting for reuse, by the capacities they were created with.
///
/// [`QpCache::take`] hands out the most recently returned QP with equal capacities (LIFO, so
/// the same sequence of calls reuses the same QPs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QpCache {
    free: BTreeMap<CapsKey, Vec<QpAddress>>,
    hits: u64,
    misses: u64,
}

impl QpCache {
    /// An empty cache.
    pub fn new() -> Self {
        QpCache::default()
    }

    /// QPs waiting for reuse.
    pub fn len(&self) -> usize {
        self.free.values().map(Vec::len).sum()
    }

    /// Whether no QP waits for reuse.
    pub fn is_empty(&self) -> bool {
        self.free.values().all(Vec::is_empty)
    }

    /// [`QpCache::take`] calls served from the cache.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// QPs created because the cache had none to give ([`QpCache::count_created`]).
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Keep `addr`, a QP created with `caps` and reset (RESET, then INIT with a new first
    /// PSN: the address `Transport::reset_qp` returned), for the next connection. Its old
    /// connection must no longer use it.
    pub fn put(&mut self, addr: QpAddress, caps: QpCaps) {
        self.free.entry(key(caps)).or_default().push(addr);
    }

    /// A QP in INIT with capacities `caps`, ready for `connect_qp`: the most recently cached
    /// one, or `None` when there is none (the caller then has one created).
    pub fn take(&mut self, caps: QpCaps) -> Option<QpAddress> {
        let addr = self.free.get_mut(&key(caps)).and_then(Vec::pop)?;
        self.hits += 1;
        Some(addr)
    }

    /// Count a QP created after [`QpCache::take`] found none.
    pub fn count_created(&mut self) {
        self.misses += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_the_last_returned_qp_of_equal_capacities() {
        let caps = QpCaps {
            max_send_wr: 64,
            max_recv_wr: 64,
            max_inline_data: 0,
        };
        let other = QpCaps {
            max_send_wr: 8,
            ..caps
        };
        let qp = |qpn| QpAddress {
            gid: [0; 16],
            lid: 1,
            qpn,
            psn: 0,
        };
        let mut c = QpCache::new();
        assert_eq!(c.take(caps), None);
        c.put(qp(1), caps);
        c.put(qp(2), caps);
        assert_eq!(c.take(other), None, "other capacities miss");
        assert_eq!(c.take(caps).map(|a| a.qpn), Some(2));
        assert_eq!(c.take(caps).map(|a| a.qpn), Some(1));
        assert!(c.is_empty());
        assert_eq!(c.hits(), 2);
    }
}
