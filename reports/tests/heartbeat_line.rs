//! The summary's heartbeat line ([`xrdma_reports::heartbeat_line`]): the beats sent and
//! answered, and the answered ones' round-trip percentiles.

#[test]
fn the_heartbeat_line_counts_the_beats_and_takes_the_answered_ones_percentiles() {
    let mut samples: Vec<xrdma_reports::HeartbeatSample> = (0..100u64)
        .map(|k| xrdma_reports::HeartbeatSample {
            intended_ps: k * 1_000_000,
            rtt_ps: Some((100 - k) * 1_000_000),
        })
        .collect();
    samples.push(xrdma_reports::HeartbeatSample {
        intended_ps: 100_000_000,
        rtt_ps: None,
    });
    let r = xrdma_reports::HeartbeatRecord {
        from: 3,
        to: 0,
        every_ps: 1_000_000,
        size: 64,
        samples,
    };
    let line = xrdma_reports::heartbeat_line(&r);
    assert!(
        line.contains("host 3 -> host 0 every 1.000 µs, 64 B: 101 beat(s), 100 answered")
            && line.contains("(1 not answered when the run ended)")
            && line.contains("p50 50.000 µs")
            && line.contains("p99 99.000 µs")
            && line.contains("max 100.000 µs"),
        "{line}"
    );
}
