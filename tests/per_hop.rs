//! The per-hop comparison (`scenarios/study/per-hop.yaml`): one 64 B request at a time over
//! xrdma and over kernel TCP on ConnectX-6-class hosts. Each stack's round trip is exactly its
//! host model's costs plus the wire, and each run reports the hosts' CPU per message.

mod common;

use common::all_delivered;
use std::path::Path;
use xrdma::Span;
use xrdma_reports::RunResult;
use xrdma_runner::request::run_sim;
use xrdma_scenario::Stack;
use xrdma_sim::profiles::CONNECTX6;

fn run(stack: Stack, seed: u64) -> RunResult {
    let mut sc = xrdma_scenario::load(Path::new("scenarios/study/per-hop.yaml")).expect("loads");
    sc.stack = stack;
    let mut sim = sc.sim_or_default();
    sim.seed = seed;
    sc.sim = Some(sim);
    run_sim(&sc).expect("runs")
}

fn p50(r: &RunResult) -> u64 {
    r.figures
        .as_ref()
        .and_then(|f| f.latency.p50_ps)
        .expect("a p50")
}

/// The tools' fabric for one 80-byte TCP payload: two 1 µs links and two serializations of
/// 170 bytes at 100 Gb/s (80 ps a byte).
fn tcp_wire() -> Span {
    Span::from_ps(2 * 1_000_000 + 2 * 170 * 80)
}

/// A 64 B hop's host time over kernel TCP on hosts `c`: the message, its length and the ACK
/// frame of the message before, 80 B in one `writev`, one segment, one `read`.
fn tcp_hop_host_time(c: &xrdma_sim::HostModel) -> Span {
    c.tcp_write_cost(80)
        + c.tcp_tx_segment
        + c.rx_dma_write
        + c.tcp_rx_segment
        + c.tcp_wakeup
        + c.turn
        + c.tcp_read_cost(80)
        + c.app_cost(1, 1)
}

#[test]
fn a_tcp_hop_is_the_kernel_costs_plus_the_wire_at_every_seed() {
    let host = tcp_hop_host_time(&CONNECTX6);
    for seed in [1, 2, 3] {
        let r = run(Stack::Tcp, seed);
        all_delivered(&r);
        assert_eq!(p50(&r), ((host + tcp_wire()) * 2).as_ps(), "seed {seed}");
        // One data segment each way per request: the frames of a turn go in one write.
        assert_eq!(r.network.data_packets, Some(2 * r.messages.len() as u64));
    }
}

#[test]
fn a_pure_ack_does_not_wake_a_reader_even_when_the_wake_up_outlasts_the_delayed_ack() {
    // Linux's 40 ms delayed ACK fires before a 100 ms wake-up ends; the client waits to read
    // the answer, which a pure ACK does not bring: each hop still pays its own wake-up.
    for wakeup_ms in [10, 100, 300] {
        let mut sc =
            xrdma_scenario::load(Path::new("scenarios/study/per-hop.yaml")).expect("loads");
        sc.stack = Stack::Tcp;
        let mut sim = sc.sim_or_default();
        sim.host
            .set_cost("tcp-wakeup", Span::from_ms(wakeup_ms))
            .expect("a cost");
        let c = sim.host.clone();
        sc.sim = Some(sim);
        if let xrdma_scenario::Workload::Echo(e) = &mut sc.workload {
            e.requests = 10;
        }
        let r = run_sim(&sc).expect("runs");
        all_delivered(&r);
        let host = tcp_hop_host_time(&c);
        assert_eq!(p50(&r), ((host + tcp_wire()) * 2).as_ps(), "{wakeup_ms} ms");
    }
}

#[test]
fn xrdma_costs_the_hosts_a_fraction_of_kernel_tcp_per_message() {
    for seed in [1, 2, 3] {
        let (x, t) = (run(Stack::Xrdma, seed), run(Stack::Tcp, seed));
        let cpu = |r: &RunResult| {
            r.host_cpu
                .as_ref()
                .and_then(|c| c.per_message_ps(r.messages.len() as u64))
                .expect("the host model reports CPU time")
        };
        // xrdma's hop on this fabric is 2.93 µs (the profile's third check); TCP's four times.
        assert!(
            p50(&x) * 3 < p50(&t),
            "seed {seed}: {} {}",
            p50(&x),
            p50(&t)
        );
        assert!(
            cpu(&x) * 5.0 < cpu(&t),
            "seed {seed}: {} {}",
            cpu(&x),
            cpu(&t)
        );
    }
}

#[test]
fn the_ideal_host_reports_no_cpu_time_not_zero() {
    let mut sc = xrdma_scenario::load(Path::new("scenarios/study/per-hop.yaml")).expect("loads");
    let mut sim = sc.sim_or_default();
    sim.host = xrdma_sim::HostModel::IDEAL;
    sc.sim = Some(sim);
    for stack in [Stack::Xrdma, Stack::Tcp] {
        sc.stack = stack;
        let r = run_sim(&sc).expect("runs");
        assert_eq!(r.host_cpu, None, "{stack}");
        assert!(!xrdma_reports::summary_table(&r).contains("host CPU"));
    }
}

#[test]
fn compare_puts_the_stacks_cpu_side_by_side_and_leaves_the_row_out_without_it() {
    let dir = std::env::temp_dir().join(format!("xrdma-per-hop-compare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch");
    let (x, t) = (run(Stack::Xrdma, 1), run(Stack::Tcp, 1));
    let (xp, tp) = (dir.join("xrdma.json"), dir.join("tcp.json"));
    xrdma_reports::write_json(&xp, &x).expect("writes");
    xrdma_reports::write_json(&tp, &t).expect("writes");
    let runs = xrdma_tools::compare::load_runs(&[xp.clone(), tp]).expect("loads");
    let table = xrdma_tools::compare::compare_table(&runs);
    let row = table
        .lines()
        .find(|l| l.starts_with("host CPU per message µs"))
        .expect("a host CPU row");
    assert!(
        row.contains("1.100") && row.contains("9.132 (×8.302)"),
        "{row}"
    );
    assert!(!table.contains("heartbeat p99"), "{table}");
    // The ideal host charges nothing: no CPU figure, no row.
    let mut ideal = x.clone();
    ideal.host_cpu = None;
    let ip = dir.join("ideal.json");
    xrdma_reports::write_json(&ip, &ideal).expect("writes");
    let runs = xrdma_tools::compare::load_runs(&[ip.clone(), ip]).expect("loads");
    assert!(!xrdma_tools::compare::compare_table(&runs).contains("host CPU"));
    let _ = std::fs::remove_dir_all(&dir);
}
