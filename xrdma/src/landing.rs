//! Landing buffers for rendezvous: where large messages are RDMA WRITTEN by their senders.
//!
//! When a request to send (RTS) arrives, the receiver grants a landing buffer big enough for
//! the whole message and sends its address and remote key back (CTS); the sender then WRITEs
//! the payload straight into it. Buffers come in power-of-two size classes of at least
//! [`MIN_CLASS`] bytes carved from the worker's MR pool ([`crate::mr_pool::MrPool`]); a freed
//! buffer goes back to its class's free list and serves the next message of that class, so a
//! steady workload registers memory once. A class wastes less than half of its buffer.
//!
//! A buffer whose message was handed to the application as a lease on the buffer itself (no
//! copy out, [`crate::LocalMemory::lend`]) stays in use, and out of reach of new grants,
//! until the application drops the lease ([`LandingPool::lend`], [`LandingPool::give_back`]);
//! it does not count against the landing budget meanwhile ([`crate::Config::landing_budget`]).

use crate::mr_pool::{MrPool, Region};
use std::collections::BTreeMap;

/// The smallest size class, bytes (one default fragment).
pub const MIN_CLASS: u64 = 64 << 10;

/// The size class of a `len`-byte message: the next power of two, at least [`MIN_CLASS`].
pub fn class_of(len: u64) -> u64 {
    len.max(MIN_CLASS)
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX)
}

/// Free landing buffers by size class, and the books of those in use.
#[derive(Clone, Debug, Default)]
pub struct LandingPool {
    free: BTreeMap<u64, Vec<Region>>,
    in_use: u64,
    peak: u64,
    carved: u64,
    /// Buffers lent to the application, by address.
    lent: BTreeMap<u64, Region>,
    lent_bytes: u64,
}

impl LandingPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// A buffer of at least `len` bytes: a free one of its class, else a new one carved from
    /// `pool`; `None` when the pool needs another registered chunk of at least
    /// [`class_of`]`(len)` bytes.
    pub fn alloc(&mut self, len: u64, pool: &mut MrPool) -> Option<Region> {
        let class = class_of(len);
        let r = match self.free.get_mut(&class).and_then(Vec::pop) {
            Some(r) => r,
            None => {
                let r = pool.alloc(class)?;
                self.carved += class;
                r
            }
        };
        self.in_use += class;
        self.peak = self.peak.max(self.in_use);
        Some(r)
    }

    /// Give a buffer back (it must have come from [`LandingPool::alloc`]).
    pub fn free(&mut self, r: Region) {
        self.in_use = self.in_use.saturating_sub(r.len);
        self.free.entry(r.len).or_default().push(r);
    }

    /// Keep `r` (it must have come from [`LandingPool::alloc`]) in use while the application
    /// holds a lease on it: it is freed by [`LandingPool::give_back`] with its address.
    pub fn lend(&mut self, r: Region) {
        self.lent_bytes += r.len;
        self.lent.insert(r.addr, r);
    }

    /// The lease on the buffer at `addr` was dropped: free the buffer. `false` when no
    /// buffer at `addr` is lent (a repeat, or an address this pool never lent).
    pub fn give_back(&mut self, addr: u64) -> bool {
        let Some(r) = self.lent.remove(&addr) else {
            return false;
        };
        self.lent_bytes -= r.len;
        self.free(r);
        true
    }

    /// Bytes of landing buffers lent to the application now (part of
    /// [`LandingPool::in_use_bytes`]).
    pub fn lent_bytes(&self) -> u64 {
        self.lent_bytes
    }

    /// Bytes of landing buffers granted and not yet freed.
    pub fn in_use_bytes(&self) -> u64 {
        self.in_use
    }

    /// The most bytes of landing buffers granted at once so far.
    pub fn peak_in_use_bytes(&self) -> u64 {
        self.peak
    }

    /// Bytes ever carved from the MR pool for landing buffers.
    pub fn carved_bytes(&self) -> u64 {
        self.carved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryRegion;

    #[test]
    fn classes_are_powers_of_two_from_64_kib() {
        assert_eq!(class_of(0), 65536);
        assert_eq!(class_of(4097), 65536);
        assert_eq!(class_of(65536), 65536);
        assert_eq!(class_of(65537), 131072);
        assert_eq!(class_of(1 << 20), 1 << 20);
        assert_eq!(class_of(8 << 20), 8 << 20);
    }

    #[test]
    fn freed_buffers_serve_the_next_message_of_their_class() {
        let mut pool = MrPool::new();
        let mut l = LandingPool::new();
        assert_eq!(l.alloc(100_000, &mut pool), None); // nothing registered yet
        pool.add_chunk(MemoryRegion {
            addr: 0x10_0000,
            len: 4 << 20,
            lkey: 1,
            rkey: 2,
        });
        let a = l.alloc(100_000, &mut pool).unwrap(); // class 128 KiB at the chunk start
        assert_eq!((a.addr, a.len), (0x10_0000, 131072));
        let b = l.alloc(70_000, &mut pool).unwrap(); // same class, next 128 KiB
        assert_eq!(b.addr, 0x10_0000 + 131072);
        assert_eq!(l.in_use_bytes(), 262144);
        l.free(a);
        let c = l.alloc(131072, &mut pool).unwrap(); // reuses a, carves nothing
        assert_eq!(c.addr, a.addr);
        assert_eq!(l.carved_bytes(), 262144);
        // A 4 MiB class does not fit what is left of the chunk.
        assert_eq!(l.alloc(3 << 20, &mut pool), None);
    }

    #[test]
    fn a_lent_buffer_stays_in_use_until_given_back_once() {
        let mut pool = MrPool::new();
        let mut l = LandingPool::new();
        pool.add_chunk(MemoryRegion {
            addr: 0x10_0000,
            len: 4 << 20,
            lkey: 1,
            rkey: 2,
        });
        let a = l.alloc(65536, &mut pool).unwrap();
        l.lend(a);
        assert_eq!((l.in_use_bytes(), l.lent_bytes()), (65536, 65536));
        // Not free: the next grant of its class gets another buffer.
        let b = l.alloc(65536, &mut pool).unwrap();
        assert_ne!(b.addr, a.addr);
        assert!(!l.give_back(b.addr), "b was never lent");
        assert!(l.give_back(a.addr));
        assert!(!l.give_back(a.addr), "a second return frees nothing");
        assert_eq!((l.in_use_bytes(), l.lent_bytes()), (65536, 0));
        assert_eq!(l.alloc(65536, &mut pool).unwrap().addr, a.addr);
    }
}
