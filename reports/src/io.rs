//! The reports of a run: every table and plot of a result, written into its run directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::ccdf::LatencyCcdf;
use crate::chart::write_svg_png;
use crate::error::ReportError;
use crate::files::{write_atomic, write_json};
use crate::html::{report_html, HtmlPlot};
use crate::plot::{latency_svg, CompletionPerSender, LatencyCdf};
use crate::run_dir::{RunDir, PLOT_STEMS};
use crate::schema::RunResult;
use crate::summary::summary_table;
use crate::timeplot::{CongestionPlot, QueuePlot, ThroughputPlot, MAX_SENDER_LINES};

fn write_file(path: &Path, contents: &str) -> Result<(), ReportError> {
    write_atomic(path, contents.as_bytes())
}

/// Per-message records as CSV with the header
/// `sender,receiver,index,size_bytes,intended_ps,delivered_ps,completed_ps,latency_ps`, plus a
/// last column `response_bytes` when any record is a request/response exchange (the echo
/// workload); a time that did not happen (undelivered, unACKed) is an empty field. Rows are
/// in record order; the text ends with a newline.
pub fn messages_csv(r: &RunResult) -> String {
    let exchanges = r.messages.iter().any(|m| m.response_bytes.is_some());
    let mut o = String::from(
        "sender,receiver,index,size_bytes,intended_ps,delivered_ps,completed_ps,latency_ps",
    );
    o.push_str(if exchanges { ",response_bytes\n" } else { "\n" });
    for m in &r.messages {
        let delivered = m.delivered_ps.map_or_else(String::new, |c| c.to_string());
        let done = m.completed_ps.map_or_else(String::new, |c| c.to_string());
        let lat = m.latency_ps().map_or_else(String::new, |l| l.to_string());
        // Writing into a String cannot fail.
        let _ = write!(
            o,
            "{},{},{},{},{},{},{},{}",
            m.sender, m.receiver, m.index, m.size, m.intended_ps, delivered, done, lat
        );
        if exchanges {
            let resp = m.response_bytes.map_or_else(String::new, |b| b.to_string());
            let _ = write!(o, ",{resp}");
        }
        o.push('\n');
    }
    o
}

/// Paths of the files written by [`write_run_dir`] and [`write_report`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFiles {
    /// The run directory.
    pub dir: PathBuf,
    /// `dir/result.json`, see [`write_json`] ([`write_report`] reads it, does not write it).
    pub result_json: PathBuf,
    /// `dir/summary.txt`, the output of [`summary_table`].
    pub summary_txt: PathBuf,
    /// `dir/latency.svg`, the CDF and per-sender panels side by side, see [`latency_svg`].
    pub latency_svg: PathBuf,
    /// Every plot file written, SVG then PNG per plot, in [`PLOT_STEMS`] order (the
    /// time-series plots only when the result has a time series, the stages only when traced).
    pub plots: Vec<PathBuf>,
    /// `dir/report.html`, see [`report_html`].
    pub report_html: PathBuf,
    /// `dir/messages.csv` when requested (see [`messages_csv`]), else `None`.
    pub messages_csv: Option<PathBuf>,
}

/// Wraps an error of a run that did not commit with what `rd` still holds.
fn unchanged(rd: &RunDir, e: ReportError) -> ReportError {
    ReportError::Unchanged {
        note: rd.unchanged_note(),
        source: Box::new(e),
    }
}

/// Writes `result.json` and everything [`write_report`] draws for `r` into the staging
/// directory of `rd` (the caller commits it); the paths returned are those the files will
/// have in the results directory.
///
/// # Errors
/// As [`write_json`] and [`write_report`].
pub fn stage_run(
    rd: &RunDir,
    r: &RunResult,
    with_csv: bool,
    step: &mut dyn FnMut(&str),
) -> Result<RunFiles, ReportError> {
    step("result.json");
    write_json(&rd.staging().join("result.json"), r)?;
    draw(rd.staging(), rd.dir(), r, with_csv, step)
}

/// Writes `r` as a run into `dir` (created with its parents if missing): `result.json` plus
/// everything [`write_report`] draws, replacing the earlier run there as a whole
/// ([`RunDir`]): the earlier run's files this one does not have are removed, files no run
/// wrote stay.
///
/// # Errors
/// [`ReportError::InUse`] when another process writes `dir`; [`ReportError::Unchanged`]
/// (the earlier run stays whole) when a file cannot be written or drawn;
/// [`ReportError::Commit`] or [`ReportError::Io`] from the replacement.
pub fn write_run_dir(dir: &Path, r: &RunResult, with_csv: bool) -> Result<RunFiles, ReportError> {
    write_run_dir_with(dir, r, with_csv, &mut |_| {})
}

/// [`write_run_dir`], telling `step` what it writes next (`"result.json"`, then as
/// [`write_report_with`]), for a progress display.
///
/// # Errors
/// As [`write_run_dir`].
pub fn write_run_dir_with(
    dir: &Path,
    r: &RunResult,
    with_csv: bool,
    step: &mut dyn FnMut(&str),
) -> Result<RunFiles, ReportError> {
    let rd = RunDir::open(dir, crate::run_dir::Holds::Run)?;
    let files = stage_run(&rd, r, with_csv, step).map_err(|e| unchanged(&rd, e))?;
    rd.commit()?;
    Ok(files)
}

/// Redraws every table and plot of `r` into `dir` (created with its parents if missing):
/// `summary.txt`, `latency.svg`, the plots of [`PLOT_STEMS`] as SVG and PNG, `report.html`
/// (self-contained, SVGs inline), and `messages.csv` when `with_csv` is true. Does not write
/// `result.json`. Every file is a pure function of `r`: redrawing from the saved JSON gives
/// byte-identical files.
///
/// The files replace the earlier run in `dir` as a whole ([`RunDir`]). With `beside_result`
/// (`dir/result.json` is the file `r` was read from) that run's `result.json`, its captures
/// and its `messages.csv` stay as the redrawn run's; otherwise every file of the earlier run
/// there goes. Plots `r` does not have (no time series, not traced) are removed.
///
/// # Errors
/// [`ReportError::InUse`] when another process writes `dir`; [`ReportError::Unchanged`]
/// (the earlier files stay whole) wrapping [`ReportError::Io`], [`ReportError::Plot`] or
/// [`ReportError::Font`] from writing or drawing, or [`ReportError::Plot`] for a time series
/// whose series lengths do not match its sample times; [`ReportError::Commit`] or
/// [`ReportError::Io`] from the replacement.
pub fn write_report(
    dir: &Path,
    r: &RunResult,
    with_csv: bool,
    beside_result: bool,
) -> Result<RunFiles, ReportError> {
    write_report_with(dir, r, with_csv, beside_result, &mut |_| {})
}

/// [`write_report`], telling `step` the name of each file (or plot stem) before it is
/// written, for a progress display.
///
/// # Errors
/// As [`write_report`].
pub fn write_report_with(
    dir: &Path,
    r: &RunResult,
    with_csv: bool,
    beside_result: bool,
    step: &mut dyn FnMut(&str),
) -> Result<RunFiles, ReportError> {
    let mut rd = RunDir::open(dir, crate::run_dir::Holds::Run)?;
    if beside_result {
        rd.keep("result.json");
        rd.keep("messages.csv");
        for c in r.sim.iter().flat_map(|s| &s.captures) {
            rd.keep(&c.file);
        }
    }
    let files = draw(rd.staging(), dir, r, with_csv, step).map_err(|e| unchanged(&rd, e))?;
    rd.commit()?;
    Ok(files)
}

/// Draws the tables and plots of `r` (see [`write_report`]) into `stage`; the paths returned
/// are under `dir`, where the commit moves them.
fn draw(
    stage: &Path,
    dir: &Path,
    r: &RunResult,
    with_csv: bool,
    step: &mut dyn FnMut(&str),
) -> Result<RunFiles, ReportError> {
    let stages = crate::stages::summarize(r);
    let mut files = RunFiles {
        dir: dir.to_path_buf(),
        result_json: dir.join("result.json"),
        summary_txt: dir.join("summary.txt"),
        latency_svg: dir.join("latency.svg"),
        plots: Vec::new(),
        report_html: dir.join("report.html"),
        messages_csv: with_csv.then(|| dir.join("messages.csv")),
    };
    step("summary.txt");
    write_file(&stage.join("summary.txt"), &summary_table(r))?;
    step("latency.svg");
    latency_svg(r, &stage.join("latency.svg"))?;
    let mut html_plots = Vec::new();
    let mut emit = |stem: &str, svg: String, title: &str, caption: String| {
        files.plots.push(dir.join(format!("{stem}.svg")));
        files.plots.push(dir.join(format!("{stem}.png")));
        html_plots.push(HtmlPlot {
            title: title.to_string(),
            caption,
            svg,
        });
    };
    step(PLOT_STEMS[0]);
    let svg = write_svg_png(&LatencyCdf(r), stage, PLOT_STEMS[0])?;
    emit(
        PLOT_STEMS[0],
        svg,
        "Message completion time",
        "Step CDF of each message's completion time from its intended send time, log time \
         axis; nearest-rank p50/p99/p99.9 and the bound T* are marked. Messages that did not \
         finish have no latency: the curve then ends below 1."
            .into(),
    );
    step(PLOT_STEMS[1]);
    let svg = write_svg_png(&LatencyCcdf(r), stage, PLOT_STEMS[1])?;
    emit(
        PLOT_STEMS[1],
        svg,
        "Completion time tail",
        "1 − CDF of each message's completion time on log–log axes: the fraction of all \
         messages slower than x. Each decade down is a nine: the dashed gridlines mark p99, \
         p99.9 and p99.99 where the run has enough messages to show them, and T* is marked. \
         Messages that did not finish hold the tail up at their fraction."
            .into(),
    );
    step(PLOT_STEMS[2]);
    let svg = write_svg_png(&CompletionPerSender(r), stage, PLOT_STEMS[2])?;
    emit(
        PLOT_STEMS[2],
        svg,
        "Completion per sender",
        "Each message's completion time from the start of the workload, by sender; crosses on \
         the top edge are messages that did not finish."
            .into(),
    );
    if let Some(ts) = &r.timeseries {
        ts.check().map_err(ReportError::Plot)?;
        step(PLOT_STEMS[3]);
        let svg = write_svg_png(&QueuePlot(r, ts), stage, PLOT_STEMS[3])?;
        emit(
            PLOT_STEMS[3],
            svg,
            "Bottleneck queue",
            format!(
                "Bytes in the {} at each sample (instantaneous), the largest egress queue \
                 anywhere when it differs, and the run's peak of any egress queue.",
                ts.bottleneck
            ),
        );
        step(PLOT_STEMS[4]);
        let svg = write_svg_png(&ThroughputPlot(r, ts), stage, PLOT_STEMS[4])?;
        let per_sender = if ts.senders.len() <= MAX_SENDER_LINES {
            "one line per sender".to_string()
        } else {
            format!(
                "the median sender and the band from the slowest to the fastest of {} \
                 senders in each interval",
                ts.senders.len()
            )
        };
        emit(
            PLOT_STEMS[4],
            svg,
            "Throughput",
            format!(
                "Payload bytes delivered to the receiver per sampling interval, in Gb/s: all \
                 senders together (top) and per sender (bottom: {per_sender})."
            ),
        );
        step(PLOT_STEMS[5]);
        let svg = write_svg_png(&CongestionPlot(r, ts), stage, PLOT_STEMS[5])?;
        emit(
            PLOT_STEMS[5],
            svg,
            "Congestion signals",
            "Cumulative ECN-marked packets, CNPs and PFC XOFF frames (top), and the host NICs \
             and switch ports held paused by PFC at each sample (bottom)."
                .into(),
        );
    }
    if let Some(st) = &stages {
        step(PLOT_STEMS[6]);
        let svg = write_svg_png(&crate::stageplot::StagePlot(r, st), stage, PLOT_STEMS[6])?;
        emit(
            PLOT_STEMS[6],
            svg,
            "Where the time went",
            "The message at each nearest-rank completion percentile, its bar split into the \
             stages its completion time passed through (app, queue, grant, send, network, \
             ack; `xrdma trace` prints them): each bar's height is that percentile."
                .into(),
        );
    }
    step("report.html");
    write_file(&stage.join("report.html"), &report_html(r, &html_plots))?;
    if with_csv {
        step("messages.csv");
        write_file(&stage.join("messages.csv"), &messages_csv(r))?;
    }
    Ok(files)
}
