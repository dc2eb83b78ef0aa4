//! The QP cache: queue pairs of closed connections, reset and kept for the next connection.
//!
//! Creating an RC QP is the slow part of connection setup on real hardware: `ibv_create_qp`
//! allocates the send and receive queues and, on a ConnectX NIC, runs firmware commands,
//! while moving an existing QP RESET → INIT → RTR → RTS is a handful of `ibv_modify_qp`
//! calls. XRDMA therefore never destroys a closed connection's QP: it moves it back to RESET
//! and hands it to the next connection that asks for the same capacities.
//!
//! A cache belongs to one [`Transport`] (one worker: QP numbers are only meaningful on the
//! transport that created them). It is sans-IO like the rest of the core: it only calls the
//! transport's `create_qp` and `reset_qp`.

use crate::{QpAddress, QpCaps, QpNum, Transport, TransportError};
use std::collections::BTreeMap;

/// Capacities as an ordered key: (max send WRs, max receive WRs, max inline bytes).
type CapsKey = (u32, u32, u32);

fn key(caps: QpCaps) -> CapsKey {
    (caps.max_send_wr, caps.max_recv_wr, caps.max_inline_data)
}

/// Reset QPs waiting for reuse, by the capacities they were created with.
///
/// [`QpCache::take`] hands out the most recently returned QP with equal capacities (LIFO, so
/// the same sequence of calls reuses the same QPs), else creates one.
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

    /// [`QpCache::take`] calls that had to create a QP.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Return `qpn`, created on `t` with `caps`, to the cache: the QP is moved to RESET
    /// (outstanding WRs are discarded) and back to INIT with a new first PSN
    /// ([`Transport::reset_qp`]). Returns its new address.
    ///
    /// The caller must no longer use `qpn` for its old connection.
    ///
    /// # Errors
    /// The transport's error from `reset_qp` (the QP is then not cached).
    pub fn put<T: Transport + ?Sized>(
        &mut self,
        t: &mut T,
        qpn: QpNum,
        caps: QpCaps,
    ) -> Result<QpAddress, TransportError> {
        let addr = t.reset_qp(qpn)?;
        self.free.entry(key(caps)).or_default().push(addr);
        Ok(addr)
    }

    /// A QP in INIT with capacities `caps`, ready for `connect_qp`: a cached one when there is
    /// one, else a new one from [`Transport::create_qp`]. Returns its address and whether it
    /// came from the cache.
    ///
    /// # Errors
    /// The transport's error from `create_qp`.
    pub fn take<T: Transport + ?Sized>(
        &mut self,
        t: &mut T,
        caps: QpCaps,
    ) -> Result<(QpAddress, bool), TransportError> {
        if let Some(addr) = self.free.get_mut(&key(caps)).and_then(Vec::pop) {
            self.hits += 1;
            return Ok((addr, true));
        }
        let addr = t.create_qp(caps)?;
        self.misses += 1;
        Ok((addr, false))
    }
}
