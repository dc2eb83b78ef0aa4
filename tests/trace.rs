//! Message stages (`trace: true`): recorded for every delivered one-way message, adding up
//! to its completion time exactly, changing nothing else in the run, and summarised by
//! `xrdma trace`.

use std::path::Path;
use std::process::Command;
use xrdma_reports::{stages, RunResult};
use xrdma_runner::request::run_sim;

/// Four senders, small (eager) and large (rendezvous) messages, ECN: queues and windows.
const SCENARIO: &str = "name: traced
workload:
  incast:
    senders: 4
    receiver: 0
    messages:
      - { size: 1KiB, count: 4 }
      - { size: 256KiB, count: 2 }
sim:
  seed: 9
  ecn: { kmin: 20KB, kmax: 80KB, pmax: 0.2 }
  pfc: {}
  sample-interval: off
";

fn run(trace: bool) -> RunResult {
    let mut sc = xrdma_scenario::parse(SCENARIO, Path::new("t.yaml")).expect("parses");
    sc.trace = trace;
    run_sim(&sc).expect("runs")
}

#[test]
fn stages_add_up_to_every_completion() {
    let r = run(true);
    assert_eq!(r.delivery.delivered, 24);
    for m in &r.messages {
        let s = m
            .stages
            .unwrap_or_else(|| panic!("no stages for {}#{}", m.sender, m.index));
        assert_eq!(
            Some(s.total_ps()),
            m.latency_ps(),
            "{}#{}",
            m.sender,
            m.index
        );
        if m.size <= 4096 {
            assert_eq!(s.grant_ps, 0, "an eager message waits for no grant");
        }
    }
    // The later messages of each sender wait in the application (two are queued in xrdma at a
    // time) and behind the earlier ones; the large ones spend time posting under the window.
    assert!(r
        .messages
        .iter()
        .any(|m| m.stages.is_some_and(|s| s.app_ps > 0)));
    assert!(r
        .messages
        .iter()
        .any(|m| m.stages.is_some_and(|s| s.queue_ps > 0)));
    assert!(r
        .messages
        .iter()
        .any(|m| m.size > 4096 && m.stages.is_some_and(|s| s.send_ps > 0)));
    assert!(r
        .messages
        .iter()
        .all(|m| m.stages.is_some_and(|s| s.network_ps > 0)));
}

#[test]
fn tracing_changes_nothing_else() {
    let (mut traced, plain) = (run(true), run(false));
    assert!(plain.messages.iter().all(|m| m.stages.is_none()));
    traced.messages.iter_mut().for_each(|m| m.stages = None);
    traced.wall_clock = plain.wall_clock;
    assert_eq!(traced.messages, plain.messages);
    assert_eq!(
        traced.sim.as_ref().map(|s| &s.trace_hash),
        plain.sim.as_ref().map(|s| &s.trace_hash)
    );
    assert!(stages::summarize(&plain).is_none());
}

#[test]
fn the_summary_splits_the_percentile_messages() {
    let r = run(true);
    let s = stages::summarize(&r).expect("traced");
    assert_eq!((s.messages, s.untraced), (24, 0));
    let mut lat: Vec<u64> = r.messages.iter().filter_map(|m| m.latency_ps()).collect();
    lat.sort_unstable();
    let p99 = s.at.iter().find(|a| a.label == "p99").expect("p99");
    assert_eq!(
        Some(p99.completion_ps),
        xrdma_reports::percentile::nearest_rank(&lat, 99.0)
    );
    assert_eq!(p99.stages.total_ps(), p99.completion_ps);
    assert_eq!(p99.dominant, stages::dominant(&p99.stages));
    let max = s.at.last().expect("max");
    assert_eq!(Some(max.completion_ps), lat.last().copied());
    // Shares of the total completion time sum to 1.
    let share: f64 = s.rows.iter().map(|r| r.share).sum();
    assert!((share - 1.0).abs() < 1e-9, "{share}");
    // The messages at or above p99 are each counted under one stage.
    let tail: usize = s.tail_dominant.iter().map(|t| t.1).sum();
    assert_eq!(
        tail,
        lat.iter().filter(|&&l| l >= p99.completion_ps).count()
    );
    let text = stages::stage_table(&s);
    assert!(
        text.contains(&format!("p99 is made by `{}`", p99.dominant)),
        "{text}"
    );
}

#[test]
fn the_trace_command_reads_a_traced_run_and_refuses_an_untraced_one() {
    let d = std::env::temp_dir().join(format!("xrdma-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    let file = d.join("t.yaml");
    std::fs::write(&file, SCENARIO).expect("writes");
    let xrdma = || Command::new(env!("CARGO_BIN_EXE_xrdma"));
    for (dir, flag) in [("plain", None), ("traced", Some("--trace"))] {
        let o = xrdma()
            .arg("run")
            .arg(&file)
            .arg("--out")
            .arg(d.join(dir))
            .args(flag)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert!(d.join("traced/stages.png").exists());
    assert!(!d.join("plain/stages.png").exists());
    let t = xrdma()
        .arg("trace")
        .arg(d.join("traced"))
        .output()
        .expect("runs");
    assert!(t.status.success());
    assert!(String::from_utf8_lossy(&t.stdout).contains("p99 is made by"));
    let p = xrdma()
        .arg("trace")
        .arg(d.join("plain"))
        .output()
        .expect("runs");
    assert!(!p.status.success());
    assert!(String::from_utf8_lossy(&p.stderr).contains("rerun it with `xrdma run --trace`"));
}

#[test]
fn stages_that_do_not_add_up_are_an_inconsistency() {
    let mut r = run(true);
    assert!(r.validate().is_empty(), "{:?}", r.validate());
    if let Some(s) = r.messages[3].stages.as_mut() {
        s.send_ps += 1;
    }
    let (sender, index) = (r.messages[3].sender, r.messages[3].index);
    let problems = r.validate();
    assert!(
        problems.iter().any(|p| matches!(
            p,
            xrdma_reports::Inconsistency::StagesNotCompletion { messages }
                if messages == &[(sender, index)]
        )),
        "{problems:?}"
    );
    // Overflowing stages do not wrap into agreement.
    if let Some(s) = r.messages[3].stages.as_mut() {
        s.send_ps = u64::MAX;
        s.ack_ps = u64::MAX;
    }
    assert!(!r.validate().is_empty());
}

#[test]
fn trace_says_why_a_run_has_no_stages() {
    let d = std::env::temp_dir().join(format!("xrdma-trace-why-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch");
    let xrdma = || Command::new(env!("CARGO_BIN_EXE_xrdma"));
    let echo = "name: echo-traced
workload:
  echo: { clients: 1, server: 0, requests: 4, request-size: 4KiB }
trace: true
";
    let file = d.join("echo.yaml");
    std::fs::write(&file, echo).expect("writes");
    let o = xrdma()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(d.join("echo"))
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Said at run time already.
    let run_err = String::from_utf8_lossy(&o.stderr);
    assert!(
        run_err.contains("no send-side stages to trace"),
        "{run_err}"
    );
    let t = xrdma()
        .arg("trace")
        .arg(d.join("echo"))
        .output()
        .expect("runs");
    assert!(!t.status.success());
    let err = String::from_utf8_lossy(&t.stderr);
    assert!(err.contains("completes on its response"), "{err}");

    // A traced result whose stages were edited: refused, naming the message.
    let mut r = run(true);
    if let Some(s) = r.messages[0].stages.as_mut() {
        s.app_ps += 7;
    }
    std::fs::create_dir_all(d.join("edited")).expect("dir");
    xrdma_reports::write_json(&d.join("edited/result.json"), &r).expect("writes");
    let t = xrdma()
        .arg("trace")
        .arg(d.join("edited"))
        .output()
        .expect("runs");
    assert!(!t.status.success());
    let err = String::from_utf8_lossy(&t.stderr);
    assert!(err.contains("do not add up"), "{err}");
}

#[test]
fn the_report_page_holds_the_stages_of_a_traced_run_and_the_endpoints_of_every_run() {
    let traced = xrdma_reports::html::report_html(&run(true), &[]);
    let st = stages::summarize(&run(true)).expect("stages");
    assert!(traced.contains("<h2>Where the time went</h2>"), "{traced}");
    let first = stages::stage_table(&st);
    let first = first.lines().next().expect("a line");
    assert!(traced.contains(&xrdma_reports::html::escape(first)));
    let plain = xrdma_reports::html::report_html(&run(false), &[]);
    assert!(!plain.contains("Where the time went"));
    for page in [&traced, &plain] {
        // The receiver and the four senders, each with its connections.
        assert!(page.contains("<h2>Endpoints</h2>"));
        assert!(page.contains("5 endpoint(s) with a connection"), "{page}");
        assert!(page.contains("connections\n") && page.contains("qp-cached"));
    }
}
