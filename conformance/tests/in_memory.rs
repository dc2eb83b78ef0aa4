//! The conformance suite on the in-memory transport.

xrdma_conformance::suite!(xrdma_conformance::MemHarness::open);

use xrdma::{QpCaps, SendOpcode, Transport, TransportError};
use xrdma_conformance::harness::{rdma_wr, sge};
use xrdma_conformance::mem::MemPair;

/// The in-memory send queue keeps the slots of unsignaled WRs until a later completion of the
/// queue is polled, as a device does: a queue full of unsignaled WRs refuses posts for good,
/// and one whose last WR is signaled takes a full queue again once that completion is polled.
#[test]
fn unsignaled_wrs_hold_their_slots_until_a_later_completion_is_polled() {
    let mut pair = MemPair::new();
    let caps = QpCaps {
        max_send_wr: 4,
        ..QpCaps::default()
    };
    let mut mrs = Vec::new();
    let mut qps = Vec::new();
    for h in 0..2 {
        let mut t = pair.side(h);
        mrs.push(t.register_memory(1 << 16).unwrap());
        // Two QPs per host: [0] fills with unsignaled WRs, [1] ends each batch signaled.
        qps.push([t.create_qp(caps).unwrap(), t.create_qp(caps).unwrap()]);
    }
    for h in 0..2 {
        for (mine, theirs) in qps[h].iter().zip(qps[1 - h]) {
            pair.side(h).connect_qp(mine.qpn, &theirs).unwrap();
        }
    }
    let write = |id: u64, signaled: bool| xrdma::SendWr {
        signaled,
        ..rdma_wr(id, SendOpcode::RdmaWrite, sge(&mrs[0], 0, 8), &mrs[1], 0)
    };
    let full = |r: Result<(), TransportError>| {
        matches!(r, Err(TransportError::QueueFull { depth: 4, .. }))
    };
    let (q0, q1) = (qps[0][0].qpn, qps[0][1].qpn);
    let mut t = pair.side(0);
    for id in 0..4 {
        t.post_send(q0, &write(id, false)).unwrap();
    }
    assert!(full(t.post_send(q0, &write(4, true))));
    let mut wcs = Vec::new();
    assert_eq!(
        t.poll_cq(&mut wcs, 16),
        0,
        "unsignaled successes raise nothing"
    );
    assert!(
        full(t.post_send(q0, &write(4, true))),
        "and never free their slots"
    );
    for round in 0..3u64 {
        for i in 0..4 {
            t.post_send(q1, &write(10 * round + i, i == 3)).unwrap();
        }
        assert!(full(t.post_send(q1, &write(99, true))), "round {round}");
        wcs.clear();
        assert_eq!(t.poll_cq(&mut wcs, 16), 1);
        assert_eq!(wcs[0].wr_id, 10 * round + 3);
    }
    assert_eq!(pair.hosts[0].send_slots_used(q1), Some(0));
    assert_eq!(pair.hosts[0].send_slots_used(q0), Some(4));
    // RESET discards the outstanding WRs: the slots are free again.
    pair.side(0).reset_qp(q0).unwrap();
    assert_eq!(pair.hosts[0].send_slots_used(q0), Some(0));
}
