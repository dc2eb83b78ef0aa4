//! A simulated run's progress while it runs: every [`STATUS_EVERY`] of wall time the turn
//! loop hands its endpoints over ([`Watch`]), and the progress line shows the simulated time,
//! the events per second since the last look and the messages ACKed so far.

use std::time::{Duration, Instant};

use xrdma::Time;
use xrdma_runner::watch::{LiveStat, Watch};

use crate::progress::Progress;

/// How often the status is brought up to date, wall time.
pub const STATUS_EVERY: Duration = Duration::from_secs(1);

/// Rounds between two reads of the wall clock (a round is cheap; the clock, less so).
const ROUNDS_PER_CLOCK_READ: u32 = 64;

/// The [`Watch`] of a run with a progress line: it answers `inner` (a stat socket, or
/// nothing) as before and takes its own look every [`STATUS_EVERY`].
pub struct ProgressWatch<'a> {
    progress: &'a Progress,
    inner: &'a mut dyn Watch,
    rounds: u32,
    next: Instant,
    inner_due: bool,
    mine_due: bool,
    /// The previous look: when, and the events then.
    last: Option<(Instant, u64)>,
}

impl<'a> ProgressWatch<'a> {
    /// A watch that shows how far a run got on `progress`.
    pub fn new(progress: &'a Progress, inner: &'a mut dyn Watch) -> Self {
        ProgressWatch {
            progress,
            inner,
            rounds: 0,
            next: Instant::now() + STATUS_EVERY,
            inner_due: false,
            mine_due: false,
            last: None,
        }
    }
}

impl Watch for ProgressWatch<'_> {
    fn due(&mut self, now: Time) -> bool {
        self.inner_due = self.inner.due(now);
        self.rounds = self.rounds.wrapping_add(1);
        self.mine_due = self.rounds % ROUNDS_PER_CLOCK_READ == 0 && Instant::now() >= self.next;
        self.inner_due || self.mine_due
    }

    fn take(&mut self, stat: LiveStat) {
        if self.mine_due {
            let at = Instant::now();
            let rate = match (self.last, stat.events) {
                (Some((then, before)), Some(events)) => {
                    let s = at.duration_since(then).as_secs_f64();
                    (s > 0.0).then(|| events.saturating_sub(before) as f64 / s)
                }
                _ => None,
            };
            self.progress.status(&status_line(&stat, rate));
            self.last = stat.events.map(|e| (at, e));
            self.next = at + STATUS_EVERY;
        }
        if self.inner_due {
            self.inner.take(stat);
        }
    }
}

/// `12.345 ms simulated, 4.21 M events/s, 1234 messages ACKed`: the simulated time of
/// `stat`, the event rate `events_per_s` (left out when unknown) and the messages its
/// endpoints' connections have had fully ACKed — both ways, heartbeats included, so the
/// workload's own count is not a bound and is not shown.
pub fn status_line(stat: &LiveStat, events_per_s: Option<f64>) -> String {
    let acked: u64 = stat
        .endpoints
        .iter()
        .flat_map(|e| &e.snapshot.connections)
        .map(|c| c.stats.messages_sent)
        .sum();
    let rate = events_per_s.map_or_else(String::new, |r| format!(", {:.2} M events/s", r / 1e6));
    format!(
        "{} simulated{rate}, {acked} messages ACKed",
        xrdma::Span::from_ps(stat.at_ps)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_says_time_rate_and_messages() {
        let stat = LiveStat {
            pid: 1,
            backend: xrdma_reports::Backend::Sim,
            at_ps: 12_345_000_000,
            endpoints: Vec::new(),
            device: None,
            placement: None,
            events: Some(10),
        };
        assert_eq!(
            status_line(&stat, Some(4_210_000.0)),
            "12.345 ms simulated, 4.21 M events/s, 0 messages ACKed"
        );
        assert_eq!(
            status_line(&stat, None),
            "12.345 ms simulated, 0 messages ACKed"
        );
    }
}
