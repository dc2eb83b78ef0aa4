//! The per-run plots (SVG and PNG), report.html and the time-series schema: redrawing from
//! saved JSON is byte-identical, version-1 results still read, the page is self-contained.

use std::path::{Path, PathBuf};

use xrdma_reports::*;

const US: u64 = 1_000_000; // ps per µs

fn msg(sender: u32, index: u32, intended_ps: u64, completed_ps: Option<u64>) -> MessageRecord {
    MessageRecord {
        sender,
        receiver: 0,
        index,
        size: 1000,
        intended_ps,
        completed_ps,
        delivered_ps: completed_ps,
        response_bytes: None,
        // Every delivered message traced: a quarter each in queue, send and network, the
        // rest in the ACK.
        stages: completed_ps.map(|c| {
            let l = c - intended_ps;
            MessageStages {
                app_ps: 0,
                queue_ps: l / 4,
                grant_ps: 0,
                send_ps: l / 4,
                network_ps: l / 4,
                ack_ps: l - 3 * (l / 4),
            }
        }),
    }
}

/// `senders` senders; sender `h` (1-based) delivers `h · 1000` bytes in every one of `n`
/// intervals of 10 µs.
fn series(senders: u32, n: usize) -> TimeSeries {
    TimeSeries {
        requested_interval_ps: 5 * US,
        interval_ps: 10 * US,
        coarsened: 1,
        max_points: 1024,
        bottleneck: "egress queue of switch 0 port 0, toward host 0 (the receiver)".into(),
        time_ps: (1..=n as u64).map(|i| i * 10 * US).collect(),
        bottleneck_queue_bytes: (0..n as u64).map(|i| i * 1000).collect(),
        max_queue_bytes: (0..n as u64).map(|i| i * 1500).collect(),
        ecn_marks: (0..n as u64).collect(),
        cnps: (0..n as u64).map(|i| i / 2).collect(),
        pfc_xoff: vec![0; n],
        paused_ports: (0..n as u32).map(|i| i % 3).collect(),
        senders: (1..=senders)
            .map(|h| SenderBytes {
                host: h,
                bytes: vec![u64::from(h) * 1000; n],
            })
            .collect(),
    }
}

fn result(ts: Option<TimeSeries>) -> RunResult {
    // Latencies 10, 20, 30, 40 µs delivered, one message never finished.
    let messages = vec![
        msg(1, 0, 0, Some(10 * US)),
        msg(2, 0, 5 * US, Some(25 * US)),
        msg(3, 0, 0, Some(30 * US)),
        msg(4, 0, 2 * US, Some(42 * US)),
        msg(4, 1, 2 * US, None),
    ];
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        scenario: ScenarioInfo {
            name: "plots-test".into(),
            path: "scenarios/plots-test.yaml".into(),
            backend: Backend::Sim,
            seed: 3,
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
            delivered: 4,
            digest_mismatches: 0,
            duplicates: 0,
            missing: 1,
        },
        network: NetworkCounters {
            max_egress_queue_bytes: Some(200_000),
            ..NetworkCounters::default()
        },
        path: PathModel {
            base_rtt_ps: Some(0),
            bottleneck_bps: Some(1_000_000_000),
            header_bytes: Some(0),
            mtu_bytes: Some(1000),
        },
        ideal: IdealCompletion::incast(4000, 0, 1000, 1_000_000_000, 0),
        sim: None,
        errors: Vec::new(),
        unfinished: Vec::new(),
        wall_clock: WallClock {
            wall_seconds: 0.5,
            events_per_second: 10.0,
        },
        scenario_yaml: Some("name: plots-test\n# <b>not markup</b> & more\n".into()),
        timeseries: ts,
        transport: None,
        endpoints: None,
        environment: None,
    }
}

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-plots-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn redrawing_from_saved_json_is_byte_identical() {
    let run = tmp_dir("run");
    let redo = tmp_dir("redo");
    let r = result(Some(series(256, 40)));
    let files = write_run_dir(&run, &r, false).unwrap();
    // Every plot stem as SVG and PNG, in order.
    let expect: Vec<PathBuf> = PLOT_STEMS
        .iter()
        .flat_map(|s| [run.join(format!("{s}.svg")), run.join(format!("{s}.png"))])
        .collect();
    assert_eq!(files.plots, expect);
    let back = read_json(&files.result_json).unwrap();
    assert_eq!(back, r);
    let again = write_report(&redo, &back, false).unwrap();
    let mut compared = 0;
    for (a, b) in files
        .plots
        .iter()
        .zip(&again.plots)
        .chain([(&files.summary_txt, &again.summary_txt)])
        .chain([(&files.latency_svg, &again.latency_svg)])
        .chain([(&files.report_html, &again.report_html)])
    {
        assert_eq!(
            read(a),
            read(b),
            "{} differs from {}",
            a.display(),
            b.display()
        );
        compared += 1;
    }
    assert_eq!(compared, 2 * PLOT_STEMS.len() + 3);
    // PNGs are real PNG files (signature, IHDR with the figure's size).
    let png = read(&run.join("queue.png"));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((w, h), plot::PANEL_SIZE_PX);
}

#[test]
fn cdf_marks_nearest_rank_percentiles_and_unfinished_messages() {
    let d = tmp_dir("cdf");
    write_report(&d, &result(None), false).unwrap();
    let svg = String::from_utf8(read(&d.join("latency-cdf.svg"))).unwrap();
    // Delivered latencies 10, 20, 30, 40 µs (n = 4): p50 → rank ⌈2⌉ = 2 → 20 µs;
    // p99 → rank ⌈3.96⌉ = 4 → 40 µs; p99.9 → rank 4 → 40 µs.
    assert!(svg.contains("p50 = 20.000 µs"), "{svg}");
    assert!(svg.contains("p99 = 40.000 µs"));
    assert!(svg.contains("p99.9 = 40.000 µs"));
    // T* = 4000 B · 8 / 1 Gb/s = 32 µs.
    assert!(svg.contains("T* = 32.000 µs"));
    // One of five messages never finished: the CDF ends at 4/5.
    assert!(svg.contains("4 of 5 delivered, 1 did not finish (no latency)"));
    assert!(svg.contains("1 unfinished: CDF ends at 0.800"));
    assert!(svg.contains("log scale"));
}

#[test]
fn time_series_plots_need_a_time_series() {
    let d = tmp_dir("nots");
    let files = write_report(&d, &result(None), false).unwrap();
    // The CDF, the per-sender completions and the stages, each as SVG and PNG.
    assert_eq!(files.plots.len(), 6);
    assert!(!d.join("queue.svg").exists());
    assert!(d.join("stages.svg").exists());
    let html = std::fs::read_to_string(&files.report_html).unwrap();
    assert!(html.contains("No time series in this result"));
}

#[test]
fn the_stage_plot_needs_stages_and_goes_with_them() {
    let d = tmp_dir("stages");
    write_report(&d, &result(None), false).unwrap();
    let svg = String::from_utf8(read(&d.join("stages.svg"))).unwrap();
    // Latencies 10, 20, 30, 40 µs: the p50 message (20 µs) is dominated by its ACK share
    // (20 − 3·5 = 5 µs ties with the others; the first on a tie, queue, is named).
    assert!(svg.contains("p50 (queue)"), "{svg}");
    assert!(svg.contains("4 traced messages"));
    let mut r = result(None);
    r.messages.iter_mut().for_each(|m| m.stages = None);
    let files = write_report(&d, &r, false).unwrap();
    assert_eq!(files.plots.len(), 4);
    assert!(
        !d.join("stages.svg").exists(),
        "a stale stage plot is removed"
    );
    assert!(!d.join("stages.png").exists());
}

#[test]
fn throughput_of_many_senders_is_a_band() {
    let d = tmp_dir("band");
    write_report(&d, &result(Some(series(256, 20))), false).unwrap();
    let svg = String::from_utf8(read(&d.join("throughput.svg"))).unwrap();
    assert!(svg.contains("median and min–max band over 256 senders"));
    assert!(svg.contains("slowest to fastest sender"));
    // 4 senders: one line each.
    write_report(&d, &result(Some(series(4, 20))), false).unwrap();
    let svg = String::from_utf8(read(&d.join("throughput.svg"))).unwrap();
    assert!(svg.contains("host 1") && svg.contains("host 4"));
    // Aggregate of 4 senders: (1+2+3+4)·1000 B per 10 µs = 80 000 bits / 1e-5 s = 8 Gb/s;
    // the per-interval conversion used by the plot:
    let ts = series(4, 1);
    assert_eq!(ts.gbps(10_000), 8.0);
}

#[test]
fn report_html_is_self_contained() {
    let d = tmp_dir("html");
    let files = write_report(&d, &result(Some(series(8, 10))), false).unwrap();
    let html = std::fs::read_to_string(&files.report_html).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    // Every plot inline, nothing loaded from elsewhere.
    assert_eq!(html.matches("<svg").count(), PLOT_STEMS.len());
    for external in ["src=", "href=", "<link", "<script", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    // The scenario text, escaped, and the tool version.
    assert!(html.contains("# &lt;b&gt;not markup&lt;/b&gt; &amp; more"));
    assert!(html.contains("xrdma 0.1.0"));
    assert!(html.contains(&escape_summary(&summary_table(&result(None)))));
}

/// The first line of the summary table, HTML-escaped.
fn escape_summary(t: &str) -> String {
    html::escape(t.lines().next().unwrap())
}

#[test]
fn version_1_results_still_read() {
    let d = tmp_dir("v1");
    let r = result(Some(series(2, 3)));
    let mut v = serde_json::to_value(&r).unwrap();
    v["schema-version"] = serde_json::json!(1);
    let obj = v.as_object_mut().unwrap();
    obj.remove("timeseries");
    obj.remove("scenario-yaml");
    // Nor did it trace stages.
    for m in obj["messages"].as_array_mut().unwrap() {
        m.as_object_mut().unwrap().remove("stages");
    }
    let mut r = r;
    r.messages.iter_mut().for_each(|m| m.stages = None);
    let p = d.join("result.json");
    std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let back = read_json(&p).unwrap();
    assert_eq!(back.schema_version, 1);
    assert_eq!(back.timeseries, None);
    assert_eq!(back.scenario_yaml, None);
    assert_eq!(back.messages, r.messages);
    // And its report draws without the time-series plots.
    let files = write_report(&d, &back, false).unwrap();
    assert_eq!(files.plots.len(), 4);
}

#[test]
fn a_time_series_with_missing_values_is_refused() {
    let d = tmp_dir("bad");
    let mut ts = series(2, 3);
    ts.cnps.pop();
    let e = write_report(&d, &result(Some(ts)), false).unwrap_err();
    assert!(
        e.to_string()
            .contains("timeseries.cnps has 2 values for 3 sample times"),
        "{e}"
    );
}
