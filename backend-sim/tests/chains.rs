//! WR chains (`post_send_chain`), selective signalling, and the RC attributes and capabilities
//! the simulator reports.

mod common;

use common::*;
use xrdma::{
    Capabilities, RcParams, SendOpcode, Sge, Time, Transport, TransportError, WcOpcode, WcStatus,
};
use xrdma_sim::{SimConfig, Simulation};

/// A completion as (host, time, wr_id, status, opcode).
type Completion = (u32, Time, u64, WcStatus, WcOpcode);

/// Three WRs on one QP: an unsignaled WRITE, a SEND and a WRITE with immediate, posted one by
/// one or as one chain; every completion, and the trace hash.
fn three_wrs(chain: bool) -> (Vec<Completion>, u64) {
    let mut sim = Simulation::new(SimConfig::default()).unwrap();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 8192, 3);
    let dst = sim.transport(1).register_memory(8192).unwrap();
    for i in 0..2 {
        sim.transport(1)
            .post_recv(qb, &recv(100 + i, &dst, 4096))
            .unwrap();
    }
    let mut write = wr(1, SendOpcode::RdmaWrite, &src, 5000);
    write.remote_addr = dst.addr;
    write.rkey = dst.rkey;
    write.signaled = false;
    let send = wr(2, SendOpcode::Send, &src, 100);
    let mut imm = wr(3, SendOpcode::RdmaWriteWithImm, &src, 3000);
    imm.remote_addr = dst.addr + 4096;
    imm.rkey = dst.rkey;
    imm.imm = 9;
    let wrs = [write, send, imm];
    if chain {
        sim.transport(0).post_send_chain(qa, &wrs).unwrap();
    } else {
        for w in &wrs {
            sim.transport(0).post_send(qa, w).unwrap();
        }
    }
    let seen = run(&mut sim)
        .iter()
        .map(|s| (s.host, s.at, s.wc.wr_id, s.wc.status, s.wc.opcode))
        .collect();
    (seen, sim.trace_hash())
}

#[test]
fn a_chain_runs_exactly_as_its_wrs_posted_one_by_one() {
    let (one_by_one, hash_a) = three_wrs(false);
    let (chained, hash_b) = three_wrs(true);
    assert_eq!(one_by_one, chained);
    assert_eq!(hash_a, hash_b);
    // The unsignaled WRITE completes silently; the two signaled WRs and two receives do.
    let requester: Vec<u64> = chained.iter().filter(|c| c.0 == 0).map(|c| c.2).collect();
    assert_eq!(requester, vec![2, 3]);
    let responder: Vec<(u64, WcOpcode)> = chained
        .iter()
        .filter(|c| c.0 == 1)
        .map(|c| (c.2, c.4))
        .collect();
    assert_eq!(
        responder,
        vec![(100, WcOpcode::Recv), (101, WcOpcode::RecvRdmaWithImm)]
    );
    assert!(chained.iter().all(|c| c.3 == WcStatus::Success));
}

#[test]
fn a_chain_stops_at_its_first_bad_wr() {
    let mut sim = Simulation::new(SimConfig::default()).unwrap();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 256, 1);
    let dst = sim.transport(1).register_memory(4096).unwrap();
    for i in 0..3 {
        sim.transport(1)
            .post_recv(qb, &recv(10 + i, &dst, 256))
            .unwrap();
    }
    let mut bad = wr(2, SendOpcode::Send, &src, 64);
    bad.sge = Sge {
        lkey: src.lkey + 1000,
        ..bad.sge
    };
    let wrs = [
        wr(1, SendOpcode::Send, &src, 64),
        bad,
        wr(3, SendOpcode::Send, &src, 64),
    ];
    let e = sim.transport(0).post_send_chain(qa, &wrs).unwrap_err();
    assert_eq!(e.posted, 1);
    assert!(
        matches!(e.error, TransportError::BadAddress { key, .. } if key == src.lkey + 1000),
        "{e}"
    );
    let seen = run(&mut sim);
    let ids: Vec<(u32, u64)> = seen.iter().map(|s| (s.host, s.wc.wr_id)).collect();
    assert_eq!(ids, vec![(1, 10), (0, 1)], "only the first WR was posted");
}

#[test]
fn an_unsignaled_wr_that_fails_still_completes() {
    // RNR retry 0: the first RNR NAK fails the WR; no receive is posted at the responder.
    let mut sim = Simulation::new(SimConfig {
        rc: RcParams {
            rnr_retry: 0,
            ..RcParams::default()
        },
        ..SimConfig::default()
    })
    .unwrap();
    let (qa, _qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 64, 1);
    let mut w = wr(7, SendOpcode::Send, &src, 64);
    w.signaled = false;
    let mut later = wr(8, SendOpcode::Send, &src, 64);
    later.signaled = false;
    sim.transport(0).post_send_chain(qa, &[w, later]).unwrap();
    let seen = run(&mut sim);
    let wcs: Vec<(u64, WcStatus)> = seen
        .iter()
        .filter(|s| s.host == 0)
        .map(|s| (s.wc.wr_id, s.wc.status))
        .collect();
    assert_eq!(
        wcs,
        vec![(7, WcStatus::RnrRetryExcErr), (8, WcStatus::WrFlushErr)]
    );
    // Posted to the QP in error, an unsignaled WR is flushed with a completion at once.
    let mut after = wr(9, SendOpcode::Send, &src, 64);
    after.signaled = false;
    sim.transport(0).post_send(qa, &after).unwrap();
    let mut out = Vec::new();
    assert_eq!(sim.transport(0).poll_cq(&mut out, 8), 1);
    assert_eq!((out[0].wr_id, out[0].status), (9, WcStatus::WrFlushErr));
}

#[test]
fn the_applied_path_mtu_is_the_smaller_of_rc_and_the_port() {
    let mut sim = Simulation::new(SimConfig::default()).unwrap();
    assert_eq!(
        sim.transport(0).rc_params(),
        RcParams {
            path_mtu: 1024,
            ..RcParams::default()
        },
        "rc.path_mtu 4096 on 1024-byte ports"
    );
    assert_eq!(sim.transport(1).capabilities(), Capabilities::ALL);
    // 4096-byte ports, path MTU 2048: a 4096-byte SEND is two packets.
    let rc = RcParams {
        local_ack_timeout: 9,
        retry_cnt: 2,
        rnr_retry: 3,
        min_rnr_timer: 14,
        path_mtu: 2048,
    };
    let mut sim = Simulation::new(SimConfig {
        mtu: 4096,
        rc,
        ..SimConfig::default()
    })
    .unwrap();
    assert_eq!(sim.transport(0).rc_params(), rc);
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 4096, 1);
    let dst = sim.transport(1).register_memory(4096).unwrap();
    sim.transport(1)
        .post_recv(qb, &recv(1, &dst, 4096))
        .unwrap();
    sim.transport(0)
        .post_send(qa, &wr(2, SendOpcode::Send, &src, 4096))
        .unwrap();
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 2);
    assert_eq!(sim.stats().data_packets, 2);
}
