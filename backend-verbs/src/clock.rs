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
//!
//! A run's time zero is its first turn, not the creation of its QPs and MRs: setting up a
//! scenario's connections takes 0.1–1 s on Soft-RoCE, and a message meant for `t = 0`
//! would otherwise carry all of it in its completion time. So a fabric's clock is made
//! [`Clock::held`]: it reads zero through the setup (every instant an endpoint takes then is
//! zero, never later than what it reads once the run runs) and starts at [`Clock::start`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use xrdma::{Span, Time};

/// `Inner::origin_ns` of a clock that has not started.
const HELD: u64 = u64::MAX;

/// A monotonic wall clock reading [`Time`] from its start, nanosecond resolution; a
/// [`Clock::held`] one reads zero until [`Clock::start`]. Clones share one clock: a start
/// through any clone starts them all.
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    base: Instant,
    /// Nanoseconds from `base` to the clock's time zero; [`HELD`] until the clock starts.
    origin_ns: AtomicU64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock started now: it reads zero now.
    pub fn new() -> Clock {
        Clock::with_origin(0)
    }

    /// A clock held at zero: it reads [`Time::ZERO`] until [`Clock::start`] (a run's
    /// setup, whose instants must not count in the run's times).
    pub fn held() -> Clock {
        Clock::with_origin(HELD)
    }

    fn with_origin(origin_ns: u64) -> Clock {
        Clock {
            inner: Arc::new(Inner {
                base: Instant::now(),
                origin_ns: AtomicU64::new(origin_ns),
            }),
        }
    }

    fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.inner.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Now: the time since the clock's start; [`Time::ZERO`] while it is held.
    pub fn now(&self) -> Time {
        let origin = self.inner.origin_ns.load(Ordering::Relaxed);
        if origin == HELD {
            return Time::ZERO;
        }
        Time::ZERO + Span::from_ns(self.elapsed_ns().saturating_sub(origin))
    }

    /// Start a held clock now, for every clone; a clock that runs already is left alone
    /// (so no instant read from it is ever later than one read after). Returns the time
    /// now, as [`Clock::now`] would.
    pub fn start(&self) -> Time {
        if self.started() {
            return self.now();
        }
        let now = self.elapsed_ns().min(HELD - 1);
        // Only the first start moves the origin; a lost race leaves the winner's.
        let _ =
            self.inner
                .origin_ns
                .compare_exchange(HELD, now, Ordering::Relaxed, Ordering::Relaxed);
        self.now()
    }

    /// Whether the clock runs (it was made with [`Clock::new`], or started).
    pub fn started(&self) -> bool {
        self.inner.origin_ns.load(Ordering::Relaxed) != HELD
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
    fn a_held_clock_reads_zero_until_started_and_clones_start_together() {
        let a = Clock::held();
        let b = a.clone();
        assert!(!a.started());
        std::thread::sleep(Duration::from_millis(20));
        // The 20 ms of "setup" do not count.
        assert_eq!(a.now(), Time::ZERO);
        assert_eq!(b.now(), Time::ZERO);
        let t0 = b.start();
        assert!(a.started() && b.started());
        let (ta, tb) = (a.now(), b.now());
        assert!(t0 <= ta && ta <= tb, "{t0:?} {ta:?} {tb:?}");
        assert!(tb < Time::ZERO + Span::from_ms(10), "{tb:?}");
        assert!(a.same_as(&b));
        assert!(!a.same_as(&Clock::new()));
    }

    #[test]
    fn starting_a_running_clock_leaves_it_alone() {
        let c = Clock::new();
        assert!(c.started());
        std::thread::sleep(Duration::from_millis(20));
        let before = c.now();
        // A second start must not move time zero: instants read before would be in the
        // future, and `Time - Time` across them would panic.
        let after = c.start();
        assert!(after >= before, "{before:?} then {after:?}");
        assert!(after >= Time::ZERO + Span::from_ms(20));
        let held = Clock::held();
        held.start();
        std::thread::sleep(Duration::from_millis(20));
        let t = held.now();
        assert!(held.start() >= t);
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
