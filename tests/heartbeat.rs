//! A heartbeat beside the workload (`heartbeat:`): over xrdma and TCP, a beat to the incast's
//! receiver waits behind the incast's queue, a beat between two hosts outside it does not,
//! and the workload runs as it does without one.

mod common;

use common::{all_delivered, last_completion};
use std::path::Path;
use xrdma_reports::{HeartbeatRecord, RunResult};
use xrdma_runner::request::run_sim;
use xrdma_scenario::{Heartbeat, Scenario, Stack};

const SEEDS: [u64; 4] = [1, 2, 3, 4];

fn run(stack: Stack, seed: u64, beat: Option<Heartbeat>) -> RunResult {
    let mut sc: Scenario =
        xrdma_scenario::load(Path::new("scenarios/incast-8.yaml")).expect("loads");
    sc.stack = stack;
    sc.heartbeat = beat;
    let mut sim = sc.sim_or_default();
    sim.seed = seed;
    sc.sim = Some(sim);
    run_sim(&sc).expect("runs")
}

fn beat(from: u32, to: u32) -> Option<Heartbeat> {
    Some(Heartbeat {
        from,
        to,
        every: xrdma::Span::from_us(20),
        size: 64,
    })
}

fn record(r: &RunResult) -> &HeartbeatRecord {
    r.heartbeat.as_ref().expect("a heartbeat record")
}

#[test]
fn a_beat_to_the_incasts_receiver_waits_behind_its_queue_and_a_bystanders_does_not() {
    for stack in [Stack::Xrdma, Stack::Tcp] {
        for seed in SEEDS {
            // Host 9 is outside the incast (hosts 0..=8); so is host 10.
            let to_receiver = run(stack, seed, beat(9, 0));
            let bystander = run(stack, seed, beat(9, 10));
            for r in [&to_receiver, &bystander] {
                all_delivered(r);
                let h = record(r);
                // A beat every 20 µs while the incast runs, every one answered (the
                // simulator runs out its events after the workload settles).
                let expected = last_completion(r) / 20_000_000;
                assert!(
                    h.samples.len() as u64 >= expected && h.samples.len() as u64 <= expected + 2,
                    "{stack} seed {seed}: {} beats over {} ps",
                    h.samples.len(),
                    last_completion(r)
                );
                assert!(
                    h.samples.iter().all(|s| s.rtt_ps.is_some()),
                    "{stack} {seed}"
                );
            }
            let (busy, quiet) = (
                record(&to_receiver).sorted_rtts(),
                record(&bystander).sorted_rtts(),
            );
            let (busy_max, quiet_max) = (busy[busy.len() - 1], quiet[quiet.len() - 1]);
            // Two hosts outside the incast: every beat is an unloaded round trip (a few µs);
            // to the receiver: behind its downlink's queue, tens of µs or more.
            assert!(
                quiet_max < 10_000_000,
                "{stack} seed {seed}: bystander {quiet_max} ps"
            );
            assert!(
                busy_max > 5 * quiet_max,
                "{stack} seed {seed}: to the receiver {busy_max} ps, bystander {quiet_max} ps"
            );
        }
    }
}

#[test]
fn the_workload_runs_as_it_does_without_a_heartbeat_between_bystanders() {
    // The bystanders' beats cross no link of the incast: its messages complete at the same
    // instants, at every seed.
    for seed in SEEDS {
        let plain = run(Stack::Xrdma, seed, None);
        let beside = run(Stack::Xrdma, seed, beat(9, 10));
        let times = |r: &RunResult| -> Vec<Option<u64>> {
            r.messages.iter().map(|m| m.completed_ps).collect()
        };
        assert_eq!(times(&plain), times(&beside), "seed {seed}");
        assert!(plain.heartbeat.is_none());
        // The beats to a receiver do not make their host one of the incast's senders.
        let to_receiver = run(Stack::Xrdma, seed, beat(9, 0));
        let senders = |r: &RunResult| -> Vec<u32> {
            r.timeseries
                .as_ref()
                .map(|t| t.senders.iter().map(|s| s.host).collect())
                .unwrap_or_default()
        };
        assert_eq!(senders(&to_receiver), (1..=8).collect::<Vec<u32>>());
        let summary = xrdma_reports::summary_table(&beside);
        assert!(
            summary.contains("heartbeat  host 9 -> host 10 every 20.000 µs"),
            "{summary}"
        );
    }
}

#[test]
fn a_sweep_lists_the_heartbeats_p50_and_p99() {
    let r = run(Stack::Xrdma, 1, beat(9, 0));
    let h = xrdma_cluster::sweep::index::Headline::of(&r);
    let rtts = record(&r).sorted_rtts();
    let q = |p| xrdma_reports::percentile::nearest_rank(&rtts, p);
    assert_eq!((h.heartbeat_p50_ps, h.heartbeat_p99_ps), (q(50.0), q(99.0)));
    assert!(h.heartbeat_p99_ps.is_some());
    let plain = xrdma_cluster::sweep::index::Headline::of(&run(Stack::Xrdma, 1, None));
    assert_eq!(
        (plain.heartbeat_p50_ps, plain.heartbeat_p99_ps),
        (None, None)
    );
}
