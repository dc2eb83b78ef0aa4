//! Hybrid polling: busy-poll while traffic flows, block on the completion channels when idle.
//!
//! XRDMA's workers spin on the CQ while messages are in flight (a completion is seen within
//! a poll loop's period instead of an interrupt's wake-up latency) and sleep on the
//! completion channel (epoll) when nothing happens, keeping an idle worker's CPU use near
//! zero. [`Hybrid`] is the decision, for any loop that runs turns over transports: after
//! each round it is told the transports' activity (completions polled plus WRs posted) and
//! when a host next needs a turn; once nothing has moved for [`HybridPolicy::spin`] it says
//! how long to block, and [`wait_any`] blocks on every transport's completion channel until
//! a completion arrives or that time passes.

use crate::error::VerbsError;
use crate::transport::VerbsTransport;
use std::time::{Duration, Instant};

/// When to stop spinning and how long to block (the runner's `Polling::HYBRID` holds
/// XRDMA's defaults and why).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HybridPolicy {
    /// Keep busy-polling this long after the last activity.
    pub spin: Duration,
    /// Longest single block, so a loop re-checks what it waits for even without timers.
    pub max_block: Duration,
}

/// Counters of a [`Hybrid`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HybridStats {
    /// Rounds observed.
    pub rounds: u64,
    /// Times the loop blocked on the completion channels.
    pub blocks: u64,
    /// Blocks that ended with a completion (the rest timed out).
    pub wakeups: u64,
}

/// The spin-then-block decision of one polling loop (see the module documentation).
#[derive(Clone, Debug)]
pub struct Hybrid {
    policy: HybridPolicy,
    /// The activity count last seen.
    activity: u64,
    /// When the activity count last stopped moving.
    idle_since: Option<Instant>,
    stats: HybridStats,
}

impl Hybrid {
    /// A loop following `policy`.
    pub fn new(policy: HybridPolicy) -> Self {
        Hybrid {
            policy,
            activity: 0,
            idle_since: None,
            stats: HybridStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> HybridStats {
        self.stats
    }

    /// After a round whose transports' running activity count (completions polled plus WRs
    /// posted, summed) is `activity`: whether nothing has moved for the spin time, so the
    /// loop may block ([`Hybrid::wait`]). Reads the wall clock only while nothing moves.
    pub fn idle(&mut self, activity: u64) -> bool {
        self.stats.rounds += 1;
        if activity != self.activity {
            self.activity = activity;
            self.idle_since = None;
            return false;
        }
        let now = Instant::now();
        let since = *self.idle_since.get_or_insert(now);
        now.duration_since(since) >= self.policy.spin
    }

    /// How long an idle loop blocks, the earliest host wake being `next` from now (`None`:
    /// none): until then, at most [`HybridPolicy::max_block`]; `None` (spin) when it is due.
    pub fn wait(&self, next: Option<Duration>) -> Option<Duration> {
        let wait = next.map_or(self.policy.max_block, |n| n.min(self.policy.max_block));
        (!wait.is_zero()).then_some(wait)
    }

    /// A block ended: `woken` by a completion, or not (timed out). After a completion the
    /// loop spins again.
    pub fn blocked(&mut self, woken: bool) {
        self.stats.blocks += 1;
        if woken {
            self.stats.wakeups += 1;
            self.idle_since = None;
        }
    }
}

/// Block until a completion arrives on any of `hosts` or `timeout` passes; `true` when
/// completions are ready for [`xrdma::Transport::poll_cq`] (or the wait was interrupted: the
/// caller polls and decides), `false` on timeout.
///
/// Arms each CQ ([`VerbsTransport::arm`]: a completion that came before arming is found by
/// its re-poll and returns at once), blocks in `ppoll(2)` on every completion channel, then
/// reads and acknowledges the events. A wake-up can be spurious (an event left from an
/// earlier arming); callers just poll again.
///
/// # Errors
/// [`VerbsError::Verb`] when arming, `ppoll` or reading an event fails.
pub fn wait_any(hosts: &mut [VerbsTransport], timeout: Duration) -> Result<bool, VerbsError> {
    for t in hosts.iter_mut() {
        if t.arm()? {
            return Ok(true);
        }
    }
    let mut fds: Vec<libc::pollfd> = hosts
        .iter()
        .map(|t| libc::pollfd {
            fd: t.channel_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    let n = libc::nfds_t::try_from(fds.len()).unwrap_or(libc::nfds_t::MAX);
    // SAFETY: `fds` holds `n` valid pollfds for the call's duration, `ts` is a valid
    // timespec, and no signal mask is passed.
    let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), n, &ts, std::ptr::null()) };
    if rc < 0 {
        let err = std::io::Error::last_os_error();
        if err.kind() == std::io::ErrorKind::Interrupted {
            return Ok(true);
        }
        return Err(VerbsError::verb("ppoll", err.raw_os_error().unwrap_or(0)));
    }
    if rc == 0 {
        return Ok(false);
    }
    for t in hosts.iter_mut() {
        t.take_events()?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_blocks_only_once_nothing_has_moved_for_the_spin_time() {
        let policy = HybridPolicy {
            spin: Duration::ZERO,
            max_block: Duration::from_millis(100),
        };
        let mut h = Hybrid::new(policy);
        let soon = Some(Duration::from_millis(3));
        // Activity moved: spin.
        assert!(!h.idle(5));
        // Nothing moved, spin time over: block until the earliest wake.
        assert!(h.idle(5));
        assert_eq!(h.wait(soon), soon);
        // No wake: at most max_block; a wake due now: spin.
        assert_eq!(h.wait(None), Some(policy.max_block));
        assert_eq!(h.wait(Some(Duration::from_secs(9))), Some(policy.max_block));
        assert_eq!(h.wait(Some(Duration::ZERO)), None);
        // A completion woke it: spinning again until the activity stops moving.
        h.blocked(true);
        assert!(!h.idle(6));
        assert_eq!(h.stats().rounds, 3);
        assert_eq!((h.stats().blocks, h.stats().wakeups), (1, 1));
    }

    #[test]
    fn it_spins_for_the_spin_time_after_the_last_activity() {
        let mut h = Hybrid::new(HybridPolicy {
            spin: Duration::from_secs(3600),
            max_block: Duration::from_millis(100),
        });
        for _ in 0..1000 {
            assert!(!h.idle(1));
        }
    }
}
