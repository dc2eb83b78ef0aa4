//! End-to-end tests of the result schema, summary, JSON files, CSV and SVG plot.

use std::path::PathBuf;

use xrdma_reports::*;

const US: u64 = 1_000_000; // ps per µs

fn msg(
    sender: u32,
    index: u32,
    size: u64,
    intended_ps: u64,
    completed_ps: Option<u64>,
) -> MessageRecord {
    MessageRecord {
        sender,
        receiver: 0,
        index,
        size,
        intended_ps,
        completed_ps,
        delivered_ps: completed_ps,
        response_bytes: None,
        stages: None,
    }
}

fn result(messages: Vec<MessageRecord>, ideal: Option<IdealCompletion>) -> RunResult {
    let delivered = messages.iter().filter(|m| m.completed_ps.is_some()).count() as u64;
    let missing = messages.len() as u64 - delivered;
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        scenario: ScenarioInfo {
            name: "incast-test".into(),
            path: "scenarios/incast-test.yaml".into(),
            backend: Backend::Sim,
            seed: 7,
            stack: Default::default(),
        },
        workload: WorkloadInfo {
            kind: WorkloadKind::Incast,
            senders: 4,
            receiver: 0,
            bytes_per_sender: 2000,
            messages_per_sender: 2,
        },
        messages,
        delivery: DeliveryCheck {
            delivered,
            digest_mismatches: 0,
            duplicates: 0,
            missing,
        },
        network: NetworkCounters {
            data_packets: Some(12),
            ecn_marks: Some(3),
            cnps: Some(2),
            pfc_xoff: Some(1),
            pfc_xon: Some(1),
            drops: Some(0),
            max_buffer_bytes: Some(3 * 1024 * 1024),
            max_egress_queue_bytes: Some(512 * 1024),
            retransmitted_packets: Some(0),
            retransmit_timeouts: Some(0),
            spurious_timeouts: Some(0),
            seq_naks: Some(0),
            rnr_naks: Some(0),
            lossless: Some(true),
            ..NetworkCounters::default()
        },
        path: ideal.map(|i| PathModel::of_ideal(&i)).unwrap_or_default(),
        ideal,
        sim: Some(SimInfo {
            events: 123_456,
            simulated_ps: 50 * US,
            trace_hash: "00ff".into(),
            host_model: None,
            captures: Vec::new(),
        }),
        errors: Vec::new(),
        scenario_yaml: None,
        timeseries: None,
        transport: None,
        endpoints: None,
        host_cpu: None,
        heartbeat: None,
        environment: None,
        unfinished: Vec::new(),
        figures: None,
        wall_clock: WallClock {
            wall_seconds: 0.25,
            events_per_second: 493_824.0,
        },
    }
}

/// Four delivered messages with latencies 10, 20, 30, 40 µs and one undelivered.
fn with_undelivered() -> Vec<MessageRecord> {
    vec![
        msg(1, 0, 1000, 0, Some(10 * US)),
        msg(2, 0, 1000, 5 * US, Some(25 * US)),
        msg(3, 0, 1000, 0, Some(30 * US)),
        msg(4, 0, 1000, 2 * US, Some(42 * US)),
        msg(4, 1, 1000, 2 * US, None),
    ]
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-reports-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn latency_summary_with_undelivered() {
    let s = LatencySummary::from_records(&with_undelivered());
    assert_eq!((s.count, s.delivered, s.undelivered), (5, 4, 1));
    // Sorted latencies [10, 20, 30, 40] µs (n = 4):
    // p50 rank ⌈2⌉ = 2 → 20; p90 rank ⌈3.6⌉ = 4 → 40; p99, p99.9 → rank 4 → 40.
    assert_eq!(s.min_ps, Some(10 * US));
    assert_eq!(s.p50_ps, Some(20 * US));
    assert_eq!(s.p90_ps, Some(40 * US));
    assert_eq!(s.p99_ps, Some(40 * US));
    assert_eq!(s.p999_ps, Some(40 * US));
    assert_eq!(s.max_ps, Some(40 * US));
    // mean = (10 + 20 + 30 + 40) / 4 = 25 µs.
    assert_eq!(s.mean_ps, Some(25.0 * US as f64));
}

#[test]
fn latency_summary_nothing_delivered_has_no_statistics() {
    let s = LatencySummary::from_records(&[msg(1, 0, 10, 0, None), msg(2, 0, 10, 0, None)]);
    assert_eq!((s.count, s.delivered, s.undelivered), (2, 0, 2));
    assert_eq!(s.min_ps, None);
    assert_eq!(s.p50_ps, None);
    assert_eq!(s.p999_ps, None);
    assert_eq!(s.max_ps, None);
    assert_eq!(s.mean_ps, None);
    let empty = LatencySummary::from_records(&[]);
    assert_eq!((empty.count, empty.p50_ps), (0, None));
}

#[test]
fn goodput_counts_delivered_bits_over_span_from_first_intended() {
    // Delivered: 4 × 1000 B = 32 000 bits. Span: first intended 0 → last completion 42 µs.
    // 32 000 bits / 42e-6 s = 761 904 761.9… bit/s.
    let g = goodput_bps(&with_undelivered()).unwrap();
    assert!((g - 32_000.0 / 42e-6).abs() < 1e-3, "{g}");
    assert_eq!(completion_span_ps(&with_undelivered()), Some(42 * US));
    // 2 × 1000 B in 10 µs = 16 000 bits / 1e-5 s = 1.6 Gb/s.
    let g = goodput_bps(&[
        msg(1, 0, 1000, 0, Some(5 * US)),
        msg(2, 0, 1000, US, Some(10 * US)),
    ]);
    assert_eq!(g, Some(1.6e9));
    assert_eq!(goodput_bps(&[msg(1, 0, 1000, 0, None)]), None);
    assert_eq!(goodput_bps(&[]), None);
    assert_eq!(goodput_bps(&[msg(1, 0, 1000, 3, Some(3))]), None); // zero span
}

#[test]
fn formatting_helpers() {
    assert_eq!(format_us(1_234_567_890), "1234.568"); // 1 234 567.890 ns → round half up
    assert_eq!(format_us(1_234_567_499), "1234.567");
    assert_eq!(format_us(499), "0.000");
    assert_eq!(format_us(500), "0.001");
    assert_eq!(format_us(US), "1.000");
    assert_eq!(format_bytes(1023), "1023 B");
    assert_eq!(format_bytes(2 * 1024 * 1024), "2.00 MiB");
    assert_eq!(format_bytes(1536), "1.50 KiB");
}

#[test]
fn ideal_completion_formula() {
    // 256 senders × 2 MiB = 536 870 912 B; 524 288 packets of 1024 B + 82 B overhead
    // = 579 862 528 B = 4 638 900 224 bits; at 100 Gb/s a bit takes 10 ps → 46 389 002 240 ps;
    // plus a 4 µs base RTT → 46 393 002 240 ps.
    let i =
        IdealCompletion::incast(256 * 2 * 1024 * 1024, 82, 1024, 100_000_000_000, 4 * US).unwrap();
    assert_eq!(i.t_star_ps, 46_393_002_240);
    assert_eq!(i.total_bytes, 536_870_912);
    // 8 bits at 3 bit/s = 2.666… s → rounded up to 2 666 666 666 667 ps.
    let i = IdealCompletion::incast(1, 0, 1024, 3, 0).unwrap();
    assert_eq!(i.t_star_ps, 2_666_666_666_667);
    assert_eq!(IdealCompletion::incast(1, 0, 0, 3, 0), None);
    assert_eq!(IdealCompletion::incast(1, 0, 1, 0, 0), None);
    assert_eq!(IdealCompletion::incast(u64::MAX, 0, 1, 1, 0), None); // overflows u64 ps
}

#[test]
fn summary_table_shows_undelivered_and_values() {
    let ideal = IdealCompletion::incast(4000, 0, 1000, 1_000_000_000, 0); // 32 000 bits at 1 Gb/s = 32 µs
    let t = summary_table(&result(with_undelivered(), ideal));
    assert!(t.contains("NOT COMPLETED: 1 of 5 messages"), "{t}");
    assert!(t.contains("p50"));
    assert!(t.contains("20.000 µs"), "{t}");
    assert!(t.contains("p99.9"));
    assert!(t.contains("40.000 µs"));
    assert!(t.contains("0.76 Gbps"), "{t}"); // 761.9 Mb/s from the goodput test
                                             // Span 42 µs / T* 32 µs = 1.3125.
    assert!(t.contains("T* 32.000 µs"), "{t}");
    assert!(t.contains("= 1.3125"), "{t}");
    assert!(t.contains("ECN marks 3"));
    assert!(t.contains("CNPs 2"));
    assert!(t.contains("PFC XOFF 1"));
    assert!(t.contains("drops 0"));
    assert!(t.contains("events 123456"));
    assert!(t.contains("simulated time 50.000 µs"));
    assert!(t.contains("0.250 s"));
    assert!(t.contains("0.49 M events/s"));

    let all = vec![msg(1, 0, 1000, 0, Some(10 * US))];
    let t = summary_table(&result(all, None));
    assert!(!t.contains("NOT COMPLETED"));
    assert!(t.contains("T* not defined"));

    let none = vec![msg(1, 0, 1000, 0, None)];
    let t = summary_table(&result(none, None));
    assert!(t.contains("NOT COMPLETED: 1 of 1"));
    assert!(t.contains("goodput    -"), "{t}");
}

#[test]
fn json_round_trip_and_format() {
    let d = tmp_dir("json");
    let r = result(
        with_undelivered(),
        IdealCompletion::incast(4000, 0, 1000, 1_000_000_000, 0),
    );
    let p = d.join("r.json");
    write_json(&p, &r).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.ends_with("}\n"));
    assert!(
        text.starts_with("{\n  \"schema-version\": 3,\n  \"tool-version\""),
        "{text}"
    );
    assert!(text.contains("\"wall-clock\": {"));
    assert!(text.contains("\"completed-ps\": null"));
    assert!(text.contains("\"max-egress-queue-bytes\": 524288"));
    assert_eq!(read_json(&p).unwrap(), r);

    // Same deterministic content with different wall clocks: identical once wall-clock is removed.
    let mut r2 = r.clone();
    r2.wall_clock.wall_seconds = 9.5;
    let strip = |r: &RunResult| {
        let mut v = serde_json::to_value(r).unwrap();
        v.as_object_mut().unwrap().remove("wall-clock");
        v
    };
    assert_eq!(strip(&r), strip(&r2));
    assert_ne!(r.to_json_string().unwrap(), r2.to_json_string().unwrap());
}

#[test]
fn json_non_finite_wall_clock_reads_back_as_nan() {
    let d = tmp_dir("nan");
    let mut r = result(with_undelivered(), None);
    r.wall_clock.events_per_second = f64::NAN;
    let p = d.join("r.json");
    write_json(&p, &r).unwrap();
    assert!(std::fs::read_to_string(&p)
        .unwrap()
        .contains("\"events-per-second\": null"));
    assert!(read_json(&p).unwrap().wall_clock.events_per_second.is_nan());
}

#[test]
fn read_json_rejects_other_schema_versions() {
    let d = tmp_dir("schema");
    let r = result(with_undelivered(), None);
    let mut v = serde_json::to_value(&r).unwrap();
    v["schema-version"] = serde_json::json!(SCHEMA_VERSION + 1);
    let p = d.join("future.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    match read_json(&p) {
        Err(ReportError::UnsupportedSchema {
            found, supported, ..
        }) => {
            assert_eq!(found, Some(u64::from(SCHEMA_VERSION) + 1));
            assert_eq!(supported, SCHEMA_VERSION);
        }
        other => panic!("expected UnsupportedSchema, got {other:?}"),
    }
    v.as_object_mut().unwrap().remove("schema-version");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    assert!(matches!(
        read_json(&p),
        Err(ReportError::UnsupportedSchema { found: None, .. })
    ));

    // Not an object, or a version that is not a number: no version either.
    for text in [
        "[1, {\"schema-version\": 1}]",
        "7",
        "{\"schema-version\": \"1\"}",
    ] {
        std::fs::write(&p, text).unwrap();
        assert!(
            matches!(
                read_json(&p),
                Err(ReportError::UnsupportedSchema { found: None, .. })
            ),
            "{text}"
        );
    }
    std::fs::write(&p, "{\"schema-version\": 1, \"tool-version\": 3}").unwrap();
    let e = read_json(&p).unwrap_err();
    assert!(matches!(e, ReportError::Json { .. }));
    // The parser's line and column are in the error's source, which error-chain printers show.
    let source = std::error::Error::source(&e)
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(source.contains("line 1"), "{e}: {source}");
    assert!(matches!(
        read_json(&d.join("absent.json")),
        Err(ReportError::Io { .. })
    ));
}

#[test]
fn a_completion_after_the_simulated_end_is_inconsistent() {
    // A result whose completion lies past the run's simulated time (50 µs) cannot come from
    // a run: `report` exited 0 on such a file, with a maximum of 18 446 744 µs.
    let r = result(vec![msg(1, 0, 10, US, Some(60 * US))], None);
    assert_eq!(
        r.validate(),
        vec![Inconsistency::CompletedAfterRunEnd {
            sender: 1,
            index: 0,
            at_ps: 60 * US,
            end_ps: 50 * US,
        }]
    );
    let at_end = result(vec![msg(1, 0, 10, US, Some(50 * US))], None);
    assert!(at_end.validate().is_empty(), "{:?}", at_end.validate());
}

#[test]
fn validate_reports_inconsistencies() {
    let good = result(with_undelivered(), None);
    assert!(good.validate().is_empty());

    let mut bad = result(vec![msg(1, 0, 10, 5 * US, Some(4 * US))], None);
    bad.delivery.delivered = 2;
    let problems = bad.validate();
    assert_eq!(
        problems,
        vec![
            Inconsistency::CompletedBeforeIntended {
                sender: 1,
                index: 0
            },
            Inconsistency::DeliveryCountMismatch {
                records: 1,
                delivered_plus_missing: 2
            },
        ]
    );

    // All delivered; last completion 10 µs after the first intended send (at 1 µs: 11 − 1),
    // but T* = 32 µs: physically impossible.
    let ideal = IdealCompletion::incast(4000, 0, 1000, 1_000_000_000, 0);
    let fast = result(vec![msg(1, 0, 10, US, Some(11 * US))], ideal);
    assert_eq!(
        fast.validate(),
        vec![Inconsistency::LastCompletionBelowIdeal {
            completion_span_ps: 10 * US,
            t_star_ps: 32 * US
        }]
    );
}

#[test]
fn a_drop_on_a_lossless_fabric_is_an_inconsistency() {
    let mut r = result(with_undelivered(), None);
    r.network.drops = Some(11);
    assert_eq!(
        r.validate(),
        vec![Inconsistency::DropsOnLosslessFabric { drops: 11 }]
    );
    // A lossy fabric may drop (go-back-N recovers); a backend that cannot tell is not judged.
    for lossless in [Some(false), None] {
        r.network.lossless = lossless;
        assert!(r.validate().is_empty());
    }
}

#[test]
fn validate_checks_delivery_against_completion_in_both_directions() {
    // Message 0 delivered, never ACKed; message 1 ACKed, never delivered; message 2 fine.
    let mut ms = vec![
        msg(1, 0, 10, 0, None),
        msg(1, 1, 10, 0, Some(5 * US)),
        msg(2, 0, 10, 0, Some(6 * US)),
    ];
    ms[0].delivered_ps = Some(3 * US);
    ms[1].delivered_ps = None;
    let mut r = result(ms, None);
    (r.delivery.delivered, r.delivery.missing) = (2, 1);
    let problems = r.validate();
    assert_eq!(
        problems,
        vec![
            Inconsistency::DeliveredNotCompleted {
                messages: vec![(1, 0)]
            },
            Inconsistency::CompletedNotDelivered {
                messages: vec![(1, 1)]
            },
        ]
    );
    assert_eq!(
        problems[0].to_string(),
        "1 message(s) delivered but never complete at the sender: sender 1 message 0"
    );
    // A long list names the first twenty and counts the rest.
    let ms: Vec<MessageRecord> = (0..25)
        .map(|i| {
            let mut m = msg(3, i, 10, 0, None);
            m.delivered_ps = Some(US);
            m
        })
        .collect();
    let r = result(ms, None);
    let text = r.validate()[0].to_string();
    assert!(text.starts_with("25 message(s) delivered"), "{text}");
    assert!(text.contains("sender 3 message 19 and 5 more"), "{text}");
    assert!(!text.contains("message 20"), "{text}");
}

#[test]
fn csv_rows() {
    let csv = messages_csv(&result(with_undelivered(), None));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "sender,receiver,index,size_bytes,intended_ps,delivered_ps,completed_ps,latency_ps"
    );
    assert_eq!(lines[2], "2,0,0,1000,5000000,25000000,25000000,20000000");
    assert_eq!(lines[5], "4,0,1,1000,2000000,,,");
    assert_eq!(lines.len(), 6);
}

#[test]
fn csv_of_exchanges_has_a_response_column_and_goodput_counts_both_ways() {
    let mut msgs = with_undelivered();
    for m in &mut msgs {
        m.response_bytes = Some(24);
    }
    let r = result(msgs.clone(), None);
    let csv = messages_csv(&r);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].ends_with(",latency_ps,response_bytes"));
    assert_eq!(lines[2], "2,0,0,1000,5000000,25000000,25000000,20000000,24");
    // Goodput of exchanges counts request plus response bytes: (size + 24)·8 bits per
    // completed record, over the same span as the one-way records.
    let one_way = goodput_bps(&with_undelivered()).unwrap();
    let done: Vec<_> = msgs.iter().filter(|m| m.completed_ps.is_some()).collect();
    let bytes: u64 = done.iter().map(|m| m.size).sum();
    let both = goodput_bps(&msgs).unwrap();
    let expect = one_way * (bytes + 24 * done.len() as u64) as f64 / bytes as f64;
    assert!((both - expect).abs() < 1e-6 * expect, "{both} vs {expect}");
}

#[test]
fn results_without_the_new_optional_keys_still_read() {
    let r = result(with_undelivered(), None);
    let mut v = serde_json::to_value(&r).unwrap();
    // A complete one-way run writes neither key; a file from before them has neither.
    assert!(v.get("unfinished").is_none() || !r.unfinished.is_empty());
    v.as_object_mut().unwrap().remove("unfinished");
    let back: RunResult = serde_json::from_value(v).unwrap();
    assert_eq!(back.unfinished, Vec::new());
    assert!(back.messages.iter().all(|m| m.response_bytes.is_none()));
}

#[test]
fn svg_is_deterministic_and_has_text() {
    let r = result(
        with_undelivered(),
        IdealCompletion::incast(4000, 0, 1000, 1_000_000_000, 0),
    );
    let a = latency_svg_string(&r).unwrap();
    let b = latency_svg_string(&r.clone()).unwrap();
    assert_eq!(a, b);
    assert!(a.starts_with("<svg"));
    assert!(a.contains("<text"));
    assert!(a.contains("message completion time from intended send (µs, log scale)"));
    assert!(a.contains("completion time since workload start (µs)"));
    assert!(a.contains("fraction of all messages"));
    assert!(a.contains("T* = 32.000 µs"));
    assert!(a.contains("undelivered"));
    assert!(a.contains("message 0") && a.contains("message 1"));

    // A different result draws a different picture; the wall clock does not enter the plot.
    let mut r2 = r.clone();
    r2.messages[0].completed_ps = Some(12 * US);
    assert_ne!(latency_svg_string(&r2).unwrap(), a);
    let mut r3 = r.clone();
    r3.wall_clock.wall_seconds = 123.0;
    assert_eq!(latency_svg_string(&r3).unwrap(), a);
}

#[test]
fn svg_handles_empty_and_undelivered_only() {
    let empty = latency_svg_string(&result(vec![], None)).unwrap();
    assert!(empty.contains("no delivered messages"));
    let lost = latency_svg_string(&result(vec![msg(1, 0, 1, 0, None)], None)).unwrap();
    assert!(lost.contains("no delivered messages"));
}

#[test]
fn run_dir_writes_all_files() {
    let d = tmp_dir("rundir").join("nested/run");
    let r = result(with_undelivered(), None);
    let files = write_run_dir(&d, &r, true).unwrap();
    assert_eq!(files.result_json, d.join("result.json"));
    assert_eq!(read_json(&files.result_json).unwrap(), r);
    assert_eq!(
        std::fs::read_to_string(&files.summary_txt).unwrap(),
        summary_table(&r)
    );
    assert_eq!(
        std::fs::read_to_string(&files.latency_svg).unwrap(),
        latency_svg_string(&r).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(files.messages_csv.as_ref().unwrap()).unwrap(),
        messages_csv(&r)
    );
    let files = write_run_dir(&d, &r, false).unwrap();
    assert_eq!(files.messages_csv, None);
}

#[test]
fn a_failed_write_leaves_the_previous_file_whole_and_no_temporary() {
    let d = std::env::temp_dir().join(format!("xrdma-atomic-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let path = d.join("result.json");
    write_atomic(&path, b"old\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"old\n");
    // The temporary cannot be written (a directory stands in its place, as a full disk
    // would refuse it): the write fails and the old file is untouched.
    std::fs::create_dir(temp_sibling(&path)).unwrap();
    assert!(matches!(
        write_atomic(&path, b"new, longer contents\n"),
        Err(ReportError::Io { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), b"old\n");
    std::fs::remove_dir(temp_sibling(&path)).unwrap();
    write_atomic(&path, b"new\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
    assert!(!temp_sibling(&path).exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn injected_faults_have_their_own_counters_and_summary_line() {
    let mut r = result(with_undelivered(), None);
    let t = summary_table(&r);
    assert!(!t.contains("injected losses"), "{t}");
    r.network.injected_losses = Some(7);
    r.network.link_down_drops = Some(0);
    r.network.ack_timeouts = Some(1);
    let t = summary_table(&r);
    assert!(
        t.contains(
            "injected losses 7   link-down drops 0   corrupted (ICRC drops) -   ACK timeouts 1"
        ),
        "{t}"
    );
    // TCP's corrupted segments fail its checksum, not an ICRC it does not have.
    let mut tcp = r.clone();
    tcp.scenario.stack = xrdma_reports::Stack::Tcp;
    tcp.network.icrc_drops = Some(3);
    let t = summary_table(&tcp);
    assert!(t.contains("corrupted (checksum drops) 3"), "{t}");
    // Injected losses on a lossless fabric are not switch drops: no inconsistency.
    assert!(!r
        .validate()
        .iter()
        .any(|p| matches!(p, Inconsistency::DropsOnLosslessFabric { .. })));
    // A file written before the counters existed reads them as unknown, not 0.
    let mut v = serde_json::to_value(&r).unwrap();
    let net = v["network"].as_object_mut().unwrap();
    for k in [
        "injected-losses",
        "link-down-drops",
        "icrc-drops",
        "ack-timeouts",
    ] {
        assert!(net.remove(k).is_some(), "{k}");
    }
    let back: RunResult = serde_json::from_value(v).unwrap();
    assert_eq!(back.network.injected_losses, None);
    assert_eq!(back.network.ack_timeouts, None);
}

/// A verbs run's environment with every kind of field set.
fn verbs_environment() -> Environment {
    Environment {
        backend: Backend::Verbs,
        simulator_version: None,
        host_name: Some("node7".into()),
        kernel: Some("6.1.0-18-amd64".into()),
        device: Some(DeviceInfo {
            name: Some("mlx5_0".into()),
            driver: Some("mlx5_core".into()),
            fw_ver: Some("16.35.2000".into()),
            node_guid: Some("0c42:a103:0065:8a2c".into()),
            port: Some(1),
            gid_index: Some(3),
            gid: Some("::ffff:10.0.0.7".into()),
            link_layer: Some("Ethernet".into()),
            active_mtu: Some(4096),
            link_rate_bps: Some(100_000_000_000),
        }),
        device_counters: Some(std::collections::BTreeMap::from([
            ("np_cnp_sent".to_string(), 24),
            ("port_xmit_packets".to_string(), 1000),
        ])),
        ranks: Some(vec![RankPlace {
            rank: 0,
            host_name: Some("node7".into()),
            address: Some("10.0.0.7:18515".into()),
            connected_from: None,
            hosts: vec![0],
            device: None,
            device_counters: None,
        }]),
    }
}

#[test]
fn the_environment_round_trips_and_its_absence_reads_as_none() {
    let d = tmp_dir("environment");
    let p = d.join("r.json");
    // Without the section: no key is written, and it reads back absent.
    let mut r = result(with_undelivered(), None);
    write_json(&p, &r).unwrap();
    assert!(!std::fs::read_to_string(&p).unwrap().contains("environment"));
    assert_eq!(read_json(&p).unwrap().environment, None);
    // With it: every field comes back, unknown ones as null.
    let mut env = verbs_environment();
    env.device.as_mut().unwrap().fw_ver = None;
    r.environment = Some(env);
    write_json(&p, &r).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("\"fw-ver\": null"), "{text}");
    assert!(text.contains("\"np_cnp_sent\": 24"), "{text}");
    assert_eq!(read_json(&p).unwrap(), r);
    // The simulator's section: the backend and its version, nothing of the machine.
    r.environment = Some(Environment::sim("0.1.0"));
    write_json(&p, &r).unwrap();
    assert_eq!(read_json(&p).unwrap(), r);
}

#[test]
fn version_2_and_3_files_without_an_environment_still_read() {
    let d = tmp_dir("environment-old");
    let r = result(with_undelivered(), None);
    for version in [2, 3] {
        let mut v = serde_json::to_value(&r).unwrap();
        let o = v.as_object_mut().unwrap();
        assert!(o.get("environment").is_none());
        o.insert("schema-version".into(), serde_json::json!(version));
        if version == 2 {
            // Version 2 had no `path`.
            o.remove("path");
        }
        let p = d.join(format!("v{version}.json"));
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let back = read_json(&p).unwrap();
        assert_eq!(back.environment, None, "version {version}");
        assert_eq!(back.messages, r.messages, "version {version}");
    }
}

#[test]
fn the_summary_names_the_environment_and_a_device_shows_unobserved_counters_as_na() {
    let mut r = result(with_undelivered(), None);
    r.environment = Some(Environment::sim("0.1.0"));
    let t = summary_table(&r);
    assert!(t.contains("\nplatform   sim, xrdma-sim 0.1.0\n"), "{t}");
    // A verbs run on an mlx5 device: ECN marks and CNPs observed, switch counters not.
    r.scenario.backend = Backend::Verbs;
    r.sim = None;
    r.environment = Some(verbs_environment());
    r.network = NetworkCounters {
        data_packets: Some(1000),
        ecn_marks: Some(7),
        cnps: Some(24),
        seq_naks: Some(0),
        rnr_naks: None,
        ..NetworkCounters::default()
    };
    let t = summary_table(&r);
    assert!(
        t.contains(
            "platform   verbs on host node7 (kernel 6.1.0-18-amd64), mlx5_0 port 1 (fw \
             16.35.2000, GID 3 ::ffff:10.0.0.7, Ethernet, MTU 4096 B)\n"
        ),
        "{t}"
    );
    assert!(
        t.contains("rank 0 on host node7 at 10.0.0.7:18515: scenario hosts 0"),
        "{t}"
    );
    assert!(
        t.contains("device     packets sent 1000   sequence NAKs 0   RNR NAKs n/a\n"),
        "{t}"
    );
    assert!(
        t.contains("           ECN marks 7   CNPs 24   retransmit timeouts n/a\n"),
        "{t}"
    );
    assert!(!t.contains("PFC XOFF"), "{t}");
}

#[test]
fn the_summary_says_when_the_device_figures_are_summed_over_several_devices() {
    let mut r = result(with_undelivered(), None);
    r.scenario.backend = Backend::Verbs;
    r.sim = None;
    let mut env = verbs_environment();
    let mut ranks = env.ranks.take().unwrap();
    ranks[0].device = env.device.clone();
    let mut other = ranks[0].clone();
    other.rank = 1;
    other.host_name = Some("node8".into());
    other.connected_from = Some("10.0.0.8:40112".into());
    ranks.push(other);
    env.ranks = Some(ranks);
    r.environment = Some(env);
    r.network = NetworkCounters {
        data_packets: Some(2000),
        ..NetworkCounters::default()
    };
    let t = summary_table(&r);
    assert!(
        t.contains(
            "device     packets sent 2000   sequence NAKs n/a   RNR NAKs n/a\n           \
             summed over 2 devices (rank 0: mlx5_0 on node7, rank 1: mlx5_0 on node8)\n"
        ),
        "{t}"
    );
}

#[test]
fn the_headline_figures_are_the_summary_tables() {
    // Latencies 10, 20, 30, 40 µs and one unfinished.
    let r = result(
        vec![
            msg(1, 0, 1000, 0, Some(10 * US)),
            msg(2, 0, 1000, 0, Some(20 * US)),
            msg(3, 0, 1000, 0, Some(30 * US)),
            msg(4, 0, 1000, 0, Some(40 * US)),
            msg(4, 1, 1000, 0, None),
        ],
        None,
    );
    let f = Figures::of(r.workload.kind, &r.messages);
    assert_eq!(f.latency.count, 5);
    assert_eq!(f.latency.undelivered, 1);
    assert_eq!(f.latency.p50_ps, Some(20 * US));
    // Below 10 000 messages p99.99 is the largest latency.
    assert_eq!(f.latency.p9999_ps, f.latency.max_ps);
    assert_eq!(f.latency.max_ps, Some(40 * US));
    assert_eq!(f.goodput_bps, goodput_bps(&r.messages));
    // As the table prints them.
    let table = summary_table(&r);
    assert!(table.contains("p99.9           40.000 µs"), "{table}");
    // A JSON round trip keeps every figure, `null` where there is none.
    let back: Figures = serde_json::from_str(&serde_json::to_string(&f).unwrap()).unwrap();
    assert_eq!(back, f);
}
