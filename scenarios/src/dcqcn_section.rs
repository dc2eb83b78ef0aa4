//! The `sim.dcqcn:` block: DCQCN rate control at every NIC (the simulator validates the ranges
//! against the link rate and reports them at this block's keys).

use crate::check::FieldError;
use crate::units::{Rate, Size, Span};
use serde::Deserialize;

/// DCQCN reaction-point parameters as written; `None` keys take the simulator's defaults
/// (Zhu et al., SIGCOMM 2015, and the HPCC ns-3 artifact: g = 1/256, α update 55 µs, rate
/// increase timer 55 µs, byte counter 10 MB, F = 5, R_AI 5 Mb/s and R_HAI 50 Mb/s at 25 Gb/s
/// scaled by the link rate, minimum rate 1 Gb/s).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct DcqcnSection {
    /// EWMA gain g of α, in (0, 1].
    pub g: Option<f64>,
    /// α decay period K.
    pub alpha_update: Option<xrdma::Span>,
    /// Rate-increase timer period T.
    pub rate_increase_timer: Option<xrdma::Span>,
    /// Byte counter B, bytes.
    pub byte_counter_bytes: Option<u64>,
    /// Fast-recovery stage count F.
    pub fast_recovery_steps: Option<u32>,
    /// Additive increase step R_AI, bits per second.
    pub rate_ai_bps: Option<u64>,
    /// Hyper increase step R_HAI, bits per second.
    pub rate_hai_bps: Option<u64>,
    /// Minimum rate, bits per second.
    pub min_rate_bps: Option<u64>,
}

/// The `dcqcn:` mapping as written.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (DCQCN parameters `{ g, alpha-update, rate-increase-timer, \
                 byte-counter, fast-recovery-steps, rate-ai, rate-hai, min-rate }`)"
)]
pub(crate) struct RawDcqcn {
    g: Option<f64>,
    alpha_update: Option<Span>,
    rate_increase_timer: Option<Span>,
    byte_counter: Option<Size>,
    fast_recovery_steps: Option<u32>,
    rate_ai: Option<Rate>,
    rate_hai: Option<Rate>,
    min_rate: Option<Rate>,
}

/// Reads the DCQCN parameters as given (the simulator checks their ranges).
pub(crate) fn check_dcqcn(raw: RawDcqcn) -> Result<DcqcnSection, FieldError> {
    Ok(DcqcnSection {
        g: raw.g,
        alpha_update: raw.alpha_update.map(|t| t.0),
        rate_increase_timer: raw.rate_increase_timer.map(|t| t.0),
        byte_counter_bytes: raw.byte_counter.map(|b| b.0),
        fast_recovery_steps: raw.fast_recovery_steps,
        rate_ai_bps: raw.rate_ai.map(|r| r.0),
        rate_hai_bps: raw.rate_hai.map(|r| r.0),
        min_rate_bps: raw.min_rate.map(|r| r.0),
    })
}
