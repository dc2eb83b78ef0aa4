//! Integer time in picoseconds.
//!
//! The core never reads a clock: every input carries `now` as a [`Time`]. The simulator counts
//! virtual picoseconds from 0; the verbs backend maps a monotonic clock onto the same scale.
//! A `u64` of picoseconds spans about 213 days.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in time or a span of time, in picoseconds (ps).
///
/// Arithmetic saturates at the ends of the `u64` range instead of wrapping, so a timer far in
/// the future never becomes a timer in the past.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Time(pub u64);

impl Time {
    /// Time zero (the start of a simulation).
    pub const ZERO: Time = Time(0);
    /// The largest representable time; used as "never".
    pub const MAX: Time = Time(u64::MAX);

    /// `ps` picoseconds.
    pub const fn from_ps(ps: u64) -> Time {
        Time(ps)
    }
    /// `ns` nanoseconds (saturating).
    pub const fn from_ns(ns: u64) -> Time {
        Time(ns.saturating_mul(1_000))
    }
    /// `us` microseconds (saturating).
    pub const fn from_us(us: u64) -> Time {
        Time(us.saturating_mul(1_000_000))
    }
    /// `ms` milliseconds (saturating).
    pub const fn from_ms(ms: u64) -> Time {
        Time(ms.saturating_mul(1_000_000_000))
    }
    /// The value in picoseconds.
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// The value in nanoseconds, as a float (for reports).
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// The value in microseconds, as a float (for reports).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// `self - earlier`, or zero when `earlier` is later than `self`.
    pub const fn saturating_sub(self, earlier: Time) -> Time {
        Time(self.0.saturating_sub(earlier.0))
    }
    /// Time to serialize `bytes` bytes at `bits_per_second`, rounded up to whole picoseconds.
    ///
    /// `bits_per_second` must be non-zero; a zero rate returns [`Time::MAX`].
    pub const fn serialization(bytes: u64, bits_per_second: u64) -> Time {
        if bits_per_second == 0 {
            return Time::MAX;
        }
        // bits * 1e12 / rate, in u128 so 2^64 bytes at 1 bit/s cannot overflow the product.
        let num = (bytes as u128) * 8 * 1_000_000_000_000u128;
        let ps = num.div_ceil(bits_per_second as u128);
        if ps > u64::MAX as u128 {
            Time::MAX
        } else {
            Time(ps as u64)
        }
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, rhs: Time) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Time {
    fn add_assign(&mut self, rhs: Time) {
        *self = *self + rhs;
    }
}

impl Sub for Time {
    type Output = Time;
    fn sub(self, rhs: Time) -> Time {
        self.saturating_sub(rhs)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps >= 1_000_000_000_000 {
            write!(f, "{:.3} s", ps as f64 / 1e12)
        } else if ps >= 1_000_000_000 {
            write!(f, "{:.3} ms", ps as f64 / 1e9)
        } else if ps >= 1_000_000 {
            write!(f, "{:.3} us", ps as f64 / 1e6)
        } else if ps >= 1_000 {
            write!(f, "{:.3} ns", ps as f64 / 1e3)
        } else {
            write!(f, "{ps} ps")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_of_one_kib_at_100g() {
        // 1024 B * 8 bit / 100e9 bit/s = 81.92 ns = 81_920 ps exactly.
        assert_eq!(Time::serialization(1024, 100_000_000_000), Time(81_920));
        // 1 B at 3 bit/s = 8/3 s, rounded up to the next picosecond.
        assert_eq!(Time::serialization(1, 3), Time(2_666_666_666_667));
        assert_eq!(Time::serialization(1, 0), Time::MAX);
    }

    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Time::MAX + Time(1), Time::MAX);
        assert_eq!(Time(1) - Time(5), Time::ZERO);
        assert_eq!(Time::from_us(3), Time(3_000_000));
    }
}
