//! The event queue: a radix heap keyed by `(time, insertion sequence)`, so events at the same
//! picosecond run in the order they were scheduled, plus the trace hash.
//!
//! Simulated time only moves forward: every event is scheduled at or after the time of the
//! last one popped. That is what a radix heap needs (Ahuja, Mehlhorn, Orlin and Tarjan,
//! "Faster algorithms for the shortest path problem", JACM 1990): an event goes into the
//! bucket of the highest bit in which its time differs from the last popped time, in O(1);
//! the earliest events are in the lowest non-empty bucket, and an event moves to a lower
//! bucket at most 64 times over its life. Events at the last popped time wait in a FIFO in
//! insertion order, so the order is exactly `(time, sequence)`, as a binary heap's would be,
//! and the trace hash with it.
//!
//! One exception to "forward only": a lazy timer that is popped and found not due does not
//! move the simulator's clock, so the hosts may then schedule events before it. Those few go
//! to a small binary heap beside the buckets, and each pop takes the earlier of its head and
//! the buckets' head.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use xrdma::Time;

/// One scheduled event. Compact (`Copy`, 12 bytes of payload); every id indexes a `Vec` in
/// the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// Host `0`'s NIC finished serializing its current packet onto its uplink.
    HostTxDone(u32),
    /// The head packet in flight on host `0`'s uplink reaches the switch.
    UpArrive(u32),
    /// Global switch port `0` finished serializing its current packet onto its link.
    SwitchTxDone(u32),
    /// The head packet in flight on the link of global port `0` reaches its peer (a host or
    /// another switch's port).
    DownArrive(u32),
    /// The RNR timer of QP index `qp` on `host` expires.
    RnrTimer {
        /// Host index.
        host: u32,
        /// QP index on that host.
        qp: u32,
    },
    /// A wake-up requested for host `0`; it counts only if it is the host's queued wake and
    /// the host still wants to be woken at this time (see `Simulation::set_wake`), or if it is
    /// the host model's one wake (a CQE visible, the CPU free; see `host_model::clock`).
    Wake(u32),
    /// Host `0`'s NIC may send again: the earliest time a rate-limited QP becomes eligible
    /// (at most one pending per NIC that matters; stale ones are ignored).
    NicWake(u32),
    /// The retransmission (local ACK) timer of QP index `qp` on `host` may have expired (at
    /// most one pending per QP; the deadline is re-checked when it fires).
    RetransmitTimer {
        /// Host index.
        host: u32,
        /// QP index on that host.
        qp: u32,
    },
    /// The retransmission or delayed-ACK timer of TCP socket `0` may have expired (at most
    /// one pending per socket that counts; see `crate::tcp::host`).
    TcpTimer(u32),
    /// The receiving kernel has done its work on TCP segment `0` (a packet pool id): the
    /// segment takes effect (with the host model only; see `crate::tcp::host`).
    TcpRx(u32),
}

impl Event {
    /// `(kind, a, b)` words fed to the trace hash.
    fn words(self) -> (u64, u64) {
        match self {
            Event::HostTxDone(h) => (1, h as u64),
            Event::UpArrive(h) => (2, h as u64),
            Event::SwitchTxDone(p) => (3, p as u64),
            Event::DownArrive(p) => (4, p as u64),
            Event::RnrTimer { host, qp } => (5, (host as u64) << 32 | qp as u64),
            Event::Wake(host) => (6, host as u64),
            Event::NicWake(h) => (10, h as u64),
            Event::RetransmitTimer { host, qp } => (11, (host as u64) << 32 | qp as u64),
            Event::TcpTimer(s) => (12, s as u64),
            Event::TcpRx(id) => (13, id as u64),
        }
    }
}

/// The bucket of an event at `time` when the last popped time is `last` (`time > last`).
#[inline]
fn bucket(time: u64, last: u64) -> usize {
    (u64::BITS - (time ^ last).leading_zeros()) as usize
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    ev: Event,
}

impl Entry {
    fn key(&self) -> (u64, u64) {
        (self.time, self.seq)
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// FNV-1a 64-bit offset basis and prime (Fowler–Noll–Vo, IETF draft-eastlake-fnv).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Buckets of the radix heap: bucket `i` (1 to 64) holds the events whose time first differs
/// from `last` in bit `i - 1`.
const BUCKETS: usize = 65;

/// The pending events and the running trace hash.
#[derive(Debug)]
pub(crate) struct EventQueue {
    /// Events at time `last`, in insertion order (bucket 0).
    current: VecDeque<Entry>,
    buckets: [Vec<Entry>; BUCKETS],
    /// Bit `i` set when `buckets[i]` holds an event.
    occupied: u128,
    /// Events scheduled before `last` (after a lazy timer that was not due), earliest first.
    early: BinaryHeap<Reverse<Entry>>,
    /// The time of the last event taken into `current`, ps.
    last: u64,
    seq: u64,
    hash: u64,
    processed: u64,
}

impl EventQueue {
    pub(crate) fn new() -> Self {
        EventQueue {
            current: VecDeque::with_capacity(1024),
            buckets: std::array::from_fn(|_| Vec::new()),
            occupied: 0,
            early: BinaryHeap::new(),
            last: 0,
            seq: 0,
            hash: FNV_OFFSET,
            processed: 0,
        }
    }

    /// Schedule `ev` at `time`.
    #[inline]
    pub(crate) fn push(&mut self, time: Time, ev: Event) {
        self.seq += 1;
        let e = Entry {
            time: time.as_ps(),
            seq: self.seq,
            ev,
        };
        match e.time.cmp(&self.last) {
            Ordering::Equal => self.current.push_back(e),
            Ordering::Greater => {
                let b = bucket(e.time, self.last);
                self.buckets[b].push(e);
                self.occupied |= 1 << b;
            }
            Ordering::Less => self.early.push(Reverse(e)),
        }
    }

    /// Move the earliest events into `current` when it is empty: the lowest non-empty
    /// bucket's earliest time becomes `last`, its events at that time go to `current` in
    /// insertion order, and the rest to lower buckets.
    #[inline]
    fn refill(&mut self) {
        if !self.current.is_empty() || self.occupied == 0 {
            return;
        }
        let b = self.occupied.trailing_zeros() as usize;
        let mut drained = std::mem::take(&mut self.buckets[b]);
        self.occupied &= !(1 << b);
        let min = drained.iter().map(|e| e.time).min().unwrap_or(self.last);
        self.last = min;
        for e in drained.drain(..) {
            if e.time == min {
                self.current.push_back(e);
            } else {
                let to = bucket(e.time, min);
                self.buckets[to].push(e);
                self.occupied |= 1 << to;
            }
        }
        // Events of one bucket were pushed in insertion order, except those moved down from
        // a higher bucket later; put the few that share the earliest time back in order.
        let current = self.current.make_contiguous();
        if current.windows(2).any(|w| w[0].seq > w[1].seq) {
            current.sort_unstable_by_key(|e| e.seq);
        }
        self.buckets[b] = drained;
    }

    /// Whether the earliest event is the early heap's head rather than `current`'s.
    #[inline]
    fn early_first(&self) -> bool {
        match (self.early.peek(), self.current.front()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(Reverse(a)), Some(b)) => a < b,
        }
    }

    /// Time of the earliest pending event.
    #[inline]
    pub(crate) fn peek_time(&mut self) -> Option<Time> {
        self.refill();
        let e = if self.early_first() {
            self.early.peek().map(|Reverse(e)| e)
        } else {
            self.current.front()
        };
        e.map(|e| Time::from_ps(e.time))
    }

    /// Remove the earliest event, folding it into the trace hash.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(Time, Event)> {
        self.refill();
        let e = if self.early_first() {
            self.early.pop().map(|Reverse(e)| e)
        } else {
            self.current.pop_front()
        }?;
        self.processed += 1;
        let (kind, ids) = e.ev.words();
        // FNV-1a applied to 64-bit words instead of bytes (one xor-multiply per word).
        let mut h = self.hash;
        for w in [e.time, kind, ids] {
            h = (h ^ w).wrapping_mul(FNV_PRIME);
        }
        self.hash = h;
        Some((Time::from_ps(e.time), e.ev))
    }

    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    pub(crate) fn processed(&self) -> u64 {
        self.processed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Time::from_ps(5), Event::HostTxDone(1));
        q.push(Time::from_ps(3), Event::HostTxDone(2));
        q.push(Time::from_ps(5), Event::HostTxDone(3));
        q.push(Time::from_ps(3), Event::HostTxDone(4));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Time::from_ps(3), Event::HostTxDone(2)),
                (Time::from_ps(3), Event::HostTxDone(4)),
                (Time::from_ps(5), Event::HostTxDone(1)),
                (Time::from_ps(5), Event::HostTxDone(3)),
            ]
        );
        assert_eq!(q.processed(), 4);
        assert!(q.peek_time().is_none());
    }

    proptest::proptest! {
        /// Any interleaving of pushes (at or after the last popped time) and pops comes out
        /// in exactly the `(time, insertion)` order a binary heap gives.
        #[test]
        fn pops_as_a_binary_heap_would(
            ops in proptest::collection::vec((0u64..5, 0u64..1 << 20, proptest::bool::ANY), 1..400),
        ) {
            use std::cmp::Reverse;
            use std::collections::BinaryHeap;
            let mut q = EventQueue::new();
            let mut heap = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u32);
            for (kind, delta, pop) in ops {
                if pop {
                    let want = heap.pop().map(|Reverse((t, s))| (Time::from_ps(t), Event::UpArrive(s)));
                    proptest::prop_assert_eq!(q.pop(), want);
                    if let Some((t, _)) = want {
                        now = t.as_ps();
                    }
                } else {
                    // Same time, the next picosecond, nearby, or far ahead.
                    // or (as after a lazy timer not due) before the last popped time.
                    let t = match kind {
                        0 => now,
                        1 => now + 1,
                        2 => now + delta % 1000,
                        3 => now + (delta << 20),
                        _ => now.saturating_sub(delta % 5000),
                    };
                    seq += 1;
                    q.push(Time::from_ps(t), Event::UpArrive(seq));
                    heap.push(Reverse((t, seq)));
                }
            }
            while let Some(Reverse((t, s))) = heap.pop() {
                proptest::prop_assert_eq!(q.pop(), Some((Time::from_ps(t), Event::UpArrive(s))));
            }
            proptest::prop_assert_eq!(q.pop(), None);
        }
    }

    #[test]
    fn hash_depends_on_order_and_content() {
        let run = |evs: &[(u64, Event)]| {
            let mut q = EventQueue::new();
            for &(t, e) in evs {
                q.push(Time::from_ps(t), e);
            }
            while q.pop().is_some() {}
            q.hash()
        };
        let a = run(&[(1, Event::UpArrive(0)), (2, Event::UpArrive(1))]);
        let b = run(&[(1, Event::UpArrive(0)), (2, Event::UpArrive(1))]);
        let c = run(&[(1, Event::UpArrive(1)), (2, Event::UpArrive(0))]);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
