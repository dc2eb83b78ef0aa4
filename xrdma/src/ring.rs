//! The per-connection staging ring.
//!
//! The sender copies each frame and fragment into its connection's registered staging ring
//! before posting it, at the cursor, or at offset 0 when it would run past the end. It frees
//! space in FIFO order when the receiver's ACK arrives, so a buffer is never reused while the
//! NIC may still read it (send and receive windows kept in step).

/// Placement of one fragment in the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Offset of the fragment's first byte from the ring's start.
    pub offset: u64,
    /// Bytes the slot occupies, including bytes skipped at the ring's end before wrapping.
    pub footprint: u64,
}

/// The placement rule: the cursor, or 0 when `len` does not fit before
/// the end. Returns the slot and the new cursor.
pub fn place(cursor: u64, len: u64, ring_len: u64) -> (Slot, u64) {
    if cursor + len > ring_len {
        let skipped = ring_len - cursor;
        (
            Slot {
                offset: 0,
                footprint: skipped + len,
            },
            len,
        )
    } else {
        (
            Slot {
                offset: cursor,
                footprint: len,
            },
            cursor + len,
        )
    }
}

/// The sender's staging ring: which bytes are still waiting for an ACK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendRing {
    len: u64,
    cursor: u64,
    used: u64,
}

impl SendRing {
    /// An empty ring of `len` bytes.
    pub fn new(len: u64) -> Self {
        SendRing {
            len,
            cursor: 0,
            used: 0,
        }
    }

    /// Bytes currently held (ACK pending), including skipped tails.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Reserve `len` bytes; `None` when they do not fit now (wait for ACKs).
    pub fn alloc(&mut self, len: u64) -> Option<Slot> {
        if len > self.len {
            return None;
        }
        let (slot, cursor) = place(self.cursor, len, self.len);
        if self.used + slot.footprint > self.len {
            return None;
        }
        self.cursor = cursor;
        self.used += slot.footprint;
        Some(slot)
    }

    /// Release the oldest slot (FIFO), given its footprint.
    pub fn free(&mut self, footprint: u64) {
        self.used = self.used.saturating_sub(footprint);
    }

    /// Forget everything (connection reclaimed).
    pub fn reset(&mut self) {
        self.cursor = 0;
        self.used = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_mirrors_receiver_rule() {
        let mut r = SendRing::new(100);
        let a = r.alloc(40).unwrap();
        let b = r.alloc(40).unwrap();
        assert_eq!((a.offset, b.offset), (0, 40));
        // 30 more would run past 100: no room until the first slot is freed.
        assert_eq!(r.alloc(30), None);
        r.free(a.footprint);
        let c = r.alloc(30).unwrap();
        assert_eq!(
            c,
            Slot {
                offset: 0,
                footprint: 20 + 30
            }
        );
        // The receiver, knowing only lengths, lands on the same offsets.
        let (s1, k) = place(0, 40, 100);
        let (s2, k) = place(k, 40, 100);
        let (s3, _) = place(k, 30, 100);
        assert_eq!((s1.offset, s2.offset, s3.offset), (0, 40, 0));
    }
}
