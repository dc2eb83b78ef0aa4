//! The points of the per-sender completion panel ([`crate::plot::draw_per_sender`]): a
//! bounded sample of the message records, sorted by message index and cut into the few
//! series the panel draws.
//!
//! The panel colours each message by its index in its sender's sequence and draws the
//! indices in ascending order, so later indices lie on top. Grouping the sample once by index
//! (a stable sort) and drawing runs of consecutive indices as one series gives the same
//! picture as one series per index, at a cost of O(n) for the sampling and O(m log m) for the
//! m ≤ [`MAX_SCATTER_POINTS`] points drawn, whatever the number of distinct indices.

use std::ops::Range;

use crate::schema::MessageRecord;

/// At most this many messages are drawn in the per-sender panel; above it every k-th record
/// (in record order) is drawn, with k the smallest stride that fits, and the title says so.
pub const MAX_SCATTER_POINTS: usize = 20_000;

/// Indices named in the legend one by one when there are at most this many; above it only
/// the first and the last are (the colours then run on a ramp between them).
pub const LEGEND_ALL_INDICES: u32 = 10;

/// One completed message as the panel draws it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScatterPoint {
    /// Its index in its sender's sequence (its colour).
    pub index: u32,
    /// Its sender's host index (x).
    pub sender: u32,
    /// Its completion time since the first intended send of the workload, ps (y).
    pub since_start_ps: u64,
}

/// A run of [`PerSenderPoints::points`] drawn in one call, with a legend entry naming
/// message `label` when set (possibly with no points: the legend still names the index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterSeries {
    /// The message index the legend names, if any.
    pub label: Option<u32>,
    /// Its points, a range of [`PerSenderPoints::points`].
    pub points: Range<usize>,
}

/// The per-sender panel's points of a run: at most [`MAX_SCATTER_POINTS`] records, the
/// completed ones sorted by message index (stable: record order within an index), and the
/// series to draw them in, at most `2 · LEGEND_ALL_INDICES + 1`.
#[derive(Clone, Debug)]
pub struct PerSenderPoints<'a> {
    /// Every `stride`-th record is shown (1: all of them).
    pub stride: usize,
    /// The shown records, in record order (completed or not).
    pub shown: Vec<&'a MessageRecord>,
    /// The first intended send time of all records, ps (0 when there are none).
    pub start_ps: u64,
    /// One more than the largest message index of all records (0 when there are none).
    pub n_indices: u32,
    /// The shown records that completed, by message index.
    pub points: Vec<ScatterPoint>,
    /// The series, in drawing order (ascending message index).
    pub series: Vec<ScatterSeries>,
}

impl<'a> PerSenderPoints<'a> {
    /// The points of `messages`: a sample of every k-th record (k the smallest stride that
    /// keeps at most [`MAX_SCATTER_POINTS`]), grouped by index into series. Linear in the
    /// number of records, O(m log m) in the m points shown.
    pub fn of(messages: &'a [MessageRecord]) -> Self {
        let start_ps = messages.iter().map(|m| m.intended_ps).min().unwrap_or(0);
        let stride = messages.len().div_ceil(MAX_SCATTER_POINTS).max(1);
        let shown: Vec<&MessageRecord> = messages.iter().step_by(stride).collect();
        let n_indices = messages.iter().map(|m| m.index).max().map_or(0, |i| i + 1);
        let mut points: Vec<ScatterPoint> = shown
            .iter()
            .filter_map(|m| {
                m.completed_ps.map(|c| ScatterPoint {
                    index: m.index,
                    sender: m.sender,
                    since_start_ps: c.saturating_sub(start_ps),
                })
            })
            .collect();
        points.sort_by_key(|p| p.index);
        let series = series(&points, &labelled(n_indices));
        PerSenderPoints {
            stride,
            shown,
            start_ps,
            n_indices,
            points,
            series,
        }
    }

    /// The points of `s`.
    pub fn of_series(&self, s: &ScatterSeries) -> &[ScatterPoint] {
        &self.points[s.points.clone()]
    }
}

/// The indices the legend names, ascending: all of them up to [`LEGEND_ALL_INDICES`], else
/// the first and the last.
fn labelled(n_indices: u32) -> Vec<u32> {
    match n_indices {
        0 => Vec::new(),
        n if n <= LEGEND_ALL_INDICES => (0..n).collect(),
        n => vec![0, n - 1],
    }
}

/// Cuts `points` (sorted by index) into series: each labelled index its own (even when
/// empty), the unlabelled points between them one series per run.
fn series(points: &[ScatterPoint], labelled: &[u32]) -> Vec<ScatterSeries> {
    let mut out = Vec::with_capacity(2 * labelled.len() + 1);
    let mut at = 0;
    for &index in labelled {
        let before = at + points[at..].partition_point(|p| p.index < index);
        push_plain(&mut out, at..before);
        let end = before + points[before..].partition_point(|p| p.index == index);
        out.push(ScatterSeries {
            label: Some(index),
            points: before..end,
        });
        at = end;
    }
    push_plain(&mut out, at..points.len());
    out
}

/// Adds the unlabelled series `points` to `out` unless it is empty.
fn push_plain(out: &mut Vec<ScatterSeries>, points: Range<usize>) {
    if !points.is_empty() {
        out.push(ScatterSeries {
            label: None,
            points,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sender: u32, index: u32, completed: Option<u64>) -> MessageRecord {
        MessageRecord {
            sender,
            receiver: 0,
            index,
            size: 64,
            intended_ps: 10,
            completed_ps: completed,
            delivered_ps: completed,
            response_bytes: None,
            stages: None,
        }
    }

    #[test]
    fn few_indices_get_one_labelled_series_each_in_index_order() {
        // Two senders, three indices, record order by sender: points come out by index.
        let m: Vec<_> = (1..=2)
            .flat_map(|s| (0..3).map(move |i| rec(s, i, Some(100 + u64::from(10 * s + i)))))
            .collect();
        let p = PerSenderPoints::of(&m);
        assert_eq!(p.stride, 1);
        assert_eq!(p.n_indices, 3);
        let labels: Vec<_> = p.series.iter().map(|s| s.label).collect();
        assert_eq!(labels, vec![Some(0), Some(1), Some(2)]);
        let first: Vec<_> = p.of_series(&p.series[0]).iter().map(|q| q.sender).collect();
        assert_eq!(first, vec![1, 2], "record order within an index");
        assert_eq!(p.of_series(&p.series[2])[1].since_start_ps, 100 + 22 - 10);
    }

    #[test]
    fn many_indices_label_the_first_and_last_and_merge_the_rest() {
        // Index 5 never completes; the last index (11) has no point but keeps its legend.
        let m: Vec<_> = (0..12)
            .map(|i| rec(1, i, (i != 5 && i != 11).then_some(1000)))
            .collect();
        let p = PerSenderPoints::of(&m);
        let shape: Vec<_> = p.series.iter().map(|s| (s.label, s.points.len())).collect();
        assert_eq!(shape, vec![(Some(0), 1), (None, 9), (Some(11), 0)]);
    }

    /// The regression of issue 30: one sender's open-loop run has one index per message, and
    /// the panel drew one series per index, each a pass over the shown points (quadratic).
    /// The points and the series drawn must not grow with the message count.
    #[test]
    fn the_drawn_points_and_series_do_not_grow_with_the_message_count() {
        let shape = |n: u32| {
            let m: Vec<_> = (0..n)
                .map(|i| rec(1, i, (i % 1000 != 7).then_some(u64::from(i) * 1000)))
                .collect();
            let p = PerSenderPoints::of(&m);
            (p.points.len(), p.series.len(), p.shown.len())
        };
        let (small, large) = (shape(100_000), shape(400_000));
        for (points, series, shown) in [small, large] {
            assert!(shown <= MAX_SCATTER_POINTS, "{shown} shown");
            assert!(points <= shown);
            assert!(
                series <= 2 * LEGEND_ALL_INDICES as usize + 1,
                "{series} series"
            );
        }
        assert_eq!(small.1, large.1, "series drawn");
    }
}
