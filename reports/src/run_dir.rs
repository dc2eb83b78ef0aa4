//! A results directory: one run's files, replaced as a whole.
//!
//! Every writer of a results directory (`xrdma run`, `xrdma report`, a sweep's index and
//! each of its points) goes through [`RunDir`]:
//!
//! 1. [`RunDir::open`] takes an exclusive advisory lock (`flock`) on `DIR/.xrdma/lock` and
//!    writes its pid there; a second writer is refused at once with
//!    [`ReportError::InUse`] ("DIR is in use by xrdma pid N"). The kernel releases the lock
//!    when the process ends, however it ends.
//! 2. The new files are written into `DIR/.xrdma/staging/` ([`RunDir::staging`]), on the same
//!    file system as `DIR`.
//! 3. [`RunDir::commit`] writes a journal (`DIR/.xrdma/commit`: the earlier run's files to
//!    remove, the staged files to move in, the new run's list), then carries it out: removes
//!    the earlier run's own files the new run does not replace, renames the staged files in,
//!    and records the new run's files in `DIR/.xrdma/files`. Once the journal is on disk the
//!    commit is decided: a process killed halfway leaves the journal, and the next
//!    [`RunDir::open`] finishes it before anything else. Before the journal, nothing in `DIR`
//!    has changed: a failed or interrupted run leaves the earlier run whole (its staged files
//!    are discarded when the [`RunDir`] is dropped, or by the next open).
//!
//! Only the files an earlier run recorded as its own are ever removed: a user's
//! `notes.pcap` or `stages.png` in a directory stay. A directory written before the list
//! existed counts as its own what its `result.json` implies ([`own_files_of`]).
//!
//! For a signal handler, [`interrupted`] waits for a commit in progress, discards every open
//! directory's staged files and says what each directory holds.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use fs4::FileExt;
use serde::{Deserialize, Serialize};

use crate::error::ReportError;
use crate::files::{read_json, write_atomic};
use crate::schema::RunResult;

/// The hidden sub-directory of a results directory that holds the lock, the list of the
/// run's files, the commit journal and the staged files.
pub const STATE_DIR: &str = ".xrdma";

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `Ok` when `r` succeeded or failed only because the path was not there.
fn ignore_missing(r: std::io::Result<()>, path: &Path) -> Result<(), ReportError> {
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(path)(e)),
        _ => Ok(()),
    }
}

/// An exclusive advisory lock on a file, held until dropped (or the process ends). The lock
/// file holds the holder's pid.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `lock_file` (created if missing) without waiting, on behalf of
    /// `what` (the directory named in the error). On a file system that has no locks, the
    /// lock is not taken and this succeeds.
    ///
    /// # Errors
    /// [`ReportError::InUse`] when another process (or another lock in this one) holds it,
    /// naming the holder's pid when the file says it; [`ReportError::Io`] when the file
    /// cannot be opened, locked or written.
    pub fn acquire(lock_file: &Path, what: &Path) -> Result<DirLock, ReportError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(lock_file)
            .map_err(io_err(lock_file))?;
        // Fully qualified: the standard library's own `File::try_lock` is newer than the
        // crates' minimum Rust.
        match FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(ReportError::InUse {
                    dir: what.to_path_buf(),
                    pid: text.trim().parse().ok(),
                });
            }
            // A file system without locks (some cluster file systems are mounted so): the
            // directory is written unguarded, as it was before there were locks.
            Err(fs4::TryLockError::Error(e)) if no_locks_here(&e) => {}
            Err(fs4::TryLockError::Error(e)) => return Err(io_err(lock_file)(e)),
        }
        file.set_len(0).map_err(io_err(lock_file))?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())
            .map_err(io_err(lock_file))?;
        Ok(DirLock { _file: file })
    }
}

/// Whether locking failed because the file system has no locks (ENOSYS, EOPNOTSUPP,
/// ENOLCK), not because of the directory.
fn no_locks_here(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported
        || matches!(
            e.raw_os_error(),
            Some(libc::ENOSYS | libc::EOPNOTSUPP | libc::ENOLCK)
        )
}

/// The journal of a commit (`.xrdma/commit`): what to remove, what to move in, the new list.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// The earlier run's files that the new run does not have.
    remove: Vec<String>,
    /// The staged files, moved into the directory under the same names.
    add: Vec<String>,
    /// The new run's files: what the next run may remove.
    own: Vec<String>,
}

/// What a results directory holds: one run's files, or a sweep's index beside its points.
/// A directory holds one of them; a writer of the other kind is refused
/// ([`ReportError::OtherKind`]), since replacing one by the other would leave the sweep's
/// points beside a run, or delete a run's `result.json` for a sweep's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// `xrdma run`, `xrdma report`, a sweep point, a calibration run: `result.json` and its
    /// report.
    Run,
    /// A sweep's index (`index.json`, its table, plots and page) beside `points/`.
    Sweep,
}

impl Holds {
    /// What the earlier run's files (`earlier`) show the directory holds; `None` when empty.
    fn of(earlier: &BTreeSet<String>) -> Option<Holds> {
        if earlier.contains("index.json") {
            Some(Holds::Sweep)
        } else if earlier.contains("result.json") {
            Some(Holds::Run)
        } else {
            None
        }
    }

    /// "a run" or "a sweep".
    pub fn name(self) -> &'static str {
        match self {
            Holds::Run => "a run",
            Holds::Sweep => "a sweep",
        }
    }
}

/// An open results directory, locked for this process: see the module docs.
#[derive(Debug)]
pub struct RunDir {
    dir: PathBuf,
    state: PathBuf,
    staging: PathBuf,
    earlier: BTreeSet<String>,
    keep: BTreeSet<String>,
    id: u64,
    _lock: DirLock,
}

/// The open directories of this process, for [`interrupted`]: (id, directory, staging,
/// whether it holds an earlier run).
static OPEN: Mutex<Vec<(u64, PathBuf, PathBuf, bool)>> = Mutex::new(Vec::new());
/// Held while a commit runs, and for good once [`interrupted`] was called.
static COMMIT: Mutex<()> = Mutex::new(());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn open_list() -> MutexGuard<'static, Vec<(u64, PathBuf, PathBuf, bool)>> {
    OPEN.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RunDir {
    /// Creates `dir` (and its parents) if needed, locks it, finishes a commit an earlier
    /// process left halfway, discards files an interrupted run left staged, and starts an
    /// empty staging directory.
    ///
    /// `holds` is what the writer puts there: a directory that holds the other kind is
    /// refused before anything is written.
    ///
    /// # Errors
    /// [`ReportError::InUse`] when another process writes `dir`; [`ReportError::OtherKind`]
    /// when it holds a sweep and a run is written, or the other way round;
    /// [`ReportError::Io`] when it cannot be created (e.g. it is a file), locked or cleaned;
    /// [`ReportError::Json`] for a journal that does not read back.
    pub fn open(dir: &Path, holds: Holds) -> Result<RunDir, ReportError> {
        let state = dir.join(STATE_DIR);
        std::fs::create_dir_all(&state).map_err(io_err(dir))?;
        let lock = DirLock::acquire(&state.join("lock"), dir)?;
        let staging = state.join("staging");
        let journal = state.join("commit");
        if journal.exists() {
            let text = std::fs::read_to_string(&journal).map_err(io_err(&journal))?;
            let j: Journal = serde_json::from_str(&text).map_err(|source| ReportError::Json {
                path: journal.clone(),
                source,
            })?;
            roll_forward(dir, &state, &j)?;
        }
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(io_err(&staging))?;
        }
        std::fs::create_dir_all(&staging).map_err(io_err(&staging))?;
        let earlier = earlier_files(dir, &state);
        if let Some(found) = Holds::of(&earlier).filter(|h| *h != holds) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(ReportError::OtherKind {
                dir: dir.to_path_buf(),
                holds: found.name(),
                wants: holds.name(),
            });
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        open_list().push((id, dir.to_path_buf(), staging.clone(), !earlier.is_empty()));
        Ok(RunDir {
            dir: dir.to_path_buf(),
            state,
            staging,
            earlier,
            keep: BTreeSet::new(),
            id,
            _lock: lock,
        })
    }

    /// The results directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the new run's files are written before [`RunDir::commit`] moves them in.
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// Whether `name` is a file the earlier run in this directory recorded as its own.
    pub fn earlier_has(&self, name: &str) -> bool {
        self.earlier.contains(name)
    }

    /// Keeps the earlier run's file `name` as one of the new run's (`xrdma report` keeps the
    /// `result.json` it redraws): not removed at the commit, and listed as the new run's.
    /// A name the earlier run did not record as its own is ignored (it is not ours to claim).
    pub fn keep(&mut self, name: &str) {
        if self.earlier.contains(name) {
            self.keep.insert(name.to_string());
        }
    }

    /// What the directory holds when this run does not commit: "DIR still holds the earlier
    /// run", or "nothing was written to DIR" when there was none.
    pub fn unchanged_note(&self) -> String {
        note(&self.dir, !self.earlier.is_empty())
    }

    /// Replaces the earlier run's files by the staged ones (see the module docs): after it
    /// returns, the directory holds the new run, and only it, beside files no run wrote.
    ///
    /// A staged file whose name a file in the directory already has, one that no run of
    /// ours wrote (a user's `messages.csv` or `stages.png`), is not replaced: the commit is
    /// refused and nothing changes ([`ReportError::Foreign`]).
    ///
    /// # Errors
    /// [`ReportError::Foreign`] for such files; [`ReportError::Io`] when the journal cannot
    /// be written (nothing changed then), or when a step of the commit fails
    /// ([`ReportError::Commit`]: the journal stays, and the next open of the directory
    /// finishes the commit).
    pub fn commit(self) -> Result<(), ReportError> {
        let _one = COMMIT.lock().unwrap_or_else(PoisonError::into_inner);
        let mut add = Vec::new();
        for entry in std::fs::read_dir(&self.staging).map_err(io_err(&self.staging))? {
            let entry = entry.map_err(io_err(&self.staging))?;
            let is_file = entry.file_type().map_err(io_err(&self.staging))?.is_file();
            if let (true, Ok(name)) = (is_file, entry.file_name().into_string()) {
                add.push(name);
            }
        }
        add.sort();
        let foreign: Vec<String> = add
            .iter()
            .filter(|n| !self.earlier.contains(*n) && self.dir.join(n).exists())
            .cloned()
            .collect();
        if !foreign.is_empty() {
            return Err(ReportError::Foreign {
                dir: self.dir.clone(),
                names: foreign,
            });
        }
        let own: BTreeSet<String> = add.iter().cloned().chain(self.keep.clone()).collect();
        let j = Journal {
            remove: self.earlier.difference(&own).cloned().collect(),
            add,
            own: own.into_iter().collect(),
        };
        let text = serde_json::to_string_pretty(&j).map_err(|source| ReportError::Json {
            path: self.state.join("commit"),
            source,
        })?;
        write_atomic(&self.state.join("commit"), text.as_bytes())?;
        // Decided: from here the staged files belong to the journal, not to `Drop`.
        open_list().retain(|(id, ..)| *id != self.id);
        roll_forward(&self.dir, &self.state, &j).map_err(|e| ReportError::Commit {
            dir: self.dir.clone(),
            source: Box::new(e),
        })
    }
}

impl Drop for RunDir {
    /// Discards what was staged and not committed (nothing in the directory changes).
    fn drop(&mut self) {
        let mut open = open_list();
        if open.iter().any(|(id, ..)| *id == self.id) {
            let _ = std::fs::remove_dir_all(&self.staging);
            open.retain(|(id, ..)| *id != self.id);
        }
    }
}

fn note(dir: &Path, earlier: bool) -> String {
    if earlier {
        format!("{} still holds the earlier run", dir.display())
    } else {
        format!("nothing was written to {}", dir.display())
    }
}

/// Carries out journal `j` in `dir` (idempotent: a step already done is skipped).
fn roll_forward(dir: &Path, state: &Path, j: &Journal) -> Result<(), ReportError> {
    let staging = state.join("staging");
    for name in &j.remove {
        let path = dir.join(name);
        ignore_missing(std::fs::remove_file(&path), &path)?;
    }
    for name in &j.add {
        let from = staging.join(name);
        let to = dir.join(name);
        match std::fs::rename(&from, &to) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !from.exists() => {}
            r => r.map_err(io_err(&to))?,
        }
    }
    let mut list = j.own.join("\n");
    list.push('\n');
    write_atomic(&state.join("files"), list.as_bytes())?;
    ignore_missing(std::fs::remove_dir_all(&staging), &staging)?;
    let journal = state.join("commit");
    ignore_missing(std::fs::remove_file(&journal), &journal)
}

/// The files the run in `dir` recorded as its own; for a directory written before that
/// list existed, what its `result.json` implies; empty when there is no run.
fn earlier_files(dir: &Path, state: &Path) -> BTreeSet<String> {
    if let Ok(text) = std::fs::read_to_string(state.join("files")) {
        // Plain file names only: a list edited by hand cannot reach outside the directory.
        return text
            .lines()
            .filter(|l| Path::new(l).file_name().is_some_and(|n| n == *l))
            .map(String::from)
            .collect();
    }
    match read_json(&dir.join("result.json")) {
        Ok(r) => own_files_of(&r).into_iter().collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// The files `xrdma run` writes for `r` (not `messages.csv`, which depends on `--csv`):
/// `result.json`, `summary.txt`, `latency.svg`, `report.html`, the plots `r` has, and the
/// captures it lists.
pub fn own_files_of(r: &RunResult) -> Vec<String> {
    let mut v: Vec<String> = ["result.json", "summary.txt", "latency.svg", "report.html"]
        .map(String::from)
        .to_vec();
    for stem in plot_stems_of(r) {
        v.push(format!("{stem}.svg"));
        v.push(format!("{stem}.png"));
    }
    if let Some(sim) = &r.sim {
        v.extend(sim.captures.iter().map(|c| c.file.clone()));
    }
    v
}

/// For a signal handler: waits for a commit in progress to end, stops every later one,
/// discards the staged files of every open directory, and returns what each holds
/// ("DIR still holds the earlier run", or "nothing was written to DIR"). The process is
/// expected to exit right after.
pub fn interrupted() -> Vec<String> {
    // Never released: no commit may start once the process is on its way out.
    std::mem::forget(COMMIT.lock().unwrap_or_else(PoisonError::into_inner));
    let mut open = open_list();
    let notes = open
        .iter()
        .map(|(_, dir, staging, earlier)| {
            let _ = std::fs::remove_dir_all(staging);
            note(dir, *earlier)
        })
        .collect();
    open.clear();
    notes
}

/// File stems of the plots, each written as `STEM.svg` and `STEM.png`: the completion-time
/// CDF and its tail (1 − CDF, log–log), the per-sender completion times, and (with a time series) the bottleneck queue,
/// throughput and congestion signals over time, and (for a traced run) the stages of the
/// message at each completion percentile.
pub const PLOT_STEMS: [&str; 7] = [
    "latency-cdf",
    "latency-ccdf",
    "completion",
    "queue",
    "throughput",
    "congestion",
    "stages",
];

/// The plot stems `r` has, in [`PLOT_STEMS`] order: the CDF, its tail and the per-sender completions
/// always, the time-series plots when it has a time series, the stages when it was traced.
pub(crate) fn plot_stems_of(r: &RunResult) -> Vec<&'static str> {
    let mut v = PLOT_STEMS[..3].to_vec();
    if r.timeseries.is_some() {
        v.extend_from_slice(&PLOT_STEMS[3..6]);
    }
    if crate::stages::summarize(r).is_some() {
        v.push(PLOT_STEMS[6]);
    }
    v
}
