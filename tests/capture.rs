//! `xrdma run --capture` and `sim.capture`: pcap files beside the result, named in it, and a
//! run otherwise the same as without capture.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SCENARIO: &str = "name: t
workload:
  incast:
    senders: 2
    receiver: 0
    messages:
      - { size: 4KiB, count: 2 }
      - { size: 64KiB, count: 1 }
sim:
  pfc: {}
";

/// `xrdma run` of `yaml` into `dir/out` with `args`; (exit code, result.json, stderr).
fn run(dir: &Path, yaml: &str, args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let file = dir.join("s.yaml");
    std::fs::write(&file, yaml).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let json = std::fs::read_to_string(dir.join("out/result.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(serde_json::Value::Null);
    (o.status.code(), json, stderr)
}

/// Records in a nanosecond pcap file.
fn records(pcap: &[u8]) -> usize {
    assert_eq!(&pcap[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
    let (mut off, mut n) = (24, 0);
    while off < pcap.len() {
        let len = u32::from_le_bytes(pcap[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16 + len;
        n += 1;
    }
    assert_eq!(off, pcap.len());
    n
}

#[test]
fn capture_flag_writes_one_pcap_per_host_named_in_the_result() {
    let dir = scratch("flag");
    let (plain, plain_json, _) = run(&dir, SCENARIO, &[]);
    assert_eq!(plain, Some(0));
    assert!(plain_json["sim"].get("captures").is_none());
    let (code, json, err) = run(&dir, SCENARIO, &["--capture", "0,2"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json["sim"]["trace-hash"], plain_json["sim"]["trace-hash"]);
    let caps = json["sim"]["captures"].as_array().unwrap();
    assert_eq!(caps.len(), 2);
    for (c, host) in caps.iter().zip([0, 2]) {
        assert_eq!(c["host"], host);
        let name = format!("capture-host{host}.pcap");
        assert_eq!(c["file"], name.as_str());
        let bytes = std::fs::read(dir.join("out").join(&name)).unwrap();
        let n = records(&bytes);
        assert!(n > 0);
        assert_eq!(c["packets"], n as u64);
        assert_eq!(c["skipped"], 0);
    }
    let summary = std::fs::read_to_string(dir.join("out/summary.txt")).unwrap();
    assert!(
        summary.contains("capture    host 2: capture-host2.pcap ("),
        "{summary}"
    );
}

#[test]
fn the_scenario_block_bounds_the_file_and_the_flag_is_checked() {
    let dir = scratch("block");
    let yaml = format!("{SCENARIO}  capture: {{ hosts: [1], max-packets: 10 }}\n");
    let (code, json, err) = run(&dir, &yaml, &[]);
    assert_eq!(code, Some(0), "{err}");
    let c = &json["sim"]["captures"][0];
    assert_eq!(c["packets"], 10);
    assert!(c["skipped"].as_u64().unwrap() > 0);
    let bytes = std::fs::read(dir.join("out/capture-host1.pcap")).unwrap();
    assert_eq!(records(&bytes), 10);
    let (code, _, err) = run(&dir, SCENARIO, &["--capture", "7"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--capture: host 7 does not exist"), "{err}");
    // Two senders and the receiver: hosts 0, 1 and 2, written inclusively.
    assert!(err.contains("the workload has hosts 0..=2"), "{err}");
    let (code, _, err) = run(&dir, SCENARIO, &["--capture", "x"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("is not a host index"), "{err}");
}

/// The pcap files in `dir`, by name, sorted.
fn pcaps_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".pcap"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_rerun_into_the_same_directory_leaves_no_capture_of_an_earlier_run() {
    let dir = scratch("stale");
    let out = dir.join("out");
    let (code, _, err) = run(&dir, SCENARIO, &["--capture", "0,1"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(pcaps_in(&out), ["capture-host0.pcap", "capture-host1.pcap"]);
    // Another capture: host 0's file of the first run must not stay beside this result.
    let (code, json, err) = run(&dir, SCENARIO, &["--capture", "2"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(pcaps_in(&out), ["capture-host2.pcap"]);
    assert_eq!(json["sim"]["captures"][0]["file"], "capture-host2.pcap");
    // No capture: no pcap at all, as the result lists none.
    let (code, json, err) = run(&dir, SCENARIO, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(json["sim"]["captures"].is_null(), "{}", json["sim"]);
    assert!(pcaps_in(&out).is_empty(), "{:?}", pcaps_in(&out));
    // A file the user put there that is not a capture's name stays.
    std::fs::write(out.join("mine.pcap"), b"x").unwrap();
    let (code, _, err) = run(&dir, SCENARIO, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(pcaps_in(&out), ["mine.pcap"]);
}

/// `xrdma ARGS` with the scenario `yaml` written to `dir/s.yaml` as the last argument but
/// one's place (`{}` in `args`); (exit code, stdout, stderr).
fn xrdma(dir: &Path, yaml: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let file = dir.join("s.yaml");
    std::fs::write(&file, yaml).unwrap();
    let file = file.to_string_lossy().into_owned();
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "{}" { file.as_str() } else { a })
        .collect();
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .args(&args)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn a_sweep_refuses_a_capture_it_would_not_write() {
    let dir = scratch("sweep");
    let yaml = format!("{SCENARIO}  capture: {{ hosts: [0, 2] }}\n");
    let out = dir.join("sweep").to_string_lossy().into_owned();
    let (code, _, err) = xrdma(
        &dir,
        &yaml,
        &["sweep", "{}", "--axis", "fan-in=1,2", "--out", &out],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("s.yaml:11:3: sim.capture: a sweep writes no packet captures"),
        "{err}"
    );
    assert!(!dir.join("sweep").join("index.json").exists());
}

#[test]
fn validate_counts_the_capture_in_the_memory_estimate() {
    let dir = scratch("memory");
    let (code, plain, err) = xrdma(&dir, SCENARIO, &["validate", "{}"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(plain.contains(" of memory)"), "{plain}");
    // 10^8 frames a link on two links keep about 220 GB: no machine here has that.
    let yaml = format!("{SCENARIO}  capture: {{ hosts: [0, 2], max-packets: 100000000 }}\n");
    let (code, _, err) = xrdma(&dir, &yaml, &["validate", "{}"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the run needs about"), "{err}");
    assert!(err.contains("--no-memory-check"), "{err}");
    // The run is refused the same way, unless told to run anyway (this one captures a few
    // hundred frames: the estimate counts the bound).
    let (code, _, err) = run(&dir, &yaml, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the run needs about"), "{err}");
    let (code, _, err) = run(&dir, &yaml, &["--no-memory-check"]);
    assert_eq!(code, Some(0), "{err}");
}

/// `xrdma wire-compare` reads the simulator's own pcap: a capture against itself is the same
/// in every measure (exit 0); the simulator's responder ACKs every request packet with
/// AckReq on each; a cut file exits 2 naming the file and the byte offset.
#[test]
fn wire_compare_reads_the_simulators_capture() {
    let dir = scratch("wire-compare");
    let (code, _, err) = run(&dir, SCENARIO, &["--capture", "0"]);
    assert_eq!(code, Some(0), "{err}");
    let pcap = dir.join("out/capture-host0.pcap");
    let p = pcap.to_string_lossy().into_owned();
    let (code, out, err) = xrdma(&dir, "", &["wire-compare", &p, &p]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("17 measures, 17 same, 0 differ"), "{out}");
    let row = |key: &str| {
        out.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or("")
            .to_string()
    };
    assert!(row("ackreq ").contains("every packet"), "{out}");
    assert!(
        row("acks-per-request-packet ").contains("about one"),
        "{out}"
    );
    assert!(row("aeth-msn ").contains("always 0"), "{out}");

    let bytes = std::fs::read(&pcap).unwrap();
    let cut = dir.join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 5]).unwrap();
    let c = cut.to_string_lossy().into_owned();
    let (code, _, err) = xrdma(&dir, "", &["wire-compare", &p, &c]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("{c}: at byte ")), "{err}");
    let (code, _, err) = xrdma(
        &dir,
        "",
        &["wire-compare", &p, &p, "--known", "/nonexistent"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("/nonexistent: cannot read it"), "{err}");
}
