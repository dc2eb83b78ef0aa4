//! `xrdma sweep` as the command line runs it: check every point, run them, write the index,
//! plots and page, and judge the sweep.

use crate::outln;
use crate::output::{prepare_out_dir, EXIT_RESULT_FAILED};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `xrdma sweep SCENARIO --axis ... [--out DIR] [--jobs N]`: exit 0 when every point ran and
/// passed, 2 when one did not (its id is printed).
///
/// # Errors
/// A bad axis or scenario, an unwritable output directory, or a failure writing the index.
pub fn run(
    scenario: &Path,
    axes: &[String],
    out: Option<PathBuf>,
    jobs: Option<usize>,
) -> Result<ExitCode> {
    use xrdma_runner::sweep;
    let axes = sweep::parse_axes(axes)?;
    let base = xrdma_scenario::load(scenario)?;
    let yaml = std::fs::read_to_string(scenario)
        .with_context(|| format!("reading {}", scenario.display()))?;
    let plan = sweep::plan(base, yaml, axes)?;
    let out =
        out.unwrap_or_else(|| PathBuf::from("results").join(format!("{}-sweep", plan.base.name)));
    prepare_out_dir(&out)?;
    let jobs = jobs.unwrap_or_else(sweep::default_jobs);
    if jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    // More workers than points would only sit idle (each holds a thread and its stack).
    let jobs = jobs.min(plan.points.len().max(1));
    eprintln!(
        "sweeping {} over {} point(s) with {jobs} worker(s) into {} ...",
        scenario.display(),
        plan.points.len(),
        out.display()
    );
    let progress = sweep::Progress::new(plan.points.len(), false);
    let outcomes = sweep::execute(&plan, &out, jobs, &sweep::default_runner, &progress)?;
    let index = sweep::report::index(&plan, &outcomes);
    let command: Vec<String> = std::env::args().collect();
    let files = sweep::report::write_reports(&out, &plan, &index, &command.join(" "))?;
    let resumed = outcomes.iter().filter(|o| o.resumed).count();
    let bad: Vec<&str> = plan
        .points
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| o.status != sweep::PointStatus::Ok)
        .map(|(p, _)| p.id.as_str())
        .collect();
    outln!(
        "{} point(s): {} run, {resumed} resumed, {} not ok",
        outcomes.len(),
        outcomes.len() - resumed,
        bad.len()
    );
    for f in [&files.index_json, &files.index_csv]
        .into_iter()
        .chain(&files.plots)
        .chain([&files.html])
    {
        outln!("wrote {}", f.display());
    }
    if bad.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("FAILED points: {}", bad.join(", "));
        Ok(ExitCode::from(EXIT_RESULT_FAILED))
    }
}
