//! What only a real device shows of verbs (rxe0 in the Soft-RoCE guest): the completion
//! channel's arm-and-wait, and the transport's own counters. The verbs semantics themselves
//! are the conformance cases of `xrdma-conformance`, which `tests/conformance.rs` runs on the
//! device. Both transports sit on one device, connected through loopback; without a device
//! every test prints why it skipped.

mod common;

use common::harness::VerbsHarness;
use common::*;
use std::time::{Duration, Instant};
use xrdma::*;
use xrdma_conformance::{cases, Side};
use xrdma_verbs::hybrid::wait_any;
use xrdma_verbs::TransportConfig;

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn local_errors_leave_the_transport_with_its_one_mr() {
    let test = "local_errors_leave_the_transport_with_its_one_mr";
    let Some(mut h) = VerbsHarness::open(test) else {
        return;
    };
    // The case: a wrong lkey, a range past the MR, an unknown QP and a QP in INIT are refused
    // at once; a receive on the QP in INIT is taken.
    cases::local_errors_are_refused_synchronously(&mut h);
    let a = h.side(Side::A);
    assert_eq!(a.mr_count(), 1);
    assert_eq!(a.registered_bytes(), MR_BYTES);
}

#[test]
fn wait_any_times_out_when_idle_and_wakes_on_a_completion() {
    let Some(dev) = device_or_skip("wait_any_times_out_when_idle_and_wakes_on_a_completion") else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let t0 = Instant::now();
    assert!(!wait_any(std::slice::from_mut(&mut p.b), Duration::from_millis(30)).unwrap());
    assert!(t0.elapsed() >= Duration::from_millis(30));

    p.b.post_recv(
        p.qb,
        &RecvWr {
            wr_id: 3,
            sge: Sge {
                addr: p.mb.addr,
                len: 64,
                lkey: p.mb.lkey,
            },
        },
    )
    .unwrap();
    p.a.post_send(
        p.qa,
        &SendWr {
            wr_id: 2,
            opcode: SendOpcode::SendWithImm,
            sge: Sge {
                addr: p.ma.addr,
                len: 64,
                lkey: p.ma.lkey,
            },
            imm: 42,
            remote_addr: 0,
            rkey: 0,
            signaled: true,
        },
    )
    .unwrap();
    // Blocks until the receive completes (well under the 10 s limit on any device).
    let t1 = Instant::now();
    let mut got = Vec::new();
    while got.is_empty() && t1.elapsed() < Duration::from_secs(10) {
        if wait_any(std::slice::from_mut(&mut p.b), Duration::from_secs(10)).unwrap() {
            p.b.poll_cq(&mut got, 4);
        }
    }
    assert!(t1.elapsed() < Duration::from_secs(10), "no wake-up");
    assert_eq!((got[0].wr_id, got[0].imm), (3, Some(42)));
    assert_eq!(wait_wcs(&mut p.a, 1, LIMIT)[0].status, WcStatus::Success);
}
