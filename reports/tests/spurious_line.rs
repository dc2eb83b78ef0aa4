//! The summary names spurious retransmission timeouts as such.

mod common;
use common::result;
use xrdma_reports::*;

fn with_timeouts(timeouts: u64, spurious: Option<u64>) -> String {
    let mut r = result(None);
    r.network = NetworkCounters {
        retransmitted_packets: Some(40),
        retransmit_timeouts: Some(timeouts),
        spurious_timeouts: spurious,
        ecn_marks: Some(0),
        pfc_xoff: Some(0),
        ..r.network
    };
    summary_table(&r)
}

#[test]
fn spurious_timeouts_are_counted_and_explained() {
    let t = with_timeouts(7, Some(5));
    assert!(t.contains("timeouts 7 (5 spurious)"), "{t}");
    assert!(
        t.contains("spurious timeouts: nothing of the QP's was lost"),
        "{t}"
    );
}

#[test]
fn no_spurious_timeout_or_an_unobserved_count_adds_nothing() {
    for spurious in [Some(0), None] {
        let t = with_timeouts(7, spurious);
        assert!(t.contains("timeouts 7   sequence NAKs"), "{t}");
        assert!(!t.contains("spurious"), "{t}");
    }
}
