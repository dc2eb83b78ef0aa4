//! WR chains with one doorbell, selective signalling, and the RC attributes a real device is
//! given (rxe0 in the Soft-RoCE guest). Without a device every test prints why it skipped.

mod common;

use common::*;
use std::time::Duration;
use xrdma::*;
use xrdma_verbs::{soft_roce, TransportConfig};

const LIMIT: Duration = Duration::from_secs(20);

fn sge(mr: &MemoryRegion, offset: u64, len: u32) -> Sge {
    Sge {
        addr: mr.addr + offset,
        len,
        lkey: mr.lkey,
    }
}

#[test]
fn a_chain_with_an_unsignaled_wr_completes_its_signaled_ones() {
    let test = "a_chain_with_an_unsignaled_wr_completes_its_signaled_ones";
    let Some(dev) = device_or_skip(test) else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    let data = pattern(6000, 4);
    p.a.write(p.ma.addr, &[&data]).unwrap();
    for i in 0..2 {
        let recv = RecvWr {
            wr_id: 100 + i,
            sge: sge(&p.mb, 65536, 4096),
        };
        p.b.post_recv(p.qb, &recv).unwrap();
    }
    let write = SendWr {
        wr_id: 1,
        opcode: SendOpcode::RdmaWrite,
        sge: sge(&p.ma, 0, 5000),
        imm: 0,
        remote_addr: p.mb.addr,
        rkey: p.mb.rkey,
        signaled: false,
    };
    let send = SendWr {
        wr_id: 2,
        opcode: SendOpcode::Send,
        sge: sge(&p.ma, 0, 100),
        signaled: true,
        ..write
    };
    let imm = SendWr {
        wr_id: 3,
        opcode: SendOpcode::RdmaWriteWithImm,
        sge: sge(&p.ma, 5000, 1000),
        imm: 42,
        remote_addr: p.mb.addr + 5000,
        signaled: true,
        ..write
    };
    let posted_before = p.a.work_requests_posted();
    p.a.post_send_chain(p.qa, &[write, send, imm]).unwrap();
    assert_eq!(p.a.work_requests_posted() - posted_before, 3);
    let sa = wait_wcs(&mut p.a, 2, LIMIT);
    let sb = wait_wcs(&mut p.b, 2, LIMIT);
    let ids: Vec<(u64, WcStatus)> = sa.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(ids, vec![(2, WcStatus::Success), (3, WcStatus::Success)]);
    assert_eq!(
        (sb[0].wr_id, sb[0].opcode, sb[0].byte_len),
        (100, WcOpcode::Recv, 100)
    );
    assert_eq!(
        (sb[1].wr_id, sb[1].opcode, sb[1].imm),
        (101, WcOpcode::RecvRdmaWithImm, Some(42))
    );
    assert_eq!(p.b.read_bytes(p.mb.addr, 6000).unwrap(), &data[..]);
    // Nothing more: the unsignaled WRITE completed silently.
    assert!(wait_wcs(&mut p.a, 1, Duration::from_millis(200)).is_empty());
}

#[test]
fn a_chain_stops_at_its_first_bad_wr() {
    let Some(dev) = device_or_skip("a_chain_stops_at_its_first_bad_wr") else {
        return;
    };
    let mut p = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    for i in 0..3 {
        let recv = RecvWr {
            wr_id: 10 + i,
            sge: sge(&p.mb, 0, 256),
        };
        p.b.post_recv(p.qb, &recv).unwrap();
    }
    let good = SendWr {
        wr_id: 1,
        opcode: SendOpcode::Send,
        sge: sge(&p.ma, 0, 64),
        imm: 0,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    };
    let bad = SendWr {
        wr_id: 2,
        sge: Sge {
            lkey: p.ma.lkey ^ 0x5a5a,
            ..good.sge
        },
        ..good
    };
    let e =
        p.a.post_send_chain(p.qa, &[good, bad, SendWr { wr_id: 3, ..good }])
            .unwrap_err();
    assert_eq!(e.posted, 1, "{e}");
    assert!(matches!(e.error, TransportError::BadAddress { .. }), "{e}");
    let sa = wait_wcs(&mut p.a, 1, LIMIT);
    assert_eq!(sa.len(), 1);
    assert_eq!((sa[0].wr_id, sa[0].status), (1, WcStatus::Success));
    let sb = wait_wcs(&mut p.b, 2, Duration::from_millis(500));
    assert_eq!(sb.len(), 1, "only the first WR was posted: {sb:?}");
}

#[test]
fn the_device_holds_the_rc_attributes_it_was_given() {
    let test = "the_device_holds_the_rc_attributes_it_was_given";
    let Some(dev) = device_or_skip(test) else {
        return;
    };
    let rc = RcParams {
        local_ack_timeout: 10,
        retry_cnt: 5,
        rnr_retry: 6,
        min_rnr_timer: 3,
        path_mtu: 4096,
    };
    let cfg = TransportConfig {
        rc,
        ..TransportConfig::default()
    };
    let p = Pair::new(&dev, cfg, cfg);
    let active = dev.port().active_mtu_bytes();
    // On Soft-RoCE the local ACK timeout is raised as well (`soft_roce`).
    let applied = soft_roce::rc_for_device(
        RcParams {
            path_mtu: rc.path_mtu.min(active),
            ..rc
        },
        dev.vendor_id(),
    );
    assert_eq!(p.a.rc_params(), applied);
    assert_eq!(p.a.query_rc(p.qa).unwrap(), applied);
    assert_eq!(p.b.query_rc(p.qb).unwrap(), applied);
    let caps = p.a.capabilities();
    assert!(!caps.cnp_per_qp && !caps.ecn_marks && !caps.buffer_occupancy);
    // The defaults are the simulator's.
    let d = Pair::new(&dev, TransportConfig::default(), TransportConfig::default());
    assert_eq!(
        d.a.query_rc(d.qa).unwrap(),
        soft_roce::rc_for_device(RcParams::default().with_port_mtu(active), dev.vendor_id())
    );
}

#[test]
fn soft_roce_qps_get_a_local_ack_timeout_its_slow_acks_do_not_outrun() {
    // A scenario's 1.05 ms (code 8, faults/loss.yaml) and the default 16.8 ms (code 12) fire
    // rxe's retransmission timer on data that is only late, and rxe mishandles a retry that
    // overlaps the ACKs in flight (see `soft_roce`): on rxe the QP gets code 17 at least.
    let test = "soft_roce_qps_get_a_local_ack_timeout_its_slow_acks_do_not_outrun";
    let Some(dev) = device_or_skip(test) else {
        return;
    };
    if !dev.is_soft_roce() {
        eprintln!("SKIP {test}: {} is not Soft-RoCE", dev.name());
        return;
    }
    for asked in [8, 12] {
        let cfg = TransportConfig {
            rc: RcParams {
                local_ack_timeout: asked,
                ..RcParams::default()
            },
            ..TransportConfig::default()
        };
        let p = Pair::new(&dev, cfg, cfg);
        let held = p.a.query_rc(p.qa).unwrap();
        assert_eq!(
            held.local_ack_timeout,
            soft_roce::MIN_LOCAL_ACK_TIMEOUT,
            "asked {asked}"
        );
        assert_eq!(p.a.rc_params(), held);
        assert_eq!(p.b.query_rc(p.qb).unwrap(), held);
    }
}
