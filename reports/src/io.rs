//! Reading and writing run results and the per-run output directory.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::chart::write_svg_png;
use crate::error::ReportError;
use crate::html::{report_html, HtmlPlot};
use crate::plot::{latency_svg, CompletionPerSender, LatencyCdf};
use crate::run_dir::RunDir;
use crate::schema::{RunResult, SCHEMA_VERSION};
use crate::summary::summary_table;
use crate::timeplot::{CongestionPlot, QueuePlot, ThroughputPlot, MAX_SENDER_LINES};

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, contents: &str) -> Result<(), ReportError> {
    write_atomic(path, contents.as_bytes())
}

/// The temporary sibling a file is written to before it is renamed over `path`:
/// `NAME.tmp.EXT` beside it (the extension kept last, so encoders that choose the format by
/// extension still do).
pub fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = match path.extension() {
        Some(ext) => format!("{name}.tmp.{}", ext.to_string_lossy()),
        None => format!("{name}.tmp"),
    };
    path.with_file_name(tmp)
}

/// Moves the finished temporary file `tmp` over `path` (a rename: readers see the old file
/// or the whole new one, never a truncated one); the temporary file is removed if the rename
/// fails.
///
/// # Errors
/// [`ReportError::Io`] naming `path` when the rename fails.
pub fn commit_temp(tmp: &Path, path: &Path) -> Result<(), ReportError> {
    std::fs::rename(tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(tmp);
        io_err(path)(e)
    })
}

/// Writes `bytes` to `path` atomically: to [`temp_sibling`] first, then renamed over `path`,
/// so a full disk or a crash never leaves a truncated file (the previous one stays).
///
/// # Errors
/// [`ReportError::Io`] naming the file that could not be written or renamed; the temporary
/// file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let tmp = temp_sibling(path);
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err(path)(e));
    }
    commit_temp(&tmp, path)
}

/// Writes `r` to `path` as pretty-printed JSON (two-space indent, keys in schema declaration
/// order, trailing newline). Equal inputs give byte-identical files. The text is streamed to
/// a temporary sibling through a buffer, never held whole in memory, then renamed over
/// `path` ([`commit_temp`]).
///
/// # Errors
/// [`ReportError::Io`] if the file cannot be written (the temporary file is removed),
/// [`ReportError::Json`] if serialization fails.
pub fn write_json(path: &Path, r: &RunResult) -> Result<(), ReportError> {
    let tmp = temp_sibling(path);
    let written = (|| {
        let file = std::fs::File::create(&tmp).map_err(io_err(path))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        r.write_json_to(&mut w).map_err(|source| {
            if source.is_io() {
                io_err(path)(source.into())
            } else {
                ReportError::Json {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        w.flush().map_err(io_err(path))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    commit_temp(&tmp, path)
}

/// Reads a run result written by [`write_json`].
///
/// The `schema-version` key is checked first: a missing key, or a version of 0 or newer than
/// [`SCHEMA_VERSION`], is rejected with [`ReportError::UnsupportedSchema`]. Unknown keys are
/// ignored (so additions within a version stay readable).
///
/// # Errors
/// [`ReportError::Io`] if the file cannot be read, [`ReportError::Json`] (with line and column)
/// if it is not valid JSON for the schema, [`ReportError::UnsupportedSchema`] as above.
pub fn read_json(path: &Path) -> Result<RunResult, ReportError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let json_err = |source| ReportError::Json {
        path: path.to_path_buf(),
        source,
    };
    let found = serde_json::from_str::<VersionProbe>(&text)
        .map_err(json_err)?
        .0;
    match found {
        Some(v) if v >= 1 && v <= u64::from(SCHEMA_VERSION) => {}
        _ => {
            return Err(ReportError::UnsupportedSchema {
                path: path.to_path_buf(),
                found,
                supported: SCHEMA_VERSION,
            })
        }
    }
    // Parse from the text (not the Value) so errors carry line and column.
    let mut r: RunResult = serde_json::from_str(&text).map_err(json_err)?;
    if found.is_some_and(|v| v < 3) {
        if let Some(i) = &r.ideal {
            r.path = crate::PathModel::of_ideal(i);
        }
        // Version 2 stated T* for every workload; only an incast's bounds its completion.
        if r.workload.kind != crate::WorkloadKind::Incast {
            r.ideal = None;
        }
    }
    Ok(r)
}

/// The `schema-version` of a result's text, read without building the rest (a
/// `serde_json::Value` of a million messages takes about a gigabyte): `None` when the key is
/// missing or not an unsigned integer, or the text is not an object.
struct VersionProbe(Option<u64>);

impl<'de> serde::Deserialize<'de> for VersionProbe {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(VersionVisitor)
    }
}

struct VersionVisitor;

impl<'de> serde::de::Visitor<'de> for VersionVisitor {
    type Value = VersionProbe;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a run result")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<VersionProbe, A::Error> {
        use serde::de::IgnoredAny;
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "schema-version" {
                found = map.next_value::<serde_json::Value>()?.as_u64();
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(VersionProbe(found))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<VersionProbe, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(VersionProbe(None))
    }

    fn visit_unit<E>(self) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }
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

/// File stems of the plots, each written as `STEM.svg` and `STEM.png`: the completion-time
/// CDF, the per-sender completion times, and (with a time series) the bottleneck queue,
/// throughput and congestion signals over time, and (for a traced run) the stages of the
/// message at each completion percentile.
pub const PLOT_STEMS: [&str; 6] = [
    "latency-cdf",
    "completion",
    "queue",
    "throughput",
    "congestion",
    "stages",
];

/// The plot stems `r` has, in [`PLOT_STEMS`] order: the CDF and the per-sender completions
/// always, the time-series plots when it has a time series, the stages when it was traced.
pub(crate) fn plot_stems_of(r: &RunResult) -> Vec<&'static str> {
    let mut v = PLOT_STEMS[..2].to_vec();
    if r.timeseries.is_some() {
        v.extend_from_slice(&PLOT_STEMS[2..5]);
    }
    if crate::stages::summarize(r).is_some() {
        v.push(PLOT_STEMS[5]);
    }
    v
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
    let svg = write_svg_png(&CompletionPerSender(r), stage, PLOT_STEMS[1])?;
    emit(
        PLOT_STEMS[1],
        svg,
        "Completion per sender",
        "Each message's completion time from the start of the workload, by sender; crosses on \
         the top edge are messages that did not finish."
            .into(),
    );
    if let Some(ts) = &r.timeseries {
        ts.check().map_err(ReportError::Plot)?;
        step(PLOT_STEMS[2]);
        let svg = write_svg_png(&QueuePlot(r, ts), stage, PLOT_STEMS[2])?;
        emit(
            PLOT_STEMS[2],
            svg,
            "Bottleneck queue",
            format!(
                "Bytes in the {} at each sample (instantaneous), the largest egress queue \
                 anywhere when it differs, and the run's peak of any egress queue.",
                ts.bottleneck
            ),
        );
        step(PLOT_STEMS[3]);
        let svg = write_svg_png(&ThroughputPlot(r, ts), stage, PLOT_STEMS[3])?;
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
            PLOT_STEMS[3],
            svg,
            "Throughput",
            format!(
                "Payload bytes delivered to the receiver per sampling interval, in Gb/s: all \
                 senders together (top) and per sender (bottom: {per_sender})."
            ),
        );
        step(PLOT_STEMS[4]);
        let svg = write_svg_png(&CongestionPlot(r, ts), stage, PLOT_STEMS[4])?;
        emit(
            PLOT_STEMS[4],
            svg,
            "Congestion signals",
            "Cumulative ECN-marked packets, CNPs and PFC XOFF frames (top), and the host NICs \
             and switch ports held paused by PFC at each sample (bottom)."
                .into(),
        );
    }
    if let Some(st) = &stages {
        step(PLOT_STEMS[5]);
        let svg = write_svg_png(&crate::stageplot::StagePlot(r, st), stage, PLOT_STEMS[5])?;
        emit(
            PLOT_STEMS[5],
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
