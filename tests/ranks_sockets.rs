//! A run across processes over kernel TCP (`--backend sockets --rank N`): ranks meet through
//! the authenticated bootstrap, connect their hosts' sockets across processes with the
//! receiver rank's cookies, and the receiver's rank writes one report, as ranks on an RDMA
//! device do. Here the ranks are threads of the test on loopback; `ci/softroce` runs them
//! on two guests across a wire.

mod common;

use common::all_delivered;
use std::path::{Path, PathBuf};
use xrdma_cluster::bootstrap::{JobSecret, Listener};
use xrdma_cluster::rank::{run_rank, run_rank_bound, RankOutcome};
use xrdma_reports::{Backend as ResultBackend, RunResult};
use xrdma_runner::request::Backend;

/// A scratch directory for test `name`.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-ranks-sockets-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a scratch directory");
    d
}

/// `workload` (its receiver host 0) as a file with `stack: tcp` and two ranks: rank 0 runs
/// hosts `rank0` at the address of `listener`, rank 1 runs `rank1`.
fn scenario(dir: &Path, workload: &str, listener: &Listener, rank0: &str, rank1: &str) -> PathBuf {
    let path = dir.join("s.yaml");
    let text = format!(
        "name: ranks-sockets\nstack: tcp\nworkload:\n{workload}\nverbs:\n  run-timeout: 60s\n  \
         ranks:\n    - {{ address: \"{}\", hosts: {rank0} }}\n    - {{ address: \
         \"127.0.0.1:9\", hosts: {rank1} }}\n",
        listener.local_addr()
    );
    std::fs::write(&path, text).expect("writes the scenario");
    path
}

/// Run both ranks of `path`, rank 1 on a thread; rank 0's result and rank 1's outcome.
fn run_both(path: &Path, listener: Listener) -> (RunResult, RankOutcome) {
    let sc = xrdma_scenario::load(path).expect("loads");
    let secret = JobSecret::generate().expect("a secret");
    let other = {
        let (sc, secret) = (sc.clone(), secret.clone());
        std::thread::spawn(move || run_rank(&sc, 1, Backend::Sockets, &secret))
    };
    let outcome =
        run_rank_bound(&sc, 0, Backend::Sockets, Some(listener), &secret).expect("rank 0 runs");
    let sent = other.join().expect("rank 1 ends").expect("rank 1 runs");
    let RankOutcome::Report(r) = outcome else {
        panic!("rank 0 runs the receiver: {outcome:?}");
    };
    (*r, sent)
}

#[test]
fn an_incast_runs_over_tcp_across_two_ranks_and_rank_0_reports_every_sender() {
    let dir = scratch("incast");
    let listener = Listener::bind(([127, 0, 0, 1], 0).into()).expect("binds");
    let path = scenario(
        &dir,
        "  incast: { senders: 3, receiver: 0, messages: [ { size: 64KiB, count: 4 } ] }",
        &listener,
        "[0, 3]",
        "[1, 2]",
    );
    let (r, sent) = run_both(&path, listener);
    all_delivered(&r);
    assert_eq!(r.messages.len(), 12);
    // The ranks stop when the run is settled, not at the 60 s run timeout: a rank whose own
    // hosts were done once slept in `epoll` with its peers' records unread.
    assert!(r.wall_clock.wall_seconds < 30.0, "{:?}", r.wall_clock);
    assert_eq!(r.scenario.backend, ResultBackend::Sockets);
    assert_eq!(r.scenario.stack, xrdma_scenario::Stack::Tcp);
    // Hosts 1 and 2 ran in rank 1 and came over its sockets; host 3 beside the receiver.
    let ranks = r
        .environment
        .as_ref()
        .and_then(|e| e.ranks.as_ref())
        .expect("where every rank ran");
    assert_eq!(ranks.len(), 2);
    assert!(matches!(
        sent,
        RankOutcome::Sent {
            rank: 1,
            to_rank: 0,
            senders: 2,
            acked: 8,
            messages: 8
        }
    ));
    // No device: counters a socket cannot observe are null, and one rank's CPU is not the
    // run's.
    assert_eq!(r.network.data_packets, None);
    assert!(r.host_cpu.is_none() && r.transport.is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_per_hop_echo_runs_over_tcp_across_two_ranks() {
    let dir = scratch("echo");
    let listener = Listener::bind(([127, 0, 0, 1], 0).into()).expect("binds");
    let path = scenario(
        &dir,
        "  echo: { clients: 1, server: 0, concurrency: 1, requests: 200, request-size: 64B, \
         response-size: 64B }",
        &listener,
        "[0]",
        "[1]",
    );
    let (r, _) = run_both(&path, listener);
    all_delivered(&r);
    assert_eq!(r.messages.len(), 200);
    assert!(r.wall_clock.wall_seconds < 5.0, "{:?}", r.wall_clock);
    let _ = std::fs::remove_dir_all(&dir);
}
