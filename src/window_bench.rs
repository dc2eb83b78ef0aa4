//! `xrdma bench --case window`: does the adaptive send window fill the link, and share it?
//!
//! Runs the scenarios of `scenarios/window/` (compiled in, so the benchmark always measures the
//! committed files) and prints, per scenario, the payload throughput as a share of the payload
//! line rate and, with two senders, Jain's fairness index, both over consecutive 10 ms windows
//! after the first 1 ms (the start-up the figures leave out). Targets (issue 9): one sender
//! ≥ 95 % of the payload line rate; two senders ≥ 90 % in total with Jain ≥ 0.95 in every
//! window. A figure below its target is printed with `MISSED` beside it; a missed target is a
//! finding, not a failure, so the exit status stays 0.

use anyhow::{bail, Context, Result};
use std::path::Path;
use xrdma_reports::{metrics::jain_index, MessageRecord};

/// The scenarios, as (file name, its text), in the order they run.
pub const SCENARIOS: [(&str, &str); 6] = [
    (
        "one-sender-25g.yaml",
        include_str!("../scenarios/window/one-sender-25g.yaml"),
    ),
    (
        "one-sender-100g.yaml",
        include_str!("../scenarios/window/one-sender-100g.yaml"),
    ),
    (
        "one-sender-400g.yaml",
        include_str!("../scenarios/window/one-sender-400g.yaml"),
    ),
    (
        "two-senders-25g.yaml",
        include_str!("../scenarios/window/two-senders-25g.yaml"),
    ),
    (
        "two-senders-25g-no-ecn.yaml",
        include_str!("../scenarios/window/two-senders-25g-no-ecn.yaml"),
    ),
    (
        "two-senders-25g-dcqcn.yaml",
        include_str!("../scenarios/window/two-senders-25g-dcqcn.yaml"),
    ),
];

/// Start-up left out of the figures, ps (1 ms).
pub const SKIP_PS: u64 = 1_000_000_000;
/// Length of one measurement window, ps (10 ms).
pub const WINDOW_PS: u64 = 10_000_000_000;
/// Target of one sender's throughput, share of the payload line rate.
pub const ONE_SENDER_TARGET: f64 = 0.95;
/// Target of two senders' total throughput, share of the payload line rate.
pub const TOTAL_TARGET: f64 = 0.90;
/// Target of Jain's index in every window.
pub const JAIN_TARGET: f64 = 0.95;

/// Payload bytes each sender moved in each window: `result[w][s]` for window `w` (starting at
/// `skip + w·window`) and the `s`-th sender in ascending host order. Only whole windows that
/// end before the last completion count.
///
/// A message's bytes are spread evenly over the span from its sender's previous completion (or
/// its own intended send time, if later) to its own completion: a sender streaming messages
/// back to back moves message k's bytes between completions k − 1 and k, so the windows see
/// the bytes when they crossed the wire rather than in lumps at completion times.
pub fn windowed_bytes(records: &[MessageRecord], skip_ps: u64, window_ps: u64) -> Vec<Vec<f64>> {
    let mut senders: Vec<u32> = records.iter().map(|m| m.sender).collect();
    senders.sort_unstable();
    senders.dedup();
    let last = records.iter().filter_map(|m| m.completed_ps).max();
    let Some(last) = last else {
        return Vec::new();
    };
    let windows = (last.saturating_sub(skip_ps) / window_ps.max(1)) as usize;
    let mut out = vec![vec![0.0; senders.len()]; windows];
    for (si, &s) in senders.iter().enumerate() {
        let mut done: Vec<(u64, u64, u64)> = records
            .iter()
            .filter(|m| m.sender == s)
            .filter_map(|m| {
                m.completed_ps
                    .map(|c| (c, m.intended_ps, m.payload_bytes()))
            })
            .collect();
        done.sort_unstable();
        let mut prev = 0u64;
        for (completed, intended, bytes) in done {
            let from = prev.max(intended).min(completed);
            prev = completed;
            spread(
                &mut out,
                si,
                from,
                completed,
                bytes as f64,
                skip_ps,
                window_ps,
            );
        }
    }
    out
}

/// Add `bytes`, spread evenly over `[from, to]` ps, to the windows of sender column `si`.
fn spread(out: &mut [Vec<f64>], si: usize, from: u64, to: u64, bytes: f64, skip: u64, len: u64) {
    for (w, row) in out.iter_mut().enumerate() {
        let (ws, we) = (skip + w as u64 * len, skip + (w as u64 + 1) * len);
        if to == from {
            if (ws..we).contains(&to) {
                row[si] += bytes;
            }
            continue;
        }
        let overlap = to.min(we).saturating_sub(from.max(ws));
        row[si] += bytes * overlap as f64 / (to - from) as f64;
    }
}

/// The figures of one scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowFigures {
    /// The scenario file name.
    pub scenario: String,
    /// Senders in the scenario.
    pub senders: usize,
    /// Whole 10 ms windows measured.
    pub windows: usize,
    /// Payload throughput over all measured windows, share of the payload line rate.
    pub total: f64,
    /// The lowest window's throughput, share of the payload line rate.
    pub worst_window: f64,
    /// The lowest Jain's index over the windows (`None` with one sender).
    pub worst_jain: Option<f64>,
    /// Every message was delivered intact.
    pub intact: bool,
}

impl WindowFigures {
    /// Whether every figure meets its target.
    pub fn met(&self) -> bool {
        let target = if self.senders > 1 {
            TOTAL_TARGET
        } else {
            ONE_SENDER_TARGET
        };
        self.total >= target && self.worst_jain.is_none_or(|j| j >= JAIN_TARGET) && self.intact
    }

    /// One line of the table, `MISSED` beside a figure below its target.
    pub fn line(&self) -> String {
        let target = if self.senders > 1 {
            TOTAL_TARGET
        } else {
            ONE_SENDER_TARGET
        };
        let flag = |ok: bool| if ok { "" } else { " MISSED" };
        let total = format!("{:.1} %{}", self.total * 100.0, flag(self.total >= target));
        let jain = self.worst_jain.map_or_else(
            || "-".to_string(),
            |j| format!("{j:.3}{}", flag(j >= JAIN_TARGET)),
        );
        format!(
            "{:<28} {:>7} {:>7} {:>16} {:>12} {:>14} {:>6}",
            self.scenario,
            self.senders,
            self.windows,
            total,
            format!("{:.1} %", self.worst_window * 100.0),
            jain,
            if self.intact { "yes" } else { "NO MISSED" },
        )
    }

    /// The header matching [`WindowFigures::line`].
    pub fn header() -> String {
        format!(
            "{:<28} {:>7} {:>7} {:>16} {:>12} {:>14} {:>6}",
            "scenario", "senders", "windows", "payload/line", "worst 10ms", "worst Jain", "intact"
        )
    }
}

/// Run one scenario text and measure it.
///
/// # Errors
/// The scenario does not parse or the run fails.
pub fn measure(name: &str, yaml: &str) -> Result<WindowFigures> {
    let sc = xrdma_scenario::parse(yaml, Path::new(name))?;
    let sim = sc.sim_or_default();
    let r = xrdma_runner::run::run_sim(&sc).with_context(|| format!("running {name}"))?;
    let rate =
        sim.link_rate_bps as f64 * f64::from(sim.mtu) / f64::from(sim.mtu + sim.header_bytes);
    let w = windowed_bytes(&r.messages, SKIP_PS, WINDOW_PS);
    if w.is_empty() {
        bail!("{name}: the run is shorter than 1 ms + one 10 ms window");
    }
    let per_window = |row: &Vec<f64>| row.iter().sum::<f64>() * 8.0 / (WINDOW_PS as f64 * 1e-12);
    let total = w.iter().map(per_window).sum::<f64>() / w.len() as f64 / rate;
    let worst_window = w.iter().map(per_window).fold(f64::INFINITY, f64::min) / rate;
    let senders = w[0].len();
    let worst_jain = (senders > 1).then(|| {
        w.iter()
            .map(|row| jain_index(row).unwrap_or(0.0))
            .fold(f64::INFINITY, f64::min)
    });
    let n = r.messages.len() as u64;
    let d = &r.delivery;
    Ok(WindowFigures {
        scenario: name.to_string(),
        senders,
        windows: w.len(),
        total,
        worst_window,
        worst_jain,
        intact: d.delivered == n && d.missing + d.digest_mismatches + d.duplicates == 0,
    })
}

/// Run every scenario of [`SCENARIOS`].
///
/// # Errors
/// A scenario did not parse or its run failed.
pub fn run_all() -> Result<Vec<WindowFigures>> {
    SCENARIOS.iter().map(|(n, y)| measure(n, y)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sender: u32, intended: u64, done: u64, size: u64) -> MessageRecord {
        MessageRecord {
            sender,
            receiver: 0,
            index: 0,
            size,
            intended_ps: intended,
            completed_ps: Some(done),
            delivered_ps: Some(done),
            response_bytes: None,
            stages: None,
        }
    }

    #[test]
    fn bytes_are_spread_between_completions() {
        // Sender 1: 100 B done at 10, 100 B done at 30 (moved over 10..30); windows of 10
        // after 0, last completion 30: three windows.
        let r = [rec(1, 0, 10, 100), rec(1, 0, 30, 100), rec(2, 0, 30, 60)];
        let w = windowed_bytes(&r, 0, 10);
        assert_eq!(w.len(), 3);
        assert_eq!(w[0], vec![100.0, 20.0]);
        assert_eq!(w[1], vec![50.0, 20.0]);
        assert_eq!(w[2], vec![50.0, 20.0]);
    }

    #[test]
    fn the_skip_and_the_tail_are_left_out() {
        let r = [rec(1, 0, 25, 250)];
        let w = windowed_bytes(&r, 5, 10);
        assert_eq!(w, vec![vec![100.0], vec![100.0]]);
    }
}
