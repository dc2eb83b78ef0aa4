//! Message fragmentation and the frame header.
//!
//! A large message (above [`crate::Config::eager_limit`]) moves by rendezvous: its payload is
//! RDMA WRITTEN into a landing buffer the receiver granted, in fragments of at most the
//! fragment size (64 KiB by default, XRDMA's flow-control unit) plus one shorter tail, each
//! fragment one RDMA WRITE with immediate. Small messages, and the rendezvous control frames
//! (request to send, clear to send, close), travel as SENDs into pre-posted receive buffers,
//! each starting with a [`MessageHeader`].

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

/// What a SEND carries (bits 8..16 of the header's flags word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// A whole small message: the header, then `message_len` payload bytes.
    Eager,
    /// Request to send: `message_len` (1 to [`MAX_BATCH`]) large messages wait for landing
    /// buffers; each one's tag and length follow the header, 4 bytes each (big-endian),
    /// oldest first.
    Rts,
    /// Clear to send: `message_len` (1 to [`MAX_BATCH`]) [`Grant`]s follow the header,
    /// answering the oldest unanswered announced messages in order.
    Cts,
    /// The sender has sent its last frame on this connection (graceful close).
    Fin,
}

impl FrameKind {
    fn code(self) -> u32 {
        match self {
            FrameKind::Eager => 0,
            FrameKind::Rts => 1,
            FrameKind::Cts => 2,
            FrameKind::Fin => 3,
        }
    }

    fn from_code(c: u32) -> Option<Self> {
        Some(match c {
            0 => FrameKind::Eager,
            1 => FrameKind::Rts,
            2 => FrameKind::Cts,
            3 => FrameKind::Fin,
            _ => return None,
        })
    }
}

/// The 16-byte header at the start of every SEND that carries a frame (zero-length SENDs are
/// pure ACKs and carry none).
///
/// Layout (big-endian): bytes 0..4 the message's tag (an application's correlation id,
/// [`crate::Endpoint::send_tagged`]; 0 on control frames), bytes 4..8 the message length
/// (below 2^32: [`crate::MAX_MESSAGE_SIZE`] is 2^31); bytes 8..12 a cumulative ACK of the
/// other direction (the newest in-order sequence number received), valid when bit 0 of bytes
/// 12..16 is set; bit 1 of bytes 12..16 asks for an immediate ACK ([`MessageHeader::ack_req`]);
/// bits 8..16 of bytes 12..16 the [`FrameKind`]. Carrying the ACK on a frame
/// saves the separate ACK SEND whenever a reply is ready when the request arrives
/// (request/response, ping-pong).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageHeader {
    /// What the frame is.
    pub kind: FrameKind,
    /// Length of the whole message, bytes (0 for [`FrameKind::Fin`]); below 2^32, the low
    /// 32 bits are what travels.
    pub message_len: u64,
    /// The message's tag (0 when the application gave none, and on control frames).
    pub tag: u32,
    /// The sender asks for an immediate ACK (IB's AckReq bit, BTH): it cannot post more
    /// until this frame is ACKed, so a receiver that delays its ACKs
    /// ([`crate::Config::ack_delay`]) must not hold this one.
    pub ack_req: bool,
    /// A piggybacked cumulative ACK of the reverse direction.
    pub ack: Option<crate::Seq>,
}

const ACK_VALID: u32 = 1;
const ACK_REQ: u32 = 1 << 1;
const KIND_SHIFT: u32 = 8;

impl MessageHeader {
    /// Encode to the wire layout.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(&self.tag.to_be_bytes());
        b[4..8].copy_from_slice(&(self.message_len as u32).to_be_bytes());
        let mut flags = self.kind.code() << KIND_SHIFT;
        if let Some(ack) = self.ack {
            b[8..12].copy_from_slice(&ack.to_wire());
            flags |= ACK_VALID;
        }
        if self.ack_req {
            flags |= ACK_REQ;
        }
        b[12..].copy_from_slice(&flags.to_be_bytes());
        b
    }

    /// Decode from the wire layout; `None` when fewer than [`HEADER_LEN`] bytes are given or
    /// the kind is unknown.
    pub fn decode(bytes: &[u8]) -> Option<MessageHeader> {
        let t: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
        let m: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
        let a: [u8; 4] = bytes.get(8..12)?.try_into().ok()?;
        let f: [u8; 4] = bytes.get(12..HEADER_LEN)?.try_into().ok()?;
        let flags = u32::from_be_bytes(f);
        let ack = (flags & ACK_VALID != 0).then(|| crate::Seq::from_wire(a));
        Some(MessageHeader {
            kind: FrameKind::from_code((flags >> KIND_SHIFT) & 0xFF)?,
            message_len: u64::from(u32::from_be_bytes(m)),
            tag: u32::from_be_bytes(t),
            ack_req: flags & ACK_REQ != 0,
            ack,
        })
    }
}

/// Most messages one RTS announces, and most grants one CTS carries: a streaming sender's
/// control frames cost one RTS and one CTS per this many large messages.
pub const MAX_BATCH: usize = 16;

/// Bytes of a [`Grant`] on the wire.
pub const GRANT_LEN: usize = 20;

/// The largest body a control frame (RTS, CTS) carries: [`MAX_BATCH`] grants.
pub const CONTROL_BODY_MAX: usize = MAX_BATCH * GRANT_LEN;

/// Where the receiver lets one large message land: an entry of a CTS frame's body. Layout
/// (big-endian): bytes 0..8 the virtual address, bytes 8..12 the remote key, bytes 12..20 the
/// message length it was granted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Virtual address of the landing buffer in the receiver's address space.
    pub addr: u64,
    /// Remote key of the MR that holds it.
    pub rkey: u32,
    /// Length of the message it lands, bytes (the sender checks it against its own).
    pub len: u64,
}

impl Grant {
    /// Encode to the wire layout.
    pub fn encode(&self) -> [u8; GRANT_LEN] {
        let mut b = [0u8; GRANT_LEN];
        b[..8].copy_from_slice(&self.addr.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// Decode from the wire layout; `None` when fewer than [`GRANT_LEN`] bytes are given.
    pub fn decode(bytes: &[u8]) -> Option<Grant> {
        let a: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
        let k: [u8; 4] = bytes.get(8..12)?.try_into().ok()?;
        let l: [u8; 8] = bytes.get(12..GRANT_LEN)?.try_into().ok()?;
        Some(Grant {
            addr: u64::from_be_bytes(a),
            rkey: u32::from_be_bytes(k),
            len: u64::from_be_bytes(l),
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
            kind: FrameKind::Eager,
            message_len: 0x0102,
            ack: None,
            tag: 0x0A0B_0C0D,
            ack_req: false,
        };
        let b = h.encode();
        assert_eq!(b, [10, 11, 12, 13, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(MessageHeader::decode(&b), Some(h));
        assert_eq!(MessageHeader::decode(&b[..15]), None);
        let h = MessageHeader {
            kind: FrameKind::Cts,
            message_len: 3,
            ack: Some(crate::Seq(0xFFFF_FFFF)),
            tag: 0,
            ack_req: true,
        };
        let b = h.encode();
        // flags = kind 2 << 8 | ACK_REQ | ACK_VALID = 0x0000_0203
        assert_eq!(&b[8..], &[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 2, 3]);
        assert_eq!(MessageHeader::decode(&b), Some(h));
    }

    #[test]
    fn unknown_kinds_do_not_decode() {
        let mut b = MessageHeader {
            kind: FrameKind::Fin,
            message_len: 0,
            ack: None,
            tag: 0,
            ack_req: false,
        }
        .encode();
        assert_eq!(b[14], 3);
        b[14] = 4;
        assert_eq!(MessageHeader::decode(&b), None);
    }

    #[test]
    fn grant_round_trip_is_big_endian() {
        let g = Grant {
            addr: 0x0102_0304_0506_0708,
            rkey: 0x0A0B_0C0D,
            len: 0x1122,
        };
        let b = g.encode();
        assert_eq!(
            b,
            [1, 2, 3, 4, 5, 6, 7, 8, 0x0A, 0x0B, 0x0C, 0x0D, 0, 0, 0, 0, 0, 0, 0x11, 0x22]
        );
        assert_eq!(Grant::decode(&b), Some(g));
        assert_eq!(Grant::decode(&b[..19]), None);
    }
}
