//! Message fragmentation and the fragment header.
//!
//! A message larger than the fragment size (64 KiB by default, XRDMA's flow-control unit) is
//! split into fragments of exactly that size plus one shorter tail; a message of 0 bytes is one
//! fragment of 0 bytes, so every message costs at least one fragment and one sequence number.
//! Each fragment travels as one RDMA WRITE with immediate; a message's first fragment starts
//! with a [`MessageHeader`].

/// Bytes of [`MessageHeader`] on the wire.
pub const HEADER_LEN: usize = 16;

/// Split a message of `len` bytes into fragments of at most `fragment_size` bytes.
///
/// Returns `(offset, length)` pairs in order. `fragment_size` must be non-zero (the config
/// validation guarantees it); a zero `fragment_size` yields one fragment with the whole message.
pub fn fragments(len: u64, fragment_size: u64) -> impl Iterator<Item = (u64, u64)> {
    let count = fragment_count(len, fragment_size);
    let size = if fragment_size == 0 {
        len.max(1)
    } else {
        fragment_size
    };
    (0..count).map(move |i| {
        let off = i * size;
        (off, (len - off).min(size))
    })
}

/// Number of fragments a message of `len` bytes needs: `max(1, ceil(len / fragment_size))`.
pub fn fragment_count(len: u64, fragment_size: u64) -> u64 {
    if len == 0 || fragment_size == 0 {
        1
    } else {
        len.div_ceil(fragment_size)
    }
}

/// The 16-byte header in front of a message's first fragment. Later fragments carry payload
/// only; the receiver knows where a message ends from the length, and the sequence number
/// (the immediate data) orders the fragments.
///
/// Layout (big-endian): bytes 0..8 the message length; bytes 8..12 a cumulative ACK of the
/// other direction (the newest in-order sequence number received), valid when bit 0 of bytes
/// 12..16 is set. Carrying the ACK on data saves the separate ACK SEND whenever a reply is
/// ready when the request arrives (request/response, ping-pong).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageHeader {
    /// Length of the whole message, bytes.
    pub message_len: u64,
    /// A piggybacked cumulative ACK of the reverse direction.
    pub ack: Option<crate::Seq>,
}

const ACK_VALID: u32 = 1;

impl MessageHeader {
    /// Encode to the wire layout.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&self.message_len.to_be_bytes());
        if let Some(ack) = self.ack {
            b[8..12].copy_from_slice(&ack.to_wire());
            b[12..].copy_from_slice(&ACK_VALID.to_be_bytes());
        }
        b
    }

    /// Decode from the wire layout; `None` when fewer than [`HEADER_LEN`] bytes are given.
    pub fn decode(bytes: &[u8]) -> Option<MessageHeader> {
        let m: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
        let a: [u8; 4] = bytes.get(8..12)?.try_into().ok()?;
        let f: [u8; 4] = bytes.get(12..HEADER_LEN)?.try_into().ok()?;
        let ack = (u32::from_be_bytes(f) & ACK_VALID != 0).then(|| crate::Seq::from_wire(a));
        Some(MessageHeader {
            message_len: u64::from_be_bytes(m),
            ack,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: u64 = 65536;

    fn sizes(len: u64) -> Vec<u64> {
        fragments(len, F).map(|(_, l)| l).collect()
    }

    #[test]
    fn fragment_counts_and_sizes_at_the_edges() {
        assert_eq!(sizes(0), vec![0]);
        assert_eq!(sizes(1), vec![1]);
        assert_eq!(sizes(65535), vec![65535]);
        assert_eq!(sizes(65536), vec![65536]);
        assert_eq!(sizes(65537), vec![65536, 1]);
        // 131073 = 2 * 65536 + 1
        assert_eq!(sizes(131073), vec![65536, 65536, 1]);
        // 1 MiB + 1 = 16 * 65536 + 1 -> 16 full fragments and a 1-byte tail.
        let s = sizes(1_048_577);
        assert_eq!(s.len(), 17);
        assert!(s[..16].iter().all(|&l| l == 65536));
        assert_eq!(s[16], 1);
        assert_eq!(fragment_count(1_048_577, F), 17);
    }

    #[test]
    fn offsets_are_contiguous() {
        let v: Vec<_> = fragments(200_000, F).collect();
        assert_eq!(
            v,
            vec![(0, 65536), (65536, 65536), (131072, 65536), (196608, 3392)]
        );
    }

    #[test]
    fn header_round_trip_is_big_endian() {
        let h = MessageHeader {
            message_len: 0x0102,
            ack: None,
        };
        let b = h.encode();
        assert_eq!(b, [0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(MessageHeader::decode(&b), Some(h));
        assert_eq!(MessageHeader::decode(&b[..15]), None);
        let h = MessageHeader {
            message_len: 3,
            ack: Some(crate::Seq(0xFFFF_FFFF)),
        };
        let b = h.encode();
        assert_eq!(&b[8..], &[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1]);
        assert_eq!(MessageHeader::decode(&b), Some(h));
    }
}
