//! The `workload:` block: what the hosts send.

use crate::check::{check_items, field_error, under, FieldError};
use crate::echo::{check_echo, Echo, RawEcho};
use crate::open_loop::{check_open_loop, OpenLoop, RawOpenLoop};
use crate::units::{Size, Span};
use serde::Deserialize;
use xrdma::Time;

/// What the hosts send. Written as a mapping with exactly one key naming the kind:
///
/// ```yaml
/// workload:
///   incast: { senders: 8, receiver: 0, messages: [ { size: 64KiB, count: 4 } ] }
/// ```
///
/// The kinds are `incast`, `open-loop` ([`OpenLoop`]) and `echo` ([`Echo`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// N-to-1: every sender sends the same message list to one receiver.
    Incast(Incast),
    /// N-to-1 Poisson arrivals at a given rate per sender.
    OpenLoop(OpenLoop),
    /// Closed-loop request/response between clients and one server.
    Echo(Echo),
}

impl Workload {
    /// The kind as written in the file (`incast`, `open-loop`, `echo`).
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Incast(_) => "incast",
            Workload::OpenLoop(_) => "open-loop",
            Workload::Echo(_) => "echo",
        }
    }

    /// The key that counts the sending hosts: `clients` for an echo, else `senders`.
    pub fn senders_key(&self) -> &'static str {
        match self {
            Workload::Echo(_) => "clients",
            Workload::Incast(_) | Workload::OpenLoop(_) => "senders",
        }
    }

    /// The receiving host: the incast or open-loop receiver, the echo server.
    pub fn receiver(&self) -> u32 {
        match self {
            Workload::Incast(i) => i.receiver,
            Workload::OpenLoop(o) => o.receiver,
            Workload::Echo(e) => e.server,
        }
    }

    /// Number of hosts the workload uses (host indices are `0..hosts()`).
    pub fn hosts(&self) -> u32 {
        match self {
            Workload::Incast(i) => i.hosts(),
            Workload::OpenLoop(o) => o.hosts(),
            Workload::Echo(e) => e.hosts(),
        }
    }

    /// Number of connections (one per sender or client, all to the one receiver or server).
    pub fn connections(&self) -> u32 {
        match self {
            Workload::Incast(i) => i.senders,
            Workload::OpenLoop(o) => o.senders,
            Workload::Echo(e) => e.clients,
        }
    }

    /// How many messages the workload sends in all (an open-loop run's expected count,
    /// rounded up; an echo's requests).
    pub fn expected_messages(&self) -> u64 {
        match self {
            Workload::Incast(i) => i.messages_per_sender() * u64::from(i.senders),
            Workload::OpenLoop(o) => (o.expected_per_sender() * f64::from(o.senders)).ceil() as u64,
            Workload::Echo(e) => u64::from(e.requests) * u64::from(e.clients),
        }
    }

    /// The workload's `start` (intended time of its first message).
    pub fn start(&self) -> Time {
        match self {
            Workload::Incast(i) => i.start,
            Workload::OpenLoop(o) => o.start,
            Workload::Echo(e) => e.start,
        }
    }

    /// The largest message any host sends, bytes.
    pub fn largest_message(&self) -> u64 {
        match self {
            Workload::Incast(i) => i.messages.iter().map(|m| m.size).max().unwrap_or(0),
            Workload::OpenLoop(o) => o.sizes.largest(),
            Workload::Echo(e) => e.largest(),
        }
    }
}

/// An N-to-1 incast: hosts `0..=senders`, one of them the receiver, every other one a sender.
/// Each sender sends [`Incast::messages`] in order to the receiver.
#[derive(Clone, Debug, PartialEq)]
pub struct Incast {
    /// Number of senders, ≥ 1.
    pub senders: u32,
    /// Host index of the receiver, in `0..=senders`.
    pub receiver: u32,
    /// Intended send time of every message (latency is measured from it), on the run's clock;
    /// default 0.
    pub start: Time,
    /// The messages each sender sends, in this order; non-empty.
    pub messages: Vec<MessageSpec>,
}

impl Incast {
    /// Number of hosts: `senders + 1`.
    pub fn hosts(&self) -> u32 {
        self.senders.saturating_add(1)
    }

    /// The sender host indices in ascending order: every host but the receiver.
    pub fn sender_hosts(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.hosts()).filter(move |h| *h != self.receiver)
    }

    /// Messages per sender: the sum of the counts.
    pub fn messages_per_sender(&self) -> u64 {
        self.messages.iter().map(|m| u64::from(m.count)).sum()
    }

    /// The size of each message one sender sends, bytes, in order (each spec's `size`
    /// repeated `count` times).
    pub fn sizes(&self) -> Vec<u64> {
        self.messages
            .iter()
            .flat_map(|m| std::iter::repeat_n(m.size, m.count as usize))
            .collect()
    }

    /// Payload bytes per sender: Σ size × count (saturating at `u64::MAX`).
    pub fn bytes_per_sender(&self) -> u64 {
        self.messages.iter().fold(0u64, |acc, m| {
            acc.saturating_add(m.size.saturating_mul(u64::from(m.count)))
        })
    }
}

/// `count` messages of `size` bytes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageSpec {
    /// Message size in bytes, ≥ 1.
    pub size: u64,
    /// How many such messages, ≥ 1.
    pub count: u32,
}

/// The `workload:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (the workload)"
)]
pub(crate) struct RawWorkload {
    incast: Option<RawIncast>,
    open_loop: Option<RawOpenLoop>,
    echo: Option<RawEcho>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (an incast workload)"
)]
struct RawIncast {
    senders: u32,
    receiver: u32,
    #[serde(default)]
    start: Span,
    messages: Vec<RawMessage>,
}

#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a message: `{ size: ..., count: ... }`)"
)]
struct RawMessage {
    size: Size,
    #[serde(default = "one")]
    count: u32,
}

fn one() -> u32 {
    1
}

/// Checks the workload's kind (exactly one) and the kind's mapping.
pub(crate) fn check_workload(raw: RawWorkload) -> Result<Workload, FieldError> {
    let incast = raw
        .incast
        .map(check_incast)
        .transpose()
        .map_err(under("incast"))?;
    let open_loop = raw
        .open_loop
        .map(check_open_loop)
        .transpose()
        .map_err(under("open-loop"))?;
    let echo = raw
        .echo
        .map(check_echo)
        .transpose()
        .map_err(under("echo"))?;
    match (incast, open_loop, echo) {
        (Some(incast), None, None) => Ok(Workload::Incast(incast)),
        (None, Some(ol), None) => Ok(Workload::OpenLoop(ol)),
        (None, None, Some(echo)) => Ok(Workload::Echo(echo)),
        (None, None, None) => Err(FieldError::mapping(
            "no workload kind given: expected one of `incast`, `open-loop`, `echo`",
        )),
        _ => Err(FieldError::new(
            vec!["open-loop", "echo"],
            "give one workload kind: `incast`, `open-loop` or `echo`",
        )),
    }
}

fn check_incast(raw: RawIncast) -> Result<Incast, FieldError> {
    let messages = check_items(raw.messages, check_message).map_err(under("messages"))?;
    if raw.senders == 0 {
        return Err(field_error("senders", "must be at least 1"));
    }
    if raw.senders == u32::MAX {
        return Err(field_error(
            "senders",
            format!(
                "{} senders plus the receiver do not fit the u32 host indices",
                raw.senders
            ),
        ));
    }
    if raw.receiver > raw.senders {
        return Err(field_error(
            "receiver",
            format!(
                "host {} does not exist: with {} senders the hosts are 0..={}",
                raw.receiver, raw.senders, raw.senders
            ),
        ));
    }
    if messages.is_empty() {
        return Err(field_error(
            "messages",
            "the list is empty: give at least one `{ size: ..., count: ... }`",
        ));
    }
    // Every message costs a record in the result (and a few in the run): the same bound as an
    // open-loop run's, so a typo in `count` cannot eat the machine's memory.
    let per_sender: u64 = messages.iter().map(|m| u64::from(m.count)).sum();
    let total = per_sender.saturating_mul(u64::from(raw.senders));
    if total as f64 > crate::open_loop::MAX_OPEN_LOOP_MESSAGES {
        return Err(field_error(
            "messages",
            format!(
                "{total} messages in all ({} senders × {per_sender}); at most {:.0} are allowed",
                raw.senders,
                crate::open_loop::MAX_OPEN_LOOP_MESSAGES
            ),
        ));
    }
    Ok(Incast {
        senders: raw.senders,
        receiver: raw.receiver,
        start: Time::ZERO + raw.start.0,
        messages,
    })
}

fn check_message(raw: RawMessage) -> Result<MessageSpec, FieldError> {
    if raw.size.0 == 0 {
        return Err(field_error("size", "must be at least 1 byte"));
    }
    if raw.count == 0 {
        return Err(field_error("count", "must be at least 1"));
    }
    Ok(MessageSpec {
        size: raw.size.0,
        count: raw.count,
    })
}
