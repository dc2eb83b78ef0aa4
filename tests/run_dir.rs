//! A results directory is one run's: a run locks it (a second is refused, naming the
//! holder), builds its files aside and replaces the earlier run's as a whole; an interrupted
//! or failed run leaves the earlier one whole and says so; files no run wrote stay.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A small incast: a run takes about a second in a test build.
const SMALL: &str = "name: t
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

/// Long enough (seconds of simulation in a test build) to be caught mid-run.
const LONG: &str = "name: long
workload:
  incast:
    senders: 64
    receiver: 0
    messages:
      - { size: 2MiB, count: 16 }
sim:
  pfc: {}
  sample-interval: off
";

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-rundir-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run_arg() -> &'static std::ffi::OsStr {
    "run".as_ref()
}

fn out_arg() -> &'static std::ffi::OsStr {
    "--out".as_ref()
}

fn xrdma() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xrdma"))
}

/// `dir/NAME.yaml` holding `yaml`.
fn scenario(dir: &Path, name: &str, yaml: &str) -> PathBuf {
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, yaml).unwrap();
    p
}

/// `xrdma run SCENARIO --out OUT ARGS`.
fn run(sc: &Path, out: &Path, args: &[&str]) -> Output {
    xrdma()
        .arg("run")
        .arg(sc)
        .arg("--out")
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file in `dir` (not the `.xrdma` state) by name, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            (e.file_type().unwrap().is_file()).then(|| (name, std::fs::read(e.path()).unwrap()))
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    files(dir).into_keys().collect()
}

/// A started `xrdma ARGS` once it has said `word` on standard error (it runs, holding its
/// directory), with what it said so far and its standard error to read the rest.
struct Started {
    child: std::process::Child,
    err: std::process::ChildStderr,
    said: Vec<u8>,
}

fn start(args: &[&std::ffi::OsStr], word: &str) -> Started {
    let mut child = xrdma()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let mut said = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&said).contains(word) {
        let n = std::io::Read::read(&mut err, &mut buf).unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&said));
        said.extend_from_slice(&buf[..n]);
    }
    Started { child, err, said }
}

impl Started {
    /// Sends SIGINT; the exit code and everything said on standard error.
    fn interrupt(mut self) -> (Option<i32>, String) {
        let killed = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        std::io::Read::read_to_end(&mut self.err, &mut self.said).unwrap();
        (
            status.code(),
            String::from_utf8_lossy(&self.said).into_owned(),
        )
    }
}

fn seed_of(dir: &Path) -> u64 {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("result.json")).unwrap()).unwrap();
    v["scenario"]["seed"].as_u64().unwrap()
}

#[test]
fn a_second_run_into_a_directory_in_use_is_refused_naming_the_holder() {
    let d = scratch("busy");
    let sc = scenario(&d, "s", SMALL);
    let out = d.join("out");
    ok(&run(&sc, &out, &["--seed", "1"]));
    let before = files(&out);
    // A longer run holds the directory.
    let long = scenario(&d, "long", LONG);
    let holder = start(
        &[run_arg(), long.as_os_str(), out_arg(), out.as_os_str()],
        "running",
    );
    let t = Instant::now();
    let o = run(&sc, &out, &["--seed", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let want = format!(
        "{} is in use by xrdma pid {}",
        out.display(),
        holder.child.id()
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(
        !stderr(&o).contains("running"),
        "refused before running: {}",
        stderr(&o)
    );
    assert!(t.elapsed() < Duration::from_secs(30));
    let (code, said) = holder.interrupt();
    assert_eq!(code, Some(130), "{said}");
    assert!(files(&out) == before, "neither run changed a file");
    ok(&run(&sc, &out, &["--seed", "2"]));
    assert_eq!(seed_of(&out), 2);
}

#[test]
fn sigint_mid_run_leaves_the_earlier_run_whole_and_says_so() {
    let d = scratch("sigint");
    let small = scenario(&d, "s", SMALL);
    let long = scenario(&d, "long", LONG);
    let out = d.join("out");
    ok(&run(&small, &out, &["--seed", "1", "--csv"]));
    let before = files(&out);
    let running = start(
        &[run_arg(), long.as_os_str(), out_arg(), out.as_os_str()],
        "running",
    );
    std::thread::sleep(Duration::from_millis(300));
    let (code, text) = running.interrupt();
    assert_eq!(code, Some(130), "{text}");
    assert!(
        text.contains(&format!(
            "interrupted: {} still holds the earlier run",
            out.display()
        )),
        "{text}"
    );
    assert!(files(&out) == before, "every file is the earlier run's");
    assert_eq!(seed_of(&out), 1);
    // The next run is not hindered by what the interrupted one left.
    ok(&run(&small, &out, &["--seed", "2"]));
    assert_eq!(seed_of(&out), 2);
    assert!(!out.join(".xrdma").join("staging").exists());
}

#[test]
fn a_full_disk_leaves_the_earlier_run_whole_and_says_so() {
    let d = scratch("full");
    let sc = scenario(&d, "s", SMALL);
    let out = d.join("out");
    ok(&run(&sc, &out, &["--seed", "1"]));
    let before = files(&out);
    // Files of at most 40 KiB (ulimit counts 512-byte blocks in a POSIX sh): result.json
    // fits, the plots do not. The signal a process gets for a larger file is ignored, so
    // the write fails with EFBIG as on a full disk.
    let o = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 80 && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_xrdma"))
        .arg("run")
        .arg(&sc)
        .args(["--seed", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{} still holds the earlier run", out.display())),
        "{}",
        stderr(&o)
    );
    assert!(files(&out) == before, "every file is the earlier run's");
    assert_eq!(seed_of(&out), 1);
    ok(&run(&sc, &out, &["--seed", "2"]));
    assert_eq!(seed_of(&out), 2);
}

#[test]
fn a_run_removes_only_the_files_an_earlier_run_listed_as_its_own() {
    let d = scratch("own");
    let sc = scenario(&d, "s", SMALL);
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // A user's files whose names a run could have written.
    let mine = ["notes.pcap", "messages.csv", "stages.png", "stages.svg"];
    for m in mine {
        std::fs::write(out.join(m), format!("the user's {m}")).unwrap();
    }
    ok(&run(&sc, &out, &[]));
    for m in mine {
        assert_eq!(
            std::fs::read_to_string(out.join(m)).unwrap(),
            format!("the user's {m}"),
            "{m} is not the run's"
        );
    }
    // A run that would write files of those names is refused whole: the user's were
    // overwritten, then deleted by the next run as the tool's own.
    let o = run(&sc, &out, &["--csv", "--trace"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("messages.csv, stages.png, stages.svg that this tool did not write"),
        "{e}"
    );
    for m in mine {
        assert_eq!(
            std::fs::read_to_string(out.join(m)).unwrap(),
            format!("the user's {m}"),
            "{m} is not the run's"
        );
    }
    // A run with a CSV, captures and stages, then one without: the earlier run's own
    // files go, the user's stay.
    let out = d.join("out2");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.pcap"), "mine").unwrap();
    ok(&run(&sc, &out, &["--csv", "--capture", "0,1", "--trace"]));
    let first = names(&out);
    for f in [
        "messages.csv",
        "capture-host0.pcap",
        "capture-host1.pcap",
        "stages.png",
    ] {
        assert!(first.contains(&f.to_string()), "{f} in {first:?}");
    }
    ok(&run(&sc, &out, &["--capture", "1"]));
    let second = names(&out);
    for gone in [
        "messages.csv",
        "capture-host0.pcap",
        "stages.png",
        "stages.svg",
    ] {
        assert!(!second.contains(&gone.to_string()), "{gone} in {second:?}");
    }
    assert!(second.contains(&"capture-host1.pcap".to_string()));
    assert_eq!(
        std::fs::read_to_string(out.join("notes.pcap")).unwrap(),
        "mine"
    );
}

#[test]
fn report_redraws_beside_its_result_and_keeps_it() {
    let d = scratch("report");
    let sc = scenario(&d, "s", SMALL);
    let out = d.join("out");
    ok(&run(&sc, &out, &["--csv", "--capture", "0"]));
    let before = files(&out);
    let o = xrdma().arg("report").arg(&out).output().unwrap();
    ok(&o);
    assert!(files(&out) == before, "redrawn byte for byte, nothing lost");
    // The same, named as a file from inside the directory.
    let o = xrdma()
        .args(["report", "result.json"])
        .current_dir(&out)
        .output()
        .unwrap();
    ok(&o);
    assert!(files(&out) == before, "redrawn byte for byte, nothing lost");
    // Into another directory holding another run: refused, that run stays whole (its
    // result.json, the one file a report cannot redraw, was deleted).
    let other = d.join("other");
    ok(&run(&sc, &other, &["--csv", "--seed", "7"]));
    let theirs = files(&other);
    let o = xrdma()
        .arg("report")
        .arg(&out)
        .arg("--out")
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds another run"), "{}", stderr(&o));
    assert!(files(&other) == theirs, "the other run is untouched");
    // Into an empty directory it draws the run's report.
    let fresh = d.join("fresh");
    let o = xrdma()
        .arg("report")
        .arg(&out)
        .arg("--out")
        .arg(&fresh)
        .output()
        .unwrap();
    ok(&o);
    assert!(files(&fresh)["report.html"] == before["report.html"]);
}

#[test]
fn a_run_and_a_sweep_do_not_replace_each_other() {
    // A sweep into a run's directory deleted the run's files; a run into a sweep's deleted
    // its index and left its points beside the run.
    let d = scratch("kinds");
    let sc = scenario(&d, "s", SMALL);
    let ran = d.join("ran");
    ok(&run(&sc, &ran, &[]));
    let before = files(&ran);
    let o = sweep(&sc, &ran);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds a run, not a sweep"),
        "{}",
        stderr(&o)
    );
    assert!(files(&ran) == before);
    let swept = d.join("swept");
    ok(&sweep(&sc, &swept));
    let before = files(&swept);
    let o = run(&sc, &swept, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("holds a sweep, not a run"),
        "{}",
        stderr(&o)
    );
    assert!(files(&swept) == before);
}

/// `xrdma sweep SCENARIO --axis fan-in=1,2 --out OUT`.
fn sweep(sc: &Path, out: &Path) -> Output {
    xrdma()
        .arg("sweep")
        .arg(sc)
        .args(["--axis", "fan-in=1,2", "--jobs", "1", "--out"])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn a_second_sweep_into_a_directory_in_use_is_refused_naming_the_holder() {
    let d = scratch("sweep-busy");
    let sc = scenario(&d, "s", SMALL);
    let out = d.join("sweep");
    // A sweep of a longer scenario holds the directory.
    let long = scenario(&d, "long", LONG);
    let holder = start(
        &[
            "sweep".as_ref(),
            long.as_os_str(),
            "--axis".as_ref(),
            "seed=1".as_ref(),
            out_arg(),
            out.as_os_str(),
        ],
        "sweeping",
    );
    let o = sweep(&sc, &out);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let want = format!(
        "{} is in use by xrdma pid {}",
        out.display(),
        holder.child.id()
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    let (code, said) = holder.interrupt();
    assert_eq!(code, Some(130), "{said}");
    assert!(
        !out.join("index.json").exists() && !out.join("points").join("fan-in-1").exists(),
        "neither sweep finished a file"
    );
    ok(&sweep(&sc, &out));
}

#[test]
fn a_resume_removes_a_stale_partial_point() {
    let d = scratch("sweep-partial");
    let sc = scenario(&d, "s", SMALL);
    let out = d.join("sweep");
    ok(&sweep(&sc, &out));
    // What an interrupted or concurrent sweep leaves beside a finished point.
    let partial = out.join("points").join("fan-in-2.partial");
    std::fs::create_dir_all(&partial).unwrap();
    std::fs::write(partial.join("result.json"), "{").unwrap();
    let o = sweep(&sc, &out);
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 resumed"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!partial.exists(), "the stale .partial is gone");
    assert!(out
        .join("points")
        .join("fan-in-2")
        .join("result.json")
        .exists());
}

#[test]
fn a_point_being_written_elsewhere_is_not_written_again() {
    let d = scratch("point-busy");
    let sc = scenario(&d, "s", SMALL);
    let out = d.join("sweep");
    let points = out.join("points");
    std::fs::create_dir_all(&points).unwrap();
    // This process holds point fan-in-1 as a task of a job array would.
    let held = xrdma_reports::run_dir::DirLock::acquire(
        &points.join(".fan-in-1.lock"),
        &points.join("fan-in-1"),
    )
    .unwrap();
    let o = xrdma()
        .arg("sweep")
        .arg(&sc)
        .args(["--axis", "fan-in=1,2", "--point", "fan-in-1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let want = format!("is in use by xrdma pid {}", std::process::id());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    assert!(!points.join("fan-in-1").exists());
    drop(held);
    ok(&xrdma()
        .arg("sweep")
        .arg(&sc)
        .args(["--axis", "fan-in=1,2", "--point", "fan-in-1", "--out"])
        .arg(&out)
        .output()
        .unwrap());
    assert!(points.join("fan-in-1").join("result.json").exists());
}
