//! Hybrid polling: busy-poll while traffic flows, block on the completion channel when idle.
//!
//! XRDMA's workers spin on the CQ while messages are in flight (a completion is seen within
//! a poll loop's period instead of an interrupt's wake-up latency) and sleep on the
//! completion channel (epoll) when nothing happens, keeping an idle worker's CPU use near
//! zero. [`HybridDriver::step`] runs one [`xrdma::driver::turn`]; when the turn neither
//! polled a completion nor posted a WR, and that has lasted [`HybridPolicy::spin`], it blocks
//! in [`VerbsTransport::arm_and_wait`] until a completion arrives, the core's next timer is
//! due, or [`HybridPolicy::max_block`] passes.

use crate::error::VerbsError;
use crate::transport::VerbsTransport;
use std::time::{Duration, Instant};
use xrdma::driver::{self, Application, TurnScratch};
use xrdma::{Endpoint, Transport};

/// When to stop spinning and how long to block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HybridPolicy {
    /// Keep busy-polling this long after the last activity (default 100 µs: several RTTs of
    /// a hardware RoCE NIC, so a request/response exchange never sleeps in between).
    pub spin: Duration,
    /// Longest single block, so a worker re-checks its application even without timers
    /// (default 100 ms).
    pub max_block: Duration,
}

impl Default for HybridPolicy {
    fn default() -> Self {
        HybridPolicy {
            spin: Duration::from_micros(100),
            max_block: Duration::from_millis(100),
        }
    }
}

/// What one [`HybridDriver::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Completions were polled or WRs posted: keep spinning.
    Busy,
    /// Nothing happened, still inside the spin window.
    Spinning,
    /// Blocked on the completion channel and woke for a completion.
    Woken,
    /// Blocked until the timeout (the core's next timer or `max_block`).
    TimedOut,
}

/// Counters of a [`HybridDriver`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HybridStats {
    /// Driver turns run.
    pub turns: u64,
    /// Times the driver blocked on the completion channel.
    pub blocks: u64,
    /// Blocks that ended with a completion (the rest timed out).
    pub wakeups: u64,
}

/// Drives one endpoint on one [`VerbsTransport`] in hybrid mode.
#[derive(Clone, Debug, Default)]
pub struct HybridDriver {
    policy: HybridPolicy,
    idle_since: Option<Instant>,
    scratch_stats: HybridStats,
}

impl HybridDriver {
    /// A driver with `policy`.
    pub fn new(policy: HybridPolicy) -> Self {
        HybridDriver {
            policy,
            idle_since: None,
            scratch_stats: HybridStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> HybridStats {
        self.scratch_stats
    }

    /// One turn, then possibly one block (see the module documentation).
    ///
    /// # Errors
    /// [`VerbsError`] from [`VerbsTransport::arm_and_wait`].
    pub fn step<A: Application + ?Sized>(
        &mut self,
        ep: &mut Endpoint,
        t: &mut VerbsTransport,
        app: &mut A,
        scratch: &mut TurnScratch,
    ) -> Result<Step, VerbsError> {
        let before = t.completions_polled() + t.work_requests_posted();
        let now = t.now();
        let next = driver::turn(now, ep, t, app, scratch);
        self.scratch_stats.turns += 1;
        if t.completions_polled() + t.work_requests_posted() != before {
            self.idle_since = None;
            return Ok(Step::Busy);
        }
        let wall = Instant::now();
        let since = *self.idle_since.get_or_insert(wall);
        if wall.duration_since(since) < self.policy.spin {
            return Ok(Step::Spinning);
        }
        let wait = match next {
            Some(at) => {
                // The next deadline may already have passed (the turn ran past it): no wait.
                let ps = at.saturating_since(t.now()).as_ps();
                Duration::from_nanos(ps / 1000).min(self.policy.max_block)
            }
            None => self.policy.max_block,
        };
        if wait.is_zero() {
            return Ok(Step::Spinning);
        }
        self.scratch_stats.blocks += 1;
        if t.arm_and_wait(wait)? {
            self.scratch_stats.wakeups += 1;
            self.idle_since = None;
            Ok(Step::Woken)
        } else {
            Ok(Step::TimedOut)
        }
    }
}
