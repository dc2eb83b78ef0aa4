//! A sweep's outputs beside the point directories: `index.json`, `index.csv`, the fan-in plots
//! (SVG and PNG) and `sweep.html`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use xrdma_reports::sweep_html::{sweep_html, SweepPage};
use xrdma_reports::sweep_plot::{
    draw_fan_in, render_png, render_svg, FanInPoint, FanInScale, FanInSeries,
};
use xrdma_reports::{format_us, RunDir};

pub use super::index::{Headline, IndexAxis, IndexPoint, SweepIndex, INDEX_VERSION};
use super::{write_atomic, AxisKind, Plan, PointOutcome, PointStatus};

/// The index of `plan` with `outcomes` (one per point, in plan order).
pub fn index(plan: &Plan, outcomes: &[PointOutcome]) -> SweepIndex {
    SweepIndex {
        index_version: INDEX_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        scenario: plan.base.name.clone(),
        scenario_path: plan.base.source_path.display().to_string(),
        axes: plan
            .axes
            .iter()
            .map(|a| IndexAxis {
                name: a.kind.name().into(),
                values: a.texts.clone(),
            })
            .collect(),
        points: plan
            .points
            .iter()
            .zip(outcomes)
            .map(|(p, o)| IndexPoint {
                id: p.id.clone(),
                dir: format!("points/{}", p.id),
                values: p.values.clone(),
                backend: p.backend.name().into(),
                hash: p.hash.clone(),
                status: o.status,
                error: o.error.clone(),
                headline: o.result.as_ref().map(Headline::of),
            })
            .collect(),
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn status_name(s: PointStatus) -> &'static str {
    match s {
        PointStatus::Ok => "ok",
        PointStatus::Failed => "failed",
        PointStatus::Error => "error",
        PointStatus::Missing => "missing",
    }
}

/// `index.csv`: one row per point with the axis values (one column per axis, named after it),
/// then `backend` (unless an axis is the backend, whose column says it already),
/// `status,fan_in,messages,completed,p50_ps,p99_ps,p999_ps,max_ps,t_star_ps,
/// max_over_t_star,goodput_bps,heartbeat_p50_ps,heartbeat_p99_ps,dir`; a figure that does
/// not exist is an empty field.
pub fn index_csv(ix: &SweepIndex) -> String {
    let mut o = String::new();
    let backend_axis = ix.axes.iter().any(|a| a.name == AxisKind::Backend.name());
    for a in &ix.axes {
        o.push_str(&a.name);
        o.push(',');
    }
    if !backend_axis {
        o.push_str("backend,");
    }
    o.push_str(
        "status,fan_in,messages,completed,p50_ps,p99_ps,p999_ps,max_ps,t_star_ps,\
         max_over_t_star,goodput_bps,heartbeat_p50_ps,heartbeat_p99_ps,dir\n",
    );
    for p in &ix.points {
        for v in &p.values {
            o.push_str(v);
            o.push(',');
        }
        if !backend_axis {
            let _ = write!(o, "{},", p.backend);
        }
        let h = p.headline.as_ref();
        // Writing into a String cannot fail.
        let _ = writeln!(
            o,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            status_name(p.status),
            opt(h.map(|h| h.fan_in)),
            opt(h.map(|h| h.messages)),
            opt(h.map(|h| h.completed)),
            opt(h.and_then(|h| h.p50_ps)),
            opt(h.and_then(|h| h.p99_ps)),
            opt(h.and_then(|h| h.p999_ps)),
            opt(h.and_then(|h| h.max_ps)),
            opt(h.and_then(|h| h.t_star_ps)),
            opt(h.and_then(|h| h.max_over_t_star)),
            opt(h.and_then(|h| h.goodput_bps)),
            opt(h.and_then(|h| h.heartbeat_p50_ps)),
            opt(h.and_then(|h| h.heartbeat_p99_ps)),
            p.dir
        );
    }
    o
}

/// The fan-in series of a sweep: points grouped by the values of every axis but `fan-in`
/// that has more than one value (label `name=value, ...`, in order of first appearance). `None` without a fan-in axis.
pub fn fan_in_series(ix: &SweepIndex) -> Option<Vec<FanInSeries>> {
    let fan = ix
        .axes
        .iter()
        .position(|a| a.name == AxisKind::FanIn.name())?;
    // Points that differ only in seed are one point: the mean over the seeds, with its
    // confidence interval.
    let seeds = ix
        .axes
        .iter()
        .position(|a| a.name == AxisKind::Seed.name() && a.values.len() > 1);
    let mut runs: Vec<(String, Vec<FanInPoint>)> = Vec::new();
    for p in &ix.points {
        let Some(h) = &p.headline else { continue };
        let label = ix
            .axes
            .iter()
            .zip(&p.values)
            .enumerate()
            // An axis with one value is the same for every line: it does not tell them apart.
            .filter(|(i, (a, _))| *i != fan && Some(*i) != seeds && a.values.len() > 1)
            .map(|(_, (a, v))| format!("{}={v}", a.name))
            .collect::<Vec<_>>()
            .join(", ");
        let point = FanInPoint {
            fan_in: h.fan_in,
            p50_ps: h.p50_ps,
            p99_ps: h.p99_ps,
            p999_ps: h.p999_ps,
            t_star_ps: h.t_star_ps,
            ci_ps: [None; 3],
        };
        match runs.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v.push(point),
            None => runs.push((label, vec![point])),
        }
    }
    let series = runs
        .into_iter()
        .map(|(label, pts)| {
            let mut fans: Vec<u32> = pts.iter().map(|p| p.fan_in).collect();
            fans.sort_unstable();
            fans.dedup();
            let points = fans
                .into_iter()
                .filter_map(|n| {
                    let at: Vec<FanInPoint> =
                        pts.iter().filter(|p| p.fan_in == n).copied().collect();
                    if at.len() == 1 {
                        at.first().copied()
                    } else {
                        FanInPoint::mean_of(&at)
                    }
                })
                .collect();
            FanInSeries { label, points }
        })
        .collect();
    Some(series)
}

fn fmt_us(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), format_us)
}

/// Files written by [`write_reports`].
#[derive(Clone, Debug, Default)]
pub struct SweepFiles {
    /// `index.json`.
    pub index_json: PathBuf,
    /// `index.csv`.
    pub index_csv: PathBuf,
    /// The plots (SVG and PNG), empty without a fan-in axis.
    pub plots: Vec<PathBuf>,
    /// `seeds.csv`, each figure's mean and 95 % interval across seeds
    /// ([`super::seeds`]), with a `seed` axis of two or more values.
    pub seeds_csv: Option<PathBuf>,
    /// One line a seed group for the terminal ([`super::seeds::seed_lines`]).
    pub seed_lines: Vec<String>,
    /// `verdicts.txt`: whether each setting moves p99 beyond the seeds' spread
    /// ([`super::seeds::verdict_lines`]); `None` without seed groups.
    pub verdicts: Option<PathBuf>,
    /// Its lines, for the terminal.
    pub verdict_lines: Vec<String>,
    /// `sweep.html`.
    pub html: PathBuf,
}

/// Writes `index.json`, `index.csv`, the fan-in plots and `sweep.html` into the sweep
/// directory `out`, replacing the earlier ones as a whole (see [`stage_reports`]).
/// `command` is the command line shown on the page.
///
/// # Errors
/// The directory is in use by another process; a file cannot be written or a plot cannot be
/// drawn (the earlier files stay whole then); the replacement fails.
pub fn write_reports(
    out: &Path,
    plan: &Plan,
    ix: &SweepIndex,
    command: &str,
) -> Result<SweepFiles> {
    let dir = RunDir::open(out, xrdma_reports::run_dir::Holds::Sweep)?;
    let files = stage_reports(&dir, plan, ix, command).with_context(|| dir.unchanged_note())?;
    dir.commit()?;
    Ok(files)
}

/// Writes `index.json`, `index.csv`, the fan-in plots and `sweep.html` into the staging
/// directory of the sweep directory `dir` (the caller commits them: the earlier index files,
/// plots and page are then replaced as a whole, and the points' directories are untouched);
/// the paths returned are those the files will have in the sweep directory. `command` is the
/// command line shown on the page.
///
/// # Errors
/// A file cannot be written or a plot cannot be drawn.
pub fn stage_reports(
    dir: &RunDir,
    plan: &Plan,
    ix: &SweepIndex,
    command: &str,
) -> Result<SweepFiles> {
    let out = dir.dir();
    let stage = dir.staging();
    let mut files = SweepFiles {
        index_json: out.join("index.json"),
        index_csv: out.join("index.csv"),
        plots: Vec::new(),
        seeds_csv: None,
        seed_lines: Vec::new(),
        verdicts: None,
        verdict_lines: Vec::new(),
        html: out.join("sweep.html"),
    };
    let json = serde_json::to_string_pretty(ix)? + "\n";
    write_atomic(&stage.join("index.json"), json.as_bytes())?;
    write_atomic(&stage.join("index.csv"), index_csv(ix).as_bytes())?;
    if let Some(groups) = super::seeds::seed_groups(ix) {
        let csv = super::seeds::seeds_csv(ix, &groups);
        write_atomic(&stage.join("seeds.csv"), csv.as_bytes())?;
        files.seeds_csv = Some(out.join("seeds.csv"));
        files.seed_lines = super::seeds::seed_lines(ix, &groups);
        let verdicts = super::seeds::verdict_lines(ix, &groups);
        if !verdicts.is_empty() {
            let text = verdicts.join("\n") + "\n";
            write_atomic(&stage.join("verdicts.txt"), text.as_bytes())?;
            files.verdicts = Some(out.join("verdicts.txt"));
        }
        files.verdict_lines = verdicts;
    }
    let mut page = SweepPage {
        title: format!("sweep of {}", ix.scenario),
        tool_version: ix.tool_version.clone(),
        command: command.to_string(),
        axes: ix
            .axes
            .iter()
            .map(|a| (a.name.clone(), a.values.clone()))
            .collect(),
        headers: ix
            .axes
            .iter()
            .map(|a| a.name.clone())
            .chain(
                [
                    "status",
                    "p50 µs",
                    "p99 µs",
                    "p99.9 µs",
                    "max µs",
                    "T* µs",
                    "span/T*",
                    "goodput Gb/s",
                ]
                .map(String::from),
            )
            .collect(),
        scenario_path: ix.scenario_path.clone(),
        scenario_yaml: plan.base_yaml.clone(),
        ..SweepPage::default()
    };
    for p in &ix.points {
        let h = p.headline.as_ref();
        let mut row = p.values.clone();
        row.push(match &p.error {
            Some(e) => format!("error: {e}"),
            None => status_name(p.status).into(),
        });
        row.push(fmt_us(h.and_then(|h| h.p50_ps)));
        row.push(fmt_us(h.and_then(|h| h.p99_ps)));
        row.push(fmt_us(h.and_then(|h| h.p999_ps)));
        row.push(fmt_us(h.and_then(|h| h.max_ps)));
        row.push(fmt_us(h.and_then(|h| h.t_star_ps)));
        row.push(
            h.and_then(|h| h.max_over_t_star)
                .map_or("-".into(), |v| format!("{v:.4}")),
        );
        row.push(
            h.and_then(|h| h.goodput_bps)
                .map_or("-".into(), |v| format!("{:.2}", v / 1e9)),
        );
        page.rows.push(row);
    }
    match fan_in_series(ix) {
        Some(series) => {
            for (stem, scale, what) in [
                ("fan-in", FanInScale::Absolute, "absolute"),
                (
                    "fan-in-t-star",
                    FanInScale::NormalizedToTStar,
                    "normalized to T*",
                ),
            ] {
                let title = format!("{}: message completion vs fan-in ({what})", ix.scenario);
                let svg = render_svg(|a| draw_fan_in(a, &title, &series, scale))?;
                write_atomic(&stage.join(format!("{stem}.svg")), svg.as_bytes())?;
                let png = stage.join(format!("{stem}.png"));
                render_png(&png, |a| draw_fan_in(a, &title, &series, scale))?;
                files.plots.push(out.join(format!("{stem}.svg")));
                files.plots.push(out.join(format!("{stem}.png")));
                page.figures.push((
                    format!("p50 / p99 / p99.9 message completion time vs fan-in, {what}"),
                    svg,
                ));
            }
        }
        None => page
            .notes
            .push("No fan-in axis in this sweep: no fan-in plot.".into()),
    }
    write_atomic(&stage.join("sweep.html"), sweep_html(&page).as_bytes())?;
    Ok(files)
}

/// Checks that a sweep of `plan` into `out` keeps every point the index already there lists
/// (a resumed or extended sweep), so its index, plots and seed summary never silently drop
/// the results of an earlier sweep over other points: a sweep directory holds one whole
/// sweep. No index, or one that does not parse, is no earlier sweep.
///
/// # Errors
/// The earlier index lists a point this plan does not have; the message names one, the
/// earlier axes, and how to keep both.
pub fn check_keeps_earlier_points(out: &Path, plan: &Plan) -> Result<()> {
    let Some(earlier) = std::fs::read_to_string(out.join("index.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<SweepIndex>(&t).ok())
    else {
        return Ok(());
    };
    let Some(lost) = earlier
        .points
        .iter()
        .find(|e| !plan.points.iter().any(|p| p.id == e.id))
    else {
        return Ok(());
    };
    let axes = |names: Vec<String>| names.join(" ");
    anyhow::bail!(
        "{} holds a sweep over {} whose point {} is not a point of this sweep (over {}): its \
         index and plots would no longer show it. Give --out another directory, or sweep a \
         superset of its axes' values",
        out.display(),
        axes(
            earlier
                .axes
                .iter()
                .map(|a| format!("{}={}", a.name, a.values.join(",")))
                .collect()
        ),
        lost.id,
        axes(
            plan.axes
                .iter()
                .map(|a| format!("{}={}", a.kind.name(), a.texts.join(",")))
                .collect()
        ),
    )
}
