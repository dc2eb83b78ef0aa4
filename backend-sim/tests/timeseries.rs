//! Time series sampled by the simulator: derived throughput, queue and PFC values, the byte
//! balance, coarsening, and that sampling leaves the event trace unchanged.

mod common;
use common::*;
use xrdma::{SendOpcode, Span, Transport};
use xrdma_reports::TimeSeries;
use xrdma_sim::{PfcConfig, SimConfig, Simulation, TimeSeriesConfig};

/// `n` senders (hosts 0..n) each RDMA WRITE `bytes` to host `n`; sampling as `ts` (if any).
fn incast(cfg: SimConfig, n: u32, bytes: u32, ts: Option<TimeSeriesConfig>) -> Simulation {
    let mut sim = Simulation::new(SimConfig {
        hosts: n + 1,
        ..cfg
    })
    .unwrap();
    if let Some(ts) = ts {
        sim.enable_timeseries(ts);
    }
    let dst = sim
        .transport(n)
        .register_memory(n as u64 * bytes as u64)
        .unwrap();
    for h in 0..n {
        let (qa, _) = connect(&mut sim, h, n);
        let src = patterned(&mut sim, h, bytes as usize, h as u8);
        let mut w = wr(h as u64, SendOpcode::RdmaWrite, &src, bytes);
        w.remote_addr = dst.addr + h as u64 * bytes as u64;
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
    }
    sim
}

fn watch(host: u32, interval_us: u64, max_points: usize) -> TimeSeriesConfig {
    TimeSeriesConfig {
        interval: Span::from_us(interval_us),
        max_points,
        watch_host: Some(host),
    }
}

#[test]
fn a_single_flow_delivers_the_payload_line_rate_with_an_empty_queue() {
    // 1 sender, 8 MiB WRITE at 100 Gb/s, MTU 1024, 82 header bytes: every full packet is
    // 1106 wire bytes (the first has a 16-byte RETH more), so the payload rate is
    // 100e9 · 1024/1106 = 92.586 Gb/s = 115 732.4 payload bytes per 10 µs interval.
    let bytes = 8 << 20;
    let mut sim = incast(SimConfig::default(), 1, bytes, Some(watch(1, 10, 4096)));
    run(&mut sim);
    let ts = sim.timeseries().unwrap();
    assert_eq!(ts.coarsened, 0);
    assert_eq!(ts.interval_ps, Span::from_us(10).as_ps());
    assert_eq!(ts.senders.len(), 1);
    assert_eq!(ts.senders[0].host, 0);
    assert_eq!(
        ts.bottleneck,
        "egress queue of switch 0 port 1, toward host 1 (the receiver)"
    );
    let d = &ts.senders[0].bytes;
    // Transfer time = 8 388 608 B · 8 / 92.586 Gb/s ≈ 724.8 µs: ~73 intervals. The first holds the
    // ~2 µs start (propagation), the last the tail; every interval between carries the line
    // rate to within one packet (packets are counted whole at their delivery instant).
    let expect = 100e9 * 1024.0 / 1106.0 * 10e-6 / 8.0;
    let full: Vec<u64> = d[1..d.len() - 1].to_vec();
    assert!(full.len() >= 70, "{} intervals", full.len());
    for (i, &b) in full.iter().enumerate() {
        assert!(
            (b as f64 - expect).abs() <= 1024.0,
            "interval {}: {b} bytes, expected {expect:.0} ± 1024",
            i + 1
        );
    }
    // No contention: the port toward the receiver forwards each packet as it arrives. The
    // first packet carries a 16-byte RETH (1122 wire bytes, 89 760 ps at 100 Gb/s) and the
    // others 1106 (88 480 ps), so the switch finishes packet k 1280 ps after packet k+1 has
    // arrived: the queue holds one 1106-byte packet for 1280 ps of every 88 480 ps (1.4 %
    // of the time) and is empty otherwise. So every sample is 0 or 1106, and at most a few of
    // the ~73 are 1106.
    let one = |q: &u64| *q == 0 || *q == 1106;
    assert!(ts.bottleneck_queue_bytes.iter().all(one));
    assert!(ts.max_queue_bytes.iter().all(one));
    let busy = ts.bottleneck_queue_bytes.iter().filter(|&&q| q > 0).count();
    assert!(busy <= 5, "{busy} samples with a queued packet");
    assert!(ts.paused_ports.iter().all(|&p| p == 0));
}

#[test]
fn per_interval_bytes_sum_to_the_bytes_delivered() {
    // 4:1 incast of 300 000 bytes each (not a multiple of the MTU): the last sample of each
    // source is every byte it sent, and their sum is the simulator's delivered total.
    let bytes = 300_000;
    let mut sim = incast(SimConfig::default(), 4, bytes, Some(watch(4, 10, 1024)));
    run(&mut sim);
    let ts = sim.timeseries().unwrap();
    assert_eq!(ts.senders.len(), 4);
    let mut total = 0;
    for s in &ts.senders {
        let sum: u64 = s.bytes.iter().sum();
        assert_eq!(sum, u64::from(bytes), "host {}", s.host);
        total += sum;
    }
    assert_eq!(total, sim.stats().delivered_payload_bytes);
    // The last sample is the first boundary at or after the end of the run.
    let last = *ts.time_ps.last().unwrap();
    let now = sim.now().as_ps();
    assert!(last >= now && last - now < ts.interval_ps);
    // Four senders into one port: the receiver's port queues; its samples never exceed the
    // run's peak, and the fabric's largest queue is at least the watched one.
    assert!(ts.bottleneck_queue_bytes.iter().any(|&q| q > 0));
    let peak = sim.stats().max_egress_queue_bytes;
    for (w, m) in ts.bottleneck_queue_bytes.iter().zip(&ts.max_queue_bytes) {
        assert!(w <= m && *m <= peak);
    }
}

#[test]
fn sampling_adds_no_event_and_changes_no_trace() {
    let cfg = SimConfig {
        switch_buffer_bytes: 9 * 47_336,
        pfc: Some(PfcConfig::default()),
        ..Default::default()
    };
    let mut off = incast(cfg.clone(), 8, 256 * 1024, None);
    let mut on = incast(cfg, 8, 256 * 1024, Some(watch(8, 1, 64)));
    run(&mut off);
    run(&mut on);
    assert!(off.timeseries().is_none());
    assert_eq!(off.trace_hash(), on.trace_hash());
    assert_eq!(off.stats(), on.stats());
    let ts = on.timeseries().unwrap();
    // The last cumulative counters are the run's totals.
    let st = on.stats();
    assert_eq!(*ts.pfc_xoff.last().unwrap(), st.pfc_xoff_sent);
    assert_eq!(*ts.ecn_marks.last().unwrap(), st.ecn_marks);
    assert_eq!(*ts.cnps.last().unwrap(), st.cnps_sent);
    assert!(st.pfc_xoff_sent > 0);
    // The tiny buffer pauses senders: some sample sees paused NICs, none more than the 8
    // senders plus the switch's 9 ports.
    assert!(ts.paused_ports.iter().any(|&p| p > 0));
    assert!(ts.paused_ports.iter().all(|&p| p <= 17));
    // Cumulative series never decrease.
    for s in [&ts.pfc_xoff, &ts.ecn_marks, &ts.cnps] {
        assert!(s.windows(2).all(|w| w[0] <= w[1]));
    }
}

#[test]
fn coarsening_bounds_the_points_and_keeps_every_byte() {
    // 64 points per series at 1 µs for a run of ~8·256 KiB·1106/1024 / 12.5 GB/s ≈ 181 µs:
    // 181 samples do not fit in 64, so the interval doubles twice (to 4 µs: ≤ 64 samples of
    // which at least 32 are kept).
    let cfg = SimConfig::default();
    let mut sim = incast(cfg, 8, 256 * 1024, Some(watch(8, 1, 64)));
    run(&mut sim);
    let ts: TimeSeries = sim.timeseries().unwrap();
    assert!(
        ts.time_ps.len() <= 64 && ts.time_ps.len() >= 32,
        "{}",
        ts.time_ps.len()
    );
    assert_eq!(ts.coarsened, 2);
    assert_eq!(ts.interval_ps, Span::from_us(4).as_ps());
    assert_eq!(ts.requested_interval_ps, Span::from_us(1).as_ps());
    assert_eq!(ts.max_points, 64);
    for (i, &t) in ts.time_ps.iter().enumerate() {
        assert_eq!(t, (i as u64 + 1) * ts.interval_ps);
    }
    assert_eq!(ts.check(), Ok(()));
    for s in &ts.senders {
        assert_eq!(s.bytes.iter().sum::<u64>(), 256 * 1024);
    }
}

#[test]
fn samples_are_deterministic() {
    let run_once = || {
        let mut sim = incast(SimConfig::default(), 4, 100_000, Some(watch(4, 2, 256)));
        run(&mut sim);
        sim.timeseries().unwrap()
    };
    assert_eq!(run_once(), run_once());
}
