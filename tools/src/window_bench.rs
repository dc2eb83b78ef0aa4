//! `xrdma bench --case window`: does the adaptive send window fill the link, and share it?
//!
//! Runs the scenarios of `scenarios/window/` (compiled in, so the benchmark always measures the
//! committed files) and prints, per scenario, the payload throughput as a share of the payload
//! line rate and, with two senders, Jain's fairness index, both over consecutive 10 ms windows
//! after the first 1 ms (the start-up the figures leave out) in which every sender sends
//! throughout ([`xrdma_reports::windowed`]). Targets: one sender ≥ 95 % of the payload line
//! rate; two senders ≥ 90 % in total and Jain ≥ 0.95 in every window, with no packet dropped.
//! `--seeds A-B` runs each scenario at every seed of the range and reports each seed's row: a
//! share that holds for one seed only is not shown. A figure below its target is printed with
//! `MISSED` beside it; a missed target is a finding, not a failure, so the exit status stays 0.

use anyhow::{bail, Context, Result};
use std::path::Path;
use xrdma_reports::metrics::jain_index;
use xrdma_reports::windowed::{windowed_bytes, SKIP_PS, WINDOW_PS};

/// The scenarios, as (file name, its text), in the order they run.
pub const SCENARIOS: [(&str, &str); 6] = [
    (
        "one-sender-25g.yaml",
        include_str!("../../scenarios/window/one-sender-25g.yaml"),
    ),
    (
        "one-sender-100g.yaml",
        include_str!("../../scenarios/window/one-sender-100g.yaml"),
    ),
    (
        "one-sender-400g.yaml",
        include_str!("../../scenarios/window/one-sender-400g.yaml"),
    ),
    (
        "two-senders-25g.yaml",
        include_str!("../../scenarios/window/two-senders-25g.yaml"),
    ),
    (
        "two-senders-25g-no-ecn.yaml",
        include_str!("../../scenarios/window/two-senders-25g-no-ecn.yaml"),
    ),
    (
        "two-senders-25g-dcqcn.yaml",
        include_str!("../../scenarios/window/two-senders-25g-dcqcn.yaml"),
    ),
];

/// Target of one sender's throughput, share of the payload line rate.
pub const ONE_SENDER_TARGET: f64 = 0.95;
/// Target of two senders' total throughput in every window, share of the payload line rate.
pub const TOTAL_TARGET: f64 = 0.90;
/// Target of Jain's index in every window.
pub const JAIN_TARGET: f64 = 0.95;

/// The figures of one scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowFigures {
    /// The scenario file name.
    pub scenario: String,
    /// The simulator seed of the run.
    pub seed: u64,
    /// Packets dropped anywhere (`None` when the backend cannot count them).
    pub drops: Option<u64>,
    /// Senders in the scenario.
    pub senders: usize,
    /// Whole 10 ms windows measured.
    pub windows: usize,
    /// Payload throughput over all measured windows, share of the payload line rate.
    pub total: f64,
    /// The lowest window's throughput, share of the payload line rate (the two-sender target
    /// holds in every window).
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
        let throughput = if self.senders > 1 {
            self.worst_window
        } else {
            self.total
        };
        throughput >= target
            && self.worst_jain.is_none_or(|j| j >= JAIN_TARGET)
            && self.intact
            && self.drops == Some(0)
    }

    /// One line of the table, `MISSED` beside a figure below its target.
    pub fn line(&self) -> String {
        let two = self.senders > 1;
        let flag = |ok: bool| if ok { "" } else { " MISSED" };
        let total_ok = two || self.total >= ONE_SENDER_TARGET;
        let total = format!("{:.1} %{}", self.total * 100.0, flag(total_ok));
        let worst_ok = !two || self.worst_window >= TOTAL_TARGET;
        let worst = format!("{:.1} %{}", self.worst_window * 100.0, flag(worst_ok));
        let jain = self.worst_jain.map_or_else(
            || "-".to_string(),
            |j| format!("{j:.3}{}", flag(j >= JAIN_TARGET)),
        );
        let drops = self.drops.map_or_else(
            || "null MISSED".to_string(),
            |d| format!("{d}{}", flag(d == 0)),
        );
        format!(
            "{:<28} {:>5} {:>7} {:>7} {:>14} {:>14} {:>12} {:>8} {:>6}",
            self.scenario,
            self.seed,
            self.senders,
            self.windows,
            total,
            worst,
            jain,
            drops,
            if self.intact { "yes" } else { "NO MISSED" },
        )
    }

    /// The header matching [`WindowFigures::line`].
    pub fn header() -> String {
        format!(
            "{:<28} {:>5} {:>7} {:>7} {:>14} {:>14} {:>12} {:>8} {:>6}",
            "scenario",
            "seed",
            "senders",
            "windows",
            "payload/line",
            "worst 10ms",
            "worst Jain",
            "drops",
            "intact"
        )
    }
}

/// Run one scenario text at `seed` (`None`: the scenario's own `sim.seed`) and measure it.
///
/// # Errors
/// The scenario does not parse, the run fails, or it is shorter than 1 ms plus one 10 ms window
/// in which every sender sends.
pub fn measure(name: &str, yaml: &str, seed: Option<u64>) -> Result<WindowFigures> {
    let mut sc = xrdma_scenario::parse(yaml, Path::new(name))?;
    let mut sim = sc.sim_or_default();
    if let Some(seed) = seed {
        sim.seed = seed;
        sc.sim = Some(sim.clone());
    }
    let r = xrdma_runner::request::run_sim(&sc).with_context(|| format!("running {name}"))?;
    let rate =
        sim.link_rate_bps as f64 * f64::from(sim.mtu) / f64::from(sim.mtu + sim.header_bytes);
    let w = windowed_bytes(&r.messages, SKIP_PS, WINDOW_PS);
    if w.is_empty() {
        bail!(
            "{name}: the run is shorter than 1 ms + one 10 ms window in which every sender sends"
        );
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
        seed: sim.seed,
        drops: r.network.drops,
        senders,
        windows: w.len(),
        total,
        worst_window,
        worst_jain,
        intact: d.delivered == n && d.missing + d.digest_mismatches + d.duplicates == 0,
    })
}

/// Parses a seed range for `--seeds`: `A-B` (inclusive, `A <= B`) or one seed `N`.
///
/// # Errors
/// Not a number, not a range, or `A > B`; the message says which.
pub fn parse_seeds(s: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    let num = |t: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|e| format!("`{t}` is not a seed (a whole number >= 0): {e}"))
    };
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => (num(s)?, num(s)?),
    };
    if a > b {
        return Err(format!(
            "the range {a}-{b} is empty (write the smaller seed first)"
        ));
    }
    Ok(a..=b)
}

/// `xrdma bench --case window [--seeds A-B]`: every scenario of [`SCENARIOS`] at each seed of
/// `seeds` (`None`: its own `sim.seed`), one row each as it finishes, then a loud line
/// counting the rows that miss a target. Missed targets are findings: the exit status is 0.
///
/// # Errors
/// A scenario did not parse or its run failed.
pub fn print_table(seeds: Option<std::ops::RangeInclusive<u64>>) -> Result<std::process::ExitCode> {
    crate::outln!("{}", WindowFigures::header());
    let mut missed = 0;
    for (name, yaml) in SCENARIOS {
        let runs: Vec<Option<u64>> = match &seeds {
            None => vec![None],
            Some(r) => r.clone().map(Some).collect(),
        };
        for seed in runs {
            let f = measure(name, yaml, seed)?;
            missed += usize::from(!f.met());
            crate::outln!("{}", f.line());
        }
    }
    if missed > 0 {
        crate::outln!("!!! TARGET MISSED in {missed} row(s) above");
    }
    Ok(std::process::ExitCode::SUCCESS)
}
