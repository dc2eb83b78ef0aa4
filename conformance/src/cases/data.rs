//! Cases where every WR succeeds: SEND into posted receives, WRITE with immediate, READ, and
//! the completion order of a mixed send queue.

use super::{expect, expect_none, post_recv, post_send, Observed};
use crate::harness::{pattern, rdma_wr, recv_wr, send_wr, sge, Harness, PairSpec, Side};
use xrdma::{SendOpcode, SendWr, Sge, WcOpcode, WcStatus};

/// A SEND and a SEND with immediate consume the two posted receives in posting order: each
/// receive completion names its QP, the SEND's length and (only for the second) the immediate
/// data; both sends complete as `Send` on the requester's QP; the bytes land at the
/// receive's address.
pub fn send_lands_in_the_posted_receive<H: Harness>(h: &mut H) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, qb, ma, mb) = (p.qp(Side::A), p.qp(Side::B), p.mr(Side::A), p.mr(Side::B));
    let data = pattern(100, 1);
    h.write(Side::A, ma.addr, &data);
    let recv = recv_wr(77, sge(&mb, 4096, 4096));
    post_recv(h, Side::B, qb, &recv);
    post_recv(h, Side::B, qb, &recv_wr(78, recv.sge));
    let send = send_wr(5, SendOpcode::Send, sge(&ma, 0, 100));
    post_send(h, Side::A, qa, &send);
    let with_imm = SendWr {
        wr_id: 6,
        opcode: SendOpcode::SendWithImm,
        imm: 0xDEAD_BEEF,
        ..send
    };
    post_send(h, Side::A, qa, &with_imm);

    let sa = expect(h, &mut obs, Side::A, 2);
    let sb = expect(h, &mut obs, Side::B, 2);
    for (s, id) in sa.iter().zip([5, 6]) {
        assert_eq!(
            (s.wc.wr_id, s.wc.status, s.wc.opcode, s.wc.qp_num),
            (id, WcStatus::Success, WcOpcode::Send, qa)
        );
    }
    // Receives are consumed in posting order: 77 by the plain SEND, 78 by the one with imm.
    let (r0, r1) = (sb[0].wc, sb[1].wc);
    assert_eq!(
        (r0.wr_id, r0.status, r0.opcode),
        (77, WcStatus::Success, WcOpcode::Recv)
    );
    assert_eq!((r0.byte_len, r0.imm, r0.qp_num), (100, None, qb));
    assert_eq!(
        (r1.wr_id, r1.status, r1.opcode, r1.byte_len, r1.imm),
        (
            78,
            WcStatus::Success,
            WcOpcode::Recv,
            100,
            Some(0xDEAD_BEEF)
        )
    );
    assert_eq!(h.read(Side::B, mb.addr + 4096, 100), data);
    obs
}

/// An unsignaled 3000-byte SEND and a signaled 10-byte SEND with immediate: the responder
/// sees both receives (lengths 3000 and 10, the immediate only on the second), the requester
/// only the signaled send.
pub fn an_unsignaled_send_completes_only_at_the_responder<H: Harness>(h: &mut H) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, qb, ma, mb) = (p.qp(Side::A), p.qp(Side::B), p.mr(Side::A), p.mr(Side::B));
    let data = pattern(3000, 9);
    h.write(Side::A, ma.addr, &data);
    post_recv(h, Side::B, qb, &recv_wr(10, sge(&mb, 0, 4096)));
    post_recv(h, Side::B, qb, &recv_wr(11, sge(&mb, 4096, 4096)));
    let w1 = SendWr {
        signaled: false,
        ..send_wr(20, SendOpcode::Send, sge(&ma, 0, 3000))
    };
    let w2 = SendWr {
        imm: 77,
        ..send_wr(21, SendOpcode::SendWithImm, sge(&ma, 0, 10))
    };
    post_send(h, Side::A, qa, &w1);
    post_send(h, Side::A, qa, &w2);

    let recvs: Vec<_> = expect(h, &mut obs, Side::B, 2)
        .iter()
        .map(|s| s.wc)
        .collect();
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
    let sends = expect(h, &mut obs, Side::A, 1);
    assert_eq!(
        (sends[0].wc.wr_id, sends[0].wc.opcode, sends[0].wc.status),
        (21, WcOpcode::Send, WcStatus::Success)
    );
    expect_none(h, Side::A);
    assert_eq!(h.read(Side::B, mb.addr, 3000), data);
    assert_eq!(h.read(Side::B, mb.addr + 4096, 10), &data[..10]);
    obs
}

/// WRs per round of [`unsignaled_wrs_are_retired_by_a_later_signaled_completion`]: within
/// every harness's send-queue depth (64 on a device, 1024 on the simulator and in memory).
const ROUND: u64 = 32;

/// Rounds of `ROUND` 8-byte RDMA WRITEs, all unsignaled but the last: each round raises
/// exactly one completion at the requester, the signaled WRITE's, and every WRITE's bytes
/// land. Forty rounds post 1280 WRs, more than any harness's send queue holds, so the queue
/// must free the unsignaled WRs' slots once the later signaled completion is polled (a queue
/// that kept them would refuse a post with `QueueFull`).
pub fn unsignaled_wrs_are_retired_by_a_later_signaled_completion<H: Harness>(
    h: &mut H,
) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, ma, mb) = (p.qp(Side::A), p.mr(Side::A), p.mr(Side::B));
    let rounds = 40;
    let data = pattern((rounds * ROUND * 8) as usize, 3);
    h.write(Side::A, ma.addr, &data);
    for round in 0..rounds {
        for i in 0..ROUND {
            let k = round * ROUND + i;
            let wr = SendWr {
                signaled: i + 1 == ROUND,
                ..rdma_wr(
                    1000 + k,
                    SendOpcode::RdmaWrite,
                    sge(&ma, k * 8, 8),
                    &mb,
                    k * 8,
                )
            };
            post_send(h, Side::A, qa, &wr);
        }
        let got = expect(h, &mut obs, Side::A, 1);
        assert_eq!(
            (got[0].wc.wr_id, got[0].wc.status, got[0].wc.opcode),
            (
                1000 + round * ROUND + ROUND - 1,
                WcStatus::Success,
                WcOpcode::RdmaWrite
            ),
            "round {round}: only the signaled WRITE completes"
        );
    }
    expect_none(h, Side::A);
    expect_none(h, Side::B);
    assert_eq!(h.read(Side::B, mb.addr, data.len()), data);
    obs
}

/// The shape of a WRITE with immediate: `len` bytes from `src_offset` in A's MR to
/// `dst_offset` in B's, carrying `imm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteWithImm {
    /// Bytes written.
    pub len: u32,
    /// Offset of the source in A's MR.
    pub src_offset: u64,
    /// Offset of the destination in B's MR (at least 1, so the byte before it is checked).
    pub dst_offset: u64,
    /// The immediate data.
    pub imm: u32,
}

impl Default for WriteWithImm {
    /// 5000 bytes: several packets at any RoCE MTU (5 at rxe's 1024 B), the last one
    /// carrying the immediate.
    fn default() -> Self {
        WriteWithImm {
            len: 5000,
            src_offset: 8192,
            dst_offset: 100_000,
            imm: 0x0102_0304,
        }
    }
}

/// [`write_with_imm`] with the default shape.
pub fn write_with_imm_delivers_bytes_imm_and_length<H: Harness>(h: &mut H) -> Observed {
    write_with_imm(h, &WriteWithImm::default())
}

/// A WRITE with immediate into a zero-length receive (no SGE: the receive only takes the
/// completion): the receive completes as `RecvRdmaWithImm` with the WRITE's length and the
/// immediate, the WRITE as `RdmaWrite` with its length, and the bytes land exactly in the
/// remote range (the bytes on either side stay zero).
pub fn write_with_imm<H: Harness>(h: &mut H, w: &WriteWithImm) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, qb, ma, mb) = (p.qp(Side::A), p.qp(Side::B), p.mr(Side::A), p.mr(Side::B));
    let data = pattern(w.len as usize, 2);
    h.write(Side::A, ma.addr + w.src_offset, &data);
    let no_sge = Sge {
        addr: 0,
        len: 0,
        lkey: 0,
    };
    post_recv(h, Side::B, qb, &recv_wr(9, no_sge));
    let write = SendWr {
        imm: w.imm,
        ..rdma_wr(
            1,
            SendOpcode::RdmaWriteWithImm,
            sge(&ma, w.src_offset, w.len),
            &mb,
            w.dst_offset,
        )
    };
    post_send(h, Side::A, qa, &write);

    let sa = expect(h, &mut obs, Side::A, 1);
    let sb = expect(h, &mut obs, Side::B, 1);
    let s = sa[0].wc;
    assert_eq!(
        (s.wr_id, s.status, s.opcode, s.byte_len, s.qp_num),
        (1, WcStatus::Success, WcOpcode::RdmaWrite, w.len, qa)
    );
    let r = sb[0].wc;
    assert_eq!(
        (r.wr_id, r.status, r.opcode, r.byte_len, r.imm, r.qp_num),
        (
            9,
            WcStatus::Success,
            WcOpcode::RecvRdmaWithImm,
            w.len,
            Some(w.imm),
            qb
        )
    );
    assert_eq!(
        h.read(Side::B, mb.addr + w.dst_offset, w.len as usize),
        data
    );
    // The bytes around the written range are untouched (zeroed at registration).
    let end = mb.addr + w.dst_offset + u64::from(w.len);
    assert_eq!(h.read(Side::B, mb.addr + w.dst_offset - 1, 1), [0]);
    assert_eq!(h.read(Side::B, end, 1), [0]);
    obs
}

/// A zero-length WRITE with immediate needs no local SGE and no rkey: the receive completes
/// as `RecvRdmaWithImm` with length 0 and the immediate, the WRITE succeeds.
pub fn a_zero_length_write_with_imm_needs_no_rkey<H: Harness>(h: &mut H) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, qb, mb) = (p.qp(Side::A), p.qp(Side::B), p.mr(Side::B));
    post_recv(h, Side::B, qb, &recv_wr(1, sge(&mb, 0, 0)));
    let no_sge = Sge {
        addr: 0,
        len: 0,
        lkey: 0,
    };
    let w = SendWr {
        imm: 0x0102_0304,
        ..send_wr(2, SendOpcode::RdmaWriteWithImm, no_sge)
    };
    post_send(h, Side::A, qa, &w);
    let r = expect(h, &mut obs, Side::B, 1)[0].wc;
    assert_eq!(
        (r.wr_id, r.status, r.opcode, r.byte_len, r.imm),
        (
            1,
            WcStatus::Success,
            WcOpcode::RecvRdmaWithImm,
            0,
            Some(0x0102_0304)
        )
    );
    let s = expect(h, &mut obs, Side::A, 1)[0].wc;
    assert_eq!((s.wr_id, s.status), (2, WcStatus::Success));
    obs
}

/// The shape of an RDMA READ: `len` bytes from `remote_offset` in B's MR to `local_offset`
/// in A's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    /// Bytes read.
    pub len: u32,
    /// Offset of the source in B's MR.
    pub remote_offset: u64,
    /// Offset of the destination in A's MR.
    pub local_offset: u64,
}

impl Default for Read {
    /// 10 000 bytes from an odd offset: several response packets at any MTU.
    fn default() -> Self {
        Read {
            len: 10_000,
            remote_offset: 12_345,
            local_offset: 500_000,
        }
    }
}

/// [`rdma_read`] with the default shape.
pub fn rdma_read_fetches_remote_bytes<H: Harness>(h: &mut H) -> Observed {
    rdma_read(h, &Read::default())
}

/// An RDMA READ completes as `RdmaRead` with its length and the remote bytes in the local
/// range; it consumes no receive and raises no completion at the responder.
pub fn rdma_read<H: Harness>(h: &mut H, r: &Read) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, ma, mb) = (p.qp(Side::A), p.mr(Side::A), p.mr(Side::B));
    let data = pattern(r.len as usize, 3);
    h.write(Side::B, mb.addr + r.remote_offset, &data);
    let read = rdma_wr(
        4,
        SendOpcode::RdmaRead,
        sge(&ma, r.local_offset, r.len),
        &mb,
        r.remote_offset,
    );
    post_send(h, Side::A, qa, &read);
    let s = expect(h, &mut obs, Side::A, 1)[0].wc;
    assert_eq!(
        (s.wr_id, s.status, s.opcode, s.byte_len, s.qp_num),
        (4, WcStatus::Success, WcOpcode::RdmaRead, r.len, qa)
    );
    assert_eq!(
        h.read(Side::A, ma.addr + r.local_offset, r.len as usize),
        data
    );
    expect_none(h, Side::B);
    obs
}

/// A READ and then a WRITE on one QP complete in posting order, whatever order their ACKs and
/// responses arrive in, and both move their bytes; the plain WRITE raises no completion at
/// the responder.
pub fn a_read_then_a_write_complete_in_posting_order<H: Harness>(h: &mut H) -> Observed {
    let mut obs = Observed::default();
    let p = h.connect(&PairSpec::default());
    let (qa, ma, mb) = (p.qp(Side::A), p.mr(Side::A), p.mr(Side::B));
    let remote = pattern(8192, 11);
    let local = pattern(8192, 1);
    h.write(Side::B, mb.addr, &remote);
    h.write(Side::A, ma.addr, &local);
    let read = rdma_wr(1, SendOpcode::RdmaRead, sge(&ma, 0, 4096), &mb, 0);
    let write = rdma_wr(2, SendOpcode::RdmaWrite, sge(&ma, 4096, 100), &mb, 4096);
    post_send(h, Side::A, qa, &read);
    post_send(h, Side::A, qa, &write);
    let ids: Vec<_> = expect(h, &mut obs, Side::A, 2)
        .iter()
        .map(|s| (s.wc.wr_id, s.wc.status, s.wc.opcode))
        .collect();
    assert_eq!(
        ids,
        vec![
            (1, WcStatus::Success, WcOpcode::RdmaRead),
            (2, WcStatus::Success, WcOpcode::RdmaWrite)
        ]
    );
    assert_eq!(h.read(Side::A, ma.addr, 4096), &remote[..4096]);
    assert_eq!(h.read(Side::B, mb.addr + 4096, 100), &local[4096..4196]);
    expect_none(h, Side::B);
    obs
}
