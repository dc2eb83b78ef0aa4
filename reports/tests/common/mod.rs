//! What the report tests share: a small result with optional time series, and a scratch
//! directory.

#![allow(dead_code)] // each test crate uses part of it

use std::path::PathBuf;

use xrdma_reports::*;

pub const US: u64 = 1_000_000; // ps per µs

pub fn msg(sender: u32, index: u32, intended_ps: u64, completed_ps: Option<u64>) -> MessageRecord {
    MessageRecord {
        sender,
        receiver: 0,
        index,
        size: 1000,
        intended_ps,
        completed_ps,
        delivered_ps: completed_ps,
        response_bytes: None,
        // Every delivered message traced: a quarter each in queue, send and network, the
        // rest in the ACK.
        stages: completed_ps.map(|c| {
            let l = c - intended_ps;
            MessageStages {
                app_ps: 0,
                queue_ps: l / 4,
                grant_ps: 0,
                send_ps: l / 4,
                network_ps: l / 4,
                ack_ps: l - 3 * (l / 4),
            }
        }),
    }
}

/// `senders` senders; sender `h` (1-based) delivers `h · 1000` bytes in every one of `n`
/// intervals of 10 µs.
pub fn series(senders: u32, n: usize) -> TimeSeries {
    TimeSeries {
        requested_interval_ps: 5 * US,
        interval_ps: 10 * US,
        coarsened: 1,
        max_points: 1024,
        bottleneck: "egress queue of switch 0 port 0, toward host 0 (the receiver)".into(),
        time_ps: (1..=n as u64).map(|i| i * 10 * US).collect(),
        bottleneck_queue_bytes: (0..n as u64).map(|i| i * 1000).collect(),
        max_queue_bytes: (0..n as u64).map(|i| i * 1500).collect(),
        ecn_marks: (0..n as u64).collect(),
        cnps: (0..n as u64).map(|i| i / 2).collect(),
        pfc_xoff: vec![0; n],
        paused_ports: (0..n as u32).map(|i| i % 3).collect(),
        senders: (1..=senders)
            .map(|h| SenderBytes {
                host: h,
                bytes: vec![u64::from(h) * 1000; n],
            })
            .collect(),
    }
}

pub fn result(ts: Option<TimeSeries>) -> RunResult {
    // Latencies 10, 20, 30, 40 µs delivered, one message never finished.
    let messages = vec![
        msg(1, 0, 0, Some(10 * US)),
        msg(2, 0, 5 * US, Some(25 * US)),
        msg(3, 0, 0, Some(30 * US)),
        msg(4, 0, 2 * US, Some(42 * US)),
        msg(4, 1, 2 * US, None),
    ];
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        scenario: ScenarioInfo {
            name: "plots-test".into(),
            path: "scenarios/plots-test.yaml".into(),
            backend: Backend::Sim,
            seed: 3,
            stack: Default::default(),
        },
        workload: WorkloadInfo {
            kind: WorkloadKind::Incast,
            senders: 4,
            receiver: 0,
            bytes_per_sender: 2000,
            messages_per_sender: 2,
        },
        messages,
        delivery: DeliveryCheck {
            delivered: 4,
            digest_mismatches: 0,
            duplicates: 0,
            missing: 1,
        },
        network: NetworkCounters {
            max_egress_queue_bytes: Some(200_000),
            ..NetworkCounters::default()
        },
        path: PathModel {
            base_rtt_ps: Some(0),
            bottleneck_bps: Some(1_000_000_000),
            header_bytes: Some(0),
            mtu_bytes: Some(1000),
        },
        ideal: IdealCompletion::incast(4000, 0, 1000, 1_000_000_000, 0),
        sim: None,
        errors: Vec::new(),
        unfinished: Vec::new(),
        figures: None,
        wall_clock: WallClock {
            wall_seconds: 0.5,
            events_per_second: 10.0,
        },
        scenario_yaml: Some("name: plots-test\n# <b>not markup</b> & more\n".into()),
        timeseries: ts,
        transport: None,
        endpoints: None,
        host_cpu: None,
        heartbeat: None,
        environment: None,
    }
}

pub fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("xrdma-plots-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
