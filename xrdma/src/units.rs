//! Quantities with units, as written in scenario files: the one parser of sizes, rates and
//! times, which [`crate::Config`]'s deserialization reads its sizes and spans with and the
//! scenario crate re-exports for every other section.
//!
//! Three kinds of quantity are accepted:
//!
//! | kind | result | units | bare number |
//! | --- | --- | --- | --- |
//! | size | `u64` bytes | `B`, `KiB`/`KB`, `MiB`/`MB`, `GiB`/`GB`, `TiB`/`TB` (all powers of 1024) | bytes |
//! | rate | `u64` bits per second | `bps`, `Kbps`/`kbps`, `Mbps`, `Gbps`, `Tbps` (SI, powers of 1000) | error: unit required |
//! | time | [`crate::Span`] (picoseconds) | `ps`, `ns`, `us`/`µs`, `ms`, `s` | error: unit required |
//!
//! Sizes follow the storage convention where `KB` means 1024 bytes: the XRDMA description's
//! "64KB" fragment is 65536 bytes. A space between number and unit is optional (`64 KiB`).
//! The number may be a decimal (`1.5MiB`) as long as the result is a whole number of the base
//! unit (bytes, bits per second, picoseconds); exponents (`1e3`) are not accepted in strings.
//! Every result must fit a `u64`. A probability ([`parse_fraction`]) is a percentage (`1%`)
//! or a fraction (`0.01`).

use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::fmt;

/// The kind of quantity a text is parsed as; decides the accepted units and the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// A size in bytes (binary multiples).
    Size,
    /// A rate in bits per second (SI multiples).
    Rate,
    /// A time span in picoseconds.
    Time,
}

const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("KB", 1 << 10),
    ("MiB", 1 << 20),
    ("MB", 1 << 20),
    ("GiB", 1 << 30),
    ("GB", 1 << 30),
    ("TiB", 1 << 40),
    ("TB", 1 << 40),
];

const RATE_UNITS: &[(&str, u64)] = &[
    ("bps", 1),
    ("Kbps", 1_000),
    ("kbps", 1_000),
    ("Mbps", 1_000_000),
    ("Gbps", 1_000_000_000),
    ("Tbps", 1_000_000_000_000),
];

const TIME_UNITS: &[(&str, u64)] = &[
    ("ps", 1),
    ("ns", 1_000),
    ("us", 1_000_000),
    // MICRO SIGN (U+00B5) and GREEK SMALL LETTER MU (U+03BC) look the same; accept both.
    ("\u{b5}s", 1_000_000),
    ("\u{3bc}s", 1_000_000),
    ("ms", 1_000_000_000),
    ("s", 1_000_000_000_000),
];

impl Quantity {
    /// The accepted units and their multiplier to the base unit.
    pub fn units(self) -> &'static [(&'static str, u64)] {
        match self {
            Quantity::Size => SIZE_UNITS,
            Quantity::Rate => RATE_UNITS,
            Quantity::Time => TIME_UNITS,
        }
    }

    /// The accepted units as a human list, for messages.
    pub fn accepted(self) -> &'static str {
        match self {
            Quantity::Size => {
                "`B`, `KiB`/`KB`, `MiB`/`MB`, `GiB`/`GB`, `TiB`/`TB` (powers of 1024)"
            }
            Quantity::Rate => "`bps`, `Kbps`, `Mbps`, `Gbps`, `Tbps` (powers of 1000)",
            Quantity::Time => "`ps`, `ns`, `us` (or `µs`), `ms`, `s`",
        }
    }

    /// The base unit the result is expressed in.
    pub fn base(self) -> &'static str {
        match self {
            Quantity::Size => "bytes",
            Quantity::Rate => "bits per second",
            Quantity::Time => "picoseconds",
        }
    }

    /// What the quantity is called in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Quantity::Size => "size",
            Quantity::Rate => "rate",
            Quantity::Time => "time",
        }
    }

    /// A well-formed example, for messages.
    pub fn example(self) -> &'static str {
        match self {
            Quantity::Size => "64KiB",
            Quantity::Rate => "100Gbps",
            Quantity::Time => "10us",
        }
    }

    /// Whether a number without a unit is accepted (sizes only: it means bytes).
    pub fn unit_optional(self) -> bool {
        matches!(self, Quantity::Size)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.noun())
    }
}

/// Why a quantity could not be parsed. Each message names the offending value and what was
/// expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The text was empty (or only spaces).
    #[error("empty {kind}: expected a {kind} such as `{}`", kind.example())]
    Empty {
        /// What was being parsed.
        kind: Quantity,
    },
    /// The value was negative (`-5KiB`); no quantity here can be negative.
    #[error("`{value}` is negative: a {kind} must be zero or more, such as `{}`", kind.example())]
    Negative {
        /// The text as written.
        value: String,
        /// What was being parsed.
        kind: Quantity,
    },
    /// The unit after the number is not one of [`Quantity::units`].
    #[error("`{value}` has unknown unit `{unit}`: a {kind} takes one of {}", kind.accepted())]
    UnknownUnit {
        /// The text as written.
        value: String,
        /// The unit as written.
        unit: String,
        /// What was being parsed.
        kind: Quantity,
    },
    /// A rate or a time was given without a unit.
    #[error(
        "`{value}` has no unit: a {kind} needs one of {}, such as `{}`",
        kind.accepted(),
        kind.example()
    )]
    MissingUnit {
        /// The text as written.
        value: String,
        /// What was being parsed.
        kind: Quantity,
    },
    /// The result does not fit a `u64` of the base unit.
    #[error(
        "`{value}` is too large: a {kind} must be at most {} {}",
        u64::MAX,
        kind.base()
    )]
    Overflow {
        /// The text as written.
        value: String,
        /// What was being parsed.
        kind: Quantity,
    },
    /// The number part is not a decimal number.
    #[error("`{value}` is not a number: expected a {kind} such as `{}`", kind.example())]
    NotANumber {
        /// The text as written.
        value: String,
        /// What was being parsed.
        kind: Quantity,
    },
    /// The value is not a whole number of the base unit (`1.5B`, `0.5ps`).
    #[error("`{value}` is not a whole number of {}", kind.base())]
    Fractional {
        /// The text as written.
        value: String,
        /// What was being parsed.
        kind: Quantity,
    },
}

/// Parses a size such as `64KiB`, `1.5 MiB` or `4096` into bytes.
///
/// # Errors
/// [`UnitError`] for empty, negative, fractional-byte, overflowing or malformed text and for
/// unknown units.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    parse(text, Quantity::Size)
}

/// Parses a rate such as `100Gbps` or `2.5 Gbps` into bits per second. A unit is required.
///
/// # Errors
/// As [`parse_size`], plus [`UnitError::MissingUnit`] for a bare number.
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    parse(text, Quantity::Rate)
}

/// Parses a time such as `10us`, `1.5 ms` or `250ps` into an [`crate::Span`] (picoseconds). A
/// unit is required.
///
/// # Errors
/// As [`parse_size`], plus [`UnitError::MissingUnit`] for a bare number.
pub fn parse_time(text: &str) -> Result<crate::Span, UnitError> {
    parse(text, Quantity::Time).map(crate::Span::from_ps)
}

/// Parses `text` as a `kind` quantity and returns it in the base unit
/// (bytes, bits per second or picoseconds).
///
/// # Errors
/// See [`UnitError`].
pub fn parse(text: &str, kind: Quantity) -> Result<u64, UnitError> {
    let value = text.trim();
    if value.is_empty() {
        return Err(UnitError::Empty { kind });
    }
    let owned = || value.to_string();
    if value.starts_with('-') {
        return Err(UnitError::Negative {
            value: owned(),
            kind,
        });
    }
    let number_len = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, rest) = value.split_at(number_len);
    let unit = rest.trim_start();
    let (int_digits, frac_digits) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int_digits.is_empty() && frac_digits.is_empty() || frac_digits.contains('.') {
        return Err(UnitError::NotANumber {
            value: owned(),
            kind,
        });
    }
    let multiplier = if unit.is_empty() {
        if !kind.unit_optional() {
            return Err(UnitError::MissingUnit {
                value: owned(),
                kind,
            });
        }
        1
    } else {
        match kind.units().iter().find(|(name, _)| *name == unit) {
            Some((_, m)) => *m,
            None => {
                return Err(UnitError::UnknownUnit {
                    value: owned(),
                    unit: unit.to_string(),
                    kind,
                })
            }
        }
    };
    let overflow = || UnitError::Overflow {
        value: owned(),
        kind,
    };
    let fractional = || UnitError::Fractional {
        value: owned(),
        kind,
    };
    let whole = decimal_u128(int_digits).ok_or_else(overflow)?;
    let whole = whole
        .checked_mul(u128::from(multiplier))
        .ok_or_else(overflow)?;
    // Fractional part: frac / 10^len, times the multiplier, must be a whole number.
    let frac_digits = frac_digits.trim_end_matches('0');
    let frac_part = if frac_digits.is_empty() {
        0
    } else {
        // 10^38 is the largest power of ten in a u128; a longer fraction (after dropping
        // trailing zeros) ends in a non-zero digit and cannot give a whole number here.
        let len = u32::try_from(frac_digits.len()).map_err(|_| fractional())?;
        let scale = 10u128.checked_pow(len).ok_or_else(fractional)?;
        let frac = decimal_u128(frac_digits).ok_or_else(fractional)?;
        let scaled = frac
            .checked_mul(u128::from(multiplier))
            .ok_or_else(fractional)?;
        if scaled % scale != 0 {
            return Err(fractional());
        }
        scaled / scale
    };
    let total = whole.checked_add(frac_part).ok_or_else(overflow)?;
    u64::try_from(total).map_err(|_| overflow())
}

/// Digits to a `u128`; `None` on overflow. An empty string is 0.
fn decimal_u128(digits: &str) -> Option<u128> {
    digits.bytes().try_fold(0u128, |acc, b| {
        acc.checked_mul(10)?.checked_add(u128::from(b - b'0'))
    })
}

/// A size in bytes read from a scenario: a string with a unit (`64KiB`) or a bare YAML integer
/// (bytes). See [`parse_size`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

/// A rate in bits per second read from a scenario: a string with a unit (`100Gbps`).
/// See [`parse_rate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(pub u64);

/// A time span read from a scenario: a string with a unit (`10us`). See [`parse_time`]. A
/// section makes it a duration ([`crate::Span`]) or, for `start:` and `at:`, an instant on the
/// run's clock ([`crate::Time::ZERO`] plus the span).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span(pub crate::Span);

struct QuantityVisitor(Quantity);

impl<'de> Visitor<'de> for QuantityVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.0;
        write!(
            f,
            "a {kind} such as `{}` (units {})",
            kind.example(),
            kind.accepted()
        )
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if self.0.unit_optional() {
            Ok(v)
        } else {
            Err(E::custom(UnitError::MissingUnit {
                value: v.to_string(),
                kind: self.0,
            }))
        }
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(UnitError::Negative {
                value: v.to_string(),
                kind: self.0,
            })),
        }
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        // `f64`'s Display prints the shortest text that reads back to the same value, without
        // an exponent, so `1e6` becomes `1000000` and `1.5` stays `1.5`.
        self.visit_str(&v.to_string())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        parse(v, self.0).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(QuantityVisitor(Quantity::Size)).map(Size)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(QuantityVisitor(Quantity::Rate)).map(Rate)
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(QuantityVisitor(Quantity::Time))
            .map(|ps| Span(crate::Span::from_ps(ps)))
    }
}

/// For `#[serde(deserialize_with)]`: a size in bytes, written as [`Size`] is (`64KiB`, `4096`).
///
/// # Errors
/// The deserializer's error carrying the [`UnitError`] message, or a type error.
pub fn deserialize_size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Size::deserialize(d).map(|s| s.0)
}

/// A size in bytes, written as [`Size`] is, of at most `max` bytes: a larger one is refused
/// with `too_large(bytes)` as the message, located at the value like any unit error.
///
/// # Errors
/// As [`deserialize_size`], and the message of `too_large` above `max`.
pub fn deserialize_size_at_most<'de, D, F>(d: D, max: u64, too_large: F) -> Result<u64, D::Error>
where
    D: Deserializer<'de>,
    F: Fn(u64) -> String,
{
    d.deserialize_any(AtMost { max, too_large })
}

/// [`QuantityVisitor`] for sizes, refusing more than `max` bytes.
struct AtMost<F> {
    max: u64,
    too_large: F,
}

impl<F: Fn(u64) -> String> AtMost<F> {
    fn check<E: de::Error>(&self, bytes: Result<u64, E>) -> Result<u64, E> {
        let bytes = bytes?;
        if bytes > self.max {
            return Err(E::custom((self.too_large)(bytes)));
        }
        Ok(bytes)
    }
}

impl<'de, F: Fn(u64) -> String> Visitor<'de> for AtMost<F> {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        QuantityVisitor(Quantity::Size).expecting(f)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        self.check(QuantityVisitor(Quantity::Size).visit_u64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        self.check(QuantityVisitor(Quantity::Size).visit_i64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        self.check(QuantityVisitor(Quantity::Size).visit_f64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        self.check(QuantityVisitor(Quantity::Size).visit_str(v))
    }
}

/// For `#[serde(deserialize_with)]`: a duration, written as [`Span`] is (`10us`; a unit is
/// required).
///
/// # Errors
/// The deserializer's error carrying the [`UnitError`] message, or a type error.
pub fn deserialize_span<'de, D: Deserializer<'de>>(d: D) -> Result<crate::Span, D::Error> {
    Span::deserialize(d).map(|s| s.0)
}

/// For `#[serde(deserialize_with)]`: a rate in bits per second, written as [`Rate`] is
/// (`100Gbps`; a unit is required).
///
/// # Errors
/// The deserializer's error carrying the [`UnitError`] message, or a type error.
pub fn deserialize_rate<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Rate::deserialize(d).map(|r| r.0)
}

/// For `#[serde(default, deserialize_with)]` on an `Option<u64>` of bytes ([`Size`]); a key
/// left out is `None`. Errors as [`deserialize_size`].
pub fn deserialize_opt_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<Size>::deserialize(d).map(|s| s.map(|s| s.0))
}

/// For `#[serde(default, deserialize_with)]` on an `Option<u64>` of bits per second
/// ([`Rate`]); a key left out is `None`. Errors as [`deserialize_rate`].
pub fn deserialize_opt_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<Rate>::deserialize(d).map(|r| r.map(|r| r.0))
}

/// For `#[serde(deserialize_with)]`: a duration longer than zero, written as [`Span`] is; `0us`
/// is refused with "must be longer than 0", located at the value like any unit error.
///
/// # Errors
/// As [`deserialize_span`], and a zero span.
pub fn deserialize_nonzero_span<'de, D: Deserializer<'de>>(d: D) -> Result<crate::Span, D::Error> {
    d.deserialize_any(NonZero(QuantityVisitor(Quantity::Time)))
        .map(crate::Span::from_ps)
}

/// [`QuantityVisitor`] refusing 0.
struct NonZero(QuantityVisitor);

impl NonZero {
    fn check<E: de::Error>(v: Result<u64, E>) -> Result<u64, E> {
        match v? {
            0 => Err(E::custom("must be longer than 0")),
            v => Ok(v),
        }
    }
}

impl<'de> Visitor<'de> for NonZero {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Self::check(self.0.visit_u64(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        Self::check(self.0.visit_i64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        Self::check(self.0.visit_f64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        Self::check(self.0.visit_str(v))
    }
}

/// A probability written as a percentage (`1%`, `0.5 %`) or a fraction (`0.01`), within
/// [0, 1].
///
/// # Errors
/// A message naming `text` when it is not a number (with an optional `%`) or lies outside
/// 0%..=100%.
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let (num, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!(
            "`{text}` is not a rate: write a percentage such as `1%` or a fraction such as `0.01`"
        )
    })?;
    let v = v / scale;
    if !(0.0..=1.0).contains(&v) || !v.is_finite() {
        return Err(format!("`{text}` is outside 0%..=100%"));
    }
    Ok(v)
}

/// For `#[serde(deserialize_with)]`: a probability, written as [`parse_fraction`] reads it
/// (`1%` or `0.01`; a YAML number is a fraction).
///
/// # Errors
/// The deserializer's error carrying [`parse_fraction`]'s message, or a type error.
pub fn deserialize_fraction<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = f64;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a rate such as `1%` or `0.01`")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            parse_fraction(v).map_err(E::custom)
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            self.visit_str(&v.to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            self.visit_str(&v.to_string())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            self.visit_str(&v.to_string())
        }
    }
    d.deserialize_any(V)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_take_percent_or_fraction() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction(" 50 % "), Ok(0.5));
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert_eq!(parse_fraction("0"), Ok(0.0));
        for bad in ["101%", "-1%", "2", "x%", "", "NaN"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }

    fn ps(n: u64) -> crate::Span {
        crate::Span::from_ps(n)
    }

    #[test]
    fn sizes_use_powers_of_1024() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("82B"), Ok(82));
        // "64KB" is 64 * 1024 = 65536 bytes (the storage convention).
        assert_eq!(parse_size("64KB"), Ok(65_536));
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert_eq!(parse_size("64 KiB"), Ok(65_536));
        assert_eq!(parse_size("  1MiB "), Ok(1_048_576));
        assert_eq!(parse_size("32MB"), Ok(32 * 1_048_576));
        // 1 GiB = 2^30 = 1_073_741_824; 2 TiB = 2 * 2^40 = 2_199_023_255_552.
        assert_eq!(parse_size("1GB"), Ok(1_073_741_824));
        assert_eq!(parse_size("1GiB"), Ok(1_073_741_824));
        assert_eq!(parse_size("2TiB"), Ok(2_199_023_255_552));
        assert_eq!(parse_size("2TB"), Ok(2_199_023_255_552));
    }

    #[test]
    fn sizes_accept_decimals_that_give_whole_bytes() {
        // 1.5 * 1048576 = 1572864.
        assert_eq!(parse_size("1.5MiB"), Ok(1_572_864));
        // 0.5 KiB = 512; 0.25KB = 256; "1." and ".5" are decimals too.
        assert_eq!(parse_size("0.5KiB"), Ok(512));
        assert_eq!(parse_size(".25KB"), Ok(256));
        assert_eq!(parse_size("2.KiB"), Ok(2048));
        // 1/1024 KiB = 0.0009765625 KiB = 1 byte exactly.
        assert_eq!(parse_size("0.0009765625KiB"), Ok(1));
        // trailing zeros do not matter: 1.500 MiB = 1.5 MiB.
        assert_eq!(parse_size("1.500MiB"), Ok(1_572_864));
        // 0.1 KiB = 102.4 bytes: not whole.
        assert!(matches!(
            parse_size("0.1KiB"),
            Err(UnitError::Fractional { .. })
        ));
        assert!(matches!(
            parse_size("1.5B"),
            Err(UnitError::Fractional { .. })
        ));
        assert!(matches!(
            parse_size("1.5"),
            Err(UnitError::Fractional { .. })
        ));
    }

    #[test]
    fn rates_use_powers_of_1000() {
        assert_eq!(parse_rate("100Gbps"), Ok(100_000_000_000));
        assert_eq!(parse_rate("25 Gbps"), Ok(25_000_000_000));
        assert_eq!(parse_rate("2.5Gbps"), Ok(2_500_000_000));
        assert_eq!(parse_rate("1Tbps"), Ok(1_000_000_000_000));
        assert_eq!(parse_rate("40Mbps"), Ok(40_000_000));
        assert_eq!(parse_rate("5Kbps"), Ok(5_000));
        assert_eq!(parse_rate("5kbps"), Ok(5_000));
        assert_eq!(parse_rate("9600bps"), Ok(9_600));
        assert!(matches!(
            parse_rate("1.5bps"),
            Err(UnitError::Fractional { .. })
        ));
    }

    #[test]
    fn times_are_picoseconds() {
        assert_eq!(parse_time("250ps"), Ok(ps(250)));
        assert_eq!(parse_time("1ns"), Ok(ps(1_000)));
        assert_eq!(parse_time("1us"), Ok(ps(1_000_000)));
        assert_eq!(parse_time("10 µs"), Ok(ps(10_000_000)));
        assert_eq!(parse_time("10\u{3bc}s"), Ok(ps(10_000_000)));
        assert_eq!(parse_time("100ms"), Ok(ps(100_000_000_000)));
        assert_eq!(parse_time("2s"), Ok(ps(2_000_000_000_000)));
        // 1.5 us = 1_500_000 ps; 0.001 ns = 1 ps.
        assert_eq!(parse_time("1.5us"), Ok(ps(1_500_000)));
        assert_eq!(parse_time("0.001ns"), Ok(ps(1)));
        assert!(matches!(
            parse_time("0.5ps"),
            Err(UnitError::Fractional { .. })
        ));
    }

    #[test]
    fn u64_limits() {
        // u64::MAX = 18446744073709551615 bytes is accepted; one more is not.
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
        assert!(matches!(
            parse_size("18446744073709551616"),
            Err(UnitError::Overflow { .. })
        ));
        // 2^64 bytes = 16 * 2^60 = 16384 PiB = 16777216 TiB; 16777216 TiB overflows by one byte,
        // 16777215 TiB = 2^64 - 2^40 fits.
        assert_eq!(parse_size("16777215TiB"), Ok(u64::MAX - (1 << 40) + 1));
        assert!(matches!(
            parse_size("16777216TiB"),
            Err(UnitError::Overflow { .. })
        ));
        // u64::MAX ps is about 18446744.07 s: 18446745 s overflows.
        assert!(matches!(
            parse_time("18446745s"),
            Err(UnitError::Overflow { .. })
        ));
        assert_eq!(parse_time("18446744s"), Ok(ps(18_446_744_000_000_000_000)));
        // Far more digits than a u128 holds.
        assert!(matches!(
            parse_size(&"9".repeat(60)),
            Err(UnitError::Overflow { .. })
        ));
    }

    #[test]
    fn errors_name_the_value_and_the_expectation() {
        assert_eq!(
            parse_size(""),
            Err(UnitError::Empty {
                kind: Quantity::Size
            })
        );
        assert_eq!(
            parse_size("  ").unwrap_err().to_string(),
            "empty size: expected a size such as `64KiB`"
        );

        let e = parse_size("-5KiB").unwrap_err();
        assert!(matches!(e, UnitError::Negative { .. }));
        assert_eq!(
            e.to_string(),
            "`-5KiB` is negative: a size must be zero or more, such as `64KiB`"
        );

        let e = parse_size("64Kb").unwrap_err();
        assert_eq!(
            e,
            UnitError::UnknownUnit {
                value: "64Kb".into(),
                unit: "Kb".into(),
                kind: Quantity::Size
            }
        );
        assert_eq!(
            e.to_string(),
            "`64Kb` has unknown unit `Kb`: a size takes one of `B`, `KiB`/`KB`, `MiB`/`MB`, \
             `GiB`/`GB`, `TiB`/`TB` (powers of 1024)"
        );
        assert!(matches!(
            parse_rate("100Gb/s"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_time("10 min"),
            Err(UnitError::UnknownUnit { .. })
        ));
        // An exponent is not part of the number grammar: `e3KiB` is read as the unit.
        assert!(matches!(
            parse_size("1e3KiB"),
            Err(UnitError::UnknownUnit { .. })
        ));

        let e = parse_rate("100").unwrap_err();
        assert!(matches!(e, UnitError::MissingUnit { .. }));
        assert_eq!(
            e.to_string(),
            "`100` has no unit: a rate needs one of `bps`, `Kbps`, `Mbps`, `Gbps`, `Tbps` \
             (powers of 1000), such as `100Gbps`"
        );
        assert!(matches!(
            parse_time("10"),
            Err(UnitError::MissingUnit { .. })
        ));

        let e = parse_size("99999999999999999999KiB").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`99999999999999999999KiB` is too large: a size must be at most \
             18446744073709551615 bytes"
        );

        for bad in ["KiB", "abc", "1.2.3KiB", ".KiB", "+5KiB", "NaN", "inf"] {
            assert!(
                matches!(parse_size(bad), Err(UnitError::NotANumber { .. })),
                "{bad}: {:?}",
                parse_size(bad)
            );
        }
        assert_eq!(
            parse_time("fast").unwrap_err().to_string(),
            "`fast` is not a number: expected a time such as `10us`"
        );
        assert_eq!(
            parse_size("1.5B").unwrap_err().to_string(),
            "`1.5B` is not a whole number of bytes"
        );
    }
}
