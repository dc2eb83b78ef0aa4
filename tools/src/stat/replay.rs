//! `xrdma stat --at T`: the endpoints of a simulator run at any instant. The simulator is
//! deterministic, so the run is replayed (from a scenario file, or from the scenario text and
//! seed a finished run recorded) and watched ([`xrdma_runner::watch`]) at each asked instant:
//! the snapshot is taken at the end of the first round of host turns at or after it (its
//! `at` says when). A replay of a recorded run is checked against it by trace hash.

use anyhow::{bail, Context, Result};
use std::path::Path;
use xrdma::Time;
use xrdma_reports::HostEndpoint;
use xrdma_runner::watch::{LiveStat, Watch};

/// Takes one [`LiveStat`] at the first round at or after each instant.
#[derive(Debug, Default)]
pub struct AtInstants {
    /// The instants asked, ascending.
    pub asked: Vec<Time>,
    /// `(asked, taken)` for each instant reached, in order.
    pub taken: Vec<(Time, LiveStat)>,
}

impl Watch for AtInstants {
    fn due(&mut self, now: Time) -> bool {
        self.asked.get(self.taken.len()).is_some_and(|&t| now >= t)
    }
    fn take(&mut self, stat: LiveStat) {
        // Every instant this round passed gets the same snapshot.
        let now = Time::from_ps(stat.at_ps);
        while let Some(&t) = self.asked.get(self.taken.len()) {
            if t > now {
                break;
            }
            self.taken.push((t, stat.clone()));
        }
    }
}

/// What a replay gives: each instant's endpoints, and those never reached (the run ended
/// first), with the run's end.
#[derive(Debug)]
pub struct Replay {
    /// `(asked, when taken, endpoints)`.
    pub at: Vec<(Time, Time, Vec<HostEndpoint>)>,
    /// Instants after the run's last round.
    pub unreached: Vec<Time>,
    /// The simulated time the run ended at.
    pub ended: Time,
}

/// Replays `source` — a scenario file (`.yaml`/`.yml`), or a finished simulator run's
/// directory or `result.json` (its recorded scenario text and seed) — on the simulator,
/// taking the endpoints at each of `at`.
///
/// # Errors
/// The scenario or result does not load; the result is not a simulator run or records no
/// scenario text; the run fails. A replay whose trace hash
/// differs from the recorded run's is an error too (this build simulates differently, so
/// the instants would not be that run's).
pub fn replay(source: &Path, at: &[Time]) -> Result<Replay> {
    let is_yaml = source
        .extension()
        .is_some_and(|e| e == "yaml" || e == "yml");
    let (sc, recorded_hash) = if is_yaml {
        (xrdma_scenario::load(source)?, None)
    } else {
        let (path, r) = crate::compare::load_run(source)?;
        if r.scenario.backend != xrdma_reports::Backend::Sim {
            bail!(
                "{}: --at replays a simulator run; this one ran on {} (ask a running verbs \
                 process with --socket instead)",
                path.display(),
                r.scenario.backend
            );
        }
        let Some(yaml) = &r.scenario_yaml else {
            bail!(
                "{}: records no scenario text to replay; give the scenario file instead",
                path.display()
            );
        };
        let mut sc = xrdma_scenario::parse(yaml, Path::new(&r.scenario.path))
            .with_context(|| format!("the scenario recorded in {}", path.display()))?;
        let mut sim = sc.sim_or_default();
        sim.seed = r.scenario.seed;
        sc.sim = Some(sim);
        // The stack the run used (`run --stack` overrides the file's).
        sc.stack = r.scenario.stack;
        (sc, r.sim.map(|s| s.trace_hash))
    };
    let mut asked = at.to_vec();
    asked.sort_unstable();
    asked.dedup();
    let mut w = AtInstants {
        asked,
        taken: Vec::new(),
    };
    let r = xrdma_runner::request::RunRequest::new(sc, xrdma_runner::request::Backend::Sim)
        .run_watched(&mut w)?
        .result;
    let sim = r
        .sim
        .context("a simulator run without simulator statistics")?;
    if let Some(h) = recorded_hash.filter(|h| *h != sim.trace_hash) {
        bail!(
            "{}: the replay's trace hash {} is not the recorded run's {h}: this build \
             simulates it differently, or the run changed the recorded scenario (a sweep \
             point's axis values are not in its text; the file was edited), so its instants \
             would not be that run's",
            source.display(),
            sim.trace_hash
        );
    }
    let unreached = w.asked[w.taken.len()..].to_vec();
    let at = w
        .taken
        .into_iter()
        .map(|(asked, stat)| (asked, Time::from_ps(stat.at_ps), stat.endpoints))
        .collect();
    Ok(Replay {
        at,
        unreached,
        ended: Time::from_ps(sim.simulated_ps),
    })
}
