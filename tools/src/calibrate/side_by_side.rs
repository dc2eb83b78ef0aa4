//! `xrdma calibrate run`: one scenario on the device and on the simulator with one or more
//! host profiles, side by side: every run's result, the `compare` report over all of them
//! (table with ratios, overlaid CDFs: [`crate::compare`]), and the simulator's prediction
//! error per figure, |sim − device| / device, against the first device run. More device runs
//! give the device's own spread, |device k − device 1| / device 1 (the largest over k): no
//! profile can be expected to predict the device closer than the device repeats itself.

use crate::compare::{check_same_workload, load_runs, write_compare, CompareRun};
use anyhow::{Context, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use xrdma_cluster::sweep::report::Headline;
use xrdma_cluster::sweep::write_atomic;
use xrdma_reports::RunResult;
use xrdma_scenario::Scenario;
use xrdma_sim::HostModel;

/// How a figure is read from a run's headline figures.
pub type Reader = fn(&Headline) -> Option<f64>;

/// The figures whose prediction error is reported: their names, and how to read each from a
/// run's headline figures.
pub const FIGURES: [(&str, Reader); 4] = [
    ("p50", |h| h.p50_ps.map(|v| v as f64)),
    ("p99", |h| h.p99_ps.map(|v| v as f64)),
    ("p99.9", |h| h.p999_ps.map(|v| v as f64)),
    ("goodput", |h| h.goodput_bps),
];

/// One simulator profile's errors.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ProfileErrors {
    /// The profile's label (a built-in name, or a profile file's stem).
    pub label: String,
    /// Per figure of [`FIGURES`]: the simulator's value, and |sim − device| / device
    /// (`None` where either has no value).
    pub figures: Vec<FigureError>,
}

/// One figure of one profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct FigureError {
    /// `p50`, `p99`, `p99.9` or `goodput`.
    pub figure: String,
    /// The first device run's value (ps, or bits per second for goodput).
    pub device: Option<f64>,
    /// The simulator's value, same unit.
    pub sim: Option<f64>,
    /// sim / device: the ratio `compare.txt` shows in the simulator run's column (`None`
    /// where either has no value or the device's is 0).
    pub ratio: Option<f64>,
    /// |sim − device| / device, that is |ratio − 1|.
    pub error: Option<f64>,
}

/// The whole comparison's numbers (`calibration.json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Calibration {
    /// The scenario's name.
    pub scenario: String,
    /// Device runs compared.
    pub device_runs: usize,
    /// Per figure: the largest |device k − device 1| / device 1 (`None` with one device run).
    pub device_spread: Vec<(String, Option<f64>)>,
    /// Per simulator profile.
    pub profiles: Vec<ProfileErrors>,
}

/// `scenario` with its simulator hosts given `model`.
pub fn with_host(sc: &Scenario, model: &HostModel) -> Scenario {
    let mut sc = sc.clone();
    let mut sim = sc.sim_or_default();
    sim.host = model.clone();
    sc.sim = Some(sim);
    sc
}

/// Writes `r` into the results directory `dir`: `result.json` and `summary.txt` (`xrdma
/// report DIR` draws the rest), replacing the earlier run there as a whole
/// ([`xrdma_reports::RunDir`]).
///
/// # Errors
/// The directory is in use by another process; a file cannot be written (the earlier run
/// stays whole then); the replacement fails.
pub fn write_run(dir: &Path, r: &RunResult) -> Result<()> {
    let rd = xrdma_reports::RunDir::open(dir, xrdma_reports::run_dir::Holds::Run)?;
    let staged = xrdma_reports::write_json(&rd.staging().join("result.json"), r).and_then(|()| {
        xrdma_reports::write_atomic(
            &rd.staging().join("summary.txt"),
            xrdma_reports::summary_table(r).as_bytes(),
        )
    });
    staged.with_context(|| rd.unchanged_note())?;
    Ok(rd.commit()?)
}

/// The errors of every simulator run against the device runs (the first is the reference).
pub fn calibration(
    scenario: &str,
    device: &[RunResult],
    sims: &[(String, RunResult)],
) -> Calibration {
    let dev: Vec<Headline> = device.iter().map(Headline::of).collect();
    let reference = dev.first();
    let device_spread = FIGURES
        .iter()
        .map(|(name, get)| {
            let d1 = reference.and_then(get);
            let spread = dev[1.min(dev.len())..]
                .iter()
                .filter_map(|h| Some(super::fit::rel_error(get(h)?, d1?)))
                .reduce(f64::max);
            (name.to_string(), spread)
        })
        .collect();
    let profiles = sims
        .iter()
        .map(|(label, r)| {
            let h = Headline::of(r);
            let figures = FIGURES
                .iter()
                .map(|(name, get)| {
                    let d = reference.and_then(get);
                    let s = get(&h);
                    let both = s.zip(d).filter(|&(_, d)| d != 0.0);
                    FigureError {
                        figure: name.to_string(),
                        device: d,
                        sim: s,
                        ratio: both.map(|(s, d)| s / d),
                        error: both.map(|(s, d)| super::fit::rel_error(s, d)),
                    }
                })
                .collect();
            ProfileErrors {
                label: label.clone(),
                figures,
            }
        })
        .collect();
    Calibration {
        scenario: scenario.into(),
        device_runs: device.len(),
        device_spread,
        profiles,
    }
}

fn fmt_value(figure: &str, v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if figure == "goodput" => format!("{:.4} Gb/s", v / 1e9),
        Some(v) => format!("{} µs", xrdma_reports::format_us(v as u64)),
    }
}

fn fmt_error(e: Option<f64>) -> String {
    e.map_or_else(|| "-".into(), |e| format!("{:.1}%", 100.0 * e))
}

/// `calibration.txt`: per figure the device's value and spread, then each profile's value,
/// its ratio to the device's and its error.
pub fn render(c: &Calibration) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "calibration of {}: the simulator against {} device run(s); error = |sim - device| / \
         device, ratio = sim / device (device = the first device run)",
        c.scenario, c.device_runs
    );
    let mut header = format!("{:<8} {:>22} {:>14}", "figure", "device", "device spread");
    for p in &c.profiles {
        let _ = write!(
            header,
            "  {:>38}",
            format!("sim {} (ratio, error)", p.label)
        );
    }
    let _ = writeln!(o, "{}", header.trim_end());
    for (i, (name, spread)) in c.device_spread.iter().enumerate() {
        let device = c.profiles.first().and_then(|p| p.figures[i].device);
        let mut line = format!(
            "{name:<8} {:>22} {:>14}",
            fmt_value(name, device),
            fmt_error(*spread)
        );
        for p in &c.profiles {
            let f = &p.figures[i];
            let ratio = f.ratio.map_or_else(|| "-".into(), |r| format!("×{r:.3}"));
            let cell = format!(
                "{} ({ratio}, {})",
                fmt_value(name, f.sim),
                fmt_error(f.error)
            );
            let _ = write!(line, "  {cell:>38}");
        }
        let _ = writeln!(o, "{}", line.trim_end());
    }
    o
}

/// `calibration.env`: `KEY=VALUE` lines for scripts: `device_runs`, `device_spread_<figure>`,
/// and per profile `<label>_<figure>_ratio` and `<label>_<figure>_error` (fractions, 4
/// decimals; empty when unknown),
/// figure names with `.` as `_` (`p99_9`), labels with `-` as `_`.
pub fn env(c: &Calibration) -> String {
    let key = |s: &str| s.replace(['-', '.'], "_");
    let val = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.4}"));
    let mut o = format!("device_runs={}\n", c.device_runs);
    for (name, spread) in &c.device_spread {
        let _ = writeln!(o, "device_spread_{}={}", key(name), val(*spread));
    }
    for p in &c.profiles {
        for f in &p.figures {
            let stem = format!("{}_{}", key(&p.label), key(&f.figure));
            let _ = writeln!(o, "{stem}_ratio={}", val(f.ratio));
            let _ = writeln!(o, "{stem}_error={}", val(f.error));
        }
    }
    o
}

/// Files `write` wrote.
#[derive(Debug)]
pub struct Written {
    /// Every run's directory, device runs first.
    pub runs: Vec<PathBuf>,
    /// `calibration.txt`, `calibration.json`, `calibration.env`, then the compare files.
    pub files: Vec<PathBuf>,
    /// The numbers.
    pub calibration: Calibration,
}

/// Writes the device runs into `out/device-K/` (K from 1), each simulator run into
/// `out/sim-LABEL/`, the `compare` report over all of them (device first) and the
/// calibration files into `out`.
///
/// # Errors
/// A file that cannot be written, a plot that cannot be drawn, or runs of different
/// workloads ([`crate::compare::check_same_workload`]: a device result of another scenario).
pub fn write(
    out: &Path,
    scenario: &str,
    device: &[RunResult],
    sims: &[(String, RunResult)],
) -> Result<Written> {
    let mut runs = Vec::new();
    for (k, r) in device.iter().enumerate() {
        let dir = out.join(format!("device-{}", k + 1));
        write_run(&dir, r)?;
        runs.push(dir);
    }
    for (label, r) in sims {
        let dir = out.join(format!("sim-{label}"));
        write_run(&dir, r)?;
        runs.push(dir);
    }
    // Read back as `xrdma compare` reads them, and refused as it refuses them.
    let compared: Vec<CompareRun> = if runs.len() >= 2 {
        let compared = load_runs(&runs)?;
        check_same_workload(
            &compared,
            "give a --device-result of a run of the same scenario on the device",
        )?;
        compared
    } else {
        Vec::new()
    };
    let c = calibration(scenario, device, sims);
    let mut files = vec![
        out.join("calibration.txt"),
        out.join("calibration.json"),
        out.join("calibration.env"),
    ];
    write_atomic(&files[0], render(&c).as_bytes())?;
    write_atomic(&files[1], serde_json::to_string_pretty(&c)?.as_bytes())?;
    write_atomic(&files[2], env(&c).as_bytes())?;
    if !compared.is_empty() {
        let cf = write_compare(out, &compared)?;
        files.extend([cf.table, cf.svg, cf.png]);
    }
    Ok(Written {
        runs,
        files,
        calibration: c,
    })
}
