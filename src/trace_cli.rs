//! `xrdma trace`: where a traced run's completion time went, per stage
//! ([`xrdma_reports::stages`]): each stage's distribution, the message at each completion
//! percentile split into stages, and which stage makes p99. A run is traced when its
//! scenario says `trace: true` or it was run with `xrdma run --trace`.

use anyhow::{bail, Result};
use std::path::PathBuf;

/// `xrdma trace`'s arguments.
#[derive(clap::Args, Debug)]
pub struct TraceArgs {
    /// A run directory holding `result.json`, or the file itself.
    pub result: PathBuf,
    /// Print the summary as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Runs `xrdma trace` and prints its output.
///
/// # Errors
/// The result does not load ([`xrdma_tools::compare::load_run`]), or no message has stages (the
/// run was not traced).
pub fn run(args: &TraceArgs) -> Result<()> {
    let (path, r) = xrdma_tools::compare::load_run(&args.result)?;
    let bad: Vec<String> = r
        .validate()
        .into_iter()
        .filter(|i| matches!(i, xrdma_reports::Inconsistency::StagesNotCompletion { .. }))
        .map(|i| i.to_string())
        .collect();
    if !bad.is_empty() {
        bail!("{}: {}", path.display(), bad.join("; "));
    }
    let Some(s) = xrdma_reports::stages::summarize(&r) else {
        let completed = r
            .messages
            .iter()
            .filter(|m| m.completed_ps.is_some())
            .count();
        if completed == 0 {
            bail!(
                "{}: no message completed, so none has stages ({} did not finish)",
                path.display(),
                r.messages.len()
            );
        }
        if r.messages.iter().any(|m| m.response_bytes.is_some()) {
            bail!(
                "{}: an echo exchange completes on its response, so it has no send-side \
                 stages (trace a one-way workload: incast or open-loop)",
                path.display()
            );
        }
        bail!(
            "{} has no message stages: rerun it with `xrdma run --trace` (or `trace: true` \
             in the scenario)",
            path.display()
        );
    };
    if args.json {
        xrdma_tools::outln!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        xrdma_tools::out!("{}", xrdma_reports::stages::stage_table(&s));
    }
    Ok(())
}
