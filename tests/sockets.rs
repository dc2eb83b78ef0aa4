//! The sockets backend (`--backend sockets`): the same workloads over this machine's kernel
//! TCP, every host in this process over loopback, with the same delivery check and report;
//! the process's CPU time as the CPU column; and what it cannot run refused before it runs.

mod common;

use common::all_delivered;
use std::path::Path;
use xrdma_reports::{Backend as ResultBackend, CpuSource, RunResult};
use xrdma_runner::request::{Backend, RunRequest};
use xrdma_scenario::{Scenario, Stack};

fn load(path: &str) -> Scenario {
    xrdma_scenario::load(Path::new(path)).expect("loads")
}

fn run(sc: Scenario, stack: Stack) -> anyhow::Result<RunResult> {
    let mut req = RunRequest::new(sc, Backend::Sockets);
    req.stack = Some(stack);
    req.check()?;
    Ok(req.run()?.result)
}

#[test]
fn every_shipped_workload_runs_over_the_machines_tcp() {
    for path in [
        "scenarios/incast-8.yaml",
        "scenarios/echo.yaml",
        "scenarios/study/per-hop.yaml",
    ] {
        let r = run(load(path), Stack::Tcp).expect("runs");
        all_delivered(&r);
        assert_eq!(r.scenario.backend, ResultBackend::Sockets, "{path}");
        assert_eq!(r.scenario.stack, Stack::Tcp, "{path}");
        // A real network is not observed, and its path is not stated: no counter, no T*.
        assert_eq!(r.network.data_packets, None, "{path}");
        assert_eq!(r.ideal, None, "{path}");
        assert!(r.sim.is_none() && r.transport.is_none(), "{path}");
        let cpu = r.host_cpu.as_ref().expect("the process's CPU time");
        assert_eq!(cpu.source, CpuSource::Thread, "{path}");
        assert!(
            cpu.total_ps > 0 && cpu.per_host_ps.is_none(),
            "{path}: {cpu:?}"
        );
        let summary = xrdma_reports::summary_table(&r);
        assert!(
            summary.contains("backend=sockets stack=tcp")
                && summary.contains("host CPU")
                && summary.contains("network    not observed")
                && !summary.contains("device "),
            "{summary}"
        );
    }
}

#[test]
fn what_the_sockets_backend_cannot_run_is_refused_before_it_runs() {
    let sc = load("scenarios/incast-8.yaml");
    let e = run(sc.clone(), Stack::Xrdma).unwrap_err().to_string();
    assert!(
        e.contains("write `stack: tcp`") && e.contains("--backend verbs"),
        "{e}"
    );
    let e = run(sc.clone(), Stack::Dctcp).unwrap_err().to_string();
    assert!(e.contains("tcp_congestion_control"), "{e}");
    let mut two = sc;
    two.verbs = Some(xrdma_scenario::VerbsSection {
        ranks: (0..2)
            .map(|r| xrdma_scenario::RankSpec {
                address: ([127, 0, 0, 1], 18600 + r).into(),
                hosts: vec![u32::from(r)],
            })
            .collect(),
        ..Default::default()
    });
    // Without --rank, a scenario with `verbs.ranks` runs every host in this process, as on
    // the verbs backend (each rank by itself: tests/ranks_sockets.rs).
    all_delivered(&run(two, Stack::Tcp).expect("runs in one process"));
}

#[test]
fn the_command_line_runs_the_sockets_backend_and_keeps_it_from_the_tools() {
    let out = std::env::temp_dir().join(format!("xrdma-sockets-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let xrdma = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_xrdma"))
            .args(args)
            .output()
            .expect("xrdma starts")
    };
    let o = out.to_str().expect("a UTF-8 temp dir");
    // Without `--stack tcp` the scenario's xrdma is refused, and nothing is written.
    let r = xrdma(&[
        "run",
        "scenarios/incast-8.yaml",
        "--backend",
        "sockets",
        "--out",
        o,
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("write `stack: tcp`"), "{err}");
    assert!(!out.exists());
    let r = xrdma(&[
        "run",
        "scenarios/incast-8.yaml",
        "--backend",
        "sockets",
        "--stack",
        "tcp",
        "--out",
        o,
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("a summary");
    assert!(summary.contains("backend=sockets stack=tcp"), "{summary}");
    let _ = std::fs::remove_dir_all(&out);
    // The tools run xrdma: the sockets backend is not among their values.
    let r = xrdma(&["ping", "--backend", "sockets"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("[possible values: sim, verbs]"), "{err}");
}

#[test]
fn the_report_page_names_the_stack_the_run_used() {
    // A run made with `--stack tcp` over a file that says xrdma: the page said only the file.
    let mut req =
        RunRequest::load(Path::new("scenarios/incast-8.yaml"), Backend::Sockets).expect("loads");
    req.stack = Some(Stack::Tcp);
    let r = req.run().expect("runs").result;
    let page = xrdma_reports::html::report_html(&r, &[]);
    assert!(
        page.contains("this run used seed 1 and stack <b>tcp</b>"),
        "{page}"
    );
}

#[test]
fn a_wake_is_kept_to_well_under_a_millisecond() {
    // `epoll_wait` counts milliseconds: a wake due in 300 µs was kept at the next whole
    // millisecond, so an open-loop sender's timed sends on this backend waited up to 1 ms.
    use xrdma_runner::fabric::{Clocked, SocketFabric};
    let mut f = SocketFabric::new(1, xrdma::Span::from_ms(60_000)).expect("a fabric");
    let mut ready = Vec::new();
    let mut lates = Vec::new();
    for _ in 0..9 {
        let due = f.now() + xrdma::Span::from_us(300);
        f.set_wake(0, due);
        assert!(f.advance(&mut ready, false));
        assert_eq!(ready, vec![0]);
        lates.push(f.now().saturating_since(due));
    }
    lates.sort();
    assert!(lates[4] < xrdma::Span::from_us(400), "{lates:?}");
}
