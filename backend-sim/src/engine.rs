//! The event queue: a binary min-heap keyed by `(time, insertion sequence)`, so events at the
//! same picosecond run in the order they were scheduled, plus the trace hash.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
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

#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    seq: u64,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed so `BinaryHeap` (a max-heap) pops the earliest (time, seq) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .time
            .cmp(&self.time)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// FNV-1a 64-bit offset basis and prime (Fowler–Noll–Vo, IETF draft-eastlake-fnv).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The pending events and the running trace hash.
#[derive(Debug)]
pub(crate) struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    hash: u64,
    processed: u64,
}

impl EventQueue {
    pub(crate) fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            hash: FNV_OFFSET,
            processed: 0,
        }
    }

    /// Schedule `ev` at `time`.
    #[inline]
    pub(crate) fn push(&mut self, time: Time, ev: Event) {
        self.seq += 1;
        self.heap.push(Entry {
            time: time.as_ps(),
            seq: self.seq,
            ev,
        });
    }

    /// Time of the earliest pending event.
    #[inline]
    pub(crate) fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| Time::from_ps(e.time))
    }

    /// Remove the earliest event, folding it into the trace hash.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(Time, Event)> {
        let e = self.heap.pop()?;
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
