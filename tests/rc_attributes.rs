//! The `rc:` block reaches the simulator's NIC and the result: the attributes a run applied
//! are recorded in `transport.rc` and shown in the summary.

use std::path::Path;
use xrdma_reports::{RcAttributes, RunResult};
use xrdma_runner::request::run_sim;

fn run_text(text: &str) -> RunResult {
    let sc = xrdma_scenario::parse(text, Path::new("rc.yaml")).expect("parses");
    run_sim(&sc).expect("runs")
}

#[test]
fn the_shipped_rc_scenario_records_the_attributes_it_gave() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/rc-attributes.yaml");
    let sc = xrdma_scenario::load(&path).expect("loads");
    let r = run_sim(&sc).expect("runs");
    assert_eq!(r.delivery.delivered, 8);
    assert_eq!(r.delivery.missing, 0);
    let t = r.transport.as_ref().expect("the transport is reported");
    assert_eq!(
        t.rc,
        RcAttributes {
            local_ack_timeout: 14,
            local_ack_timeout_ns: Some(67_108_864),
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            min_rnr_timer_ns: 640_000,
            path_mtu: 1024,
        }
    );
    assert_eq!(t.capabilities, xrdma::Capabilities::ALL);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["transport"]["rc"]["local-ack-timeout"], 14);
    assert_eq!(v["transport"]["rc"]["min-rnr-timer"], 12);
    assert_eq!(v["transport"]["rc"]["path-mtu"], 1024);
    let summary = xrdma_reports::summary_table(&r);
    assert!(
        summary.contains(
            "rc QP      local ACK timeout 14 (67.109 ms)   retry-cnt 7   rnr-retry 7 (infinite)   \
             min RNR timer 12 (0.640 ms)   path MTU 1024 B"
        ),
        "{summary}"
    );
}

#[test]
fn the_path_mtu_and_the_defaults_are_what_the_nic_applies() {
    const BASE: &str = "name: rc\nworkload:\n  incast: { senders: 1, receiver: 0, messages: [ { size: 64KiB } ] }\nsim: { mtu: 1KiB, pfc: {}, sample-interval: off }\n";
    let plain = run_text(BASE);
    let t = plain.transport.expect("reported");
    // No `rc:` block: the defaults, the path MTU lowered to the 1 KiB ports.
    assert_eq!(
        (
            t.rc.local_ack_timeout,
            t.rc.retry_cnt,
            t.rc.rnr_retry,
            t.rc.min_rnr_timer,
            t.rc.path_mtu
        ),
        (12, 7, 7, 1, 1024)
    );
    let small = run_text(&format!("{BASE}rc: {{ path-mtu: 256 }}\n"));
    assert_eq!(small.transport.expect("reported").rc.path_mtu, 256);
    // 64 KiB in 256-byte packets: four times the 1 KiB packets, and more wire time.
    let (small_pkts, plain_pkts) = (
        small
            .network
            .data_packets
            .expect("the simulator counts packets"),
        plain
            .network
            .data_packets
            .expect("the simulator counts packets"),
    );
    assert!(
        small_pkts >= plain_pkts + 3 * 64,
        "{small_pkts} vs {plain_pkts}"
    );
    assert_eq!(small.delivery.delivered, 1);
}

#[test]
fn a_lossy_fabric_without_a_local_ack_timeout_is_warned_of_as_such() {
    // rc.local-ack-timeout 0 turns the NIC's retransmission timer off: the warning says so
    // instead of multiplying "no timeout" out to 18 446 744 s.
    let text = "name: no-rto
workload:
  incast: { senders: 2, receiver: 0, messages: [ { size: 4KiB } ] }
sim: { faults: { loss: { rate: 1% } } }
rc: { local-ack-timeout: 0 }
";
    let sc = xrdma_scenario::parse(text, Path::new("no-rto.yaml")).expect("parses");
    let checked = xrdma_runner::check::check(&sc).expect("checks");
    let w: Vec<&String> = checked
        .warnings
        .iter()
        .filter(|w| w.contains("local-ack-timeout"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", checked.warnings);
    assert!(
        w[0].contains("turns the NIC's local ACK timeout off"),
        "{}",
        w[0]
    );
    assert!(!w[0].contains("18446744"), "{}", w[0]);
}
