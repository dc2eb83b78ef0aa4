//! Derived metrics over the per-message records: FCT slowdown against the ideal, per-sender
//! goodput, Jain's fairness index, and the list of messages that did not finish.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::path::IdealCompletion;
use crate::percentile::nearest_rank;
use crate::schema::{MessageRecord, UnfinishedMessage};

/// Ideal FCT of `payload_bytes` alone on an idle path, ps:
///
/// `ideal(S) = S·(1 + header/MTU)·8 / B + base RTT`
///
/// i.e. T* of a single sender ([`IdealCompletion::incast`] with N·S = S), using the header,
/// MTU, bottleneck rate and base RTT of `ideal`. This is the standalone FCT of the HPCC
/// simulator (Li et al., SIGCOMM 2019: base RTT plus the message's bytes with headers at the
/// bottleneck rate) and the denominator of pFabric's normalized FCT (Alizadeh et al., SIGCOMM
/// 2013). For an exchange (request plus response), S is the sum of both payloads: each
/// direction crosses the bottleneck once and the base RTT covers both one-way trips. `None`
/// where [`IdealCompletion::incast`] gives none.
pub fn ideal_fct_ps(ideal: &IdealCompletion, payload_bytes: u64) -> Option<u64> {
    IdealCompletion::incast(
        payload_bytes,
        ideal.header_bytes,
        ideal.mtu_bytes,
        ideal.bottleneck_bps,
        ideal.base_rtt_ps,
    )
    .map(|i| i.t_star_ps)
}

/// FCT slowdown of one record: its latency (FCT from the intended send time) divided by
/// [`ideal_fct_ps`] of its payload. `None` when the message did not complete or the ideal is
/// unknown or 0.
pub fn slowdown(m: &MessageRecord, ideal: &IdealCompletion) -> Option<f64> {
    let fct = m.latency_ps()?;
    let ideal = ideal_fct_ps(ideal, m.payload_bytes()).filter(|&i| i > 0)?;
    Some(fct as f64 / ideal as f64)
}

/// Nearest-rank statistics of the FCT slowdown over completed messages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SlowdownSummary {
    /// Completed messages with a slowdown.
    pub count: u64,
    /// Nearest-rank median slowdown.
    pub p50: f64,
    /// Nearest-rank p99 slowdown.
    pub p99: f64,
    /// Largest slowdown.
    pub max: f64,
}

impl SlowdownSummary {
    /// Slowdown statistics of `records` against `ideal`; `None` when no message completed.
    pub fn from_records(records: &[MessageRecord], ideal: &IdealCompletion) -> Option<Self> {
        let mut s: Vec<f64> = records.iter().filter_map(|m| slowdown(m, ideal)).collect();
        s.sort_unstable_by(f64::total_cmp);
        Some(SlowdownSummary {
            count: s.len() as u64,
            p50: nearest_rank(&s, 50.0)?,
            p99: nearest_rank(&s, 99.0)?,
            max: *s.last()?,
        })
    }
}

/// Jain's fairness index of `x` (Jain, Chiu and Hawe, DEC-TR-301, 1984):
/// `(Σ xᵢ)² / (n · Σ xᵢ²)`, between 1/n (one gets everything) and 1 (equal shares).
/// `None` for an empty slice or when every value is 0 (no share to compare).
pub fn jain_index(x: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    (n > 0.0 && sq > 0.0).then(|| sum * sum / (n * sq))
}

/// Goodput of each sender, bits per second, in ascending sender order: the payload bits of its
/// completed records (request plus response for an exchange) over its own span, from its first
/// intended send to its last completion. (Over the run's common span every incast sender, which
/// sends the same bytes, would get the same share however unequally it was served.) A sender
/// none of whose messages completed appears with 0. Empty when nothing completed.
pub fn per_sender_goodput_bps(records: &[MessageRecord]) -> Vec<(u32, f64)> {
    // Per sender: payload bits completed, first intended, last completion.
    let mut acc: BTreeMap<u32, (u128, u64, Option<u64>)> = BTreeMap::new();
    for m in records {
        let e = acc.entry(m.sender).or_insert((0, u64::MAX, None));
        e.1 = e.1.min(m.intended_ps);
        if let Some(done) = m.completed_ps {
            e.0 += u128::from(m.payload_bytes()) * 8;
            e.2 = Some(e.2.map_or(done, |d: u64| d.max(done)));
        }
    }
    if acc.values().all(|e| e.2.is_none()) {
        return Vec::new();
    }
    acc.into_iter()
        .map(|(s, (bits, first, last))| {
            let g = match last {
                Some(l) if l > first => bits as f64 * 1e12 / (l - first) as f64,
                _ => 0.0,
            };
            (s, g)
        })
        .collect()
}

/// Jain's fairness index over [`per_sender_goodput_bps`]; `None` when nothing completed.
pub fn goodput_fairness(records: &[MessageRecord]) -> Option<f64> {
    let g: Vec<f64> = per_sender_goodput_bps(records)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    jain_index(&g)
}

/// The records without a completion, as (sender, index, intended time), in record order.
pub fn unfinished(records: &[MessageRecord]) -> Vec<UnfinishedMessage> {
    records
        .iter()
        .filter(|m| m.completed_ps.is_none())
        .map(|m| UnfinishedMessage {
            sender: m.sender,
            index: m.index,
            intended_ps: m.intended_ps,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sender: u32, size: u64, intended: u64, done: Option<u64>) -> MessageRecord {
        MessageRecord {
            sender,
            receiver: 0,
            index: 0,
            size,
            intended_ps: intended,
            completed_ps: done,
            delivered_ps: done,
            response_bytes: None,
            stages: None,
        }
    }

    #[test]
    fn an_incast_served_unequally_is_not_fair() {
        // Two senders of 1000 B from t = 0: one done at 10 µs, one at 40 µs. Own-span goodputs
        // x = 8000 bits / 10 µs and 8000 bits / 40 µs, in the ratio 4 : 1, so Jain's index is
        // (4 + 1)² / (2 · (16 + 1)) = 25 / 34 = 0.7353; over the common 40 µs span both would
        // read 200 Mb/s and the index 1.
        let us = 1_000_000;
        let r = [
            rec(1, 1000, 0, Some(10 * us)),
            rec(2, 1000, 0, Some(40 * us)),
        ];
        let g = per_sender_goodput_bps(&r);
        assert_eq!(g, vec![(1, 8e8), (2, 2e8)]);
        let j = goodput_fairness(&r).unwrap();
        assert!((j - 25.0 / 34.0).abs() < 1e-12, "{j}");
    }

    #[test]
    fn jain_of_equal_shares_is_one_and_of_one_of_n_is_one_over_n() {
        // (n·x)² / (n · n·x²) = 1.
        assert_eq!(jain_index(&[5.0; 8]), Some(1.0));
        // One of n gets x: x² / (n · x²) = 1/n.
        let mut v = vec![0.0; 4];
        v[2] = 7.0;
        assert_eq!(jain_index(&v), Some(0.25));
        // Two of four equal: (2x)² / (4 · 2x²) = 1/2.
        assert_eq!(jain_index(&[3.0, 0.0, 3.0, 0.0]), Some(0.5));
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn ideal_fct_matches_the_formula() {
        // 100 Gb/s, MTU 1024, header 82, base RTT 4 µs; S = 4096 B:
        // 4096·(1024 + 82)·8·1e12 / (1024·1e11) ps = 4·1106·8·10 = 353_920 ps, + 4_000_000.
        let ideal = IdealCompletion::incast(0, 82, 1024, 100_000_000_000, 4_000_000).unwrap();
        assert_eq!(ideal_fct_ps(&ideal, 4096), Some(4_353_920));
        let m = rec(1, 4096, 1_000, Some(1_000 + 2 * 4_353_920));
        assert_eq!(slowdown(&m, &ideal), Some(2.0));
        assert_eq!(slowdown(&rec(1, 4096, 0, None), &ideal), None);
    }

    #[test]
    fn slowdown_summary_is_nearest_rank() {
        let ideal = IdealCompletion::incast(0, 0, 1000, 8_000_000_000_000, 0).unwrap();
        // header 0, MTU 1000, B = 8e12 bps -> 1 B takes 1 ps; ideal(100 B) = 100 ps.
        let recs: Vec<MessageRecord> = (1..=100)
            .map(|k| rec(1, 100, 0, Some(100 * k)))
            .chain([rec(2, 100, 0, None)])
            .collect();
        let s = SlowdownSummary::from_records(&recs, &ideal).unwrap();
        // Slowdowns 1..=100: p50 = rank 50 -> 50, p99 = rank 99 -> 99.
        assert_eq!(s.count, 100);
        assert_eq!((s.p50, s.p99, s.max), (50.0, 99.0, 100.0));
    }

    #[test]
    fn per_sender_goodput_counts_completed_payload_over_the_run_span() {
        // Span 0..1000 ps = 1 ns. Sender 1: 125 B done -> 1000 bits / 1 ns = 1e12 bps.
        // Sender 2: nothing done -> 0.
        let recs = [
            rec(1, 125, 0, Some(1000)),
            rec(2, 500, 0, None),
            rec(1, 10, 0, None),
        ];
        let g = per_sender_goodput_bps(&recs);
        assert_eq!(g, vec![(1, 1e12), (2, 0.0)]);
        // One of two senders gets everything: 1/2.
        assert_eq!(goodput_fairness(&recs), Some(0.5));
        let u = unfinished(&recs);
        assert_eq!(u.len(), 2);
        assert_eq!((u[0].sender, u[1].sender), (2, 1));
    }
}
