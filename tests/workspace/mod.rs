//! What the structure tests share: the workspace as `cargo metadata` describes it.

use serde_json::Value;
use std::process::Command;

/// `cargo metadata --no-deps --offline` of this workspace, parsed.
///
/// # Panics
/// When cargo cannot be run or answers with something other than metadata (a broken test
/// environment, not a finding).
pub fn metadata() -> Value {
    let o = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("metadata is JSON")
}
