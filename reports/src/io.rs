//! Reading and writing run results and the per-run output directory.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::plot::latency_svg;
use crate::schema::{RunResult, SCHEMA_VERSION};
use crate::summary::summary_table;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write_file(path: &Path, contents: &str) -> Result<(), ReportError> {
    std::fs::write(path, contents).map_err(io_err(path))
}

/// Writes `r` to `path` as pretty-printed JSON (two-space indent, keys in schema declaration
/// order, trailing newline). Equal inputs give byte-identical files.
///
/// # Errors
/// [`ReportError::Io`] if the file cannot be written, [`ReportError::Json`] if serialization
/// fails.
pub fn write_json(path: &Path, r: &RunResult) -> Result<(), ReportError> {
    let json = r.to_json_string().map_err(|source| ReportError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    write_file(path, &json)
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
    let value: serde_json::Value = serde_json::from_str(&text).map_err(json_err)?;
    let found = value
        .get("schema-version")
        .and_then(serde_json::Value::as_u64);
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
    serde_json::from_str(&text).map_err(json_err)
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

/// Paths of the files written by [`write_run_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFiles {
    /// The run directory.
    pub dir: PathBuf,
    /// `dir/result.json`, see [`write_json`].
    pub result_json: PathBuf,
    /// `dir/summary.txt`, the output of [`summary_table`].
    pub summary_txt: PathBuf,
    /// `dir/latency.svg`, see [`latency_svg`].
    pub latency_svg: PathBuf,
    /// `dir/messages.csv` when requested (see [`messages_csv`]), else `None`.
    pub messages_csv: Option<PathBuf>,
}

/// Creates `dir` (and its parents) and writes `result.json`, `summary.txt` and `latency.svg`
/// into it, plus `messages.csv` when `with_csv` is true. Existing files are overwritten.
///
/// # Errors
/// [`ReportError::Io`] naming the path that failed; errors of [`write_json`] and
/// [`latency_svg`].
pub fn write_run_dir(dir: &Path, r: &RunResult, with_csv: bool) -> Result<RunFiles, ReportError> {
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let files = RunFiles {
        dir: dir.to_path_buf(),
        result_json: dir.join("result.json"),
        summary_txt: dir.join("summary.txt"),
        latency_svg: dir.join("latency.svg"),
        messages_csv: with_csv.then(|| dir.join("messages.csv")),
    };
    write_json(&files.result_json, r)?;
    write_file(&files.summary_txt, &summary_table(r))?;
    latency_svg(r, &files.latency_svg)?;
    if let Some(csv) = &files.messages_csv {
        write_file(csv, &messages_csv(r))?;
    }
    Ok(files)
}
