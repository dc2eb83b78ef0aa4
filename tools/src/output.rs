//! Standard output that outlives its reader: `xrdma run … | head` must not panic when `head`
//! exits (Rust's `println!` panics on `EPIPE`, exit 101 with a backtrace). A closed pipe is
//! ignored: the run goes on, its files are written and its exit status is kept; only the
//! terminal text is cut short. Any other write error is said once on standard error.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// The run finished but its result shows a failure.
pub const EXIT_RESULT_FAILED: u8 = 2;

static WARNED: AtomicBool = AtomicBool::new(false);

/// Write `args` to standard output, ignoring a closed pipe (see the module docs).
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let r = out.write_fmt(args).and_then(|()| out.flush());
    if let Err(e) = r {
        if e.kind() != std::io::ErrorKind::BrokenPipe && !WARNED.swap(true, Ordering::Relaxed) {
            // Standard error may be closed too: nothing more can be said then.
            let _ = writeln!(std::io::stderr(), "warning: standard output: {e}");
        }
    }
}

/// `print!` that ignores a closed pipe ([`write()`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write(format_args!($($arg)*)) };
}

/// `println!` that ignores a closed pipe ([`write()`]).
#[macro_export]
macro_rules! outln {
    () => { $crate::output::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Why a run's result is a failure, one reason a line (empty when it passed): no message
/// sent, messages missing, corrupted or duplicated, or an inconsistency from
/// [`xrdma_reports::RunResult::validate`] (a message delivered but not complete, or the other
/// way, a drop on a lossless fabric, ...). `run`, `report` and `compare` judge by it.
pub fn failures(result: &xrdma_reports::RunResult) -> Vec<String> {
    let d = &result.delivery;
    let mut out = Vec::new();
    if result.messages.is_empty() {
        out.push("the workload sent no message (check its start, rate and duration)".into());
    }
    if d.missing + d.digest_mismatches + d.duplicates > 0 {
        out.push(format!(
            "{} message(s) missing, {} corrupted, {} duplicated",
            d.missing, d.digest_mismatches, d.duplicates
        ));
    }
    for problem in result.validate() {
        out.push(format!("inconsistent result: {problem}"));
    }
    out
}

/// The exit status a run's result earns, as `run` and `report` give it: 0 when it has no
/// [`failures`], else 2 with a `FAILED:` line for each.
pub fn verdict(result: &xrdma_reports::RunResult) -> ExitCode {
    let reasons = failures(result);
    for r in &reasons {
        eprintln!("FAILED: {r}");
    }
    if reasons.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_RESULT_FAILED)
    }
}

/// Prints `wrote PATH` for every report file in `files` (not `result.json`).
pub fn print_written(files: &xrdma_reports::RunFiles) {
    let fixed = [&files.summary_txt, &files.latency_svg];
    let rest = files.plots.iter().chain([&files.report_html]);
    for f in fixed
        .into_iter()
        .chain(rest)
        .chain(files.messages_csv.as_ref())
    {
        outln!("wrote {}", f.display());
    }
}

/// Create the output directory before the run, so an unwritable path fails in a second, not
/// after the simulation.
///
/// # Errors
/// The path exists and is not a directory, or it cannot be created.
pub fn prepare_out_dir(out: &Path) -> Result<()> {
    if out.exists() && !out.is_dir() {
        bail!(
            "output path {} exists and is not a directory",
            out.display()
        );
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create output directory {}", out.display()))
}

/// Create and lock the output directory before the run ([`xrdma_reports::RunDir`]): a path
/// that is not a directory, cannot be created, or that another process is writing fails in
/// a second, not after the simulation.
///
/// `holds` is what is written there (a run, a sweep).
///
/// # Errors
/// As [`prepare_out_dir`]; the directory is in use by another process ("DIR is in use by
/// xrdma pid N"), holds the other kind of results, or cannot be locked.
pub fn open_out_dir(
    out: &Path,
    holds: xrdma_reports::run_dir::Holds,
) -> Result<xrdma_reports::RunDir> {
    prepare_out_dir(out)?;
    Ok(xrdma_reports::RunDir::open(out, holds)?)
}
