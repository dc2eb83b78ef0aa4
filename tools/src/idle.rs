//! `xrdma idle`: the CPU an idle xrdma worker costs in hybrid polling mode, on an RDMA device.
//!
//! Two workers on the device are connected and exchange a few messages (so both have spun
//! through the busy-polling half), then stay idle. The fabric's loop runs them as the
//! runner and the application workers do, in [`Polling::HYBRID`]: it busy-polls for the spin
//! time after the last activity, then blocks on the CQs' completion channels. Over the idle
//! period the process's CPU time
//! (`utime + stime`, [`super::cpu`]) is read before and after; the result is that CPU time as
//! a percentage of one core over the same wall time.

use super::cpu::process_cpu_seconds;
use super::ping::Echo;
use super::{connect_pair, drive};
use crate::outln;
use anyhow::{bail, Result};
use bytes::Bytes;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use xrdma::driver::Application;
use xrdma::{Config, ConnId, Endpoint, Event, Time};
use xrdma_runner::fabric::{Polling, PollingStats, VerbsFabric};

/// Round trips exchanged before the idle period.
pub const WARMUP_ROUND_TRIPS: u32 = 100;

/// What an idle run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct IdleReport {
    /// Wall time of the idle period, s.
    pub wall_seconds: f64,
    /// Process CPU time over it (user + system), s.
    pub cpu_seconds: f64,
    /// The hybrid loop's counters over the idle period (rounds, blocks, wake-ups).
    pub polling: PollingStats,
}

impl IdleReport {
    /// CPU time as a percentage of one core.
    pub fn cpu_percent(&self) -> f64 {
        100.0 * self.cpu_seconds / self.wall_seconds
    }
}

/// Sends `left` messages one at a time, each after the previous one's echo.
struct Pinger {
    conn: ConnId,
    left: u32,
    waiting: bool,
    errors: Vec<String>,
}

impl Application for Pinger {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { .. } => self.waiting = false,
            Event::SendFailed { error, .. } | Event::ConnectionFailed { error, .. } => {
                self.errors.push(error.to_string())
            }
            // Nothing else concerns this tool, nor any kind of event the core adds later.
            _ => {}
        }
    }

    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        if self.waiting || self.left == 0 || !self.errors.is_empty() {
            return;
        }
        match ep.send(now, self.conn, Bytes::from_static(&[7u8; 64])) {
            Ok(_) => {
                self.left -= 1;
                self.waiting = true;
            }
            Err(e) => self.errors.push(e.to_string()),
        }
    }

    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Warm up, then keep both workers of `fabric` idle for `seconds` in [`Polling::HYBRID`]
/// (spin 100 µs, block at most 100 ms at a time).
///
/// # Errors
/// Setup or warm-up failures, a hybrid loop that fell back to busy polling, or a
/// non-positive duration.
pub fn run(fabric: &mut VerbsFabric, seconds: f64) -> Result<IdleReport> {
    if !(seconds > 0.0 && seconds.is_finite()) {
        bail!("--seconds must be a positive number, not {seconds}");
    }
    let mut pair = connect_pair(fabric, &Config::default())?;
    fabric.set_polling(Polling::HYBRID);
    let mut client = Pinger {
        conn: pair.conns[0],
        left: WARMUP_ROUND_TRIPS,
        waiting: false,
        errors: Vec::new(),
    };
    let mut server = Echo::default();
    let warm = |c: &Pinger, s: &Echo| {
        (c.left == 0 && !c.waiting) || !c.errors.is_empty() || !s.errors.is_empty()
    };
    drive(fabric, &mut pair, &mut client, &mut server, warm)?;
    if let Some(e) = client.errors.first().or(server.errors.first()) {
        bail!("warm-up failed: {e}");
    }
    let before = fabric_stats(fabric)?;
    let period = Duration::from_secs_f64(seconds);
    let cpu0 = process_cpu_seconds()?;
    let t0 = Instant::now();
    drive(fabric, &mut pair, &mut client, &mut server, |_, _| {
        t0.elapsed() >= period
    })?;
    let wall_seconds = t0.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds()? - cpu0;
    let after = fabric_stats(fabric)?;
    Ok(IdleReport {
        wall_seconds,
        cpu_seconds,
        polling: PollingStats {
            rounds: after.rounds - before.rounds,
            blocks: after.blocks - before.blocks,
            wakeups: after.wakeups - before.wakeups,
            failed: None,
        },
    })
}

/// The hybrid loop's counters.
///
/// # Errors
/// The loop fell back to busy polling (the figure would not be hybrid polling's).
fn fabric_stats(fabric: &VerbsFabric) -> Result<PollingStats> {
    match fabric.polling_stats() {
        Some(PollingStats {
            failed: Some(why), ..
        }) => bail!("hybrid polling failed and fell back to busy polling: {why}"),
        Some(s) => Ok(s),
        None => bail!("the fabric is not in hybrid polling"),
    }
}

/// `xrdma idle` on the RDMA device the environment names, each run stopping at `timeout`:
/// run and print the figures.
///
/// # Errors
/// As [`run`], and no device.
pub fn cli(seconds: f64, timeout: xrdma::Span) -> Result<ExitCode> {
    let r = run(&mut VerbsFabric::for_tool(2, timeout)?, seconds)?;
    outln!("xrdma idle (Verbs): a connected worker pair, idle, hybrid polling");
    outln!(" wall[s]  cpu[s]  cpu[% of one core]  blocks  wakeups");
    let (blocks, wakeups) = (r.polling.blocks, r.polling.wakeups);
    outln!(
        " {:<8.2} {:<7.2} {:<19.2} {:<7} {}",
        r.wall_seconds,
        r.cpu_seconds,
        r.cpu_percent(),
        blocks,
        wakeups
    );
    Ok(ExitCode::SUCCESS)
}
