//! `xrdma stat`: the endpoints' counters as a netstat-like table, JSON or Prometheus text.
//!
//! The source is a finished run's `result.json` (its [`xrdma_reports::RunResult::endpoints`],
//! recorded at the end of every single-process run on either backend), or a running
//! process's stat socket ([`live`]). Each row is an
//! [`xrdma::EndpointSnapshot`]: the core's own counters, with what the transport observes of
//! each QP (on the simulator its state, retransmissions and RNR retries; `-` where a
//! backend cannot observe a counter).

pub mod live;
pub mod prometheus;
pub mod replay;

use anyhow::{bail, Result};
use std::path::PathBuf;
use xrdma_reports::HostEndpoint;

/// `xrdma stat`'s arguments.
#[derive(clap::Args, Debug)]
pub struct StatArgs {
    /// A finished run: a run directory holding `result.json`, or the file itself; with
    /// --at, also a scenario file (`.yaml`).
    #[arg(required_unless_present = "socket", conflicts_with = "socket")]
    pub result: Option<PathBuf>,
    /// Replay the simulator run (the scenario file, or the run the result recorded: same
    /// scenario text and seed) and show the endpoints at these instants of it (e.g.
    /// `5ms,10ms`): each taken after the first round of host turns at or after it.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "TIMES",
        value_parser = parse_instant,
        conflicts_with = "socket"
    )]
    pub at: Vec<xrdma::Time>,
    /// A running process instead: the Unix socket it answers on (`xrdma run --stat-socket
    /// PATH`); the device's own counters are shown beside xrdma's. An answer not back within
    /// 10 s is an error.
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// With --socket: ask again every SECONDS (device counters then show their change and
    /// rate), until the process ends or --count answers were printed.
    #[arg(long, value_name = "SECONDS", requires = "socket", value_parser = parse_interval)]
    pub watch: Option<f64>,
    /// With --watch: stop after this many answers (at least 1).
    #[arg(long, requires = "watch", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Only these hosts (e.g. `0,3`); default: every host with a connection.
    #[arg(long, value_delimiter = ',', value_name = "HOSTS")]
    pub host: Vec<u32>,
    /// Print the endpoints as JSON (the result's `endpoints` records; with --socket the
    /// whole answer, one line per answer) instead of a table.
    #[arg(long, conflicts_with = "prometheus")]
    pub json: bool,
    /// Print the Prometheus text exposition format (version 0.0.4) instead of a table.
    #[arg(long)]
    pub prometheus: bool,
}

/// An instant of the run (`5ms`, `250us`).
fn parse_instant(text: &str) -> Result<xrdma::Time, String> {
    xrdma_scenario::units::parse_time(text)
        .map(|s| xrdma::Time::ZERO + s)
        .map_err(|e| e.to_string())
}

/// A `--watch` interval: seconds, at least 0.01 and at most a day.
fn parse_interval(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if (0.01..=86_400.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} s is outside 0.01..=86400"))
    }
}

/// The output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// [`xrdma_reports::endpoint_table::render`].
    Table,
    /// The endpoints as pretty JSON.
    Json,
    /// [`prometheus::render`].
    Prometheus,
}

/// The endpoints of `all` that `hosts` names, each once (every host with a connection
/// record when `hosts` is empty), in host order.
///
/// # Errors
/// A host in `hosts` that the run does not have.
pub fn select<'a>(all: &'a [HostEndpoint], hosts: &[u32]) -> Result<Vec<&'a HostEndpoint>> {
    if hosts.is_empty() {
        return Ok(all
            .iter()
            .filter(|e| !e.snapshot.connections.is_empty())
            .collect());
    }
    let mut out: Vec<&HostEndpoint> = Vec::with_capacity(hosts.len());
    for &h in hosts {
        if out.iter().any(|o| o.host == h) {
            continue; // named twice: shown once
        }
        match all.iter().find(|e| e.host == h) {
            Some(e) => out.push(e),
            None if all.is_empty() => bail!("--host {h}: the run recorded no endpoints"),
            None => bail!(
                "--host {h}: the run recorded the endpoints of hosts {}–{}",
                all.iter().map(|e| e.host).min().unwrap_or(0),
                all.iter().map(|e| e.host).max().unwrap_or(0)
            ),
        }
    }
    out.sort_by_key(|e| e.host);
    Ok(out)
}

/// `endpoints` in `format`.
///
/// # Errors
/// Serialising to JSON (not expected).
pub fn render(endpoints: &[&HostEndpoint], format: Format) -> Result<String> {
    Ok(match format {
        Format::Table => table(endpoints),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(endpoints)?;
            s.push('\n');
            s
        }
        Format::Prometheus => prometheus::render(endpoints),
    })
}

/// Runs `xrdma stat` and prints its output.
///
/// # Errors
/// The result does not load ([`crate::compare::load_run`]), records no endpoints (written
/// by an older version, or a rank's part of a multi-process run), or `--host` names a host
/// it does not have; with `--socket`, nothing answers on it ([`live::ask`]).
pub fn run(args: StatArgs) -> Result<()> {
    let format = if args.json {
        Format::Json
    } else if args.prometheus {
        Format::Prometheus
    } else {
        Format::Table
    };
    if args.watch.is_some() && args.socket.is_none() {
        bail!("--watch asks a running process again and again: it needs --socket PATH");
    }
    if let Some(socket) = &args.socket {
        let interval = std::time::Duration::from_secs_f64(args.watch.unwrap_or(1.0));
        let count = if args.watch.is_some() {
            args.count
        } else {
            Some(1)
        };
        return live::watch(socket, interval, count, |stat, prev| {
            render_live(stat, prev, &args.host, format)
        });
    }
    let Some(result) = &args.result else {
        bail!("name a finished run (RESULT) or a running process (--socket PATH)");
    };
    if !args.at.is_empty() {
        return run_replay(result, &args, format);
    }
    if result
        .extension()
        .is_some_and(|e| e == "yaml" || e == "yml")
    {
        bail!(
            "{} is a scenario: say at which instants of its run with --at (e.g. --at 5ms)",
            result.display()
        );
    }
    let (path, r) = crate::compare::load_run(result)?;
    let Some(records) = r.endpoints.as_deref() else {
        bail!(
            "{} records no endpoint counters (written before they were recorded, or by one \
             rank of a multi-process run); rerun it to see them",
            path.display()
        );
    };
    let chosen = select(records, &args.host)?;
    crate::out!("{}", render(&chosen, format)?);
    Ok(())
}

/// `xrdma stat SOURCE --at T,...`: each instant's endpoints in `format` (JSON: one line per
/// instant), after a line saying when it was taken.
fn run_replay(source: &std::path::Path, args: &StatArgs, format: Format) -> Result<()> {
    let r = replay::replay(source, &args.at)?;
    for (asked, taken, eps) in &r.at {
        let chosen = select(eps, &args.host)?;
        if format == Format::Json {
            let line = serde_json::json!({
                "asked-ps": asked.as_ps(),
                "at-ps": taken.as_ps(),
                "endpoints": chosen,
            });
            crate::outln!("{line}");
            continue;
        }
        if format == Format::Table {
            // Between rounds no host runs, so its endpoint cannot change; its NIC (the QP's
            // retries) can.
            let gap = if *taken > *asked + xrdma::Span::from_us(1) {
                ": no host had a turn in between, so no endpoint changed (NICs may have)"
            } else {
                ""
            };
            crate::outln!(
                "at {:.3} µs of the simulated run (asked {:.3} µs{gap})",
                taken.as_ps() as f64 / 1e6,
                asked.as_ps() as f64 / 1e6
            );
        }
        crate::out!("{}", render(&chosen, format)?);
        if format == Format::Table {
            crate::outln!();
        }
    }
    for t in &r.unreached {
        eprintln!(
            "note: --at {:.3} µs is after the run ended at {:.3} µs: nothing to show",
            t.as_ps() as f64 / 1e6,
            r.ended.as_ps() as f64 / 1e6
        );
    }
    if r.at.is_empty() {
        bail!("no instant asked with --at falls within the run");
    }
    Ok(())
}

/// One answer of a running process in `format`: the banner, the endpoints, and the device's
/// counters (their change since `prev` in a table).
fn render_live(
    stat: &xrdma_runner::watch::LiveStat,
    prev: Option<(&xrdma_observe::device_counters::Snapshot, f64)>,
    hosts: &[u32],
    format: Format,
) -> Result<String> {
    let chosen = select(&stat.endpoints, hosts)?;
    if format == Format::Json {
        // The whole answer, but only the hosts asked for.
        let mut only = stat.clone();
        if !hosts.is_empty() {
            only.endpoints.retain(|e| hosts.contains(&e.host));
        }
        let mut s = serde_json::to_string(&only)?;
        s.push('\n');
        return Ok(s);
    }
    Ok(match format {
        Format::Prometheus => {
            let mut s = prometheus::render(&chosen);
            if let Some(d) = &stat.device {
                s += &live::device_prometheus(d);
            }
            s
        }
        _ => {
            let mut s = live::banner(stat);
            s += &table(&chosen);
            if let Some(d) = &stat.device {
                s += &live::device_table(d, prev);
            }
            s.push('\n');
            s
        }
    })
}

/// The endpoint and connection tables, with the hint `stat` gives when no endpoint is chosen.
fn table(endpoints: &[&HostEndpoint]) -> String {
    if endpoints.is_empty() {
        return "no endpoint has a connection (name one with --host)\n".to_string();
    }
    xrdma_reports::endpoint_table::render(endpoints)
}

#[cfg(test)]
mod tests;
