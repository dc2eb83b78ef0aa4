//! `xrdma sweep`: one base scenario and axes to vary, expanded into points (the cartesian
//! product of the axes) that run in parallel, one run directory per point, an index of all
//! points, fan-in plots and an HTML page.
//!
//! Layout of a sweep directory `OUT`:
//!
//! | path | what |
//! |---|---|
//! | `points/<id>/` | the point's run output (`result.json`, `summary.txt`, `latency.svg`) and `point.json` (its axis values and the hash of its scenario) |
//! | `index.json`, `index.csv` | one entry per point: axis values, status, headline figures |
//! | `fan-in.svg`/`.png`, `fan-in-t-star.svg`/`.png` | p50/p99/p99.9 against fan-in, absolute and over T* (when a fan-in axis is swept) |
//! | `sweep.html` | the self-contained page |
//!
//! A point is first written to `points/<id>.partial/` and renamed to `points/<id>/` once all
//! its files are there, so `points/<id>/` is always complete. A sweep locks its directory for
//! its whole run (a second sweep into it is refused), and every point is written under its
//! own lock (`points/.<id>.lock`, for the tasks of a job array), under which a leftover
//! `.partial` of that point is removed. On a rerun a point whose
//! `point.json` carries the same scenario hash and whose `result.json` reads back is not run
//! again ("resumed"); anything else (a leftover `.partial`, a truncated file, a changed
//! scenario) is run afresh. Each point is a deterministic function of its scenario, so the
//! results do not depend on the number of jobs or on resuming.
//!
//! A sweep too large for one machine goes to the cluster's scheduler instead ([`jobs`]): a
//! Slurm job array or a list of commands, each task running one point into the same layout,
//! and a collection of the finished points into the same index, table, plots and page.

pub mod axis;
pub mod index;
pub mod jobs;
pub mod report;
pub mod seeds;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use xrdma_reports::RunResult;
use xrdma_scenario::{Scenario, Workload};

pub use axis::{parse_axes, parse_axis, Axis, AxisError, AxisKind, AxisValue};
pub use xrdma_runner::request::Backend;

/// One point of a sweep: the base scenario with one value of every axis applied.
#[derive(Clone, Debug)]
pub struct Point {
    /// Directory name: `<axis>-<value>` for every axis joined by `_` (e.g. `fan-in-16_beta-0.8`),
    /// with characters other than ASCII letters, digits, `.` and `-` replaced by `-`.
    pub id: String,
    /// The value of each axis as written, in axis order.
    pub values: Vec<String>,
    /// The scenario to run.
    pub scenario: Scenario,
    /// Where to run it.
    pub backend: Backend,
    /// [`point_hash`] of `scenario` and `backend`.
    pub hash: String,
}

/// A checked sweep: the base scenario, the axes and every point.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The base scenario as loaded.
    pub base: Scenario,
    /// Text of the base scenario file.
    pub base_yaml: String,
    /// The axes, in the order given.
    pub axes: Vec<Axis>,
    /// The points, in [`axis::cartesian`] order.
    pub points: Vec<Point>,
}

/// Hash of a point's configuration: XXH3-128 (hex) of the scenario's full debug rendering
/// (every setting after defaults were filled in, without the file path), the backend and the
/// tool version. Equal hashes mean a finished point can be reused.
pub fn point_hash(sc: &Scenario, backend: Backend) -> String {
    let mut s = sc.clone();
    s.source_path = PathBuf::new();
    // Where a value came from is not part of the configuration.
    s.overrides.clear();
    let text = format!(
        "{s:?}\nbackend={}\nversion={}",
        backend.name(),
        env!("CARGO_PKG_VERSION")
    );
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(text.as_bytes()))
}

fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Expands `axes` over `base` into points and checks every point's scenario as a run would
/// (for the simulator: the xrdma and simulator configurations, PFC headroom for that fan-in,
/// memory; for verbs: the xrdma configuration), before anything runs.
///
/// # Errors
/// No axis; a `sim.capture` block (a sweep writes no captures); a value that cannot apply
/// (fan-in below the receiver's host index); a point whose
/// scenario fails its check (the message names the point); a verbs point in a build without the
/// `verbs` feature.
pub fn plan(base: Scenario, base_yaml: String, axes: Vec<Axis>) -> Result<Plan> {
    if axes.is_empty() {
        bail!(
            "give at least one --axis NAME=V1,V2,... (axes: {})",
            axis::AXES.map(|(_, n)| n).join(", ")
        );
    }
    if base.sim_or_default().capture.is_some() {
        bail!(
            "{}: sim.capture: a sweep writes no packet captures; capture one point with \
             `xrdma run --capture HOSTS` on its scenario",
            xrdma_runner::check::where_is(&base, &["sim", "capture"])
        );
    }
    let mut points = Vec::new();
    for idx in axis::cartesian(&axes) {
        let mut sc = base.clone();
        let mut backend = Backend::Sim;
        let mut values = Vec::new();
        let mut id_parts = Vec::new();
        for (a, &i) in axes.iter().zip(&idx) {
            axis::apply(&mut sc, &mut backend, a.kind, a.values[i])
                .map_err(|e| anyhow!("--axis {}: {e}", a.kind.name()))?;
            if let Some(key) = a.kind.scenario_key(&sc) {
                sc.overrides.push(xrdma_scenario::Override {
                    key: key.into_iter().map(String::from).collect(),
                    origin: format!("--axis {}={}", a.kind.name(), a.texts[i]),
                });
            }
            values.push(a.texts[i].clone());
            id_parts.push(format!("{}-{}", a.kind.name(), sanitize(&a.texts[i])));
        }
        let id = id_parts.join("_");
        match backend {
            Backend::Sim => {
                xrdma_runner::check::check(&sc).with_context(|| format!("sweep point {id}"))?;
            }
            Backend::Verbs => {
                Backend::Verbs
                    .require()
                    .with_context(|| format!("sweep point {id}"))?;
                xrdma_runner::check::check_xrdma(&sc)
                    .with_context(|| format!("sweep point {id}"))?;
            }
            Backend::Sockets => {
                xrdma_runner::run::check_sockets(&sc)
                    .with_context(|| format!("sweep point {id}"))?;
            }
        }
        let hash = point_hash(&sc, backend);
        points.push(Point {
            id,
            values,
            scenario: sc,
            backend,
            hash,
        });
    }
    Ok(Plan {
        base,
        base_yaml,
        axes,
        points,
    })
}

/// `point.json` in a point directory: what the point is, for resuming and for readers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PointFile {
    /// The point's directory name.
    pub id: String,
    /// Axis names, in axis order.
    pub axes: Vec<String>,
    /// The value of each axis as written.
    pub values: Vec<String>,
    /// Backend name.
    pub backend: String,
    /// [`point_hash`].
    pub hash: String,
    /// [`result_digest`] of the `result.json` this point wrote: a result that is not the
    /// point's own (another run written into the directory since) is not reused. `None` in a
    /// `point.json` written before the digest was kept: such a point runs again.
    #[serde(default)]
    pub result_digest: Option<String>,
}

/// XXH3-128 (hex) of a `result.json`'s bytes, as [`PointFile::result_digest`] keeps it.
pub fn result_digest(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// How a point ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PointStatus {
    /// Ran, and every message arrived intact and the result is consistent.
    Ok,
    /// Ran, but a message was missing, corrupted or duplicated, or the result is inconsistent.
    Failed,
    /// Did not produce a result (a transport error during setup, unwritable output).
    Error,
    /// Not finished when the sweep was collected ([`jobs::collect`]): no result with the
    /// point's hash in its directory.
    Missing,
}

/// The outcome of one point.
#[derive(Clone, Debug)]
pub struct PointOutcome {
    /// How it ended.
    pub status: PointStatus,
    /// Its result (from this run or read back from a finished earlier one).
    pub result: Option<RunResult>,
    /// Taken from an earlier run of the sweep instead of run now.
    pub resumed: bool,
    /// The error of a point with status [`PointStatus::Error`].
    pub error: Option<String>,
}

/// Writes `bytes` to `path` through `path` + `.tmp` and a rename, so readers never see a
/// partial file.
///
/// # Errors
/// The write or the rename fails.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(xrdma_reports::write_atomic(path, bytes)?)
}

/// The directory of point `id` under the sweep directory `out`.
pub fn point_dir(out: &Path, id: &str) -> PathBuf {
    out.join("points").join(id)
}

/// The result of a finished earlier run of `point` under `out`: `point.json` with the same hash
/// and a `result.json` that is the one the point wrote (its [`result_digest`]) and reads back
/// in full. `None` otherwise: a point whose directory another run has since written into
/// (`xrdma run --out` on it) runs again rather than lending that run's figures to the point.
pub fn finished(out: &Path, point: &Point) -> Option<RunResult> {
    let dir = point_dir(out, &point.id);
    let text = std::fs::read_to_string(dir.join("point.json")).ok()?;
    let pf: PointFile = serde_json::from_str(&text).ok()?;
    if pf.hash != point.hash {
        return None;
    }
    let json = dir.join("result.json");
    let bytes = std::fs::read(&json).ok()?;
    if pf.result_digest.as_deref() != Some(result_digest(&bytes).as_str()) {
        return None;
    }
    xrdma_reports::read_json(&json).ok()
}

fn status_of(r: &RunResult) -> PointStatus {
    let d = &r.delivery;
    if d.missing + d.digest_mismatches + d.duplicates > 0 || !r.validate().is_empty() {
        PointStatus::Failed
    } else {
        PointStatus::Ok
    }
}

/// Runs one point (or takes its finished earlier result) and writes its directory.
fn run_point<R>(out: &Path, plan: &Plan, point: &Point, runner: &R) -> PointOutcome
where
    R: Fn(Backend, &Scenario) -> Result<RunResult> + Sync,
{
    let error = |e: anyhow::Error| PointOutcome {
        status: PointStatus::Error,
        result: None,
        resumed: false,
        error: Some(format!("{e:#}")),
    };
    // Held until the point is written: another sweep or task on it is refused.
    let _lock = match lock_point(out, &point.id) {
        Ok(lock) => lock,
        Err(e) => return error(e),
    };
    let partial = out.join("points").join(format!("{}.partial", point.id));
    if let Some(result) = finished(out, point) {
        // Under the lock a `.partial` is nobody's: a leftover of an interrupted sweep.
        if let Err(e) = remove_dir_if_any(&partial) {
            return error(e);
        }
        return PointOutcome {
            status: status_of(&result),
            result: Some(result),
            resumed: true,
            error: None,
        };
    }
    let attempt = || -> Result<RunResult> {
        let dir = point_dir(out, &point.id);
        for d in [&dir, &partial] {
            if d.exists() {
                std::fs::remove_dir_all(d).with_context(|| format!("removing {}", d.display()))?;
            }
        }
        let mut result = runner(point.backend, &point.scenario)?;
        // The point's own scenario: the base file with the axis values it was run at, so the
        // point's report and a later compare say what ran.
        let applied: Vec<String> = plan
            .axes
            .iter()
            .zip(&point.values)
            .map(|(a, v)| format!("{}={v}", a.kind.name()))
            .collect();
        result.scenario.name = format!("{} [{}]", result.scenario.name, applied.join(", "));
        result.scenario_yaml = Some(format!(
            "# sweep point {}: the base scenario below, run at {}\n{}",
            point.id,
            applied.join(", "),
            plan.base_yaml
        ));
        xrdma_reports::write_run_dir(&partial, &result, false)
            .with_context(|| format!("writing {}", partial.display()))?;
        let written = partial.join("result.json");
        let bytes =
            std::fs::read(&written).with_context(|| format!("reading {}", written.display()))?;
        let pf = PointFile {
            id: point.id.clone(),
            axes: plan
                .axes
                .iter()
                .map(|a| a.kind.name().to_string())
                .collect(),
            values: point.values.clone(),
            backend: point.backend.name().into(),
            hash: point.hash.clone(),
            result_digest: Some(result_digest(&bytes)),
        };
        let json = serde_json::to_string_pretty(&pf)? + "\n";
        write_atomic(&partial.join("point.json"), json.as_bytes())?;
        std::fs::rename(&partial, &dir)
            .with_context(|| format!("renaming {} to {}", partial.display(), dir.display()))?;
        Ok(result)
    };
    match attempt() {
        Ok(result) => PointOutcome {
            status: status_of(&result),
            result: Some(result),
            resumed: false,
            error: None,
        },
        Err(e) => error(e),
    }
}

/// Locks point `id` of the sweep directory `out` for this process (`points/.ID.lock`): a
/// whole sweep and a `--point` task, or two tasks, never write one point at once.
///
/// # Errors
/// Another process holds it ("OUT/points/ID is in use by xrdma pid N"), or the lock file
/// cannot be created.
fn lock_point(out: &Path, id: &str) -> Result<xrdma_reports::run_dir::DirLock> {
    let points = out.join("points");
    std::fs::create_dir_all(&points)
        .with_context(|| format!("cannot create {}", points.display()))?;
    Ok(xrdma_reports::run_dir::DirLock::acquire(
        &points.join(format!(".{id}.lock")),
        &point_dir(out, id),
    )?)
}

/// Removes the directory `d` with everything in it, if it exists.
fn remove_dir_if_any(d: &Path) -> Result<()> {
    match std::fs::remove_dir_all(d) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", d.display()))
        }
        _ => Ok(()),
    }
}

/// The default point runner: the point's scenario as a [`xrdma_runner::request::RunRequest`] on its
/// backend, in this process.
///
/// # Errors
/// The run's own errors; a verbs point in a build without the feature.
pub fn default_runner(backend: Backend, sc: &Scenario) -> Result<RunResult> {
    Ok(xrdma_runner::request::RunRequest::new(sc.clone(), backend)
        .run()?
        .result)
}

/// Progress reporting: an indicatif bar on stderr, hidden when stderr is not a terminal, in
/// which case one line per finished point is printed instead. `quiet` prints nothing.
pub struct Progress {
    bar: indicatif::ProgressBar,
    done: AtomicUsize,
    total: usize,
    quiet: bool,
}

impl Progress {
    /// A progress report for `total` points.
    pub fn new(total: usize, quiet: bool) -> Progress {
        let bar = if quiet {
            indicatif::ProgressBar::hidden()
        } else {
            indicatif::ProgressBar::new(total as u64)
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} points, eta {eta} {msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress {
            bar,
            done: AtomicUsize::new(0),
            total,
            quiet,
        }
    }

    fn finished(&self, id: &str, o: &PointOutcome, seconds: f64) {
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let what = match (&o.result, &o.error) {
            (_, Some(e)) => format!("error: {e}"),
            (Some(r), None) => {
                let h = report::Headline::of(r);
                format!(
                    "p99 {} µs, span/T* {}{}{}",
                    h.p99_ps.map_or("-".into(), xrdma_reports::format_us),
                    h.max_over_t_star.map_or("-".into(), |v| format!("{v:.4}")),
                    if o.status == PointStatus::Failed {
                        ", FAILED delivery check"
                    } else {
                        ""
                    },
                    if o.resumed {
                        " (resumed: finished earlier)".to_string()
                    } else {
                        format!(" ({seconds:.1} s)")
                    }
                )
            }
            (None, None) => String::new(),
        };
        self.bar.inc(1);
        if self.quiet {
            return;
        }
        if self.bar.is_hidden() {
            eprintln!("[{n}/{}] {id}: {what}", self.total);
        } else {
            self.bar.set_message(id.to_string());
            self.bar.println(format!("{id}: {what}"));
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Runs every point of `plan` under the sweep directory `out` with `jobs` workers (rayon;
/// simulator points in parallel, verbs points one at a time afterwards, since they share the
/// device and measure wall time), skipping points finished by an earlier run. Returns one
/// outcome per point, in plan order, whatever the order they finished in.
///
/// # Errors
/// The output directory cannot be created or the worker pool cannot start. A failing point is
/// an outcome, not an error.
pub fn execute<R>(
    plan: &Plan,
    out: &Path,
    jobs: usize,
    runner: &R,
    progress: &Progress,
) -> Result<Vec<PointOutcome>>
where
    R: Fn(Backend, &Scenario) -> Result<RunResult> + Sync,
{
    let points_dir = out.join("points");
    std::fs::create_dir_all(&points_dir)
        .with_context(|| format!("cannot create {}", points_dir.display()))?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .context("starting the worker pool")?;
    let one = |p: &Point| {
        let t = Instant::now();
        let o = run_point(out, plan, p, runner);
        progress.finished(&p.id, &o, t.elapsed().as_secs_f64());
        o
    };
    // Longest point first, each worker taking the next point when it is free (greedy list
    // scheduling in LPT order, Graham 1969): the fan-in-256 point of a fan-in sweep starts at
    // once instead of last, so it does not leave one worker running alone at the end.
    let mut order: Vec<usize> = (0..plan.points.len())
        .filter(|&i| plan.points[i].backend == Backend::Sim)
        .collect();
    order.sort_by_key(|&i| std::cmp::Reverse(point_cost(&plan.points[i].scenario)));
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, PointOutcome)>> = Mutex::new(Vec::with_capacity(order.len()));
    pool.scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|_| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let o = one(&plan.points[i]);
                done.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((i, o));
            });
        }
    });
    let sim = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // A real machine's points (a device, its sockets) run one at a time, after the
    // simulator's: their timing is the machine's.
    let real = plan
        .points
        .iter()
        .enumerate()
        .filter(|(_, p)| p.backend != Backend::Sim)
        .map(|(i, p)| (i, one(p)));
    let mut all: Vec<(usize, PointOutcome)> = sim.into_iter().chain(real).collect();
    all.sort_by_key(|(i, _)| *i);
    progress.finish();
    Ok(all.into_iter().map(|(_, o)| o).collect())
}

/// A point's expected cost, for ordering the work: the payload bytes its workload moves
/// (an incast's senders × bytes per sender; otherwise connections × the largest message).
fn point_cost(sc: &Scenario) -> u64 {
    match &sc.workload {
        Workload::Incast(i) => u64::from(i.senders).saturating_mul(i.bytes_per_sender()),
        w => u64::from(w.connections()).saturating_mul(w.largest_message()),
    }
}

/// Default number of workers: the cores available to this process.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
