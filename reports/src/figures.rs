//! A run's headline figures, kept in its result (`figures`) so a script reads them without a
//! second pass over the messages: the completion-time percentiles to p99.99, the mean and the
//! maximum ([`LatencySummary`]), the goodput, Jain's index of the senders' goodput and, for an
//! incast, the worst 10 ms window's. Each is the same computation the summary table prints.

//!
//! The records only: they are made by [`Figures::of`] and [`LatencySummary::from_records`]
//! (`summary.rs`), over the result's messages.

use serde::{Deserialize, Serialize};

/// The headline figures of a run (`figures` in `result.json`); a figure the run cannot give
/// (nothing delivered, one sender, not an incast) is `null`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Figures {
    /// Message completion times: count, p50 … p99.99, max and mean, ps.
    pub latency: LatencySummary,
    /// Payload goodput, bits per second ([`crate::goodput_bps`]).
    pub goodput_bps: Option<f64>,
    /// Jain's index of per-sender goodput over the whole run (1 = equal shares, 1/n = one
    /// sender); `None` with fewer than two senders.
    pub fairness: Option<f64>,
    /// The lowest Jain index of the senders' bytes in one 10 ms window after the first 1 ms
    /// while every sender sends ([`crate::windowed::windowed_sharing`]); incasts only, whose senders are
    /// backlogged from the start.
    pub worst_window_fairness: Option<f64>,
}

/// Summary statistics of message completion times (latency from the intended send time,
/// see [`crate::MessageRecord::latency_ps`]), all in picoseconds.
///
/// Percentiles use the nearest-rank method ([`crate::percentile::nearest_rank`]) over the *delivered* messages;
/// undelivered messages have no latency and are counted in `undelivered` instead. Every
/// statistic is `None` when nothing was delivered.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LatencySummary {
    /// Number of message records.
    pub count: u64,
    /// Messages with a completion time.
    pub delivered: u64,
    /// Messages without a completion time (`count - delivered`).
    pub undelivered: u64,
    /// Smallest latency, ps.
    pub min_ps: Option<u64>,
    /// Median (nearest-rank p50), ps.
    pub p50_ps: Option<u64>,
    /// Nearest-rank p90, ps.
    pub p90_ps: Option<u64>,
    /// Nearest-rank p99, ps.
    pub p99_ps: Option<u64>,
    /// Nearest-rank p99.9, ps.
    pub p999_ps: Option<u64>,
    /// Nearest-rank p99.99, ps (the largest latency below 10 000 messages).
    pub p9999_ps: Option<u64>,
    /// Largest latency, ps.
    pub max_ps: Option<u64>,
    /// Arithmetic mean latency, ps (summed exactly in `u128`, divided in `f64`).
    pub mean_ps: Option<f64>,
}
