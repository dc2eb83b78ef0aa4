//! `xrdma ping`'s figures whatever `--verb` measured, and their output: perftest's table
//! ([`LatencyStats::header`], [`LatencyStats::row`]) or one JSON object (`--json`).

use super::ping::{self, PingOptions};
use super::stats::LatencyStats;
use super::verb_ping::{self, Verb};
use anyhow::Result;
use serde::Serialize;
use std::net::SocketAddr;
use std::time::Duration;
use xrdma_runner::fabric::Fabric;

/// What one `xrdma ping` measured, for output.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PingFigures {
    /// The verb (`--verb`).
    pub verb: Verb,
    /// The perftest tool measuring the same, where there is one.
    pub perftest: Option<&'static str>,
    /// Where it ran: `sim`, `sim, host connectx6`, `verbs`, or
    /// `verbs, two processes, server ADDR`.
    pub backend: String,
    /// Whether a sample is half a round trip (all verbs but READ).
    pub halved: bool,
    /// The statistics, µs.
    pub stats: LatencyStatsJson,
    /// Rounds of driver turns per exchange (warm-up included).
    pub rounds_per_exchange: f64,
}

/// [`LatencyStats`] under perftest's column names (µs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LatencyStatsJson {
    /// `#bytes`.
    pub bytes: u64,
    /// `#iterations`.
    pub iterations: u64,
    /// `t_min[usec]`.
    pub t_min_us: f64,
    /// `t_max[usec]`.
    pub t_max_us: f64,
    /// `t_typical[usec]` (the median).
    pub t_typical_us: f64,
    /// `t_avg[usec]`.
    pub t_avg_us: f64,
    /// `t_stdev[usec]`.
    pub t_stdev_us: f64,
    /// `99% percentile[usec]`.
    pub p99_us: f64,
    /// `99.9% percentile[usec]`.
    pub p99_9_us: f64,
}

impl From<&LatencyStats> for LatencyStatsJson {
    fn from(s: &LatencyStats) -> Self {
        LatencyStatsJson {
            bytes: s.bytes,
            iterations: s.iterations,
            t_min_us: s.min_us,
            t_max_us: s.max_us,
            t_typical_us: s.typical_us,
            t_avg_us: s.avg_us,
            t_stdev_us: s.stdev_us,
            p99_us: s.p99_us,
            p99_9_us: s.p999_us,
        }
    }
}

impl PingFigures {
    fn new(verb: Verb, backend: String, stats: &LatencyStats, rounds: f64) -> Self {
        PingFigures {
            verb,
            perftest: verb.perftest(),
            backend,
            halved: verb.halved(),
            stats: stats.into(),
            rounds_per_exchange: rounds,
        }
    }

    /// The output: one JSON object when `json`, else the title, perftest's header and row
    /// and the driver's rounds per exchange.
    ///
    /// # Errors
    /// None in practice (the figures always serialize).
    pub fn render(&self, stats: &LatencyStats, json: bool) -> Result<String> {
        if json {
            return Ok(format!("{}\n", serde_json::to_string_pretty(self)?));
        }
        Ok(format!(
            "xrdma ping ({}): {}\n{}\n{}\ndriver rounds per {}: {:.1} (turns needed per exchange)\n",
            self.backend,
            self.verb.describes(),
            LatencyStats::header(),
            stats.row(),
            if self.verb == Verb::Read { "READ" } else { "round trip" },
            self.rounds_per_exchange
        ))
    }
}

/// Run one `verb` ping between hosts 0 and 1 of `fabric` ([`ping::run`] for
/// [`Verb::Xrdma`], else [`verb_ping::run`]); `backend` names the fabric in the output.
///
/// # Errors
/// Those of the run.
pub fn run<F: Fabric>(
    fabric: &mut F,
    verb: Verb,
    opts: &PingOptions,
    backend: String,
) -> Result<(PingFigures, LatencyStats)> {
    Ok(match verb {
        Verb::Xrdma => {
            let r = ping::run(fabric, opts)?;
            (
                PingFigures::new(verb, backend, &r.stats, r.rounds_per_rtt),
                r.stats,
            )
        }
        _ => {
            let r = verb_ping::run(fabric, verb, opts)?;
            let f = PingFigures::new(verb, backend, &r.stats, r.rounds_per_exchange);
            (f, r.stats)
        }
    })
}

/// The client of a two-process `verb` ping ([`ping::connect`] or [`verb_ping::connect`]).
///
/// # Errors
/// Those of the run.
pub fn connect<F: Fabric>(
    fabric: &mut F,
    server: SocketAddr,
    timeout: Duration,
    verb: Verb,
    opts: &PingOptions,
) -> Result<(PingFigures, LatencyStats)> {
    let backend = format!("verbs, two processes, server {server}");
    Ok(match verb {
        Verb::Xrdma => {
            let r = ping::connect(fabric, server, timeout, opts)?;
            (
                PingFigures::new(verb, backend, &r.stats, r.rounds_per_rtt),
                r.stats,
            )
        }
        _ => {
            let r = verb_ping::connect(fabric, server, timeout, verb, opts)?;
            let f = PingFigures::new(verb, backend, &r.stats, r.rounds_per_exchange);
            (f, r.stats)
        }
    })
}

/// The server of a two-process `verb` ping ([`ping::serve`] or [`verb_ping::serve`]);
/// returns its one-line account.
///
/// # Errors
/// Those of the run.
pub fn serve<F: Fabric>(
    fabric: &mut F,
    bind: SocketAddr,
    timeout: Duration,
    verb: Verb,
    opts: &PingOptions,
) -> Result<String> {
    Ok(match verb {
        Verb::Xrdma => {
            let r = ping::serve(fabric, bind, timeout)?;
            format!(
                "xrdma ping server: echoed {} message(s) for the client at {}",
                r.echoed, r.client
            )
        }
        _ => {
            let r = verb_ping::serve(fabric, bind, timeout, verb, opts)?;
            format!(
                "xrdma ping --verb {} server: answered {} exchange(s) for the client at {}",
                verb.name(),
                r.answered,
                r.client
            )
        }
    })
}
