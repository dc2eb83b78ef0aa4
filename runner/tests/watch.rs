//! Watching a run changes nothing in it: a watcher handed the endpoints after every round of
//! a simulator run sees them move, and the run's result is bit for bit the unwatched one's.

use xrdma::Time;
use xrdma_runner::request::{run_sim, Backend, RunRequest};
use xrdma_runner::watch::{LiveStat, Watch};

/// Wants the endpoints after every round.
#[derive(Default)]
struct Every {
    taken: Vec<(u64, u64)>,
}

impl Watch for Every {
    fn due(&mut self, _now: Time) -> bool {
        true
    }
    fn take(&mut self, stat: LiveStat) {
        // The receiver's bytes received so far, summed over its connections.
        let rx = stat.endpoints[0]
            .snapshot
            .connections
            .iter()
            .map(|c| c.stats.recv_bytes)
            .sum();
        self.taken.push((stat.at_ps, rx));
    }
}

const SCENARIO: &str = "name: watched
workload:
  incast:
    senders: 4
    receiver: 0
    messages:
      - { size: 16KiB, count: 2 }
      - { size: 200KiB, count: 1 }
sim:
  seed: 3
  ecn: { kmin: 20KB, kmax: 80KB, pmax: 0.2 }
  pfc: {}
";

#[test]
fn a_watched_run_is_the_unwatched_run() {
    let sc = xrdma_scenario::parse(SCENARIO, std::path::Path::new("w.yaml")).expect("parses");
    let plain = run_sim(&sc).expect("runs");
    let mut w = Every::default();
    let watched = RunRequest::new(sc.clone(), Backend::Sim)
        .run_watched(&mut w)
        .expect("runs")
        .result;
    let strip = |r: &xrdma_reports::RunResult| {
        let mut v = serde_json::to_value(r).expect("serialises");
        if let Some(o) = v.as_object_mut() {
            o.remove("wall-clock");
        }
        v
    };
    assert_eq!(strip(&plain), strip(&watched));
    assert!(w.taken.len() > 100, "{} rounds watched", w.taken.len());
    // Time and the receiver's bytes only grow, from nothing to everything.
    assert!(w
        .taken
        .windows(2)
        .all(|p| p[0].0 <= p[1].0 && p[0].1 <= p[1].1));
    let total = 4 * (2 * 16 * 1024 + 200 * 1024);
    assert!(w.taken.first().map(|t| t.1) < Some(total));
    assert_eq!(w.taken.last().map(|t| t.1), Some(total));
}
