//! `xrdma run --backend verbs|sockets` as one rank of a cluster launch: the options that say which
//! rank this is and where rank 0 is (`--rank`, `--hostfile`, `--coordinator`), the launchers'
//! variables (`xrdma_cluster::launch`), and the run of that rank.

use anyhow::{Context, Result};
use std::path::PathBuf;
use xrdma_cluster::launch::{self, Launch, LaunchArgs};
use xrdma_scenario::Scenario;

/// Which rank of a multi-process run this process is, and where rank 0 is. Under `srun` or
/// `mpirun` none is needed: the launcher's variables say.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LaunchOptions {
    /// Run only this rank (with `--backend verbs` or `sockets`) [default: from SLURM_PROCID,
    /// OMPI_COMM_WORLD_RANK or PMI_RANK]; with a `verbs.ranks` block and no --hostfile or
    /// --coordinator, at the addresses the block lists. The receiver's rank writes the
    /// report, the others hand their records to it.
    #[arg(long)]
    pub rank: Option<u32>,
    /// An mpirun-style hostfile (one host a line, optional `slots=N`, `#` comments): rank 0
    /// runs on its first host; with --rank, its slots are the rank count.
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Rank 0's host, where the ranks meet (TCP, default port 18515) [default:
    /// $XRDMA_COORDINATOR, else Slurm's first node, else the hostfile's first host].
    #[arg(long, value_name = "HOST[:PORT]")]
    pub coordinator: Option<String>,
}

impl LaunchOptions {
    /// The first launch option given (`--rank`, `--hostfile`, `--coordinator`), if any.
    pub fn given(&self) -> Option<&'static str> {
        if self.rank.is_some() {
            Some("--rank")
        } else if self.hostfile.is_some() {
            Some("--hostfile")
        } else if self.coordinator.is_some() {
            Some("--coordinator")
        } else {
            None
        }
    }

    /// This process's launch for `sc`, from these options and the launchers' variables;
    /// `None`: a single-process run.
    ///
    /// # Errors
    /// An unreadable or malformed hostfile, or [`launch::LaunchError`].
    pub fn resolve(&self, sc: &Scenario) -> Result<Option<Launch>> {
        let hostfile = match &self.hostfile {
            None => None,
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("reading the hostfile {}", p.display()))?;
                Some(launch::Hostfile::parse(&text).with_context(|| p.display().to_string())?)
            }
        };
        let args = LaunchArgs {
            rank: self.rank,
            hostfile,
            coordinator: self.coordinator.clone(),
        };
        let block = sc.verbs.as_ref().map_or(0, |v| v.ranks.len());
        Ok(launch::resolve(&launch::vars_from_env(), &args, block)?)
    }
}

/// `xrdma job-secret`: where the new secret goes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct JobSecretArgs {
    /// Write it to this new file (mode 0600; an existing file is kept) instead of printing
    /// it; give the ranks XRDMA_JOB_SECRET_FILE=FILE.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Make a job's secret ([`launch::JobSecret::generate`]) and print it as hex, or write it to
/// `args.file` readable by its owner only.
///
/// # Errors
/// The OS's random source fails, or the file cannot be created (e.g. it exists).
pub fn job_secret(args: &JobSecretArgs) -> Result<std::process::ExitCode> {
    let secret = launch::JobSecret::generate()?;
    match &args.file {
        Some(path) => {
            secret.write_file(path)?;
            // Absolute: the ranks start in other directories, on other nodes.
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            eprintln!(
                "wrote a job secret to {}: give every rank {}={}",
                path.display(),
                launch::SECRET_FILE_VAR,
                path.display()
            );
        }
        None => xrdma_tools::outln!("{}", secret.to_hex()),
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// The variables a launcher names a process's rank with, in the order they are looked at:
/// Slurm's, Open MPI's, PMI's (`xrdma_cluster::launch` reads the same ones).
const RANK_VARS: [&str; 3] = ["SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"];

/// The rank a launcher gave this process, with the variable that says it (the first of
/// `SLURM_PROCID`, `OMPI_COMM_WORLD_RANK`, `PMI_RANK` that is set); `None` outside a
/// launcher or when the value is not a number.
pub fn launcher_rank() -> Option<(&'static str, u32)> {
    let vars = launch::vars_from_env();
    RANK_VARS
        .into_iter()
        .find_map(|v| Some((v, vars.get(v)?.trim().parse().ok()?)))
}

/// A note for a simulator run started by a launcher (its rank variable is set): every rank
/// runs the whole scenario.
pub fn simulator_note() -> Option<String> {
    let vars = launch::vars_from_env();
    let (var, value) = RANK_VARS
        .into_iter()
        .find_map(|v| Some((v, vars.get(v)?)))?;
    Some(format!(
        "note: {var}={value} is set, but the simulator runs the whole scenario in this process \
         (use --backend verbs to run it across ranks)"
    ))
}

/// Whether rank `launch.rank` writes the report: it runs the receiver (rank 0, or the
/// `verbs.ranks` entry that lists it).
pub fn writes_report(sc: &Scenario, launch: &Launch) -> bool {
    let section = sc.verbs.clone().unwrap_or_default();
    launch::report_rank(&sc.workload, &section) == launch.rank
}

/// Run this rank of `sc`: the receiver's rank returns the merged result; another rank prints
/// one line and returns `None`. Rank 0 prints every rank's hosts first, the others their own.
///
/// # Errors
/// The rendezvous, the bootstrap or the run failing (see `xrdma_cluster::launch::start` and
/// `xrdma_cluster::rank::run_rank`).
pub fn run(
    sc: &Scenario,
    launch: &Launch,
    backend: xrdma_runner::request::Backend,
) -> Result<Option<xrdma_reports::RunResult>> {
    use xrdma_cluster::launch::Started;
    use xrdma_cluster::rank::{run_rank_bound, RankOutcome};
    // Before the rendezvous: a build without the device fails here, not after meeting peers.
    backend.require()?;
    let secret = launch::JobSecret::from_env();
    let (scenario, rank, listener, secret) = match launch::start(sc, launch, backend, secret)? {
        Started::Single => {
            eprintln!("rank 0 of 1: every host in this process");
            return xrdma_runner::request::RunRequest::new(sc.clone(), backend)
                .run()
                .map(|o| Some(o.result));
        }
        Started::Rank {
            scenario,
            rank,
            listener,
            assignment,
            secret,
        } => {
            let shown = |r: usize| rank == 0 || r == rank as usize;
            for (_, line) in assignment.iter().enumerate().filter(|(r, _)| shown(*r)) {
                eprintln!("{line}");
            }
            (scenario, rank, listener, secret)
        }
    };
    match run_rank_bound(&scenario, rank, backend, listener, &secret)? {
        RankOutcome::Report(r) => Ok(Some(*r)),
        RankOutcome::Sent {
            rank,
            to_rank,
            senders,
            acked,
            messages,
        } => {
            xrdma_tools::outln!(
                "rank {rank}: {senders} sender(s), {acked}/{messages} messages ACKed; records \
                 handed to rank {to_rank}, which writes the report"
            );
            Ok(None)
        }
    }
}
