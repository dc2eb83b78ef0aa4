//! `xrdma` — the test bed's command line: run YAML scenarios on the simulator and write
//! latency reports.
//!
//! Exit status: 0 when the run finished and every message arrived intact; 2 when the run
//! finished but its result shows a failure (a message undelivered, corrupted or duplicated,
//! or an inconsistent result); 1 when nothing ran (bad scenario, unwritable output).

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use xrdma_testbed::{sim_config, sim_run};

/// RDMA message middleware test bed: run scenarios, write latency reports and plots.
#[derive(Parser, Debug)]
#[command(name = "xrdma", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario on the simulator and write `result.json`, `summary.txt` and
    /// `latency.svg` into the output directory. Exits 2 if any message was not delivered
    /// intact.
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
        #[arg(long, value_enum, default_value_t = Backend::Sim)]
        backend: Backend,
    },
    /// Check a scenario file (parse, units, ranges, PFC headroom) without running it.
    Validate {
        /// The scenario file (YAML).
        scenario: PathBuf,
    },
    /// Run the conformance suite (the same scenario-level cases on any backend) and print
    /// `N passed, M failed`; exits 2 when a case fails.
    Conformance {
        /// The backend to run on.
        #[arg(long, value_enum, default_value_t = Backend::Sim)]
        backend: Backend,
    },
    /// Benchmark the simulator: 256:1 x 2 MiB incasts (PFC only, DCQCN, through xrdma) and a
    /// 1024-host fat-tree permutation; events, wall time, events/s and peak RSS per case, each
    /// case in its own process.
    Bench {
        /// Run only this case (pfc-incast, dcqcn-incast, lossy-incast, xrdma-incast,
        /// fattree-1024).
        #[arg(long)]
        case: Option<String>,
    },
}

/// Where a scenario runs.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    /// The packet-level simulator (reads the scenario's `sim:` block).
    Sim,
    /// A real RDMA device through ibverbs (reads the `verbs:` block); builds made with
    /// `--features verbs` only.
    Verbs,
}

/// Run `sc` on `backend`.
fn run_scenario(
    backend: Backend,
    sc: &xrdma_scenario::Scenario,
) -> Result<xrdma_reports::RunResult> {
    match backend {
        Backend::Sim => sim_run::run(sc),
        #[cfg(feature = "verbs")]
        Backend::Verbs => xrdma_testbed::verbs_fabric::run(sc),
        #[cfg(not(feature = "verbs"))]
        Backend::Verbs => bail!(
            "this build has no verbs backend: build it with `cargo build --release --features \
             verbs` (needs libibverbs-dev, librdmacm-dev and libclang-dev; ci/softroce.sh \
             installs them)"
        ),
    }
}

/// The run finished but its result shows a failure.
const EXIT_RESULT_FAILED: u8 = 2;

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
    match cli.command {
        Command::Run {
            scenario,
            out,
            seed,
            csv,
            backend,
        } => {
            let mut sc = xrdma_scenario::load(&scenario)?;
            if let Some(seed) = seed {
                let mut s = sc.sim_or_default();
                s.seed = seed;
                sc.sim = Some(s);
            }
            if backend == Backend::Sim {
                let checked = sim_config::check(&sc)?;
                for w in &checked.warnings {
                    eprintln!("warning: {w}");
                }
            } else {
                sim_config::check_xrdma(&sc)?;
                if sc.sim.is_some() {
                    eprintln!(
                        "note: the verbs backend ignores the `sim:` block (but for its seed)"
                    );
                }
            }
            let out = out.unwrap_or_else(|| PathBuf::from("results").join(&sc.name));
            prepare_out_dir(&out)?;
            let on = if backend == Backend::Sim {
                "the simulator"
            } else {
                "the RDMA device"
            };
            eprintln!("running {} on {on} ...", scenario.display());
            let result = run_scenario(backend, &sc)?;
            let files = xrdma_reports::write_run_dir(&out, &result, csv)
                .with_context(|| format!("writing results to {}", out.display()))?;
            print!("{}", xrdma_reports::summary_table(&result));
            for f in [
                Some(&files.result_json),
                Some(&files.summary_txt),
                Some(&files.latency_svg),
                files.messages_csv.as_ref(),
            ]
            .into_iter()
            .flatten()
            {
                println!("wrote {}", f.display());
            }
            let d = &result.delivery;
            let mut failed = false;
            if d.missing + d.digest_mismatches + d.duplicates > 0 {
                eprintln!(
                    "FAILED: {} message(s) missing, {} corrupted, {} duplicated",
                    d.missing, d.digest_mismatches, d.duplicates
                );
                failed = true;
            }
            for problem in result.validate() {
                eprintln!("FAILED: inconsistent result: {problem}");
                failed = true;
            }
            Ok(if failed {
                ExitCode::from(EXIT_RESULT_FAILED)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Conformance { backend } => {
            let mut run = |sc: &xrdma_scenario::Scenario| run_scenario(backend, sc);
            let (passed, failures) = xrdma_testbed::conformance::run_all(&mut run);
            for f in &failures {
                eprintln!("FAILED {f}");
            }
            println!("conformance: {passed} passed, {} failed", failures.len());
            Ok(if failures.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_RESULT_FAILED)
            })
        }
        Command::Bench { case: Some(case) } => {
            let f = xrdma_testbed::bench::run_case(&case)?;
            println!("{}", f.line());
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { case: None } => {
            let exe = std::env::current_exe().context("locating this executable")?;
            println!("{}", xrdma_testbed::bench::BenchFigures::header());
            for case in xrdma_testbed::bench::CASES {
                let out = std::process::Command::new(&exe)
                    .args(["bench", "--case", case])
                    .output()
                    .with_context(|| format!("running bench case {case}"))?;
                if !out.status.success() {
                    bail!(
                        "bench case {case} failed: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                print!("{}", String::from_utf8_lossy(&out.stdout));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Validate { scenario } => {
            let sc = xrdma_scenario::load(&scenario)?;
            let checked = sim_config::check(&sc)?;
            for w in &checked.warnings {
                eprintln!("warning: {w}");
            }
            println!(
                "{}: ok ({} hosts, about {} of memory)",
                scenario.display(),
                checked.sim.hosts,
                xrdma_reports::format_bytes(checked.memory_bytes)
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Create the output directory before the run, so an unwritable path fails in a second, not
/// after the simulation.
fn prepare_out_dir(out: &Path) -> Result<()> {
    if out.exists() && !out.is_dir() {
        bail!(
            "output path {} exists and is not a directory",
            out.display()
        );
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create output directory {}", out.display()))
}
