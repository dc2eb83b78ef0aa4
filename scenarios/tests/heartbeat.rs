//! `heartbeat:`: a ping between two hosts beside the workload; its errors name the file, the
//! line and the key.

mod common;

use common::{err, ok, with};
use xrdma::Span;
use xrdma_scenario::Heartbeat;

#[test]
fn a_heartbeat_is_off_by_default_and_may_name_hosts_beyond_the_workload() {
    let s = ok(&with(""));
    assert_eq!(s.heartbeat, None);
    assert_eq!(s.hosts(), s.workload.hosts());
    let s = ok(&with("heartbeat: { from: 5, to: 0, every: 100us }\n"));
    assert_eq!(
        s.heartbeat,
        Some(Heartbeat {
            from: 5,
            to: 0,
            every: Span::from_us(100),
            size: 64,
        })
    );
    // The workload's three hosts, and the heartbeat's host 5: six hosts.
    assert_eq!((s.workload.hosts(), s.hosts()), (3, 6));
    let s = ok(&with(
        "heartbeat: { from: 1, to: 2, every: 1ms, size: 1KiB }\n",
    ));
    assert_eq!(s.hosts(), 3);
    assert_eq!(s.heartbeat.map(|h| h.size), Some(1024));
}

#[test]
fn heartbeat_errors_name_the_file_line_and_key() {
    for (text, needle) in [
        (
            "heartbeat: { from: 1, to: 1, every: 1ms }\n",
            "heartbeat.to: is host 1, the host that sends",
        ),
        (
            "heartbeat: { from: 1, to: 0, every: 0s }\n",
            "heartbeat.every",
        ),
        (
            "heartbeat: { from: 1, to: 0, every: 1ps }\n",
            "heartbeat.every: 1 ps is below the",
        ),
        (
            "heartbeat: { from: 1, to: 0, every: 1ms, size: 4B }\n",
            "heartbeat.size: 4 B is outside 8..=4096 B",
        ),
        (
            "heartbeat: { from: 1, to: 0, every: 1ms, size: 1MiB }\n",
            "heartbeat.size",
        ),
        (
            "heartbeat: { from: 1, to: 100000, every: 1ms }\n",
            "heartbeat.to: host 100000 is past the 65536",
        ),
        ("heartbeat: { from: 1, every: 1ms }\n", "missing field `to`"),
        (
            "heartbeat: { from: 1, to: 0, every: 1ms, rate: 2 }\n",
            "unknown field `rate`",
        ),
    ] {
        let e = err(&with(text));
        assert!(e.starts_with("scenarios/x.yaml:4:"), "{text}: {e}");
        assert!(e.contains(needle), "{text}: {e}");
    }
    let ranks =
        "verbs:\n  ranks:\n    - { address: 127.0.0.1:18600, hosts: [0] }\n    - { address: \
                 127.0.0.1:18601, hosts: [1, 2] }\nheartbeat: { from: 1, to: 0, every: 1ms }\n";
    // The simulator ignores `verbs:`: the file is valid (a run across ranks refuses it).
    assert!(ok(&with(ranks)).heartbeat.is_some());
}
