//! Helpers shared by the scenario tests: parse or fail, and a one-line valid scenario.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use xrdma_scenario::{parse, Incast, Scenario, Workload};

pub const FILE: &str = "scenarios/x.yaml";

pub fn ok(text: &str) -> Scenario {
    match parse(text, Path::new(FILE)) {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// The error's full message; the test fails if parsing succeeds.
pub fn err(text: &str) -> String {
    match parse(text, Path::new(FILE)) {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e.to_string(),
    }
}

pub fn incast(s: &Scenario) -> &Incast {
    match &s.workload {
        Workload::Incast(i) => i,
        other => panic!("not an incast: {other:?}"),
    }
}

/// A valid scenario with a one-line workload, followed by `extra`.
pub fn with(extra: &str) -> String {
    format!(
        "name: t\nworkload:\n  incast: {{ senders: 2, receiver: 0, messages: [ {{ size: 4KiB }} ] }}\n{extra}"
    )
}

pub fn scenario_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
