//! How a simulated packet maps onto RoCEv2 fields: addresses, opcodes, the transport
//! headers. The simulator has no MACs, IP addresses, UDP ports or traffic classes; the
//! capture gives each a fixed, documented value (docs/simulator.md, "Packet captures").

use super::frame::{Addressing, Reth, Transport};
use crate::packet::{MsgOp, NakCode, Packet, PktKind, F_CE, F_FIRST, F_LAST};

/// DSCP of data, READ and ACK/NAK packets: 26 (AF31), the usual RoCE class (priority 3).
pub const DATA_DSCP: u8 = 26;
/// DSCP of CNPs: 48 (CS6), the usual class for congestion notifications.
pub const CNP_DSCP: u8 = 48;
/// The 802.1p priority PFC frames pause (priority 3, the RoCE class of [`DATA_DSCP`]).
pub const PFC_PRIORITY: u8 = 3;
/// The pause time of a PFC XOFF, in quanta: the largest, since the simulator's pause lasts
/// until the XON (pause time 0).
pub const PFC_XOFF_QUANTA: u16 = 0xffff;
/// The AETH credit count of an ACK: 31, "invalid" (no end-to-end credits; IBA §9.7.7.2),
/// what Linux rxe sends.
const CREDITS_INVALID: u8 = 0x1f;

/// The MAC address of host `h`'s NIC: locally administered unicast `02:00:` then `h`
/// big-endian (host 5 is 02:00:00:00:00:05).
pub fn host_mac(h: u32) -> [u8; 6] {
    let b = h.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// The MAC address of global switch port `g` (switch `s`'s local port `i` is global port
/// `port_base[s] + i`; in a star, host `i`'s port is `i`): `02:01:` then `g` big-endian.
pub fn switch_port_mac(g: u32) -> [u8; 6] {
    let b = g.to_be_bytes();
    [0x02, 0x01, b[0], b[1], b[2], b[3]]
}

/// The IPv4 address of host `h`: `10.0.0.0 + h + 1` in 10.0.0.0/8 (host 0 is 10.0.0.1,
/// host 255 is 10.0.1.0); the simulator's at most 2^20 hosts fit.
pub fn host_ipv4(h: u32) -> [u8; 4] {
    (0x0a00_0000u32 | (h.wrapping_add(1) & 0x00ff_ffff)).to_be_bytes()
}

/// The UDP source port of packets from QP `src_qpn` to QP `dst_qpn`: in 0xC000..=0xFFFF,
/// a multiplicative hash of the QP pair, so flows spread over ECMP paths as a RoCEv2 NIC
/// spreads them (RoCEv2 Annex A17.4.2; Linux rxe uses 0xC000 + a 14-bit hash of the QPN).
pub fn udp_source_port(src_qpn: u32, dst_qpn: u32) -> u16 {
    let x = src_qpn.wrapping_mul(0x9e37_79b1) ^ dst_qpn.rotate_left(16);
    0xc000 | (x.wrapping_mul(0x9e37_79b1) >> 18) as u16
}

/// The IPv4 ECN field of `p` (RFC 3168 §5): ECT(0) on the packets the switches may mark
/// (SEND/WRITE data and READ responses), CE once a switch marked one, ECT(1) on CNPs (as
/// the CNP example of RoCEv2 Annex A17.9.3 shows), Not-ECT on the rest (READ requests,
/// ACK, NAK).
pub(crate) fn ecn(p: &Packet) -> u8 {
    match p.kind {
        PktKind::Data | PktKind::ReadResp if p.has(F_CE) => 3,
        PktKind::Data | PktKind::ReadResp => 2,
        PktKind::Cnp => 1,
        _ => 0,
    }
}

/// The addressing of `p` sent from `src_mac` to `dst_mac`.
pub(crate) fn addressing(p: &Packet, src_mac: [u8; 6], dst_mac: [u8; 6]) -> Addressing {
    Addressing {
        dst_mac,
        src_mac,
        src_ip: host_ipv4(p.src_host),
        dst_ip: host_ipv4(p.dst_host),
        udp_src: udp_source_port(p.src_qpn, p.dst_qpn),
        ip_id: 0,
        dscp: if p.kind == PktKind::Cnp {
            CNP_DSCP
        } else {
            DATA_DSCP
        },
        ecn: ecn(p),
    }
}

/// The BTH opcode of `p` (IBA Table 38, the RC rows; 0x81 for a CNP, RoCEv2 Annex A17.9.3);
/// `None` for PFC frames and TCP segments.
pub(crate) fn opcode(p: &Packet) -> Option<u8> {
    let first = p.has(F_FIRST);
    let last = p.has(F_LAST);
    // first, middle, last, only: offsets 0, 1, 2, 4 from the operation's base.
    let pos = match (first, last) {
        (true, false) => 0,
        (false, false) => 1,
        (false, true) => 2,
        (true, true) => 4,
    };
    Some(match p.kind {
        PktKind::Data => match p.op {
            MsgOp::Send => pos,
            MsgOp::SendImm if last => pos + 1,
            MsgOp::SendImm => pos,
            MsgOp::Write => 0x06 + pos,
            MsgOp::WriteImm if last => 0x06 + pos + 1,
            MsgOp::WriteImm => 0x06 + pos,
        },
        PktKind::ReadReq => 0x0c,
        PktKind::ReadResp => match pos {
            4 => 0x10,
            _ => 0x0d + pos,
        },
        PktKind::Ack | PktKind::Nak => 0x11,
        PktKind::Cnp => 0x81,
        PktKind::Pause | PktKind::Resume | PktKind::Tcp => return None,
    })
}

/// The AETH syndrome of an ACK or NAK (IBA §9.3.3.6, Table 44): ACK `000` with the credit
/// count 31, RNR NAK `001` with the 5-bit RNR timer `min_rnr_timer` (IBA Table 45), NAK
/// `011` with the NAK code (0 PSN sequence error, 1 invalid request, 2 remote access error;
/// Table 46).
pub(crate) fn syndrome(p: &Packet, min_rnr_timer: u8) -> u8 {
    match (p.kind, p.nak) {
        (PktKind::Nak, NakCode::Rnr) => 0x20 | (min_rnr_timer & 0x1f),
        (PktKind::Nak, NakCode::SeqErr) => 0x60,
        (PktKind::Nak, NakCode::InvReq) => 0x61,
        (PktKind::Nak, NakCode::RemAccess) => 0x62,
        _ => CREDITS_INVALID,
    }
}

/// The transport headers of `p` (`None` for PFC frames). AckReq is set on a READ request,
/// on the last packet of a SEND or WRITE, and on every data packet when the responder ACKs
/// each one (`ack_every == 1`). The AETH's MSN is 0: the simulator keeps no message
/// sequence numbers. A WRITE's RETH DMA length is the message length; a READ request's the
/// bytes to read.
pub(crate) fn transport(p: &Packet, min_rnr_timer: u8, ack_every: u32) -> Option<Transport> {
    let opcode = opcode(p)?;
    let first = p.has(F_FIRST);
    let last = p.has(F_LAST);
    let mut t = Transport {
        opcode,
        becn: false,
        dqpn: p.dst_qpn,
        ack_req: false,
        psn: p.psn,
        reth: None,
        aeth: None,
        imm: None,
        reserved: 0,
    };
    let reth = Reth {
        va: p.remote_addr,
        rkey: p.rkey,
        len: p.msg_len,
    };
    match p.kind {
        PktKind::Data => {
            t.ack_req = last || ack_every == 1;
            if first && matches!(p.op, MsgOp::Write | MsgOp::WriteImm) {
                t.reth = Some(reth);
            }
            if last && matches!(p.op, MsgOp::SendImm | MsgOp::WriteImm) {
                t.imm = Some(p.imm);
            }
        }
        PktKind::ReadReq => {
            t.ack_req = true;
            t.reth = Some(reth);
        }
        PktKind::ReadResp if first || last => t.aeth = Some((syndrome(p, min_rnr_timer), 0)),
        PktKind::Ack | PktKind::Nak => t.aeth = Some((syndrome(p, min_rnr_timer), 0)),
        PktKind::Cnp => {
            t.becn = true;
            t.psn = 0;
            t.reserved = crate::config::CNP_EXTRA_BYTES as usize;
        }
        _ => {}
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::F_CORRUPT;

    fn data(op: MsgOp, flags: u8) -> Packet {
        let mut p = Packet::control(PktKind::Data, 0, 1, 100);
        p.op = op;
        p.flags = flags;
        p
    }

    #[test]
    fn opcodes_of_every_packet_kind() {
        let (f, m, l, o) = (F_FIRST, 0, F_LAST, F_FIRST | F_LAST);
        let op = |p: Packet| opcode(&p);
        // IBA Table 38, RC: SEND 0x00-0x05, RDMA WRITE 0x06-0x0B.
        let send: Vec<_> = [f, m, l, o].map(|x| op(data(MsgOp::Send, x))).into();
        assert_eq!(send, [Some(0x00), Some(0x01), Some(0x02), Some(0x04)]);
        let imm: Vec<_> = [f, m, l, o].map(|x| op(data(MsgOp::SendImm, x))).into();
        assert_eq!(imm, [Some(0x00), Some(0x01), Some(0x03), Some(0x05)]);
        let w: Vec<_> = [f, m, l, o].map(|x| op(data(MsgOp::Write, x))).into();
        assert_eq!(w, [Some(0x06), Some(0x07), Some(0x08), Some(0x0a)]);
        let wi: Vec<_> = [f, m, l, o].map(|x| op(data(MsgOp::WriteImm, x))).into();
        assert_eq!(wi, [Some(0x06), Some(0x07), Some(0x09), Some(0x0b)]);
        let resp = |x| {
            let mut p = data(MsgOp::Send, x);
            p.kind = PktKind::ReadResp;
            op(p)
        };
        let r: Vec<_> = [f, m, l, o].map(resp).into();
        assert_eq!(r, [Some(0x0d), Some(0x0e), Some(0x0f), Some(0x10)]);
        let ctl = |k| op(Packet::control(k, 0, 1, 86));
        assert_eq!(ctl(PktKind::ReadReq), Some(0x0c));
        assert_eq!(ctl(PktKind::Ack), Some(0x11));
        assert_eq!(ctl(PktKind::Nak), Some(0x11));
        assert_eq!(ctl(PktKind::Cnp), Some(0x81));
        assert_eq!(ctl(PktKind::Pause), None);
        assert_eq!(ctl(PktKind::Resume), None);
    }

    #[test]
    fn extension_headers_follow_the_kind() {
        let mut p = data(MsgOp::WriteImm, F_FIRST);
        p.remote_addr = 0x1000;
        p.rkey = 0x77;
        p.msg_len = 5000;
        p.imm = 0xdead_beef;
        p.psn = 42;
        p.dst_qpn = 0x101;
        let t = transport(&p, 1, 4).unwrap();
        let reth = Reth {
            va: 0x1000,
            rkey: 0x77,
            len: 5000,
        };
        assert_eq!(t.reth, Some(reth));
        assert_eq!((t.imm, t.aeth, t.ack_req), (None, None, false));
        assert_eq!((t.dqpn, t.psn), (0x101, 42));
        p.flags = F_LAST;
        let t = transport(&p, 1, 4).unwrap();
        assert_eq!((t.reth, t.imm, t.ack_req), (None, Some(0xdead_beef), true));
        // With an ACK per packet, every data packet asks for one.
        p.flags = 0;
        assert!(transport(&p, 1, 1).unwrap().ack_req);
        assert!(!transport(&p, 1, 2).unwrap().ack_req);
        // A SEND never carries a RETH.
        let t = transport(&data(MsgOp::Send, F_FIRST | F_LAST), 1, 1).unwrap();
        assert_eq!((t.reth, t.imm), (None, None));
        // READ request: RETH with the bytes to read.
        let mut q = Packet::control(PktKind::ReadReq, 0, 1, 98);
        q.remote_addr = 0x2000;
        q.rkey = 9;
        q.msg_len = 8192;
        let t = transport(&q, 1, 1).unwrap();
        assert_eq!(
            t.reth,
            Some(Reth {
                va: 0x2000,
                rkey: 9,
                len: 8192
            })
        );
        assert!(t.ack_req);
        // READ responses: AETH on first and last, not in the middle.
        let mut r = Packet::control(PktKind::ReadResp, 1, 0, 100);
        for (flags, aeth) in [(F_FIRST, true), (0, false), (F_LAST, true)] {
            r.flags = flags;
            assert_eq!(transport(&r, 1, 1).unwrap().aeth.is_some(), aeth);
        }
        // CNP: BECN, PSN 0, 16 reserved bytes.
        let mut c = Packet::control(PktKind::Cnp, 1, 0, 98);
        c.psn = 5;
        let t = transport(&c, 1, 1).unwrap();
        assert_eq!((t.becn, t.psn, t.reserved), (true, 0, 16));
    }

    #[test]
    fn aeth_syndromes() {
        let mut p = Packet::control(PktKind::Ack, 1, 0, 86);
        assert_eq!(syndrome(&p, 12), 0x1f);
        p.kind = PktKind::Nak;
        p.nak = NakCode::Rnr;
        assert_eq!(syndrome(&p, 12), 0x2c);
        p.nak = NakCode::SeqErr;
        assert_eq!(syndrome(&p, 12), 0x60);
        p.nak = NakCode::InvReq;
        assert_eq!(syndrome(&p, 12), 0x61);
        p.nak = NakCode::RemAccess;
        assert_eq!(syndrome(&p, 12), 0x62);
        assert_eq!(transport(&p, 12, 1).unwrap().aeth, Some((0x62, 0)));
    }

    #[test]
    fn ecn_and_addresses() {
        let mut p = data(MsgOp::Write, F_FIRST);
        assert_eq!(ecn(&p), 2);
        p.flags |= F_CE | F_CORRUPT;
        assert_eq!(ecn(&p), 3);
        assert_eq!(ecn(&Packet::control(PktKind::Ack, 0, 1, 86)), 0);
        assert_eq!(ecn(&Packet::control(PktKind::ReadReq, 0, 1, 98)), 0);
        assert_eq!(ecn(&Packet::control(PktKind::Cnp, 0, 1, 98)), 1);
        assert_eq!(host_ipv4(0), [10, 0, 0, 1]);
        assert_eq!(host_ipv4(255), [10, 0, 1, 0]);
        assert_eq!(host_ipv4(0x12_3456), [10, 0x12, 0x34, 0x57]);
        assert_eq!(host_mac(0x0102_0304), [2, 0, 1, 2, 3, 4]);
        assert_eq!(switch_port_mac(7), [2, 1, 0, 0, 0, 7]);
        let a = addressing(&Packet::control(PktKind::Cnp, 3, 4, 98), [1; 6], [2; 6]);
        assert_eq!(
            (a.dscp, a.src_ip, a.dst_ip),
            (CNP_DSCP, [10, 0, 0, 4], [10, 0, 0, 5])
        );
        // UDP source ports stay in the dynamic range and differ between QP pairs.
        let ports: std::collections::BTreeSet<u16> =
            (0x100..0x200).map(|q| udp_source_port(q, 0x100)).collect();
        assert!(ports.iter().all(|&p| p >= 0xc000));
        assert!(ports.len() > 200, "{} distinct ports", ports.len());
    }
}
