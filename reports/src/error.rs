//! Error type of the reports crate.

use std::path::PathBuf;

/// Errors from reading, writing or rendering reports.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file or directory could not be read, written or created.
    #[error("cannot access {path}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A result file is not valid JSON for the schema (message includes line and column).
    #[error("{path}: invalid run result")]
    Json {
        /// The file involved.
        path: PathBuf,
        /// The underlying serde_json error.
        #[source]
        source: serde_json::Error,
    },
    /// A result file lacks `schema-version` or has a version this crate cannot read.
    #[error(
        "{path}: {} (this build reads result files of versions 1..={supported}; is it an \
         `xrdma run` result.json?)",
        version_text(.found)
    )]
    UnsupportedSchema {
        /// The file involved.
        path: PathBuf,
        /// The version found, `None` when the key is missing or not an integer.
        found: Option<u64>,
        /// The newest version this build reads ([`crate::SCHEMA_VERSION`]).
        supported: u32,
    },
    /// The embedded plot font could not be loaded.
    #[error("the embedded plot font could not be loaded")]
    Font,
    /// Another process holds the lock of a results directory
    /// ([`crate::run_dir::RunDir::open`]).
    #[error("{} is in use by {}", dir.display(), holder_text(.pid))]
    InUse {
        /// The results directory.
        dir: PathBuf,
        /// The holder's process id, when its lock file says it.
        pid: Option<u32>,
    },
    /// A results directory holds the other kind of results than the writer's: a sweep where
    /// a run is written, or a run where a sweep is ([`crate::run_dir::Holds`]).
    #[error(
        "{} holds {holds}, not {wants}: write {wants} into a directory of its own",
        dir.display()
    )]
    OtherKind {
        /// The results directory.
        dir: PathBuf,
        /// What it holds ("a run", "a sweep").
        holds: &'static str,
        /// What was to be written there.
        wants: &'static str,
    },
    /// Files in a results directory that no run of ours wrote have the names of files this
    /// run writes: they are not replaced, and nothing in the directory changed.
    #[error(
        "{} holds {} that this tool did not write, under names this run writes: they stay, \
         and nothing was replaced; move them or write the run elsewhere",
        dir.display(),
        names.join(", ")
    )]
    Foreign {
        /// The results directory.
        dir: PathBuf,
        /// The files' names.
        names: Vec<String>,
    },
    /// A commit into a results directory stopped halfway; its journal stays, and the next
    /// writer of the directory finishes it ([`crate::run_dir::RunDir::commit`]).
    #[error(
        "the results in {} were replaced only in part: the next `xrdma run` or `xrdma \
         report` there completes the replacement",
        dir.display()
    )]
    Commit {
        /// The results directory.
        dir: PathBuf,
        /// The step that failed.
        #[source]
        source: Box<ReportError>,
    },
    /// A run's files could not all be written, so none replaced the earlier run: `note` says
    /// what the directory holds ("DIR still holds the earlier run").
    #[error("{note}")]
    Unchanged {
        /// What the results directory holds.
        note: String,
        /// Why the run's files could not be written.
        #[source]
        source: Box<ReportError>,
    },
    /// The plotting library reported an error while drawing.
    #[error("plot rendering failed: {0}")]
    Plot(String),
}

/// What a result file says of its version, for [`ReportError::UnsupportedSchema`].
fn version_text(found: &Option<u64>) -> String {
    match found {
        Some(v) => format!("unsupported schema-version {v}"),
        None => "no integer `schema-version` key".to_string(),
    }
}

/// Who holds a results directory, for [`ReportError::InUse`].
fn holder_text(pid: &Option<u32>) -> String {
    match pid {
        Some(p) => format!("xrdma pid {p}"),
        None => "another xrdma process".to_string(),
    }
}
