//! `heartbeat:` — a ping from one host to another while the workload runs, over the run's
//! stack: what a storage service's heartbeat sees under the workload's congestion.
//!
//! ```yaml
//! heartbeat: { from: 257, to: 0, every: 100us, size: 64B }
//! ```
//!
//! Host `from` sends a `size`-byte beat at `start`, `start + every`, … until the workload is
//! settled; host `to` answers each with the same bytes on the same connection. A beat's
//! round trip runs from its intended time to its answer's arrival (a beat sent late, behind
//! a busy turn, counts the wait). The hosts may be the workload's own (the incast's receiver,
//! to see its queue) or hosts beyond them (the fabric grows to hold them).

use crate::check::{field_error, FieldError};
use serde::Deserialize;
use xrdma::Span;

/// The smallest beat: its 8-byte sequence number.
pub const MIN_HEARTBEAT_SIZE: u64 = 8;

/// The largest beat: a heartbeat is a small message (an eager one on xrdma).
pub const MAX_HEARTBEAT_SIZE: u64 = 4096;

/// The shortest interval between beats: 1 µs (a heartbeat is a probe, not a load; a
/// shorter one would hold a beat per picosecond of the run in memory).
pub const MIN_HEARTBEAT_INTERVAL: Span = Span::from_us(1);

/// The highest host index a heartbeat may name: as many hosts as the largest workload has.
pub const MAX_HEARTBEAT_HOST: u32 = 1 << 16;

/// A heartbeat between two hosts (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a heartbeat `{ from: 1, to: 0, every: 100us }`)"
)]
pub struct Heartbeat {
    /// The host that sends the beats.
    pub from: u32,
    /// The host that answers them.
    pub to: u32,
    /// The interval between beats, at least [`MIN_HEARTBEAT_INTERVAL`].
    #[serde(deserialize_with = "xrdma::units::deserialize_nonzero_span")]
    pub every: Span,
    /// Each beat's size, bytes, [`MIN_HEARTBEAT_SIZE`] to [`MAX_HEARTBEAT_SIZE`] (default
    /// 64 B).
    #[serde(
        default = "default_size",
        deserialize_with = "xrdma::units::deserialize_size"
    )]
    pub size: u64,
}

fn default_size() -> u64 {
    64
}

impl Heartbeat {
    /// The hosts the fabric needs for the heartbeat: one past the higher of its two.
    pub fn hosts(&self) -> u32 {
        self.from.max(self.to) + 1
    }
}

/// Checks a heartbeat as read.
///
/// # Errors
/// The same host at both ends, an interval below [`MIN_HEARTBEAT_INTERVAL`], a host past
/// [`MAX_HEARTBEAT_HOST`], or a size out of range, naming the key.
pub(crate) fn check_heartbeat(h: Heartbeat) -> Result<Heartbeat, FieldError> {
    if h.from == h.to {
        return Err(field_error(
            "to",
            format!(
                "is host {}, the host that sends: a heartbeat crosses the fabric",
                h.to
            ),
        ));
    }
    if h.every < MIN_HEARTBEAT_INTERVAL {
        return Err(field_error(
            "every",
            format!(
                "{} is below the {MIN_HEARTBEAT_INTERVAL} a heartbeat's interval may be: a \
                 heartbeat probes, it is not a load (use an open-loop workload for one)",
                h.every
            ),
        ));
    }
    for (key, host) in [("from", h.from), ("to", h.to)] {
        if host > MAX_HEARTBEAT_HOST {
            return Err(field_error(
                key,
                format!("host {host} is past the {MAX_HEARTBEAT_HOST} a heartbeat may name"),
            ));
        }
    }
    if !(MIN_HEARTBEAT_SIZE..=MAX_HEARTBEAT_SIZE).contains(&h.size) {
        return Err(field_error(
            "size",
            format!(
                "{} B is outside {MIN_HEARTBEAT_SIZE}..={MAX_HEARTBEAT_SIZE} B: a beat holds \
                 its 8-byte sequence number and is a small message",
                h.size
            ),
        ));
    }
    Ok(h)
}
