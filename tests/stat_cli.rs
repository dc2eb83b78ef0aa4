//! `xrdma stat` on a finished simulator run: the three formats, and clear errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCENARIO: &str = "name: stat-cli
workload:
  incast:
    senders: 2
    receiver: 0
    messages:
      - { size: 4KiB, count: 2 }
sim:
  pfc: {}
  sample-interval: off
";

fn xrdma() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xrdma"))
}

/// A finished run's directory.
fn run_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-stat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    let file = d.join("s.yaml");
    std::fs::write(&file, SCENARIO).expect("writes");
    let out = d.join("out");
    let o = xrdma()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("xrdma runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

fn stat(dir: &Path, extra: &[&str]) -> Output {
    xrdma()
        .arg("stat")
        .arg(dir)
        .args(extra)
        .output()
        .expect("xrdma runs")
}

#[test]
fn stat_prints_a_table_json_and_prometheus() {
    let dir = run_dir("formats");
    let t = stat(&dir, &[]);
    assert!(t.status.success(), "{}", String::from_utf8_lossy(&t.stderr));
    let table = String::from_utf8_lossy(&t.stdout);
    assert!(table.starts_with("endpoints\n"), "{table}");
    assert!(table.contains("\nconnections\n"), "{table}");
    assert_eq!(table.matches("established").count(), 4, "{table}");

    let j = stat(&dir, &["--json", "--host", "0"]);
    assert!(j.status.success());
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).expect("JSON");
    assert_eq!(v.as_array().map(Vec::len), Some(1));
    assert_eq!(v[0]["host"], 0);
    assert_eq!(v[0]["connections"].as_array().map(Vec::len), Some(2));

    let p = stat(&dir, &["--prometheus"]);
    assert!(p.status.success());
    let text = String::from_utf8_lossy(&p.stdout);
    assert!(
        text.contains("# TYPE xrdma_conn_send_bytes_total counter"),
        "{text}"
    );
}

#[test]
fn a_result_without_endpoints_and_an_unknown_host_are_clear_errors() {
    let dir = run_dir("errors");
    let h = stat(&dir, &["--host", "9"]);
    assert!(!h.status.success());
    let err = String::from_utf8_lossy(&h.stderr);
    assert!(err.contains("--host 9"), "{err}");

    let path = dir.join("result.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("reads")).expect("JSON");
    v.as_object_mut().expect("object").remove("endpoints");
    std::fs::write(&path, serde_json::to_vec(&v).expect("JSON")).expect("writes");
    let o = stat(&dir, &[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("records no endpoint counters"), "{err}");
    assert!(o.stdout.is_empty());
}
