//! Sharing over time: each sender's payload bytes in consecutive windows while every sender
//! sends, and the worst window's Jain index and total.
//!
//! A whole-run fairness figure hides a sender that starved for tens of milliseconds and
//! caught up after its competitor ended; the worst window does not. The windows follow the
//! send-window benchmark's definition: consecutive windows of [`WINDOW_PS`] after the first
//! [`SKIP_PS`] (the start-up), counted only while every sender sends throughout, so the
//! window in which a sender finishes (and the others speed up) is left out.

use crate::metrics::jain_index;
use crate::MessageRecord;

/// Start-up left out of the windows, ps (1 ms).
pub const SKIP_PS: u64 = 1_000_000_000;
/// Length of one window, ps (10 ms).
pub const WINDOW_PS: u64 = 10_000_000_000;

/// One message of a sender: (completion, intended send time, payload bytes), ps and bytes.
type Sent = (u64, u64, u64);

/// Payload bytes each sender moved in each window: `result[w][s]` for window `w` and the `s`-th
/// sender in ascending host order. Window `w` spans
/// `[from + w·window_ps, from + (w+1)·window_ps)` with
/// `from = max(skip_ps, the latest sender's first intended send time)`; only windows that
/// end by the earliest sender's last completion count, so every sender sends throughout each
/// one. Empty when a message did not complete (no sender's end is known) or no whole window
/// fits.
///
/// A message's bytes are spread evenly over the span from its sender's previous completion (or
/// its own intended send time, if later) to its own completion: a sender streaming messages
/// back to back moves message k's bytes between completions k − 1 and k, so the windows see
/// the bytes when they crossed the wire rather than in lumps at completion times. Cost: linear
/// in the messages plus the windows each one overlaps.
pub fn windowed_bytes(records: &[MessageRecord], skip_ps: u64, window_ps: u64) -> Vec<Vec<f64>> {
    let window_ps = window_ps.max(1);
    let mut by_sender: Vec<(u32, Vec<Sent>)> = Vec::new();
    let mut sorted: Vec<&MessageRecord> = records.iter().collect();
    sorted.sort_by_key(|m| m.sender);
    for m in sorted {
        let Some(done) = m.completed_ps else {
            return Vec::new();
        };
        match by_sender.last_mut() {
            Some((s, v)) if *s == m.sender => v.push((done, m.intended_ps, m.payload_bytes())),
            _ => by_sender.push((m.sender, vec![(done, m.intended_ps, m.payload_bytes())])),
        }
    }
    let first = by_sender
        .iter()
        .filter_map(|(_, v)| v.iter().map(|x| x.1).min())
        .max();
    let end = by_sender
        .iter()
        .filter_map(|(_, v)| v.iter().map(|x| x.0).max())
        .min();
    let (Some(first), Some(end)) = (first, end) else {
        return Vec::new();
    };
    let from = skip_ps.max(first);
    let windows = (end.saturating_sub(from) / window_ps) as usize;
    let mut out = vec![vec![0.0; by_sender.len()]; windows];
    for (si, (_, done)) in by_sender.iter_mut().enumerate() {
        done.sort_unstable();
        let mut prev = 0u64;
        for &(completed, intended, bytes) in done.iter() {
            let start = prev.max(intended).min(completed);
            prev = completed;
            spread(
                &mut out,
                si,
                (start, completed),
                bytes as f64,
                from,
                window_ps,
            );
        }
    }
    out
}

/// Add `bytes`, spread evenly over `[span.0, span.1]` ps, to sender column `si` of the windows
/// that overlap it (windows start at `from`, each `len` long).
fn spread(out: &mut [Vec<f64>], si: usize, span: (u64, u64), bytes: f64, from: u64, len: u64) {
    let (a, b) = span;
    let index = |t: u64| (t.saturating_sub(from) / len) as usize;
    if b == a {
        if b >= from {
            if let Some(row) = out.get_mut(index(b)) {
                row[si] += bytes;
            }
        }
        return;
    }
    let last = index(b).min(out.len().saturating_sub(1));
    for (w, row) in out.iter_mut().enumerate().take(last + 1).skip(index(a)) {
        let (ws, we) = (from + w as u64 * len, from + (w as u64 + 1) * len);
        let overlap = b.min(we).saturating_sub(a.max(ws));
        row[si] += bytes * overlap as f64 / (b - a) as f64;
    }
}

/// The worst windows of a run with two or more senders (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct WindowedSharing {
    /// Whole windows measured.
    pub windows: usize,
    /// The lowest Jain index of the senders' bytes in one window.
    pub worst_jain: f64,
    /// The lowest total payload rate of one window, bits per second.
    pub worst_total_bps: f64,
    /// The mean total payload rate over the windows, bits per second.
    pub mean_total_bps: f64,
}

/// The worst windows of `records` ([`windowed_bytes`] with `skip_ps` and `window_ps`, less
/// the windows in which nothing moved); `None` with fewer than two senders or no such window.
pub fn windowed_sharing(
    records: &[MessageRecord],
    skip_ps: u64,
    window_ps: u64,
) -> Option<WindowedSharing> {
    // A window in which nothing moved has no index (0/0): it is left out, not read as 0.
    let w: Vec<Vec<f64>> = windowed_bytes(records, skip_ps, window_ps)
        .into_iter()
        .filter(|row| row.iter().sum::<f64>() > 0.0)
        .collect();
    if w.is_empty() || w[0].len() < 2 {
        return None;
    }
    let secs = window_ps.max(1) as f64 * 1e-12;
    let rate = |row: &Vec<f64>| row.iter().sum::<f64>() * 8.0 / secs;
    Some(WindowedSharing {
        windows: w.len(),
        worst_jain: w
            .iter()
            .map(|row| jain_index(row).unwrap_or(0.0))
            .fold(f64::INFINITY, f64::min),
        worst_total_bps: w.iter().map(rate).fold(f64::INFINITY, f64::min),
        mean_total_bps: w.iter().map(rate).sum::<f64>() / w.len() as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(sender: u32, intended: u64, done: u64, size: u64) -> MessageRecord {
        MessageRecord {
            sender,
            receiver: 0,
            index: 0,
            size,
            intended_ps: intended,
            completed_ps: Some(done),
            delivered_ps: Some(done),
            response_bytes: None,
            stages: None,
        }
    }

    #[test]
    fn bytes_are_spread_between_completions() {
        // Sender 1: 100 B done at 10, 100 B done at 30 (moved over 10..30); sender 2 60 B over
        // 0..30. Windows of 10 after 0, both end at 30: three windows.
        let r = [rec(1, 0, 10, 100), rec(1, 0, 30, 100), rec(2, 0, 30, 60)];
        let w = windowed_bytes(&r, 0, 10);
        assert_eq!(w.len(), 3);
        assert_eq!(w[0], vec![100.0, 20.0]);
        assert_eq!(w[1], vec![50.0, 20.0]);
        assert_eq!(w[2], vec![50.0, 20.0]);
    }

    #[test]
    fn the_skip_and_the_tail_are_left_out() {
        let r = [rec(1, 0, 25, 250)];
        let w = windowed_bytes(&r, 5, 10);
        assert_eq!(w, vec![vec![100.0], vec![100.0]]);
    }

    #[test]
    fn only_windows_in_which_every_sender_sends_count() {
        // Sender 2 ends at 20: the windows after it (when sender 1 has the link alone) and a
        // window that starts before sender 3's first message are left out.
        let r = [rec(1, 0, 40, 400), rec(2, 0, 20, 100), rec(3, 5, 20, 150)];
        let w = windowed_bytes(&r, 0, 10);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0], vec![100.0, 50.0, 100.0]);
        let s = windowed_sharing(&r, 0, 10).expect("three senders, one window");
        assert_eq!(s.windows, 1);
        assert!((s.worst_jain - 250.0 * 250.0 / (3.0 * 22500.0)).abs() < 1e-12);
    }

    #[test]
    fn a_window_in_which_nothing_moved_is_left_out() {
        // Two messages each, 0..10 and 30..40 (idle from 10 to 30): the window 10..20 has no
        // index, which read as Jain 0 (below its floor 1/n).
        let r = [
            rec(1, 0, 10, 100),
            rec(1, 30, 40, 100),
            rec(2, 0, 10, 100),
            rec(2, 30, 40, 100),
        ];
        assert_eq!(windowed_bytes(&r, 0, 10).len(), 4);
        let s = windowed_sharing(&r, 0, 10).expect("two senders");
        assert_eq!(s.windows, 2);
        assert_eq!(s.worst_jain, 1.0);
    }

    #[test]
    fn one_sender_or_an_unfinished_message_has_no_figure() {
        assert_eq!(windowed_sharing(&[rec(1, 0, 40, 400)], 0, 10), None);
        let mut r = vec![rec(1, 0, 40, 400), rec(2, 0, 40, 400)];
        assert!(windowed_sharing(&r, 0, 10).is_some());
        r[1].completed_ps = None;
        assert_eq!(windowed_sharing(&r, 0, 10), None);
    }
}
