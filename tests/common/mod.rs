//! What the integration tests share: the small incast the sweep tests sweep, a scratch
//! directory, planning, and the delivery check of a run that must lose nothing.

#![allow(dead_code)] // each test crate uses part of it

use std::path::{Path, PathBuf};
use xrdma_cluster::sweep::{self, Plan};

/// The base scenario of the sweep tests: an 8:1 incast of 2 × 64 KiB and 1 × 1 MiB per sender.
pub const BASE: &str = "name: small
workload:
  incast:
    senders: 8
    receiver: 0
    messages:
      - { size: 64KiB, count: 2 }
      - { size: 1MiB, count: 1 }
xrdma: { initial-window: 64KiB }
sim:
  ecn: { kmin: 400KB, kmax: 1600KB, pmax: 0.2 }
  pfc: {}
";

/// The small sweep: fan-in 2 and 4 with 4 KiB messages.
pub const SMALL: [&str; 2] = ["fan-in=2,4", "size=4KiB"];

/// A fresh, empty directory `xrdma-TEST-PID-NAME` under the temporary directory.
pub fn scratch(test: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-{test}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes [`BASE`] as `dir/small.yaml` and returns its path.
pub fn write_base(dir: &Path) -> PathBuf {
    let path = dir.join("small.yaml");
    std::fs::write(&path, BASE).unwrap();
    path
}

/// The plan of `axes` over the scenario at `path` (written by [`write_base`]).
pub fn plan_at(path: &Path, axes: &[&str]) -> anyhow::Result<Plan> {
    let base = xrdma_scenario::load(path)?;
    sweep::plan(base, BASE.to_string(), sweep::parse_axes(axes)?)
}

/// Every message of `r` delivered once, intact, completed at its sender, no error, and the
/// result consistent with itself ([`xrdma_reports::RunResult::validate`]: T* below the last
/// completion among its checks).
pub fn all_delivered(r: &xrdma_reports::RunResult) {
    let d = &r.delivery;
    assert_eq!(
        d.delivered as usize,
        r.messages.len(),
        "{d:?} {:?}",
        r.errors
    );
    assert_eq!((d.missing, d.digest_mismatches, d.duplicates), (0, 0, 0));
    assert!(r.messages.iter().all(|m| m.completed_ps.is_some()));
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.validate().is_empty(), "{:?}", r.validate());
}

/// The latest completion of `r`'s messages, ps after time 0 (0 when none completed).
pub fn last_completion(r: &xrdma_reports::RunResult) -> u64 {
    r.messages
        .iter()
        .filter_map(|m| m.completed_ps)
        .max()
        .unwrap_or(0)
}
