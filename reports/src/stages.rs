//! Where the messages' completion time went: the per-stage distribution of a traced run
//! ([`crate::MessageStages`], recorded with `trace: true`), and which stage makes the tail.
//!
//! Percentiles are nearest-rank on the exact samples ([`crate::percentile`]). A stage's row
//! is its own distribution over all traced messages; the breakdown "at p99" is the one
//! message at the p99 rank of completion time, split into its stages, so its bar adds up to
//! the run's p99 exactly.

use crate::percentile::nearest_rank;
use crate::schema::{MessageStages, RunResult};
use crate::summary::format_us as us;
use serde::Serialize;
use std::fmt::Write as _;

/// The completion percentiles the breakdown is taken at, with their labels.
pub const AT: [(&str, f64); 5] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("max", 100.0),
];

/// One stage's distribution over the traced messages, ps.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct StageRow {
    /// The stage ([`MessageStages::NAMES`]).
    pub stage: &'static str,
    /// Nearest-rank p50, p99, p99.9 and the maximum.
    pub p50_ps: u64,
    /// p99.
    pub p99_ps: u64,
    /// p99.9.
    pub p999_ps: u64,
    /// The largest.
    pub max_ps: u64,
    /// The mean.
    pub mean_ps: f64,
    /// Its share of all traced messages' completion time together, 0–1.
    pub share: f64,
}

/// The message at one completion percentile, split into stages.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct AtPercentile {
    /// `p50`, ..., `max`.
    pub label: &'static str,
    /// Its completion time, ps (the stages' sum).
    pub completion_ps: u64,
    /// Which message (sender, index).
    pub sender: u32,
    /// Its index in the sender's sequence.
    pub index: u32,
    /// Its stages.
    pub stages: MessageStages,
    /// The largest of them.
    pub dominant: &'static str,
}

/// A traced run's stage summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct StageSummary {
    /// Messages with stages.
    pub messages: usize,
    /// Completed messages without stages (echo exchanges, or clocks out of order).
    pub untraced: usize,
    /// Messages that did not complete: no latency, so no stages.
    pub unfinished: usize,
    /// One row per stage, in [`MessageStages::NAMES`] order.
    pub rows: Vec<StageRow>,
    /// The breakdown at each of [`AT`].
    pub at: Vec<AtPercentile>,
    /// Among the messages at or above the p99 completion time, how many each stage
    /// dominated, in [`MessageStages::NAMES`] order.
    pub tail_dominant: Vec<(&'static str, usize)>,
}

/// The stage with the largest time in `s` (the first on a tie).
pub fn dominant(s: &MessageStages) -> &'static str {
    let v = s.values();
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    MessageStages::NAMES[best]
}

/// The stage summary of `r`; `None` when no message has stages (the run was not traced).
pub fn summarize(r: &RunResult) -> Option<StageSummary> {
    let mut traced: Vec<(u64, &crate::MessageRecord, MessageStages)> = r
        .messages
        .iter()
        .filter_map(|m| Some((m.latency_ps()?, m, m.stages?)))
        .collect();
    if traced.is_empty() {
        return None;
    }
    let completed = r
        .messages
        .iter()
        .filter(|m| m.latency_ps().is_some())
        .count();
    traced.sort_by_key(|&(c, m, _)| (c, m.sender, m.index));
    let total: u64 = traced.iter().map(|t| t.0).sum();
    let rows = MessageStages::NAMES
        .iter()
        .enumerate()
        .map(|(k, &stage)| {
            let mut v: Vec<u64> = traced.iter().map(|t| t.2.values()[k]).collect();
            v.sort_unstable();
            let sum: u64 = v.iter().sum();
            let q = |p| nearest_rank(&v, p).unwrap_or(0);
            StageRow {
                stage,
                p50_ps: q(50.0),
                p99_ps: q(99.0),
                p999_ps: q(99.9),
                max_ps: q(100.0),
                mean_ps: sum as f64 / v.len() as f64,
                share: if total == 0 {
                    0.0
                } else {
                    sum as f64 / total as f64
                },
            }
        })
        .collect();
    let at = AT
        .iter()
        .filter_map(|&(label, p)| {
            let (c, m, s) = nearest_rank(&traced, p)?;
            Some(AtPercentile {
                label,
                completion_ps: c,
                sender: m.sender,
                index: m.index,
                stages: s,
                dominant: dominant(&s),
            })
        })
        .collect();
    let p99 = nearest_rank(&traced, 99.0).map_or(0, |t| t.0);
    let tail_dominant = MessageStages::NAMES
        .iter()
        .map(|&n| {
            let k = traced
                .iter()
                .filter(|t| t.0 >= p99 && dominant(&t.2) == n)
                .count();
            (n, k)
        })
        .collect();
    Some(StageSummary {
        messages: traced.len(),
        untraced: completed - traced.len(),
        unfinished: r.messages.len() - completed,
        rows,
        at,
        tail_dominant,
    })
}

/// The summary as text: the per-stage distribution, the breakdown at each percentile, and
/// which stage dominates p99.
pub fn stage_table(s: &StageSummary) -> String {
    let mut out = format!(
        "stages of {} message(s){}{} (µs; app: held by the application, queue: behind earlier \
         messages in xrdma, grant: waiting for the CTS, send: window/credits between \
         fragments, network: last fragment posted to delivery, ack: delivery to the ACK)\n",
        s.messages,
        if s.untraced > 0 {
            format!(", {} completed without stages", s.untraced)
        } else {
            String::new()
        },
        if s.unfinished > 0 {
            format!(", {} did not finish (no latency, no stages)", s.unfinished)
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        out,
        "{:<8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>7}",
        "stage", "p50", "p99", "p99.9", "max", "mean", "share"
    );
    for r in &s.rows {
        let _ = writeln!(
            out,
            "{:<8} {:>12} {:>12} {:>12} {:>12} {:>12.3} {:>6.1}%",
            r.stage,
            us(r.p50_ps),
            us(r.p99_ps),
            us(r.p999_ps),
            us(r.max_ps),
            r.mean_ps / 1e6,
            100.0 * r.share
        );
    }
    let _ = writeln!(
        out,
        "\nthe message at each completion percentile, by stage (µs)"
    );
    let _ = write!(out, "{:<6} {:>12}", "at", "completion");
    for n in MessageStages::NAMES {
        let _ = write!(out, " {n:>10}");
    }
    let _ = writeln!(out, "  dominant  message");
    for a in &s.at {
        let _ = write!(out, "{:<6} {:>12}", a.label, us(a.completion_ps));
        for v in a.stages.values() {
            let _ = write!(out, " {:>10}", us(v));
        }
        let _ = writeln!(out, "  {:<8}  {}#{}", a.dominant, a.sender, a.index);
    }
    if let Some(p99) = s.at.iter().find(|a| a.label == "p99") {
        let share = p99
            .stages
            .values()
            .into_iter()
            .max()
            .map_or(0.0, |m| m as f64 / p99.completion_ps.max(1) as f64);
        let tail: Vec<String> = s
            .tail_dominant
            .iter()
            .filter(|t| t.1 > 0)
            .map(|(n, k)| format!("{n} {k}"))
            .collect();
        let _ = writeln!(
            out,
            "\np99 is made by `{}` ({:.0} % of the p99 message's {} µs); the messages at or \
             above p99 are dominated by: {}",
            p99.dominant,
            100.0 * share,
            us(p99.completion_ps),
            tail.join(", ")
        );
    }
    out
}
