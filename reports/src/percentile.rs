//! Percentiles by the nearest-rank method on exact samples.
//!
//! Definition (Wikipedia, "Percentile", section "The nearest-rank method"; also NIST/ITL
//! Engineering Statistics Handbook's discussion of order statistics): for `n` ascending samples
//! and `0 < p ≤ 100`, the p-th percentile is the sample at 1-based rank `⌈p/100 · n⌉`. The
//! result is always one of the samples (never interpolated), and an empty sample set has no
//! percentile (never report 0 for "no data").

/// Resolution to which `p` is taken: one millionth of a percentage point.
///
/// `p` is rounded to this grid before the rank is computed in integer arithmetic, so decimal
/// percentiles such as 99.9 give the exact rank `⌈0.999 · n⌉` instead of suffering from binary
/// floating-point error (`99.9 / 100 · 1000` is not exactly 999 in `f64`).
const P_SCALE: f64 = 1_000_000.0;

/// 100 % on the [`P_SCALE`] grid.
const P_FULL: u128 = 100_000_000;

/// Nearest-rank p-th percentile of `sorted`, which must be in ascending order (any copyable
/// sample type: picoseconds as `u64`, slowdowns as `f64`).
///
/// Returns the element at 1-based rank `⌈p/100 · n⌉` (clamped to at least 1), with `p` rounded
/// to 10⁻⁶ percentage points. Returns `None` when `sorted` is empty, or when `p` is outside
/// `(0, 100]` or NaN (an out-of-range `p` has no nearest-rank percentile; callers pass
/// constants, so this is a programming error reported as absence rather than a panic).
///
/// The caller guarantees the order; an unsorted slice gives an element at that rank, not the
/// percentile.
///
/// Example (Wikipedia's nearest-rank example): for `[15, 20, 35, 40, 50]`, p30 → rank
/// ⌈1.5⌉ = 2 → 20; p40 → rank 2 → 20; p50 → rank ⌈2.5⌉ = 3 → 35; p100 → rank 5 → 50.
pub fn nearest_rank<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    if sorted.is_empty() || p.is_nan() || p <= 0.0 || p > 100.0 {
        return None;
    }
    let p_units = (p * P_SCALE).round() as u128; // 0 < p ≤ 100 → at most 1e8, no overflow
    let n = sorted.len() as u128;
    let rank = (p_units * n).div_ceil(P_FULL).max(1); // ≤ n since p_units ≤ P_FULL
    let idx = usize::try_from(rank - 1).ok()?;
    sorted.get(idx).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wikipedia_example() {
        // Wikipedia "Percentile", nearest-rank method, first example.
        let s = [15, 20, 35, 40, 50];
        assert_eq!(nearest_rank(&s, 5.0), Some(15)); // ⌈0.25⌉ = 1
        assert_eq!(nearest_rank(&s, 30.0), Some(20)); // ⌈1.5⌉ = 2
        assert_eq!(nearest_rank(&s, 40.0), Some(20)); // ⌈2.0⌉ = 2
        assert_eq!(nearest_rank(&s, 50.0), Some(35)); // ⌈2.5⌉ = 3
        assert_eq!(nearest_rank(&s, 100.0), Some(50)); // ⌈5⌉ = 5
    }

    #[test]
    fn wikipedia_second_example() {
        // Wikipedia's second list: 3, 6, 7, 8, 8, 10, 13, 15, 16, 20 (n = 10).
        let s = [3, 6, 7, 8, 8, 10, 13, 15, 16, 20];
        assert_eq!(nearest_rank(&s, 25.0), Some(7)); // ⌈2.5⌉ = 3
        assert_eq!(nearest_rank(&s, 50.0), Some(8)); // ⌈5⌉ = 5
        assert_eq!(nearest_rank(&s, 75.0), Some(15)); // ⌈7.5⌉ = 8
        assert_eq!(nearest_rank(&s, 100.0), Some(20));
    }

    #[test]
    fn decimal_percentiles_are_exact() {
        // Samples 1..=1000: p99.9 → rank ⌈0.999·1000⌉ = 999 → value 999 (not 1000).
        let s: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&s, 99.9), Some(999));
        // p99 → rank 990; p0.1 → rank 1.
        assert_eq!(nearest_rank(&s, 99.0), Some(990));
        assert_eq!(nearest_rank(&s, 0.1), Some(1));
        // n = 1001: p99.9 → ⌈999.999⌉ = 1000.
        let s: Vec<u64> = (1..=1001).collect();
        assert_eq!(nearest_rank(&s, 99.9), Some(1000));
    }

    #[test]
    fn tiny_p_gives_the_minimum() {
        let s = [7, 8, 9];
        assert_eq!(nearest_rank(&s, 1e-9), Some(7)); // rounds to 0 units, rank clamped to 1
    }

    #[test]
    fn empty_and_out_of_range() {
        assert_eq!(nearest_rank::<u64>(&[], 50.0), None);
        let s = [1, 2, 3];
        assert_eq!(nearest_rank(&s, 0.0), None);
        assert_eq!(nearest_rank(&s, -1.0), None);
        assert_eq!(nearest_rank(&s, 100.000_001), None);
        assert_eq!(nearest_rank(&s, f64::NAN), None);
        assert_eq!(nearest_rank(&s, f64::INFINITY), None);
    }

    #[test]
    fn single_sample_is_every_percentile() {
        for p in [0.5, 50.0, 99.9, 100.0] {
            assert_eq!(nearest_rank(&[42], p), Some(42));
        }
    }
}
