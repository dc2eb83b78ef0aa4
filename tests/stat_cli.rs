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
    let mut c = xrdma();
    c.arg("stat");
    // A socket is asked with --socket, a run directory named as it is.
    if dir.extension().is_some_and(|e| e == "sock") {
        c.arg("--socket");
    }
    c.arg(dir).args(extra).output().expect("xrdma runs")
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

/// Long enough in a debug build (about a second) for a client to ask while it runs.
const LONGER: &str = "name: stat-live
workload:
  incast:
    senders: 32
    receiver: 0
    messages:
      - { size: 1MiB, count: 1 }
sim:
  pfc: {}
  sample-interval: off
";

#[test]
fn stat_asks_a_running_process_through_its_socket() {
    let d = std::env::temp_dir().join(format!("xrdma-stat-{}-live", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    let file = d.join("s.yaml");
    std::fs::write(&file, LONGER).expect("writes");
    let sock = d.join("stat.sock");
    let mut run = xrdma()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(d.join("out"))
        .arg("--stat-socket")
        .arg(&sock)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starts");
    let t0 = std::time::Instant::now();
    while !sock.exists() {
        assert!(t0.elapsed().as_secs() < 60, "the socket never appeared");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let w = stat(
        &sock,
        &["--watch", "0.02", "--host", "0", "--count", "1000"],
    );
    let ended = run.wait().expect("the run ends");
    assert!(ended.success());
    assert!(w.status.success(), "{}", String::from_utf8_lossy(&w.stderr));
    let text = String::from_utf8_lossy(&w.stdout);
    assert!(text.matches("backend sim").count() >= 1, "{text}");
    assert!(text.contains("established"), "{text}");
    assert!(
        String::from_utf8_lossy(&w.stderr).contains("the process has gone"),
        "{}",
        String::from_utf8_lossy(&w.stderr)
    );
    assert!(!sock.exists(), "the socket goes with the run");

    // Nobody there now: a clear error.
    let o = xrdma()
        .arg("stat")
        .arg("--socket")
        .arg(&sock)
        .output()
        .expect("runs");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no xrdma process answers here"), "{err}");
}

#[test]
fn watching_a_finished_run_or_counting_nothing_is_refused() {
    let dir = run_dir("flags");
    let w = stat(&dir, &["--watch", "1"]);
    assert!(!w.status.success());
    let err = String::from_utf8_lossy(&w.stderr);
    assert!(err.contains("needs --socket"), "{err}");
    let c = xrdma()
        .args([
            "stat",
            "--socket",
            "/nonexistent.sock",
            "--watch",
            "0.1",
            "--count",
            "0",
        ])
        .output()
        .expect("runs");
    assert!(!c.status.success());
    assert!(String::from_utf8_lossy(&c.stderr).contains("--count"));
}

#[test]
fn a_sweep_directory_is_named_as_one() {
    let d = std::env::temp_dir().join(format!("xrdma-stat-{}-sweepdir", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("points")).expect("scratch");
    let o = stat(&d, &[]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is a sweep's directory"), "{err}");
}

#[test]
fn an_instant_without_host_turns_says_the_endpoints_did_not_change() {
    // The link to host 2 is down while its NIC retries: no host has a turn for milliseconds.
    let d = std::env::temp_dir().join(format!("xrdma-stat-{}-gap", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let o = xrdma()
        .args(["run", "scenarios/faults/link-down-long.yaml", "--out"])
        .arg(&d)
        .output()
        .expect("runs");
    // Some messages never finish on this scenario (exit 2), the run itself completes.
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s = stat(&d, &["--at", "10us,500us", "--host", "2"]);
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let text = String::from_utf8_lossy(&s.stdout);
    let banners: Vec<&str> = text.lines().filter(|l| l.starts_with("at ")).collect();
    assert_eq!(banners.len(), 2, "{text}");
    assert!(
        banners[1].contains("no host had a turn in between"),
        "{}",
        banners[1]
    );
}

#[test]
fn an_instant_of_a_run_made_with_stack_replays_that_stack() {
    // The replay must run the stack the result records, not the file's: a TCP run replayed
    // over xrdma simulates something else and its trace hash differs.
    let d = std::env::temp_dir().join(format!("xrdma-stat-{}-stack", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let o = xrdma()
        .args(["run", "scenarios/incast-8.yaml", "--stack", "tcp", "--out"])
        .arg(&d)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = stat(&d, &["--at", "100us"]);
    let err = String::from_utf8_lossy(&s.stderr);
    assert!(!err.contains("trace hash"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn at_with_a_socket_is_refused_not_ignored() {
    // --at replays a finished simulator run; with --socket it was silently ignored.
    let o = xrdma()
        .args(["stat", "--socket", "/nonexistent/x.sock", "--at", "1ms"])
        .output()
        .expect("xrdma runs");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--at") && err.contains("--socket"), "{err}");
}
