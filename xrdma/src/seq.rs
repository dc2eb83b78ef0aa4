//! Fragment sequence numbers: 32-bit, carried in RDMA immediate data, compared with serial
//! number arithmetic (RFC 1982 §3.2) so that `0xFFFF_FFFF` is followed by `0`.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

/// A 32-bit fragment sequence number.
///
/// Ordering follows RFC 1982 with `SERIAL_BITS = 32`: `a < b` when `b − a (mod 2^32)` lies in
/// `1..2^31`. Two numbers exactly `2^31` apart are unordered ([`Seq::serial_cmp`] returns
/// `None`); the core never has that many fragments outstanding, so it never compares such pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Seq(pub u32);

impl Seq {
    /// The next sequence number (wraps from `u32::MAX` to 0).
    pub const fn next(self) -> Seq {
        Seq(self.0.wrapping_add(1))
    }

    /// `self + n`, wrapping.
    pub const fn add(self, n: u32) -> Seq {
        Seq(self.0.wrapping_add(n))
    }

    /// How many steps forward `later` is from `self`: `later − self (mod 2^32)`.
    pub const fn distance_to(self, later: Seq) -> u32 {
        later.0.wrapping_sub(self.0)
    }

    /// Serial-number comparison (RFC 1982 §3.2); `None` when the two are exactly 2^31 apart.
    pub fn serial_cmp(self, other: Seq) -> Option<Ordering> {
        let d = other.0.wrapping_sub(self.0);
        match d {
            0 => Some(Ordering::Equal),
            d if d < 0x8000_0000 => Some(Ordering::Less),
            0x8000_0000 => None,
            _ => Some(Ordering::Greater),
        }
    }

    /// `self` is at or before `other` in serial order.
    pub fn serial_le(self, other: Seq) -> bool {
        matches!(
            self.serial_cmp(other),
            Some(Ordering::Less | Ordering::Equal)
        )
    }

    /// The immediate-data word for this sequence number: host order for
    /// [`crate::SendWr::imm`]; the backend converts it to big-endian on the wire.
    pub const fn to_imm(self) -> u32 {
        self.0
    }

    /// The bytes of the immediate data as they travel on the wire (big-endian, IB Spec 9.4.3).
    pub const fn to_wire(self) -> [u8; 4] {
        self.0.to_be_bytes()
    }

    /// Parse immediate-data bytes as they travel on the wire.
    pub const fn from_wire(bytes: [u8; 4]) -> Seq {
        Seq(u32::from_be_bytes(bytes))
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wrap_at_u32_max_is_next() {
        let last = Seq(0xFFFF_FFFF);
        assert_eq!(last.next(), Seq(0));
        assert_eq!(last.serial_cmp(Seq(0)), Some(Ordering::Less));
        assert_eq!(Seq(0).serial_cmp(last), Some(Ordering::Greater));
        assert!(last.serial_le(Seq(5)));
        assert!(!Seq(5).serial_le(last));
        assert_eq!(last.distance_to(Seq(1)), 2);
    }

    #[test]
    fn half_range_apart_is_unordered() {
        assert_eq!(Seq(0).serial_cmp(Seq(0x8000_0000)), None);
        assert_eq!(Seq(0).serial_cmp(Seq(0x7FFF_FFFF)), Some(Ordering::Less));
    }

    #[test]
    fn wire_is_big_endian() {
        assert_eq!(Seq(0x0102_0304).to_wire(), [1, 2, 3, 4]);
        assert_eq!(Seq::from_wire([0xFF, 0xFF, 0xFF, 0xFE]), Seq(0xFFFF_FFFE));
    }

    proptest! {
        #[test]
        fn forward_steps_are_later(start: u32, n in 1u32..0x8000_0000) {
            let a = Seq(start);
            let b = a.add(n);
            prop_assert_eq!(a.serial_cmp(b), Some(Ordering::Less));
            prop_assert_eq!(a.distance_to(b), n);
        }
    }
}
