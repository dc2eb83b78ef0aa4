//! The `open-loop` workload: Poisson message arrivals at a given rate from every sender to one
//! receiver.

use crate::check::{field_error, under, FieldError};
use crate::traffic::{
    check_size_choices, check_stalls, MessageRate, RawSizeChoice, SizeDist, Stall, Stalls,
};
use crate::units::{Size, Span};
use serde::Deserialize;
use xrdma::Time;

/// Largest number of messages an open-loop run may expect (rate × duration × senders, or
/// count × senders): every message keeps a record of about 100 bytes.
pub const MAX_OPEN_LOOP_MESSAGES: f64 = 20_000_000.0;

/// Default drain time after the last arrival: 1 s of run time.
pub const DEFAULT_DRAIN: xrdma::Span = xrdma::Span::from_ms(1_000);

/// How an open-loop sender's arrivals end.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OpenLoopEnd {
    /// Arrivals in `[start, start + duration)` (`duration:`).
    Duration(xrdma::Span),
    /// Exactly this many arrivals per sender (`count:`).
    Count(u32),
}

/// N-to-1 open-loop traffic: hosts `0..=senders`, one of them the receiver. Each sender's
/// messages arrive as a Poisson process of `rate` messages per second **per sender** (the
/// aggregate offered rate is `senders × rate`): exponential inter-arrival gaps with mean
/// `1/rate`, drawn from ChaCha8 seeded by the scenario seed with the sender's host index as the
/// stream, so adding senders does not change the others' arrivals. A message's latency counts
/// from its arrival instant, whenever the sender gets to post it.
///
/// ```yaml
/// workload:
///   open-loop: { senders: 1, receiver: 0, rate: 10k/s, duration: 1s, size: 4KiB,
///                stall: { host: 0, at: 400ms, for: 100ms } }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct OpenLoop {
    /// Number of senders, ≥ 1.
    pub senders: u32,
    /// Host index of the receiver, in `0..=senders`.
    pub receiver: u32,
    /// Mean arrival rate per sender, messages per second (> 0).
    pub rate_per_s: f64,
    /// When the arrivals end.
    pub end: OpenLoopEnd,
    /// Message sizes.
    pub sizes: SizeDist,
    /// Time of the process's origin, on the run's clock: the first gap is drawn from here.
    /// Default 0.
    pub start: Time,
    /// Hosts that stop running for a while (`stall:`).
    pub stalls: Vec<Stall>,
    /// How long the run goes on after the arrivals end before unfinished messages are given
    /// up (`drain:`, default [`DEFAULT_DRAIN`]); for `count:` runs the end is the last arrival.
    pub drain: xrdma::Span,
}

impl OpenLoop {
    /// Number of hosts: `senders + 1`.
    pub fn hosts(&self) -> u32 {
        self.senders.saturating_add(1)
    }

    /// The sender host indices in ascending order: every host but the receiver.
    pub fn sender_hosts(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.hosts()).filter(move |h| *h != self.receiver)
    }

    /// Expected messages per sender: `rate × duration` or the count.
    pub fn expected_per_sender(&self) -> f64 {
        match self.end {
            OpenLoopEnd::Duration(d) => self.rate_per_s * d.as_ps() as f64 / 1e12,
            OpenLoopEnd::Count(n) => f64::from(n),
        }
    }
}

/// The `open-loop:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (an open-loop workload)"
)]
pub(crate) struct RawOpenLoop {
    senders: u32,
    receiver: u32,
    rate: MessageRate,
    duration: Option<Span>,
    count: Option<u32>,
    size: Option<Size>,
    sizes: Option<Vec<RawSizeChoice>>,
    #[serde(default)]
    start: Span,
    #[serde(default)]
    stall: Stalls,
    drain: Option<Span>,
}

/// Checks shared by the N-to-1 kinds: `count` other hosts and one `target` among `0..=count`.
pub(crate) fn check_fan_in(
    count: u32,
    count_key: &'static str,
    target: u32,
    target_key: &'static str,
) -> Result<(), FieldError> {
    if count == 0 {
        return Err(field_error(count_key, "must be at least 1"));
    }
    if count == u32::MAX {
        return Err(field_error(
            count_key,
            format!("{count} hosts plus one do not fit the u32 host indices"),
        ));
    }
    if target > count {
        return Err(field_error(
            target_key,
            format!(
                "host {target} does not exist: with {count} {count_key} the hosts are 0..={count}"
            ),
        ));
    }
    Ok(())
}

/// Checks an open-loop workload: its hosts, its end, its sizes and stalls, and the number of
/// messages it would send.
pub(crate) fn check_open_loop(raw: RawOpenLoop) -> Result<OpenLoop, FieldError> {
    let choices = check_size_choices(raw.sizes).map_err(under("sizes"))?;
    let stalls = raw.stall.check().map_err(under("stall"))?;
    check_fan_in(raw.senders, "senders", raw.receiver, "receiver")?;
    let end = match (raw.duration, raw.count) {
        (Some(d), None) if d.0.as_ps() > 0 => OpenLoopEnd::Duration(d.0),
        (Some(_), None) => return Err(field_error("duration", "must be longer than 0")),
        (None, Some(0)) => return Err(field_error("count", "must be at least 1")),
        (None, Some(n)) => OpenLoopEnd::Count(n),
        (Some(_), Some(_)) => {
            return Err(FieldError::new(
                vec!["duration", "count"],
                "give either `duration` or `count`, not both",
            ))
        }
        (None, None) => {
            return Err(FieldError::mapping(
                "no end given: add `duration: 1s` or `count: 1000` (per sender)",
            ))
        }
    };
    let sizes = SizeDist::from_keys(raw.size, choices, "size", "sizes")?;
    let ol = OpenLoop {
        senders: raw.senders,
        receiver: raw.receiver,
        rate_per_s: raw.rate.0,
        end,
        sizes,
        start: Time::ZERO + raw.start.0,
        stalls,
        drain: raw.drain.map_or(DEFAULT_DRAIN, |d| d.0),
    };
    check_stalls(&ol.stalls, ol.hosts())?;
    let total = ol.expected_per_sender() * f64::from(ol.senders);
    if total > MAX_OPEN_LOOP_MESSAGES {
        return Err(FieldError::new(
            vec!["rate", "duration", "count"],
            format!(
                "about {total:.0} messages in all ({} senders); at most {MAX_OPEN_LOOP_MESSAGES:.0} \
                 are allowed",
                ol.senders
            ),
        ));
    }
    Ok(ol)
}
