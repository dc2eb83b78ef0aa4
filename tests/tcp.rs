//! The TCP baseline stacks (`stack: tcp | dctcp`): every workload runs over them with the
//! same delivery check and report as over xrdma, and the simulated kernel TCP shows the
//! incast collapse the literature puts at a 200 ms RTOmin (Vasudevan et al., SIGCOMM 2009)
//! and DCTCP's shallow queues under ECN marking (Alizadeh et al., SIGCOMM 2010).

mod common;

use common::{all_delivered, last_completion};
use std::path::Path;
use xrdma_reports::RunResult;
use xrdma_runner::request::run_sim;
use xrdma_scenario::{Scenario, Stack};

const SEEDS: [u64; 4] = [1, 2, 3, 4];

fn load(path: &str) -> Scenario {
    xrdma_scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("loads")
}

fn parse(text: &str) -> Scenario {
    xrdma_scenario::parse(text, Path::new("tcp-test.yaml")).expect("parses")
}

fn run(sc: &Scenario, stack: Stack, seed: u64) -> RunResult {
    let mut sc = sc.clone();
    sc.stack = stack;
    let mut sim = sc.sim_or_default();
    sim.seed = seed;
    sc.sim = Some(sim);
    run_sim(&sc).expect("run succeeds")
}

#[test]
fn every_shipped_workload_runs_over_tcp_and_dctcp_at_every_seed() {
    for path in [
        "scenarios/incast-8.yaml",
        "scenarios/echo.yaml",
        "scenarios/open-loop-stall.yaml",
    ] {
        let sc = load(path);
        for stack in [Stack::Tcp, Stack::Dctcp] {
            for seed in SEEDS {
                let r = run(&sc, stack, seed);
                all_delivered(&r);
                assert!(
                    r.transport.is_none(),
                    "{path}: RC attributes describe no TCP run"
                );
            }
        }
    }
}

#[test]
fn a_tcp_run_is_the_same_bit_for_bit_at_the_same_seed() {
    let sc = load("scenarios/incast-8.yaml");
    for stack in [Stack::Tcp, Stack::Dctcp] {
        let a = run(&sc, stack, 7);
        let b = run(&sc, stack, 7);
        assert_eq!(
            a.sim.as_ref().map(|s| s.trace_hash.clone()),
            b.sim.as_ref().map(|s| s.trace_hash.clone())
        );
        assert_eq!(a.messages, b.messages);
    }
}

/// 32 senders × 256 KiB into one 10 Gb/s port of a switch with a 256 KiB buffer, drop-tail.
fn shallow_incast(rto_min: &str) -> Scenario {
    parse(&format!(
        "name: collapse\nstack: tcp\ntcp: {{ rto-min: {rto_min} }}\n\
         workload:\n  incast:\n    senders: 32\n    receiver: 0\n    messages:\n      - {{ size: 256KiB, count: 1 }}\n\
         sim:\n  link-rate: 10Gbps\n  switch-buffer: 256KiB\n"
    ))
}

fn goodput(r: &RunResult) -> f64 {
    r.figures
        .as_ref()
        .and_then(|f| f.goodput_bps)
        .unwrap_or(0.0)
}

#[test]
fn a_200ms_rto_min_collapses_a_shallow_buffered_incast_and_1ms_recovers_it() {
    let (slow, fast) = (shallow_incast("200ms"), shallow_incast("1ms"));
    for seed in SEEDS {
        let (s, f) = (run(&slow, Stack::Tcp, seed), run(&fast, Stack::Tcp, seed));
        all_delivered(&s);
        all_delivered(&f);
        let drops = s.network.drops.unwrap_or(0);
        assert!(drops > 0, "seed {seed}: the buffer overflows");
        let last = |r: &RunResult| {
            r.messages
                .iter()
                .filter_map(|m| m.completed_ps)
                .max()
                .unwrap_or(0)
        };
        // Some sender loses its whole window's tail and waits out RTOmin.
        assert!(last(&s) >= 200_000_000_000, "seed {seed}: {} ps", last(&s));
        assert!(last(&f) < 50_000_000_000, "seed {seed}: {} ps", last(&f));
        assert!(
            goodput(&f) > 10.0 * goodput(&s),
            "seed {seed}: {} vs {} b/s",
            goodput(&f),
            goodput(&s)
        );
    }
}

#[test]
fn dctcp_keeps_a_marking_switch_from_dropping_where_tcp_overflows_it() {
    let text = |stack: &str| {
        format!(
            "name: dctcp\nstack: {stack}\ntcp: {{ rto-min: 1ms }}\n\
             workload:\n  incast:\n    senders: 16\n    receiver: 0\n    messages:\n      - {{ size: 1MiB, count: 1 }}\n\
             sim:\n  link-rate: 10Gbps\n  switch-buffer: 512KiB\n  ecn: {{ kmin: 64KiB, kmax: 64KiB, pmax: 1 }}\n"
        )
    };
    for seed in SEEDS {
        let d = run(&parse(&text("dctcp")), Stack::Dctcp, seed);
        let t = run(&parse(&text("tcp")), Stack::Tcp, seed);
        all_delivered(&d);
        all_delivered(&t);
        assert!(
            d.network.ecn_marks.unwrap_or(0) > 0,
            "seed {seed}: {:?}",
            d.network
        );
        assert_eq!(d.network.drops, Some(0), "seed {seed}: {:?}", d.network);
        assert!(
            t.network.drops.unwrap_or(0) > 0,
            "seed {seed}: {:?}",
            t.network
        );
    }
}

#[test]
fn a_tcp_run_refuses_what_only_rdma_has() {
    let mut sc = load("scenarios/faults/stop-reposting.yaml");
    sc.stack = Stack::Tcp;
    let e = run_sim(&sc).expect_err("refused").to_string();
    assert!(e.contains("stop-reposting"), "{e}");
}

#[test]
fn a_zero_initial_rto_is_refused_not_run_forever() {
    let text = "name: x\nstack: tcp\ntcp: { rto-initial: 0s }\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages: [ { size: 64KiB } ]\n";
    let e = xrdma_scenario::parse(text, Path::new("x.yaml"))
        .expect_err("refused")
        .to_string();
    assert!(e.contains("tcp.rto-initial"), "{e}");
}

#[test]
fn a_tcp_run_counts_its_segments_and_retransmissions() {
    for seed in SEEDS {
        let r = run(&shallow_incast("1ms"), Stack::Tcp, seed);
        let n = &r.network;
        assert!(n.data_packets > Some(0), "seed {seed}: {n:?}");
        assert!(n.drops > Some(0), "seed {seed}: {n:?}");
        // Every dropped segment is sent again.
        assert!(n.retransmitted_packets >= n.drops, "seed {seed}: {n:?}");
    }
}

#[test]
fn a_tcp_message_completes_when_the_peer_application_has_it() {
    // The receiver's application stops for 100 ms: the messages that arrive meanwhile
    // complete only after it, over TCP as over xrdma (the kernel's ACK alone would not wait).
    let sc = load("scenarios/open-loop-stall.yaml");
    for seed in SEEDS {
        let r = run(&sc, Stack::Tcp, seed);
        all_delivered(&r);
        let p99 = r
            .figures
            .as_ref()
            .and_then(|f| f.latency.p99_ps)
            .unwrap_or(0);
        assert!(p99 > 50_000_000_000, "seed {seed}: p99 {p99} ps");
    }
}

#[test]
fn a_lone_last_segment_does_not_wait_out_the_delayed_ack_timer() {
    // Linux's 40 ms delayed ACK is the default; the receiving stack's ACK frame carries the
    // kernel's ACK at once, so a lossless incast ends near T*.
    let sc = load("scenarios/incast-8.yaml");
    for stack in [Stack::Tcp, Stack::Dctcp] {
        for seed in SEEDS {
            let r = run(&sc, stack, seed);
            all_delivered(&r);
            let t_star = r.ideal.as_ref().map_or(0, |i| i.t_star_ps);
            assert!(
                (last_completion(&r) as f64) < 1.2 * t_star as f64,
                "seed {seed}: {} ps against T* {t_star} ps",
                last_completion(&r)
            );
        }
    }
}

#[test]
fn a_tcp_run_samples_what_each_sender_delivered() {
    let sc = load("scenarios/incast-8.yaml");
    for stack in [Stack::Tcp, Stack::Dctcp] {
        let r = run(&sc, stack, 1);
        let ts = r.timeseries.as_ref().expect("incast-8 samples the network");
        assert_eq!(ts.senders.len(), 8, "one series per sender");
        // Each sender's stream: its payload and an 8-byte length word per message.
        let payload: u64 = r.messages.iter().map(|m| m.payload_bytes()).sum();
        let sampled: u64 = ts.senders.iter().flat_map(|s| &s.bytes).sum();
        assert_eq!(sampled, payload + 8 * r.messages.len() as u64);
    }
}

#[test]
fn tcp_settings_that_spoil_a_run_are_named_in_a_warning() {
    let warnings = |text: &str| {
        xrdma_runner::check::check(&parse(text))
            .expect("checks")
            .warnings
            .join("\n")
    };
    let incast = "workload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages: [ { size: 64KiB } ]\n";
    let w = warnings(&format!("name: x\nstack: dctcp\n{incast}"));
    assert!(w.contains("without `sim.ecn`"), "{w}");
    let w = warnings(&format!(
        "name: x\nstack: tcp\ntcp: {{ mss: 9000 }}\n{incast}"
    ));
    assert!(w.contains("jumbo frame"), "{w}");
    assert!(!w.contains("spurious timeout"), "{w}");
    let w = warnings(&format!(
        "name: x\nstack: tcp\ntcp: {{ rto-min: 1ms }}\n{incast}"
    ));
    assert!(w.contains("spurious timeout"), "{w}");
    // A host model without kernel TCP costs makes TCP look free; one with them does not warn.
    let w = warnings(&format!(
        "name: x\nstack: tcp\nsim: {{ host: rxe-guest }}\n{incast}"
    ));
    assert!(w.contains("charges nothing for kernel TCP"), "{w}");
    let w = warnings(&format!(
        "name: x\nstack: tcp\nsim: {{ host: connectx6 }}\n{incast}"
    ));
    assert!(!w.contains("kernel TCP"), "{w}");
    // The shipped study carries every stack's settings and warns of nothing, over any stack.
    let all = [Stack::Xrdma, Stack::Tcp, Stack::Dctcp];
    let per_hop = [Stack::Xrdma, Stack::Tcp];
    for (path, stacks) in [
        ("scenarios/study/fan-in.yaml", &all[..]),
        ("scenarios/study/per-hop.yaml", &per_hop[..]),
    ] {
        for &stack in stacks {
            let mut sc = load(path);
            sc.stack = stack;
            let w = xrdma_runner::check::check(&sc).expect("checks").warnings;
            assert!(w.is_empty(), "{path} {stack}: {w:?}");
        }
    }
}

#[test]
fn tcp_settings_that_cannot_run_are_refused_naming_the_field() {
    let refused = |tcp: &str| {
        let text = format!("name: x\nstack: tcp\ntcp: {tcp}\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages: [ {{ size: 64KiB }} ]\n");
        xrdma_scenario::parse(&text, Path::new("x.yaml"))
            .expect_err("refused")
            .to_string()
    };
    // A send buffer below one segment ran for simulated hours, a byte at a time.
    assert!(refused("{ snd-buf: 1B }").contains("tcp.snd-buf"));
    assert!(refused("{ rcv-buf: 100B, mss: 1000 }").contains("tcp.rcv-buf"));
    // An RTOmin above RTOmax is blamed on the key written, not on rto-initial.
    let e = refused("{ rto-min: 10ms, rto-max: 5ms }");
    assert!(e.contains("tcp.rto-min"), "{e}");
    // The MSS is a size like every other: with a unit, and refused past 64 KiB by name.
    let e = refused("{ mss: 128KiB }");
    assert!(e.contains("mss") && e.contains("outside 64 B"), "{e}");
    let ok = |tcp: &str| {
        let text = format!("name: x\nstack: tcp\ntcp: {tcp}\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages: [ {{ size: 64KiB }} ]\n");
        xrdma_scenario::parse(&text, Path::new("x.yaml")).expect("parses")
    };
    for (tcp, mss) in [
        ("{ mss: 8948B }", 8948),
        ("{ mss: 1KiB }", 1024),
        ("{ mss: 536 }", 536),
    ] {
        assert_eq!(ok(tcp).tcp.mss, mss, "{tcp}");
    }
}

#[test]
fn a_sender_that_feeds_its_stack_lazily_keeps_the_kernels_buffer_full() {
    // The incast sender keeps two messages queued at a time; a TCP write goes into the
    // kernel's buffer at once, so the turn asks it again until all 40 are written, without
    // waiting for a wake-up from the network (a pure ACK wakes no reader).
    let text = "name: lazy\nstack: tcp\ntcp: { delayed-ack: 40ms }\nworkload:\n  incast:\n    senders: 1\n    receiver: 0\n    messages:\n      - { size: 4KiB, count: 40 }\n";
    for seed in SEEDS {
        let r = run(&parse(text), Stack::Tcp, seed);
        all_delivered(&r);
        let t_star = r.ideal.map(|i| i.t_star_ps).expect("T*");
        assert!(
            (last_completion(&r) as f64) < 1.5 * t_star as f64,
            "seed {seed}: last completion {} ps, T* {t_star} ps",
            last_completion(&r)
        );
    }
}
