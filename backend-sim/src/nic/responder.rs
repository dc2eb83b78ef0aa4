//! The responder half of an RC QP: request packets delivered in PSN order into memory, receive
//! WRs consumed, cumulative ACKs and NAKs (sequence error, RNR, remote access, invalid
//! request) queued, READs answered, and the DCQCN notification point (CNPs).
//!
//! # State
//! [`Responder`] (`Qp::responder`); PSNs are 24-bit and compared modulo 2^24:
//! - `rq`: posted receive WRs, oldest first, at most `caps.max_recv_wr`. A SEND's first
//!   packet or a WRITE-with-immediate's last takes the front one; none posted is an RNR NAK.
//! - `epsn`: the PSN of the next request expected; the remote's first PSN at `connect_qp`,
//!   then one more per delivered SEND/WRITE packet and one per response packet of an
//!   accepted READ. A
//!   packet beyond it is a gap (one sequence-error NAK), one before it a duplicate
//!   (re-acknowledged; a duplicate READ is answered again).
//! - `in_msg`: the SEND being received — its receive WR and the bytes written so far; set
//!   from its first packet to its last.
//! - `ack_count`: packets delivered since the last ACK was queued; an ACK is queued at every
//!   message's last packet and every `ack_every` packets.
//! - `pending_ack`: the packet-pool id of an ACK still in the egress's control queue; a newer
//!   cumulative ACK overwrites its PSN instead of queueing another. The egress clears it when
//!   the ACK goes out.
//! - `read_jobs`: READs being answered, in request order; the front one's response packets
//!   (PSNs from the request's, `mtu` bytes each) go out before the QP's own requests.
//! - `last_cnp`: when the QP last queued a CNP (picoseconds); at most one per `cnp_interval`,
//!   for CE-marked request packets and for CE-marked READ responses the QP receives as
//!   requester.
//! - `nak_sent`: a sequence-error or RNR NAK went out for the current `epsn`; later packets
//!   of the gap are dropped silently until `epsn` arrives (one NAK per gap).
//!
//! # Events
//! - A SEND, WRITE or READ request packet ([`Simulation::on_request`], from `nic_receive`).
//! - A CE-marked packet ([`Simulation::maybe_cnp`], from `nic_receive`).
//! - The egress takes the QP's next READ response packet
//!   ([`Responder::next_read_response`]).
//!
//! A receive WR is posted by `Transport::post_recv` (in `transport.rs`).

use crate::config::{AETH_BYTES, CNP_EXTRA_BYTES};
use crate::packet::{
    psn_add, psn_diff, MsgOp, NakCode, Packet, PktKind, F_FIRST, F_LAST, PSN_MASK,
};
use crate::Simulation;
use std::collections::VecDeque;
use xrdma::{RecvWr, Time, WcOpcode, WcStatus, WorkCompletion};

use super::{packets_for, QpState};

/// A READ the responder is answering.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ReadJob {
    /// PSN of the next response packet.
    psn: u32,
    /// Response packets still to send.
    pkts_left: u32,
    /// Where the next response packet's payload is read, in this host's memory.
    src_addr: u64,
    /// Bytes still to send.
    bytes_left: u32,
    /// The next response packet is the response's first.
    first: bool,
}

/// The inbound SEND being received.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InMsg {
    /// The receive WR the SEND lands in.
    recv: RecvWr,
    /// Bytes written into it so far.
    bytes: u32,
}

/// The responder state of one QP (see the module doc for the invariants).
#[derive(Debug)]
pub(crate) struct Responder {
    /// Posted receive WRs.
    pub rq: VecDeque<RecvWr>,
    /// PSN of the next request expected.
    pub epsn: u32,
    /// The SEND being received.
    pub in_msg: Option<InMsg>,
    /// Packets delivered since the last ACK was queued.
    pub ack_count: u32,
    /// Pool id of the queued, not yet sent ACK.
    pub pending_ack: Option<u32>,
    /// When the last CNP was queued.
    pub last_cnp: Option<Time>,
    /// READs being answered, oldest first.
    pub read_jobs: VecDeque<ReadJob>,
    /// A NAK (sequence error or RNR) was sent for the current `epsn`; later out-of-sequence
    /// packets are dropped silently until `epsn` arrives (one NAK per gap).
    pub nak_sent: bool,
}

impl Responder {
    /// Nothing received or posted; `epsn` is set when the QP connects.
    pub(crate) fn new() -> Self {
        Responder {
            rq: VecDeque::new(),
            epsn: 0,
            in_msg: None,
            ack_count: 0,
            pending_ack: None,
            last_cnp: None,
            read_jobs: VecDeque::new(),
            nak_sent: false,
        }
    }

    /// Fill `p` with the next packet of the READ response owed, if any (`mtu` payload and
    /// `hdr` header bytes per packet); false when no response is owed.
    pub(crate) fn next_read_response(&mut self, p: &mut Packet, mtu: u32, hdr: u32) -> bool {
        let Some(job) = self.read_jobs.front_mut() else {
            return false;
        };
        let payload = job.bytes_left.min(mtu);
        let first = job.first;
        let last = job.pkts_left == 1;
        p.kind = PktKind::ReadResp;
        p.flags = if first { F_FIRST } else { 0 } | if last { F_LAST } else { 0 };
        p.psn = job.psn;
        p.payload = payload;
        p.wire = hdr + payload + if first || last { AETH_BYTES } else { 0 };
        p.src_addr = job.src_addr;
        job.psn = psn_add(job.psn, 1);
        job.src_addr += payload as u64;
        job.bytes_left -= payload;
        job.pkts_left -= 1;
        job.first = false;
        if job.pkts_left == 0 {
            self.read_jobs.pop_front();
        }
        true
    }
}

impl Simulation {
    /// A control packet of `kind` and `wire` bytes from QP `qi` on host `h` to its peer.
    fn reply(&self, h: u32, qi: usize, kind: PktKind, wire: u32) -> Packet {
        let qp = &self.hosts[h as usize].qps[qi];
        let mut p = Packet::control(kind, h, qp.remote_host, wire);
        p.src_qpn = qp.qpn;
        p.dst_qpn = qp.remote_qpn;
        p
    }

    /// Queue a cumulative ACK of `psn`, folding it into an ACK still waiting to be sent.
    fn queue_ack(&mut self, h: u32, qi: usize, psn: u32) {
        if let Some(id) = self.hosts[h as usize].qps[qi].responder.pending_ack {
            self.pool.get_mut(id).psn = psn;
            return;
        }
        let mut p = self.reply(h, qi, PktKind::Ack, self.cfg.header_bytes + AETH_BYTES);
        p.psn = psn;
        let id = self.queue_ctrl(h, p);
        self.hosts[h as usize].qps[qi].responder.pending_ack = Some(id);
    }

    /// Queue a NAK of `psn` with `code`.
    fn send_nak(&mut self, h: u32, qi: usize, psn: u32, code: NakCode) {
        let mut p = self.reply(h, qi, PktKind::Nak, self.cfg.header_bytes + AETH_BYTES);
        p.psn = psn;
        p.nak = code;
        self.queue_ctrl(h, p);
        self.stats.nak_packets += 1;
        match code {
            NakCode::Rnr => {
                self.stats.rnr_naks += 1;
                self.hosts[h as usize].qps[qi].responder.nak_sent = true;
            }
            NakCode::SeqErr => self.stats.seq_naks += 1,
            NakCode::RemAccess | NakCode::InvReq => {}
        }
    }

    /// Queue the responses of the READ request `p` (after checking its R_Key); a NAK and
    /// `false` when the range is not accessible.
    fn start_read(&mut self, h: u32, qi: usize, p: &Packet) -> bool {
        if !self.hosts[h as usize]
            .mem
            .check_rkey(p.rkey, p.remote_addr, p.msg_len as u64)
        {
            self.send_nak(h, qi, p.psn, NakCode::RemAccess);
            return false;
        }
        let n = packets_for(p.msg_len, self.cfg.path_mtu());
        self.hosts[h as usize].qps[qi]
            .responder
            .read_jobs
            .push_back(ReadJob {
                psn: p.psn,
                pkts_left: n,
                src_addr: p.remote_addr,
                bytes_left: p.msg_len,
                first: true,
            });
        self.schedule_qp(h, qi);
        true
    }

    /// DCQCN notification point: at most one CNP per `cnp_interval` per QP.
    pub(crate) fn maybe_cnp(&mut self, h: u32, qi: usize) {
        let (now, interval) = (self.now, self.cfg.cnp_interval);
        let qp = &mut self.hosts[h as usize].qps[qi];
        if qp.responder.last_cnp.is_some_and(|t| now - t < interval) {
            return;
        }
        qp.responder.last_cnp = Some(now);
        let p = self.reply(h, qi, PktKind::Cnp, self.cfg.header_bytes + CNP_EXTRA_BYTES);
        self.queue_ctrl(h, p);
        self.stats.cnps_sent += 1;
    }

    /// A request packet `p` (SEND, WRITE or READ request) for QP `qi` on host `h`: deliver it
    /// if it is the expected PSN, NAK a gap once, re-acknowledge a duplicate.
    pub(crate) fn on_request(&mut self, h: u32, qi: usize, p: &Packet) {
        let (mtu, ack_every) = (self.cfg.path_mtu(), self.cfg.ack_every);
        let qp = &self.hosts[h as usize].qps[qi];
        if qp.state != QpState::Rts {
            self.stats.out_of_sequence_drops += 1;
            self.note_discard(p);
            return;
        }
        let d = psn_diff(p.psn, qp.responder.epsn);
        if d > 0 {
            // A gap: one sequence-error NAK carrying the expected PSN (IB Spec 9.7.5.2.4),
            // then silence until the expected packet arrives.
            self.stats.out_of_sequence_drops += 1;
            if !qp.responder.nak_sent {
                let epsn = qp.responder.epsn;
                self.send_nak(h, qi, epsn, NakCode::SeqErr);
                self.hosts[h as usize].qps[qi].responder.nak_sent = true;
            }
            self.note_discard(p);
            return;
        }
        if d < 0 {
            if p.kind == PktKind::ReadReq {
                // A repeated READ is executed again (IB Spec 9.7.5.1.2, duplicate READ).
                self.start_read(h, qi, p);
                return;
            }
            // Duplicate: re-acknowledge what was received.
            let last = psn_add(qp.responder.epsn, PSN_MASK);
            self.queue_ack(h, qi, last);
            return;
        }
        let first = p.has(F_FIRST);
        let last = p.has(F_LAST);
        if p.kind == PktKind::ReadReq {
            if self.start_read(h, qi, p) {
                let n = packets_for(p.msg_len, mtu);
                let qp = &mut self.hosts[h as usize].qps[qi];
                qp.responder.epsn = psn_add(qp.responder.epsn, n);
                qp.responder.nak_sent = false;
            }
            return;
        }
        let mut recv_done: Option<WorkCompletion> = None;
        match p.op {
            MsgOp::Send | MsgOp::SendImm => {
                let qp = &mut self.hosts[h as usize].qps[qi];
                if first {
                    let Some(r) = qp.responder.rq.pop_front() else {
                        self.send_nak(h, qi, p.psn, NakCode::Rnr);
                        return;
                    };
                    qp.responder.in_msg = Some(InMsg { recv: r, bytes: 0 });
                }
                let Some(m) = qp.responder.in_msg else {
                    self.stats.out_of_sequence_drops += 1;
                    return;
                };
                let qpn = qp.qpn;
                if m.bytes as u64 + p.payload as u64 > m.recv.sge.len as u64 {
                    let wc = WorkCompletion {
                        wr_id: m.recv.wr_id,
                        status: WcStatus::LocLenErr,
                        opcode: WcOpcode::Recv,
                        qp_num: qpn,
                        byte_len: 0,
                        imm: None,
                    };
                    self.push_wc(h, wc);
                    self.send_nak(h, qi, p.psn, NakCode::InvReq);
                    self.fail_qp(h, qi, None);
                    return;
                }
                let dst = m.recv.sge.addr + m.bytes as u64;
                self.copy_bytes(p.src_host, p.src_addr, h, dst, p.payload);
                let qp = &mut self.hosts[h as usize].qps[qi];
                let bytes = m.bytes + p.payload;
                qp.responder.in_msg = if last {
                    None
                } else {
                    Some(InMsg {
                        recv: m.recv,
                        bytes,
                    })
                };
                if last {
                    recv_done = Some(WorkCompletion {
                        wr_id: m.recv.wr_id,
                        status: WcStatus::Success,
                        opcode: WcOpcode::Recv,
                        qp_num: qpn,
                        byte_len: bytes,
                        imm: (p.op == MsgOp::SendImm).then_some(p.imm),
                    });
                }
            }
            MsgOp::Write | MsgOp::WriteImm => {
                let mem = &self.hosts[h as usize].mem;
                // A zero-length WRITE carries no R_Key to check (IB Spec 9.7.4.1.5, C9-88).
                let whole_ok = !first
                    || p.msg_len == 0
                    || mem.check_rkey(p.rkey, p.remote_addr, p.msg_len as u64);
                let part_ok =
                    p.payload == 0 || mem.check_rkey(p.rkey, p.remote_addr, p.payload as u64);
                if !whole_ok || !part_ok {
                    self.send_nak(h, qi, p.psn, NakCode::RemAccess);
                    return;
                }
                let qp = &mut self.hosts[h as usize].qps[qi];
                if last && p.op == MsgOp::WriteImm {
                    let Some(r) = qp.responder.rq.pop_front() else {
                        self.send_nak(h, qi, p.psn, NakCode::Rnr);
                        return;
                    };
                    recv_done = Some(WorkCompletion {
                        wr_id: r.wr_id,
                        status: WcStatus::Success,
                        opcode: WcOpcode::RecvRdmaWithImm,
                        qp_num: qp.qpn,
                        byte_len: p.msg_len,
                        imm: Some(p.imm),
                    });
                }
                self.copy_bytes(p.src_host, p.src_addr, h, p.remote_addr, p.payload);
            }
        }
        self.stats.delivered_payload_bytes += p.payload as u64;
        self.note_delivered(p.src_host, h, p.payload as u64);
        let qp = &mut self.hosts[h as usize].qps[qi];
        qp.responder.epsn = psn_add(qp.responder.epsn, 1);
        qp.responder.nak_sent = false;
        qp.responder.ack_count += 1;
        if last || qp.responder.ack_count >= ack_every {
            qp.responder.ack_count = 0;
            self.queue_ack(h, qi, p.psn);
        }
        if let Some(wc) = recv_done {
            self.push_data_wc(h, wc);
        }
    }
}
