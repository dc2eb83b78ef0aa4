//! The command line on malformed scenarios: one clear error, nothing started.

use std::path::PathBuf;
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const GOOD: &str = "name: t
workload:
  incast:
    senders: 2
    receiver: 0
    messages:
      - { size: 4KiB, count: 1 }
sim:
  pfc: {}
";

/// Run `xrdma run` on `yaml`; returns (success, stderr, whether the output dir exists).
fn run_cli(name: &str, yaml: &str) -> (bool, String, bool) {
    let (code, err, wrote) = run_cli_code(name, yaml);
    (code == Some(0), err, wrote)
}

/// Like [`run_cli`], with the exit code.
fn run_cli_code(name: &str, yaml: &str) -> (Option<i32>, String, bool) {
    let dir = scratch(name);
    let file = dir.join("s.yaml");
    std::fs::write(&file, yaml).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        out.exists(),
    )
}

#[test]
fn a_run_whose_messages_fail_exits_2_and_says_why() {
    // An ACK timeout of 1 ns expires before any ACK can return: the connection fails and its
    // message is reported missing, with the middleware's error in the result.
    let yaml = format!("{GOOD}xrdma:\n  ack-timeout: 1ns\n");
    let (code, err, wrote) = run_cli_code("fails", &yaml);
    assert_eq!(code, Some(2), "{err}");
    assert!(wrote);
    assert!(err.contains("FAILED: 2 message(s) missing"), "{err}");
}

#[test]
fn a_good_scenario_runs_and_writes_its_files() {
    let (ok, err, wrote) = run_cli("good", GOOD);
    assert!(ok, "{err}");
    assert!(wrote);
}

fn assert_rejected(name: &str, yaml: &str, line: usize, needle: &str) {
    let (ok, err, wrote) = run_cli(name, yaml);
    assert!(!ok, "{name} should fail");
    assert!(!wrote, "{name}: nothing may be started or written");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains(&format!("s.yaml:{line}")),
        "{name}: no file:line in {err:?}"
    );
    assert!(err.contains(needle), "{name}: {needle:?} not in {err:?}");
}

#[test]
fn malformed_scenarios_fail_with_file_line_and_field() {
    assert_rejected("bad-unit", &GOOD.replace("4KiB", "4KQ"), 7, "size");
    assert_rejected(
        "unknown-key",
        &GOOD.replace("senders:", "sendrs:"),
        4,
        "sendrs",
    );
    assert_rejected("negative", &GOOD.replace("4KiB", "-4KiB"), 7, "negative");
    // Headroom is checked by the simulator for the run's port count, and still points at the key.
    assert_rejected(
        "headroom",
        &GOOD.replace("pfc: {}", "pfc: { headroom: 20MiB }"),
        9,
        "sim.pfc.headroom: headroom 20971520 B per port does not fit",
    );
    assert_rejected(
        "no-receiver",
        &GOOD.replace("    receiver: 0\n", ""),
        4,
        "missing field `receiver`",
    );
}

#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_xrdma"))
            .args(args)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(run(&["run"]), Some(1));
    assert_eq!(run(&["run", "x.yaml", "--seed", "abc"]), Some(1));
    assert_eq!(run(&["bogus"]), Some(1));
    assert_eq!(run(&["--help"]), Some(0));
}

#[test]
fn legal_but_harmful_settings_warn_with_their_key() {
    let dir = scratch("warn");
    let file = dir.join("s.yaml");
    std::fs::write(&file, GOOD.replace("pfc: {}", "pfc: { headroom: 1KiB }")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: ") && err.contains("s.yaml:9:10: sim.pfc.headroom: 1024 B is below"),
        "{err}"
    );
}

#[test]
fn an_ack_timeout_shorter_than_the_incast_drain_warns() {
    // 2 senders × 4 KiB (less than a max-window each) = 8192 B, 8 KiB·(1 + 82/1024) = 8848 B
    // on the wire: 70 784 bits at 1 Mb/s = 70.784 ms, longer than a 10 ms ACK timeout.
    let err = validate_ok(
        "ackwarn",
        &GOOD.replace(
            "sim:\n",
            "xrdma:\n  ack-timeout: 10ms\nsim:\n  link-rate: 1Mbps\n",
        ),
    );
    assert!(
        err.contains("xrdma.ack-timeout: 10.000 ms is shorter than the 70.784 ms"),
        "{err}"
    );
    // The NIC's local ACK timeout (default 4.096 µs · 2^12) fires first, on late ACKs.
    assert!(
        err.contains("rc.local-ack-timeout: 16.777 ms is shorter than the 70.784 ms"),
        "{err}"
    );
    assert!(err.contains("(spurious timeouts)"), "{err}");
}

#[test]
fn a_local_ack_timeout_longer_than_the_incast_drain_is_not_warned_about() {
    // 8848 B on the wire at 1 Mb/s: 70.784 ms, under 4.096 µs · 2^15 = 134.2 ms.
    let err = validate_ok(
        "ackwarn-ok",
        &GOOD.replace(
            "sim:\n",
            "rc: { local-ack-timeout: 15 }\nsim:\n  link-rate: 1Mbps\n",
        ),
    );
    assert!(!err.contains("local-ack-timeout"), "{err}");
}

#[test]
fn a_lossy_switch_bounds_the_drain_the_local_ack_timeout_is_checked_against() {
    // No PFC: a 1536 B buffer bounds the queue; 1536·(1 + 82/1024) B = 1659 B take
    // 13.27 ms at 1 Mb/s, under the 16.777 ms timeout (the senders' 8848 B would take
    // 70.784 ms).
    let err = validate_ok(
        "ackwarn-lossy",
        &GOOD.replace(
            "  pfc: {}\n",
            "  link-rate: 1Mbps\n  switch-buffer: 1536B\n",
        ),
    );
    assert!(!err.contains("rc.local-ack-timeout: 16.777 ms"), "{err}");
}

/// `xrdma validate` of scenario `yaml` in scratch dir `name`: it must pass; returns its
/// standard error (the warnings).
fn validate_ok(name: &str, yaml: &str) -> String {
    let dir = scratch(name);
    let file = dir.join("s.yaml");
    std::fs::write(&file, yaml).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .arg("validate")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    err
}

#[test]
fn a_lossless_run_that_drops_fails_and_its_headroom_was_warned_about() {
    // 64 senders × 1 MiB into a 4 MiB buffer over 10 µs links: the headroom needed (2 × BDP
    // + 3 packets + PAUSE = 253 462 B) does not even fit a port's share, and 1 KiB is given.
    // The switch drops what arrives after XOFF; "lossless" must not pass.
    let yaml = "name: low-headroom
workload:
  incast:
    senders: 64
    receiver: 0
    messages:
      - { size: 1MiB, count: 1 }
sim:
  switch-buffer: 4MiB
  link-delay: 10us
  pfc: { headroom: 1KiB }
";
    let (code, err, wrote) = run_cli_code("lowheadroom", yaml);
    assert_eq!(code, Some(2), "{err}");
    assert!(wrote);
    assert!(
        err.contains("sim.pfc.headroom: 1024 B is below the 253462 B"),
        "{err}"
    );
    assert!(
        err.contains(
            "FAILED: inconsistent result: the fabric is configured lossless (PFC) but dropped"
        ),
        "{err}"
    );
}

#[test]
fn a_closed_stdout_does_not_panic_and_the_run_still_writes_its_files() {
    // `xrdma run … | head -0`: the reader is gone before the first line. The run must not
    // panic on EPIPE (exit 101); it writes its files and exits with its own verdict.
    let dir = scratch("epipe");
    let file = dir.join("s.yaml");
    std::fs::write(&file, GOOD).unwrap();
    let out = dir.join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // close the read end: every write to stdout fails with EPIPE
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.join("result.json").exists() && out.join("report.html").exists());
}

#[test]
fn a_stall_after_the_run_ends_is_refused() {
    let yaml = "name: late-stall
workload:
  open-loop:
    senders: 1
    receiver: 0
    rate: 1k/s
    duration: 10ms
    size: 1KiB
    drain: 5ms
    stall: { host: 0, at: 20ms, for: 1ms }
";
    let (code, err, wrote) = run_cli_code("latestall", yaml);
    assert_eq!(code, Some(1), "{err}");
    assert!(!wrote, "nothing runs");
    assert!(
        err.contains("s.yaml:10:")
            && err.contains("workload.open-loop.stall")
            && err.contains("starts after the run ends at 15.000 ms"),
        "{err}"
    );
}

#[test]
fn sweep_jobs_are_capped_at_the_point_count() {
    let dir = scratch("jobs");
    let file = dir.join("s.yaml");
    std::fs::write(&file, GOOD).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .args(["sweep"])
        .arg(&file)
        .args(["--axis", "seed=1,2", "--jobs", "1000", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("over 2 point(s) with 2 worker(s)"), "{err}");
}

#[test]
fn a_fault_the_run_never_reached_is_warned_about() {
    let yaml = format!("{GOOD}  faults:\n    link-down: {{ link: host 1, at: 100s, for: 1us }}\n");
    let (code, err, _) = run_cli_code("latefault", &yaml);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning: ")
            && err.contains("sim.faults.link-down at 100.000 s never happened"),
        "{err}"
    );
}

#[test]
fn launch_options_need_the_verbs_backend_and_a_launcher_on_the_simulator_is_noted() {
    let dir = scratch("launch");
    let file = dir.join("s.yaml");
    std::fs::write(&file, GOOD).unwrap();
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "node01\nnode02 slots=2\n").unwrap();
    let out = dir.join("out");
    let flags: [&[&str]; 3] = [
        &["--rank", "1"],
        &["--hostfile", hosts.to_str().unwrap()],
        &["--coordinator", "node01:19000"],
    ];
    for args in flags {
        let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
            .arg("run")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        let want = format!(
            "{} runs one process of a multi-process run: it needs --backend verbs (xrdma) or --backend sockets (kernel TCP)",
            args[0]
        );
        assert!(err.contains(&want), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}: nothing runs, nothing is written");
    }
    // Started by srun, a simulator run still runs the whole scenario, and says so.
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .env("SLURM_PROCID", "1")
        .env("SLURM_NTASKS", "3")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("note: SLURM_PROCID=1 is set, but the simulator runs the whole scenario"),
        "{err}"
    );
    assert!(out.join("result.json").exists());
}

/// `xrdma ping ARGS` on the simulator: (exit code, stdout, stderr).
fn ping(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .arg("ping")
        .args(args)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn ping_verbs_print_perftests_columns_or_json_and_refuse_what_they_cannot_measure() {
    let few = ["--iters", "20", "--warmup", "2"];
    for (verb, title, typical) in [
        ("xrdma", "one xrdma connection", "2.03"),
        ("send", "of verbs SENDs", "2.03"),
        ("write", "receiver polls the last byte", "2.03"),
        ("read", "not halved", "4.04"),
    ] {
        let (code, out, err) = ping(&[&["--verb", verb][..], &few].concat());
        assert_eq!(code, Some(0), "{verb}: {err}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].contains(title), "{verb}: {out}");
        let head: Vec<&str> = lines[1].split_whitespace().collect();
        let row: Vec<&str> = lines[2].split_whitespace().collect();
        let col = |w: &str| row[head.iter().position(|h| *h == w).unwrap()];
        assert_eq!(col("#bytes"), "64", "{verb}");
        assert_eq!(col("#iterations"), "20", "{verb}");
        assert_eq!(col("t_typical[usec]"), typical, "{verb}");
    }
    let (code, out, err) =
        ping(&[&["--verb", "read", "--json", "--size", "4KiB"][..], &few].concat());
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verb"], "read");
    assert_eq!(v["perftest"], "ib_read_lat");
    assert_eq!(v["halved"], false);
    assert_eq!(v["stats"]["bytes"], 4096);
    assert_eq!(v["stats"]["iterations"], 20);
    // A 98 B request and a 4432 B response train: 4000 + 15.68 + 354.56 + 88.8 ns.
    assert_eq!(v["stats"]["t_typical_us"], 4.45904);
    for (args, code, needle) in [
        (
            &["--verb", "bogus"][..],
            1,
            "possible values: xrdma, send, write, read",
        ),
        (&["--verb", "read", "--size", "0"], 1, "at least 1 byte"),
        (
            &["--verb", "write", "--size", "0"],
            1,
            "polls the last byte",
        ),
        (
            &["--verb", "send", "--size", "5GiB"],
            1,
            "at most 4294967295 bytes",
        ),
        // Refused before its buffers are filled: 3 GiB took seconds, then failed at the send.
        (
            &["--size", "3GiB"],
            1,
            "above xrdma's largest message, 2147483648 B",
        ),
        (
            &["--verb", "send", "--iters", "0"],
            1,
            "0 is not in 1..=10000000",
        ),
        // Unbounded counts asked for the samples' memory at once and aborted (4 G round
        // trips: a 32 GB allocation).
        (
            &["--warmup", "4000000000"],
            1,
            "4000000000 is not in 0..=10000000",
        ),
        (
            &["--iters", "10000001"],
            1,
            "10000001 is not in 1..=10000000",
        ),
        // Refused by the parser, in the same words as the upper bound (it was "not in
        // 0..=10000000" above and "must be at least 1" at 0).
        (&["--iters", "0"], 1, "0 is not in 1..=10000000"),
        (
            &["--verb", "write", "--host-profile", "connectx6"],
            1,
            "--verb xrdma only",
        ),
        (&["--verb", "read", "--server"], 1, "need --backend verbs"),
    ] {
        let (got, _, err) = ping(args);
        assert_eq!(got, Some(code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {needle:?} not in {err:?}");
    }
}

#[test]
fn bw_refuses_a_message_above_the_largest_before_filling_it() {
    // A 3 GiB message was filled (seconds of memset), then failed at its send.
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .args(["bw", "--size", "3GiB", "--iters", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("above xrdma's largest message, 2147483648 B"),
        "{err}"
    );
}

#[test]
fn job_secret_prints_a_fresh_secret_or_writes_an_owner_only_file() {
    let secret = || {
        let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
            .arg("job-secret")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    let (a, b) = (secret(), secret());
    assert_eq!(a.len(), 64, "{a}");
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b, "every job gets its own");
    let file = scratch("job-secret").join("job.secret");
    let write = || {
        Command::new(env!("CARGO_BIN_EXE_xrdma"))
            .args(["job-secret", "--file"])
            .arg(&file)
            .output()
            .unwrap()
    };
    let o = write();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty(), "the secret is not printed");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim().len(), 64);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let o = write();
    assert!(!o.status.success(), "an existing file is kept");
    // The OS error was printed twice ("File exists (os error 17): File exists (os error 17)").
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.matches("os error").count(), 1, "{e}");
    // The file is named for the ranks by its absolute path, whatever directory ran it.
    let dir = scratch("job-secret-rel");
    let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
        .args(["job-secret", "--file", "rel.secret"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    let abs = std::path::absolute(dir.join("rel.secret")).unwrap();
    assert!(
        e.contains(&format!("XRDMA_JOB_SECRET_FILE={}", abs.display())),
        "{e}"
    );
}
