//! `xrdma stat --socket PATH`: the endpoints of a running process, asked through the stat
//! socket it opened (`xrdma run --stat-socket PATH`, [`xrdma_runner::stat_socket`]), once or
//! every `--watch` interval, with the device's own counters beside xrdma's.

use anyhow::{anyhow, Context, Result};
use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;
use xrdma_observe::device_counters::Snapshot;
use xrdma_observe::placement::Placement;
use xrdma_runner::watch::{DeviceReading, LiveStat};

/// How long to wait for an answer: a busy process answers within a few ms, an idle verbs run
/// at its next wake.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why asking failed.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Nothing listens on the path (no such socket, or its process is gone).
    #[error("{0}: no xrdma process answers here (start one with `xrdma run --stat-socket {0}`)")]
    NoProcess(String),
    /// It accepted and closed without answering: the process exited first (an application's
    /// worker answers only while it runs a waiting call).
    #[error(
        "{0}: the process closed the connection without answering (it exited first; an \
         application's worker answers only while it runs a waiting call)"
    )]
    Gone(String),
    /// It accepted but did not answer in time, or answered something else.
    #[error("{path}: {why}")]
    BadAnswer {
        /// The socket.
        path: String,
        /// What went wrong.
        why: String,
    },
}

/// Asks the process on `path` for its endpoints once.
///
/// # Errors
/// [`AskError::NoProcess`] when nothing answers on `path`; [`AskError::Gone`] when the process
/// closed without answering (it exited first); [`AskError::BadAnswer`] when the
/// answer does not come within [`ANSWER_TIMEOUT`] or is not a [`LiveStat`].
pub fn ask(path: &Path) -> Result<LiveStat, AskError> {
    let shown = path.display().to_string();
    let mut s = UnixStream::connect(path).map_err(|_| AskError::NoProcess(shown.clone()))?;
    let bad = |why: String| AskError::BadAnswer {
        path: shown.clone(),
        why,
    };
    s.set_read_timeout(Some(ANSWER_TIMEOUT))
        .map_err(|e| bad(e.to_string()))?;
    let mut text = Vec::new();
    match s.read_to_end(&mut text) {
        Ok(_) if text.is_empty() => return Err(AskError::Gone(shown)),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            return Err(AskError::Gone(shown))
        }
        Err(e) => {
            return Err(bad(format!(
                "no answer within {} s: {e}",
                ANSWER_TIMEOUT.as_secs()
            )))
        }
    }
    serde_json::from_slice(&text).map_err(|e| bad(format!("not a stat answer: {e}")))
}

/// The first lines of a live table: who answered and when, and where its thread runs.
pub fn banner(stat: &LiveStat) -> String {
    let mut s = format!(
        "pid {}  backend {}  at {:.3} ms of the run\n",
        stat.pid,
        match stat.backend {
            xrdma_reports::Backend::Sim => "sim (virtual time)",
            xrdma_reports::Backend::Verbs => "verbs",
            xrdma_reports::Backend::Sockets => "sockets",
        },
        stat.at_ps as f64 / 1e9
    );
    if let Some(p) = &stat.placement {
        s += &placement_line(p);
    }
    s
}

/// Where the answering thread runs beside its device, `-` for what the machine does not say,
/// and a warning when it runs on the NUMA node far from the device.
pub fn placement_line(p: &Placement) -> String {
    let opt = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    let mut s = format!(
        "thread {}  cpu {} (allowed {})  numa node {}",
        opt(p.tid),
        opt(p.cpu),
        p.cpus_allowed.as_deref().unwrap_or("-"),
        opt(p.numa_node)
    );
    if let Some(d) = &p.device {
        let _ = write!(s, "  device {d} numa node {}", opt(p.device_numa_node));
    }
    s.push('\n');
    if p.far_node == Some(true) {
        let _ = writeln!(
            s,
            "WARNING: the thread runs on NUMA node {} and its device sits on node {}: every \
             doorbell, completion and buffer crosses the interconnect (pin it to the device's \
             node)",
            opt(p.numa_node),
            opt(p.device_numa_node)
        );
    }
    s
}

/// The device's counters as a table: every counter with its value and, given the previous
/// reading `prev` and the time between them, its change and rate; counters that are zero
/// and did not move are left out (a line says how many).
pub fn device_table(dev: &DeviceReading, prev: Option<(&Snapshot, f64)>) -> String {
    let mut out = format!(
        "\ndevice {} port {} (sysfs hw_counters)\n",
        dev.device, dev.port
    );
    let mut quiet = 0;
    for (name, &v) in &dev.counters {
        let moved = prev.and_then(|(p, secs)| {
            let d = v.checked_sub(*p.get(name)?)?;
            Some((d, d as f64 / secs.max(1e-9)))
        });
        if v == 0 && moved.is_none_or(|(d, _)| d == 0) {
            quiet += 1;
            continue;
        }
        match moved {
            Some((d, rate)) => {
                let _ = writeln!(out, "  {name:<32} {v:>16} {d:>+12} {rate:>14.1}/s");
            }
            None => {
                let _ = writeln!(out, "  {name:<32} {v:>16}");
            }
        }
    }
    if quiet > 0 {
        let _ = writeln!(out, "  ({quiet} counters at 0 not shown)");
    }
    out
}

/// The device's counters in Prometheus text: one counter family, a sample per counter.
pub fn device_prometheus(dev: &DeviceReading) -> String {
    let mut out = String::from(
        "# HELP xrdma_device_counter_total The RDMA device port's own counter (sysfs hw_counters, counters).\n\
         # TYPE xrdma_device_counter_total counter\n",
    );
    for (name, v) in &dev.counters {
        let _ = writeln!(
            out,
            "xrdma_device_counter_total{{device=\"{}\",port=\"{}\",counter=\"{}\"}} {v}",
            dev.device, dev.port, name
        );
    }
    out
}

/// Asks `path` `count` times (forever with `None`) every `interval`, printing each answer
/// with `render`; the device counters' changes are against the previous answer. Stops
/// quietly when the process goes away after answering at least once (its run ended).
///
/// # Errors
/// The first ask fails ([`ask`]), or an answer does not decode.
pub fn watch(
    path: &Path,
    interval: Duration,
    count: Option<u64>,
    mut render: impl FnMut(&LiveStat, Option<(&Snapshot, f64)>) -> Result<String>,
) -> Result<()> {
    let mut prev: Option<LiveStat> = None;
    let mut n = 0u64;
    while count.is_none_or(|c| n < c) {
        let stat = match ask(path) {
            Ok(s) => s,
            Err(AskError::NoProcess(_) | AskError::Gone(_)) if prev.is_some() => {
                eprintln!("{}: the process has gone (its run ended)", path.display());
                return Ok(());
            }
            Err(e) => return Err(anyhow!(e)),
        };
        let before = prev.as_ref().and_then(|p| {
            let secs = stat.at_ps.checked_sub(p.at_ps)? as f64 / 1e12;
            Some((&p.device.as_ref()?.counters, secs))
        });
        crate::out!(
            "{}",
            render(&stat, before).with_context(|| path.display().to_string())?
        );
        prev = Some(stat);
        n += 1;
        if count.is_none_or(|c| n < c) {
            std::thread::sleep(interval);
        }
    }
    Ok(())
}
