//! Sweeps that outgrow one machine: the plan's points handed to the cluster's scheduler as a
//! Slurm job array ([`slurm_script`]) or as one command per point ([`commands`], for GNU
//! parallel or xargs), each task running exactly one point ([`run_task`]) into its usual
//! directory, and the collection of whatever points have finished into the sweep's index,
//! table, plots and page ([`collect`]).
//!
//! Every emitted command repeats the sweep's own arguments (scenario file, axes, output
//! directory), so each task plans the same points with the same ids and scenario hashes as
//! the whole sweep; a task writes its point as the whole sweep does (`points/<id>.partial/`,
//! then a rename) and skips a point already finished, so a requeued task costs nothing.
//!
//! A verbs point can run as ranks, one process per node, the way `xrdma run --backend verbs`
//! runs under a launcher: with [`Invocation::ranks`] above 1 (or a scenario whose
//! `verbs.ranks` lists its ranks) each array task is a job step of that many tasks (`srun`),
//! every process runs `--point K`, the launcher's variables say which rank it is, and the
//! receiver's rank writes the point.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Result};
use xrdma_reports::RunResult;
use xrdma_scenario::Scenario;

use super::{finished, point_dir, run_point, status_of, Backend, Plan, Point, PointOutcome};
use super::{PointFile, PointStatus};

/// The sweep's command line as each task repeats it (every field as given to the shell; the
/// command line makes the paths absolute, since a task may start in another directory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The `xrdma` executable.
    pub exe: String,
    /// The base scenario file.
    pub scenario: String,
    /// The `--axis` arguments, as given.
    pub axes: Vec<String>,
    /// The sweep directory (`--out`).
    pub out: String,
    /// Processes (nodes) each verbs point runs over, one rank per node (`--ranks`; a
    /// scenario's `verbs.ranks` block gives its own count); 1: every host of a point in one
    /// process on one device.
    pub ranks: u32,
}

impl Invocation {
    /// `EXE sweep SCENARIO --axis A ... --out OUT`, each word quoted for a POSIX shell.
    pub fn base_command(&self) -> String {
        let mut words = vec![
            shell_quote(&self.exe),
            "sweep".into(),
            shell_quote(&self.scenario),
        ];
        for a in &self.axes {
            words.push("--axis".into());
            words.push(shell_quote(a));
        }
        words.push("--out".into());
        words.push(shell_quote(&self.out));
        words.join(" ")
    }

    /// The command that runs the point `which` (an index or an id, quoted as given).
    pub fn point_command(&self, which: &str) -> String {
        format!("{} --point {which}", self.base_command())
    }

    /// The command that collects the finished points into the index, table, plots and page.
    pub fn collect_command(&self) -> String {
        format!("{} --collect", self.base_command())
    }
}

/// `text` as one word of a POSIX shell: as is when it holds only characters no shell treats
/// specially, else in single quotes (a `'` inside written `'\''`).
pub fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-+=,./:@%^".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The processes a real machine's point of `plan` (verbs or sockets) runs over as an array
/// task: the scenario's `verbs.ranks` count when it has that block, else `inv.ranks`; 1 when
/// the plan has no such point (simulator points run in one process).
pub fn step_ranks(plan: &Plan, inv: &Invocation) -> u32 {
    if plan.points.iter().all(|p| p.backend == Backend::Sim) {
        return 1;
    }
    let block = plan
        .base
        .verbs
        .as_ref()
        .map_or(0, |v| u32::try_from(v.ranks.len()).unwrap_or(u32::MAX));
    if block > 0 {
        block
    } else {
        inv.ranks.max(1)
    }
}

/// The point `which` names: an id of the plan, or an index from 0 in plan order.
///
/// # Errors
/// Neither an id nor an index of the plan (the message gives the range and an example id).
pub fn select(plan: &Plan, which: &str) -> Result<usize> {
    if let Some(k) = plan.points.iter().position(|p| p.id == which) {
        return Ok(k);
    }
    match which.parse::<usize>() {
        Ok(k) if k < plan.points.len() => Ok(k),
        _ => bail!(
            "--point {which}: the sweep has points 0..={} (or give an id such as {})",
            plan.points.len().saturating_sub(1),
            plan.points.first().map_or("-", |p| p.id.as_str())
        ),
    }
}

/// Slurm's default `MaxArraySize` (slurm.conf(5)): array indices must stay below it.
pub const SLURM_DEFAULT_MAX_ARRAY_SIZE: usize = 1001;

/// `0-3,6,8-9`: the indices (ascending) as Slurm's `--array` ranges.
pub fn array_ranges(indices: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < indices.len() {
        let start = indices[k];
        let mut end = start;
        while k + 1 < indices.len() && indices[k + 1] == end + 1 {
            k += 1;
            end = indices[k];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        k += 1;
    }
    parts.join(",")
}

/// One command per point, in plan order, each naming its point by id; with verbs points
/// over more than one rank ([`step_ranks`]), each a job step of that many tasks, one per
/// node, with a fresh job secret its ranks prove at the rendezvous
/// (`XRDMA_JOB_SECRET=$(xrdma job-secret) srun --nodes=R --ntasks=R --ntasks-per-node=1 ...`).
pub fn commands(plan: &Plan, inv: &Invocation) -> Vec<String> {
    let ranks = step_ranks(plan, inv);
    let step = if ranks > 1 {
        format!(
            "{} srun --nodes={ranks} --ntasks={ranks} --ntasks-per-node=1 ",
            secret_assignment(inv)
        )
    } else {
        String::new()
    };
    plan.points
        .iter()
        .map(|p| format!("{step}{}", inv.point_command(&p.id)))
        .collect()
}

/// `XRDMA_JOB_SECRET="$(EXE job-secret)"`: a fresh secret for one job step, which `srun`
/// passes on to its ranks ([`crate::launch::secret`]).
fn secret_assignment(inv: &Invocation) -> String {
    format!(
        "{}=\"$({} job-secret)\"",
        crate::launch::SECRET_VAR,
        shell_quote(&inv.exe)
    )
}

/// The Slurm batch script of the sweep: a job array with one task per point (`#SBATCH
/// --array=0-N`), each task running `--point $SLURM_ARRAY_TASK_ID`, its output in
/// `OUT/slurm/JOB_TASK.out`. With verbs points over R > 1 ranks ([`step_ranks`]) each task
/// holds R nodes (`--nodes=R --ntasks-per-node=1`) and runs the point as a job step of R
/// processes (`srun`), the receiver's rank writing it, after exporting a fresh job secret
/// the ranks prove at their rendezvous. The comments list every point by index
/// and say where the results land and how to collect them.
///
/// # Errors
/// A sweep without points, or a sweep directory with whitespace (which `#SBATCH` lines
/// cannot quote).
pub fn slurm_script(plan: &Plan, inv: &Invocation) -> Result<String> {
    if plan.points.is_empty() {
        bail!("the sweep has no point");
    }
    if inv.out.chars().any(char::is_whitespace) {
        bail!(
            "the sweep directory {:?} has whitespace, which an #SBATCH --output line cannot \
             hold: choose another --out",
            inv.out
        );
    }
    let n = plan.points.len();
    let all: Vec<usize> = (0..n).collect();
    let ranks = step_ranks(plan, inv);
    let mut o = String::new();
    let _ = writeln!(o, "#!/bin/bash");
    let _ = writeln!(
        o,
        "# Slurm job array of `xrdma sweep` over {} ({n} point(s)).",
        plan.base.name
    );
    let _ = writeln!(
        o,
        "# Every task repeats the sweep's own arguments, so it plans the same points with the \
         same\n# scenario hashes, and runs the one point of its array index."
    );
    let _ = writeln!(o, "#");
    let _ = writeln!(o, "#   submit:  sbatch {}/sweep.sbatch", inv.out);
    let _ = writeln!(
        o,
        "#   results: {}/points/<id>/ (written atomically; a finished point is skipped when \
         a task reruns)",
        inv.out
    );
    let _ = writeln!(o, "#   collect: {}", inv.collect_command());
    let _ = writeln!(o, "#");
    let _ = writeln!(o, "# Array index -> point:");
    let width = n.saturating_sub(1).to_string().len();
    for (k, p) in plan.points.iter().enumerate() {
        let _ = writeln!(o, "#   {k:>width$}  {}  ({})", p.id, p.backend.name());
    }
    let verbs: Vec<usize> = all
        .iter()
        .copied()
        .filter(|&k| plan.points[k].backend == Backend::Verbs)
        .collect();
    if !verbs.is_empty() && ranks > 1 {
        let _ = writeln!(o, "#");
        let _ = writeln!(
            o,
            "# Verbs points ({}) run as {ranks} ranks, one process per node on its RDMA device \
             (XRDMA_VERBS_DEVICE\n# picks it): srun starts them, SLURM_PROCID says which rank \
             each is, they meet at the\n# first node of the task, and the receiver's rank \
             writes the point. Simulator points run on\n# rank 0 alone; the other ranks exit.",
            array_ranges(&verbs)
        );
    } else if !verbs.is_empty() {
        let _ = writeln!(o, "#");
        let _ = writeln!(
            o,
            "# Verbs points ({}) run every host of their scenario in one process on the \
             node's RDMA\n# device (XRDMA_VERBS_DEVICE picks it) and measure wall-clock \
             time: submit with\n# `sbatch --exclusive` so no other task shares the node \
             (`--ranks N` spreads them over N nodes).",
            array_ranges(&verbs)
        );
    }
    if n > SLURM_DEFAULT_MAX_ARRAY_SIZE {
        let _ = writeln!(
            o,
            "#\n# Array indices reach {}: above Slurm's default MaxArraySize \
             ({SLURM_DEFAULT_MAX_ARRAY_SIZE}, indices\n# 0..{}); ask the site for a larger one \
             or split the sweep.",
            n - 1,
            SLURM_DEFAULT_MAX_ARRAY_SIZE - 1
        );
    }
    let _ = writeln!(
        o,
        "#SBATCH --job-name=xrdma-sweep-{}",
        super::sanitize(&plan.base.name)
    );
    let _ = writeln!(o, "#SBATCH --array={}", array_ranges(&all));
    if ranks > 1 {
        let _ = writeln!(o, "#SBATCH --nodes={ranks}");
        let _ = writeln!(o, "#SBATCH --ntasks-per-node=1");
    } else {
        let _ = writeln!(o, "#SBATCH --ntasks=1");
    }
    let _ = writeln!(o, "#SBATCH --output={}/slurm/%A_%a.out", inv.out);
    let _ = writeln!(o, "set -euo pipefail");
    let step = if ranks > 1 { "srun " } else { "" };
    if ranks > 1 {
        let _ = writeln!(
            o,
            "# One secret per task, passed by srun to its ranks: their rendezvous admits no \
             one else."
        );
        // Assigned, then exported: `export V="$(...)"` would hide a failing command from
        // `set -e`.
        let _ = writeln!(o, "{}", secret_assignment(inv));
        let _ = writeln!(o, "export {}", crate::launch::SECRET_VAR);
    }
    let _ = writeln!(
        o,
        "exec {step}{}",
        inv.point_command("\"$SLURM_ARRAY_TASK_ID\"")
    );
    Ok(o)
}

/// Runs point `k` of `plan` under the sweep directory `out` as one task: the point alone,
/// into its usual directory (atomically, skipped when finished with the same hash).
///
/// # Errors
/// `k` out of range, or the points directory cannot be created. A point that fails is an outcome, not an error.
pub fn run_task<R>(plan: &Plan, out: &Path, k: usize, runner: &R) -> Result<PointOutcome>
where
    R: Fn(Backend, &Scenario) -> Result<RunResult> + Sync,
{
    let Some(point) = plan.points.get(k) else {
        bail!("the sweep has no point {k}");
    };
    let points = out.join("points");
    std::fs::create_dir_all(&points)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", points.display()))?;
    Ok(run_point(out, plan, point, runner))
}

/// What [`collect`] found.
#[derive(Clone, Debug)]
pub struct Collected {
    /// One outcome per point, in plan order: a finished point's read back from its
    /// directory (status judged as when it ran), [`PointStatus::Missing`] for the others.
    pub outcomes: Vec<PointOutcome>,
    /// The missing points: index and why (no directory, an unfinished `.partial`, another
    /// scenario hash, an unreadable result).
    pub missing: Vec<(usize, String)>,
}

/// Why point `p` under `out` has no finished result.
fn why_missing(out: &Path, p: &Point) -> String {
    let dir = point_dir(out, &p.id);
    let partial = out.join("points").join(format!("{}.partial", p.id));
    if !dir.exists() {
        return if partial.exists() {
            format!(
                "unfinished: {} (still running, or killed)",
                partial.display()
            )
        } else {
            format!("not run: no {}", dir.display())
        };
    }
    let pf: Option<PointFile> = std::fs::read_to_string(dir.join("point.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    match pf {
        None => format!("no readable point.json in {}", dir.display()),
        Some(pf) if pf.hash != p.hash => format!(
            "stale: {} was run with another scenario hash (the scenario file or the sweep's \
             arguments changed)",
            dir.display()
        ),
        Some(_) => format!("no readable result.json in {}", dir.display()),
    }
}

/// Reads every point of `plan` that has finished under the sweep directory `out` (as a
/// rerun of the sweep would reuse it: same scenario hash, a `result.json` that reads back)
/// and lists the others as missing. Runs nothing. The outcomes of a complete collection
/// give the same index as the whole sweep ([`super::report::index`]).
pub fn collect(plan: &Plan, out: &Path) -> Collected {
    let mut outcomes = Vec::with_capacity(plan.points.len());
    let mut missing = Vec::new();
    for (k, p) in plan.points.iter().enumerate() {
        match finished(out, p) {
            Some(result) => outcomes.push(PointOutcome {
                status: status_of(&result),
                result: Some(result),
                resumed: true,
                error: None,
            }),
            None => {
                missing.push((k, why_missing(out, p)));
                outcomes.push(PointOutcome {
                    status: PointStatus::Missing,
                    result: None,
                    resumed: false,
                    error: None,
                });
            }
        }
    }
    Collected { outcomes, missing }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("fan-in=2,4"), "fan-in=2,4");
        assert_eq!(shell_quote("/a/b.yaml"), "/a/b.yaml");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn array_ranges_join_consecutive_indices() {
        assert_eq!(array_ranges(&[0, 1, 2, 3]), "0-3");
        assert_eq!(array_ranges(&[0, 2, 3, 5, 7, 8, 9]), "0,2-3,5,7-9");
        assert_eq!(array_ranges(&[4]), "4");
        assert_eq!(array_ranges(&[]), "");
    }
}
