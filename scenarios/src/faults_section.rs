//! `sim.faults:` — faults the simulator injects: packet loss and corruption per link, links
//! that go down for a while, a receiver that stops reposting receives, a slow receiver.
//!
//! ```yaml
//! sim:
//!   faults:
//!     loss:                                   # one mapping or a list
//!       - { rate: 0.1% }                      # every link, both directions
//!       - { link: host 3, direction: up, rate: 2% }
//!     corrupt: { link: host 1, direction: down, rate: 1% }
//!     link-down: { link: host 2, at: 200us, for: 100us }
//!     stop-reposting: { host: 0, at: 50us, for: 300us }
//!     slow-receiver: { host: 0, per-message: 20us }
//! ```

use crate::check::{field_error, under, FieldError, OneOrMany};
use crate::traffic::{Stall, Stalls};
use crate::units::Span;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use xrdma::Time;

/// Which links a fault names (`link:`): `all` (the default) or `host N`, the cable between
/// host N's NIC and its switch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FaultLink {
    /// Every link (`all`).
    #[default]
    All,
    /// Host N's cable (`host N`).
    Host(u32),
}

/// Which direction of a link (`direction:`): `up` (host to switch), `down` (switch to host)
/// or `both` (the default; with `link: all` it covers switch-to-switch links too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultDirection {
    /// Host to switch.
    Up,
    /// Switch to host.
    Down,
    /// Both directions.
    #[default]
    Both,
}

/// A per-packet fault probability on some links (`loss:`, `corrupt:`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkRateFault {
    /// The links; default all.
    pub link: FaultLink,
    /// Their direction; default both.
    pub direction: FaultDirection,
    /// Probability per packet, in [0, 1] (written `1%` or `0.01`).
    pub rate: f64,
}

/// A link that goes down at `at` and comes back `for` later (`link-down:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkDownFault {
    /// The links; default all.
    pub link: FaultLink,
    /// Their direction; default both.
    pub direction: FaultDirection,
    /// When the link goes down, on the run's clock (the instant `at:` after time zero).
    pub at: Time,
    /// How long it stays down (`for:`), > 0.
    pub duration: xrdma::Span,
}

/// A receiving application that takes `per-message` for every message delivered to it: the
/// host gets its next turn only that long after the turn in which the messages arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlowReceiver {
    /// Host index.
    pub host: u32,
    /// Processing time per delivered message, > 0.
    pub per_message: xrdma::Span,
}

/// The `faults:` block of `sim:`. Every list is empty by default (no fault). For `loss` and
/// `corrupt`, the last entry that covers a link direction sets its rate, so write the
/// all-links default first and the exceptions after it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultsSection {
    /// Packet loss rates.
    pub loss: Vec<LinkRateFault>,
    /// Corruption rates: packets that arrive with a bad ICRC and are dropped by the
    /// destination NIC.
    pub corrupt: Vec<LinkRateFault>,
    /// Link down/up windows.
    pub link_down: Vec<LinkDownFault>,
    /// Windows in which a host keeps running, polling and acknowledging, but does not
    /// repost the receive WRs it consumes (they are posted when the window ends).
    pub stop_reposting: Vec<Stall>,
    /// Receivers that take a processing time per delivered message.
    pub slow_receiver: Vec<SlowReceiver>,
}

impl FaultsSection {
    /// Whether the block injects nothing.
    pub fn is_empty(&self) -> bool {
        self.loss.iter().all(|l| l.rate == 0.0)
            && self.corrupt.iter().all(|c| c.rate == 0.0)
            && self.link_down.is_empty()
            && self.stop_reposting.is_empty()
            && self.slow_receiver.is_empty()
    }

    /// Whether a network fault (loss, corruption, link down) can drop packets.
    pub fn lossy(&self) -> bool {
        self.loss.iter().any(|l| l.rate > 0.0)
            || self.corrupt.iter().any(|c| c.rate > 0.0)
            || !self.link_down.is_empty()
    }

    /// Every host index the block names, with the key that names it.
    pub fn hosts(&self) -> Vec<(&'static str, u32)> {
        let link = |l: FaultLink| match l {
            FaultLink::Host(h) => Some(h),
            FaultLink::All => None,
        };
        let mut v = Vec::new();
        v.extend(
            self.loss
                .iter()
                .filter_map(|f| link(f.link))
                .map(|h| ("loss", h)),
        );
        v.extend(
            self.corrupt
                .iter()
                .filter_map(|f| link(f.link))
                .map(|h| ("corrupt", h)),
        );
        v.extend(
            self.link_down
                .iter()
                .filter_map(|f| link(f.link))
                .map(|h| ("link-down", h)),
        );
        v.extend(
            self.stop_reposting
                .iter()
                .map(|s| ("stop-reposting", s.host)),
        );
        v.extend(self.slow_receiver.iter().map(|s| ("slow-receiver", s.host)));
        v
    }
}

/// The `faults:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (faults `{ loss, corrupt, link-down, stop-reposting, slow-receiver }`)"
)]
pub(crate) struct RawFaults {
    #[serde(default)]
    loss: OneOrMany<RawLinkRate>,
    #[serde(default)]
    corrupt: OneOrMany<RawLinkRate>,
    #[serde(default)]
    link_down: OneOrMany<RawLinkDown>,
    #[serde(default)]
    stop_reposting: Stalls,
    #[serde(default)]
    slow_receiver: OneOrMany<RawSlow>,
}

/// Checks every fault of the block.
pub(crate) fn check_faults(raw: RawFaults) -> Result<FaultsSection, FieldError> {
    Ok(FaultsSection {
        loss: raw.loss.check(check_link_rate).map_err(under("loss"))?,
        corrupt: raw
            .corrupt
            .check(check_link_rate)
            .map_err(under("corrupt"))?,
        link_down: raw
            .link_down
            .check(check_link_down)
            .map_err(under("link-down"))?,
        stop_reposting: raw
            .stop_reposting
            .check()
            .map_err(under("stop-reposting"))?,
        slow_receiver: raw
            .slow_receiver
            .check(check_slow)
            .map_err(under("slow-receiver"))?,
    })
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a link fault rate `{ link: host 3, direction: up, rate: 1% }`)"
)]
struct RawLinkRate {
    #[serde(default)]
    link: FaultLink,
    #[serde(default)]
    direction: FaultDirection,
    rate: Fraction,
}

fn check_link_rate(raw: RawLinkRate) -> Result<LinkRateFault, FieldError> {
    Ok(LinkRateFault {
        link: raw.link,
        direction: raw.direction,
        rate: raw.rate.0,
    })
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a link outage `{ link: host 2, at: 200us, for: 100us }`)"
)]
struct RawLinkDown {
    #[serde(default)]
    link: FaultLink,
    #[serde(default)]
    direction: FaultDirection,
    at: Span,
    #[serde(rename = "for")]
    duration: Span,
}

fn check_link_down(raw: RawLinkDown) -> Result<LinkDownFault, FieldError> {
    if raw.duration.0.as_ps() == 0 {
        return Err(field_error("for", "must be longer than 0"));
    }
    Ok(LinkDownFault {
        link: raw.link,
        direction: raw.direction,
        at: Time::ZERO + raw.at.0,
        duration: raw.duration.0,
    })
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a slow receiver `{ host: 0, per-message: 20us }`)"
)]
struct RawSlow {
    host: u32,
    per_message: Span,
}

fn check_slow(raw: RawSlow) -> Result<SlowReceiver, FieldError> {
    if raw.per_message.0.as_ps() == 0 {
        return Err(field_error("per-message", "must be longer than 0"));
    }
    Ok(SlowReceiver {
        host: raw.host,
        per_message: raw.per_message.0,
    })
}

/// A probability written `1%`, `0.5 %` or `0.01`, within [0, 1].
struct Fraction(f64);

fn parse_fraction(text: &str) -> Result<f64, String> {
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

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Fraction;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rate such as `1%` or `0.01`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Fraction, E> {
                parse_fraction(v).map(Fraction).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Fraction, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Fraction, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Fraction, E> {
                self.visit_str(&v.to_string())
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for FaultLink {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = FaultLink;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`all` or `host N`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FaultLink, E> {
                let t = v.trim();
                if t == "all" {
                    return Ok(FaultLink::All);
                }
                let n = t
                    .strip_prefix("host")
                    .map(str::trim)
                    .and_then(|n| n.parse().ok());
                n.map(FaultLink::Host).ok_or_else(|| {
                    E::custom(format!(
                        "`{v}` names no link: write `all` or `host N` (the cable of host N)"
                    ))
                })
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_take_percent_or_fraction() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction(" 50 % "), Ok(0.5));
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert_eq!(parse_fraction("0"), Ok(0.0));
        for bad in ["101%", "-1%", "2", "x%", "", "NaN"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }
}
