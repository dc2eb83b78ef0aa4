//! [`Clock`]: the one wall clock of a verbs run, shared by a fabric and all its transports.
//!
//! The core compares instants from every input of an endpoint (`now - posted` for an RTT,
//! a timer's deadline against `now`), and `Time - Time` panics when the later operand is
//! the larger one. So whatever hands an endpoint its `now` — the runner's fabric on every
//! turn, the driver's `open` and `establish` through [`xrdma::Transport::now`] — must read
//! the same clock: two clocks started at different instants (or one restarted) disagree by
//! their offset, and an instant read from the one running ahead, subtracted from the other,
//! panics. A [`crate::VerbsTransport`] made with [`crate::VerbsTransport::with_clock`]
//! reads the clock it is given; a fabric gives every one of its transports its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use xrdma::{Span, Time};

/// A monotonic wall clock reading [`Time`] from its start (or its last [`Clock::restart`]),
/// nanosecond resolution. Clones share one clock: a restart through any clone moves them
/// all.
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    base: Instant,
    /// Nanoseconds from `base` to the clock's time zero (the last restart).
    origin_ns: AtomicU64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock at time zero now.
    pub fn new() -> Clock {
        Clock {
            inner: Arc::new(Inner {
                base: Instant::now(),
                origin_ns: AtomicU64::new(0),
            }),
        }
    }

    fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.inner.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Now: the time since the clock's zero.
    pub fn now(&self) -> Time {
        let origin = self.inner.origin_ns.load(Ordering::Relaxed);
        Time::ZERO + Span::from_ns(self.elapsed_ns().saturating_sub(origin))
    }

    /// Move time zero to now, for every clone. Instants read before are then in the future:
    /// restart only before any of them is handed to an endpoint that will compare them with
    /// later ones (ranks restart on their common start, before the run's first turn, when
    /// their endpoints hold no instant yet).
    pub fn restart(&self) {
        self.inner
            .origin_ns
            .store(self.elapsed_ns(), Ordering::Relaxed);
    }

    /// Whether `other` is this clock (a clone of it), not merely one that reads alike.
    pub fn same_as(&self, other: &Clock) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn clones_read_one_clock_and_restart_together() {
        let a = Clock::new();
        let b = a.clone();
        std::thread::sleep(Duration::from_millis(20));
        assert!(a.now() >= Time::ZERO + Span::from_ms(20));
        b.restart();
        // Both read the restarted clock: well under the 20 ms that had passed.
        let (ta, tb) = (a.now(), b.now());
        assert!(ta < Time::ZERO + Span::from_ms(10), "{ta:?}");
        assert!(tb < Time::ZERO + Span::from_ms(10), "{tb:?}");
        assert!(a.same_as(&b));
        assert!(!a.same_as(&Clock::new()));
    }

    #[test]
    fn it_never_goes_back_between_restarts() {
        let c = Clock::new();
        let mut last = c.now();
        for _ in 0..1000 {
            let t = c.now();
            assert!(t >= last);
            last = t;
        }
    }
}
