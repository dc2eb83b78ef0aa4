//! # xrdma-scenario — YAML scenarios for the xrdma test bed
//!
//! A scenario file carries the workload, the middleware settings, the RC QP attributes every
//! backend applies (`rc:`), and per-backend blocks (`sim:` for the packet-level simulator,
//! `verbs:` for real RDMA devices), so one file runs unchanged, with the same meaning, on
//! either backend:
//!
//! ```yaml
//! name: incast-8
//! workload:
//!   incast:
//!     senders: 8
//!     receiver: 0
//!     messages:
//!       - { size: 64KiB, count: 4 }
//!       - { size: 1MiB, count: 1 }
//! xrdma: { beta: 0.5 }
//! rc: { local-ack-timeout: 12, min-rnr-timer: 1 }
//! sim: { link-rate: 100Gbps, ecn: { kmin: 400KB, kmax: 1600KB, pmax: 0.2 }, pfc: {} }
//! ```
//!
//! Keys are kebab-case and unknown keys are rejected. Sizes, rates and times take units
//! ([`units`]). [`load`] and [`parse`] return a [`Scenario`] with every default filled in, or a
//! [`ScenarioError`] naming the file, line, column and field, e.g.
//! ``scenarios/x.yaml:5:5: workload.incast: unknown field `sendrs`, expected one of `senders`,
//! `receiver`, `start`, `messages` ``. This crate only parses: nothing is started.
//!
//! ## How errors are located
//!
//! A file is read in two passes, and each error carries its place as data:
//!
//! 1. **Deserialization** (serde_yaml_ng, through serde_path_to_error) reads every section's
//!    raw form: key names, types and units. Its errors keep serde_yaml_ng's own location (the
//!    unknown key, the value that does not read, the mapping that misses a key) and the field
//!    path serde_path_to_error records as segments.
//! 2. **Checks** then turn the raw forms into the section types, children first, and refuse
//!    what the types cannot say (β outside [0.5, 0.8], Kmin > Kmax, a receiver that is not a
//!    host). A failed check returns the mapping's field path, the keys to blame and the
//!    message; the file's span index, built from a YAML parser's events (saphyr-parser), gives
//!    the line and column of the first blamed key written there, or of the mapping itself.
//!
//! [`locate_key`] looks up the same index for errors found after parsing (a backend refusing
//! a value).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod capture_section;
mod check;
mod echo;
mod error;
mod faults_section;
mod field_path;
mod heartbeat_section;
mod host_section;
mod nesting;
mod open_loop;
mod rc_section;
mod sim_section;
mod span_index;
mod traffic;
pub mod units;
mod verbs_section;
mod workload;
mod xrdma_section;

pub use echo::{Echo, ResponseSize, DEFAULT_TIME_LIMIT};
pub use error::{without_long_quotes, Diagnostic, ScenarioError, MAX_ECHOED_CHARS};
pub use faults_section::{HostFaults, SlowReceiver};
pub use heartbeat_section::{
    Heartbeat, MAX_HEARTBEAT_HOST, MAX_HEARTBEAT_SIZE, MIN_HEARTBEAT_INTERVAL, MIN_HEARTBEAT_SIZE,
};
pub use open_loop::{OpenLoop, OpenLoopEnd, DEFAULT_DRAIN, MAX_OPEN_LOOP_MESSAGES};
pub use sim_section::{SimSection, DEFAULT_SAMPLE_INTERVAL};
pub use span_index::locate_key;
pub use traffic::{parse_message_rate, MessageRate, RateError, SizeChoice, SizeDist, Stall};
pub use verbs_section::{RankSpec, VerbsSection};
pub use workload::{Incast, MessageSpec, Workload};
pub use xrdma_reports::Stack;
pub use xrdma_section::MIN_FRAGMENT_SIZE;
pub use xrdma_sim::TcpSettings;

use check::{field_error, under, FieldError};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A parsed and checked scenario. Plain typed values (bytes as `u64`, rates in bits per second,
/// durations as [`xrdma::Span`], the `start:` and `at:` instants as [`xrdma::Time`] on the run's
/// clock, which starts at [`xrdma::Time::ZERO`] on every fabric) with defaults filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name of the scenario (`name:`), non-empty, without `/` or `\` (it names result
    /// directories).
    pub name: String,
    /// Free text (`description:`).
    pub description: Option<String>,
    /// What the hosts send (`workload:`).
    pub workload: Workload,
    /// Middleware settings (`xrdma:`, read as [`xrdma::Config`]); all defaults when the block
    /// is absent.
    pub xrdma: xrdma::Config,
    /// The RC QP attributes every backend applies (`rc:`, read as [`xrdma::RcParams`]); all
    /// defaults when the block is absent.
    pub rc: xrdma::RcParams,
    /// The simulated network (`sim:`); `None` when the block is absent (the simulator then uses
    /// [`SimSection::default`]).
    pub sim: Option<SimSection>,
    /// The `verbs:` block (the real-RDMA backend reads it; the simulator ignores it).
    pub verbs: Option<VerbsSection>,
    /// The message stack the workload runs over (`stack:`, default `xrdma`).
    pub stack: Stack,
    /// The hosts' kernel TCP (`tcp:`, read as [`TcpSettings`]; Linux's defaults when the
    /// block is absent); used when `stack` is `tcp` or `dctcp`.
    pub tcp: TcpSettings,
    /// A ping between two hosts while the workload runs (`heartbeat:`); `None` when the key
    /// is absent.
    pub heartbeat: Option<Heartbeat>,
    /// Whether the result keeps every message's stage breakdown (`trace:`, default false;
    /// `xrdma run --trace` sets it): where its completion time went, which `xrdma trace`
    /// summarises and plots. Off by default because it adds six numbers per message.
    pub trace: bool,
    /// Whether a simulated run is refused when its memory estimate exceeds the memory
    /// available (true when read; `xrdma run --no-memory-check` clears it, for an estimate
    /// the user knows to be high, or swap they mean to use).
    pub check_memory: bool,
    /// The file the scenario was read from (as given to [`load`] or [`parse`]).
    pub source_path: PathBuf,
    /// Settings changed after the file was read (a sweep's `--axis`), so an error about one
    /// of them names where the value came from instead of the file's line for that key.
    /// Empty for a scenario as read.
    pub overrides: Vec<Override>,
}

/// A setting of a [`Scenario`] given outside its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    /// The scenario key it sets, as a path from the top (`["xrdma", "initial-window"]`);
    /// an error about this key or one below it is blamed on `origin`.
    pub key: Vec<String>,
    /// Where the value came from, as the user wrote it (`--axis initial-window=1B`).
    pub origin: String,
}

impl Scenario {
    /// The hosts a fabric needs for the run: the workload's, and the heartbeat's if it names
    /// hosts beyond them.
    pub fn hosts(&self) -> u32 {
        let beat = self.heartbeat.map_or(0, |h| h.hosts());
        self.workload.hosts().max(beat)
    }

    /// The `sim:` block, or the defaults when it is absent.
    pub fn sim_or_default(&self) -> SimSection {
        self.sim.clone().unwrap_or_default()
    }

    /// The RC QP attributes a backend is configured with: the `rc:` block with defaults
    /// filled in (a backend then lowers the path MTU to its port's MTU).
    pub fn rc_params(&self) -> xrdma::RcParams {
        self.rc
    }

    /// The override behind an error about `key` (a path from the top), if one set it or a
    /// mapping above it.
    pub fn override_of(&self, key: &[&str]) -> Option<&Override> {
        self.overrides
            .iter()
            .find(|o| o.key.len() <= key.len() && o.key.iter().zip(key).all(|(a, b)| a == b))
    }
}

/// Reads and checks the scenario file at `path`.
///
/// # Errors
/// [`ScenarioError::Read`] if the file cannot be read; [`ScenarioError::Invalid`] as in
/// [`parse`].
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    use std::io::Read as _;
    let read_err = |source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Read at most one byte past the limit, so a device or a huge file is refused without
    // being read whole.
    // A FIFO or a device would block or never end: only a regular file (or a link to one)
    // is read.
    let meta = std::fs::metadata(path).map_err(read_err)?;
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(read_err(std::io::Error::other(format!(
            "{kind}; a scenario is a YAML file"
        ))));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SCENARIO_BYTES + 1).read_to_string(&mut text))
        .map_err(read_err)?;
    if text.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(read_err(std::io::Error::other(format!(
            "larger than {MAX_SCENARIO_BYTES} bytes (1 MiB); a scenario is a short YAML file"
        ))));
    }
    parse(&text, path)
}

/// The latest `start` a workload may have: one hour, far from the end of the simulator's
/// u64-picosecond clock (about 213 days) so every deadline after it fits.
pub const MAX_START: xrdma::Time = xrdma::Time::from_ps(xrdma::Span::from_ms(3_600_000).as_ps());

/// The longest scenario `name`, bytes: it names result directories, and a file name holds at
/// most 255 bytes (Linux's `NAME_MAX`), less what the tool adds to it (a sweep point's
/// suffix, a staging directory's prefix).
pub const MAX_NAME_BYTES: usize = 200;

/// The largest scenario file read, bytes: the shipped ones are a few KiB.
pub const MAX_SCENARIO_BYTES: u64 = 1 << 20;

/// Parses and checks the scenario `text`; `path_for_messages` names the file in errors and
/// becomes [`Scenario::source_path`].
///
/// # Errors
/// [`ScenarioError::Invalid`] for YAML syntax errors, unknown keys (listing the expected
/// ones), missing required keys (at the line of the enclosing mapping), values without a valid
/// unit, and failed checks (e.g. receiver not a host, β outside [0.5, 0.8], min-window >
/// initial-window, Kmin > Kmax, Pmax outside (0, 1], zero MTU).
pub fn parse(text: &str, path_for_messages: &Path) -> Result<Scenario, ScenarioError> {
    // A UTF-8 byte order mark may start a YAML stream (YAML 1.2, §5.2); lines and columns
    // count from the text after it, as an editor shows them.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let has_content = text.lines().any(|l| {
        let l = l.trim();
        !l.is_empty() && !l.starts_with('#') && l != "---" && l != "..."
    });
    if !has_content {
        return Err(ScenarioError::Invalid(Box::new(Diagnostic {
            path: path_for_messages.to_path_buf(),
            line: Some(1),
            column: Some(1),
            field: None,
            message: "the file is empty: expected a scenario mapping with at least `name` and \
                      `workload`"
                .into(),
        })));
    }
    if let Some((line, column)) = nesting::too_deep(text) {
        return Err(ScenarioError::Invalid(Box::new(Diagnostic {
            path: path_for_messages.to_path_buf(),
            line: Some(line),
            column: Some(column),
            field: None,
            message: format!(
                "flow collections (`[`, `{{`) nested deeper than {} levels",
                nesting::MAX_FLOW_DEPTH
            ),
        })));
    }
    let raw: RawBody =
        serde_path_to_error::deserialize(serde_yaml_ng::Deserializer::from_str(text))
            .map_err(|e| ScenarioError::from_serde(e, text, path_for_messages))?;
    // Whether `rc.path-mtu` is written (a default one is the port's, see `check_path_mtu`).
    let path_mtu_written = locate_key(text, &["rc", "path-mtu"]).is_some_and(|(_, _, n)| n == 2);
    let body = check_body(raw, path_mtu_written)
        .map_err(|e| ScenarioError::from_check(e, text, path_for_messages))?;
    Ok(Scenario {
        name: body.name,
        description: body.description,
        workload: body.workload,
        xrdma: body.xrdma,
        rc: body.rc,
        sim: body.sim,
        verbs: body.verbs,
        stack: body.stack,
        tcp: body.tcp,
        heartbeat: body.heartbeat,
        trace: body.trace,
        check_memory: true,
        source_path: path_for_messages.to_path_buf(),
        overrides: Vec::new(),
    })
}

/// The file's top-level mapping, checked.
struct Body {
    name: String,
    description: Option<String>,
    workload: Workload,
    xrdma: xrdma::Config,
    rc: xrdma::RcParams,
    sim: Option<SimSection>,
    verbs: Option<VerbsSection>,
    stack: Stack,
    tcp: TcpSettings,
    heartbeat: Option<Heartbeat>,
    trace: bool,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a scenario)"
)]
struct RawBody {
    name: String,
    description: Option<String>,
    workload: workload::RawWorkload,
    #[serde(default)]
    xrdma: xrdma::Config,
    #[serde(default)]
    rc: xrdma::RcParams,
    sim: Option<sim_section::RawSim>,
    verbs: Option<verbs_section::RawVerbs>,
    #[serde(default)]
    stack: Stack,
    #[serde(default)]
    tcp: TcpSettings,
    heartbeat: Option<Heartbeat>,
    #[serde(default)]
    trace: bool,
}

/// Checks the sections, then what the top level says across them; `path_mtu_written` says
/// whether the file writes `rc.path-mtu`.
fn check_body(raw: RawBody, path_mtu_written: bool) -> Result<Body, FieldError> {
    let workload = workload::check_workload(raw.workload).map_err(under("workload"))?;
    let xrdma = xrdma_section::check_xrdma(raw.xrdma).map_err(under("xrdma"))?;
    let rc = rc_section::check_rc(raw.rc).map_err(under("rc"))?;
    let sim = raw
        .sim
        .map(sim_section::check_sim)
        .transpose()
        .map_err(under("sim"))?;
    let verbs = raw
        .verbs
        .map(verbs_section::check_verbs)
        .transpose()
        .map_err(under("verbs"))?;
    if let Err((field, reason)) = raw.tcp.validate() {
        let key = field.strip_prefix("tcp.").unwrap_or(field);
        return Err(field_error(key, reason).under("tcp"));
    }
    let heartbeat = raw
        .heartbeat
        .map(heartbeat_section::check_heartbeat)
        .transpose()
        .map_err(under("heartbeat"))?;
    let body = Body {
        name: raw.name,
        description: raw.description,
        workload,
        xrdma,
        rc,
        sim,
        verbs,
        stack: raw.stack,
        tcp: raw.tcp,
        heartbeat,
        trace: raw.trace,
    };
    if body.name.trim().is_empty() {
        return Err(field_error("name", "must not be empty"));
    }
    if matches!(body.name.trim(), "." | "..") {
        return Err(field_error(
            "name",
            format!(
                "{:?} names a directory, not a run; it names result directories",
                body.name
            ),
        ));
    }
    if body.name.contains(['/', '\\']) || body.name.chars().any(char::is_control) {
        return Err(field_error(
            "name",
            format!(
                "{:?} contains `/`, `\\` or a control character; it names result directories",
                body.name
            ),
        ));
    }
    if body.name.len() > MAX_NAME_BYTES {
        return Err(field_error(
            "name",
            format!(
                "is {} bytes long; it names result directories, so at most {MAX_NAME_BYTES} \
                 bytes (a file name holds at most 255, and the tool adds to it)",
                body.name.len()
            ),
        ));
    }
    if body.workload.start() > MAX_START {
        return Err(field_error(
            "workload",
            format!(
                "starts at {}, after {MAX_START}: the simulator's clock (u64 picoseconds) must \
                 hold the whole run after it",
                body.workload.start()
            ),
        ));
    }
    if let Some(v) = &body.verbs {
        v.check_hosts(body.workload.hosts())
            .map_err(|m| field_error("verbs", format!("ranks: {m}")))?;
    }
    if let Some(c) = body.sim.as_ref().and_then(|s| s.capture.as_ref()) {
        c.check_hosts(body.workload.hosts())
            .map_err(|m| field_error("sim", format!("capture: hosts: {m}")))?;
    }
    rc_section::check_path_mtu(&body.rc, path_mtu_written, body.sim.as_ref())?;
    Ok(body)
}
