//! Message fragmentation and the fragment header.
//!
//! A message larger than the fragment size (64 KiB by default, XRDMA's flow-control unit) is
//! split into fragments of exactly that size plus one shorter tail; a message of 0 bytes is one
//! fragment of 0 bytes, so every message costs at least one fragment and one sequence number.
//! Each fragment travels as one RDMA WRITE with immediate whose payload is a
//! [`FragmentHeader`] followed by the fragment's bytes.

/// Bytes of [`FragmentHeader`] on the wire.
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

/// The 16-byte header in front of every fragment's payload.
///
/// Layout (big-endian): bytes 0..8 the message length, bytes 8..16 the offset of this
/// fragment's first byte within the message. The fragment's own length is the RDMA WRITE's
/// length less [`HEADER_LEN`]. The sequence number is not here: it is the immediate data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragmentHeader {
    /// Length of the whole message, bytes.
    pub message_len: u64,
    /// Offset of this fragment within the message, bytes.
    pub offset: u64,
}

impl FragmentHeader {
    /// Encode to the wire layout.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&self.message_len.to_be_bytes());
        b[8..].copy_from_slice(&self.offset.to_be_bytes());
        b
    }

    /// Decode from the wire layout; `None` when fewer than [`HEADER_LEN`] bytes are given.
    pub fn decode(bytes: &[u8]) -> Option<FragmentHeader> {
        let m: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
        let o: [u8; 8] = bytes.get(8..HEADER_LEN)?.try_into().ok()?;
        Some(FragmentHeader {
            message_len: u64::from_be_bytes(m),
            offset: u64::from_be_bytes(o),
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
        let h = FragmentHeader {
            message_len: 0x0102,
            offset: 0x0304,
        };
        let b = h.encode();
        assert_eq!(&b[6..8], &[1, 2]);
        assert_eq!(&b[14..16], &[3, 4]);
        assert_eq!(FragmentHeader::decode(&b), Some(h));
        assert_eq!(FragmentHeader::decode(&b[..15]), None);
    }
}
