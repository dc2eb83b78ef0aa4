//! `xrdma run` and `xrdma report`: a scenario run into a results directory, and a saved
//! result redrawn. The run itself is the runner's ([`RunRequest`]) or, for one rank of a
//! multi-process run, the cluster crate's; this module holds what the command line adds: the
//! output directory (locked for the run, written whole or not at all), the progress line, the
//! live statistics socket, the summary on the terminal and the exit status.

use crate::capture_cli;
use crate::progress::Progress;
use crate::progress_watch::ProgressWatch;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use xrdma_runner::request::{Backend, RunOutcome, RunRequest};
use xrdma_runner::stat_socket::StatSocket;
use xrdma_runner::watch::{NoWatch, Watch};
use xrdma_tools::output::{open_out_dir, prepare_out_dir, print_written, verdict};
use xrdma_tools::{out, outln};

/// `xrdma run`'s arguments (the subcommand's help is on `Command::Run`).
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The scenario file (YAML).
    pub scenario: PathBuf,
    /// Output directory [default: results/NAME, NAME the scenario's `name`].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Override the scenario's `sim.seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Also write `messages.csv` with one row per message.
    #[arg(long)]
    pub csv: bool,
    /// Where to run it.
    #[arg(long, default_value = "sim", value_parser = backend_arg())]
    pub backend: Backend,
    /// Override the scenario's `stack` (`xrdma`, `tcp` or `dctcp`): the same workload over
    /// another message stack.
    #[arg(long, value_parser = stack_arg())]
    pub stack: Option<xrdma_scenario::Stack>,
    /// Write a pcap of these hosts' links (e.g. `0,8`) into the output directory, with
    /// the bounds of the scenario's `sim.capture` (simulator only).
    #[arg(long, value_name = "HOSTS", value_parser = capture_cli::parse_hosts)]
    pub capture: Option<capture_cli::CaptureHosts>,
    /// While it runs, answer `xrdma stat --socket PATH` on this Unix socket (removed at
    /// the end; not for one rank of a multi-process run).
    #[arg(long, value_name = "PATH")]
    pub stat_socket: Option<PathBuf>,
    /// Keep every message's stage breakdown in the result (as `trace: true` in the
    /// scenario): `xrdma trace` prints it, `stages.svg` plots it.
    #[arg(long)]
    pub trace: bool,
    /// Run even when `validate`'s memory estimate exceeds the memory available (the run may
    /// then swap, or be killed for lack of memory).
    #[arg(long)]
    pub no_memory_check: bool,
    /// Where this process stands in a multi-process run (`--rank`, `--hostfile`, ...).
    #[command(flatten)]
    pub launch: crate::launch_cli::LaunchOptions,
}

/// `xrdma report`'s arguments.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A run directory holding `result.json`, or the `result.json` file itself.
    pub result: PathBuf,
    /// Output directory [default: the directory of the result].
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Also write `messages.csv` with one row per message.
    #[arg(long)]
    pub csv: bool,
}

/// `xrdma run`: run the scenario, print its summary, write the results directory.
///
/// # Errors
/// A bad scenario or option, a results directory in use or unwritable, a run that fails to
/// start. A run whose result shows a failure is not an error: it exits 2 ([`verdict`]).
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let RunArgs {
        scenario,
        out,
        seed,
        csv,
        backend,
        stack,
        capture,
        stat_socket,
        trace,
        no_memory_check,
        launch,
    } = args;
    backend.require()?;
    if let Some(flag) = launch.given().filter(|_| backend == Backend::Sim) {
        bail!(
            "{flag} runs one process of a multi-process run: it needs --backend verbs (xrdma) \
             or --backend sockets (kernel TCP)"
        );
    }
    let mut req = RunRequest::load(&scenario, backend)?;
    req.seed = seed;
    req.stack = stack;
    req.trace = trace;
    req.no_memory_check = no_memory_check;
    req.capture_hosts = capture.map(|c| c.0);
    for note in req.check()? {
        eprintln!("{note}");
    }
    let sc = req.effective_scenario();
    let launched = match backend {
        Backend::Verbs | Backend::Sockets => launch.resolve(&sc)?,
        Backend::Sim => None,
    };
    if launched.is_some() && stat_socket.is_some() {
        bail!("--stat-socket answers for a single-process run, not for one rank of many");
    }
    let mut socket = stat_socket.as_deref().map(StatSocket::bind).transpose()?;
    if let Some(note) = crate::launch_cli::simulator_note() {
        if backend == Backend::Sim {
            eprintln!("{note}");
        }
    }
    let out = out.unwrap_or_else(|| PathBuf::from("results").join(&sc.name));
    // Only the rank that writes the report touches the output directory. It is
    // locked before the run, so a second run into it is refused at once.
    let run_dir = if launched
        .as_ref()
        .is_none_or(|l| crate::launch_cli::writes_report(&sc, l))
    {
        Some(open_out_dir(&out, xrdma_reports::run_dir::Holds::Run)?)
    } else {
        None
    };
    let on = match backend {
        Backend::Sim => "the simulator",
        Backend::Verbs => "the RDMA device",
        Backend::Sockets => "this machine's TCP sockets",
    };
    eprintln!("running {} on {on} ...", scenario.display());
    if let Some(l) = &launched {
        eprintln!("{}", l.summary());
    }
    let mut no_watch = NoWatch;
    let inner: &mut dyn Watch = match &mut socket {
        Some(s) => {
            eprintln!("answering xrdma stat --socket {}", s.path().display());
            s
        }
        None => &mut no_watch,
    };
    // Progress shows once the command has run for two seconds (simulator runs only:
    // a multi-process run's ranks print their own lines meanwhile), with the simulated time,
    // the event rate and the messages ACKed while the simulation runs.
    let progress = (backend == Backend::Sim).then(|| Progress::start("simulating the run"));
    let mut shown;
    let watch: &mut dyn Watch = match &progress {
        Some(p) => {
            shown = ProgressWatch::new(p, inner);
            &mut shown
        }
        None => inner,
    };
    let RunOutcome {
        mut result,
        captures,
        warnings,
    } = match &launched {
        None => req.run_watched(watch)?,
        Some(l) => match crate::launch_cli::run(&sc, l, backend)? {
            Some(mut result) => {
                result.scenario_yaml.clone_from(&req.scenario_yaml);
                RunOutcome {
                    result,
                    captures: Vec::new(),
                    warnings: Vec::new(),
                }
            }
            None => return Ok(ExitCode::SUCCESS),
        },
    };
    let progress = progress.unwrap_or_else(|| Progress::start("reporting"));
    for w in warnings {
        progress.suspend(|| eprintln!("warning: {w}"));
    }
    let Some(run_dir) = run_dir else {
        bail!("this rank does not write the report, yet it holds the result");
    };
    // Captures first (the result lists them), then the summary: a directory that
    // cannot be written (a full disk) still leaves the figures on the terminal.
    if !captures.is_empty() {
        progress.phase("writing the packet captures");
    }
    let staged = capture_cli::write(&run_dir, &mut result, &captures);
    progress.phase("summarizing");
    let summary = xrdma_reports::summary_table(&result);
    progress.suspend(|| out!("{summary}"));
    let pcaps = staged
        .and_then(|p| {
            let files = xrdma_reports::stage_run(&run_dir, &result, csv, &mut |f| {
                progress.phase(&format!("writing {f}"))
            })?;
            Ok((p, files))
        })
        .with_context(|| {
            format!(
                "writing results to {}: {}",
                out.display(),
                run_dir.unchanged_note()
            )
        })?;
    let (pcaps, files) = pcaps;
    run_dir
        .commit()
        .with_context(|| format!("writing results to {}", out.display()))?;
    progress.finish();
    outln!("wrote {}", files.result_json.display());
    print_written(&files);
    pcaps.iter().for_each(|p| outln!("wrote {}", p.display()));
    Ok(verdict(&result))
}

/// `xrdma report`: redraw every table and plot from a saved result.
///
/// # Errors
/// An unreadable result, an output directory holding another run, an unwritable output.
pub fn report(args: ReportArgs) -> Result<ExitCode> {
    let ReportArgs { result, out, csv } = args;
    let progress = Progress::start("reading the result");
    let (json, r) = xrdma_tools::compare::load_run(&result)?;
    let out = match out {
        Some(o) => o,
        None => json
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    progress.phase("summarizing");
    let summary = xrdma_reports::summary_table(&r);
    progress.suspend(|| out!("{summary}"));
    prepare_out_dir(&out)?;
    // Redrawn beside its own result.json, that file (and its captures) stay.
    let canon = |p: &Path| p.canonicalize().ok();
    let beside = canon(&json).is_some_and(|j| canon(&out.join("result.json")) == Some(j));
    if !beside && out.join("result.json").exists() {
        let (o, j) = (out.display(), json.display());
        bail!("{o} holds another run (its own result.json): redraw {j} elsewhere");
    }
    let files = xrdma_reports::write_report_with(&out, &r, csv, beside, &mut |f| {
        progress.phase(&format!("writing {f}"))
    })
    .with_context(|| format!("writing the report to {}", out.display()))?;
    progress.finish();
    print_written(&files);
    Ok(verdict(&r))
}

/// `--stack`'s parser: the stacks by name.
pub fn stack_arg() -> impl clap::builder::TypedValueParser<Value = xrdma_scenario::Stack> {
    use clap::builder::{PossibleValuesParser, TypedValueParser};
    use xrdma_scenario::Stack;
    PossibleValuesParser::new(Stack::ALL.map(|s| s.name())).try_map(|s| {
        Stack::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("`{s}` is not a stack"))
    })
}

/// The `--backend` values of `run` and `sweep` (`sim`, `verbs`, `sockets`), parsed into the
/// runner's [`Backend`].
pub fn backend_arg() -> impl clap::builder::TypedValueParser<Value = Backend> {
    backends_arg(&Backend::ALL)
}

/// The `--backend` values of the tools and `conformance` (`sim`, `verbs`): they run xrdma,
/// which the sockets backend does not.
pub fn rdma_backend_arg() -> impl clap::builder::TypedValueParser<Value = Backend> {
    backends_arg(&Backend::RDMA)
}

fn backends_arg(list: &[Backend]) -> impl clap::builder::TypedValueParser<Value = Backend> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        list.iter()
            .map(|b| PossibleValue::new(b.name()).help(b.about())),
    )
    .try_map(|s| s.parse::<Backend>())
}
