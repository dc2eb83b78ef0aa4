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
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use xrdma_runner::check;
use xrdma_runner::fabric::{open_env_device, VerbsFabric};
use xrdma_runner::request::{Backend, RunOutcome, RunRequest};
use xrdma_runner::stat_socket::StatSocket;
use xrdma_runner::watch::{NoWatch, Watch};
use xrdma_testbed::capture_cli;
use xrdma_testbed::progress::Progress;
use xrdma_tools as tools;
use xrdma_tools::output::{
    open_out_dir, prepare_out_dir, print_written, verdict, EXIT_RESULT_FAILED,
};
use xrdma_tools::two_process::{two_process, TwoProcess};
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
    Run {
        /// The scenario file (YAML).
        scenario: PathBuf,
        /// Output directory [default: results/<scenario name>].
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// Override the scenario's `sim.seed`.
        #[arg(long)]
        seed: Option<u64>,
        /// Also write `messages.csv` with one row per message.
        #[arg(long)]
        csv: bool,
        /// Where to run it.
        #[arg(long, default_value = "sim", value_parser = backend_arg())]
        backend: Backend,
        /// Write a pcap of these hosts' links (e.g. `0,8`) into the output directory, with
        /// the bounds of the scenario's `sim.capture` (simulator only).
        #[arg(long, value_name = "HOSTS", value_parser = capture_cli::parse_hosts)]
        capture: Option<capture_cli::CaptureHosts>,
        /// While it runs, answer `xrdma stat --socket PATH` on this Unix socket (removed at
        /// the end; not for one rank of a multi-process run).
        #[arg(long, value_name = "PATH")]
        stat_socket: Option<PathBuf>,
        /// Keep every message's stage breakdown in the result (as `trace: true` in the
        /// scenario): `xrdma trace` prints it, `stages.svg` plots it.
        #[arg(long)]
        trace: bool,
        #[command(flatten)]
        launch: xrdma_testbed::launch_cli::LaunchOptions,
    },
    /// Redraw every table and plot (summary.txt, latency.svg, the SVG and PNG plots,
    /// report.html) from a saved result, without rerunning.
    Report {
        /// A run directory holding `result.json`, or the `result.json` file itself.
        result: PathBuf,
        /// Output directory [default: the directory of the result].
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// Also write `messages.csv` with one row per message.
        #[arg(long)]
        csv: bool,
    },
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
    /// their completion-time CDFs overlaid (compare.txt, compare-cdf.svg/.png).
    Compare {
        /// Run directories or result.json files; the first is the reference.
        #[arg(required = true, num_args = 2..)]
        runs: Vec<PathBuf>,
        /// Output directory [default: results/compare].
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
        #[arg(long, default_value = "sim", value_parser = backend_arg())]
        backend: Backend,
    },
    /// Benchmark the simulator: 256:1 x 2 MiB incasts (PFC only, DCQCN, through xrdma) and a
    /// 1024-host fat-tree permutation; events, wall time, events/s and peak RSS per case, each
    /// case in its own process.
    Bench {
        /// Run only this case (pfc-incast, dcqcn-incast, lossy-incast, xrdma-incast,
        /// fattree-1024), or `window`: the send-window throughput and fairness table of the
        /// `scenarios/window/` runs (not part of the default set).
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
    Ping {
        /// Where to run it.
        #[arg(long, default_value = "sim", value_parser = backend_arg())]
        backend: Backend,
        /// Message size (`64B`, `4KiB`, ...).
        #[arg(long, default_value = "64B", value_parser = parse_size)]
        size: u64,
        /// Round trips measured (at most 10 M).
        #[arg(long, default_value_t = 10_000, value_parser = tools::parse_iters)]
        iters: u32,
        /// Round trips run first and not measured, at most 10 M [default: 1000, or `--iters`
        /// when fewer].
        #[arg(long, value_parser = tools::parse_warmup)]
        warmup: Option<u32>,
        /// What to ping: xrdma messages through the core, or verbs-level SEND, RDMA WRITE or
        /// RDMA READ like `ib_send_lat`, `ib_write_lat`, `ib_read_lat` (READ not halved).
        #[arg(long, value_enum, default_value_t = tools::verb_ping::Verb::Xrdma)]
        verb: tools::verb_ping::Verb,
        /// Print the figures as one JSON object instead of perftest's table.
        #[arg(long)]
        json: bool,
        /// Be the echo server of a two-process ping (`--backend verbs`): listen on `--bind`,
        /// serve one client, exit.
        #[arg(long, conflicts_with = "connect")]
        server: bool,
        /// The server's bootstrap address (TCP `IP:port`).
        #[arg(long, default_value = tools::ping::DEFAULT_BIND, requires = "server")]
        bind: std::net::SocketAddr,
        /// Be the client of a two-process ping: connect to the server at `IP:port`.
        #[arg(long)]
        connect: Option<std::net::SocketAddr>,
        #[command(flatten)]
        host: tools::HostProfileArg,
    },
    /// One-way streaming throughput through xrdma, like `ib_write_bw` (MB/sec = MiB/s).
    Bw {
        /// Where to run it.
        #[arg(long, default_value = "sim", value_parser = backend_arg())]
        backend: Backend,
        /// Message size.
        #[arg(long, default_value = "64KiB", value_parser = parse_size)]
        size: u64,
        /// Messages sent (at most 10 M).
        #[arg(long, default_value_t = 5_000, value_parser = tools::parse_iters)]
        iters: u32,
        /// Pin the send window at this size (not adaptive) [default: xrdma's adaptive window,
        /// 64 KiB growing to 256 KiB].
        #[arg(long, value_parser = parse_size)]
        window: Option<u64>,
        /// Be the receiving server of a two-process run (`--backend verbs`), like
        /// `ib_write_bw`'s: listen on `--bind`, take one client's stream, exit.
        #[arg(long, conflicts_with = "connect")]
        server: bool,
        /// The server's bootstrap address (TCP `IP:port`).
        #[arg(long, default_value = tools::ping::DEFAULT_BIND, requires = "server")]
        bind: std::net::SocketAddr,
        /// Be the streaming client of a two-process run: connect to the server at `IP:port`.
        #[arg(long)]
        connect: Option<std::net::SocketAddr>,
        #[command(flatten)]
        host: tools::HostProfileArg,
    },
    /// CPU use of an idle, connected worker pair under hybrid polling (RDMA device only).
    Idle {
        /// Where to run it (the simulator has no CPU cost to measure).
        #[arg(long, default_value = "verbs", value_parser = backend_arg())]
        backend: Backend,
        /// Length of the idle period, seconds.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
    },
    /// Soak: stream many messages over one connection (every one checked in order), then
    /// close and reconnect many times through the QP cache; QPs, MRs and buffers are counted
    /// after the first cycle and at the end and must not grow. Exits 2 when anything was
    /// lost, corrupted or leaked.
    Soak {
        /// Where to run it.
        #[arg(long, default_value = "sim", value_parser = backend_arg())]
        backend: Backend,
        /// Messages streamed (sizes cycle through 64 B, 1 KiB and 8 KiB).
        #[arg(long, default_value_t = 1_000_000)]
        messages: u64,
        /// Close/connect cycles.
        #[arg(long, default_value_t = 10_000)]
        cycles: u32,
    },
    /// QP pair connection time: fresh QPs vs QPs from the QP cache (reset and reconnected).
    QpSetup {
        /// Where to run it (on the simulator the times are only its book-keeping).
        #[arg(long, default_value = "verbs", value_parser = backend_arg())]
        backend: Backend,
        /// Pairs set up each way (at most 10 M).
        #[arg(long, default_value_t = 100, value_parser = tools::parse_iters)]
        iters: u32,
    },
}

fn parse_size(text: &str) -> Result<u64, String> {
    xrdma_scenario::units::parse_size(text).map_err(|e| e.to_string())
}

/// Wall-clock limit of one tool run on an RDMA device.
const TOOL_TIMEOUT: xrdma::Span = xrdma::Span::from_ms(300_000);

/// The `--backend` values (`sim`, `verbs`), parsed into the runner's [`Backend`].
fn backend_arg() -> impl clap::builder::TypedValueParser<Value = Backend> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(Backend::ALL.map(|b| PossibleValue::new(b.name()).help(b.about())))
        .try_map(|s| s.parse::<Backend>())
}

/// Refuse a message size whose buffers (payload, staging rings, reassembly, about six copies)
/// would not fit in the memory available.
fn ensure_fits(size: u64) -> Result<()> {
    let need = size.saturating_mul(6);
    if let Some(avail) = check::available_memory() {
        if need > avail {
            bail!(
                "--size {size} B needs about {} of memory for its buffers, but only {} is \
                 available",
                xrdma_reports::format_bytes(need),
                xrdma_reports::format_bytes(avail)
            );
        }
    }
    Ok(())
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
        Command::Run {
            scenario,
            out,
            seed,
            csv,
            backend,
            capture,
            stat_socket,
            trace,
            launch,
        } => {
            backend.require()?;
            if let Some(flag) = launch.given().filter(|_| backend != Backend::Verbs) {
                bail!("{flag} runs one process of a multi-process run: it needs --backend verbs");
            }
            let mut req = RunRequest::load(&scenario, backend)?;
            req.seed = seed;
            req.trace = trace;
            req.capture_hosts = capture.map(|c| c.0);
            for note in req.check()? {
                eprintln!("{note}");
            }
            let sc = req.effective_scenario();
            let launched = match backend {
                Backend::Verbs => launch.resolve(&sc)?,
                Backend::Sim => None,
            };
            if launched.is_some() && stat_socket.is_some() {
                bail!("--stat-socket answers for a single-process run, not for one rank of many");
            }
            let mut socket = stat_socket.as_deref().map(StatSocket::bind).transpose()?;
            if let Some(note) = xrdma_testbed::launch_cli::simulator_note() {
                if backend == Backend::Sim {
                    eprintln!("{note}");
                }
            }
            let out = out.unwrap_or_else(|| PathBuf::from("results").join(&sc.name));
            // Only the rank that writes the report touches the output directory. It is
            // locked before the run, so a second run into it is refused at once.
            let run_dir = if launched
                .as_ref()
                .is_none_or(|l| xrdma_testbed::launch_cli::writes_report(&sc, l))
            {
                Some(open_out_dir(&out, xrdma_reports::run_dir::Holds::Run)?)
            } else {
                None
            };
            let on = if backend == Backend::Sim {
                "the simulator"
            } else {
                "the RDMA device"
            };
            eprintln!("running {} on {on} ...", scenario.display());
            if let Some(l) = &launched {
                eprintln!("{}", l.summary());
            }
            let watch: &mut dyn Watch = match &mut socket {
                Some(s) => {
                    eprintln!("answering xrdma stat --socket {}", s.path().display());
                    s
                }
                None => &mut NoWatch,
            };
            // Progress shows once the command has run for two seconds (simulator runs only:
            // a multi-process run's ranks print their own lines meanwhile).
            let progress = (backend == Backend::Sim).then(|| Progress::start("simulating the run"));
            let RunOutcome {
                mut result,
                captures,
                warnings,
            } = match &launched {
                None => req.run_watched(watch)?,
                Some(l) => match xrdma_testbed::launch_cli::run(&sc, l)? {
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
        Command::Report { result, out, csv } => {
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
        Command::Ping {
            backend,
            size,
            iters,
            warmup,
            verb,
            json,
            server,
            bind,
            connect,
            host,
        } => {
            backend.require()?;
            host.require_sim(backend == Backend::Sim)?;
            tools::verb_ping::require_ideal_host(verb, host.host_profile.as_deref())?;
            verb.check_size(size)?;
            ensure_fits(size)?;
            let opts = tools::ping::PingOptions {
                size,
                iters,
                warmup: warmup.unwrap_or(iters.min(1_000)),
            };
            if server || connect.is_some() {
                if backend != Backend::Verbs {
                    bail!(
                        "--server and --connect run a two-process ping: they need --backend verbs"
                    );
                }
                let tool = TwoProcess::Ping(&opts, verb, json);
                return two_process(tool, server.then_some(bind), connect, TOOL_TIMEOUT);
            }
            let label = host.label(backend.name());
            let (r, stats) = match backend {
                Backend::Sim => tools::ping_out::run(&mut host.fabric()?, verb, &opts, label)?,
                Backend::Verbs => {
                    let mut fabric = VerbsFabric::for_tool(2, TOOL_TIMEOUT)?;
                    tools::ping_out::run(&mut fabric, verb, &opts, label)?
                }
            };
            out!("{}", r.render(&stats, json)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Bw {
            backend,
            size,
            iters,
            window,
            server,
            bind,
            connect,
            host,
        } => {
            backend.require()?;
            host.require_sim(backend == Backend::Sim)?;
            let opts = tools::bw::BwOptions {
                size,
                iters,
                window,
            };
            tools::bw::check(&opts)?;
            ensure_fits(size)?;
            if server || connect.is_some() {
                if backend != Backend::Verbs {
                    bail!("--server and --connect run a two-process bw: they need --backend verbs");
                }
                return two_process(
                    TwoProcess::Bw(&opts),
                    server.then_some(bind),
                    connect,
                    TOOL_TIMEOUT,
                );
            }
            let r = match backend {
                Backend::Sim => tools::bw::run(&mut host.fabric()?, &opts)?,
                Backend::Verbs => {
                    tools::bw::run(&mut VerbsFabric::for_tool(2, TOOL_TIMEOUT)?, &opts)?
                }
            };
            let w = tools::bw::config(window);
            outln!(
                "xrdma bw ({}): one-way stream, {} messages outstanding, window {} B{}",
                host.label(backend.name()),
                tools::bw::TX_DEPTH,
                w.initial_window,
                if w.adaptive_window {
                    format!(" growing to {} B", w.max_window)
                } else {
                    " (pinned)".into()
                }
            );
            outln!("{}", tools::bw::BwReport::header());
            outln!("{}", r.row());
            Ok(ExitCode::SUCCESS)
        }
        Command::Idle { backend, seconds } => {
            if backend == Backend::Sim {
                bail!(
                    "idle measures the CPU a real worker burns while it waits for completions; \
                     the simulator has no such cost: use --backend verbs"
                );
            }
            tools::idle::cli(seconds, TOOL_TIMEOUT)
        }
        Command::Soak {
            backend,
            messages,
            cycles,
        } => {
            let opts = tools::soak::SoakOptions {
                messages,
                cycles,
                ..tools::soak::SoakOptions::default()
            };
            let started = std::time::Instant::now();
            let r = match backend {
                Backend::Sim => tools::soak::run(&mut tools::sim_fabric()?, &opts)?,
                Backend::Verbs => {
                    tools::soak::run(&mut VerbsFabric::for_tool(2, TOOL_TIMEOUT)?, &opts)?
                }
            };
            outln!(
                "xrdma soak ({}): {messages} messages, {cycles} cycles, {:.1} s wall",
                if backend == Backend::Sim {
                    "sim"
                } else {
                    "verbs"
                },
                started.elapsed().as_secs_f64()
            );
            for l in r.lines() {
                outln!("{l}");
            }
            for g in r.growth() {
                outln!("GREW: {g}");
            }
            if r.passed() {
                outln!("soak: 1 passed, 0 failed");
                Ok(ExitCode::SUCCESS)
            } else {
                outln!("soak: 0 passed, 1 failed");
                Ok(ExitCode::from(EXIT_RESULT_FAILED))
            }
        }
        Command::QpSetup { backend, iters } => {
            let r = match backend {
                Backend::Sim => tools::qp_setup::run(tools::sim_fabric, iters)?,
                Backend::Verbs => {
                    let dev = open_env_device()?;
                    tools::qp_setup::run(|| VerbsFabric::with_device(&dev, 2, TOOL_TIMEOUT), iters)?
                }
            };
            outln!(
                "xrdma qp-setup ({backend:?}): QP pair connect, fresh (create_qp + connect_qp) vs \
                 from the QP cache (reset_qp + connect_qp); wall clock"
            );
            outln!("{}", tools::qp_setup::QpSetupReport::header());
            outln!("{}", r.row());
            Ok(ExitCode::SUCCESS)
        }
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
