//! End-to-end runs of the shipped scenarios on the simulator.

use std::path::Path;
use xrdma_reports::RunResult;
use xrdma_runner::request::run_sim;

fn run(path: &str, seed: Option<u64>) -> RunResult {
    let mut sc = xrdma_scenario::load(Path::new(env!("CARGO_MANIFEST_DIR")).join(path).as_path())
        .expect("scenario loads");
    if let Some(seed) = seed {
        let mut s = sc.sim_or_default();
        s.seed = seed;
        sc.sim = Some(s);
    }
    run_sim(&sc).expect("run succeeds")
}

#[test]
fn incast_8_delivers_everything_intact_and_no_faster_than_ideal() {
    let r = run("scenarios/incast-8.yaml", None);
    // 8 senders x (4 + 1) messages.
    assert_eq!(r.messages.len(), 40);
    assert_eq!(r.delivery.delivered, 40);
    assert_eq!(r.delivery.digest_mismatches, 0);
    assert_eq!(r.delivery.duplicates, 0);
    assert_eq!(r.delivery.missing, 0);
    assert!(r.messages.iter().all(|m| m.completed_ps.is_some()));
    assert_eq!(
        r.network.drops,
        Some(0),
        "PFC is on: the fabric is lossless"
    );
    let ideal = r.ideal.as_ref().expect("T* is defined");
    // T* = N*S*(1 + 82/1024)*8/100e9 + base RTT with N = 8, S = 4*64 KiB + 1 MiB = 1310720 B.
    let serialization_ps = (8u128 * 1_310_720 * (1024 + 82) * 8 * 1_000_000_000_000)
        .div_ceil(1024 * 100_000_000_000) as u64;
    assert_eq!(ideal.t_star_ps, serialization_ps + ideal.base_rtt_ps);
    let last = r
        .messages
        .iter()
        .filter_map(|m| m.completed_ps)
        .max()
        .unwrap();
    assert!(
        last >= ideal.t_star_ps,
        "last completion {last} ps is below T* {} ps",
        ideal.t_star_ps
    );
    assert!(r.validate().is_empty(), "{:?}", r.validate());
}

fn without_wall_clock(r: &RunResult) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap();
    v.as_object_mut().unwrap().remove("wall-clock");
    v
}

#[test]
fn same_seed_gives_identical_results_and_another_seed_differs() {
    let a = run("scenarios/incast-8.yaml", Some(7));
    let b = run("scenarios/incast-8.yaml", Some(7));
    assert_eq!(
        serde_json::to_string(&without_wall_clock(&a)).unwrap(),
        serde_json::to_string(&without_wall_clock(&b)).unwrap()
    );
    let c = run("scenarios/incast-8.yaml", Some(8));
    assert!(
        a.network.ecn_marks > Some(0),
        "the 8:1 incast crosses Kmin, so marking is random"
    );
    assert_ne!(
        a.sim.as_ref().unwrap().trace_hash,
        c.sim.as_ref().unwrap().trace_hash
    );
}

#[test]
fn a_leaf_spine_incast_with_dcqcn_delivers_everything() {
    // 2 leaves x 4 hosts behind 2 spines: host 0 receives from the 7 others, 6 of them across
    // the spines; DCQCN and ECN on, PFC on.
    let yaml = "name: ls
workload:
  incast:
    senders: 7
    receiver: 0
    messages:
      - { size: 200KiB, count: 2 }
sim:
  topology: { leaf-spine: { leaves: 2, spines: 2, hosts-per-leaf: 4 } }
  ecn: { kmin: 40KB, kmax: 160KB, pmax: 0.2 }
  pfc: {}
  dcqcn: {}
";
    let sc = xrdma_scenario::parse(yaml, Path::new("ls.yaml")).expect("parses");
    let r = run_sim(&sc).expect("runs");
    assert_eq!(r.delivery.delivered, 14);
    assert_eq!(
        r.delivery.missing + r.delivery.digest_mismatches + r.delivery.duplicates,
        0
    );
    assert_eq!(r.network.drops, Some(0));
    assert!(
        r.network.cnps > Some(0),
        "7 senders into one 100 Gbps port cross Kmin = 40 KB"
    );
}

#[test]
fn streamed_delivery_checks_the_same_bytes_at_the_same_times() {
    // Delivering fragments instead of whole messages changes nothing on the wire, so every
    // message record (completion and delivery times) is identical, and every digest matches.
    let whole = run("scenarios/incast-8.yaml", None);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/incast-8.yaml");
    let mut sc = xrdma_scenario::load(&path).expect("scenario loads");
    sc.xrdma.deliver_fragments = true;
    let streamed = run_sim(&sc).expect("run succeeds");
    assert_eq!(streamed.delivery.delivered, 40);
    assert_eq!(streamed.messages, whole.messages);
    assert_eq!(
        streamed.sim.unwrap().trace_hash,
        whole.sim.unwrap().trace_hash
    );
}

#[test]
fn large_messages_cross_the_simulator_without_a_copy() {
    // incast-8: 8 senders x (4 x 64 KiB + 1 MiB), every message above the 4 KiB eager limit.
    // The run registers its payload block in place: fragments are written from it and the
    // receiver is lent slices of it; only control frames are staged and copied out.
    for seed in [1, 2, 3] {
        let r = run("scenarios/incast-8.yaml", Some(seed));
        assert_eq!(r.delivery.delivered, 40, "seed {seed}");
        let payload: u64 = 8 * (4 * 64 * 1024 + 1024 * 1024);
        let sum = |f: fn(&xrdma::EndpointResources) -> Option<u64>| -> u64 {
            let eps = r.endpoints.as_ref().expect("endpoints recorded");
            eps.iter().filter_map(|e| f(&e.snapshot.resources)).sum()
        };
        assert_eq!(sum(|x| x.sent_in_place_bytes), payload, "seed {seed}");
        assert_eq!(sum(|x| x.lent_out_bytes), payload, "seed {seed}");
        // RTS and CTS frames only: well under 1 % of the payload.
        assert!(sum(|x| x.staged_bytes) * 100 < payload, "seed {seed}");
        assert!(sum(|x| x.copied_out_bytes) * 100 < payload, "seed {seed}");
    }
}
