//! End-to-end runs of the open-loop and echo workloads on the simulator.

use std::path::Path;
use xrdma_reports::metrics::{ideal_fct_ps, slowdown};
use xrdma_reports::{LatencySummary, RunResult};
use xrdma_runner::request::run_sim;
use xrdma_scenario::Workload;

const US: u64 = 1_000_000;
const MS: u64 = 1_000_000_000;

fn load(path: &str) -> xrdma_scenario::Scenario {
    xrdma_scenario::load(Path::new(env!("CARGO_MANIFEST_DIR")).join(path).as_path())
        .expect("scenario loads")
}

fn parse(yaml: &str) -> xrdma_scenario::Scenario {
    xrdma_scenario::parse(yaml, Path::new("test.yaml")).expect("scenario parses")
}

fn assert_slowdown_at_least_one(r: &RunResult) {
    let ideal = r
        .path
        .ideal(0)
        .expect("the star fabric states the path model");
    for m in &r.messages {
        if let Some(s) = slowdown(m, &ideal) {
            assert!(
                s >= 1.0,
                "message {}/{} has slowdown {s}: {m:?}",
                m.sender,
                m.index
            );
        }
    }
}

#[test]
fn a_100ms_receiver_stall_shows_in_the_open_loop_p99() {
    // 10 000 msg/s for 300 ms, the receiver stalled over [100, 200) ms. A message arriving at
    // t in the stall completes just after 200 ms, so its latency is about 200 ms − t: the
    // ~1000 stalled arrivals have latencies spread evenly over (0, 100] ms. Latency above x ms
    // needs an arrival in [100, 200 − x) ms: (100 − x)·10 of the 3000 messages. The p99 (the
    // 30th largest) therefore sits at x ≈ 100 − 30/10 = 97 ms; Poisson noise on those 30
    // arrivals is about ±√30/10 ≈ ±0.6 ms.
    let r = run_sim(&load("scenarios/open-loop-stall.yaml")).unwrap();
    assert!(r.validate().is_empty(), "{:?}", r.validate());
    assert_eq!(r.delivery.missing + r.delivery.digest_mismatches, 0);
    assert!(r.unfinished.is_empty());
    // 3000 expected arrivals, σ = √3000 ≈ 55: within 5σ.
    let n = r.messages.len() as i64;
    assert!((n - 3000).abs() <= 275, "{n} arrivals");
    let s = LatencySummary::from_records(&r.messages);
    let p99 = s.p99_ps.unwrap();
    assert!((90 * MS..=101 * MS).contains(&p99), "p99 {p99} ps");
    // Nothing waits longer than the stall plus a little.
    assert!(s.max_ps.unwrap() <= 101 * MS);
    assert_slowdown_at_least_one(&r);
}

#[test]
fn without_the_stall_the_open_loop_p99_stays_at_the_base_latency() {
    let mut sc = load("scenarios/open-loop-stall.yaml");
    let Workload::OpenLoop(ol) = &mut sc.workload else {
        panic!("open-loop")
    };
    ol.stalls.clear();
    let r = run_sim(&sc).unwrap();
    assert_eq!(r.delivery.delivered, r.messages.len() as u64);
    // Ideal FCT of a 4 KiB message alone (T* with N·S = 4096 B): 4096·1106/1024 B at
    // 100 Gb/s = 353.92 ns plus the base RTT (4 µs of propagation and a few header
    // serializations). At 10 k/s of 4 KiB the link is 0.3 % busy, so even the p99 waits
    // behind at most a message or two: within 1.2 × the ideal.
    let ideal = ideal_fct_ps(&r.path.ideal(0).unwrap(), 4096).unwrap();
    assert!((4 * US..5 * US).contains(&ideal), "{ideal}");
    let s = LatencySummary::from_records(&r.messages);
    let (min, p99) = (s.min_ps.unwrap(), s.p99_ps.unwrap());
    assert!(min >= ideal, "min {min} below the ideal {ideal}");
    assert!(
        p99 as f64 <= 1.2 * ideal as f64,
        "p99 {p99} vs ideal {ideal}"
    );
    assert_slowdown_at_least_one(&r);
}

#[test]
fn echo_at_concurrency_one_on_an_idle_link_takes_two_one_way_times() {
    // One client, 64 B requests and responses. One way, a message is one packet of
    // 64 + 16 (xrdma header) + 82 (wire overhead) = 162 B, serialized on the host link and
    // again at the switch egress (store and forward) and propagated over two 1 µs links:
    // 2·1 µs + 2·162·8/100e9 s = 2000 + 25.92 ns = 2025.92 ns. The ACK of the request rides
    // in the response's header, so an exchange is two one-way times: 4051.84 ns. The ±1 %
    // band (±40 ns) leaves room for the few bytes of ACK fields a header may carry.
    let r = run_sim(&parse(
        "name: echo-idle
workload:
  echo: { clients: 1, server: 0, concurrency: 1, requests: 200, request-size: 64B }
sim: { link-rate: 100Gbps, link-delay: 1us, mtu: 1KiB, header-bytes: 82, pfc: {} }
",
    ))
    .unwrap();
    assert_eq!(r.delivery.delivered, 200);
    assert_eq!(r.workload.kind, xrdma_reports::WorkloadKind::Echo);
    let expect = 2 * (2 * US + 2 * 162 * 8 * 10); // 1 B at 100 Gb/s = 80 ps
    let s = LatencySummary::from_records(&r.messages);
    let (min, max) = (s.min_ps.unwrap(), s.max_ps.unwrap());
    assert!(
        min as f64 >= 0.99 * expect as f64 && max as f64 <= 1.01 * expect as f64,
        "latency {min}..{max} ps, expected {expect} ps ± 1 %"
    );
    // Back to back: request k+1 is intended when response k arrived.
    let m = &r.messages;
    assert_eq!(m[1].intended_ps, m[0].completed_ps.unwrap());
    assert!(m.iter().all(|x| x.response_bytes == Some(64)));
    assert_slowdown_at_least_one(&r);
}

#[test]
fn the_shipped_echo_scenario_delivers_everything_with_slowdown_at_least_one() {
    let r = run_sim(&load("scenarios/echo.yaml")).unwrap();
    assert!(r.validate().is_empty(), "{:?}", r.validate());
    // 4 clients × 1000 requests.
    assert_eq!(r.delivery.delivered, 4000);
    assert_slowdown_at_least_one(&r);
    // Every client issues the same number of requests, so shares differ only by the size mix.
    let j = xrdma_reports::metrics::goodput_fairness(&r.messages).unwrap();
    assert!(j > 0.9 && j <= 1.0, "{j}");
}

#[test]
fn messages_not_done_by_the_deadline_are_listed_without_latency() {
    // 50 arrivals at 10 k/s (about 5 ms); the receiver stops at 1 ms for 10 s, and the run
    // drains for only 10 ms after the last arrival: everything intended after the stall
    // began (beyond the few already ACKed) is unfinished.
    let r = run_sim(&parse(
        "name: cut
workload:
  open-loop:
    senders: 1
    receiver: 0
    rate: 10k/s
    count: 50
    size: 1KiB
    stall: { host: 0, at: 1ms, for: 10s }
    drain: 10ms
sim: { link-rate: 100Gbps, link-delay: 1us, pfc: {} }
",
    ))
    .unwrap();
    assert_eq!(r.messages.len(), 50);
    let undone: Vec<_> = r
        .messages
        .iter()
        .filter(|m| m.completed_ps.is_none())
        .collect();
    assert!(undone.len() >= 30, "{} unfinished", undone.len());
    assert_eq!(r.unfinished.len(), undone.len());
    for (u, m) in r.unfinished.iter().zip(&undone) {
        assert_eq!(
            (u.sender, u.index, u.intended_ps),
            (m.sender, m.index, m.intended_ps)
        );
        assert!(m.intended_ps >= MS - 20 * US, "{m:?}");
    }
    let s = LatencySummary::from_records(&r.messages);
    assert_eq!(s.undelivered, undone.len() as u64);
    let table = xrdma_reports::summary_table(&r);
    assert!(
        table.contains(&format!("unfinished {} message(s)", undone.len())),
        "{table}"
    );
    // The run stopped at the deadline, not at the stall's end.
    assert!(r.sim.unwrap().simulated_ps < 100 * MS);
}

#[test]
fn open_loop_runs_are_deterministic() {
    let sc = load("scenarios/open-loop-stall.yaml");
    let a = run_sim(&sc).unwrap();
    let b = run_sim(&sc).unwrap();
    assert_eq!(a.messages, b.messages);
    assert_eq!(a.sim.unwrap().trace_hash, b.sim.unwrap().trace_hash);
}

#[test]
fn coalesced_small_messages_behind_a_stall_all_complete_exactly_once() {
    // Two senders of 64 B and 1 KiB messages at 10 k/s each into a receiver stalled for
    // 100 ms: when it wakes, the backlog leaves in many coalesced eager frames in flight at
    // once. Every message delivered must also complete at its sender (once), and the run's
    // own check must agree. Before each in-flight frame owned its message ids, tens of
    // delivered messages never completed and the run still passed.
    let yaml = "name: coalesced-stall
workload:
  open-loop:
    senders: 2
    receiver: 0
    rate: 10k/s
    duration: 150ms
    sizes: [ { size: 64B, weight: 1 }, { size: 1KiB, weight: 1 } ]
    stall: { host: 0, at: 20ms, for: 100ms }
    drain: 200ms
sim:
  seed: 3
  pfc: {}
";
    let r = run_sim(&parse(yaml)).unwrap();
    assert!(r.messages.len() > 2000, "{} messages", r.messages.len());
    assert!(r.unfinished.is_empty(), "{} unfinished", r.unfinished.len());
    assert!(r.validate().is_empty(), "{:?}", r.validate());
    assert_eq!(r.delivery.delivered, r.messages.len() as u64);
    assert_eq!(r.delivery.duplicates + r.delivery.missing, 0);
}

#[test]
fn without_receive_credits_a_stalled_receiver_answers_rnr_and_nothing_is_lost() {
    // With receive credits (the default) a sender never has more than half the receiver's
    // receive depth in flight, so a stall costs no RNR NAK. `receive-credits: false` lets the
    // senders post past them: the stalled receiver's NIC consumes its 16 posted receives,
    // then answers RNR NAKs, the requesters retry (rnr-retry 7: forever) every min RNR timer,
    // and once the receiver runs again everything arrives, once, intact.
    let yaml = |credits: bool| {
        format!(
            "name: rnr
workload:
  open-loop:
    senders: 2
    receiver: 0
    rate: 20k/s
    duration: 30ms
    size: 1KiB
    stall: {{ host: 0, at: 5ms, for: 10ms }}
    drain: 50ms
xrdma:
  recv-depth: 16
  receive-credits: {credits}
sim:
  seed: 5
  pfc: {{}}
"
        )
    };
    let with = run_sim(&parse(&yaml(true))).unwrap();
    assert_eq!(with.network.rnr_naks, Some(0));
    let without = run_sim(&parse(&yaml(false))).unwrap();
    assert!(without.network.rnr_naks > Some(0), "{:?}", without.network);
    for r in [&with, &without] {
        assert!(r.validate().is_empty(), "{:?}", r.validate());
        assert!(r.unfinished.is_empty());
        assert_eq!(r.delivery.delivered, r.messages.len() as u64);
        assert_eq!(r.delivery.duplicates + r.delivery.missing, 0);
    }
}

#[test]
fn echo_requests_never_issued_by_the_time_limit_count_as_missing() {
    // 2 clients × 100 requests, one outstanding each; the server stalls at 50 µs for 10 s and
    // the run stops at its 1 ms time limit: most requests were never issued (a closed loop
    // issues the next one only when a response comes back). Every one of the 200 is a record,
    // the unanswered ones missing and unfinished, so the run cannot pass as complete.
    let r = run_sim(&parse(
        "name: cut-echo
workload:
  echo:
    clients: 2
    server: 0
    concurrency: 1
    requests: 100
    request-size: 1KiB
    response-size: 64B
    stall: { host: 0, at: 50us, for: 10s }
    time-limit: 1ms
sim: { link-rate: 100Gbps, link-delay: 1us, pfc: {} }
",
    ))
    .unwrap();
    assert_eq!(r.messages.len(), 200, "one record per intended request");
    let answered = r
        .messages
        .iter()
        .filter(|m| m.completed_ps.is_some())
        .count() as u64;
    assert!(answered > 0 && answered < 100, "{answered} answered");
    assert_eq!(r.delivery.delivered, answered);
    assert_eq!(r.delivery.missing, 200 - answered);
    assert_eq!(r.unfinished.len() as u64, 200 - answered);
    assert!(r.messages.iter().all(|m| m.response_bytes == Some(64)));
    let per_client = |c: u32| r.messages.iter().filter(|m| m.sender == c).count();
    assert_eq!((per_client(1), per_client(2)), (100, 100));
}
