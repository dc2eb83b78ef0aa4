//! `xrdma idle`: the CPU an idle xrdma worker costs in hybrid polling mode, on an RDMA device.
//!
//! Two workers on the device are connected and exchange a few messages (so both have spun
//! through the busy-polling half), then stay idle. Each is driven by a
//! [`HybridDriver`]: it busy-polls for [`HybridPolicy::spin`] after the last activity, then
//! blocks on its CQ's completion channel. Over the idle period the process's CPU time
//! (`utime + stime`, [`super::cpu`]) is read before and after; the result is that CPU time as
//! a percentage of one core over the same wall time.

use super::connect_pair;
use super::cpu::process_cpu_seconds;
use super::ping::Echo;
use crate::outln;
use anyhow::{bail, Result};
use bytes::Bytes;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use xrdma::driver::{Application, TurnScratch};
use xrdma::{Config, ConnId, Endpoint, Event, Time};
use xrdma_runner::fabric::Fabric;
use xrdma_runner::fabric::VerbsFabric;
use xrdma_verbs::{HybridDriver, HybridPolicy, HybridStats};

/// Round trips exchanged before the idle period.
pub const WARMUP_ROUND_TRIPS: u32 = 100;

/// What an idle run measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdleReport {
    /// Wall time of the idle period, s.
    pub wall_seconds: f64,
    /// Process CPU time over it (user + system), s.
    pub cpu_seconds: f64,
    /// Each worker's hybrid-polling counters over the idle period.
    pub workers: [HybridStats; 2],
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

/// Warm up, then keep both workers of `fabric` idle for `seconds` under hybrid polling with
/// the default [`HybridPolicy`] (spin 100 µs, block at most 100 ms at a time).
///
/// # Errors
/// Setup or warm-up failures, a failed `arm_and_wait`, or a non-positive duration.
pub fn run(fabric: &mut VerbsFabric, seconds: f64) -> Result<IdleReport> {
    if !(seconds > 0.0 && seconds.is_finite()) {
        bail!("--seconds must be a positive number, not {seconds}");
    }
    let mut pair = connect_pair(fabric, &Config::default())?;
    let mut client = Pinger {
        conn: pair.conns[0],
        left: WARMUP_ROUND_TRIPS,
        waiting: false,
        errors: Vec::new(),
    };
    let mut server = Echo::default();
    let mut drivers = [
        HybridDriver::new(HybridPolicy::default()),
        HybridDriver::new(HybridPolicy::default()),
    ];
    let mut scratch = TurnScratch::default();
    let mut step = |fabric: &mut VerbsFabric,
                    pair: &mut crate::Pair,
                    drivers: &mut [HybridDriver; 2],
                    client: &mut Pinger,
                    server: &mut Echo|
     -> Result<()> {
        drivers[0].step(&mut pair.eps[0], fabric.host(0), client, &mut scratch)?;
        drivers[1].step(&mut pair.eps[1], fabric.host(1), server, &mut scratch)?;
        Ok(())
    };
    let warm_limit = Instant::now() + Duration::from_secs(60);
    while client.left > 0 || client.waiting {
        if !client.errors.is_empty() || !server.errors.is_empty() {
            let e = client.errors.first().or(server.errors.first());
            bail!("warm-up failed: {}", e.map_or("", String::as_str));
        }
        if Instant::now() > warm_limit {
            bail!("warm-up: {WARMUP_ROUND_TRIPS} round trips did not finish in 60 s");
        }
        step(fabric, &mut pair, &mut drivers, &mut client, &mut server)?;
    }
    let before = drivers.each_ref().map(HybridDriver::stats);
    let period = Duration::from_secs_f64(seconds);
    let cpu0 = process_cpu_seconds()?;
    let t0 = Instant::now();
    while t0.elapsed() < period {
        step(fabric, &mut pair, &mut drivers, &mut client, &mut server)?;
    }
    let wall_seconds = t0.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds()? - cpu0;
    let after = drivers.each_ref().map(HybridDriver::stats);
    let delta = |i: usize| HybridStats {
        turns: after[i].turns - before[i].turns,
        blocks: after[i].blocks - before[i].blocks,
        wakeups: after[i].wakeups - before[i].wakeups,
    };
    Ok(IdleReport {
        wall_seconds,
        cpu_seconds,
        workers: [delta(0), delta(1)],
    })
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
    let blocks: u64 = r.workers.iter().map(|w| w.blocks).sum();
    let wakeups: u64 = r.workers.iter().map(|w| w.wakeups).sum();
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
