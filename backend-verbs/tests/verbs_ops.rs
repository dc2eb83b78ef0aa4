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

#[test]
fn a_lent_range_is_written_by_no_one_until_its_lease_is_dropped() {
    let test = "a_lent_range_is_written_by_no_one_until_its_lease_is_dropped";
    let Some(dev) = device_or_skip(test) else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let (addr, lkey) = (p.mb.addr + 4096, p.mb.lkey);
    p.b.write(addr, &[&pattern(8192, 5)]).unwrap();
    let lease = p.b.lend(addr, 8192).expect("a range inside an MR is lent");
    assert_eq!(
        &lease[..],
        &pattern(8192, 5)[..],
        "the lease shows the MR's bytes"
    );
    assert!(p.b.lend(addr + 100, 10).is_none(), "no range is lent twice");
    assert!(
        p.b.lend(p.mb.addr + MR_BYTES, 1).is_none(),
        "outside every MR"
    );
    // Every write of the transport's own over the range is refused while it is lent.
    let refused = |r: Result<(), TransportError>| matches!(r, Err(TransportError::Other { ref reason, .. }) if reason.contains("lent"));
    assert!(refused(p.b.write(addr + 8191, &[b"xy"])));
    let sge = Sge {
        addr: addr + 1000,
        len: 64,
        lkey,
    };
    assert!(refused(p.b.post_recv(p.qb, &RecvWr { wr_id: 1, sge })));
    // Beside it, writes go on.
    p.b.write(addr + 8192, &[b"next"]).unwrap();
    p.b.write(addr - 4, &[b"prev"]).unwrap();
    // A slice outlives the lease handle; the range comes back when both are gone.
    let tail = lease.slice(8000..);
    drop(lease);
    assert_eq!(p.b.poll_returned(), None, "a slice still holds it");
    drop(tail);
    assert_eq!(p.b.poll_returned(), Some(addr));
    assert_eq!(p.b.poll_returned(), None);
    p.b.write(addr, &[b"free again"]).unwrap();
    // A lease outlives its transport: the MR stays allocated while it is held.
    let kept = p.b.lend(addr, 10).unwrap();
    drop(p);
    assert_eq!(&kept[..], b"free again");
}

#[test]
fn a_send_arena_buffer_is_the_applications_alone_and_comes_back() {
    let test = "a_send_arena_buffer_is_the_applications_alone_and_comes_back";
    let Some(dev) = device_or_skip(test) else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let mrs = p.a.mr_count();
    let mut buf =
        p.a.send_buffer(100_000)
            .expect("a device lends send buffers");
    assert!(buf.is_registered());
    assert!(buf.iter().all(|&b| b == 0), "zeroed");
    buf.copy_from_slice(&pattern(100_000, 9));
    let addr = buf.as_ptr() as u64;
    // The transport touches none of its bytes; WRs may read them in place.
    let mut out = [0u8; 4];
    assert!(p.a.read_into(addr, &mut out).is_err());
    assert!(p.a.read_bytes(addr, 4).is_err());
    assert!(p.a.write(addr, &[b"x"]).is_err());
    assert!(p.a.lend(addr, 4).is_none());
    let frozen = buf.freeze();
    assert_eq!(&frozen[..], &pattern(100_000, 9)[..]);
    assert!(p.a.registered_lkey(&frozen[10..5000]).is_some());
    assert!(
        p.a.registered_lkey(&pattern(10, 1)).is_none(),
        "heap memory"
    );
    assert_eq!(p.a.mr_count(), mrs + 1, "one MR of its size class");
    // Dropped, it serves the next buffer of its class, zeroed again.
    drop(frozen);
    let again = p.a.send_buffer(70_000).unwrap();
    assert_eq!(again.as_ptr() as u64, addr);
    assert!(again.iter().all(|&b| b == 0), "zeroed again");
    assert_eq!(p.a.mr_count(), mrs + 1);
}
