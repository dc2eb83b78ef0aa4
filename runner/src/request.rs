//! One way to run a scenario: a [`RunRequest`] (the scenario, the backend, a seed and the
//! options) goes in, a [`RunOutcome`] (the result, the packet captures, the warnings) comes
//! out. `xrdma run`, sweeps, calibration, `stat --at`, the benchmarks and the tests run
//! scenarios through [`RunRequest::run`], so a run means the same thing wherever it starts.
//!
//! The choice between the simulator and an RDMA device is one value, [`Backend`], and this
//! module is where a build without the `verbs` feature refuses the device
//! ([`Backend::require`]).

use crate::check::{check, check_xrdma, unreached_faults};
use crate::watch::{NoWatch, Watch};
use anyhow::{anyhow, bail, Result};
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use xrdma_reports::RunResult;
use xrdma_scenario::Scenario;
use xrdma_sim::{CaptureConfig, LinkCapture};

/// Where a scenario runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Backend {
    /// The packet-level simulator (virtual time; every shipped scenario runs on it).
    Sim,
    /// A real RDMA device through ibverbs (builds with the `verbs` feature only).
    Verbs,
    /// This machine's kernel TCP sockets, every host in this process (`stack: tcp` only).
    Sockets,
}

impl Backend {
    /// Every backend, in the order the command line lists them.
    pub const ALL: [Backend; 3] = [Backend::Sim, Backend::Verbs, Backend::Sockets];

    /// The backends xrdma runs on (the sockets backend runs TCP only).
    pub const RDMA: [Backend; 2] = [Backend::Sim, Backend::Verbs];

    /// Fail when the backend cannot run xrdma (the sockets backend); `what` names the
    /// command.
    ///
    /// # Errors
    /// [`Backend::Sockets`].
    pub fn require_rdma(self, what: &str) -> Result<()> {
        if self == Backend::Sockets {
            bail!(
                "{what} runs xrdma, which needs --backend sim or verbs; the sockets backend \
                 runs scenarios over kernel TCP (`xrdma run FILE --backend sockets --stack tcp`)"
            );
        }
        Ok(())
    }

    /// The name as written on the command line and in results (`sim`, `verbs`, `sockets`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Verbs => "verbs",
            Backend::Sockets => "sockets",
        }
    }

    /// One line on what the backend is, for a command line's help.
    pub fn about(self) -> &'static str {
        match self {
            Backend::Sim => "The packet-level simulator",
            Backend::Verbs => {
                "A real RDMA device through ibverbs (builds made with `--features verbs` only)"
            }
            Backend::Sockets => {
                "This machine's kernel TCP over loopback, every host in one process (`stack: \
                 tcp`: the baseline xrdma is compared with)"
            }
        }
    }

    /// Whether this build can run on the backend (the device needs the `verbs` feature).
    pub fn is_built(self) -> bool {
        match self {
            Backend::Sim | Backend::Sockets => true,
            Backend::Verbs => crate::fabric::VERBS_BUILT,
        }
    }

    /// Fail at once, before anything runs, when this build lacks the backend.
    ///
    /// # Errors
    /// The verbs backend in a build without the `verbs` feature; the message says how to
    /// build one.
    pub fn require(self) -> Result<()> {
        if self.is_built() {
            return Ok(());
        }
        bail!(
            "this build has no verbs backend: build it with `cargo build --release --features \
             verbs` (needs libibverbs-dev, librdmacm-dev and libclang-dev; ci/softroce.sh \
             installs them)"
        )
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = String;

    /// `sim`, `verbs` or `sockets`.
    fn from_str(s: &str) -> Result<Self, String> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("`{s}` is not a backend: write `sim`, `verbs` or `sockets`"))
    }
}

/// One run to make: what [`RunRequest::run`] needs, and nothing it finds out for itself.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The scenario as loaded.
    pub scenario: Scenario,
    /// Where it runs.
    pub backend: Backend,
    /// Replaces the scenario's `sim.seed` (which also seeds the payload bytes, arrivals and
    /// request sizes on a device) when given.
    pub seed: Option<u64>,
    /// Replaces the scenario's `stack` when given.
    pub stack: Option<xrdma_scenario::Stack>,
    /// Record every message's stages (as the scenario's `trace: true`) when set.
    pub trace: bool,
    /// Run even when the memory estimate exceeds the memory available (clears the
    /// scenario's [`Scenario::check_memory`]).
    pub no_memory_check: bool,
    /// Capture the simulator's packets on the links of these hosts (with the bounds of the
    /// scenario's `sim.capture` if it has one, else the defaults); `None` keeps the
    /// scenario's own `sim.capture`. The simulator only.
    pub capture_hosts: Option<Vec<u32>>,
    /// The scenario file's text as the run started, kept in the result
    /// ([`RunResult::scenario_yaml`]); `None` leaves the result's field unset.
    pub scenario_yaml: Option<String>,
}

/// What a run gave.
#[derive(Debug)]
pub struct RunOutcome {
    /// The result, as `result.json` holds it.
    pub result: RunResult,
    /// The packet captures of the run (the simulator only; empty when none were asked for).
    pub captures: Vec<LinkCapture>,
    /// What the user should hear about the run after it (a timed fault or stall the run
    /// never reached, which therefore tested nothing).
    pub warnings: Vec<String>,
}

impl RunRequest {
    /// A run of `scenario` on `backend` with the scenario's own seed and options.
    pub fn new(scenario: Scenario, backend: Backend) -> Self {
        RunRequest {
            scenario,
            backend,
            seed: None,
            stack: None,
            trace: false,
            no_memory_check: false,
            capture_hosts: None,
            scenario_yaml: None,
        }
    }

    /// A run of the scenario file at `path` on `backend`, its text kept for the result.
    ///
    /// # Errors
    /// A file that cannot be read or is no valid scenario (`FILE:LINE:COLUMN: FIELD: reason`).
    pub fn load(path: &Path, backend: Backend) -> Result<Self> {
        let scenario = xrdma_scenario::load(path)?;
        let mut req = RunRequest::new(scenario, backend);
        req.scenario_yaml = std::fs::read_to_string(path).ok();
        Ok(req)
    }

    /// The same request with `seed` in place of the scenario's.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The scenario as this request runs it: the seed and the trace flag applied.
    pub fn effective_scenario(&self) -> Scenario {
        let mut sc = self.scenario.clone();
        sc.trace |= self.trace;
        sc.check_memory &= !self.no_memory_check;
        if let Some(stack) = self.stack {
            sc.stack = stack;
        }
        if let Some(seed) = self.seed {
            let mut s = sc.sim_or_default();
            s.seed = seed;
            sc.sim = Some(s);
        }
        sc
    }

    /// Check the request without running it: the backend is built, the options suit it, and
    /// the scenario's configuration is valid for it. Returns what the user should hear
    /// before the run (the simulator's configuration warnings; notes on what the backend
    /// ignores).
    ///
    /// # Errors
    /// A backend this build lacks; `capture_hosts` off the simulator or naming a host the
    /// workload does not have; the first invalid setting (`FILE:LINE:COLUMN: FIELD: reason`).
    pub fn check(&self) -> Result<Vec<String>> {
        self.backend.require()?;
        let sc = self.effective_scenario();
        let mut notes = Vec::new();
        if sc.trace && matches!(sc.workload, xrdma_scenario::Workload::Echo(_)) {
            notes.push(
                "note: an echo exchange completes on its response: it has no send-side stages \
                 to trace"
                    .to_string(),
            );
        }
        match self.backend {
            Backend::Sim => {
                self.capture_config(&sc)?;
                let checked = check(&sc)?;
                notes.extend(checked.warnings.iter().map(|w| format!("warning: {w}")));
            }
            Backend::Verbs => {
                if self.capture_hosts.is_some() {
                    bail!("--capture records the simulator's packets: it needs --backend sim");
                }
                check_xrdma(&sc)?;
                if sc.sim.is_some() {
                    notes.push(
                        "note: the verbs backend ignores the `sim:` block (but for its seed), \
                         its `host` model too: a device's host is real"
                            .to_string(),
                    );
                }
            }
            Backend::Sockets => {
                if self.capture_hosts.is_some() {
                    bail!("--capture records the simulator's packets: it needs --backend sim");
                }
                crate::run::check_sockets(&sc)?;
                if sc.sim.is_some() {
                    notes.push(
                        "note: the sockets backend ignores the `sim:` block (but for its seed) \
                         and the `tcp:` block: this machine's kernel TCP runs with its own \
                         settings"
                            .to_string(),
                    );
                }
            }
        }
        Ok(notes)
    }

    /// The capture of `capture_hosts` over the scenario's own bounds, if hosts are given.
    fn capture_config(&self, sc: &Scenario) -> Result<Option<CaptureConfig>> {
        let Some(hosts) = &self.capture_hosts else {
            return Ok(None);
        };
        let base = sc.sim_or_default().capture.unwrap_or_default();
        let cfg = CaptureConfig {
            hosts: hosts.clone(),
            ..base
        };
        cfg.check_hosts(sc.workload.hosts())
            .map_err(|m| anyhow!("--capture: {m}"))?;
        Ok(Some(cfg))
    }

    /// Run it in this process (every host of the scenario here; a multi-process run's ranks
    /// are started by `xrdma_cluster::launch`).
    ///
    /// # Errors
    /// As [`RunRequest::check`]; a transport failure during setup; no usable device.
    pub fn run(&self) -> Result<RunOutcome> {
        self.run_watched(&mut NoWatch)
    }

    /// [`RunRequest::run`], showing `watch` the endpoints while the run runs
    /// ([`crate::watch`]). Neither a watch nor a capture changes what is simulated (the
    /// trace hash is the same).
    ///
    /// # Errors
    /// As [`RunRequest::run`].
    pub fn run_watched(&self, watch: &mut dyn Watch) -> Result<RunOutcome> {
        self.backend.require()?;
        let sc = self.effective_scenario();
        let (mut result, captures) = match self.backend {
            Backend::Sim => {
                let capture = self.capture_config(&sc)?;
                crate::run::run_sim_captured(&sc, capture, watch)?
            }
            Backend::Verbs => (crate::run::run_verbs_watched(&sc, watch)?, Vec::new()),
            Backend::Sockets => (crate::run::run_sockets_watched(&sc, watch)?, Vec::new()),
        };
        result.scenario_yaml.clone_from(&self.scenario_yaml);
        let warnings = result
            .sim
            .as_ref()
            .map(|s| unreached_faults(&sc, xrdma::Time::from_ps(s.simulated_ps)))
            .unwrap_or_default();
        Ok(RunOutcome {
            result,
            captures,
            warnings,
        })
    }
}

/// Run `sc` on the simulator as it is: [`RunRequest::new`] with [`Backend::Sim`], its result.
///
/// # Errors
/// As [`RunRequest::run`].
pub fn run_sim(sc: &Scenario) -> Result<RunResult> {
    Ok(RunRequest::new(sc.clone(), Backend::Sim).run()?.result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_parse_by_name_and_refuse_others() {
        for b in Backend::ALL {
            assert_eq!(b.name().parse::<Backend>(), Ok(b));
        }
        let e = "rxe".parse::<Backend>().unwrap_err();
        assert!(
            e.contains("`rxe`") && e.contains("`sim`, `verbs` or `sockets`"),
            "{e}"
        );
    }

    #[test]
    fn the_verbs_backend_is_refused_only_where_it_is_not_built() {
        assert!(Backend::Sim.require().is_ok());
        assert_eq!(
            Backend::Verbs.require().is_ok(),
            crate::fabric::VERBS_BUILT,
            "{:?}",
            Backend::Verbs.require()
        );
    }
}
