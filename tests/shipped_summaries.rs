//! The summary table of every shipped scenario that runs in a few seconds, as a snapshot: a
//! change in behaviour (timing, counters, delivery, the report's wording) shows in review as a
//! diff of `tests/snapshots/`, scenario by scenario. `ci/trace-baseline.sh` pins each shipped
//! scenario's trace hash and result digest, which say *that* something changed; these say
//! *what*. Wall-clock figures are zeroed; everything else is a pure function of the scenario
//! and its seed. After an intended change, review and accept the new snapshots with
//! `cargo insta review` (or `INSTA_UPDATE=always cargo test --test shipped_summaries`).

use std::path::Path;
use xrdma_runner::request::run_sim;

/// Shipped scenarios whose summaries are pinned here (paths from the workspace root, as the
/// summary prints them).
const PINNED: [&str; 24] = [
    "scenarios/cc/echo-shaped.yaml",
    "scenarios/echo.yaml",
    "scenarios/faults/corrupt.yaml",
    "scenarios/faults/link-down-long.yaml",
    "scenarios/faults/link-down.yaml",
    "scenarios/faults/loss.yaml",
    "scenarios/faults/slow-receiver.yaml",
    "scenarios/faults/small-buffer.yaml",
    "scenarios/faults/stop-reposting.yaml",
    "scenarios/host/incast-8-connectx6.yaml",
    "scenarios/host/incast-8-rxe-guest.yaml",
    "scenarios/incast-8.yaml",
    "scenarios/open-loop-stall.yaml",
    "scenarios/rc-attributes.yaml",
    "scenarios/rnr-stall.yaml",
    "scenarios/study/collapse.yaml",
    "scenarios/study/fan-in.yaml",
    "scenarios/study/per-hop.yaml",
    "scenarios/window/one-sender-100g.yaml",
    "scenarios/window/one-sender-25g.yaml",
    "scenarios/window/one-sender-400g.yaml",
    "scenarios/window/two-senders-25g-dcqcn.yaml",
    "scenarios/window/two-senders-25g-no-ecn.yaml",
    "scenarios/window/two-senders-25g.yaml",
];

/// Shipped scenarios left to the trace baseline alone: 256-sender incasts, each a minute or
/// more of a debug build's time.
const TOO_LONG: [&str; 7] = [
    "scenarios/cc/incast-256-budget.yaml",
    "scenarios/cc/incast-256-dcqcn-window.yaml",
    "scenarios/cc/incast-256-dcqcn.yaml",
    "scenarios/cc/incast-256-pfc-only.yaml",
    "scenarios/cc/incast-256-window.yaml",
    "scenarios/incast-256.yaml",
    "scenarios/study/heartbeat.yaml",
];

#[test]
fn every_shipped_scenario_is_pinned_or_named_too_long() {
    let listed = std::fs::read_to_string("ci/trace-hashes.txt").expect("the trace baseline");
    let mut shipped: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    shipped.sort_unstable();
    let mut ours: Vec<&str> = PINNED.iter().chain(TOO_LONG.iter()).copied().collect();
    ours.sort_unstable();
    assert_eq!(
        shipped, ours,
        "a shipped scenario is in neither list, or one is gone"
    );
}

#[test]
fn summary_of_each_shipped_scenario() {
    for path in PINNED {
        let sc = xrdma_scenario::load(Path::new(path)).expect("a shipped scenario loads");
        let mut r = run_sim(&sc).expect("a shipped scenario runs");
        r.wall_clock = xrdma_reports::WallClock {
            wall_seconds: 0.0,
            events_per_second: 0.0,
        };
        let name = path
            .trim_start_matches("scenarios/")
            .trim_end_matches(".yaml")
            .replace('/', "-");
        insta::assert_snapshot!(name, xrdma_reports::summary_table(&r));
    }
}
