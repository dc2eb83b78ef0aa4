//! The per-run plots (SVG and PNG), report.html and the time-series schema: redrawing from
//! saved JSON is byte-identical, version-1 results still read, the page is self-contained.

use std::path::{Path, PathBuf};

use xrdma_reports::*;

mod common;
use common::*;

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
    let again = write_report(&redo, &back, false, false).unwrap();
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
    write_report(&d, &result(None), false, false).unwrap();
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
fn ccdf_levels_off_at_the_unfinished_and_draws_no_gridline_below_one_message() {
    let d = tmp_dir("ccdf");
    write_report(&d, &result(None), false, false).unwrap();
    let svg = String::from_utf8(read(&d.join("latency-ccdf.svg"))).unwrap();
    assert!(svg.contains("4 of 5 delivered, 1 did not finish"), "{svg}");
    assert!(svg.contains("1 unfinished: the tail levels off at 0.200"));
    assert!(svg.contains("T* = 32.000 µs"));
    // Five messages resolve the tail to 1/5: p99 (1 in 100) is not shown.
    assert!(!svg.contains("p99 ="));
    // So few messages are each marked too (a single one would otherwise draw nothing).
    assert!(svg.matches("<circle").count() >= 4, "{svg}");
}

#[test]
fn ccdf_marks_each_nine_the_run_can_resolve() {
    // 1000 messages, latencies 1..=1000 µs: p99 and p99.9 are resolved, p99.99 is not.
    let mut r = result(None);
    r.messages = (1..=1000u64)
        .map(|i| msg((i % 4) as u32 + 1, (i / 4) as u32, 0, Some(i * US)))
        .collect();
    r.unfinished.clear();
    let d = tmp_dir("ccdf-nines");
    write_report(&d, &r, false, false).unwrap();
    let svg = String::from_utf8(read(&d.join("latency-ccdf.svg"))).unwrap();
    // Nearest rank: p99 → rank 990, p99.9 → rank 999.
    assert!(svg.contains("p99 = 990.000 µs"), "{svg}");
    assert!(svg.contains("p99.9 = 999.000 µs"));
    assert!(!svg.contains("p99.99 ="));
    assert!(svg.contains("1000 messages"));
}

#[test]
fn time_series_plots_need_a_time_series() {
    let d = tmp_dir("nots");
    let files = write_report(&d, &result(None), false, false).unwrap();
    // The CDF, its tail, the per-sender completions and the stages, each as SVG and PNG.
    assert_eq!(files.plots.len(), 8);
    assert!(!d.join("queue.svg").exists());
    assert!(d.join("stages.svg").exists());
    let html = std::fs::read_to_string(&files.report_html).unwrap();
    assert!(html.contains("No time series in this result"));
}

#[test]
fn the_stage_plot_needs_stages_and_goes_with_them() {
    let d = tmp_dir("stages");
    write_report(&d, &result(None), false, false).unwrap();
    let svg = String::from_utf8(read(&d.join("stages.svg"))).unwrap();
    // Latencies 10, 20, 30, 40 µs: the p50 message (20 µs) is dominated by its ACK share
    // (20 − 3·5 = 5 µs ties with the others; the first on a tie, queue, is named).
    assert!(svg.contains("p50 (queue)"), "{svg}");
    assert!(svg.contains("4 traced messages"));
    let mut r = result(None);
    r.messages.iter_mut().for_each(|m| m.stages = None);
    let files = write_report(&d, &r, false, false).unwrap();
    // The CDF, its tail and the per-sender completions, each as SVG and PNG.
    assert_eq!(files.plots.len(), 6);
    assert!(
        !d.join("stages.svg").exists(),
        "a stale stage plot is removed"
    );
    assert!(!d.join("stages.png").exists());
}

#[test]
fn throughput_of_many_senders_is_a_band() {
    let d = tmp_dir("band");
    write_report(&d, &result(Some(series(256, 20))), false, false).unwrap();
    let svg = String::from_utf8(read(&d.join("throughput.svg"))).unwrap();
    assert!(svg.contains("median and min–max over 256 senders"));
    assert!(svg.contains("slowest to fastest sender"));
    // 4 senders: one line each.
    write_report(&d, &result(Some(series(4, 20))), false, false).unwrap();
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
    let files = write_report(&d, &result(Some(series(8, 10))), false, false).unwrap();
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
    let files = write_report(&d, &back, false, false).unwrap();
    assert_eq!(files.plots.len(), 6);
}

#[test]
fn a_time_series_with_missing_values_is_refused() {
    let d = tmp_dir("bad");
    let mut ts = series(2, 3);
    ts.cnps.pop();
    let e = write_report(&d, &result(Some(ts)), false, false).unwrap_err();
    // Nothing was written, and the error says why.
    assert!(e.to_string().starts_with("nothing was written to"), "{e}");
    let why = std::error::Error::source(&e).map(ToString::to_string);
    assert!(
        why.as_deref()
            .is_some_and(|w| w.contains("timeseries.cnps has 2 values for 3 sample times")),
        "{why:?}"
    );
}

#[test]
fn the_summary_counts_one_window_in_the_singular() {
    // Two senders streaming for 12 ms: one whole 10 ms window after the first 1 ms. The line
    // read "(1 windows after 1 ms ...)".
    let mut r = result(None);
    r.messages = vec![
        msg(1, 0, 0, Some(6_000 * US)),
        msg(1, 1, 0, Some(12_000 * US)),
        msg(2, 0, 0, Some(6_000 * US)),
        msg(2, 1, 0, Some(12_000 * US)),
    ];
    let s = xrdma_reports::summary_table(&r);
    assert!(s.contains("worst 10 ms window: Jain 1.0000"), "{s}");
    assert!(
        s.contains("(1 window after 1 ms while every sender sends)"),
        "{s}"
    );
}
