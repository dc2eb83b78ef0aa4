//! `xrdma calibrate`: the simulator against a device. `measure` takes the ping and bw
//! figures a fit needs ([`measure`]), `fit` derives a host profile from them with the
//! simulator in the loop ([`fit`]) and writes it as a profile file ([`profile_file`]), `run`
//! puts one scenario on the device and on the simulator with any profiles side by side, with
//! the prediction error per figure ([`side_by_side`]).

pub mod fit;
pub mod measure;
pub mod side_by_side;

pub use crate::profile_file;

use crate::outln;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use xrdma_reports::RunResult;
use xrdma_runner::fabric::VerbsFabric;
use xrdma_runner::request::{Backend, RunRequest};

/// The arguments of `xrdma calibrate`.
#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {
    #[command(subcommand)]
    command: Calibrate,
}

/// Where measurements come from.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The RDMA device (builds with `--features verbs`).
    Verbs,
    /// The simulator with `--host-profile`: synthetic measurements, to test a fit.
    Sim,
}

#[derive(clap::Subcommand, Debug)]
enum Calibrate {
    /// Run `xrdma ping` and `xrdma bw` at a few sizes and write their figures to
    /// OUT/measurements.json (what `calibrate fit` reads).
    Measure {
        /// Where to measure.
        #[arg(long, value_enum, default_value_t = Source::Verbs)]
        backend: Source,
        /// With --backend sim: the simulated hosts' profile (a built-in name or a profile file).
        #[arg(long = "host-profile", value_name = "NAME|FILE")]
        host_profile: Option<String>,
        #[command(flatten)]
        plan: PlanArgs,
        /// Output directory.
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Fit a host profile to a device's ping and bw figures (read from --measurements, or
    /// measured on the device first) and write it as OUT/NAME.yaml, a `sim: { host: ... }`
    /// block a scenario can take, with OUT/fit.txt: each figure on the device, with the base
    /// and with the fitted profile.
    Fit {
        /// A measurements.json (or its directory) from `calibrate measure`; without it the
        /// device is measured first (into OUT/measurements.json).
        #[arg(long)]
        measurements: Option<PathBuf>,
        /// The base profile: the fit starts from its costs and keeps its split of the CPU costs
        /// and of the NIC latencies (a built-in name or a profile file).
        #[arg(long, default_value = "rxe-guest", value_name = "NAME|FILE")]
        base: String,
        /// The fitted profile's file name, without `.yaml`.
        #[arg(long, default_value = "fitted")]
        name: String,
        #[command(flatten)]
        plan: PlanArgs,
        /// Output directory.
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Run SCENARIO on the device and on the simulator with each --host-profile, and write
    /// every run, the compare report (compare.txt, compare-cdf.svg/.png) and the prediction
    /// error per figure (calibration.txt, .json, .env) into OUT.
    Run {
        /// The scenario file (YAML).
        scenario: PathBuf,
        /// A simulator host profile to compare (a built-in name or a profile file; repeat for
        /// more) [default: the scenario's own `sim.host`].
        #[arg(long = "host-profile", value_name = "NAME|FILE")]
        host_profiles: Vec<String>,
        /// A device run already made (its directory or result.json; repeat for more): the
        /// device is then not run.
        #[arg(long = "device-result", value_name = "DIR")]
        device_results: Vec<PathBuf>,
        /// Device runs to make when no --device-result is given (two or more give the
        /// device's own spread).
        #[arg(long, default_value_t = 2)]
        device_runs: u32,
        /// Device runs made first and not compared: the first run of a process pays one-time
        /// costs the simulator does not model (on the Soft-RoCE guest its first message
        /// completed about 8 ms later than in the next run).
        #[arg(long, default_value_t = 1)]
        device_warmup: u32,
        /// Output directory.
        #[arg(short, long)]
        out: PathBuf,
    },
}

/// The plan's command-line form ([`measure::Plan`]; defaults as there).
#[derive(clap::Args, Debug)]
struct PlanArgs {
    /// Ping message sizes.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64B,1000B,4KiB")]
    ping_sizes: Vec<u64>,
    /// Round trips measured per ping size.
    #[arg(long, default_value_t = 1000)]
    ping_iters: u32,
    /// Bw message sizes.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, default_value = "64B,64KiB")]
    bw_sizes: Vec<u64>,
    /// Messages per bw run of at most 4 KiB.
    #[arg(long, default_value_t = 20_000)]
    bw_small_iters: u32,
    /// Messages per larger bw run.
    #[arg(long, default_value_t = 1000)]
    bw_large_iters: u32,
    /// The send window every bw run pins.
    #[arg(long, value_parser = parse_size, default_value = "256KiB")]
    bw_window: u64,
}

impl PlanArgs {
    fn plan(&self) -> measure::Plan {
        measure::Plan {
            ping_sizes: self.ping_sizes.clone(),
            ping_iters: self.ping_iters,
            ping_warmup: (self.ping_iters / 10).max(1),
            bw_sizes: self.bw_sizes.clone(),
            bw_small_iters: self.bw_small_iters,
            bw_large_iters: self.bw_large_iters,
            bw_window: self.bw_window,
        }
    }
}

fn parse_size(text: &str) -> Result<u64, String> {
    xrdma_scenario::units::parse_size(text).map_err(|e| e.to_string())
}

/// Wall-clock limit of one tool run or scenario run on the device.
const DEVICE_TIMEOUT: xrdma::Span = xrdma::Span::from_ms(300_000);

/// `xrdma calibrate`: see [`CalibrateArgs`]. Exit 0 when everything ran; 2 when a compared
/// run failed its checks (its figures then cover only the messages that completed).
///
/// # Errors
/// Bad arguments, a device that is not there or not built in, a failing run or fit, an
/// unwritable output.
pub fn run(args: CalibrateArgs) -> Result<ExitCode> {
    match args.command {
        Calibrate::Measure {
            backend,
            host_profile,
            plan,
            out,
        } => {
            let m = measure_on(backend, host_profile.as_deref(), &plan.plan())?;
            std::fs::create_dir_all(&out)
                .with_context(|| format!("cannot create {}", out.display()))?;
            let path = out.join("measurements.json");
            measure::save(&path, &m)?;
            outln!("wrote {}", path.display());
            Ok(ExitCode::SUCCESS)
        }
        Calibrate::Fit {
            measurements,
            base,
            name,
            plan,
            out,
        } => {
            let base = profile_file::resolve(&base)?;
            std::fs::create_dir_all(&out)
                .with_context(|| format!("cannot create {}", out.display()))?;
            let (m, source) = match &measurements {
                Some(p) => (measure::load(p)?, p.display().to_string()),
                None => {
                    let m = measure_on(Source::Verbs, None, &plan.plan())?;
                    let path = out.join("measurements.json");
                    measure::save(&path, &m)?;
                    outln!("wrote {}", path.display());
                    (m, path.display().to_string())
                }
            };
            fit_and_write(&m, &source, &base, &name, &out)
        }
        Calibrate::Run {
            scenario,
            host_profiles,
            device_results,
            device_runs,
            device_warmup,
            out,
        } => side_by_side_run(
            &scenario,
            &host_profiles,
            &device_results,
            (device_warmup, device_runs),
            &out,
        ),
    }
}

/// Measures `plan` on the device, or on the simulator with `host_profile`.
fn measure_on(
    backend: Source,
    host_profile: Option<&str>,
    plan: &measure::Plan,
) -> Result<measure::Measurements> {
    match backend {
        Source::Sim => {
            let model = match host_profile {
                Some(p) => profile_file::resolve(p)?,
                None => xrdma_sim::HostModel::IDEAL,
            };
            let label = format!("sim, host {}", model.name());
            measure::measure(&label, plan, || {
                Ok(xrdma_runner::fabric::SimFabric::new(
                    xrdma_sim::SimConfig {
                        host: model.clone(),
                        ..xrdma_sim::SimConfig::default()
                    },
                )?)
            })
        }
        Source::Verbs => {
            if host_profile.is_some() {
                bail!("--host-profile sets the simulator's hosts; on a device the host is real");
            }
            measure_device(plan)
        }
    }
}

fn measure_device(plan: &measure::Plan) -> Result<measure::Measurements> {
    Backend::Verbs.require().context(
        "cannot measure a device; fit measurements taken elsewhere with `xrdma calibrate fit \
         --measurements FILE`",
    )?;
    measure::measure("verbs", plan, || VerbsFabric::for_tool(2, DEVICE_TIMEOUT))
}

/// Fits, then writes OUT/NAME.yaml, OUT/fit.txt and prints the fit.
fn fit_and_write(
    m: &measure::Measurements,
    source: &str,
    base: &xrdma_sim::HostModel,
    name: &str,
    out: &Path,
) -> Result<ExitCode> {
    if name.is_empty() || name.contains(['/', '\\']) {
        bail!("--name must be a file name without `/`: got `{name}`");
    }
    let opts = fit::FitOptions::new(base.clone());
    let f = fit::fit(m, &opts)?;
    let text = fit::render(&f, base, source);
    let mut header = vec![
        format!("Host profile `{name}`: fitted by `xrdma calibrate fit` to {source}"),
        format!("({}), from base `{}`.", m.backend, base.name()),
        "Use: paste the `host:` block under a scenario's `sim:`, or pass this file to".into(),
        "--host-profile (xrdma calibrate run, ping, bw).".into(),
    ];
    header.extend(text.lines().map(String::from));
    let profile = out.join(format!("{name}.yaml"));
    xrdma_cluster::sweep::write_atomic(
        &profile,
        profile_file::to_yaml(&f.model, &header).as_bytes(),
    )?;
    let report = out.join("fit.txt");
    xrdma_cluster::sweep::write_atomic(&report, text.as_bytes())?;
    crate::out!("{text}");
    for p in [&profile, &report] {
        outln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `calibrate run`: see [`side_by_side`].
fn side_by_side_run(
    scenario: &Path,
    host_profiles: &[String],
    device_results: &[PathBuf],
    (device_warmup, device_runs): (u32, u32),
    out: &Path,
) -> Result<ExitCode> {
    let sc = xrdma_scenario::load(scenario)?;
    let yaml = std::fs::read_to_string(scenario).ok();
    let mut profiles = Vec::new();
    for p in host_profiles {
        let label = Path::new(p)
            .file_stem()
            .filter(|_| xrdma_sim::HostModel::from_profile(p).is_err())
            .map_or_else(|| p.clone(), |s| s.to_string_lossy().into_owned());
        profiles.push((label, profile_file::resolve(p)?));
    }
    for (i, (label, _)) in profiles.iter().enumerate() {
        if profiles[..i].iter().any(|(l, _)| l == label) {
            bail!(
                "two --host-profile arguments are both labelled `{label}`: give each a \
                 distinct name"
            );
        }
    }
    if profiles.is_empty() {
        let own = sc.sim_or_default().host;
        profiles.push((own.name().to_string(), own));
    }
    // Every simulator run first: they are quick, and a bad profile fails before the device
    // is taken.
    let mut sims = Vec::new();
    for (label, model) in &profiles {
        eprintln!("calibrate: {} on the simulator, host {label} ...", sc.name);
        let mut r = xrdma_runner::request::run_sim(&side_by_side::with_host(&sc, model))?;
        r.scenario_yaml.clone_from(&yaml);
        sims.push((label.clone(), r));
    }
    let device: Vec<RunResult> = if device_results.is_empty() {
        run_device(&sc, device_warmup, device_runs, yaml.as_deref())?
    } else {
        let mut runs = Vec::new();
        for p in device_results {
            let (_, r) = crate::compare::load_run(p)?;
            if r.scenario.backend != xrdma_reports::Backend::Verbs {
                bail!(
                    "{} is a run on the {} backend: --device-result takes a run of the \
                     scenario on an RDMA device (`xrdma run --backend verbs`), the reference \
                     the simulator is calibrated against",
                    p.display(),
                    r.scenario.backend
                );
            }
            runs.push(r);
        }
        runs
    };
    let w = side_by_side::write(out, &sc.name, &device, &sims)?;
    crate::out!("{}", side_by_side::render(&w.calibration));
    for f in w.runs.iter().chain(&w.files) {
        outln!("wrote {}", f.display());
    }
    let failed: Vec<String> = device
        .iter()
        .chain(sims.iter().map(|(_, r)| r))
        .filter(|r| crate::compare::run_failed(r))
        .map(|r| format!("{} ({})", r.scenario.name, r.scenario.backend))
        .collect();
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "FAILED: run(s) {} did not finish or failed their checks: their figures cover only \
             the messages that completed",
            failed.join(", ")
        );
        Ok(ExitCode::from(crate::output::EXIT_RESULT_FAILED))
    }
}

/// `warmup` runs of `sc` on the device, dropped, then `runs` runs, kept.
fn run_device(
    sc: &xrdma_scenario::Scenario,
    warmup: u32,
    runs: u32,
    yaml: Option<&str>,
) -> Result<Vec<RunResult>> {
    Backend::Verbs
        .require()
        .context("cannot run the device; give a device run made elsewhere (--device-result DIR)")?;
    if runs == 0 {
        bail!("--device-runs must be at least 1 (or give --device-result)");
    }
    xrdma_runner::check::check_xrdma(sc)?;
    for k in 1..=warmup {
        eprintln!(
            "calibrate: {} on the RDMA device, warm-up run {k} of {warmup} (not compared) ...",
            sc.name
        );
        device_run(sc)?;
    }
    (1..=runs)
        .map(|k| {
            eprintln!(
                "calibrate: {} on the RDMA device, run {k} of {runs} ...",
                sc.name
            );
            let mut r = device_run(sc)?;
            r.scenario_yaml = yaml.map(String::from);
            Ok(r)
        })
        .collect()
}

/// One run of `sc` on the RDMA device, as `xrdma run --backend verbs` makes it.
fn device_run(sc: &xrdma_scenario::Scenario) -> Result<RunResult> {
    Ok(RunRequest::new(sc.clone(), Backend::Verbs).run()?.result)
}
