//! RoCEv2 and PFC frames as bytes: Ethernet II, IPv4, UDP, the InfiniBand transport headers
//! (IBA Vol. 1 §9.2–§9.3), the ICRC (RoCEv2 Annex A17.4.3), and IEEE 802.1Qbb PFC frames.

use super::icrc::{icrc, BTH, ETH_HEADER, ICRC, IPV4_HEADER, UDP_HEADER};

/// The UDP destination port of RoCEv2 (IANA; RoCEv2 Annex A17.4.2).
pub const ROCEV2_PORT: u16 = 4791;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of MAC control frames (IEEE 802.3 Annex 31B).
const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// MAC control opcode of a priority-based flow control frame (IEEE 802.1Qbb §36.1.3).
const PFC_OPCODE: u16 = 0x0101;
/// Destination MAC of MAC control frames (IEEE 802.3 Annex 31B.1).
pub(crate) const PFC_DEST_MAC: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// The shortest Ethernet frame without FCS; shorter frames are padded with zeros.
const MIN_FRAME: usize = 60;
/// The default P_Key (IBA §10.9.1.2), the one RoCE devices use.
const P_KEY: u16 = 0xffff;
/// The IPv4 TTL of every packet.
const TTL: u8 = 64;
/// IPv4 protocol number of UDP.
const IPPROTO_UDP: u8 = 17;
/// The IPv4 flags and fragment offset: Don't Fragment, offset 0.
const IPV4_DF: u16 = 0x4000;

/// Who sends a packet to whom, and the IPv4 fields that are not the packet's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Addressing {
    /// Ethernet destination.
    pub dst_mac: [u8; 6],
    /// Ethernet source.
    pub src_mac: [u8; 6],
    /// IPv4 source.
    pub src_ip: [u8; 4],
    /// IPv4 destination.
    pub dst_ip: [u8; 4],
    /// UDP source port (the flow's entropy, RoCEv2 Annex A17.4.2).
    pub udp_src: u16,
    /// IPv4 identification.
    pub ip_id: u16,
    /// IPv4 DSCP (6 bits).
    pub dscp: u8,
    /// IPv4 ECN field (2 bits): 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE (RFC 3168 §5).
    pub ecn: u8,
}

/// The RDMA Extended Transport Header (IBA §9.3.3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reth {
    /// Virtual address.
    pub va: u64,
    /// R_Key.
    pub rkey: u32,
    /// DMA length, bytes.
    pub len: u32,
}

/// The InfiniBand transport headers of one packet: BTH fields and the extension headers
/// that follow it, in the order of IBA §9.2 (RETH, AETH, ImmDt), then `reserved` zero bytes
/// (a CNP's 16, RoCEv2 Annex A17.9.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Transport {
    /// BTH opcode (IBA Table 38; 0x81 for a CNP).
    pub opcode: u8,
    /// BTH BECN bit (in the `resv8a` byte; set on CNPs).
    pub becn: bool,
    /// Destination QPN (24 bits).
    pub dqpn: u32,
    /// BTH AckReq bit.
    pub ack_req: bool,
    /// PSN (24 bits).
    pub psn: u32,
    /// RETH.
    pub reth: Option<Reth>,
    /// AETH: `(syndrome, MSN)` (IBA §9.3.3.6).
    pub aeth: Option<(u8, u32)>,
    /// Immediate data (ImmDt, IBA §9.3.3.5), written big-endian.
    pub imm: Option<u32>,
    /// Zero bytes after the extension headers (a CNP's reserved field).
    pub reserved: usize,
}

/// The ones' complement sum of `bytes` as 16-bit big-endian words (RFC 1071).
fn ipv4_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Append the RoCEv2 frame of `t` from `a` to `out`: Ethernet II, IPv4 (no options, TTL 64,
/// DF), UDP to port 4791 with checksum 0 (RoCEv2 Annex A17.4.2 allows it), the BTH with
/// P_Key 0xFFFF and transport header version 0, the extension headers, `payload` then
/// zeros up to `payload_len` bytes, the pad to a multiple of 4 bytes (its count in the BTH),
/// the ICRC, and zero padding to the 60-byte minimum frame. Returns the frame's length.
pub(crate) fn roce_frame(
    out: &mut Vec<u8>,
    a: &Addressing,
    t: &Transport,
    payload: &[u8],
    payload_len: usize,
) -> usize {
    let start = out.len();
    let pad = (4 - payload_len % 4) % 4;
    let ext = t.reth.map_or(0, |_| 16) + t.aeth.map_or(0, |_| 4) + t.imm.map_or(0, |_| 4);
    let udp_len = UDP_HEADER + BTH + ext + t.reserved + payload_len + pad + ICRC;
    let ip_len = IPV4_HEADER + udp_len;
    out.extend_from_slice(&a.dst_mac);
    out.extend_from_slice(&a.src_mac);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip = out.len();
    debug_assert_eq!(ip - start, ETH_HEADER);
    out.push(0x45);
    out.push(a.dscp << 2 | (a.ecn & 3));
    out.extend_from_slice(&(ip_len as u16).to_be_bytes());
    out.extend_from_slice(&a.ip_id.to_be_bytes());
    out.extend_from_slice(&IPV4_DF.to_be_bytes());
    out.push(TTL);
    out.push(IPPROTO_UDP);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&a.src_ip);
    out.extend_from_slice(&a.dst_ip);
    let sum = ipv4_checksum(&out[ip..ip + IPV4_HEADER]);
    out[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&a.udp_src.to_be_bytes());
    out.extend_from_slice(&ROCEV2_PORT.to_be_bytes());
    out.extend_from_slice(&(udp_len as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.push(t.opcode);
    out.push((pad as u8) << 4);
    out.extend_from_slice(&P_KEY.to_be_bytes());
    out.push(if t.becn { 0x40 } else { 0 });
    out.extend_from_slice(&t.dqpn.to_be_bytes()[1..]);
    out.push(if t.ack_req { 0x80 } else { 0 });
    out.extend_from_slice(&t.psn.to_be_bytes()[1..]);
    if let Some(r) = t.reth {
        out.extend_from_slice(&r.va.to_be_bytes());
        out.extend_from_slice(&r.rkey.to_be_bytes());
        out.extend_from_slice(&r.len.to_be_bytes());
    }
    if let Some((syndrome, msn)) = t.aeth {
        out.push(syndrome);
        out.extend_from_slice(&msn.to_be_bytes()[1..]);
    }
    if let Some(imm) = t.imm {
        out.extend_from_slice(&imm.to_be_bytes());
    }
    let given = payload.len().min(payload_len);
    out.extend_from_slice(&payload[..given]);
    out.resize(out.len() + t.reserved + (payload_len - given) + pad, 0);
    let crc = icrc(&out[ip..]).unwrap_or(0);
    out.extend_from_slice(&crc.to_le_bytes());
    if out.len() - start < MIN_FRAME {
        out.resize(start + MIN_FRAME, 0);
    }
    out.len() - start
}

/// Append an IEEE 802.1Qbb PFC frame from `src_mac` to `out`: destination
/// 01:80:C2:00:00:01, EtherType 0x8808, opcode 0x0101, the class-enable vector with the bit
/// of `priority`, eight pause times (in quanta of 512 bit times) of which `priority`'s is
/// `quanta` (0 = XON), zero padding to 60 bytes. Returns the frame's length.
pub(crate) fn pfc_frame(out: &mut Vec<u8>, src_mac: [u8; 6], priority: u8, quanta: u16) -> usize {
    let start = out.len();
    out.extend_from_slice(&PFC_DEST_MAC);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&ETHERTYPE_MAC_CONTROL.to_be_bytes());
    out.extend_from_slice(&PFC_OPCODE.to_be_bytes());
    out.extend_from_slice(&(1u16 << (priority & 7)).to_be_bytes());
    for p in 0..8u8 {
        let q = if p == priority & 7 { quanta } else { 0 };
        out.extend_from_slice(&q.to_be_bytes());
    }
    out.resize(start + MIN_FRAME, 0);
    MIN_FRAME
}

#[cfg(test)]
mod tests {
    use super::super::icrc::tests::rxe_frames;
    use super::*;

    /// The addressing of an rxe frame, read back from it.
    fn addressing_of(f: &[u8]) -> Addressing {
        let ip = &f[ETH_HEADER..];
        Addressing {
            dst_mac: f[0..6].try_into().unwrap(),
            src_mac: f[6..12].try_into().unwrap(),
            src_ip: ip[12..16].try_into().unwrap(),
            dst_ip: ip[16..20].try_into().unwrap(),
            udp_src: u16::from_be_bytes([ip[20], ip[21]]),
            ip_id: u16::from_be_bytes([ip[4], ip[5]]),
            dscp: ip[1] >> 2,
            ecn: ip[1] & 3,
        }
    }

    fn bth_start() -> usize {
        ETH_HEADER + IPV4_HEADER + UDP_HEADER
    }

    #[test]
    fn send_only_imm_is_the_rxe_frame_byte_for_byte() {
        let (_, _, f) = rxe_frames().swap_remove(0);
        let b = bth_start();
        let t = Transport {
            opcode: 0x05,
            becn: false,
            dqpn: 0x16,
            ack_req: true,
            psn: 0xe3_3661,
            reth: None,
            aeth: None,
            imm: Some(0),
            reserved: 0,
        };
        let payload = &f[b + 16..f.len() - ICRC];
        let mut out = Vec::new();
        let n = roce_frame(&mut out, &addressing_of(&f), &t, payload, payload.len());
        assert_eq!(n, f.len());
        assert_eq!(out, f);
    }

    #[test]
    fn ack_is_the_rxe_frame_byte_for_byte() {
        let (_, _, f) = rxe_frames().swap_remove(1);
        let t = Transport {
            opcode: 0x11,
            becn: false,
            dqpn: 0x16,
            ack_req: false,
            psn: 0xe3_3661,
            reth: None,
            aeth: Some((0x1f, 1)),
            imm: None,
            reserved: 0,
        };
        let mut out = Vec::new();
        roce_frame(&mut out, &addressing_of(&f), &t, &[], 0);
        assert_eq!(out, f);
    }

    #[test]
    fn write_last_imm_with_pad_is_the_rxe_frame_byte_for_byte() {
        let (_, _, f) = rxe_frames().swap_remove(2);
        let b = bth_start();
        assert_eq!(f[b + 1] >> 4, 1, "the vector has one pad byte");
        let t = Transport {
            opcode: 0x09,
            becn: false,
            dqpn: 0x1a,
            ack_req: true,
            psn: 0x3a_6907,
            reth: None,
            aeth: None,
            imm: Some(u32::from_be_bytes(f[b + 12..b + 16].try_into().unwrap())),
            reserved: 0,
        };
        // 23 payload bytes, then the pad byte and the ICRC.
        let payload = &f[b + 16..f.len() - ICRC - 1];
        assert_eq!(payload.len(), 23);
        let mut out = Vec::new();
        roce_frame(&mut out, &addressing_of(&f), &t, payload, payload.len());
        assert_eq!(out, f);
    }

    #[test]
    fn reth_and_zero_payload_and_minimum_frame() {
        let a = Addressing {
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_mac: [2, 0, 0, 0, 0, 1],
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            udp_src: 0xc000,
            ip_id: 0,
            dscp: 26,
            ecn: 2,
        };
        let t = Transport {
            opcode: 0x0c,
            becn: false,
            dqpn: 0x101,
            ack_req: true,
            psn: 7,
            reth: Some(Reth {
                va: 0x1122_3344_5566_7788,
                rkey: 0xaabb_ccdd,
                len: 4096,
            }),
            aeth: None,
            imm: None,
            reserved: 0,
        };
        let mut out = Vec::new();
        let n = roce_frame(&mut out, &a, &t, &[], 0);
        assert_eq!(n, 14 + 20 + 8 + 12 + 16 + 4);
        let b = bth_start();
        assert_eq!(out[ETH_HEADER + 1], 26 << 2 | 2);
        assert_eq!(
            &out[b + 12..b + 28],
            &[
                0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0x10,
                0
            ]
        );
        // The IPv4 checksum verifies: the sum over the header with it is 0xFFFF.
        assert_eq!(ipv4_checksum(&out[ETH_HEADER..ETH_HEADER + 20]), 0);
        // A SEND only with no payload is 58 bytes of headers, padded to 60.
        let t = Transport {
            opcode: 0x04,
            reth: None,
            ..t
        };
        out.clear();
        assert_eq!(roce_frame(&mut out, &a, &t, &[], 0), 60);
        assert_eq!(u16::from_be_bytes([out[16], out[17]]), 20 + 8 + 12 + 4);
        assert_eq!(&out[58..], &[0, 0]);
        let crc = u32::from_le_bytes(out[54..58].try_into().unwrap());
        assert_eq!(icrc(&out[ETH_HEADER..54]), Some(crc));
    }

    #[test]
    fn payload_shorter_than_its_length_is_zero_filled() {
        let a = Addressing {
            dst_mac: [0; 6],
            src_mac: [0; 6],
            src_ip: [0; 4],
            dst_ip: [0; 4],
            udp_src: 0,
            ip_id: 0,
            dscp: 0,
            ecn: 0,
        };
        let t = Transport {
            opcode: 0x04,
            becn: false,
            dqpn: 1,
            ack_req: false,
            psn: 0,
            reth: None,
            aeth: None,
            imm: None,
            reserved: 0,
        };
        let mut out = Vec::new();
        let n = roce_frame(&mut out, &a, &t, &[9, 9], 6);
        let b = bth_start() + BTH;
        assert_eq!(n, b + 6 + 2 + ICRC);
        assert_eq!(&out[b..b + 8], &[9, 9, 0, 0, 0, 0, 0, 0]);
        assert_eq!(out[bth_start() + 1] >> 4, 2);
    }

    #[test]
    fn pfc_frame_layout() {
        let mut out = Vec::new();
        assert_eq!(pfc_frame(&mut out, [2, 1, 0, 0, 0, 5], 3, 0xffff), 60);
        assert_eq!(&out[0..6], &PFC_DEST_MAC);
        assert_eq!(&out[6..12], &[2, 1, 0, 0, 0, 5]);
        assert_eq!(&out[12..18], &[0x88, 0x08, 0x01, 0x01, 0x00, 0x08]);
        let quanta: Vec<u16> = out[18..34]
            .chunks(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(quanta, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
        assert!(out[34..].iter().all(|&b| b == 0));
    }
}
