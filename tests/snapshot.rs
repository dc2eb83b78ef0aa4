//! Snapshot tests of a small run's summary table and result record: any change in behaviour
//! (timing, counters, delivery, the report's wording) shows in review as a diff of
//! `tests/snapshots/`. Wall-clock fields are the only ones removed; everything else is a pure
//! function of the scenario and its seed. After an intended change, review and accept the
//! new snapshots with `cargo insta review` (or `INSTA_UPDATE=always cargo test --test
//! snapshot`).

use std::path::Path;
use xrdma_runner::request::run_sim;

/// Two senders, small and large messages, ECN and PFC, no time series: small enough to read
/// whole in a review.
const SCENARIO: &str = "name: snapshot
workload:
  incast:
    senders: 2
    receiver: 0
    messages:
      - { size: 1KiB, count: 3 }
      - { size: 100KiB, count: 1 }
sim:
  seed: 11
  link-rate: 25Gbps
  ecn: { kmin: 100KB, kmax: 400KB, pmax: 0.2 }
  pfc: {}
  sample-interval: off
";

fn run() -> xrdma_reports::RunResult {
    let sc = xrdma_scenario::parse(SCENARIO, Path::new("snapshot.yaml")).expect("parses");
    let mut r = run_sim(&sc).expect("runs");
    r.wall_clock = xrdma_reports::WallClock {
        wall_seconds: 0.0,
        events_per_second: 0.0,
    };
    r
}

#[test]
fn summary_of_a_small_incast() {
    let r = run();
    assert!(r.validate().is_empty(), "{:?}", r.validate());
    insta::assert_snapshot!(xrdma_reports::summary_table(&r));
}

#[test]
fn result_of_a_small_incast() {
    let r = run();
    let mut v = serde_json::to_value(&r).expect("serializes");
    if let Some(o) = v.as_object_mut() {
        o.remove("wall-clock");
        o.remove("tool-version");
    }
    insta::assert_json_snapshot!(v);
}
