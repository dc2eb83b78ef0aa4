//! Lossy fabric (PFC off): go-back-N recovery, the retransmission timer, retry exhaustion,
//! the IB RNR timer encoding and payload-free MRs.

mod common;
use common::*;
use xrdma::{
    LocalMemory, QpCaps, QpObservation, RcParams, SendOpcode, Span, Time, Transport, WcOpcode,
    WcStatus,
};
use xrdma_sim::{local_ack_timeout, rnr_timer, SimConfig, Simulation};

/// 17 hosts, PFC off, a 17 × 16 KiB = 278_528 B shared buffer: a 16:1 burst overflows it.
fn lossy(hosts: u32) -> SimConfig {
    SimConfig {
        hosts,
        switch_buffer_bytes: hosts as u64 * 16 * 1024,
        ..Default::default()
    }
}

#[test]
fn lossy_16_to_1_incast_delivers_every_message_exactly_once() {
    const W: u32 = 100_000; // WRITE bytes per sender (98 packets)
    const S: u32 = 20_000; // SEND bytes per sender (20 packets)
    let n = 16;
    let mut sim = Simulation::new(lossy(n + 1)).unwrap();
    let dst = sim
        .transport(n)
        .register_memory(n as u64 * W as u64)
        .unwrap();
    let rbuf = sim
        .transport(n)
        .register_memory(n as u64 * S as u64)
        .unwrap();
    let mut srcs = Vec::new();
    for h in 0..n {
        let (qa, qb) = connect(&mut sim, h, n);
        let src = patterned(&mut sim, h, (W + S) as usize, h as u8 * 7 + 1);
        let mut r = recv(100 + h as u64, &rbuf, S);
        r.sge.addr = rbuf.addr + h as u64 * S as u64;
        sim.transport(n).post_recv(qb, &r).unwrap();
        let mut w = wr(h as u64, SendOpcode::RdmaWrite, &src, W);
        w.remote_addr = dst.addr + h as u64 * W as u64;
        w.rkey = dst.rkey;
        sim.transport(h).post_send(qa, &w).unwrap();
        let mut s = wr(1000 + h as u64, SendOpcode::Send, &src, S);
        s.sge.addr = src.addr + W as u64;
        sim.transport(h).post_send(qa, &s).unwrap();
        srcs.push(src);
    }
    let seen = run(&mut sim);
    let st = sim.stats();
    assert!(st.drops > 0, "{st:?}");
    assert!(st.retransmitted_packets > 0, "{st:?}");
    assert!(st.seq_naks > 0, "{st:?}");
    // Each sender: 2 send completions; the receiver: one Recv per sender, all successful.
    assert_eq!(seen.len() as u32, 3 * n);
    assert!(
        seen.iter().all(|s| s.wc.status == WcStatus::Success),
        "{seen:?}"
    );
    let recvs: Vec<_> = seen
        .iter()
        .filter(|s| s.wc.opcode == WcOpcode::Recv)
        .collect();
    assert_eq!(recvs.len() as u32, n);
    assert!(recvs.iter().all(|s| s.wc.byte_len == S));
    // Exactly once: duplicates are acknowledged, never written again, so the payload written
    // into receiver memory is exactly n·(W + S).
    assert_eq!(st.delivered_payload_bytes, n as u64 * (W + S) as u64);
    for (h, src) in srcs.iter().enumerate() {
        let want = sim
            .transport(h as u32)
            .read_bytes(src.addr, (W + S) as usize)
            .unwrap()
            .to_vec();
        let t = sim.transport(n);
        let w = t
            .read_bytes(dst.addr + h as u64 * W as u64, W as usize)
            .unwrap();
        assert_eq!(w, &want[..W as usize], "WRITE of sender {h}");
        let s = t
            .read_bytes(rbuf.addr + h as u64 * S as u64, S as usize)
            .unwrap();
        assert_eq!(s, &want[W as usize..], "SEND of sender {h}");
    }
    assert_eq!(st.packets_in_flight, 0);
}

#[test]
fn lossy_read_incast_recovers_lost_responses_by_timeout() {
    // Host 8 READs 64 KiB from each of hosts 0..8: the responses converge on host 8's
    // downlink and overflow the buffer; missing responses are requested again.
    let n = 8;
    let mut sim = Simulation::new(SimConfig {
        rc: RcParams {
            local_ack_timeout: 4, // 4.096 µs · 16 = 65.536 µs
            ..RcParams::default()
        },
        ..lossy(n + 1)
    })
    .unwrap();
    const R: u32 = 64 * 1024;
    let dst = sim
        .transport(n)
        .register_memory(n as u64 * R as u64)
        .unwrap();
    let mut srcs = Vec::new();
    for h in 0..n {
        let (qa, _) = connect(&mut sim, n, h);
        let src = patterned(&mut sim, h, R as usize, h as u8 + 40);
        let mut w = wr(h as u64, SendOpcode::RdmaRead, &dst, R);
        w.sge.addr = dst.addr + h as u64 * R as u64;
        w.remote_addr = src.addr;
        w.rkey = src.rkey;
        sim.transport(n).post_send(qa, &w).unwrap();
        srcs.push(src);
    }
    let seen = run(&mut sim);
    let st = sim.stats();
    assert!(st.drops > 0, "{st:?}");
    assert!(st.retransmit_timeouts > 0, "{st:?}");
    // Lost READ responses, not late ones, made the timeouts (some may still be spurious: a
    // short timer can also fire on a response that is only queued).
    assert!(st.spurious_timeouts < st.retransmit_timeouts, "{st:?}");
    assert_eq!(seen.len() as u32, n);
    assert!(seen.iter().all(|s| s.wc.status == WcStatus::Success));
    for (h, src) in srcs.iter().enumerate() {
        let want = sim
            .transport(h as u32)
            .read_bytes(src.addr, R as usize)
            .unwrap()
            .to_vec();
        let t = sim.transport(n);
        let got = t
            .read_bytes(dst.addr + h as u64 * R as u64, R as usize)
            .unwrap();
        assert_eq!(got, &want[..], "READ from {h}");
    }
}

#[test]
fn retry_exhausted_after_retry_cnt_timeouts() {
    // Host 1's QP is never connected (stays in INIT), so it silently drops every packet.
    let cfg = SimConfig {
        rc: RcParams {
            local_ack_timeout: 1, // T = 4.096 µs · 2 = 8.192 µs
            retry_cnt: 3,
            ..RcParams::default()
        },
        ..Default::default()
    };
    let mut sim = Simulation::new(cfg).unwrap();
    let qa = sim.transport(0).create_qp(QpCaps::default()).unwrap();
    let qb = sim.transport(1).create_qp(QpCaps::default()).unwrap();
    sim.transport(0).connect_qp(qa.qpn, &qb).unwrap();
    let src = patterned(&mut sim, 0, 100, 3);
    for id in [1, 2] {
        sim.transport(0)
            .post_send(qa.qpn, &wr(id, SendOpcode::Send, &src, 100))
            .unwrap();
    }
    let seen = run(&mut sim);
    // The first packet starts at 0 and arms the timer; each expiry at k·T resends at once
    // (idle link) and re-arms for T. Expiries at T, 2T, 3T are retries 1..3; the fourth, at
    // 4T = 32.768 µs, exceeds retry_cnt = 3: WR 1 fails with RetryExcErr, WR 2 is flushed.
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].wc.wr_id, seen[0].wc.status, seen[0].at),
        (1, WcStatus::RetryExcErr, Time::ZERO + Span::from_ns(32_768))
    );
    assert_eq!(
        (seen[1].wc.wr_id, seen[1].wc.status),
        (2, WcStatus::WrFlushErr)
    );
    let st = sim.stats();
    assert_eq!(st.retransmit_timeouts, 4);
    // The peer's QP discards every packet: each timeout resends a lost one.
    assert_eq!(st.spurious_timeouts, 0);
    // Both WRs (2 packets) go out once, then again after each of the 3 retries: 8 packets,
    // 6 of them retransmissions.
    assert_eq!(st.data_packets, 8);
    assert_eq!(st.retransmitted_packets, 6);
    // The QP's own counts (the `stat` tool's): the same 6, on the requester only.
    let a = sim.transport(0).observe_qp(qa.qpn);
    assert_eq!(
        (a.state, a.retransmitted_packets, a.rnr_retries),
        (Some("ERR"), Some(6), Some(0))
    );
    let b = sim.transport(1).observe_qp(qb.qpn);
    assert_eq!((b.state, b.retransmitted_packets), (Some("INIT"), Some(0)));
    assert_eq!(sim.transport(0).observe_qp(0x999), QpObservation::default());
}

#[test]
fn rnr_timer_decodes_ib_table_45() {
    // IB Spec vol. 1 Table 45 (values in ms).
    let table = [
        (0, 655_360),
        (1, 10),
        (2, 20),
        (4, 40),
        (5, 60),
        (7, 120),
        (12, 640),
        (14, 1_280),
        (19, 7_680),
        (23, 30_720),
        (28, 163_840),
        (31, 491_520),
    ];
    for (code, us) in table {
        assert_eq!(rnr_timer(code), Span::from_us(us), "code {code}");
    }
    // 4.096 µs · 2^14 = 67.108864 ms.
    assert_eq!(local_ack_timeout(14), Span::from_ns(67_108_864));
    let bad = SimConfig {
        rc: RcParams {
            min_rnr_timer: 32,
            ..RcParams::default()
        },
        ..Default::default()
    };
    assert!(bad.validate().is_err());
}

#[test]
fn rnr_retry_waits_the_encoded_timer() {
    let mut sim = Simulation::new(SimConfig {
        rc: RcParams {
            min_rnr_timer: 12, // 0.64 ms
            ..RcParams::default()
        },
        ..Default::default()
    })
    .unwrap();
    let (qa, qb) = connect(&mut sim, 0, 1);
    let src = patterned(&mut sim, 0, 100, 5);
    let dst = sim.transport(1).register_memory(100).unwrap();
    sim.transport(0)
        .post_send(qa, &wr(1, SendOpcode::Send, &src, 100))
        .unwrap();
    sim.set_wake(1, at_us(5));
    let seen = run_with(&mut sim, |sim, h| {
        if h == 1 && sim.now() == at_us(5) {
            sim.transport(1).post_recv(qb, &recv(2, &dst, 100)).unwrap();
        }
    });
    // As in the verbs RNR test, the RNR NAK reaches host 0 at 4_042_880 ps; the retry starts
    // 640 µs later (644_042_880) and reaches host 1 after 2_029_120 ps: 646_072_000.
    let r = seen.iter().find(|s| s.host == 1).unwrap();
    assert_eq!(
        (r.at, r.wc.status),
        (Time::from_ps(646_072_000), WcStatus::Success)
    );
}

#[test]
fn payload_free_mode_keeps_timing_and_skips_bytes() {
    let run_one = |carry: bool| {
        let mut sim = Simulation::new(SimConfig {
            carry_payload: carry,
            ..Default::default()
        })
        .unwrap();
        let (qa, _) = connect(&mut sim, 0, 1);
        let src = patterned(&mut sim, 0, 4096, 9);
        let dst = sim.transport(1).register_memory(4096).unwrap();
        let mut w = wr(1, SendOpcode::RdmaWrite, &src, 4096);
        w.remote_addr = dst.addr;
        w.rkey = dst.rkey;
        sim.transport(0).post_send(qa, &w).unwrap();
        let seen = run(&mut sim);
        let bytes = sim.transport(1).read_bytes(dst.addr, 4).unwrap().to_vec();
        (seen[0].at, seen[0].wc.status, bytes, sim.trace_hash())
    };
    let (t1, s1, b1, h1) = run_one(true);
    let (t0, s0, b0, h0) = run_one(false);
    assert_eq!((t0, s0, h0), (t1, s1, h1));
    // Pattern byte i = i·31 + 9: 9, 40, 71, 102 with payload; zeros without.
    assert_eq!(b1, vec![9, 40, 71, 102]);
    assert_eq!(b0, vec![0, 0, 0, 0]);
}
