//! The `sim.capture` block: hosts and bounds of the simulator's packet capture, and errors
//! located at the key.

mod common;
use common::*;
use xrdma::{Span, Time};
use xrdma_sim::CaptureConfig;

#[test]
fn capture_is_off_by_default_and_takes_hosts_and_bounds() {
    assert_eq!(ok(&with("")).sim_or_default().capture, None);
    let s = ok(&with(
        "sim:\n  capture: { hosts: [0, 2], max-packets: 500, from: 2us, until: 10ms }\n",
    ));
    assert_eq!(
        s.sim_or_default().capture,
        Some(CaptureConfig {
            hosts: vec![0, 2],
            max_packets: 500,
            from: Time::ZERO + Span::from_us(2),
            until: Some(Time::ZERO + Span::from_ms(10)),
        })
    );
    let s = ok(&with("sim:\n  capture: { hosts: [1] }\n"));
    assert_eq!(
        s.sim_or_default().capture,
        Some(CaptureConfig {
            hosts: vec![1],
            ..CaptureConfig::default()
        })
    );
}

#[test]
fn capture_errors_name_the_file_line_and_key() {
    let e = err(&with("sim:\n  capture: { hosts: [] }\n"));
    assert!(e.contains("sim.capture.hosts: lists no host"), "{e}");
    let e = err(&with("sim:\n  capture: { hosts: [1, 1] }\n"));
    assert!(
        e.contains("sim.capture.hosts: host 1 is listed twice"),
        "{e}"
    );
    let e = err(&with("sim:\n  capture: { hosts: [1], max-packets: 0 }\n"));
    assert!(
        e.contains("sim.capture.max-packets: must be at least 1"),
        "{e}"
    );
    let e = err(&with(
        "sim:\n  capture: { hosts: [1], from: 5us, until: 5us }\n",
    ));
    assert!(
        e.contains("sim.capture.until: until (5.000 us) is not after from (5.000 us)"),
        "{e}"
    );
    let e = err(&with("sim:\n  capture: { hosts: [1], untill: 5us }\n"));
    assert!(e.starts_with("scenarios/x.yaml:5:"), "{e}");
    assert!(e.contains("untill"), "{e}");
    let e = err(&with("sim:\n  capture: { hosts: [1000] }\n"));
    assert!(
        e.contains("capture: hosts: host 1000 does not exist"),
        "{e}"
    );
    assert!(e.contains("the workload has hosts 0..="), "{e}");
}
