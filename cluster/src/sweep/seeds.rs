//! A sweep over seeds, summarized: the points that differ only in their `seed` value form a
//! group, and each headline figure of a group is given as its mean over the seeds with the
//! 95 % confidence interval of that mean ([`Estimate`], Student's t). Written as
//! `seeds.csv`; a sweep without a `seed` axis of two or more values has none.

use super::index::{Headline, SweepIndex};
use super::PointStatus;
use xrdma_reports::spread::Estimate;

/// The figures estimated across seeds: name (as in `seeds.csv`, unit in the name) and how
/// to read it from a point's headline.
#[allow(clippy::type_complexity)]
const FIGURES: [(&str, fn(&Headline) -> Option<f64>); 7] = [
    ("p50_us", |h| h.p50_ps.map(|v| v as f64 / 1e6)),
    ("p99_us", |h| h.p99_ps.map(|v| v as f64 / 1e6)),
    ("p99.9_us", |h| h.p999_ps.map(|v| v as f64 / 1e6)),
    ("max_us", |h| h.max_ps.map(|v| v as f64 / 1e6)),
    ("goodput_gbps", |h| h.goodput_bps.map(|v| v / 1e9)),
    ("heartbeat_p50_us", |h| {
        h.heartbeat_p50_ps.map(|v| v as f64 / 1e6)
    }),
    ("heartbeat_p99_us", |h| {
        h.heartbeat_p99_ps.map(|v| v as f64 / 1e6)
    }),
];

/// The points that differ only in their seed.
#[derive(Clone, Debug, PartialEq)]
pub struct SeedGroup {
    /// The values of the other axes, in axis order (the seed axis left out).
    pub values: Vec<String>,
    /// Points in the group that ran and passed (the samples).
    pub ok: usize,
    /// Points in the group that failed or produced no result (left out of the estimates).
    pub not_ok: usize,
    /// Points in the group not finished when the sweep was collected (left out too).
    pub missing: usize,
    /// The estimate of each figure over the passing points: p50, p99, p99.9, max (µs),
    /// goodput (Gb/s) and the heartbeat's p50 and p99 (µs), in `seeds.csv`'s order.
    pub figures: Vec<Option<Estimate>>,
}

/// The seed groups of `ix`, in the order their first point appears; `None` without a `seed`
/// axis of at least two values.
pub fn seed_groups(ix: &SweepIndex) -> Option<Vec<SeedGroup>> {
    let k = ix
        .axes
        .iter()
        .position(|a| a.name == "seed" && a.values.len() >= 2)?;
    let mut keys: Vec<Vec<String>> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (i, p) in ix.points.iter().enumerate() {
        let mut key = p.values.clone();
        key.remove(k);
        match keys.iter().position(|q| *q == key) {
            Some(g) => members[g].push(i),
            None => {
                keys.push(key);
                members.push(vec![i]);
            }
        }
    }
    Some(
        keys.into_iter()
            .zip(members)
            .map(|(values, m)| {
                let ok: Vec<&Headline> = m
                    .iter()
                    .map(|&i| &ix.points[i])
                    .filter(|p| p.status == PointStatus::Ok)
                    .filter_map(|p| p.headline.as_ref())
                    .collect();
                let figures = FIGURES
                    .iter()
                    .map(|(_, read)| {
                        let xs: Vec<f64> = ok.iter().filter_map(|h| read(h)).collect();
                        Estimate::of(&xs)
                    })
                    .collect();
                let missing = m
                    .iter()
                    .filter(|&&i| ix.points[i].status == PointStatus::Missing)
                    .count();
                SeedGroup {
                    values,
                    ok: ok.len(),
                    not_ok: m.len() - ok.len() - missing,
                    missing,
                    figures,
                }
            })
            .collect(),
    )
}

/// `seeds.csv`: a header (the other axes, `seeds_ok`, `seeds_not_ok`, `seeds_missing`, then
/// for each figure
/// `NAME_mean` and `NAME_ci95`, the interval's half-width), one row a group; an empty field
/// where a figure has no estimate or one sample.
pub fn seeds_csv(ix: &SweepIndex, groups: &[SeedGroup]) -> String {
    let mut head: Vec<String> = ix
        .axes
        .iter()
        .filter(|a| a.name != "seed")
        .map(|a| a.name.clone())
        .collect();
    head.extend([
        "seeds_ok".into(),
        "seeds_not_ok".into(),
        "seeds_missing".into(),
    ]);
    for (name, _) in FIGURES {
        head.push(format!("{name}_mean"));
        head.push(format!("{name}_ci95"));
    }
    let mut out = head.join(",") + "\n";
    for g in groups {
        let mut row = g.values.clone();
        row.push(g.ok.to_string());
        row.push(g.not_ok.to_string());
        row.push(g.missing.to_string());
        for e in &g.figures {
            row.push(e.map_or(String::new(), |e| format!("{:.6}", e.mean)));
            row.push(
                e.and_then(|e| e.half_width)
                    .map_or(String::new(), |h| format!("{h:.6}")),
            );
        }
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// One line a group for the terminal: its other axes' values (`fan-in 4`), p99 and goodput as
/// mean ± half-width.
pub fn seed_lines(ix: &SweepIndex, groups: &[SeedGroup]) -> Vec<String> {
    let names: Vec<&str> = ix
        .axes
        .iter()
        .filter(|a| a.name != "seed")
        .map(|a| a.name.as_str())
        .collect();
    let fmt = |e: &Option<Estimate>, unit: &str| match e {
        Some(Estimate {
            mean,
            half_width: Some(h),
            ..
        }) => format!("{mean:.3} ± {h:.3} {unit}"),
        Some(e) => format!("{:.3} {unit}", e.mean),
        None => "-".into(),
    };
    groups
        .iter()
        .map(|g| {
            let at = if g.values.is_empty() {
                String::new()
            } else {
                let at: Vec<String> = names
                    .iter()
                    .zip(&g.values)
                    .map(|(n, v)| format!("{n} {v}"))
                    .collect();
                format!("{}: ", at.join(", "))
            };
            let left_out = match (g.not_ok, g.missing) {
                (0, 0) => String::new(),
                (n, 0) => format!(", {n} not ok left out"),
                (0, m) => format!(", {m} missing left out"),
                (n, m) => format!(", {n} not ok and {m} missing left out"),
            };
            let how = if g.ok >= 2 {
                " (± the 95 % CI, Student's t)"
            } else {
                " (too few seeds for an interval)"
            };
            format!(
                "{at}p99 {}, goodput {} over {} seed(s){left_out}{how}",
                fmt(&g.figures[1], "µs"),
                fmt(&g.figures[4], "Gb/s"),
                g.ok,
            )
        })
        .collect()
}

/// Whether each setting changes p99 by more than the seeds' spread: for every axis but the
/// seed with two or more values, each group against the group that differs from it only in
/// that axis, at the axis's first value (`stack tcp` against `stack xrdma`, at the same other
/// values). A difference counts when the two 95 % intervals are disjoint
/// ([`Estimate::differs_from`], a conservative test); one line a pair, for the terminal and
/// `verdicts.txt`.
pub fn verdict_lines(ix: &SweepIndex, groups: &[SeedGroup]) -> Vec<String> {
    let axes: Vec<&super::index::IndexAxis> = ix.axes.iter().filter(|a| a.name != "seed").collect();
    let mut lines = Vec::new();
    for (k, axis) in axes.iter().enumerate() {
        if axis.values.len() < 2 {
            continue;
        }
        let first = &axis.values[0];
        for g in groups.iter().filter(|g| g.values[k] != *first) {
            let Some(base) = groups.iter().find(|b| {
                b.values[k] == *first
                    && (0..axes.len()).all(|j| j == k || b.values[j] == g.values[j])
            }) else {
                continue;
            };
            let at: Vec<String> = axes
                .iter()
                .zip(&g.values)
                .enumerate()
                .filter(|(j, (a, _))| *j != k && a.values.len() > 1)
                .map(|(_, (a, v))| format!("{} {v}", a.name))
                .collect();
            let at = if at.is_empty() {
                String::new()
            } else {
                format!("{}: ", at.join(", "))
            };
            let (Some(a), Some(b)) = (g.figures[1], base.figures[1]) else {
                continue;
            };
            let pm = |e: Estimate| match e.half_width {
                Some(h) => format!("{:.3} ± {h:.3}", e.mean),
                None => format!("{:.3}", e.mean),
            };
            let verdict = match a.differs_from(&b) {
                Some(true) => "beyond the seeds' spread",
                Some(false) => "within the seeds' spread",
                None => "too few seeds to say",
            };
            lines.push(format!(
                "{at}{n} {} against {n} {first}: p99 ×{:.3} ({} against {} µs), {verdict}",
                g.values[k],
                a.mean / b.mean,
                pm(a),
                pm(b),
                n = axis.name,
            ));
        }
    }
    lines
}
