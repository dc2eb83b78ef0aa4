//! RC verbs semantics between two hosts: timing, bytes, completions, RNR, errors, READ.

mod common;
use common::*;
use xrdma::{LocalMemory, RcParams, SendOpcode, Time, Transport, WcOpcode, WcStatus};
use xrdma_sim::{SimConfig, Simulation};

fn sim2() -> Simulation {
    Simulation::new(SimConfig::default()).unwrap()
}

#[test]
fn one_packet_write_with_imm_timing_and_bytes() {
    let mut sim = sim2();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 512, 7);
    let dst = sim.transport(1).register_memory(4096).unwrap();
    sim.transport(1).post_recv(qb, &recv(90, &dst, 0)).unwrap();
    let mut w = wr(1, SendOpcode::RdmaWriteWithImm, &src, 512);
    w.imm = 0xdead_beef;
    w.remote_addr = dst.addr + 100;
    w.rkey = dst.rkey;
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 2);
    // Data wire = 82 + 512 + 16 (RETH) + 4 (ImmDt) = 614 B → 614·80 = 49_120 ps per hop.
    // Receive completion: 2 serializations + 2 link delays = 98_240 + 2_000_000.
    let r = seen.iter().find(|s| s.host == 1).unwrap();
    assert_eq!(r.at, Time(2_098_240));
    assert_eq!(r.wc.opcode, WcOpcode::RecvRdmaWithImm);
    assert_eq!(r.wc.status, WcStatus::Success);
    assert_eq!(r.wc.imm, Some(0xdead_beef));
    assert_eq!(r.wc.byte_len, 512);
    assert_eq!(r.wc.wr_id, 90);
    assert_eq!(r.wc.qp_num, qb);
    // ACK = 82 + 4 (AETH) = 86 B → 6_880 ps per hop; send completion one ACK trip later:
    // 2_098_240 + 2·6_880 + 2·1_000_000 = 4_112_000.
    let s = seen.iter().find(|s| s.host == 0).unwrap();
    assert_eq!(s.at, Time(4_112_000));
    assert_eq!(
        (s.wc.opcode, s.wc.status, s.wc.wr_id),
        (WcOpcode::RdmaWrite, WcStatus::Success, 1)
    );
    let sent = sim.transport(0).read_bytes(src.addr, 512).unwrap().to_vec();
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr + 100, 512).unwrap(),
        &sent[..]
    );
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr + 99, 1).unwrap(),
        &[0u8][..]
    );
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr + 612, 1).unwrap(),
        &[0u8][..]
    );
    let st = sim.stats();
    assert_eq!((st.data_packets, st.ack_packets, st.drops), (1, 1, 0));
    assert_eq!(st.delivered_payload_bytes, 512);
    assert_eq!(st.packets_in_flight, 0);
}

#[test]
fn four_packet_write_with_imm_is_pipelined_store_and_forward() {
    let mut sim = sim2();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 4096, 3);
    let dst = sim.transport(1).register_memory(4096).unwrap();
    sim.transport(1).post_recv(qb, &recv(5, &dst, 0)).unwrap();
    let mut w = wr(2, SendOpcode::RdmaWriteWithImm, &src, 4096);
    w.imm = 42;
    w.remote_addr = dst.addr;
    w.rkey = dst.rkey;
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    // Wires: 1122 (first, +RETH), 1106, 1106, 1110 (last, +ImmDt) → 89_760, 88_480, 88_480,
    // 88_800 ps. The host sends them back to back (total 355_520 ps); the switch forwards each
    // as soon as it has it and the port is free; since the first packet is the largest, the
    // switch port stays busy from the first packet on, so the last bit leaves the switch at
    // D + 89_760 (first packet at the host) + 355_520 (all four at the switch) and reaches
    // host 1 one D later: 89_760 + 355_520 + 2_000_000 = 2_445_280.
    let r = seen.iter().find(|s| s.host == 1).unwrap();
    assert_eq!(r.at, Time(2_445_280));
    assert_eq!((r.wc.byte_len, r.wc.imm), (4096, Some(42)));
    // The ACK of the last packet: + 2·6_880 + 2·D = 4_459_040.
    let s = seen.iter().find(|s| s.host == 0).unwrap();
    assert_eq!(s.at, Time(4_459_040));
    let sent = sim
        .transport(0)
        .read_bytes(src.addr, 4096)
        .unwrap()
        .to_vec();
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr, 4096).unwrap(),
        &sent[..]
    );
    // ack_every = 1: one ACK per data packet.
    assert_eq!((sim.stats().data_packets, sim.stats().ack_packets), (4, 4));
}

#[test]
fn ack_every_coalesces_acks() {
    let cfg = SimConfig {
        ack_every: 3,
        ..Default::default()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    let (qa, _) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 10 * 1024, 1);
    let dst = sim.transport(1).register_memory(10 * 1024).unwrap();
    let mut w = wr(3, SendOpcode::RdmaWrite, &src, 10 * 1024);
    w.remote_addr = dst.addr;
    w.rkey = dst.rkey;
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].wc.status, WcStatus::Success);
    // 10 packets: ACKs after packets 3, 6, 9 and the last (10) → 4.
    assert_eq!(sim.stats().ack_packets, 4);
    let sent = sim
        .transport(0)
        .read_bytes(src.addr, 10 * 1024)
        .unwrap()
        .to_vec();
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr, 10 * 1024).unwrap(),
        &sent[..]
    );
}

#[test]
fn send_into_posted_receive_and_unsignaled_sends() {
    let mut sim = sim2();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 3000, 9);
    let dst = sim.transport(1).register_memory(8192).unwrap();
    let dst2 = xrdma::MemoryRegion {
        addr: dst.addr + 4096,
        ..dst
    };
    sim.transport(1)
        .post_recv(qb, &recv(10, &dst, 4096))
        .unwrap();
    sim.transport(1)
        .post_recv(qb, &recv(11, &dst2, 4096))
        .unwrap();
    let mut w1 = wr(20, SendOpcode::Send, &src, 3000);
    w1.signaled = false;
    let mut w2 = wr(21, SendOpcode::SendWithImm, &src, 10);
    w2.imm = 77;
    sim.transport(0).post_send(qa, &w1).unwrap();
    sim.transport(0).post_send(qa, &w2).unwrap();
    let seen = run(&mut sim);
    let recvs: Vec<_> = seen.iter().filter(|s| s.host == 1).map(|s| s.wc).collect();
    assert_eq!(recvs.len(), 2);
    assert_eq!(
        (recvs[0].wr_id, recvs[0].byte_len, recvs[0].imm),
        (10, 3000, None)
    );
    assert_eq!(
        (recvs[1].wr_id, recvs[1].byte_len, recvs[1].imm),
        (11, 10, Some(77))
    );
    assert!(recvs
        .iter()
        .all(|wc| wc.opcode == WcOpcode::Recv && wc.status == WcStatus::Success));
    // Only the signaled send completes at the requester.
    let sends: Vec<_> = seen.iter().filter(|s| s.host == 0).map(|s| s.wc).collect();
    assert_eq!(sends.len(), 1);
    assert_eq!((sends[0].wr_id, sends[0].opcode), (21, WcOpcode::Send));
    let sent = sim
        .transport(0)
        .read_bytes(src.addr, 3000)
        .unwrap()
        .to_vec();
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr, 3000).unwrap(),
        &sent[..]
    );
    assert_eq!(
        sim.transport(1).read_bytes(dst2.addr, 10).unwrap(),
        &sent[..10]
    );
}

#[test]
fn send_without_receive_gets_rnr_then_succeeds() {
    let mut sim = sim2();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 100, 5);
    let dst = sim.transport(1).register_memory(100).unwrap();
    sim.transport(0)
        .post_send(qa, &wr(1, SendOpcode::Send, &src, 100))
        .unwrap();
    // Post the receive at 5 µs: after the RNR NAK left host 1 (2.03 µs), before the retry.
    sim.set_wake(1, Time::from_us(5));
    let seen = run_with(&mut sim, |sim, h| {
        if h == 1 && sim.now() == Time::from_us(5) {
            sim.transport(1).post_recv(qb, &recv(2, &dst, 100)).unwrap();
        }
    });
    // SEND wire 82 + 100 = 182 B → 14_560 ps per hop; reaches host 1 at 2·14_560 + 2·D =
    // 2_029_120 → RNR NAK (86 B, 6_880 ps per hop) reaches host 0 at 2_029_120 + 13_760 +
    // 2_000_000 = 4_042_880; the retry starts rnr_timer = 10 µs later (14_042_880) and reaches
    // host 1 at 14_042_880 + 2_029_120 = 16_072_000; its ACK reaches host 0 at
    // 16_072_000 + 2_013_760 = 18_085_760.
    let r = seen.iter().find(|s| s.host == 1).unwrap();
    assert_eq!(
        (r.at, r.wc.status, r.wc.byte_len),
        (Time(16_072_000), WcStatus::Success, 100)
    );
    let s = seen.iter().find(|s| s.host == 0).unwrap();
    assert_eq!((s.at, s.wc.status), (Time(18_085_760), WcStatus::Success));
    assert_eq!(sim.stats().rnr_naks, 1);
    let sent = sim.transport(0).read_bytes(src.addr, 100).unwrap().to_vec();
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr, 100).unwrap(),
        &sent[..]
    );
}

#[test]
fn rnr_retry_exhausted_errors_and_flushes() {
    let cfg = SimConfig {
        rc: RcParams {
            rnr_retry: 2,
            ..RcParams::default()
        },
        ..Default::default()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 100, 5);
    sim.transport(0)
        .post_send(qa, &wr(1, SendOpcode::Send, &src, 100))
        .unwrap();
    sim.transport(0)
        .post_send(qa, &wr(2, SendOpcode::Send, &src, 50))
        .unwrap();
    let seen = run(&mut sim);
    // Three attempts (1 + rnr_retry), each NAKed 4_042_880 ps after it starts (see the RNR
    // test), two 10 µs waits between them: 3·4_042_880 + 2·10_000_000 = 32_128_640.
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].wc.wr_id, seen[0].wc.status),
        (1, WcStatus::RnrRetryExcErr)
    );
    assert_eq!(
        (seen[1].wc.wr_id, seen[1].wc.status),
        (2, WcStatus::WrFlushErr)
    );
    assert!(seen.iter().all(|s| s.host == 0 && s.at == Time(32_128_640)));
    assert_eq!(sim.stats().rnr_naks, 3);
    // WR 2 followed WR 1 on the wire in each attempt and was discarded as out of sequence.
    assert_eq!(sim.stats().out_of_sequence_drops, 3);
    // Later WRs on the QP in ERR flush at once.
    sim.transport(0)
        .post_send(qa, &wr(3, SendOpcode::Send, &src, 10))
        .unwrap();
    let seen = run(&mut sim);
    assert_eq!(
        (seen[0].wc.wr_id, seen[0].wc.status),
        (3, WcStatus::WrFlushErr)
    );
    // The responder never consumed anything; it can still take receives.
    let dst = sim.transport(1).register_memory(10).unwrap();
    sim.transport(1).post_recv(qb, &recv(4, &dst, 10)).unwrap();
}

#[test]
fn bad_rkey_gives_remote_access_error() {
    let mut sim = sim2();
    let (qa, _) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 2048, 5);
    let dst = sim.transport(1).register_memory(1024).unwrap();
    let mut w = wr(1, SendOpcode::RdmaWrite, &src, 2048);
    w.remote_addr = dst.addr; // 2048 bytes do not fit in the 1024-byte MR
    w.rkey = dst.rkey;
    sim.transport(0).post_send(qa, &w).unwrap();
    sim.transport(0)
        .post_send(qa, &wr(2, SendOpcode::Send, &src, 1))
        .unwrap();
    let seen = run(&mut sim);
    assert_eq!(
        (seen[0].wc.wr_id, seen[0].wc.status),
        (1, WcStatus::RemAccessErr)
    );
    assert_eq!(
        (seen[1].wc.wr_id, seen[1].wc.status),
        (2, WcStatus::WrFlushErr)
    );
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr, 1024).unwrap(),
        &[0u8; 1024][..]
    );
}

#[test]
fn send_longer_than_receive_is_loc_len_err() {
    let mut sim = sim2();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 2000, 5);
    let dst = sim.transport(1).register_memory(1000).unwrap();
    sim.transport(1)
        .post_recv(qb, &recv(7, &dst, 1000))
        .unwrap();
    sim.transport(1)
        .post_recv(qb, &recv(8, &dst, 1000))
        .unwrap();
    sim.transport(0)
        .post_send(qa, &wr(1, SendOpcode::Send, &src, 2000))
        .unwrap();
    let seen = run(&mut sim);
    let r: Vec<_> = seen
        .iter()
        .filter(|s| s.host == 1)
        .map(|s| (s.wc.wr_id, s.wc.status))
        .collect();
    assert_eq!(r, vec![(7, WcStatus::LocLenErr), (8, WcStatus::WrFlushErr)]);
    let s: Vec<_> = seen
        .iter()
        .filter(|s| s.host == 0)
        .map(|s| (s.wc.wr_id, s.wc.status))
        .collect();
    assert_eq!(s, vec![(1, WcStatus::GeneralErr)]);
}

#[test]
fn rdma_read_timing_and_bytes() {
    let mut sim = sim2();
    let (qa, _) = connect(&mut sim, 0, 1);
    let remote = patterned(&mut sim, 1, 3000, 11);
    let local = sim.transport(0).register_memory(3000).unwrap();
    let mut w = wr(9, SendOpcode::RdmaRead, &local, 3000);
    w.remote_addr = remote.addr;
    w.rkey = remote.rkey;
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    assert_eq!(seen.len(), 1);
    // Request: 82 + 16 (RETH) = 98 B → 7_840 ps per hop; at host 1 at 15_680 + 2·D.
    // Responses: 1024 + 1024 + 952 B payload, wires 1110 (+AETH), 1106, 1038 (+AETH) →
    // 88_800, 88_480, 83_040 ps; pipelined as in the WRITE test, the last arrives
    // 88_800 + 260_320 + 2·D after the request: 2_015_680 + 2_349_120 = 4_364_800.
    assert_eq!(seen[0].at, Time(4_364_800));
    assert_eq!(seen[0].host, 0);
    assert_eq!(
        (
            seen[0].wc.wr_id,
            seen[0].wc.opcode,
            seen[0].wc.status,
            seen[0].wc.byte_len
        ),
        (9, WcOpcode::RdmaRead, WcStatus::Success, 3000)
    );
    let want = sim
        .transport(1)
        .read_bytes(remote.addr, 3000)
        .unwrap()
        .to_vec();
    assert_eq!(
        sim.transport(0).read_bytes(local.addr, 3000).unwrap(),
        &want[..]
    );
    // 1 request + 3 responses, no ACKs (responses acknowledge the READ).
    assert_eq!((sim.stats().data_packets, sim.stats().ack_packets), (4, 0));
}

#[test]
fn read_then_write_complete_in_order() {
    let mut sim = sim2();
    let (qa, _) = connect(&mut sim, 0, 1);
    let remote = patterned(&mut sim, 1, 8192, 11);
    let local = patterned(&mut sim, 0, 8192, 1);
    let mut r = wr(1, SendOpcode::RdmaRead, &local, 4096);
    r.remote_addr = remote.addr;
    r.rkey = remote.rkey;
    let src = xrdma::MemoryRegion {
        addr: local.addr + 4096,
        ..local
    };
    let mut w = wr(2, SendOpcode::RdmaWrite, &src, 100);
    w.remote_addr = remote.addr + 4096;
    w.rkey = remote.rkey;
    sim.transport(0).post_send(qa, &r).unwrap();
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    // The WRITE's ACK overtakes the READ responses (ACKs go before data at host 1), but
    // completions keep posting order.
    let ids: Vec<_> = seen.iter().map(|s| (s.wc.wr_id, s.wc.status)).collect();
    assert_eq!(ids, vec![(1, WcStatus::Success), (2, WcStatus::Success)]);
    let want = sim
        .transport(1)
        .read_bytes(remote.addr, 4096)
        .unwrap()
        .to_vec();
    assert_eq!(
        sim.transport(0).read_bytes(local.addr, 4096).unwrap(),
        &want[..]
    );
    let want = sim
        .transport(0)
        .read_bytes(local.addr + 4096, 100)
        .unwrap()
        .to_vec();
    assert_eq!(
        sim.transport(1)
            .read_bytes(remote.addr + 4096, 100)
            .unwrap(),
        &want[..]
    );
}

#[test]
fn verb_errors() {
    let mut sim = sim2();
    let qa = sim.transport(0).create_qp(Default::default()).unwrap();
    let mr = sim.transport(0).register_memory(64).unwrap();
    let w = wr(1, SendOpcode::Send, &mr, 8);
    assert!(matches!(
        sim.transport(0).post_send(qa.qpn, &w),
        Err(xrdma::TransportError::BadQpState { state: "INIT", .. })
    ));
    assert!(matches!(
        sim.transport(0).post_send(999, &w),
        Err(xrdma::TransportError::NoSuchQp(999))
    ));
    let mut bad = qa;
    bad.lid = 5;
    assert!(matches!(
        sim.transport(0).connect_qp(qa.qpn, &bad),
        Err(xrdma::TransportError::Unreachable(_))
    ));
    let qb = sim.transport(1).create_qp(Default::default()).unwrap();
    sim.transport(0).connect_qp(qa.qpn, &qb).unwrap();
    let too_long = wr(2, SendOpcode::Send, &mr, 65);
    assert!(matches!(
        sim.transport(0).post_send(qa.qpn, &too_long),
        Err(xrdma::TransportError::BadAddress { .. })
    ));
    assert!(sim.transport(7).register_memory(8).is_err());
    assert!(Simulation::new(SimConfig {
        mtu: 0,
        ..Default::default()
    })
    .is_err());
    // Reset gives a new PSN and INIT state; the QP can be connected again.
    let again = sim.transport(0).reset_qp(qa.qpn).unwrap();
    assert_eq!(again.qpn, qa.qpn);
    assert_ne!(again.psn, qa.psn);
    sim.transport(0).connect_qp(qa.qpn, &qb).unwrap();
}

#[test]
fn zero_length_write_with_imm_needs_no_rkey() {
    let mut sim = sim2();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let dst = sim.transport(1).register_memory(16).unwrap();
    sim.transport(1).post_recv(qb, &recv(1, &dst, 0)).unwrap();
    let mut w = xrdma::SendWr {
        wr_id: 2,
        opcode: SendOpcode::RdmaWriteWithImm,
        sge: xrdma::Sge {
            addr: 0,
            len: 0,
            lkey: 0,
        },
        imm: 5,
        remote_addr: 0,
        rkey: 0,
        signaled: true,
    };
    w.imm = 0x0102_0304;
    sim.transport(0).post_send(qa, &w).unwrap();
    let seen = run(&mut sim);
    // Wire 82 + 16 (RETH) + 4 (ImmDt) = 102 B → 8_160 ps per hop: 16_320 + 2·D.
    let r = seen.iter().find(|s| s.host == 1).unwrap();
    assert_eq!(r.at, Time(2_016_320));
    assert_eq!(
        (r.wc.opcode, r.wc.byte_len, r.wc.imm),
        (WcOpcode::RecvRdmaWithImm, 0, Some(0x0102_0304))
    );
    let s = seen.iter().find(|s| s.host == 0).unwrap();
    assert_eq!(s.wc.status, WcStatus::Success);
}

#[test]
fn nic_round_robins_packets_between_qps() {
    let mut sim = Simulation::new(SimConfig {
        hosts: 3,
        ..Default::default()
    })
    .unwrap();
    let (qa, _) = connect(&mut sim, 0, 1);
    let (qc, _) = connect(&mut sim, 0, 2);
    let src = patterned(&mut sim, 0, 10 * 1024, 1);
    let d1 = sim.transport(1).register_memory(10 * 1024).unwrap();
    let d2 = sim.transport(2).register_memory(10 * 1024).unwrap();
    for (id, qp, d) in [(1, qa, d1), (2, qc, d2)] {
        let mut w = wr(id, SendOpcode::RdmaWrite, &src, 10 * 1024);
        w.remote_addr = d.addr;
        w.rkey = d.rkey;
        sim.transport(0).post_send(qp, &w).unwrap();
    }
    let seen = run(&mut sim);
    // A1 is on the wire before B is posted; when A1 is done the ring is [A, B] (a newly
    // active QP joins at the tail), so host 0 sends A1 A2 B1 A3 B2 … B8 A10 B9 B10. First
    // packets are 1122 B (89_760 ps), the others 1106 B (88_480 ps).
    // A10 is 18th: it leaves host 0 at 2·89_760 + 16·88_480 = 1_595_200; after A1 A2 the
    // downlink to host 1 gets one packet per two slots, so no queueing: host 1 has it at
    // + D + 88_480 + D = 3_683_680 and its ACK is back at + 2·6_880 + 2·D = 5_697_440.
    // B10 is 20th: it leaves at 2·89_760 + 18·88_480 = 1_772_160, right behind B9 whose switch
    // transmission ends exactly then, so host 2 has it at + D + 88_480 + D = 3_860_640 and
    // the ACK is back at 5_874_400.
    let t: Vec<_> = seen.iter().map(|s| (s.wc.wr_id, s.at)).collect();
    assert_eq!(t, vec![(1, Time(5_697_440)), (2, Time(5_874_400))]);
}

#[test]
fn wakes_fire_at_their_time_and_can_be_replaced_or_cancelled() {
    let mut sim = sim2();
    let mut ready = Vec::new();
    assert!(!sim.advance(&mut ready));
    sim.set_wake(1, Time::from_us(3));
    sim.set_wake(0, Time::from_us(9));
    sim.set_wake(0, Time::from_us(2)); // replaces 9 µs
    sim.set_wake(1, Time::MAX); // cancels
    assert!(sim.advance(&mut ready));
    assert_eq!((sim.now(), ready.clone()), (Time::from_us(2), vec![0]));
    sim.set_wake(1, Time::from_us(4));
    sim.set_wake(0, Time::from_us(4));
    assert!(sim.advance(&mut ready));
    assert_eq!((sim.now(), ready.clone()), (Time::from_us(4), vec![0, 1]));
    // Stale (replaced/cancelled) wakes are consumed without making anyone ready, and without
    // moving the clock to their time (the replaced 9 µs wake of host 0).
    assert!(!sim.advance(&mut ready));
    assert!(ready.is_empty());
    assert_eq!(sim.now(), Time::from_us(4));
}

#[test]
fn local_reads_copy_the_range_and_refuse_what_lies_outside_an_mr() {
    use xrdma::TransportError;
    let mut sim = sim2();
    let mr = sim.transport(0).register_memory(64).unwrap();
    sim.transport(0).write(mr.addr + 10, b"abcdef").unwrap();
    let mut out = [0xffu8; 8];
    sim.transport(0).read_into(mr.addr + 9, &mut out).unwrap();
    assert_eq!(&out, b"\0abcdef\0");
    assert_eq!(
        sim.transport(0).read_bytes(mr.addr + 12, 3).unwrap(),
        &b"cde"[..]
    );
    for (addr, len) in [(mr.addr - 1, 2), (mr.addr + 60, 5), (mr.addr + 64, 1)] {
        let mut out = vec![0xffu8; len];
        let err = sim.transport(0).read_into(addr, &mut out).unwrap_err();
        let want = TransportError::BadAddress {
            addr,
            len: len as u64,
            key: 0,
        };
        assert_eq!(err, want);
        assert!(out.iter().all(|&b| b == 0xff), "out is untouched");
        assert_eq!(sim.transport(0).read_bytes(addr, len).unwrap_err(), want);
    }
    // Another host's memory is not this host's.
    let mut out = [0u8; 1];
    assert!(sim.transport(1).read_into(mr.addr, &mut out).is_err());
}
