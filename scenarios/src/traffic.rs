//! Pieces shared by the open-loop and echo workloads: message rates, size distributions and
//! receiver/sender stalls.

use crate::check::{check_items, field_error, FieldError, OneOrMany};
use crate::units::{Size, Span};
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use xrdma::Time;

/// A message rate read from a scenario, in messages per second.
///
/// Written as a number, an optional SI multiplier (`k` = 10³, `M` = 10⁶) and a per-time unit
/// (`/s`, `/ms`, `/us`): `10000/s`, `10k/s`, `2.5k/s`, `1M/s` and `10/ms` are all accepted
/// (`10k/s` = `10/ms` = 10 000 messages per second). The rate must be positive.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct MessageRate(pub f64);

/// Why a message rate could not be parsed; the text names the value and the accepted forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateError(pub String);

impl fmt::Display for RateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RateError {}

const RATE_FORMS: &str = "a message rate such as `10000/s`, `10k/s`, `1M/s` or `10/ms`";

/// Parses a message rate such as `10k/s` into messages per second.
///
/// # Errors
/// [`RateError`] for an empty text, a missing or unknown `/unit`, an unknown multiplier, a
/// malformed number, or a rate that is zero, negative or not finite.
pub fn parse_message_rate(text: &str) -> Result<f64, RateError> {
    let v = text.trim();
    let bad = |why: &str| RateError(format!("`{v}` is not {RATE_FORMS}: {why}"));
    let Some((amount, per)) = v.split_once('/') else {
        return Err(bad("the `/s` (or `/ms`, `/us`) is missing"));
    };
    let per_s = match per.trim() {
        "s" => 1.0,
        "ms" => 1e3,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1e6,
        other => return Err(bad(&format!("unknown time unit `{other}`"))),
    };
    let amount = amount.trim();
    let (number, mult) = match amount.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match amount.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (amount, 1.0),
        },
    };
    let number = number.trim();
    if let Some(p) = number.chars().last().filter(char::is_ascii_alphabetic) {
        return Err(bad(&format!(
            "unknown multiplier `{p}` (only `k`, thousand, and `M`, million)"
        )));
    }
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad("expected a plain decimal number before the unit"));
    }
    let n: f64 = number
        .parse()
        .map_err(|_| bad("expected a plain decimal number before the unit"))?;
    let rate = n * mult * per_s;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(bad("the rate must be positive"));
    }
    Ok(rate)
}

impl<'de> Deserialize<'de> for MessageRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = MessageRate;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(RATE_FORMS)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MessageRate, E> {
                parse_message_rate(v).map(MessageRate).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MessageRate, E> {
                Err(E::custom(format!(
                    "`{v}` has no unit: write {RATE_FORMS} (e.g. `{v}/s`)"
                )))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MessageRate, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<MessageRate, E> {
                Err(E::custom(format!(
                    "`{v}` has no unit: write {RATE_FORMS} (e.g. `{v}/s`)"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// One entry of a message size distribution: `size` bytes with relative `weight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeChoice {
    /// Message size in bytes, ≥ 1.
    pub size: u64,
    /// Relative weight, ≥ 1 (the probability is weight / sum of weights).
    pub weight: u32,
}

/// A discrete message size distribution: one size (`size: 4KiB`) or weighted sizes
/// (`sizes: [{ size: 4KiB, weight: 9 }, { size: 1MiB, weight: 1 }]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeDist {
    /// The choices, in the order written; non-empty.
    pub choices: Vec<SizeChoice>,
}

impl SizeDist {
    /// A distribution with one size.
    pub fn fixed(size: u64) -> Self {
        SizeDist {
            choices: vec![SizeChoice { size, weight: 1 }],
        }
    }

    /// Sum of the weights (≥ 1).
    pub fn total_weight(&self) -> u64 {
        self.choices.iter().map(|c| u64::from(c.weight)).sum()
    }

    /// The size for a uniform draw `u` in `0..total_weight()`: the first choice whose
    /// cumulative weight exceeds `u` (inverse-CDF sampling). `u` past the total gives the last
    /// choice.
    pub fn pick(&self, u: u64) -> u64 {
        let mut acc = 0u64;
        for c in &self.choices {
            acc += u64::from(c.weight);
            if u < acc {
                return c.size;
            }
        }
        self.choices.last().map_or(0, |c| c.size)
    }

    /// The largest size, bytes.
    pub fn largest(&self) -> u64 {
        self.choices.iter().map(|c| c.size).max().unwrap_or(0)
    }

    /// Mean size in bytes: Σ size·weight / Σ weight.
    pub fn mean(&self) -> f64 {
        let w = self.total_weight().max(1) as f64;
        self.choices
            .iter()
            .map(|c| c.size as f64 * f64::from(c.weight))
            .sum::<f64>()
            / w
    }

    /// Builds the distribution from the two spellings `size:` and `sizes:`; exactly one must
    /// be given. `single`/`list` name the keys in errors.
    pub(crate) fn from_keys(
        size: Option<Size>,
        sizes: Option<Vec<SizeChoice>>,
        single: &'static str,
        list: &'static str,
    ) -> Result<Self, FieldError> {
        match (size, sizes) {
            (Some(s), None) => {
                if s.0 == 0 {
                    return Err(field_error(single, "must be at least 1 byte"));
                }
                Ok(SizeDist::fixed(s.0))
            }
            (None, Some(list_v)) => {
                if list_v.is_empty() {
                    return Err(field_error(
                        list,
                        "the list is empty: give at least one `{ size: ..., weight: ... }`",
                    ));
                }
                Ok(SizeDist { choices: list_v })
            }
            (Some(_), Some(_)) => Err(FieldError::new(
                vec![single, list],
                format!("give either `{single}` or `{list}`, not both"),
            )),
            (None, None) => Err(FieldError::mapping(format!(
                "no message size: give `{single}: 4KiB` or `{list}: [{{ size: 4KiB, weight: 1 }}]`"
            ))),
        }
    }
}

/// One `{ size, weight }` of a size list as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a size choice: `{ size: ..., weight: ... }`)"
)]
pub(crate) struct RawSizeChoice {
    size: Size,
    #[serde(default = "one")]
    weight: u32,
}

fn one() -> u32 {
    1
}

fn check_size_choice(raw: RawSizeChoice) -> Result<SizeChoice, FieldError> {
    if raw.size.0 == 0 {
        return Err(field_error("size", "must be at least 1 byte"));
    }
    if raw.weight == 0 {
        return Err(field_error("weight", "must be at least 1"));
    }
    Ok(SizeChoice {
        size: raw.size.0,
        weight: raw.weight,
    })
}

/// Checks a size list (`sizes:`, `request-sizes:`), if one was given.
pub(crate) fn check_size_choices(
    list: Option<Vec<RawSizeChoice>>,
) -> Result<Option<Vec<SizeChoice>>, FieldError> {
    list.map(|l| check_items(l, check_size_choice)).transpose()
}

/// A host that stops running its application for a while: from `at` for `duration`, the host
/// gets no driver turn (its CQ is not polled, nothing is posted, no receive is reposted), while
/// its NIC keeps working (receives already posted are consumed, then the sender sees RNR NAKs
/// and xrdma's window back-pressure).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stall {
    /// Host index.
    pub host: u32,
    /// Start of the stall, on the run's clock (the instant `at:` after time zero).
    pub at: Time,
    /// Length of the stall (`for:` in the file), > 0.
    pub duration: xrdma::Span,
}

impl Stall {
    /// End of the stall (`at + duration`, saturating).
    pub fn end(&self) -> Time {
        self.at + self.duration
    }
}

/// One `{ host, at, for }` as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a stall: `{ host: ..., at: ..., for: ... }`)"
)]
pub(crate) struct RawStall {
    host: u32,
    at: Span,
    #[serde(rename = "for")]
    duration: Span,
}

fn check_stall(raw: RawStall) -> Result<Stall, FieldError> {
    if raw.duration.0.as_ps() == 0 {
        return Err(field_error("for", "must be longer than 0"));
    }
    Ok(Stall {
        host: raw.host,
        at: Time::ZERO + raw.at.0,
        duration: raw.duration.0,
    })
}

/// `stall:` as written: one `{ host, at, for }` mapping or a list of them.
#[derive(Default)]
pub(crate) struct Stalls(OneOrMany<RawStall>);

impl Stalls {
    /// Checks every stall; an error names the item's index when they were listed.
    pub fn check(self) -> Result<Vec<Stall>, FieldError> {
        self.0.check(check_stall)
    }
}

impl<'de> Deserialize<'de> for Stalls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        OneOrMany::deserialize_as(
            d,
            "a stall `{ host: ..., at: ..., for: ... }` or a list of them",
        )
        .map(Stalls)
    }
}

/// Checks that every stall names one of `hosts` hosts.
pub(crate) fn check_stalls(stalls: &[Stall], hosts: u32) -> Result<(), FieldError> {
    for s in stalls {
        if s.host >= hosts {
            return Err(field_error(
                "stall",
                format!(
                    "host {} does not exist: the workload's hosts are 0..={}",
                    s.host,
                    hosts.saturating_sub(1)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_rates() {
        assert_eq!(parse_message_rate("10000/s"), Ok(10_000.0));
        assert_eq!(parse_message_rate("10k/s"), Ok(10_000.0));
        assert_eq!(parse_message_rate("2.5k/s"), Ok(2_500.0));
        assert_eq!(parse_message_rate("1M/s"), Ok(1_000_000.0));
        // 10 per ms = 10 * 1000 per s.
        assert_eq!(parse_message_rate("10/ms"), Ok(10_000.0));
        assert_eq!(parse_message_rate(" 1 / us "), Ok(1_000_000.0));
        for bad in [
            "", "10000", "10k", "0/s", "-5/s", "10x/s", "1e3/s", "10/h", "/s",
        ] {
            assert!(parse_message_rate(bad).is_err(), "{bad:?} accepted");
        }
        let e = parse_message_rate("1000G/s").unwrap_err().0;
        assert!(e.contains("unknown multiplier `G`"), "{e}");
    }

    #[test]
    fn size_pick_follows_the_cumulative_weights() {
        let d = SizeDist {
            choices: vec![
                SizeChoice {
                    size: 4096,
                    weight: 9,
                },
                SizeChoice {
                    size: 1 << 20,
                    weight: 1,
                },
            ],
        };
        assert_eq!(d.total_weight(), 10);
        // u in 0..9 -> first choice, u = 9 -> second.
        assert_eq!(d.pick(0), 4096);
        assert_eq!(d.pick(8), 4096);
        assert_eq!(d.pick(9), 1 << 20);
        // Mean: (9*4096 + 1048576) / 10 = 108544.
        assert_eq!(d.mean(), 108_544.0);
        assert_eq!(d.largest(), 1 << 20);
    }
}
