//! DCQCN reaction point (RP): the per-QP rate controller of Zhu et al., "Congestion Control for
//! Large-Scale RDMA Deployments", SIGCOMM 2015, §3.3 (parameter names as in the HPCC ns-3
//! artifact, `rdma-hw.cc`).
//!
//! State per QP: current rate R_C, target rate R_T, congestion estimate α, the rate-increase
//! timer stage count T, the byte-counter stage count BC and the bytes sent since the last
//! byte-counter expiry.
//!
//! The timers are **lazy**: nothing is scheduled per QP. [`DcqcnState::advance`] applies every
//! whole period that has elapsed since the last update (α decays and rate-increase events) when
//! the state matters — before the QP sends a packet, when a CNP arrives, or when a caller asks
//! for the rate. The result is the same as running periodic timers, because a period's effect
//! depends only on the state and the period count, not on the wall-clock moment it is applied.
//!
//! A QP's controller starts on its first CNP (as in the ns-3 artifact); until then it sends at
//! line rate with α = 1 and no timers run.

use crate::config_error::SimConfigError;
use serde::{Deserialize, Serialize};
use xrdma::{Span, Time};

/// Link rate the DCQCN additive/hyper increase steps are specified at (25 Gb/s, HPCC ns-3
/// artifact); they scale by `link_rate_bps / 25 Gb/s`.
pub const DCQCN_REFERENCE_RATE_BPS: u64 = 25_000_000_000;

/// DCQCN reaction-point parameters (all per QP). Defaults: see each field.
///
/// It is also the `sim.dcqcn` block of a scenario, read as is: keys are the fields in
/// kebab-case without the unit suffix (`byte-counter`, `rate-ai`, `min-rate`), sizes, rates and
/// periods take units ([`xrdma::units`]), a key left out keeps its default, and `dcqcn: {}` is
/// every default. [`DcqcnConfig::validate`] checks the ranges against the link rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    default,
    rename_all(deserialize = "kebab-case"),
    deny_unknown_fields,
    expecting = "a mapping (DCQCN parameters `{ g, alpha-update, rate-increase-timer, \
                 byte-counter, fast-recovery-steps, rate-ai, rate-hai, min-rate }`)"
)]
pub struct DcqcnConfig {
    /// EWMA gain g of the α estimate, in (0, 1]. Default 1/256 (Zhu et al. 2015; HPCC artifact
    /// `EWMA_GAIN 0.00390625`).
    pub g: f64,
    /// α decay period K: α ← (1 − g)·α for every `alpha_update` without a CNP. Default 55 µs
    /// (Zhu et al. 2015; HPCC artifact `ALPHA_RESUME_INTERVAL 55`).
    #[serde(deserialize_with = "xrdma::units::deserialize_span")]
    pub alpha_update: Span,
    /// Rate-increase timer period T. Default 55 µs (Zhu et al. 2015; the HPCC ns-3 artifact's
    /// `dcqcn_paper` setting, `RP_TIMER 55`). The artifact's firmware-style `dcqcn` setting
    /// has 300 µs, but with a 1 µs α period and one fast-recovery step, which this model does
    /// not take: 300 µs beside F = 5 put 1.5 ms of fast recovery after every CNP, and two
    /// senders' rates drifted apart for tens of milliseconds (worst 10 ms Jain 0.71).
    #[serde(deserialize_with = "xrdma::units::deserialize_span")]
    pub rate_increase_timer: Span,
    /// Byte counter B: one rate-increase event per `byte_counter_bytes` wire bytes sent.
    /// Default 10 MB = 10^7 bytes (Zhu et al. 2015, B = 10 MB).
    #[serde(
        rename(deserialize = "byte-counter"),
        deserialize_with = "xrdma::units::deserialize_size"
    )]
    pub byte_counter_bytes: u64,
    /// Fast-recovery stage count F: while both stage counts are ≤ F an increase event is fast
    /// recovery. Default 5 (Zhu et al. §3.3, as in QCN).
    pub fast_recovery_steps: u32,
    /// Additive increase step R_AI, bits per second; `None` = 5 Mb/s scaled by
    /// `link_rate_bps / 25 Gb/s` (HPCC artifact `RATE_AI 5Mb/s` at 25 Gb/s).
    #[serde(
        rename(deserialize = "rate-ai"),
        deserialize_with = "xrdma::units::deserialize_opt_rate"
    )]
    pub rate_ai_bps: Option<u64>,
    /// Hyper increase step R_HAI, bits per second; `None` = 50 Mb/s scaled by
    /// `link_rate_bps / 25 Gb/s` (HPCC artifact `RATE_HAI 50Mb/s` at 25 Gb/s).
    #[serde(
        rename(deserialize = "rate-hai"),
        deserialize_with = "xrdma::units::deserialize_opt_rate"
    )]
    pub rate_hai_bps: Option<u64>,
    /// Floor of R_C, bits per second. Default 1 Gb/s (the HPCC ns-3 artifact's minimum rate).
    #[serde(
        rename(deserialize = "min-rate"),
        deserialize_with = "xrdma::units::deserialize_rate"
    )]
    pub min_rate_bps: u64,
}

impl Default for DcqcnConfig {
    fn default() -> Self {
        DcqcnConfig {
            g: 1.0 / 256.0,
            alpha_update: Span::from_us(55),
            rate_increase_timer: Span::from_us(55),
            byte_counter_bytes: 10_000_000,
            fast_recovery_steps: 5,
            rate_ai_bps: None,
            rate_hai_bps: None,
            min_rate_bps: 1_000_000_000,
        }
    }
}

fn invalid(field: &'static str, reason: String) -> SimConfigError {
    SimConfigError::Invalid { field, reason }
}

impl DcqcnConfig {
    /// Check the parameters against the NIC line rate `link_rate_bps`.
    ///
    /// # Errors
    /// [`SimConfigError::Invalid`] when `g` is not in (0, 1], a period is 0,
    /// `byte_counter_bytes` is 0, `min_rate_bps` is 0 or above the line rate, or an explicit
    /// increase step is 0.
    pub fn validate(&self, link_rate_bps: u64) -> Result<(), SimConfigError> {
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(invalid("dcqcn.g", format!("{} is not in (0, 1]", self.g)));
        }
        if self.alpha_update == Span::ZERO {
            return Err(invalid("dcqcn.alpha_update", "must be positive".into()));
        }
        if self.rate_increase_timer == Span::ZERO {
            return Err(invalid(
                "dcqcn.rate_increase_timer",
                "must be positive".into(),
            ));
        }
        if self.byte_counter_bytes == 0 {
            return Err(invalid(
                "dcqcn.byte_counter_bytes",
                "must be positive".into(),
            ));
        }
        if self.min_rate_bps == 0 || self.min_rate_bps > link_rate_bps {
            return Err(invalid(
                "dcqcn.min_rate_bps",
                format!(
                    "{} b/s is not in 1..={link_rate_bps} (the line rate)",
                    self.min_rate_bps
                ),
            ));
        }
        if self.rate_ai_bps == Some(0) {
            return Err(invalid("dcqcn.rate_ai_bps", "must be positive".into()));
        }
        if self.rate_hai_bps == Some(0) {
            return Err(invalid("dcqcn.rate_hai_bps", "must be positive".into()));
        }
        Ok(())
    }

    /// The parameters with defaults resolved for a NIC of `link_rate_bps`: R_AI and R_HAI
    /// default to 5 and 50 Mb/s × `link_rate_bps / 25 Gb/s`.
    pub fn resolve(&self, link_rate_bps: u64) -> DcqcnParams {
        let scale = link_rate_bps as f64 / DCQCN_REFERENCE_RATE_BPS as f64;
        DcqcnParams {
            line_bps: link_rate_bps as f64,
            min_bps: self.min_rate_bps as f64,
            g: self.g,
            ai_bps: self.rate_ai_bps.map_or(5e6 * scale, |r| r as f64),
            hai_bps: self.rate_hai_bps.map_or(50e6 * scale, |r| r as f64),
            f: self.fast_recovery_steps,
            alpha_period: self.alpha_update,
            timer_period: self.rate_increase_timer,
            byte_counter: self.byte_counter_bytes,
        }
    }
}

/// DCQCN parameters resolved for one line rate (rates in bits per second as `f64`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnParams {
    /// Line rate, b/s (ceiling of R_C and R_T).
    pub line_bps: f64,
    /// Minimum rate, b/s (floor of R_C).
    pub min_bps: f64,
    /// α gain g.
    pub g: f64,
    /// Additive increase step R_AI, b/s.
    pub ai_bps: f64,
    /// Hyper increase step R_HAI, b/s.
    pub hai_bps: f64,
    /// Fast-recovery stage count F.
    pub f: u32,
    /// α decay period.
    pub alpha_period: Span,
    /// Rate-increase timer period.
    pub timer_period: Span,
    /// Byte counter, bytes.
    pub byte_counter: u64,
}

/// Which rule one rate-increase event applied (Zhu et al. §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncreasePhase {
    /// Both stage counts ≤ F: R_C ← (R_T + R_C)/2.
    FastRecovery,
    /// Only the byte-counter stage BC > F: R_T ← R_T + R_AI, then R_C ← (R_T + R_C)/2.
    Additive,
    /// The timer stage T > F (or both > F): R_T ← R_T + i·R_HAI, then R_C ← (R_T + R_C)/2
    /// (see [`DcqcnState::increase`]).
    Hyper,
}

/// One QP's reaction-point state. Rates in bits per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnState {
    /// Current rate R_C, b/s: the QP's packets are paced at this rate.
    pub rc_bps: f64,
    /// Target rate R_T, b/s.
    pub rt_bps: f64,
    /// Congestion estimate α in [0, 1].
    pub alpha: f64,
    /// Rate-increase timer expiries since the last CNP (T).
    pub timer_stage: u32,
    /// Byte-counter expiries since the last CNP (BC).
    pub byte_stage: u32,
    /// Wire bytes sent since the last byte-counter expiry or CNP.
    pub bytes: u64,
    /// Whether a CNP has started the controller (timers run only once started).
    pub active: bool,
    /// Start of the current α-decay period.
    pub alpha_at: Time,
    /// Start of the current rate-increase timer period.
    pub timer_at: Time,
}

/// Largest number of elapsed timer periods applied one by one; beyond it R_C and R_T have long
/// reached the line rate (from 1 Gb/s the hyper increase reaches any line rate in far fewer).
const MAX_STEPS: u64 = 100_000;

impl DcqcnState {
    /// A QP at line rate, α = 1, controller not started.
    pub fn new(p: &DcqcnParams) -> Self {
        DcqcnState {
            rc_bps: p.line_bps,
            rt_bps: p.line_bps,
            alpha: 1.0,
            timer_stage: 0,
            byte_stage: 0,
            bytes: 0,
            active: false,
            alpha_at: Time::ZERO,
            timer_at: Time::ZERO,
        }
    }

    /// Apply every whole α-decay and rate-increase period elapsed up to `now`. No effect
    /// before the first CNP.
    pub fn advance(&mut self, p: &DcqcnParams, now: Time) {
        if !self.active {
            return;
        }
        let ap = p.alpha_period.as_ps();
        let k = (now - self.alpha_at).as_ps() / ap;
        if k > 0 {
            // (1 − g)^k; k beyond i32 leaves α at 0 to f64 precision anyway.
            self.alpha *= (1.0 - p.g).powi(k.min(i32::MAX as u64) as i32);
            self.alpha_at += p.alpha_period * k;
        }
        let tp = p.timer_period.as_ps();
        let k = (now - self.timer_at).as_ps() / tp;
        if k > 0 {
            self.timer_at += p.timer_period * k;
            for step in 0..k {
                if step >= MAX_STEPS || (self.rc_bps >= p.line_bps && self.rt_bps >= p.line_bps) {
                    // Further events only count stages: the rates are at the ceiling.
                    let rest = (k - step).min(u32::MAX as u64) as u32;
                    self.timer_stage = self.timer_stage.saturating_add(rest);
                    self.rc_bps = p.line_bps;
                    self.rt_bps = p.line_bps;
                    break;
                }
                self.timer_stage = self.timer_stage.saturating_add(1);
                self.increase(p);
            }
        }
    }

    /// Reaction to a CNP at `now` (Zhu et al. §3.3), after applying elapsed periods:
    /// R_T ← R_C; R_C ← max(R_C·(1 − α/2), min rate); α ← (1 − g)·α + g; the timer, byte
    /// counter and both stage counts restart at `now`.
    pub fn on_cnp(&mut self, p: &DcqcnParams, now: Time) {
        self.advance(p, now);
        self.rt_bps = self.rc_bps;
        self.rc_bps = (self.rc_bps * (1.0 - self.alpha / 2.0)).max(p.min_bps);
        self.alpha = (1.0 - p.g) * self.alpha + p.g;
        self.timer_stage = 0;
        self.byte_stage = 0;
        self.bytes = 0;
        self.alpha_at = now;
        self.timer_at = now;
        self.active = true;
    }

    /// Count `wire_bytes` sent; every `byte_counter` bytes is one byte-counter expiry (BC + 1)
    /// and one rate-increase event. No effect before the first CNP.
    pub fn on_sent(&mut self, p: &DcqcnParams, wire_bytes: u64) {
        if !self.active {
            return;
        }
        self.bytes += wire_bytes;
        while self.bytes >= p.byte_counter {
            self.bytes -= p.byte_counter;
            self.byte_stage = self.byte_stage.saturating_add(1);
            self.increase(p);
        }
    }

    /// One rate-increase event with the current stage counts T (timer) and BC (byte counter);
    /// returns the rule applied. R_T and R_C are capped at the line rate.
    ///
    /// - Fast recovery while both T ≤ F and BC ≤ F: R_C ← (R_T + R_C)/2.
    /// - Hyper increase when the timer alone has passed F (T > F), or both have (Zhu et al.
    ///   §3.3): R_T ← R_T + i·R_HAI with i = T − F, or min(T, BC) − F when both have, then
    ///   R_C ← (R_T + R_C)/2. The timer-alone rule is the one of the HPCC ns-3 artifact's
    ///   Mellanox model, whose 5/50 Mb/s steps are our defaults: with the
    ///   paper's both-counters rule a 10 MB byte counter at a few Gb/s takes tens of
    ///   milliseconds per stage, and a QP cut to the minimum rate would need seconds of
    ///   5 Mb/s additive steps to return to line rate.
    /// - Additive increase when only the byte counter has passed F: R_T ← R_T + R_AI, then
    ///   R_C ← (R_T + R_C)/2.
    pub fn increase(&mut self, p: &DcqcnParams) -> IncreasePhase {
        let (t, bc) = (self.timer_stage, self.byte_stage);
        let phase = if t <= p.f && bc <= p.f {
            IncreasePhase::FastRecovery
        } else if t > p.f {
            let i = if bc > p.f { t.min(bc) - p.f } else { t - p.f };
            self.rt_bps += f64::from(i) * p.hai_bps;
            IncreasePhase::Hyper
        } else {
            self.rt_bps += p.ai_bps;
            IncreasePhase::Additive
        };
        self.rt_bps = self.rt_bps.min(p.line_bps);
        self.rc_bps = ((self.rt_bps + self.rc_bps) / 2.0).min(p.line_bps);
        phase
    }

    /// Earliest start of the packet after one of `wire_bytes` started at `start`:
    /// `start + wire_bytes·8 / R_C` (rounded up to whole picoseconds).
    pub fn next_start(&self, start: Time, wire_bytes: u32) -> Time {
        start + Span::serialization(wire_bytes as u64, (self.rc_bps as u64).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_cnp_halves_the_rate() {
        let p = DcqcnConfig::default().resolve(100_000_000_000);
        let mut s = DcqcnState::new(&p);
        s.on_cnp(&p, Time::ZERO + Span::from_us(3));
        // From line rate with α = 1: R_T = 100 G, R_C = 100 G·(1 − 1/2) = 50 G,
        // α = (1 − g)·1 + g = 1.
        assert_eq!(s.rt_bps, 100e9);
        assert_eq!(s.rc_bps, 50e9);
        assert_eq!(s.alpha, 1.0);
        // At 100 G the steps scale by 4: R_AI = 20 Mb/s, R_HAI = 200 Mb/s.
        assert_eq!((p.ai_bps, p.hai_bps), (20e6, 200e6));
    }
}
