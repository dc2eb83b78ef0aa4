//! One way to run: a `RunRequest`'s options mean what the scenario's own keys mean, and a
//! request that cannot run is refused by `check` before anything runs.

use std::path::Path;
use xrdma_runner::request::{Backend, RunRequest};

const SCENARIO: &str = "name: requested
workload:
  incast:
    senders: 3
    receiver: 0
    messages:
      - { size: 64KiB, count: 2 }
sim:
  seed: 3
  ecn: { kmin: 20KB, kmax: 80KB, pmax: 0.2 }
";

fn scenario(text: &str) -> xrdma_scenario::Scenario {
    xrdma_scenario::parse(text, Path::new("requested.yaml")).expect("parses")
}

#[test]
fn a_requested_seed_is_the_scenarios_own_seed() {
    for seed in [1, 2, 7] {
        let by_request = RunRequest::new(scenario(SCENARIO), Backend::Sim)
            .with_seed(seed)
            .run()
            .expect("runs")
            .result;
        let in_file = SCENARIO.replace("seed: 3", &format!("seed: {seed}"));
        let by_file = RunRequest::new(scenario(&in_file), Backend::Sim)
            .run()
            .expect("runs")
            .result;
        let hash = |r: &xrdma_reports::RunResult| r.sim.as_ref().map(|s| s.trace_hash.clone());
        assert_eq!(hash(&by_request), hash(&by_file), "seed {seed}");
        assert_eq!(by_request.scenario.seed, seed);
    }
}

#[test]
fn captures_and_trace_change_nothing_simulated() {
    let plain = RunRequest::new(scenario(SCENARIO), Backend::Sim)
        .run()
        .expect("runs");
    let mut req = RunRequest::new(scenario(SCENARIO), Backend::Sim);
    req.capture_hosts = Some(vec![0, 2]);
    req.trace = true;
    let seen = req.run().expect("runs");
    assert_eq!(seen.captures.len(), 2);
    assert!(seen.captures.iter().all(|c| c.packets > 0));
    assert!(plain.captures.is_empty());
    let hash =
        |o: &xrdma_runner::request::RunOutcome| o.result.sim.as_ref().map(|s| s.trace_hash.clone());
    assert_eq!(hash(&plain), hash(&seen));
}

#[test]
fn a_request_that_cannot_run_is_refused_before_it_runs() {
    let mut req = RunRequest::new(scenario(SCENARIO), Backend::Sim);
    req.capture_hosts = Some(vec![9]);
    let e = req.check().expect_err("host 9 does not exist").to_string();
    assert!(e.starts_with("--capture:"), "{e}");
    assert!(req.run().is_err());

    let mut req = RunRequest::new(scenario(SCENARIO), Backend::Verbs);
    req.capture_hosts = Some(vec![0]);
    let e = req
        .check()
        .expect_err("a device run has no capture")
        .to_string();
    // A build without the verbs backend says so first.
    assert!(
        e.contains("--backend sim") || e.contains("no verbs backend"),
        "{e}"
    );
}

#[test]
fn the_simulators_warnings_come_from_check() {
    // The shipped echo with trace on: the note that it has no send-side stages.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/echo.yaml");
    let sc = xrdma_scenario::load(&path).expect("the shipped echo loads");
    let mut req = RunRequest::new(sc, Backend::Sim);
    req.trace = true;
    let notes = req.check().expect("checks");
    assert!(
        notes.iter().any(|n| n.contains("no send-side stages")),
        "{notes:?}"
    );
}
