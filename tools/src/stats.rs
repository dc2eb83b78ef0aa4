//! Latency statistics in perftest's format (`ib_send_lat` and friends, perftest 4.5).

use xrdma_reports::percentile::nearest_rank;

/// Latency statistics of one run, in microseconds, as perftest's latency tests print them.
///
/// `typical` is the median (perftest's `t_typical`); percentiles are nearest-rank on the exact
/// samples (rank ⌈p/100 · n⌉); `stdev` is the population standard deviation
/// `sqrt(Σ(x − avg)² / n)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyStats {
    /// Message size, bytes.
    pub bytes: u64,
    /// Samples (iterations measured, warm-up excluded).
    pub iterations: u64,
    /// Smallest sample, µs.
    pub min_us: f64,
    /// Largest sample, µs.
    pub max_us: f64,
    /// Median (nearest-rank 50th percentile), µs.
    pub typical_us: f64,
    /// Mean, µs.
    pub avg_us: f64,
    /// Population standard deviation, µs.
    pub stdev_us: f64,
    /// 99th percentile (nearest rank), µs.
    pub p99_us: f64,
    /// 99.9th percentile (nearest rank), µs.
    pub p999_us: f64,
}

const PS_PER_US: f64 = 1e6;

impl LatencyStats {
    /// Statistics of `samples_ps` (picoseconds, any order) for messages of `bytes`; `None`
    /// when there is no sample.
    pub fn from_ps(bytes: u64, samples_ps: &[u64]) -> Option<Self> {
        let mut s = samples_ps.to_vec();
        s.sort_unstable();
        let us = |ps: u64| ps as f64 / PS_PER_US;
        let n = s.len() as f64;
        let avg = s.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = s.iter().map(|&x| (x as f64 - avg).powi(2)).sum::<f64>() / n;
        Some(LatencyStats {
            bytes,
            iterations: s.len() as u64,
            min_us: us(*s.first()?),
            max_us: us(*s.last()?),
            typical_us: us(nearest_rank(&s, 50.0)?),
            avg_us: avg / PS_PER_US,
            stdev_us: var.sqrt() / PS_PER_US,
            p99_us: us(nearest_rank(&s, 99.0)?),
            p999_us: us(nearest_rank(&s, 99.9)?),
        })
    }

    /// perftest's header line. Its words up to `99%` line up with [`LatencyStats::row`]'s
    /// columns, so a script can find a column by its header word (as for perftest's output).
    pub fn header() -> &'static str {
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    \
         t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"
    }

    /// One data line under [`LatencyStats::header`].
    pub fn row(&self) -> String {
        format!(
            " {:<7} {:<10}     {:<14.2} {:<12.2} {:<19.2} {:<16.2} {:<15.2} {:<23.2} {:.2}",
            self.bytes,
            self.iterations,
            self.min_us,
            self.max_us,
            self.typical_us,
            self.avg_us,
            self.stdev_us,
            self.p99_us,
            self.p999_us
        )
    }
}

/// The median of `v` (nearest rank, so always a sample), or `None` when empty.
pub fn median(v: &[u64]) -> Option<u64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    nearest_rank(&s, 50.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_ten_samples() {
        // Samples 1..=10 µs in ps. Median: rank ⌈0.5·10⌉ = 5 → 5 µs; p99: ⌈9.9⌉ = 10 → 10 µs;
        // mean 5.5; population variance Σ(k − 5.5)² / 10 = 82.5 / 10 = 8.25.
        let s: Vec<u64> = (1..=10u64).rev().map(|k| k * 1_000_000).collect();
        let st = LatencyStats::from_ps(64, &s).unwrap();
        assert_eq!(st.iterations, 10);
        assert_eq!(st.min_us, 1.0);
        assert_eq!(st.max_us, 10.0);
        assert_eq!(st.typical_us, 5.0);
        assert_eq!(st.avg_us, 5.5);
        assert!((st.stdev_us - 8.25f64.sqrt()).abs() < 1e-12);
        assert_eq!(st.p99_us, 10.0);
        assert_eq!(st.p999_us, 10.0);
        assert!(LatencyStats::from_ps(64, &[]).is_none());
    }

    #[test]
    fn header_words_index_the_row_columns() {
        // perftest.sh finds a column by its header word; the same must work here.
        let st = LatencyStats::from_ps(64, &[2_000_000, 4_000_000, 6_000_000]).unwrap();
        let head: Vec<&str> = LatencyStats::header().split_whitespace().collect();
        let row = st.row();
        let cols: Vec<&str> = row.split_whitespace().collect();
        let col = |w: &str| cols[head.iter().position(|h| *h == w).unwrap()];
        assert_eq!(col("#bytes"), "64");
        assert_eq!(col("#iterations"), "3");
        assert_eq!(col("t_typical[usec]"), "4.00"); // rank ⌈1.5⌉ = 2
        assert_eq!(col("t_avg[usec]"), "4.00");
        assert_eq!(col("99%"), "6.00");
        assert_eq!(cols.len(), 9);
    }
}
