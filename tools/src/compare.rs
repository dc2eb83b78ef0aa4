//! `xrdma compare`: two or more runs side by side, with each figure's ratio to the first run,
//! and their completion-time CDFs overlaid.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use xrdma_reports::sweep_plot::{draw_overlay, render_png, render_svg, LabelledRun, OverlayView};
use xrdma_reports::{format_us, RunResult};

use xrdma_cluster::sweep::report::Headline;
use xrdma_cluster::sweep::write_atomic;

/// One run of a comparison.
#[derive(Clone, Debug)]
pub struct CompareRun {
    /// Legend and column text: `name (backend, stack, seed N)`, with the run's directory name (or the
    /// path) appended when two runs would otherwise share it.
    pub label: String,
    /// The `result.json` it was read from.
    pub path: PathBuf,
    /// The run.
    pub result: RunResult,
}

/// Reads a run given as its directory (then `DIR/result.json`) or as a `result.json` path.
///
/// # Errors
/// The file is missing or does not read as a run result (see
/// [`xrdma_reports::read_json`]); a sweep's directory (it holds `points/`, not a result).
pub fn load_run(arg: &Path) -> Result<(PathBuf, RunResult)> {
    let path = if arg.is_dir() {
        arg.join("result.json")
    } else {
        arg.to_path_buf()
    };
    if arg.is_dir() && !path.exists() && arg.join("points").is_dir() {
        bail!(
            "{} is a sweep's directory: name one of its points ({}/points/<point>)",
            arg.display(),
            arg.display()
        );
    }
    let r = xrdma_reports::read_json(&path)?;
    Ok((path, r))
}

/// Loads every run and labels it.
///
/// # Errors
/// Fewer than two runs; a run that does not load ([`load_run`]).
pub fn load_runs(args: &[PathBuf]) -> Result<Vec<CompareRun>> {
    if args.len() < 2 {
        bail!("compare needs at least two runs (run directories or result.json files)");
    }
    let mut runs = Vec::new();
    for a in args {
        let (path, result) = load_run(a)?;
        let s = &result.scenario;
        let label = format!("{} ({}, {}, seed {})", s.name, s.backend, s.stack, s.seed);
        runs.push(CompareRun {
            label,
            path,
            result,
        });
    }
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    for r in &mut runs {
        if labels.iter().filter(|l| **l == r.label).count() > 1 {
            // The run's directory name tells runs apart (sweep points, `--out` names).
            let dir = r.path.parent().and_then(Path::file_name);
            r.label = match dir {
                Some(d) if !d.is_empty() => format!("{} {}", r.label, d.to_string_lossy()),
                _ => format!("{} {}", r.label, r.path.display()),
            };
        }
    }
    Ok(runs)
}

/// `xrdma compare RUN...`: the table, the overlaid CDF (`out`, default `results/compare`),
/// and exit status 2 when a run did not finish or failed its checks.
///
/// # Errors
/// A run that cannot be read, runs of different workloads (unless `allow_different_workloads`),
/// or an output file that cannot be written.
pub fn run(
    runs: &[PathBuf],
    out: Option<PathBuf>,
    allow_different_workloads: bool,
) -> Result<std::process::ExitCode> {
    let runs = load_runs(runs)?;
    if !allow_different_workloads {
        check_same_workload(
            &runs,
            "compare runs of the same workload, or pass --allow-different-workloads",
        )?;
    }
    crate::out!("{}", compare_table(&runs));
    let out = out.unwrap_or_else(|| default_out(&runs));
    let files = write_compare(&out, &runs)?;
    for f in [
        &files.table,
        &files.svg,
        &files.png,
        &files.tail_svg,
        &files.tail_png,
    ] {
        crate::outln!("wrote {}", f.display());
    }
    let failed: Vec<&str> = runs
        .iter()
        .filter(|r| run_failed(&r.result))
        .map(|r| r.label.as_str())
        .collect();
    if failed.is_empty() {
        return Ok(std::process::ExitCode::SUCCESS);
    }
    eprintln!(
        "FAILED: run(s) {} did not finish or failed their checks: their figures cover only the \
         messages that completed (see the `completed` row)",
        failed.join(", ")
    );
    Ok(std::process::ExitCode::from(
        crate::output::EXIT_RESULT_FAILED,
    ))
}

/// The longest default output directory name, bytes (a file name holds 255).
const MAX_OUT_NAME: usize = 200;

/// Where a comparison goes by default: `results/compare-A-vs-B…`, named after the runs'
/// directories (a `result.json`'s parent), so comparing other runs writes elsewhere. A name
/// longer than 200 bytes (`MAX_OUT_NAME`) is cut and ends with 16 hex digits of the XXH3-64
/// of the whole name, so two long comparisons of different runs still part ways.
pub fn default_out(runs: &[CompareRun]) -> PathBuf {
    let names: Vec<String> = runs
        .iter()
        .map(|r| {
            r.path.parent().and_then(Path::file_name).map_or_else(
                || r.result.scenario.name.clone(),
                |d| d.to_string_lossy().into_owned(),
            )
        })
        .map(|n| {
            n.chars()
                .map(|c| {
                    if c.is_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    let mut name = format!("compare-{}", names.join("-vs-"));
    if name.len() > MAX_OUT_NAME {
        let tag = format!("-{:016x}", xxhash_rust::xxh3::xxh3_64(name.as_bytes()));
        let mut cut = MAX_OUT_NAME - tag.len();
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name.truncate(cut);
        name.push_str(&tag);
    }
    PathBuf::from("results").join(name)
}

/// Checks that every run has the first run's workload (kind, senders, bytes and messages per
/// sender): the figures of different workloads are not comparable.
///
/// # Errors
/// The first run whose workload differs, naming both workloads and ending with `remedy`
/// (what the caller's user can do: each command offers only its own options).
pub fn check_same_workload(runs: &[CompareRun], remedy: &str) -> Result<()> {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    let w0 = &first.result.workload;
    let describe = |w: &xrdma_reports::WorkloadInfo| {
        format!(
            "{} {}:1, {} message(s) and {} B per sender",
            w.kind, w.senders, w.messages_per_sender, w.bytes_per_sender
        )
    };
    for r in &runs[1..] {
        let w = &r.result.workload;
        // An incast's shape is fixed by its file; open-loop arrivals and echo request sizes
        // are drawn from the seed, so their counts and bytes differ between seeds of one file.
        let same_shape = w.kind.shape_depends_on_seed()
            || (w.bytes_per_sender == w0.bytes_per_sender
                && w.messages_per_sender == w0.messages_per_sender);
        if w.kind != w0.kind || w.senders != w0.senders || !same_shape {
            bail!(
                "{} has a different workload ({}) than {} ({}); {remedy}",
                r.path.display(),
                describe(w),
                first.path.display(),
                describe(w0)
            );
        }
    }
    Ok(())
}

/// A figure of the comparison table: its name, whether it is a counter a backend may not
/// observe, and how to read it from a run.
type Metric = (&'static str, bool, fn(&RunResult, &Headline) -> Option<f64>);

const METRICS: [Metric; 15] = [
    ("p50 µs", false, |_, h| h.p50_ps.map(|v| v as f64)),
    ("p99 µs", false, |_, h| h.p99_ps.map(|v| v as f64)),
    ("p99.9 µs", false, |_, h| h.p999_ps.map(|v| v as f64)),
    ("max µs", false, |_, h| h.max_ps.map(|v| v as f64)),
    ("T* µs", false, |_, h| h.t_star_ps.map(|v| v as f64)),
    ("span/T*", false, |_, h| h.max_over_t_star),
    ("goodput Gb/s", false, |_, h| h.goodput_bps),
    ("ECN marks", true, |r, _| {
        r.network.ecn_marks.map(|v| v as f64)
    }),
    ("CNPs", true, |r, _| r.network.cnps.map(|v| v as f64)),
    ("PFC XOFF", true, |r, _| {
        r.network.pfc_xoff.map(|v| v as f64)
    }),
    ("drops", true, |r, _| r.network.drops.map(|v| v as f64)),
    ("retransmitted", true, |r, _| {
        r.network.retransmitted_packets.map(|v| v as f64)
    }),
    // RC local ACK timeouts and TCP RTOs: what a tail waits out.
    ("timeouts", true, |r, _| {
        r.network.retransmit_timeouts.map(|v| v as f64)
    }),
    // The stacks' CPU column: all hosts' CPU time per completed message.
    (HOST_CPU, true, |r, _| {
        let done = r
            .messages
            .iter()
            .filter(|m| m.completed_ps.is_some())
            .count();
        r.host_cpu.as_ref()?.per_message_ps(done as u64)
    }),
    (HEARTBEAT_P99, false, |_, h| {
        h.heartbeat_p99_ps.map(|v| v as f64)
    }),
];

/// The host CPU row's name; shown only when some run has the figure.
const HOST_CPU: &str = "host CPU per message µs";

/// The heartbeat row's name; shown only when some run has a heartbeat.
const HEARTBEAT_P99: &str = "heartbeat p99 µs";

/// The cell of a counter run `r` does not observe: `n/a (not observed by BACKEND)`.
fn not_observed(r: &RunResult) -> String {
    format!("n/a (not observed by {})", r.scenario.backend)
}

/// Where run `r` happened, short: `sim, xrdma-sim 0.1.0`, or `verbs, DEVICE (fw V) on HOST`;
/// `not recorded` for a result written before results named it.
pub fn environment_cell(r: &RunResult) -> String {
    let Some(e) = &r.environment else {
        return "not recorded".into();
    };
    let mut o = e.backend.to_string();
    if let Some(v) = &e.simulator_version {
        let _ = write!(o, ", xrdma-sim {v}");
    }
    if let Some(d) = &e.device {
        let _ = write!(
            o,
            ", {} (fw {})",
            d.name.as_deref().unwrap_or("?"),
            d.fw_ver.as_deref().unwrap_or("?")
        );
    }
    if e.backend != xrdma_reports::Backend::Sim {
        let _ = write!(o, " on {}", e.host_name.as_deref().unwrap_or("?"));
    }
    o
}

fn fmt_metric(name: &str, v: f64) -> String {
    if name.ends_with("µs") {
        format_us(v as u64)
    } else if name == "span/T*" {
        format!("{v:.4}")
    } else if name.starts_with("goodput") {
        format!("{:.2}", v / 1e9)
    } else {
        format!("{v:.0}")
    }
}

/// The comparison table: one column per run; rows for the messages completed, where each
/// run happened ([`environment_cell`]), and each figure (p50/p99/p99.9/max completion in µs,
/// T*, span/T* (last completion − first intended, over T*), goodput in Gb/s, ECN marks,
/// CNPs, PFC XOFF, drops, retransmitted packets). Every run after the first shows
/// `value (×ratio)` with ratio = value / first run's value (`-` when either is missing or
/// the first is 0); a counter a run's backend does not observe is
/// `n/a (not observed by BACKEND)`, never a 0 or a ratio. Columns are padded to line up; the
/// text ends with a newline.
pub fn compare_table(runs: &[CompareRun]) -> String {
    let heads: Vec<Headline> = runs.iter().map(|r| Headline::of(&r.result)).collect();
    let mut cells: Vec<Vec<String>> = Vec::new();
    let mut header = vec![String::from("figure")];
    header.extend(runs.iter().map(|r| {
        if run_failed(&r.result) {
            format!("{} (FAILED)", r.label)
        } else {
            r.label.clone()
        }
    }));
    cells.push(header);
    // How many messages each figure stands on: a run with unfinished messages has figures of
    // its completed messages only, which must not read as a faster run.
    let mut completed = vec![String::from("completed")];
    completed.extend(runs.iter().map(|r| {
        let done = r
            .result
            .messages
            .iter()
            .filter(|m| m.completed_ps.is_some())
            .count();
        format!("{done} of {}", r.result.messages.len())
    }));
    cells.push(completed);
    let mut environment = vec![String::from("environment")];
    environment.extend(runs.iter().map(|r| environment_cell(&r.result)));
    cells.push(environment);
    for (name, counter, get) in METRICS {
        let optional = name == HOST_CPU || name == HEARTBEAT_P99;
        if optional
            && runs
                .iter()
                .zip(&heads)
                .all(|(r, h)| get(&r.result, h).is_none())
        {
            continue;
        }
        let base = get(&runs[0].result, &heads[0]);
        let mut row = vec![name.to_string()];
        for (i, (r, h)) in runs.iter().zip(&heads).enumerate() {
            let v = get(&r.result, h);
            let text = match v {
                // A counter the backend cannot see is not a measured 0 and has no ratio.
                None if counter => not_observed(&r.result),
                None => "-".to_string(),
                Some(v) if i == 0 => fmt_metric(name, v),
                Some(v) => {
                    let ratio = match base {
                        Some(b) if b > 0.0 => format!("×{:.3}", v / b),
                        _ => "-".into(),
                    };
                    format!("{} ({ratio})", fmt_metric(name, v))
                }
            };
            row.push(text);
        }
        cells.push(row);
    }
    let cols = cells[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    for row in &cells {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        // Writing into a String cannot fail.
        let _ = writeln!(o, "{}", line.join("  ").trim_end());
    }
    o
}

/// Whether `r` is a failed run as `xrdma run` judges it ([`crate::output::failures`]).
pub fn run_failed(r: &xrdma_reports::RunResult) -> bool {
    !crate::output::failures(r).is_empty()
}

/// Files written by [`write_compare`].
#[derive(Clone, Debug)]
pub struct CompareFiles {
    /// `compare.txt`: the table.
    pub table: PathBuf,
    /// `compare-cdf.svg`.
    pub svg: PathBuf,
    /// `compare-cdf.png`.
    pub png: PathBuf,
    /// `compare-ccdf.svg`: the tails.
    pub tail_svg: PathBuf,
    /// `compare-ccdf.png`.
    pub tail_png: PathBuf,
}

/// Writes `compare.txt` ([`compare_table`]) and the overlaid CDF as `compare-cdf.svg` and
/// `compare-cdf.png` into `out` (created if needed), each atomically.
///
/// # Errors
/// The directory or a file cannot be written, or the plot cannot be drawn.
pub fn write_compare(out: &Path, runs: &[CompareRun]) -> Result<CompareFiles> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let files = CompareFiles {
        table: out.join("compare.txt"),
        svg: out.join("compare-cdf.svg"),
        png: out.join("compare-cdf.png"),
        tail_svg: out.join("compare-ccdf.svg"),
        tail_png: out.join("compare-ccdf.png"),
    };
    write_atomic(&files.table, compare_table(runs).as_bytes())?;
    let labelled: Vec<LabelledRun<'_>> = runs
        .iter()
        .map(|r| LabelledRun {
            label: &r.label,
            result: &r.result,
        })
        .collect();
    for (view, title, svg_path, png_path) in [
        (
            OverlayView::Cdf,
            "Message completion time CDF",
            &files.svg,
            &files.png,
        ),
        (
            OverlayView::Ccdf,
            "Message completion time: the tail (1 − CDF)",
            &files.tail_svg,
            &files.tail_png,
        ),
    ] {
        let svg = render_svg(|a| draw_overlay(a, title, &labelled, view))?;
        write_atomic(svg_path, svg.as_bytes())?;
        render_png(png_path, |a| draw_overlay(a, title, &labelled, view))?;
    }
    Ok(files)
}
