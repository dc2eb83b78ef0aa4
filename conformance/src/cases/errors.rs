//! Cases of the error paths: RNR retry exhaustion, the error state and its flushes, a SEND
//! too long for its receive, reset and reuse, and the errors verbs calls return at once.

use super::{expect, expect_none, post_recv, post_send, Observed};
use crate::harness::{pattern, rdma_wr, recv_wr, send_wr, sge, Harness, PairSpec, Side};
use xrdma::{
    LocalMemory, QpCaps, SendOpcode, SendWr, Sge, Transport, TransportError, WcOpcode, WcStatus,
};

/// [`rnr_retry_exceeded`] with `rnr_retry` 0: the first RNR NAK ends the SEND.
pub fn rnr_retry_exceeded_at_the_first_nak<H: Harness>(h: &mut H) -> Observed {
    rnr_retry_exceeded(h, 0)
}

/// [`rnr_retry_exceeded`] with `rnr_retry` 2: three attempts, each answered by an RNR NAK.
pub fn rnr_retry_exceeded_after_two_retries<H: Harness>(h: &mut H) -> Observed {
    rnr_retry_exceeded(h, 2)
}

/// Two SENDs to a responder with no receive posted, on QPs with `rnr_retry` retries (below
/// 7, which retries forever; IB Spec 9.7.5.2.8) and the shortest RNR timer: the first fails
/// with `RnrRetryExcErr` (opcode `Send`, length 0), the second is flushed, a SEND posted
/// later is flushed too (the QP is in the error state); the responder sees nothing and can
/// still take receives.
pub fn rnr_retry_exceeded<H: Harness>(h: &mut H, rnr_retry: u8) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec {
        rnr_retry,
        ..PairSpec::default()
    });
    let (qa, qb, ma, mb) = (p.qp(Side::A), p.qp(Side::B), p.mr(Side::A), p.mr(Side::B));
    post_send(
        h,
        Side::A,
        qa,
        &send_wr(1, SendOpcode::Send, sge(&ma, 0, 100)),
    );
    post_send(
        h,
        Side::A,
        qa,
        &send_wr(2, SendOpcode::Send, sge(&ma, 0, 50)),
    );
    let sa = expect(h, &mut obs, Side::A, 2);
    let (w1, w2) = (sa[0].wc, sa[1].wc);
    assert_eq!(
        (w1.wr_id, w1.status, w1.opcode, w1.byte_len, w1.qp_num),
        (1, WcStatus::RnrRetryExcErr, WcOpcode::Send, 0, qa)
    );
    assert_eq!(
        (w2.wr_id, w2.status, w2.qp_num),
        (2, WcStatus::WrFlushErr, qa)
    );
    expect_none(h, Side::B);
    // Later WRs on the QP in ERR are accepted and flushed.
    post_send(
        h,
        Side::A,
        qa,
        &send_wr(3, SendOpcode::Send, sge(&ma, 0, 10)),
    );
    let w3 = expect(h, &mut obs, Side::A, 1)[0].wc;
    assert_eq!((w3.wr_id, w3.status), (3, WcStatus::WrFlushErr));
    // The responder never consumed anything; it can still take receives.
    post_recv(h, Side::B, qb, &recv_wr(4, sge(&mb, 0, 10)));
    obs
}

/// An RDMA WRITE past the end of the remote MR fails with `RemAccessErr` and writes nothing;
/// the SEND queued behind it, a receive posted on the same QP before the error and a SEND
/// posted after it are all flushed.
///
/// A receive posted after the error is not checked: hardware and the simulator flush it at
/// once, but Soft-RoCE's user-space provider posts receives without waking the kernel, which
/// flushes a receive queue only when the QP enters the error state.
pub fn an_error_flushes_every_later_wr<H: Harness>(h: &mut H) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, ma) = (p.qp(Side::A), p.mr(Side::A));
    h.write(Side::A, ma.addr, &pattern(2048, 5));
    let small = h
        .transport(Side::B)
        .register_memory(1024)
        .unwrap_or_else(|e| panic!("registering 1024 B on B: {e}"));
    post_recv(h, Side::A, qa, &recv_wr(4, sge(&ma, 4096, 64)));
    // 2048 bytes do not fit in the 1024-byte MR.
    let write = rdma_wr(1, SendOpcode::RdmaWrite, sge(&ma, 0, 2048), &small, 0);
    post_send(h, Side::A, qa, &write);
    post_send(
        h,
        Side::A,
        qa,
        &send_wr(2, SendOpcode::Send, sge(&ma, 0, 1)),
    );
    let got: Vec<_> = expect(h, &mut obs, Side::A, 3)
        .iter()
        .map(|s| (s.wc.wr_id, s.wc.status, s.wc.opcode))
        .collect();
    // The send queue completes in order; its flush and the receive queue's are independent.
    let sends: Vec<_> = got.iter().filter(|c| c.0 != 4).copied().collect();
    assert_eq!(
        sends,
        vec![
            (1, WcStatus::RemAccessErr, WcOpcode::RdmaWrite),
            (2, WcStatus::WrFlushErr, WcOpcode::Send)
        ],
        "{got:?}"
    );
    assert!(
        got.contains(&(4, WcStatus::WrFlushErr, WcOpcode::Recv)),
        "{got:?}"
    );
    assert_eq!(h.read(Side::B, small.addr, 1024), vec![0; 1024]);
    post_send(
        h,
        Side::A,
        qa,
        &send_wr(3, SendOpcode::Send, sge(&ma, 0, 8)),
    );
    let w3 = expect(h, &mut obs, Side::A, 1)[0].wc;
    assert_eq!((w3.wr_id, w3.status), (3, WcStatus::WrFlushErr));
    obs
}

/// A 2000-byte SEND into a 1000-byte receive: the receive completes in error and the one
/// posted after it is flushed (the responder's QP is in the error state), and the SEND fails
/// with the NAK's remote invalid request error (`IBV_WC_REM_INV_REQ_ERR`, which the trait
/// reports as `GeneralErr`).
///
/// The receive's status differs between implementations: `LocLenErr` on hardware and in the
/// simulator (IB Spec 9.9.3: a local length error at the responder), `GeneralErr` on
/// Soft-RoCE, whose responder completes the receive with the status it NAKs with
/// (`IB_WC_REM_INV_REQ_ERR`, `rxe_resp.c`, `RESPST_ERR_LENGTH`).
pub fn a_send_longer_than_the_receive_is_a_length_error<H: Harness>(h: &mut H) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, qb, ma, mb) = (p.qp(Side::A), p.qp(Side::B), p.mr(Side::A), p.mr(Side::B));
    h.write(Side::A, ma.addr, &pattern(2000, 5));
    post_recv(h, Side::B, qb, &recv_wr(7, sge(&mb, 0, 1000)));
    post_recv(h, Side::B, qb, &recv_wr(8, sge(&mb, 4096, 1000)));
    post_send(
        h,
        Side::A,
        qa,
        &send_wr(1, SendOpcode::Send, sge(&ma, 0, 2000)),
    );
    let r: Vec<_> = expect(h, &mut obs, Side::B, 2)
        .iter()
        .map(|s| (s.wc.wr_id, s.wc.status))
        .collect();
    assert!(
        matches!(r[0], (7, WcStatus::LocLenErr | WcStatus::GeneralErr)),
        "{r:?}"
    );
    assert_eq!(r[1], (8, WcStatus::WrFlushErr));
    let s = expect(h, &mut obs, Side::A, 1)[0].wc;
    assert_eq!((s.wr_id, s.status), (1, WcStatus::GeneralErr));
    obs
}

/// The QP-cache path: a QP pair whose requester failed (RNR retries exceeded, then a flush)
/// is reset on both sides (same QP numbers, new 24-bit PSNs), connected again with the new
/// addresses, and a SEND into a posted receive succeeds with its bytes.
pub fn a_qp_reset_in_error_is_reconnected_and_carries_traffic<H: Harness>(h: &mut H) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec {
        rnr_retry: 0,
        ..PairSpec::default()
    });
    let (qa, qb, ma, mb) = (p.qp(Side::A), p.qp(Side::B), p.mr(Side::A), p.mr(Side::B));
    let send = send_wr(11, SendOpcode::Send, sge(&ma, 0, 64));
    post_send(h, Side::A, qa, &send);
    let s = expect(h, &mut obs, Side::A, 1)[0].wc;
    assert_eq!((s.wr_id, s.status), (11, WcStatus::RnrRetryExcErr));
    post_send(h, Side::A, qa, &SendWr { wr_id: 12, ..send });
    let s = expect(h, &mut obs, Side::A, 1)[0].wc;
    assert_eq!((s.wr_id, s.status), (12, WcStatus::WrFlushErr));

    let na = h.transport(Side::A).reset_qp(qa).expect("reset A's QP");
    let nb = h.transport(Side::B).reset_qp(qb).expect("reset B's QP");
    assert_eq!((na.qpn, nb.qpn), (qa, qb), "reset keeps the QP number");
    assert!(na.psn < 1 << 24 && nb.psn < 1 << 24, "PSNs are 24 bits");
    h.transport(Side::A)
        .connect_qp(qa, &nb)
        .expect("reconnect A's QP");
    h.transport(Side::B)
        .connect_qp(qb, &na)
        .expect("reconnect B's QP");
    let data = pattern(64, 4);
    h.write(Side::A, ma.addr, &data);
    post_recv(h, Side::B, qb, &recv_wr(21, sge(&mb, 0, 64)));
    post_send(h, Side::A, qa, &SendWr { wr_id: 13, ..send });
    let s = expect(h, &mut obs, Side::A, 1)[0].wc;
    let r = expect(h, &mut obs, Side::B, 1)[0].wc;
    assert_eq!((s.wr_id, s.status), (13, WcStatus::Success));
    assert_eq!((r.wr_id, r.status, r.byte_len), (21, WcStatus::Success, 64));
    assert_eq!(h.read(Side::B, mb.addr, 64), data);
    obs
}

/// Errors a verbs call returns at once, without a completion: a local SGE with a wrong lkey
/// or one byte past its MR's end (`BadAddress`), an unknown QP (`NoSuchQp`), a send on a QP
/// still in INIT (`BadQpState`; receives may be posted there), a local read past an MR.
pub fn local_errors_are_refused_synchronously<H: Harness>(h: &mut H) -> Observed {
    let p = h.connect(&PairSpec::default());
    let (qa, ma) = (p.qp(Side::A), p.mr(Side::A));
    let mut t = h.transport(Side::A);
    let bad_key = Sge {
        lkey: ma.lkey.wrapping_add(1),
        ..sge(&ma, 0, 64)
    };
    let send = send_wr(1, SendOpcode::Send, bad_key);
    assert!(
        matches!(
            t.post_send(qa, &send),
            Err(TransportError::BadAddress { .. })
        ),
        "a wrong lkey"
    );
    // One byte past the MR's end.
    let past = send_wr(1, SendOpcode::Send, sge(&ma, ma.len - 63, 64));
    assert!(
        matches!(
            t.post_send(qa, &past),
            Err(TransportError::BadAddress { .. })
        ),
        "past the MR's end"
    );
    assert!(matches!(
        t.post_send(0xFF_FFFF, &send),
        Err(TransportError::NoSuchQp(0xFF_FFFF))
    ));
    // A fresh QP is in INIT: receives may be posted, sends may not.
    let fresh = t.create_qp(QpCaps::default()).expect("create a QP");
    let ok = send_wr(1, SendOpcode::Send, sge(&ma, 0, 64));
    assert!(matches!(
        t.post_send(fresh.qpn, &ok),
        Err(TransportError::BadQpState { state: "INIT", .. })
    ));
    t.post_recv(fresh.qpn, &recv_wr(1, ok.sge))
        .expect("a receive on a QP in INIT");
    assert!(t.read_bytes(ma.addr + ma.len, 1).is_err());
    Observed::default()
}

/// Local reads and writes of registered memory: a read copies exactly the range; a range
/// that does not lie inside one MR (starting before it, running past its end, starting at
/// its end) is refused with `BadAddress` naming the range and key 0, leaving the output
/// untouched; a gathered write lays its parts back to back and is refused whole when its
/// span runs past the MR, writing none of it; another side's MR is not this side's memory.
pub fn local_memory_copies_ranges_and_refuses_what_lies_outside_an_mr<H: Harness>(
    h: &mut H,
) -> Observed {
    h.connect(&PairSpec::default());
    let mut t = h.transport(Side::A);
    let mr = t.register_memory(64).expect("register 64 B");
    t.write(mr.addr + 10, &[b"ab", b"", b"cdef"])
        .expect("write inside the MR");
    let mut out = [0xffu8; 8];
    t.read_into(mr.addr + 9, &mut out)
        .expect("read inside the MR");
    assert_eq!(&out, b"\0abcdef\0");
    assert_eq!(
        t.read_bytes(mr.addr + 12, 3).expect("read_bytes"),
        &b"cde"[..]
    );
    for (addr, len) in [(mr.addr - 1, 2), (mr.addr + 60, 5), (mr.addr + 64, 1)] {
        let mut out = vec![0xffu8; len];
        let err = t
            .read_into(addr, &mut out)
            .expect_err("a range outside the MR");
        let want = TransportError::BadAddress {
            addr,
            len: len as u64,
            key: 0,
        };
        assert_eq!(err, want);
        assert!(out.iter().all(|&b| b == 0xff), "out is untouched");
        assert_eq!(
            t.read_bytes(addr, len).expect_err("read_bytes outside"),
            want
        );
        assert_eq!(t.write(addr, &[&out]).expect_err("write outside"), want);
    }
    // A gather whose first part fits but whose span does not: refused, nothing written.
    let err = t
        .write(mr.addr + 60, &[b"wxyz", b"!"])
        .expect_err("a gather past the MR's end");
    let want = TransportError::BadAddress {
        addr: mr.addr + 60,
        len: 5,
        key: 0,
    };
    assert_eq!(err, want);
    let mut tail = [0xffu8; 4];
    t.read_into(mr.addr + 60, &mut tail)
        .expect("the MR's last 4 bytes");
    assert_eq!(tail, [0; 4], "nothing of a refused gather is written");
    drop(t);
    // Another side's memory is not this side's.
    let mut out = [0u8; 1];
    assert!(h.transport(Side::B).read_into(mr.addr, &mut out).is_err());
    Observed::default()
}
