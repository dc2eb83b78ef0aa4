//! Verbs semantics on a real device (rxe0 in the Soft-RoCE guest): both transports on one
//! device, connected through loopback. Without a device every test prints why it skipped.

mod common;

use common::*;
use std::time::{Duration, Instant};
use xrdma::*;
use xrdma_verbs::TransportConfig;

const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn send_lands_in_the_posted_receive() {
    let Some(dev) = device_or_skip("send_lands_in_the_posted_receive") else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let data = pattern(100, 1);
    p.a.write(p.ma.addr, &data).unwrap();
    let recv = RecvWr {
        wr_id: 77,
        sge: Sge {
            addr: p.mb.addr + 4096,
            len: 4096,
            lkey: p.mb.lkey,
        },
    };
    p.b.post_recv(p.qb, &recv).unwrap();
    p.b.post_recv(p.qb, &RecvWr { wr_id: 78, ..recv }).unwrap();
    let send = SendWr {
        wr_id: 5,
        opcode: SendOpcode::Send,
        sge: Sge {
            addr: p.ma.addr,
            len: 100,
            lkey: p.ma.lkey,
        },
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    };
    p.a.post_send(p.qa, &send).unwrap();
    let with_imm = SendWr {
        wr_id: 6,
        opcode: SendOpcode::SendWithImm,
        imm: 0xDEAD_BEEF,
        ..send
    };
    p.a.post_send(p.qa, &with_imm).unwrap();

    let sa = wait_wcs(&mut p.a, 2, LIMIT);
    let sb = wait_wcs(&mut p.b, 2, LIMIT);
    assert_eq!(sa.len(), 2, "sender completions: {sa:?}");
    assert_eq!(sb.len(), 2, "receiver completions: {sb:?}");
    for (wc, id) in sa.iter().zip([5, 6]) {
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode, wc.qp_num),
            (id, WcStatus::Success, WcOpcode::Send, p.qa)
        );
    }
    // Receives are consumed in posting order: 77 by the plain SEND, 78 by the one with imm.
    assert_eq!(
        (sb[0].wr_id, sb[0].status, sb[0].opcode),
        (77, WcStatus::Success, WcOpcode::Recv)
    );
    assert_eq!((sb[0].byte_len, sb[0].imm, sb[0].qp_num), (100, None, p.qb));
    assert_eq!((sb[1].wr_id, sb[1].imm), (78, Some(0xDEAD_BEEF)));
    assert_eq!(p.b.read_bytes(p.mb.addr + 4096, 100).unwrap(), &data[..]);
}

#[test]
fn write_with_imm_delivers_bytes_imm_and_length() {
    let Some(dev) = device_or_skip("write_with_imm_delivers_bytes_imm_and_length") else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    // 5000 B spans several packets at any RoCE MTU (1024 on rxe): 5 packets, the last one
    // carrying the immediate.
    let data = pattern(5000, 2);
    p.a.write(p.ma.addr + 8192, &data).unwrap();
    p.b.post_recv(
        p.qb,
        &RecvWr {
            wr_id: 9,
            sge: Sge {
                addr: 0,
                len: 0,
                lkey: 0,
            },
        },
    )
    .unwrap();
    p.a.post_send(
        p.qa,
        &SendWr {
            wr_id: 1,
            opcode: SendOpcode::RdmaWriteWithImm,
            sge: Sge {
                addr: p.ma.addr + 8192,
                len: 5000,
                lkey: p.ma.lkey,
            },
            imm: 0x0102_0304,
            remote_addr: p.mb.addr + 100_000,
            rkey: p.mb.rkey,
            signaled: true,
        },
    )
    .unwrap();
    let sa = wait_wcs(&mut p.a, 1, LIMIT);
    let sb = wait_wcs(&mut p.b, 1, LIMIT);
    assert_eq!(sa.len(), 1);
    assert_eq!(
        (sa[0].status, sa[0].opcode, sa[0].byte_len),
        (WcStatus::Success, WcOpcode::RdmaWrite, 5000)
    );
    assert_eq!(sb.len(), 1);
    let wc = sb[0];
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.imm),
        (
            9,
            WcStatus::Success,
            WcOpcode::RecvRdmaWithImm,
            5000,
            Some(0x0102_0304)
        )
    );
    assert_eq!(
        p.b.read_bytes(p.mb.addr + 100_000, 5000).unwrap(),
        &data[..]
    );
    // The bytes around the written range are untouched (zeroed at registration).
    assert_eq!(p.b.read_bytes(p.mb.addr + 99_999, 1).unwrap(), &[0u8][..]);
    assert_eq!(p.b.read_bytes(p.mb.addr + 105_000, 1).unwrap(), &[0u8][..]);
}

#[test]
fn rdma_read_fetches_remote_bytes() {
    let Some(dev) = device_or_skip("rdma_read_fetches_remote_bytes") else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let data = pattern(10_000, 3);
    p.b.write(p.mb.addr + 12_345, &data).unwrap();
    p.a.post_send(
        p.qa,
        &SendWr {
            wr_id: 4,
            opcode: SendOpcode::RdmaRead,
            sge: Sge {
                addr: p.ma.addr + 500_000,
                len: 10_000,
                lkey: p.ma.lkey,
            },
            imm: 0,
            remote_addr: p.mb.addr + 12_345,
            rkey: p.mb.rkey,
            signaled: true,
        },
    )
    .unwrap();
    let sa = wait_wcs(&mut p.a, 1, LIMIT);
    assert_eq!(sa.len(), 1);
    assert_eq!(
        (sa[0].wr_id, sa[0].status, sa[0].opcode, sa[0].byte_len),
        (4, WcStatus::Success, WcOpcode::RdmaRead, 10_000)
    );
    assert_eq!(
        p.a.read_bytes(p.ma.addr + 500_000, 10_000).unwrap(),
        &data[..]
    );
    // A READ consumes no receive and raises no completion at the responder.
    assert!(wait_wcs(&mut p.b, 1, Duration::from_millis(200)).is_empty());
}

#[test]
fn send_without_receive_fails_with_rnr_retry_exceeded_then_flushes() {
    let test = "send_without_receive_fails_with_rnr_retry_exceeded_then_flushes";
    let Some(dev) = device_or_skip(test) else {
        return;
    };
    // rnr_retry 0: the first RNR NAK ends the WR (IB Spec 9.7.5.2.8); the responder's
    // min_rnr_timer 1 (0.01 ms) keeps the test short.
    let a_cfg = TransportConfig {
        rc: RcParams {
            rnr_retry: 0,
            ..RcParams::default()
        },
        ..TransportConfig::default()
    };
    let b_cfg = TransportConfig {
        rc: RcParams {
            min_rnr_timer: 1,
            ..RcParams::default()
        },
        ..TransportConfig::default()
    };
    let mut p = Pair::new(&dev, a_cfg, b_cfg);
    let send = SendWr {
        wr_id: 11,
        opcode: SendOpcode::Send,
        sge: Sge {
            addr: p.ma.addr,
            len: 64,
            lkey: p.ma.lkey,
        },
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    };
    p.a.post_send(p.qa, &send).unwrap();
    let sa = wait_wcs(&mut p.a, 1, LIMIT);
    assert_eq!(sa.len(), 1, "no completion for the SEND");
    assert_eq!(
        (sa[0].wr_id, sa[0].status, sa[0].opcode, sa[0].byte_len),
        (11, WcStatus::RnrRetryExcErr, WcOpcode::Send, 0)
    );
    // The QP is now in ERR: a later WR is accepted and flushed.
    p.a.post_send(p.qa, &SendWr { wr_id: 12, ..send }).unwrap();
    let sa = wait_wcs(&mut p.a, 1, LIMIT);
    assert_eq!(sa.len(), 1, "no completion for the flushed SEND");
    assert_eq!((sa[0].wr_id, sa[0].status), (12, WcStatus::WrFlushErr));

    // The QP-cache path: reset both QPs, reconnect with the new PSNs, and traffic flows.
    let na = p.a.reset_qp(p.qa).unwrap();
    let nb = p.b.reset_qp(p.qb).unwrap();
    assert_eq!((na.qpn, nb.qpn), (p.qa, p.qb), "reset keeps the QP number");
    assert!(na.psn < 1 << 24 && nb.psn < 1 << 24, "PSNs are 24 bits");
    p.a.connect_qp(p.qa, &nb).unwrap();
    p.b.connect_qp(p.qb, &na).unwrap();
    p.b.post_recv(
        p.qb,
        &RecvWr {
            wr_id: 21,
            sge: Sge {
                addr: p.mb.addr,
                len: 64,
                lkey: p.mb.lkey,
            },
        },
    )
    .unwrap();
    p.a.post_send(p.qa, &SendWr { wr_id: 13, ..send }).unwrap();
    let sa = wait_wcs(&mut p.a, 1, LIMIT);
    let sb = wait_wcs(&mut p.b, 1, LIMIT);
    assert_eq!((sa[0].wr_id, sa[0].status), (13, WcStatus::Success));
    assert_eq!((sb[0].wr_id, sb[0].byte_len), (21, 64));
}

#[test]
fn local_errors_are_refused_synchronously() {
    let Some(dev) = device_or_skip("local_errors_are_refused_synchronously") else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let send = SendWr {
        wr_id: 1,
        opcode: SendOpcode::Send,
        sge: Sge {
            addr: p.ma.addr,
            len: 64,
            lkey: p.ma.lkey + 1,
        },
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    };
    assert!(matches!(
        p.a.post_send(p.qa, &send),
        Err(TransportError::BadAddress { .. })
    ));
    // One byte past the MR's end.
    let past = SendWr {
        sge: Sge {
            addr: p.ma.addr + MR_BYTES - 63,
            len: 64,
            lkey: p.ma.lkey,
        },
        ..send
    };
    assert!(matches!(
        p.a.post_send(p.qa, &past),
        Err(TransportError::BadAddress { .. })
    ));
    assert!(matches!(
        p.a.post_send(0xFF_FFFF, &send),
        Err(TransportError::NoSuchQp(0xFF_FFFF))
    ));
    // A fresh QP is in INIT: receives may be posted, sends may not.
    let fresh = p.a.create_qp(QpCaps::default()).unwrap();
    let ok = SendWr {
        sge: Sge {
            lkey: p.ma.lkey,
            ..send.sge
        },
        ..send
    };
    assert!(matches!(
        p.a.post_send(fresh.qpn, &ok),
        Err(TransportError::BadQpState { state: "INIT", .. })
    ));
    p.a.post_recv(
        fresh.qpn,
        &RecvWr {
            wr_id: 1,
            sge: ok.sge,
        },
    )
    .unwrap();
    assert!(p.a.read_bytes(p.ma.addr + MR_BYTES, 1).is_err());
    assert_eq!(p.a.mr_count(), 1);
    assert_eq!(p.a.registered_bytes(), MR_BYTES);
}

#[test]
fn arm_and_wait_times_out_when_idle_and_wakes_on_a_completion() {
    let Some(dev) = device_or_skip("arm_and_wait_times_out_when_idle_and_wakes_on_a_completion")
    else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let t0 = Instant::now();
    assert!(!p.b.arm_and_wait(Duration::from_millis(30)).unwrap());
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
        if p.b.arm_and_wait(Duration::from_secs(10)).unwrap() {
            p.b.poll_cq(&mut got, 4);
        }
    }
    assert!(t1.elapsed() < Duration::from_secs(10), "no wake-up");
    assert_eq!((got[0].wr_id, got[0].imm), (3, Some(42)));
    assert_eq!(wait_wcs(&mut p.a, 1, LIMIT)[0].status, WcStatus::Success);
}
