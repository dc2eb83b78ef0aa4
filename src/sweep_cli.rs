//! `xrdma sweep` as the command line runs it: check every point, then run them all (writing
//! the index, plots and page, and judging the sweep), or hand them to a cluster's scheduler
//! (`--emit`), run one of them (`--point`), or gather the finished ones (`--collect`).

use crate::launch_cli::{self, LaunchOptions};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use xrdma_cluster::sweep::{self, jobs, Backend, Plan, PointOutcome, PointStatus};
use xrdma_reports::RunDir;
use xrdma_tools::outln;
use xrdma_tools::output::{open_out_dir, prepare_out_dir, EXIT_RESULT_FAILED};

/// The arguments of `xrdma sweep`.
#[derive(clap::Args, Debug)]
pub struct SweepArgs {
    /// The base scenario file (YAML).
    pub scenario: PathBuf,
    /// An axis to vary, NAME=V1,V2,...; repeat for more axes. Names: fan-in, size (every
    /// message of the list gets this size), beta, initial-window, dcqcn (on/off), pfc
    /// (on/off), backend (sim/verbs/sockets), seed, stack (xrdma/tcp/dctcp), rto-min
    /// (tcp.rto-min), delayed-ack (tcp.delayed-ack).
    #[arg(long = "axis", required = true)]
    pub axes: Vec<String>,
    /// Output directory [default: results/NAME-sweep, NAME the scenario's `name`].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Points run at once [default: the cores available].
    #[arg(short, long, conflicts_with_all = ["emit", "point", "collect"])]
    pub jobs: Option<usize>,
    /// Hand the points to a cluster instead of running them: `slurm` writes OUT/sweep.sbatch,
    /// a job array of one task per point (`--point $SLURM_ARRAY_TASK_ID`); `commands` prints
    /// one `--point ID` command per point (for GNU parallel or xargs). Both repeat this
    /// command's scenario, axes and output directory, so every task plans the same points
    /// with the same hashes; collect the results with `--collect`.
    #[arg(long, value_enum, conflicts_with_all = ["point", "collect"])]
    pub emit: Option<Emit>,
    /// Run only this point (its index from 0 in plan order, or its id) into
    /// OUT/points/ID/, as one task of a job; a finished point is not run again. Writes no
    /// index.
    #[arg(long, value_name = "K|ID", conflicts_with = "collect")]
    pub point: Option<String>,
    /// Run nothing: build index.json, index.csv, the plots and sweep.html from the points
    /// finished so far, listing the missing ones; exits 2 when a point is missing (unless
    /// --allow-missing) or failed.
    #[arg(long)]
    pub collect: bool,
    /// With --emit: run each verbs point as N ranks, one process per node (a job step of N
    /// tasks; each process runs `--point` and the launcher's variables say which rank it is)
    /// [default: the scenario's `verbs.ranks` count, else 1: every host in one process].
    #[arg(long, value_name = "N", requires = "emit")]
    pub ranks: Option<u32>,
    /// With --collect: missing points are listed, but do not fail the collection.
    #[arg(long, requires = "collect")]
    pub allow_missing: bool,
}

/// What `--emit` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    /// A Slurm job-array script, OUT/sweep.sbatch.
    Slurm,
    /// One command per point on standard output.
    Commands,
}

/// `xrdma sweep`: see [`SweepArgs`]. Exit 0 when every point (run, or collected) passed, 2
/// when one did not (its id is printed) or, for `--collect`, is missing.
///
/// # Errors
/// A bad axis or scenario, an unwritable output directory, a `--point` that names no point
/// or one a task cannot run, a missing sweep directory to collect, or a failure writing the
/// index.
pub fn run(args: SweepArgs) -> Result<ExitCode> {
    let axes = sweep::parse_axes(&args.axes)?;
    let base = xrdma_scenario::load(&args.scenario)?;
    let yaml = std::fs::read_to_string(&args.scenario)
        .with_context(|| format!("reading {}", args.scenario.display()))?;
    let plan = sweep::plan(base, yaml, axes)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-sweep", plan.base.name)));
    if let Some(emit) = args.emit {
        return emit_jobs(&plan, &args, &out, emit);
    }
    if let Some(which) = &args.point {
        return run_one(&plan, &out, which);
    }
    if args.collect {
        return collect(&plan, &out, args.allow_missing);
    }
    // Locked for the whole sweep: a second sweep into it is refused at once.
    let dir = open_out_dir(&out, xrdma_reports::run_dir::Holds::Sweep)?;
    sweep::report::check_keeps_earlier_points(&out, &plan)?;
    let jobs = args.jobs.unwrap_or_else(sweep::default_jobs);
    if jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    // More workers than points would only sit idle (each holds a thread and its stack).
    let jobs = jobs.min(plan.points.len().max(1));
    eprintln!(
        "sweeping {} over {} point(s) with {jobs} worker(s) into {} ...",
        args.scenario.display(),
        plan.points.len(),
        out.display()
    );
    let progress = sweep::Progress::new(plan.points.len(), false);
    let outcomes = sweep::execute(&plan, &out, jobs, &sweep::default_runner, &progress)?;
    let resumed = outcomes.iter().filter(|o| o.resumed).count();
    let bad = write_index(&plan, dir, &outcomes)?;
    outln!(
        "{} point(s): {} run, {resumed} resumed, {} not ok",
        outcomes.len(),
        outcomes.len() - resumed,
        bad.len()
    );
    Ok(judge(&bad))
}

/// Writes the index, table, plots and page of `outcomes` into the locked sweep directory
/// `dir` (replacing the earlier ones as a whole), prints the files, and returns the ids of
/// the points that are not ok.
fn write_index(plan: &Plan, dir: RunDir, outcomes: &[PointOutcome]) -> Result<Vec<String>> {
    let index = sweep::report::index(plan, outcomes);
    let command: Vec<String> = std::env::args().collect();
    let files = sweep::report::stage_reports(&dir, plan, &index, &command.join(" "))
        .with_context(|| dir.unchanged_note())?;
    dir.commit()?;
    for l in &files.seed_lines {
        outln!("across seeds: {l}");
    }
    for l in &files.verdict_lines {
        outln!("against seeds: {l}");
    }
    for f in [&files.index_json, &files.index_csv]
        .into_iter()
        .chain(&files.seeds_csv)
        .chain(&files.verdicts)
        .chain(&files.plots)
        .chain([&files.html])
    {
        outln!("wrote {}", f.display());
    }
    Ok(plan
        .points
        .iter()
        .zip(outcomes)
        .filter(|(_, o)| !matches!(o.status, PointStatus::Ok | PointStatus::Missing))
        .map(|(p, _)| p.id.clone())
        .collect())
}

/// Exit 0 when `bad` is empty, else 2 with the failed points named.
fn judge(bad: &[String]) -> ExitCode {
    if bad.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("FAILED points: {}", bad.join(", "));
        ExitCode::from(EXIT_RESULT_FAILED)
    }
}

/// `path` made absolute against the working directory (a job task may start elsewhere).
fn absolute(path: &Path) -> Result<String> {
    let p =
        std::path::absolute(path).with_context(|| format!("making {} absolute", path.display()))?;
    Ok(p.display().to_string())
}

/// `--emit`: the job-array script or the commands, where the results land and how to
/// collect them.
fn emit_jobs(plan: &Plan, args: &SweepArgs, out: &Path, emit: Emit) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("locating this executable")?;
    let inv = jobs::Invocation {
        exe: exe.display().to_string(),
        scenario: absolute(&args.scenario)?,
        axes: args.axes.clone(),
        out: absolute(out)?,
        ranks: args.ranks.unwrap_or(1),
    };
    if args.ranks == Some(0) {
        bail!("--ranks must be at least 1");
    }
    if let Some(n) = args
        .ranks
        .filter(|&n| n > 1 && jobs::step_ranks(plan, &inv) == 1)
    {
        eprintln!(
            "warning: --ranks {n} applies to verbs and sockets points only, and this sweep has \
             none: every point runs in one process"
        );
    }
    match emit {
        Emit::Slurm => {
            let script = jobs::slurm_script(plan, &inv)?;
            // Slurm opens each task's output file in OUT/slurm/ but does not create it.
            let logs = out.join("slurm");
            std::fs::create_dir_all(&logs)
                .with_context(|| format!("cannot create {}", logs.display()))?;
            let path = out.join("sweep.sbatch");
            sweep::write_atomic(&path, script.as_bytes())?;
            let ranks = jobs::step_ranks(plan, &inv);
            outln!(
                "wrote {} ({} point(s) as a job array{})",
                path.display(),
                plan.points.len(),
                if ranks > 1 {
                    format!(", each a job step of {ranks} ranks")
                } else {
                    String::new()
                }
            );
            outln!("submit:  sbatch {}", path.display());
            outln!("results: {}/points/<id>/", inv.out);
            outln!("collect: {}", inv.collect_command());
        }
        Emit::Commands => {
            // Standard output holds the commands only, so it pipes into parallel or xargs.
            for c in jobs::commands(plan, &inv) {
                outln!("{c}");
            }
            eprintln!("results: {}/points/<id>/", inv.out);
            eprintln!("collect: {}", inv.collect_command());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--point`: run one point into its directory. Under a launcher (`srun`, `mpirun`; its
/// variables, as `xrdma run --backend verbs` reads them) a verbs point runs as this
/// process's rank and the receiver's rank writes it; a simulator point runs on rank 0 alone.
fn run_one(plan: &Plan, out: &Path, which: &str) -> Result<ExitCode> {
    let k = jobs::select(plan, which)?;
    let p = &plan.points[k];
    if sweep::finished(out, p).is_some() {
        // Every rank of a requeued task stops here, so none waits for a peer that never runs.
        outln!(
            "point {} finished earlier: in {}",
            p.id,
            sweep::point_dir(out, &p.id).display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let launched = match p.backend {
        Backend::Verbs | Backend::Sockets => LaunchOptions::default().resolve(&p.scenario)?,
        Backend::Sim => None,
    };
    if p.backend == Backend::Sim {
        if let Some((var, rank)) = launch_cli::launcher_rank().filter(|(_, r)| *r != 0) {
            outln!(
                "point {}: a simulator point runs on rank 0 alone ({var}={rank}: nothing to do)",
                p.id
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    if let Some(l) = launched
        .as_ref()
        .filter(|l| !launch_cli::writes_report(&p.scenario, l))
    {
        eprintln!(
            "sweep point {k} of {}: {} as {} ...",
            plan.points.len(),
            p.id,
            l.summary()
        );
        launch_cli::run(&p.scenario, l, p.backend)?;
        return Ok(ExitCode::SUCCESS);
    }
    prepare_out_dir(out)?;
    eprintln!("sweep point {k} of {}: {} ...", plan.points.len(), p.id);
    let o = match &launched {
        None => jobs::run_task(plan, out, k, &sweep::default_runner)?,
        Some(l) => {
            eprintln!("{}", l.summary());
            let as_rank = |backend: Backend, sc: &xrdma_scenario::Scenario| {
                launch_cli::run(sc, l, backend)?
                    .ok_or_else(|| anyhow::anyhow!("rank {} does not hold the receiver", l.rank))
            };
            jobs::run_task(plan, out, k, &as_rank)?
        }
    };
    let dir = sweep::point_dir(out, &p.id);
    let how = if o.resumed { "finished earlier" } else { "ran" };
    match (o.status, &o.error) {
        (_, Some(e)) => {
            eprintln!("FAILED point {}: {e}", p.id);
            Ok(ExitCode::from(EXIT_RESULT_FAILED))
        }
        (PointStatus::Ok, None) => {
            outln!("point {} {how}: ok, in {}", p.id, dir.display());
            Ok(ExitCode::SUCCESS)
        }
        (_, None) => {
            outln!("point {} {how}: in {}", p.id, dir.display());
            eprintln!("FAILED point {}: its delivery check failed", p.id);
            Ok(ExitCode::from(EXIT_RESULT_FAILED))
        }
    }
}

/// `--collect`: the index, table, plots and page of the finished points; the missing ones
/// listed.
fn collect(plan: &Plan, out: &Path, allow_missing: bool) -> Result<ExitCode> {
    if !out.is_dir() {
        bail!(
            "no sweep directory {}: nothing to collect (run the points first)",
            out.display()
        );
    }
    let dir = open_out_dir(out, xrdma_reports::run_dir::Holds::Sweep)?;
    let c = jobs::collect(plan, out);
    let bad = write_index(plan, dir, &c.outcomes)?;
    outln!(
        "{} point(s): {} finished, {} missing, {} not ok",
        plan.points.len(),
        plan.points.len() - c.missing.len(),
        c.missing.len(),
        bad.len()
    );
    if !c.missing.is_empty() {
        eprintln!(
            "MISSING {} of {} point(s):",
            c.missing.len(),
            plan.points.len()
        );
        for (k, why) in &c.missing {
            eprintln!("  [{k}] {}: {why}", plan.points[*k].id);
        }
        if !allow_missing {
            eprintln!(
                "the collection is incomplete: run the missing points (--point K), or pass \
                 --allow-missing"
            );
            return Ok(ExitCode::from(EXIT_RESULT_FAILED));
        }
    }
    Ok(judge(&bad))
}
