//! `xrdma` — the test bed's command line: run YAML scenarios on the simulator and write
//! latency reports.
//!
//! Exit status: 0 when the run finished and every message arrived intact; 2 when the run
//! finished but its result shows a failure (a message undelivered, corrupted or duplicated,
//! or an inconsistent result); 1 when nothing ran (bad scenario, unwritable output, an output
//! directory in use); 130 (143) when SIGINT (SIGTERM) stopped a command that writes a results
//! directory, which then still holds the earlier run (`interrupt`).

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use xrdma_runner::check;
use xrdma_runner::request::{Backend, RunRequest};
use xrdma_testbed::run_cli::rdma_backend_arg;
use xrdma_tools::output::EXIT_RESULT_FAILED;
use xrdma_tools::{out, outln};

/// RDMA message middleware test bed: run scenarios, write latency reports and plots.
#[derive(Parser, Debug)]
#[command(name = "xrdma", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario (on the simulator, or with `--backend verbs` on an RDMA device) and write
    /// `result.json` plus everything `xrdma report` writes (summary.txt, the plots as SVG and
    /// PNG, report.html) into the output directory. Exits 2 if any message was not delivered
    /// intact.
    ///
    /// With `--backend verbs` under `srun` or `mpirun` (SLURM_PROCID, OMPI_COMM_WORLD_RANK or
    /// PMI_RANK set), or with --rank or --hostfile, the process runs as one rank of a
    /// multi-process run: the ranks meet at rank 0 (--coordinator, XRDMA_COORDINATOR, Slurm's
    /// first node or the hostfile's first host; TCP port 18515), the receiver runs on rank 0
    /// and the senders in blocks on the others (or as a `verbs.ranks` block says), and the
    /// receiver's rank writes the report; every rank proves the job's secret at the
    /// rendezvous and to every rank it connects to (XRDMA_JOB_SECRET or
    /// XRDMA_JOB_SECRET_FILE, see `xrdma job-secret`). E.g.
    /// `export XRDMA_JOB_SECRET=$(xrdma job-secret); srun -N 9 --ntasks-per-node=1 xrdma run
    /// --backend verbs scenarios/incast-8.yaml`.
    Run(xrdma_testbed::run_cli::RunArgs),
    /// Redraw every table and plot (summary.txt, latency.svg, the SVG and PNG plots,
    /// report.html) from a saved result, without rerunning.
    Report(xrdma_testbed::run_cli::ReportArgs),
    /// Run a scenario over axes of settings (their cartesian product), the points in parallel;
    /// writes one run directory per point, index.json/index.csv, fan-in plots and sweep.html.
    /// A rerun skips points already finished. Exits 2 if a point failed. With --emit, hands
    /// the points to a cluster (a Slurm job array, or one command per point); --point runs
    /// one of them and --collect gathers the finished ones.
    Sweep(xrdma_testbed::sweep_cli::SweepArgs),
    /// Print the endpoints' counters of a finished run (per host: QP cache, MR pool; per
    /// connection: state, QP, bytes, messages, fragments, batching, retransmissions, RNR
    /// retries, ECN, window, what it holds) as a table, `--json` or `--prometheus` text.
    Stat(xrdma_tools::stat::StatArgs),
    /// Where a traced run's message completion time went, per stage: app, queue, grant,
    /// send, network, ack (`xrdma run --trace` records them).
    Trace(xrdma_testbed::trace_cli::TraceArgs),
    /// The simulator against a device: `measure` (ping and bw figures), `fit` (a host profile
    /// fitted to them, the simulator in the loop), `run` (a scenario on both, side by side,
    /// with the prediction error per figure).
    Calibrate(xrdma_tools::calibrate::CalibrateArgs),
    /// Put two or more runs side by side: headline figures with ratios to the first run, and
    /// their completion-time CDFs and tails overlaid (compare.txt, compare-cdf.svg/.png,
    /// compare-ccdf.svg/.png).
    Compare {
        /// Run directories or result.json files; the first is the reference.
        #[arg(required = true, num_args = 2..)]
        runs: Vec<PathBuf>,
        /// Output directory [default: results/compare-A-vs-B, after the runs' directories].
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// Compare runs even when their workloads differ.
        #[arg(long)]
        allow_different_workloads: bool,
    },
    /// The simulator's pcap against a capture of the same scenario on a RoCE v2 wire, measure
    /// by measure (opcodes, messages, PSNs, sizes, AckReq, ACKs, MSN, NAKs, CNPs, ECN); exits
    /// 1 on a difference the --known file does not list, 2 on an unreadable input.
    WireCompare(xrdma_tools::wire_compare::WireCompareArgs),
    /// Make a fresh secret for one multi-process job and print it as hex (for
    /// `export XRDMA_JOB_SECRET=$(xrdma job-secret)` before srun or mpirun), or write it to a
    /// new owner-only file on the job's shared filesystem (for XRDMA_JOB_SECRET_FILE).
    JobSecret(xrdma_testbed::launch_cli::JobSecretArgs),
    /// Check a scenario file (parse, units, ranges, PFC headroom, and the run's memory
    /// estimate against the memory available) without running it; prints the estimate.
    Validate {
        /// The scenario file (YAML).
        scenario: PathBuf,
    },
    /// Run the conformance suite (the same scenario-level cases on any backend) and print
    /// `N passed, M failed`; exits 2 when a case fails.
    Conformance {
        /// The backend to run on.
        #[arg(long, default_value = "sim", value_parser = rdma_backend_arg())]
        backend: Backend,
    },
    /// Benchmark the simulator: 256:1 x 2 MiB incasts (PFC only, DCQCN, through xrdma) and a
    /// 1024-host fat-tree permutation; events, wall time, events/s and peak RSS per case, each
    /// case in its own process.
    Bench {
        /// Run only this case (pfc-incast, dcqcn-incast, lossy-incast, xrdma-incast,
        /// fattree-1024), or one not in the default set: `fattree-16k` (a k = 40 fat-tree of
        /// 16 000 hosts, one 64 KiB WRITE each, about a minute) or `window` (the send-window
        /// throughput and fairness table of the `scenarios/window/` runs).
        #[arg(long)]
        case: Option<String>,
        /// With `--case window`: run each scenario at every seed of this range, `A-B` or one
        /// seed `N` (default: each scenario's own `sim.seed`).
        #[arg(long, value_parser = xrdma_tools::window_bench::parse_seeds)]
        seeds: Option<std::ops::RangeInclusive<u64>>,
    },
    /// Message latency through xrdma, like `ib_send_lat`: the client sends, the server echoes,
    /// half of each round trip is reported (fabric clock: virtual on the simulator, wall on a
    /// device).
    Ping(xrdma_testbed::tools_cli::PingArgs),
    /// One-way streaming throughput through xrdma, like `ib_write_bw` (MB/sec = MiB/s).
    Bw(xrdma_testbed::tools_cli::BwArgs),
    /// CPU use of an idle, connected worker pair under hybrid polling (RDMA device only).
    Idle(xrdma_testbed::tools_cli::IdleArgs),
    /// Soak: stream many messages over one connection (every one checked in order), then
    /// close and reconnect many times through the QP cache; QPs, MRs and buffers are counted
    /// after the first cycle and at the end and must not grow. Exits 2 when anything was
    /// lost, corrupted or leaked.
    Soak(xrdma_testbed::tools_cli::SoakArgs),
    /// QP pair connection time: fresh QPs vs QPs from the QP cache (reset and reconnected).
    QpSetup(xrdma_testbed::tools_cli::QpSetupArgs),
}

/// Set for the child processes of `xrdma bench`, which print their row without the header.
const BENCH_CHILD: &str = "XRDMA_BENCH_CHILD";

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<ExitCode> {
    // Usage errors exit 1 like every other "nothing ran" case (clap's own default is 2, which
    // here means "the run finished but failed"); --help and --version exit 0.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return Ok(if e.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            });
        }
    };
    if matches!(
        cli.command,
        Command::Run { .. } | Command::Report { .. } | Command::Sweep(_)
    ) {
        xrdma_testbed::interrupt::install();
    }
    match cli.command {
        Command::Run(args) => xrdma_testbed::run_cli::run(args),
        Command::Report(args) => xrdma_testbed::run_cli::report(args),
        Command::Conformance { backend } => {
            backend.require()?;
            let mut run = |sc: &xrdma_scenario::Scenario| {
                Ok(RunRequest::new(sc.clone(), backend).run()?.result)
            };
            let (passed, failures) = xrdma_tools::conformance::run_all(&mut run);
            for f in &failures {
                eprintln!("FAILED {f}");
            }
            outln!("conformance: {passed} passed, {} failed", failures.len());
            Ok(if failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_RESULT_FAILED)
            })
        }
        Command::Bench {
            case: Some(case),
            seeds,
        } if case == "window" => xrdma_tools::window_bench::print_table(seeds),
        Command::Bench { seeds: Some(_), .. } => {
            bail!("--seeds applies to `--case window` only")
        }
        Command::Bench {
            case: Some(case), ..
        } => {
            let f = xrdma_tools::bench::run_case(&case)?;
            if std::env::var_os(BENCH_CHILD).is_none() {
                outln!("{}", xrdma_tools::bench::BenchFigures::header());
            }
            outln!("{}", f.line());
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { case: None, .. } => {
            let exe = std::env::current_exe().context("locating this executable")?;
            outln!("{}", xrdma_tools::bench::BenchFigures::header());
            for case in xrdma_tools::bench::CASES {
                let out = std::process::Command::new(&exe)
                    .args(["bench", "--case", case])
                    .env(BENCH_CHILD, "1")
                    .output()
                    .with_context(|| format!("running bench case {case}"))?;
                if !out.status.success() {
                    bail!(
                        "bench case {case} failed: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                out!("{}", String::from_utf8_lossy(&out.stdout));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Ping(args) => xrdma_testbed::tools_cli::ping(args),
        Command::Bw(args) => xrdma_testbed::tools_cli::bw(args),
        Command::Idle(args) => xrdma_testbed::tools_cli::idle(args),
        Command::Soak(args) => xrdma_testbed::tools_cli::soak(args),
        Command::QpSetup(args) => xrdma_testbed::tools_cli::qp_setup(args),
        Command::Sweep(args) => xrdma_testbed::sweep_cli::run(args),
        Command::Stat(args) => xrdma_tools::stat::run(args).map(|()| ExitCode::SUCCESS),
        Command::Trace(args) => xrdma_testbed::trace_cli::run(&args).map(|()| ExitCode::SUCCESS),
        Command::Calibrate(args) => xrdma_tools::calibrate::run(args),
        Command::Compare {
            runs,
            out,
            allow_different_workloads,
        } => xrdma_tools::compare::run(&runs, out, allow_different_workloads),
        Command::WireCompare(args) => Ok(xrdma_tools::wire_compare::run(&args)),
        Command::JobSecret(args) => xrdma_testbed::launch_cli::job_secret(&args),
        Command::Validate { scenario } => {
            let sc = xrdma_scenario::load(&scenario)?;
            let checked = check::check(&sc)?;
            for w in &checked.warnings {
                eprintln!("warning: {w}");
            }
            outln!(
                "{}: ok ({} hosts, about {} of memory)",
                scenario.display(),
                checked.sim.hosts,
                xrdma_reports::format_bytes(checked.memory_bytes)
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}
