//! The exposition text is well formed and covers every counter a connection record holds.

use super::{render, CONN_METRICS, ENDPOINT_METRICS};
use std::collections::BTreeSet;
use xrdma_reports::HostEndpoint;

/// A two-sender incast's endpoints, as its result records them.
pub(crate) fn small_run() -> Vec<HostEndpoint> {
    let r = small_result();
    r.endpoints.expect("recorded")
}

/// The scenario of [`small_run`].
pub(crate) const SMALL: &str = "name: stat
workload:
  incast:
    senders: 2
    receiver: 0
    messages:
      - { size: 1KiB, count: 3 }
      - { size: 100KiB, count: 1 }
sim:
  seed: 5
  ecn: { kmin: 20KB, kmax: 80KB, pmax: 0.2 }
  pfc: {}
  sample-interval: off
";

/// [`small_run`]'s whole result, with its scenario text as `xrdma run` records it.
pub(crate) fn small_result() -> xrdma_reports::RunResult {
    let sc = xrdma_scenario::parse(SMALL, std::path::Path::new("stat.yaml")).expect("parses");
    let mut r = xrdma_runner::request::run_sim(&sc).expect("runs");
    r.scenario_yaml = Some(SMALL.to_string());
    r
}

#[test]
fn every_numeric_field_of_a_connection_record_is_exported() {
    let eps = small_run();
    let c = &eps[1].snapshot.connections[0];
    let v = serde_json::to_value(c).expect("serialises");
    let names: Vec<&str> = CONN_METRICS.iter().map(|m| m.0).collect();
    let mut missing = Vec::new();
    for (k, v) in v.as_object().expect("an object") {
        // Labels, not samples.
        if ["qpn", "peer"].contains(&k.as_str()) || !(v.is_number() || v.is_null()) {
            continue;
        }
        let stem = k.strip_suffix("-ps").unwrap_or(k).replace('-', "_");
        if !names.iter().any(|n| n.starts_with(&stem)) {
            missing.push(k.clone());
        }
    }
    assert!(missing.is_empty(), "no metric for {missing:?}");
}

#[test]
fn the_text_follows_the_exposition_format() {
    let eps = small_run();
    let refs: Vec<&HostEndpoint> = eps.iter().collect();
    let text = render(&refs);
    let mut typed = BTreeSet::new();
    let mut sampled = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("name and type");
            assert!(kind == "counter" || kind == "gauge", "{line}");
            assert_eq!(kind == "counter", name.ends_with("_total"), "{line}");
            assert!(typed.insert(name.to_string()), "TYPE twice: {line}");
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let v: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {line}"));
        assert!(v.is_finite() && v >= 0.0, "{line}");
        let name = &series[..series.find('{').expect("labels")];
        assert!(typed.contains(name), "sample before its TYPE: {line}");
        assert!(
            name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{line}"
        );
        assert!(series.ends_with('}'), "{line}");
        sampled.insert(name.to_string());
    }
    assert_eq!(typed.len(), CONN_METRICS.len() + ENDPOINT_METRICS.len() + 1);
    // Three hosts, two connections with every counter observed on the simulator: each
    // metric has a sample.
    assert_eq!(sampled, typed);
}

#[test]
fn samples_carry_the_records_values() {
    let eps = small_run();
    let refs: Vec<&HostEndpoint> = eps.iter().collect();
    let text = render(&refs);
    let rx = &eps[0].snapshot;
    let c = &rx.connections[0];
    let sample = |metric: &str| {
        let prefix = format!(
            "xrdma_conn_{metric}{{host=\"0\",conn=\"{}\",peer=\"{}\",qpn=\"{:#x}\"}} ",
            c.conn, c.peer, c.qpn
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix}"))
            .to_string()
    };
    assert_eq!(sample("recv_bytes_total"), c.stats.recv_bytes.to_string());
    assert_eq!(
        sample("messages_received_total"),
        c.stats.messages_received.to_string()
    );
    assert_eq!(c.stats.messages_received, 4);
    assert!(text.contains(&format!(
        "xrdma_qps_created_total{{host=\"0\"}} {}\n",
        rx.resources.qps_created
    )));
    assert!(text.contains("state=\"established\",qp_state=\"RTS\"} 1\n"));
}

#[test]
fn an_unobservable_counter_has_no_sample() {
    let mut eps = small_run();
    for e in &mut eps {
        for c in &mut e.snapshot.connections {
            c.retransmitted_packets = None;
            c.qp_state = None;
        }
    }
    let refs: Vec<&HostEndpoint> = eps.iter().collect();
    let text = render(&refs);
    assert!(text.contains("# TYPE xrdma_conn_retransmitted_packets_total counter"));
    assert!(!text.contains("xrdma_conn_retransmitted_packets_total{"));
    assert!(!text.contains("qp_state="));
    assert!(text.contains("xrdma_conn_rnr_retries_total{"));
}
