//! A figure across seeds: its mean and the 95 % confidence interval of that mean (Student's
//! t with n − 1 degrees of freedom, from `statrs`), so a comparison can say whether two
//! settings differ by more than the seeds' spread. One seed is one sample: a simulator run
//! is deterministic for its seed, and the seeds are the independent draws.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level of [`Estimate::half_width`]: 95 %.
pub const CONFIDENCE: f64 = 0.95;

/// A figure's mean over independent samples (seeds), with its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Estimate {
    /// Samples.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Half the width of the [`CONFIDENCE`] interval of the mean,
    /// t(1 − α/2, n − 1) · s / √n with s the sample standard deviation; `None` with one
    /// sample (no spread to measure).
    pub half_width: Option<f64>,
}

impl Estimate {
    /// The estimate of `samples`; `None` when there is none or one is not finite.
    pub fn of(samples: &[f64]) -> Option<Estimate> {
        let n = samples.len();
        if n == 0 || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mean = samples.iter().sum::<f64>() / n as f64;
        let half_width = (n >= 2)
            .then(|| {
                let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
                let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
                    .ok()?
                    .inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0);
                Some(t * var.sqrt() / (n as f64).sqrt())
            })
            .flatten();
        Some(Estimate {
            n,
            mean,
            half_width,
        })
    }

    /// The interval `[mean − half_width, mean + half_width]`; `None` with one sample.
    pub fn interval(&self) -> Option<(f64, f64)> {
        self.half_width.map(|h| (self.mean - h, self.mean + h))
    }

    /// Whether the two means differ by more than the seeds' spread: their intervals do not
    /// overlap. `None` when either has one sample. Disjoint 95 % intervals are a conservative
    /// test (a difference can be significant while they overlap), so `Some(false)` means
    /// "not shown", not "the same".
    pub fn differs_from(&self, other: &Estimate) -> Option<bool> {
        let (a0, a1) = self.interval()?;
        let (b0, b1) = other.interval()?;
        Some(a1 < b0 || b1 < a0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_students_t_over_root_n() {
        // 1..=5: mean 3, s = √2.5; t(0.975, 4) = 2.776445 (tables).
        let e = Estimate::of(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!((e.n, e.mean), (5, 3.0));
        let want = 2.776_445 * 2.5f64.sqrt() / 5f64.sqrt();
        assert!((e.half_width.unwrap() - want).abs() < 1e-5, "{e:?}");
    }

    #[test]
    fn one_sample_has_no_interval_and_none_has_no_estimate() {
        let e = Estimate::of(&[7.0]).unwrap();
        assert_eq!((e.mean, e.half_width), (7.0, None));
        assert_eq!(Estimate::of(&[]), None);
        assert_eq!(Estimate::of(&[1.0, f64::NAN]), None);
        assert_eq!(e.differs_from(&e), None);
    }

    #[test]
    fn disjoint_intervals_differ_and_overlapping_ones_are_not_shown_to() {
        let a = Estimate::of(&[10.0, 11.0, 9.0, 10.0]).unwrap();
        let b = Estimate::of(&[20.0, 21.0, 19.0, 20.0]).unwrap();
        let c = Estimate::of(&[10.5, 11.5, 9.5, 10.5]).unwrap();
        assert_eq!(a.differs_from(&b), Some(true));
        assert_eq!(a.differs_from(&c), Some(false));
    }
}
