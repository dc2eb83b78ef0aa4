//! Choosing hosts, decoding records and the table, on a small simulator run.

use super::prometheus::tests::small_run;
use super::{render, select, Format};
use xrdma_reports::HostEndpoint;

#[test]
fn the_default_is_every_host_with_a_connection() {
    let eps = small_run();
    assert_eq!(eps.len(), 3);
    let chosen = select(&eps, &[]).expect("selects");
    assert_eq!(chosen.iter().map(|e| e.host).collect::<Vec<_>>(), [0, 1, 2]);
    let one = select(&eps, &[2]).expect("selects");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].host, 2);
}

#[test]
fn an_unknown_host_is_an_error_naming_it() {
    let eps = small_run();
    let e = select(&eps, &[0, 7]).expect_err("host 7 does not exist");
    assert!(e.to_string().contains("--host 7"), "{e}");
    assert!(e.to_string().contains("hosts 0–2"), "{e}");
    // Named twice, shown once, in host order.
    let twice = select(&eps, &[2, 0, 2]).expect("selects");
    assert_eq!(twice.iter().map(|e| e.host).collect::<Vec<_>>(), [0, 2]);
}

#[test]
fn a_malformed_record_is_refused_where_it_is_read() {
    let eps = small_run();
    let mut v = serde_json::to_value(&eps[1]).expect("serialises");
    v["connections"][0]["send-bytes"] = serde_json::json!("many");
    let e = serde_json::from_value::<HostEndpoint>(v).expect_err("send-bytes is not a number");
    let msg = e.to_string();
    assert!(msg.contains("\"many\", expected u64"), "{msg}");
}

#[test]
fn a_record_keeps_its_keys_in_name_order_as_results_always_did() {
    let eps = small_run();
    let text = serde_json::to_string(&eps[0]).expect("serialises");
    // The host first, then the snapshot as a `serde_json::Value` writes it: every object's
    // keys sorted.
    let value = serde_json::to_value(&eps[0].snapshot).expect("serialises");
    let sorted = serde_json::to_string(&value).expect("serialises");
    assert_eq!(text, format!("{{\"host\":0,{}", &sorted[1..]));
    let back: HostEndpoint = serde_json::from_str(&text).expect("reads back");
    assert_eq!(back, eps[0]);
}

#[test]
fn the_table_has_a_row_per_endpoint_and_connection() {
    let eps = small_run();
    let refs: Vec<&HostEndpoint> = eps.iter().collect();
    let text = render(&refs, Format::Table).expect("renders");
    let (ep_part, conn_part) = text.split_once("\nconnections\n").expect("two tables");
    // The header, then hosts 0, 1, 2.
    assert_eq!(ep_part.lines().skip(1).count(), 4, "{text}");
    // The receiver's two connections and each sender's one.
    assert_eq!(conn_part.lines().count(), 5, "{text}");
    let header: Vec<&str> = conn_part
        .lines()
        .next()
        .expect("header")
        .split_whitespace()
        .collect();
    let rx: Vec<&str> = conn_part
        .lines()
        .nth(1)
        .expect("a row")
        .split_whitespace()
        .collect();
    assert_eq!(header.len(), rx.len(), "{text}");
    let col = |name: &str| header.iter().position(|h| *h == name).expect("column");
    let c = &eps[0].snapshot.connections[0];
    assert_eq!(rx[col("host")], "0");
    assert_eq!(rx[col("state")], "established");
    assert_eq!(rx[col("qp")], "RTS");
    assert_eq!(rx[col("recv-B")], c.stats.recv_bytes.to_string());
    assert_eq!(rx[col("msg-rx")], "4");
    assert_eq!(rx[col("retx")], "0");
}

#[test]
fn json_round_trips_into_the_records() {
    let eps = small_run();
    let refs: Vec<&HostEndpoint> = eps.iter().collect();
    let text = render(&refs, Format::Json).expect("renders");
    let back: Vec<HostEndpoint> = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, eps);
}

/// A scratch directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-stat-unit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

/// Bytes the receiver has received over all its connections.
fn received(eps: &[HostEndpoint]) -> u64 {
    eps[0]
        .snapshot
        .connections
        .iter()
        .map(|c| c.stats.recv_bytes)
        .sum()
}

#[test]
fn a_replay_shows_the_run_at_each_instant_and_ends_as_it_did() {
    use super::prometheus::tests::{small_result, SMALL};
    use xrdma::{Span, Time};
    let d = scratch("replay");
    let yaml = d.join("s.yaml");
    std::fs::write(&yaml, SMALL).expect("writes");
    let r = small_result();
    let end = Time::from_ps(r.sim.as_ref().expect("sim").simulated_ps);
    let asked = [
        Time::ZERO + Span::from_us(20),
        Time::ZERO + Span::from_us(5),
        end + Span::from_us(1),
    ];
    let rp = super::replay::replay(&yaml, &asked).expect("replays");
    // Sorted, the instant past the end unreached.
    assert_eq!(rp.unreached, [end + Span::from_us(1)]);
    assert_eq!(rp.ended, end);
    assert_eq!(rp.at.len(), 2);
    let (a5, t5, e5) = &rp.at[0];
    let (a20, t20, e20) = &rp.at[1];
    assert_eq!((*a5, *a20), (asked[1], asked[0]));
    assert!(t5 >= a5 && t20 >= a20, "taken at or after the instant");
    assert!(received(e5) <= received(e20));
    let final_eps = r.endpoints.expect("recorded");
    assert!(received(e20) <= received(&final_eps));
    assert_eq!(received(&final_eps), 2 * (3 * 1024 + 100 * 1024));
}

#[test]
fn a_recorded_run_replays_from_its_result_and_a_different_one_is_refused() {
    use super::prometheus::tests::small_result;
    use xrdma::{Span, Time};
    let d = scratch("recorded");
    let mut r = small_result();
    xrdma_reports::write_json(&d.join("result.json"), &r).expect("writes");
    let at = [Time::ZERO + Span::from_us(10)];
    let rp = super::replay::replay(&d, &at).expect("replays the recorded run");
    assert_eq!(rp.at.len(), 1);
    // A result whose trace hash this build does not reproduce.
    if let Some(s) = r.sim.as_mut() {
        s.trace_hash = "0000000000000000".into();
    }
    xrdma_reports::write_json(&d.join("result.json"), &r).expect("writes");
    let e = super::replay::replay(&d, &at).expect_err("a different run");
    assert!(e.to_string().contains("is not the recorded run's"), "{e}");
    // One without its scenario text.
    r.scenario_yaml = None;
    xrdma_reports::write_json(&d.join("result.json"), &r).expect("writes");
    let e = super::replay::replay(&d, &at).expect_err("nothing to replay");
    assert!(e.to_string().contains("records no scenario text"), "{e}");
}

#[test]
fn a_failed_connection_shows_no_qp_it_no_longer_has() {
    // The link to one sender goes down for longer than the RC retries last: its connection
    // fails, and its QP is reset for the QP cache.
    let sc = xrdma_scenario::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/faults/link-down-long.yaml"
    )))
    .expect("loads");
    let r = xrdma_runner::request::run_sim(&sc).expect("runs");
    let eps = r.endpoints.expect("recorded");
    let failed: Vec<_> = eps
        .iter()
        .flat_map(|e| &e.snapshot.connections)
        .filter(|c| c.state == "failed")
        .collect();
    assert!(!failed.is_empty(), "the scenario fails a connection");
    for c in failed {
        assert_eq!(c.qp_state, None, "{c:?}");
        assert_eq!(c.retransmitted_packets, None, "{c:?}");
        assert_eq!(c.rnr_retries, None, "{c:?}");
    }
    // The live ones are still observed.
    assert!(eps
        .iter()
        .flat_map(|e| &e.snapshot.connections)
        .any(|c| c.state == "established" && c.qp_state.as_deref() == Some("RTS")));
}

#[test]
fn a_live_json_answer_keeps_only_the_hosts_asked_for() {
    let r = super::prometheus::tests::small_result();
    let stat = xrdma_runner::watch::LiveStat {
        pid: 1,
        backend: xrdma_reports::Backend::Sim,
        at_ps: 5,
        endpoints: r.endpoints.expect("recorded"),
        device: None,
        placement: None,
        events: None,
    };
    let text = super::render_live(&stat, None, &[1], Format::Json).expect("renders");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let eps = v["endpoints"].as_array().expect("endpoints");
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0]["host"], 1);
    // An unknown host is an error here too.
    assert!(super::render_live(&stat, None, &[9], Format::Json).is_err());
}

#[test]
fn a_worker_far_from_its_device_is_flagged_and_an_unknown_node_is_not() {
    use xrdma_observe::placement::Placement;
    let mut p = Placement {
        tid: Some(41),
        cpu: Some(12),
        cpus_allowed: Some("8-15".into()),
        numa_node: Some(1),
        device: Some("mlx5_0".into()),
        device_numa_node: Some(0),
        far_node: Some(true),
    };
    let far = super::live::placement_line(&p);
    assert!(
        far.starts_with(
            "thread 41  cpu 12 (allowed 8-15)  numa node 1  device mlx5_0 numa node 0\n"
        ),
        "{far}"
    );
    assert!(
        far.contains("WARNING: the thread runs on NUMA node 1 and its device sits on node 0"),
        "{far}"
    );
    (p.device_numa_node, p.far_node) = (None, None);
    let unknown = super::live::placement_line(&p);
    assert!(
        unknown.contains("device mlx5_0 numa node -\n") && !unknown.contains("WARNING"),
        "{unknown}"
    );
}
