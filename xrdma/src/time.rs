//! Integer time in picoseconds: instants ([`Time`]) and durations ([`Span`]).
//!
//! The core never reads a clock: every input carries `now` as a [`Time`], an instant on one
//! picosecond timeline. The simulator counts virtual picoseconds from 0; the verbs backend maps
//! a monotonic clock onto the same scale. A `u64` of picoseconds spans about 213 days.
//!
//! Two types keep instants and durations apart:
//!
//! - [`Time`], an instant. `Time + Span -> Time`; `Time - Time -> Span`, which **panics** when
//!   the right side is the later instant (a negative duration is an invariant violation, not a
//!   zero). Where an earlier-than-expected argument is legitimately possible, the caller says
//!   so with [`Time::checked_since`] or [`Time::saturating_since`].
//! - [`Span`], a duration: timeouts, RTTs, link delays, serialization times, intervals.
//!   `Span ± Span`, `Span * u64`, `Span / u64`; `Span - Span` panics on underflow
//!   ([`Span::saturating_sub`] is the explicit alternative).
//!
//! Additions saturate at [`Time::MAX`] / [`Span::MAX`], which mean "never" / "no limit": a
//! deadline of `now + Span::MAX` (a disabled timer) stays at [`Time::MAX`] rather than wrapping
//! into the past. There is no `Time + Time`.
//!
//! Both serialize as a plain `u64` of picoseconds (`#[serde(transparent)]`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// An instant on the picosecond timeline (ps since time zero, the start of a simulation or
/// the verbs backend's clock origin).
///
/// `Time + Span` saturates at [`Time::MAX`] ("never"); `Time - Time` is a [`Span`] and panics
/// if the right side is later (see the [module docs](self)).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Time(u64);

/// A duration in picoseconds (ps).
///
/// Sums and products saturate at [`Span::MAX`] ("no limit"); `Span - Span` panics on underflow
/// (see the [module docs](self)).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Span(u64);

impl Time {
    /// Time zero (the start of a simulation).
    pub const ZERO: Time = Time(0);
    /// The latest representable instant; used as "never".
    pub const MAX: Time = Time(u64::MAX);

    /// The instant `ps` picoseconds after time zero (for serialized data and tests; an instant
    /// given as a duration from zero is `Time::ZERO + span`).
    pub const fn from_ps(ps: u64) -> Time {
        Time(ps)
    }
    /// Picoseconds since time zero.
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// `self - earlier`, or `None` when `earlier` is later than `self`.
    pub const fn checked_since(self, earlier: Time) -> Option<Span> {
        match self.0.checked_sub(earlier.0) {
            Some(ps) => Some(Span(ps)),
            None => None,
        }
    }
    /// `self - earlier`, or [`Span::ZERO`] when `earlier` is later than `self`.
    pub const fn saturating_since(self, earlier: Time) -> Span {
        Span(self.0.saturating_sub(earlier.0))
    }
    /// `self + span`, or `None` past [`Time::MAX`] (where `+` would saturate to "never").
    pub const fn checked_add(self, span: Span) -> Option<Time> {
        match self.0.checked_add(span.0) {
            Some(ps) => Some(Time(ps)),
            None => None,
        }
    }
    /// `self - span`, or `None` when that would be before time zero.
    pub const fn checked_sub(self, span: Span) -> Option<Time> {
        match self.0.checked_sub(span.0) {
            Some(ps) => Some(Time(ps)),
            None => None,
        }
    }
}

impl Span {
    /// The empty duration.
    pub const ZERO: Span = Span(0);
    /// The longest representable duration; used as "no limit" (a disabled timeout).
    pub const MAX: Span = Span(u64::MAX);

    /// `ps` picoseconds.
    pub const fn from_ps(ps: u64) -> Span {
        Span(ps)
    }
    /// `ns` nanoseconds (saturating).
    pub const fn from_ns(ns: u64) -> Span {
        Span(ns.saturating_mul(1_000))
    }
    /// `us` microseconds (saturating).
    pub const fn from_us(us: u64) -> Span {
        Span(us.saturating_mul(1_000_000))
    }
    /// `ms` milliseconds (saturating).
    pub const fn from_ms(ms: u64) -> Span {
        Span(ms.saturating_mul(1_000_000_000))
    }
    /// The duration in picoseconds.
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// The duration in nanoseconds, as a float (for reports).
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    /// The duration in microseconds, as a float (for reports).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// `self - other`, or [`Span::ZERO`] when `other` is longer.
    pub const fn saturating_sub(self, other: Span) -> Span {
        Span(self.0.saturating_sub(other.0))
    }
    /// `self - other`, or `None` when `other` is longer.
    pub const fn checked_sub(self, other: Span) -> Option<Span> {
        match self.0.checked_sub(other.0) {
            Some(ps) => Some(Span(ps)),
            None => None,
        }
    }
    /// Time to serialize `bytes` bytes at `bits_per_second`, rounded up to whole picoseconds.
    ///
    /// `bits_per_second` must be non-zero; a zero rate returns [`Span::MAX`].
    pub const fn serialization(bytes: u64, bits_per_second: u64) -> Span {
        if bits_per_second == 0 {
            return Span::MAX;
        }
        // bits * 1e12 / rate, in u128 so 2^64 bytes at 1 bit/s cannot overflow the product.
        let num = (bytes as u128) * 8 * 1_000_000_000_000u128;
        let ps = num.div_ceil(bits_per_second as u128);
        if ps > u64::MAX as u128 {
            Span::MAX
        } else {
            Span(ps as u64)
        }
    }
}

/// A later instant; saturates at [`Time::MAX`] ("never") on purpose, so a deadline of
/// `now + Span::MAX` is a timer that never fires, not one in the past.
impl Add<Span> for Time {
    type Output = Time;
    #[inline]
    fn add(self, rhs: Span) -> Time {
        Time(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign<Span> for Time {
    #[inline]
    fn add_assign(&mut self, rhs: Span) {
        *self = *self + rhs;
    }
}

/// The span from `rhs` to `self`.
///
/// # Panics
///
/// If `rhs` is later than `self`: a negative span is an invariant violation. Use
/// [`Time::checked_since`] or [`Time::saturating_since`] where that order is possible.
impl Sub for Time {
    type Output = Span;
    #[inline]
    #[track_caller]
    fn sub(self, rhs: Time) -> Span {
        match self.checked_since(rhs) {
            Some(s) => s,
            None => panic!("negative span: instant {rhs:?} is later than {self:?}"),
        }
    }
}

/// An earlier instant.
///
/// # Panics
///
/// If the result would be before time zero; [`Time::checked_sub`] is the explicit form.
impl Sub<Span> for Time {
    type Output = Time;
    #[inline]
    #[track_caller]
    fn sub(self, rhs: Span) -> Time {
        match self.checked_sub(rhs) {
            Some(t) => t,
            None => panic!("instant before time zero: {self:?} - {rhs:?}"),
        }
    }
}

/// Saturates at [`Span::MAX`] ("no limit").
impl Add for Span {
    type Output = Span;
    #[inline]
    fn add(self, rhs: Span) -> Span {
        Span(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Span {
    #[inline]
    fn add_assign(&mut self, rhs: Span) {
        *self = *self + rhs;
    }
}

/// # Panics
///
/// If `rhs` is longer than `self`; [`Span::saturating_sub`] is the explicit alternative.
impl Sub for Span {
    type Output = Span;
    #[inline]
    #[track_caller]
    fn sub(self, rhs: Span) -> Span {
        match self.checked_sub(rhs) {
            Some(s) => s,
            None => panic!("negative span: {self:?} - {rhs:?}"),
        }
    }
}

impl SubAssign for Span {
    #[inline]
    #[track_caller]
    fn sub_assign(&mut self, rhs: Span) {
        *self = *self - rhs;
    }
}

/// Saturates at [`Span::MAX`].
impl Mul<u64> for Span {
    type Output = Span;
    #[inline]
    fn mul(self, rhs: u64) -> Span {
        Span(self.0.saturating_mul(rhs))
    }
}

/// Truncates to whole picoseconds.
///
/// # Panics
///
/// If `rhs` is zero.
impl Div<u64> for Span {
    type Output = Span;
    #[inline]
    fn div(self, rhs: u64) -> Span {
        Span(self.0 / rhs)
    }
}

/// `ps` with the largest unit (ps, ns, us, ms, s) that keeps the value at least 1.
fn fmt_ps(ps: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

/// The time since time zero, e.g. `3.000 us`.
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ps(self.0, f)
    }
}

/// E.g. `81.920 ns`.
impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ps(self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_of_one_kib_at_100g() {
        // 1024 B * 8 bit / 100e9 bit/s = 81.92 ns = 81_920 ps exactly.
        assert_eq!(Span::serialization(1024, 100_000_000_000), Span(81_920));
        // 1 B at 3 bit/s = 8/3 s, rounded up to the next picosecond.
        assert_eq!(Span::serialization(1, 3), Span(2_666_666_666_667));
        assert_eq!(Span::serialization(1, 0), Span::MAX);
    }

    #[test]
    fn additions_saturate_at_never() {
        assert_eq!(Time::MAX + Span(1), Time::MAX);
        assert_eq!(Time::from_ps(5) + Span::MAX, Time::MAX);
        let mut t = Time::from_ps(u64::MAX - 1);
        t += Span(10);
        assert_eq!(t, Time::MAX);
        assert_eq!(Span::MAX + Span(1), Span::MAX);
        assert_eq!(Span::MAX * 2, Span::MAX);
        assert_eq!(Span::from_us(3), Span(3_000_000));
        assert_eq!(Span::from_ms(u64::MAX), Span::MAX);
    }

    #[test]
    fn instants_and_spans_combine() {
        let t = Time::ZERO + Span::from_us(3);
        assert_eq!(t, Time::from_ps(3_000_000));
        assert_eq!(t - Time::from_ps(1_000_000), Span::from_us(2));
        assert_eq!(t - t, Span::ZERO);
        assert_eq!(t - Span::from_us(1), Time::from_ps(2_000_000));
        assert_eq!(Span::from_us(3) - Span::from_us(1), Span::from_us(2));
        assert_eq!(Span::from_us(3) * 4, Span::from_us(12));
        assert_eq!(Span::from_us(3) / 4, Span::from_ps(750_000));
        let mut s = Span::from_us(3);
        s -= Span::from_us(1);
        assert_eq!(s, Span::from_us(2));
    }

    #[test]
    fn explicit_forms_do_not_panic() {
        let (early, late) = (Time::from_ps(1), Time::from_ps(5));
        assert_eq!(early.checked_since(late), None);
        assert_eq!(late.checked_since(early), Some(Span(4)));
        assert_eq!(early.saturating_since(late), Span::ZERO);
        assert_eq!(late.saturating_since(early), Span(4));
        assert_eq!(early.checked_sub(Span(2)), None);
        assert_eq!(early.checked_add(Span::MAX), None);
        assert_eq!(early.checked_add(Span(2)), Some(Time::from_ps(3)));
        assert_eq!(late.checked_sub(Span(2)), Some(Time::from_ps(3)));
        assert_eq!(Span(1).saturating_sub(Span(5)), Span::ZERO);
        assert_eq!(Span(1).checked_sub(Span(5)), None);
    }

    #[test]
    #[should_panic(expected = "negative span: instant Time(5) is later than Time(1)")]
    fn a_negative_span_between_instants_panics() {
        let _ = Time::from_ps(1) - Time::from_ps(5);
    }

    #[test]
    #[should_panic(expected = "instant before time zero")]
    fn an_instant_before_zero_panics() {
        let _ = Time::from_ps(1) - Span(5);
    }

    #[test]
    #[should_panic(expected = "negative span")]
    fn a_negative_span_panics() {
        let _ = Span(1) - Span(5);
    }

    #[test]
    fn both_serialize_as_plain_picoseconds() {
        assert_eq!(serde_json::to_string(&Time::from_ps(42)).unwrap(), "42");
        assert_eq!(serde_json::to_string(&Span(7)).unwrap(), "7");
        assert_eq!(
            serde_json::from_str::<Time>("123").unwrap(),
            Time::from_ps(123)
        );
        assert_eq!(serde_json::from_str::<Span>("9").unwrap(), Span(9));
        assert_eq!(Span(81_920).to_string(), "81.920 ns");
        assert_eq!(Time::from_ps(3_000_000).to_string(), "3.000 us");
    }
}
