//! The bins of the per-sender throughput panel. A sender's payload arrives in bursts (a
//! fragment, a message) while the senders take turns at the bottleneck, so in one sampling
//! interval most senders of a large incast deliver nothing even though every one is sending:
//! at 256 senders and 100 Gb/s, a sender's fair share in 10 µs is 488 B against 64 KiB
//! fragments. Drawn per interval, the median sender then reads 0 Gb/s for the whole run while
//! Jain's index over the run is 0.9999. The panel therefore sums [`bin_factor`] consecutive
//! intervals into one bin: enough that a sender getting its fair share delivers at least its
//! largest burst in each.

use crate::series::TimeSeries;

/// At least this many bins are kept, so the panel still shows how sharing changes over time.
pub const MIN_BINS: usize = 8;

/// How many sampling intervals one per-sender bin sums: the smallest power of two `k` such
/// that the fair share of `k` intervals (the bytes all senders delivered, over the senders and
/// over the intervals in which anything moved) reaches the largest any sender delivered in one
/// interval; at most the factor that leaves [`MIN_BINS`] bins, and 1 when nothing moved.
pub fn bin_factor(ts: &TimeSeries) -> usize {
    let n = ts.time_ps.len();
    let senders = ts.senders.len();
    if n == 0 || senders == 0 {
        return 1;
    }
    let total: u64 = ts.senders.iter().flat_map(|s| s.bytes.iter()).sum();
    let moving = (0..n)
        .filter(|&i| ts.senders.iter().any(|s| s.bytes[i] > 0))
        .count();
    let burst = ts
        .senders
        .iter()
        .flat_map(|s| s.bytes.iter())
        .copied()
        .max()
        .unwrap_or(0);
    if total == 0 || moving == 0 {
        return 1;
    }
    let share = total as f64 / senders as f64 / moving as f64;
    let cap = (n / MIN_BINS).max(1);
    let mut k = 1;
    while (k as f64) * share < burst as f64 && k * 2 <= cap {
        k *= 2;
    }
    k
}

/// One per-sender bin: its start and end (ps from the start of the run) and each sender's
/// bytes in it, in the order of [`TimeSeries::senders`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bin {
    /// Start of the bin, ps.
    pub start_ps: u64,
    /// End of the bin, ps.
    pub end_ps: u64,
    /// Bytes each sender delivered in it.
    pub bytes: Vec<u64>,
}

impl Bin {
    /// `bytes` over this bin, Gb/s.
    pub fn gbps(&self, bytes: u64) -> f64 {
        let span = self.end_ps.saturating_sub(self.start_ps);
        if span == 0 {
            return 0.0;
        }
        bytes as f64 * 8.0 * 1000.0 / span as f64
    }
}

/// The intervals of `ts` summed `k` at a time; the last bin also takes the remainder (up to
/// `k − 1` more intervals), so no bin is a short, noisy one.
pub fn bins(ts: &TimeSeries, k: usize) -> Vec<Bin> {
    let n = ts.time_ps.len();
    let k = k.clamp(1, n.max(1));
    let m = n / k;
    (0..m)
        .map(|j| {
            let a = j * k;
            let b = if j + 1 == m { n } else { a + k };
            Bin {
                start_ps: ts.time_ps[a].saturating_sub(ts.interval_ps),
                end_ps: ts.time_ps[b - 1],
                bytes: ts
                    .senders
                    .iter()
                    .map(|s| s.bytes[a..b].iter().sum())
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::series::SenderBytes;

    /// `senders` senders taking turns: in interval i, sender i mod senders delivers `burst`.
    fn turns(senders: u32, n: usize, burst: u64) -> TimeSeries {
        TimeSeries {
            interval_ps: 10_000_000,
            requested_interval_ps: 10_000_000,
            coarsened: 0,
            max_points: 1024,
            bottleneck: String::new(),
            time_ps: (1..=n as u64).map(|i| i * 10_000_000).collect(),
            bottleneck_queue_bytes: Vec::new(),
            max_queue_bytes: Vec::new(),
            ecn_marks: Vec::new(),
            cnps: Vec::new(),
            pfc_xoff: Vec::new(),
            paused_ports: Vec::new(),
            senders: (0..senders)
                .map(|h| SenderBytes {
                    host: h + 1,
                    bytes: (0..n)
                        .map(|i| if i as u32 % senders == h { burst } else { 0 })
                        .collect(),
                })
                .collect(),
        }
    }

    #[test]
    fn senders_taking_turns_get_bins_in_which_each_one_delivers() {
        let ts = turns(8, 1024, 65_536);
        let k = bin_factor(&ts);
        assert_eq!(k, 8);
        for b in bins(&ts, k) {
            assert!(b.bytes.iter().all(|&x| x == 65_536), "{b:?}");
        }
    }

    #[test]
    fn a_steady_sender_keeps_the_sampling_interval_and_few_samples_keep_eight_bins() {
        let steady = turns(1, 100, 1000);
        assert_eq!(bin_factor(&steady), 1);
        let short = turns(64, 32, 1000);
        assert_eq!(bin_factor(&short), 4);
        assert_eq!(bins(&short, 4).len(), 8);
    }

    #[test]
    fn the_last_bin_takes_the_remainder_and_no_byte_is_lost() {
        let ts = turns(4, 30, 100);
        let b = bins(&ts, 8);
        assert_eq!(b.len(), 3);
        assert_eq!(b[2].end_ps, *ts.time_ps.last().unwrap());
        assert_eq!(b[2].end_ps - b[2].start_ps, 14 * ts.interval_ps);
        let total: u64 = b.iter().flat_map(|x| x.bytes.iter()).sum();
        assert_eq!(total, 30 * 100);
    }
}
