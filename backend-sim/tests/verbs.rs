//! What only the simulator shows of RC verbs between two hosts: exact completion times,
//! packet counters, ACK coalescing, the RNR wait, the NIC's round robin between QPs, wake
//! timers and configuration errors. The verbs semantics themselves (statuses, lengths,
//! immediate data, bytes, flushes, reset) are the conformance cases of `xrdma-conformance`,
//! which `tests/conformance.rs` runs here; several tests below run a case again with their
//! own shape and check when each completion came.

mod common;
use common::harness::SimHarness;
use common::*;
use std::time::Duration;
use xrdma::{LocalMemory, SendOpcode, Time, Transport, WcOpcode, WcStatus};
use xrdma_conformance::cases::{self, Observed, Read, WriteWithImm};
use xrdma_conformance::{Harness, Side};
use xrdma_sim::{SimConfig, Simulation};

fn sim2() -> Simulation {
    Simulation::new(SimConfig::default()).unwrap()
}

fn harness() -> SimHarness {
    SimHarness::new(SimConfig::default())
}

/// The simulation has nothing left to do and no completion beyond those the case waited for.
fn no_other_completion(h: &mut SimHarness) {
    for side in [Side::A, Side::B] {
        let more = h.wait(side, 1, Duration::from_secs(1));
        assert!(more.is_empty(), "{side:?}: {more:?}");
    }
}

/// The one completion `obs` saw on each side: (requester's, responder's).
fn one_each(obs: &Observed) -> (xrdma_conformance::Seen, xrdma_conformance::Seen) {
    assert_eq!((obs.a.len(), obs.b.len()), (1, 1), "{obs:?}");
    (obs.a[0], obs.b[0])
}

#[test]
fn one_packet_write_with_imm_timing_and_bytes() {
    let mut h = harness();
    // The case checks the completions (RecvRdmaWithImm with the imm and 512 B, the WRITE's
    // success) and the bytes, including the untouched ones on either side of the range.
    let obs = cases::write_with_imm(
        &mut h,
        &WriteWithImm {
            len: 512,
            src_offset: 0,
            dst_offset: 100,
            imm: 0xdead_beef,
        },
    );
    no_other_completion(&mut h);
    let (s, r) = one_each(&obs);
    // Data wire = 82 + 512 + 16 (RETH) + 4 (ImmDt) = 614 B → 614·80 = 49_120 ps per hop.
    // Receive completion: 2 serializations + 2 link delays = 98_240 + 2_000_000.
    assert_eq!(r.at, Time::from_ps(2_098_240));
    assert_eq!(r.wc.opcode, WcOpcode::RecvRdmaWithImm);
    // ACK = 82 + 4 (AETH) = 86 B → 6_880 ps per hop; send completion one ACK trip later:
    // 2_098_240 + 2·6_880 + 2·1_000_000 = 4_112_000.
    assert_eq!(s.at, Time::from_ps(4_112_000));
    assert_eq!(
        (s.wc.opcode, s.wc.status, s.wc.wr_id),
        (WcOpcode::RdmaWrite, WcStatus::Success, 1)
    );
    let st = h.sim.stats();
    assert_eq!((st.data_packets, st.ack_packets, st.drops), (1, 1, 0));
    assert_eq!(st.delivered_payload_bytes, 512);
    assert_eq!(st.packets_in_flight, 0);
}

#[test]
fn four_packet_write_with_imm_is_pipelined_store_and_forward() {
    let mut h = harness();
    let obs = cases::write_with_imm(
        &mut h,
        &WriteWithImm {
            len: 4096,
            src_offset: 0,
            dst_offset: 4096,
            imm: 42,
        },
    );
    no_other_completion(&mut h);
    let (s, r) = one_each(&obs);
    // Wires: 1122 (first, +RETH), 1106, 1106, 1110 (last, +ImmDt) → 89_760, 88_480, 88_480,
    // 88_800 ps. The host sends them back to back (total 355_520 ps); the switch forwards each
    // as soon as it has it and the port is free; since the first packet is the largest, the
    // switch port stays busy from the first packet on, so the last bit leaves the switch at
    // D + 89_760 (first packet at the host) + 355_520 (all four at the switch) and reaches
    // host 1 one D later: 89_760 + 355_520 + 2_000_000 = 2_445_280.
    assert_eq!(r.at, Time::from_ps(2_445_280));
    assert_eq!((r.wc.byte_len, r.wc.imm), (4096, Some(42)));
    // The ACK of the last packet: + 2·6_880 + 2·D = 4_459_040.
    assert_eq!(s.at, Time::from_ps(4_459_040));
    // ack_every = 1: one ACK per data packet.
    assert_eq!(
        (h.sim.stats().data_packets, h.sim.stats().ack_packets),
        (4, 4)
    );
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
fn send_without_receive_gets_rnr_then_succeeds() {
    let mut sim = sim2();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 100, 5);
    let dst = sim.transport(1).register_memory(100).unwrap();
    sim.transport(0)
        .post_send(qa, &wr(1, SendOpcode::Send, &src, 100))
        .unwrap();
    // Post the receive at 5 µs: after the RNR NAK left host 1 (2.03 µs), before the retry.
    sim.set_wake(1, at_us(5));
    let seen = run_with(&mut sim, |sim, h| {
        if h == 1 && sim.now() == at_us(5) {
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
        (Time::from_ps(16_072_000), WcStatus::Success, 100)
    );
    let s = seen.iter().find(|s| s.host == 0).unwrap();
    assert_eq!(
        (s.at, s.wc.status),
        (Time::from_ps(18_085_760), WcStatus::Success)
    );
    assert_eq!(sim.stats().rnr_naks, 1);
    // One RNR retry on the requester's QP, and the SEND sent again once after it.
    let o = sim.transport(0).observe_qp(qa);
    assert_eq!(
        (o.state, o.rnr_retries, o.retransmitted_packets),
        (Some("RTS"), Some(1), Some(1))
    );
    let sent = sim.transport(0).read_bytes(src.addr, 100).unwrap().to_vec();
    assert_eq!(
        sim.transport(1).read_bytes(dst.addr, 100).unwrap(),
        &sent[..]
    );
}

#[test]
fn rnr_retry_exhausted_errors_and_flushes() {
    let mut h = harness();
    // The case: SENDs of 100 and 50 B with no receive posted, rnr_retry 2: WR 1 fails with
    // RnrRetryExcErr, WR 2 and a later WR 3 are flushed, the responder sees nothing and can
    // still take receives.
    let obs = cases::rnr_retry_exceeded(&mut h, 2);
    no_other_completion(&mut h);
    // Three attempts (1 + rnr_retry), each NAKed 4_042_880 ps after it starts (see the RNR
    // test), two 10 µs waits between them: 3·4_042_880 + 2·10_000_000 = 32_128_640.
    assert_eq!(obs.a.len(), 3);
    assert!(obs.b.is_empty());
    assert!(
        obs.a[..2].iter().all(|s| s.at == Time::from_ps(32_128_640)),
        "{obs:?}"
    );
    assert_eq!(h.sim.stats().rnr_naks, 3);
    // WR 2 followed WR 1 on the wire in each attempt and was discarded as out of sequence.
    assert_eq!(h.sim.stats().out_of_sequence_drops, 3);
}

#[test]
fn send_longer_than_receive_is_loc_len_err() {
    let mut h = harness();
    // The case: a 2000-byte SEND into a 1000-byte receive; the second receive is flushed and
    // the SEND fails with GeneralErr (the NAK's remote invalid request).
    let obs = cases::a_send_longer_than_the_receive_is_a_length_error(&mut h);
    // The simulator reports the receive's error as a local length error (IB Spec 9.9.3).
    let r: Vec<_> = obs.b.iter().map(|s| (s.wc.wr_id, s.wc.status)).collect();
    assert_eq!(r, vec![(7, WcStatus::LocLenErr), (8, WcStatus::WrFlushErr)]);
    let s: Vec<_> = obs.a.iter().map(|s| (s.wc.wr_id, s.wc.status)).collect();
    assert_eq!(s, vec![(1, WcStatus::GeneralErr)]);
}

#[test]
fn rdma_read_timing_and_bytes() {
    let mut h = harness();
    // The case checks the completion (RdmaRead, 3000 B), the bytes, and that the responder
    // sees nothing.
    let obs = cases::rdma_read(
        &mut h,
        &Read {
            len: 3000,
            remote_offset: 0,
            local_offset: 0,
        },
    );
    no_other_completion(&mut h);
    assert_eq!((obs.a.len(), obs.b.len()), (1, 0));
    // Request: 82 + 16 (RETH) = 98 B → 7_840 ps per hop; at host 1 at 15_680 + 2·D.
    // Responses: 1024 + 1024 + 952 B payload, wires 1110 (+AETH), 1106, 1038 (+AETH) →
    // 88_800, 88_480, 83_040 ps; pipelined as in the WRITE test, the last arrives
    // 88_800 + 260_320 + 2·D after the request: 2_015_680 + 2_349_120 = 4_364_800.
    assert_eq!(obs.a[0].at, Time::from_ps(4_364_800));
    assert_eq!(
        (obs.a[0].wc.opcode, obs.a[0].wc.status, obs.a[0].wc.byte_len),
        (WcOpcode::RdmaRead, WcStatus::Success, 3000)
    );
    // 1 request + 3 responses, no ACKs (responses acknowledge the READ).
    assert_eq!(
        (h.sim.stats().data_packets, h.sim.stats().ack_packets),
        (4, 0)
    );
}

#[test]
fn verb_errors() {
    // The errors every backend returns (NoSuchQp, BadQpState in INIT, BadAddress past an MR)
    // are the conformance case `local_errors_are_refused_synchronously`; these are the
    // simulator's own.
    let mut sim = sim2();
    let qa = sim.transport(0).create_qp(Default::default()).unwrap();
    let mut bad = qa;
    bad.lid = 5;
    assert!(matches!(
        sim.transport(0).connect_qp(qa.qpn, &bad),
        Err(xrdma::TransportError::Unreachable(_))
    ));
    let qb = sim.transport(1).create_qp(Default::default()).unwrap();
    sim.transport(0).connect_qp(qa.qpn, &qb).unwrap();
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
fn zero_length_write_with_imm_timing() {
    let mut h = harness();
    // The case checks the completions: RecvRdmaWithImm with length 0 and the imm, success.
    let obs = cases::a_zero_length_write_with_imm_needs_no_rkey(&mut h);
    let (s, r) = one_each(&obs);
    // Wire 82 + 16 (RETH) + 4 (ImmDt) = 102 B → 8_160 ps per hop: 16_320 + 2·D.
    assert_eq!(r.at, Time::from_ps(2_016_320));
    assert_eq!(
        (r.wc.opcode, r.wc.byte_len, r.wc.imm),
        (WcOpcode::RecvRdmaWithImm, 0, Some(0x0102_0304))
    );
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
    assert_eq!(
        t,
        vec![(1, Time::from_ps(5_697_440)), (2, Time::from_ps(5_874_400))]
    );
}

#[test]
fn wakes_fire_at_their_time_and_can_be_replaced_or_cancelled() {
    let mut sim = sim2();
    let mut ready = Vec::new();
    assert!(!sim.advance(&mut ready));
    sim.set_wake(1, at_us(3));
    sim.set_wake(0, at_us(9));
    sim.set_wake(0, at_us(2)); // replaces 9 µs
    sim.set_wake(1, Time::MAX); // cancels
    assert!(sim.advance(&mut ready));
    assert_eq!((sim.now(), ready.clone()), (at_us(2), vec![0]));
    sim.set_wake(1, at_us(4));
    sim.set_wake(0, at_us(4));
    assert!(sim.advance(&mut ready));
    assert_eq!((sim.now(), ready.clone()), (at_us(4), vec![0, 1]));
    // Stale (replaced/cancelled) wakes are consumed without making anyone ready, and without
    // moving the clock to their time (the replaced 9 µs wake of host 0).
    assert!(!sim.advance(&mut ready));
    assert!(ready.is_empty());
    assert_eq!(sim.now(), at_us(4));
}
