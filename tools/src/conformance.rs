//! The conformance suite: scenario-level test bodies that every backend must pass unchanged.
//!
//! A case is a scenario (YAML, as a user would write it) and the checks on its result. The
//! simulator runs the suite in `cargo test`; `xrdma conformance --backend verbs` runs the very
//! same cases on a real RDMA device (Soft-RoCE in CI).

use anyhow::{bail, Result};
use std::path::Path;
use xrdma_reports::RunResult;
use xrdma_scenario::Scenario;

/// One conformance case.
pub struct Case {
    /// Short name, printed with its outcome.
    pub name: &'static str,
    /// The scenario, as YAML.
    pub yaml: &'static str,
    /// Messages the scenario sends in all.
    pub messages: u64,
}

/// The cases, in the order they run.
pub const CASES: &[Case] = &[
    Case {
        name: "edge-sizes",
        // Sizes around the 1 KiB MTU, the 4 KiB small-message limit, the 64 KiB fragment,
        // and one 8 MiB message.
        yaml: "name: conformance-edge-sizes
workload:
  incast:
    senders: 1
    receiver: 0
    messages:
      - { size: 1023B }
      - { size: 1024B }
      - { size: 1025B }
      - { size: 4096B }
      - { size: 4097B }
      - { size: 65536B }
      - { size: 65537B }
      - { size: 8MiB }
sim:
  pfc: {}
",
        messages: 8,
    },
    Case {
        name: "small-window",
        // A 4 KiB window with 4 KiB fragments: at most one fragment in flight, so every
        // message moves through many ACK round trips.
        yaml: "name: conformance-small-window
workload:
  incast:
    senders: 2
    receiver: 1
    messages:
      - { size: 100KiB, count: 5 }
xrdma:
  fragment-size: 4KiB
  initial-window: 4KiB
  min-window: 4KiB
  max-window: 8KiB
sim:
  pfc: {}
",
        messages: 10,
    },
    Case {
        name: "incast-4",
        yaml: "name: conformance-incast-4
workload:
  incast:
    senders: 4
    receiver: 0
    messages:
      - { size: 64KiB, count: 4 }
      - { size: 1MiB, count: 1 }
sim:
  ecn: { kmin: 400KB, kmax: 1600KB, pmax: 0.2 }
  pfc: {}
",
        messages: 20,
    },
    Case {
        name: "rc-attributes",
        // An `rc:` block other than the defaults: the transport must apply exactly these
        // codes (checked for every case in `check_result`).
        yaml: "name: conformance-rc-attributes
workload:
  incast:
    senders: 2
    receiver: 0
    messages:
      - { size: 200KiB, count: 2 }
rc:
  local-ack-timeout: 15
  retry-cnt: 6
  rnr-retry: 7
  min-rnr-timer: 5
  path-mtu: 1KiB
sim:
  pfc: {}
",
        messages: 4,
    },
];

/// Check one case's result: every message delivered intact exactly once and ACKed, no
/// middleware error, every completion after its intended send, and the transport's RC QP
/// attributes those of the case's `rc:` block (the path MTU at most the block's, the local
/// ACK timeout at least the block's).
///
/// # Errors
/// What is wrong, in one line.
pub fn check_result(case: &Case, r: &RunResult) -> Result<()> {
    let d = &r.delivery;
    if d.delivered != case.messages || d.missing + d.digest_mismatches + d.duplicates > 0 {
        bail!(
            "{}: {} of {} delivered intact ({} missing, {} corrupted, {} duplicated)",
            case.name,
            d.delivered,
            case.messages,
            d.missing,
            d.digest_mismatches,
            d.duplicates
        );
    }
    if let Some(e) = r.errors.first() {
        bail!("{}: the middleware reported: {e}", case.name);
    }
    let unacked = r
        .messages
        .iter()
        .filter(|m| m.completed_ps.is_none())
        .count();
    if unacked > 0 {
        bail!(
            "{}: {unacked} message(s) delivered but never ACKed",
            case.name
        );
    }
    if let Some(p) = r.validate().first() {
        bail!("{}: inconsistent result: {p}", case.name);
    }
    let want = scenario(case)?.rc_params();
    let Some(t) = &r.transport else {
        bail!(
            "{}: the result does not say which RC attributes applied",
            case.name
        );
    };
    let got = &t.rc;
    let codes = (got.retry_cnt, got.rnr_retry, got.min_rnr_timer);
    let asked = (want.retry_cnt, want.rnr_retry, want.min_rnr_timer);
    // A backend may lengthen the local ACK timeout (Soft-RoCE applies at least code 17,
    // `xrdma_verbs::soft_roce`), never shorten it or turn the timer on or off.
    let timeout_ok = match (want.local_ack_timeout, got.local_ack_timeout) {
        (0, g) => g == 0,
        (w, g) => g >= w,
    };
    if codes != asked || !timeout_ok || got.path_mtu > want.path_mtu || got.path_mtu == 0 {
        bail!(
            "{}: the transport applied RC attributes {got:?}, the scenario asks for {want:?}",
            case.name
        );
    }
    Ok(())
}

/// Parse a case's scenario.
///
/// # Errors
/// A malformed case (a bug in this file).
pub fn scenario(case: &Case) -> Result<Scenario> {
    Ok(xrdma_scenario::parse(case.yaml, Path::new(case.name))?)
}

/// Run every case with `run` (a backend's scenario runner); returns (passed, failures).
pub fn run_all(run: &mut dyn FnMut(&Scenario) -> Result<RunResult>) -> (usize, Vec<String>) {
    let mut passed = 0;
    let mut failures = Vec::new();
    for case in CASES {
        match scenario(case)
            .and_then(|sc| run(&sc))
            .and_then(|r| check_result(case, &r))
        {
            Ok(()) => passed += 1,
            Err(e) => failures.push(format!("{}: {e:#}", case.name)),
        }
    }
    (passed, failures)
}
