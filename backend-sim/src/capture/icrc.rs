//! The invariant CRC of a RoCEv2 packet (IBA Vol. 1 §7.8.1 and RoCEv2 Annex A17.4.3).
//!
//! The ICRC is the IEEE 802.3 CRC-32 (polynomial 0x04C11DB7, reflected, initial value and
//! final XOR 0xFFFF_FFFF; [`crc32fast`]) over, in order:
//! 1. eight bytes of 0xFF standing in for the InfiniBand LRH, which RoCEv2 does not carry;
//! 2. the IPv4 header with the fields that routers change masked to ones: the TOS byte
//!    (DSCP and ECN), the TTL and the header checksum;
//! 3. the UDP header with its checksum masked to ones;
//! 4. the BTH with its `resv8a` byte (which holds the FECN/BECN bits) masked to ones;
//! 5. everything after the BTH up to the ICRC: extension headers, payload and pad.
//!
//! The result goes after the packet least significant byte first (what a Linux rxe device
//! sends; see the frames of `tests/fixtures/rxe-frames.txt`).

/// Bytes of the Ethernet II header before the IPv4 header.
pub const ETH_HEADER: usize = 14;
/// Bytes of an IPv4 header without options.
pub const IPV4_HEADER: usize = 20;
/// Bytes of the UDP header.
pub const UDP_HEADER: usize = 8;
/// Bytes of the Base Transport Header (IBA §9.2).
pub const BTH: usize = 12;
/// Bytes of the ICRC.
pub const ICRC: usize = 4;

/// The ICRC of the RoCEv2 packet `ip` (from the first byte of the IPv4 header up to, not
/// including, the ICRC; IPv4 without options). `None` when `ip` is too short to hold the
/// IPv4, UDP and BT headers.
pub(crate) fn icrc(ip: &[u8]) -> Option<u32> {
    let hdr = IPV4_HEADER + UDP_HEADER + BTH;
    if ip.len() < hdr {
        return None;
    }
    let mut masked = [0u8; IPV4_HEADER + UDP_HEADER + BTH];
    masked.copy_from_slice(&ip[..hdr]);
    masked[1] = 0xff; // TOS: DSCP and ECN
    masked[8] = 0xff; // TTL
    masked[10..12].fill(0xff); // IPv4 header checksum
    masked[IPV4_HEADER + 6..IPV4_HEADER + 8].fill(0xff); // UDP checksum
    masked[IPV4_HEADER + UDP_HEADER + 4] = 0xff; // BTH resv8a (FECN, BECN)
    let mut h = crc32fast::Hasher::new();
    h.update(&[0xff; 8]);
    h.update(&masked);
    h.update(&ip[hdr..]);
    Some(h.finalize())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The frames of `tests/fixtures/rxe-frames.txt`: `(frame number, BTH opcode, bytes)`.
    pub(crate) fn rxe_frames() -> Vec<(u32, u8, Vec<u8>)> {
        include_str!("../../tests/fixtures/rxe-frames.txt")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut it = l.split_whitespace();
                let n = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("frame number");
                let op = it.next().and_then(|s| s.parse().ok()).expect("opcode");
                let hex = it.next().expect("hex");
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex byte"))
                    .collect();
                (n, op, bytes)
            })
            .collect()
    }

    #[test]
    fn icrc_matches_the_rxe_frames() {
        let frames = rxe_frames();
        assert_eq!(frames.len(), 3);
        for (n, op, f) in frames {
            assert_eq!(f[ETH_HEADER + IPV4_HEADER + UDP_HEADER], op, "frame {n}");
            let end = f.len() - ICRC;
            let want = u32::from_le_bytes(f[end..].try_into().expect("4 bytes"));
            assert_eq!(icrc(&f[ETH_HEADER..end]), Some(want), "frame {n}");
        }
    }

    #[test]
    fn masked_fields_do_not_change_the_icrc() {
        let (_, _, f) = rxe_frames().swap_remove(1);
        let end = f.len() - ICRC;
        let base = icrc(&f[ETH_HEADER..end]);
        let mut g = f.clone();
        g[ETH_HEADER + 1] = 0x03; // CE
        g[ETH_HEADER + 8] = 1; // TTL
        g[ETH_HEADER + 10] ^= 0x5a;
        g[ETH_HEADER + IPV4_HEADER + 6] = 0x12;
        g[ETH_HEADER + IPV4_HEADER + UDP_HEADER + 4] = 0x40; // BECN
        assert_eq!(icrc(&g[ETH_HEADER..end]), base);
        // An unmasked byte (the PSN's low byte) does change it.
        g[ETH_HEADER + IPV4_HEADER + UDP_HEADER + 11] ^= 1;
        assert_ne!(icrc(&g[ETH_HEADER..end]), base);
        assert_eq!(icrc(&f[ETH_HEADER..ETH_HEADER + 39]), None);
    }
}
