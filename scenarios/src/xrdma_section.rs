//! The `xrdma:` block: the middleware's flow-control settings.

use crate::check::{field_error, FieldError};
use crate::units::{Size, Span};
use serde::Deserialize;

/// The middleware settings, every one with a default.
///
/// Defaults follow the XRDMA description: 64 KiB fragments, β within
/// [0.5, 0.8]. The window values are byte counts of unacknowledged payload per connection.
#[derive(Clone, Debug, PartialEq)]
pub struct XrdmaSection {
    /// Messages larger than this are split into fragments of this many bytes.
    /// Default 64 KiB (65536); ≥ 1 KiB and ≤ `max_window`.
    pub fragment_size: u64,
    /// Messages of at most this many bytes go eagerly (one SEND into a receive buffer posted in
    /// advance); larger ones by rendezvous (RTS, the receiver's grant, RDMA WRITEs into the
    /// granted buffer). Default 4 KiB (XRDMA's small/large split); ≤ 64 KiB.
    pub eager_limit: u64,
    /// The most landing memory a receiver grants at once, bytes: large messages beyond it wait
    /// for their grant until earlier ones have landed (receiver-driven admission). Default
    /// 1 GiB; > 0.
    pub landing_budget: u64,
    /// Send window at connection start, bytes. Default 64 KiB; `min_window ≤ initial_window ≤
    /// max_window`.
    pub initial_window: u64,
    /// The window never shrinks below this, bytes. Default 4 KiB; ≥ 1.
    pub min_window: u64,
    /// The window never grows above this, bytes; also sizes the per-connection staging ring.
    /// Default 256 KiB.
    pub max_window: u64,
    /// Multiplicative decrease on an ECN signal: window ← β × window. Default 0.5;
    /// within [0.5, 0.8].
    pub beta: f64,
    /// Additive increase per RTT while the queueing delay is below the target: α fragments
    /// (window ← window × (1 + α) while the window is below one fragment). Default 0.125;
    /// within (0, 1].
    pub alpha: f64,
    /// Base target queueing delay: the window grows below `target-delay` + one fragment's
    /// serialisation at the link rate + the flow scaling, and shrinks above it (at most once
    /// per RTT, to no less than β × window). Default 10 µs; > 0.
    pub target_delay: xrdma::Span,
    /// Extra target delay at `min-window`, falling to none at `max-window` (Swift's
    /// flow-based scaling): fan-in flows with small windows get a larger target. Default
    /// 10 µs; `0us` turns it off.
    pub flow_scaling_range: xrdma::Span,
    /// A fragment not ACKed within this time is reclaimed and reported as an error. Default
    /// 1 s; > 0.
    pub ack_timeout: xrdma::Span,
    /// Whether the window adapts (grows with RTT, shrinks by β on ECN); `false` keeps it at
    /// `initial-window`. Default `true`.
    pub adaptive_window: bool,
    /// Deliver each fragment as it arrives instead of whole messages (no reassembly buffer at
    /// the receiver; for large runs). Default `false`.
    pub deliver_fragments: bool,
    /// Receive WRs kept posted per connection (`recv-depth`). Default 256; ≥ 2.
    pub recv_depth: u32,
    /// Whether senders stay within half the peer's receive depth (`receive-credits`, see
    /// [`xrdma::Config::receive_credits`]); `false` lets a stalled receiver run out of posted
    /// receives, so its NIC answers RNR NAKs. Default `true`.
    pub receive_credits: bool,
}

impl Default for XrdmaSection {
    fn default() -> Self {
        // The core's own defaults, so a scenario that leaves a key out gets what a program
        // using the library directly would get.
        let c = xrdma::Config::default();
        XrdmaSection {
            fragment_size: c.fragment_size,
            eager_limit: c.eager_limit,
            landing_budget: c.landing_budget,
            initial_window: c.initial_window,
            min_window: c.min_window,
            max_window: c.max_window,
            beta: c.beta,
            alpha: c.alpha,
            target_delay: c.target_delay,
            flow_scaling_range: c.flow_scaling_range,
            ack_timeout: c.ack_timeout,
            adaptive_window: c.adaptive_window,
            deliver_fragments: c.deliver_fragments,
            recv_depth: c.recv_depth,
            receive_credits: c.receive_credits,
        }
    }
}

/// The `xrdma:` mapping as written.
#[derive(Deserialize, Default)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (the xrdma settings)"
)]
pub(crate) struct RawXrdma {
    fragment_size: Option<Size>,
    eager_limit: Option<Size>,
    landing_budget: Option<Size>,
    initial_window: Option<Size>,
    min_window: Option<Size>,
    max_window: Option<Size>,
    beta: Option<f64>,
    alpha: Option<f64>,
    target_delay: Option<Span>,
    flow_scaling_range: Option<Span>,
    ack_timeout: Option<Span>,
    adaptive_window: Option<bool>,
    deliver_fragments: Option<bool>,
    recv_depth: Option<u32>,
    receive_credits: Option<bool>,
}

/// The largest `flow-scaling-range` accepted: 1 s (a target beyond it is no target).
pub const MAX_FLOW_SCALING_RANGE: xrdma::Span = xrdma::Span::from_ms(1000);

/// The smallest fragment size accepted: 1 KiB, the smallest common RoCE MTU.
pub const MIN_FRAGMENT_SIZE: u64 = 1 << 10;

/// Fills the defaults and checks the sizes, the window ordering, β, α and the times.
pub(crate) fn check_xrdma(raw: RawXrdma) -> Result<XrdmaSection, FieldError> {
    let d = XrdmaSection::default();
    let s = XrdmaSection {
        fragment_size: raw.fragment_size.map_or(d.fragment_size, |v| v.0),
        eager_limit: raw.eager_limit.map_or(d.eager_limit, |v| v.0),
        landing_budget: raw.landing_budget.map_or(d.landing_budget, |v| v.0),
        initial_window: raw.initial_window.map_or(d.initial_window, |v| v.0),
        min_window: raw.min_window.map_or(d.min_window, |v| v.0),
        max_window: raw.max_window.map_or(d.max_window, |v| v.0),
        beta: raw.beta.unwrap_or(d.beta),
        alpha: raw.alpha.unwrap_or(d.alpha),
        target_delay: raw.target_delay.map_or(d.target_delay, |v| v.0),
        flow_scaling_range: raw.flow_scaling_range.map_or(d.flow_scaling_range, |v| v.0),
        ack_timeout: raw.ack_timeout.map_or(d.ack_timeout, |v| v.0),
        adaptive_window: raw.adaptive_window.unwrap_or(d.adaptive_window),
        deliver_fragments: raw.deliver_fragments.unwrap_or(d.deliver_fragments),
        recv_depth: raw.recv_depth.unwrap_or(d.recv_depth),
        receive_credits: raw.receive_credits.unwrap_or(d.receive_credits),
    };
    if s.fragment_size < MIN_FRAGMENT_SIZE {
        return Err(field_error(
            "fragment-size",
            format!(
                "{} bytes is below the minimum of 1 KiB ({MIN_FRAGMENT_SIZE} bytes)",
                s.fragment_size
            ),
        ));
    }
    if s.eager_limit > xrdma::config::MAX_EAGER_LIMIT {
        return Err(field_error(
            "eager-limit",
            format!(
                "{} bytes is above the largest receive buffer of 64 KiB ({} bytes)",
                s.eager_limit,
                xrdma::config::MAX_EAGER_LIMIT
            ),
        ));
    }
    if s.landing_budget == 0 {
        return Err(field_error("landing-budget", "must be at least 1 byte"));
    }
    if s.min_window == 0 {
        return Err(field_error("min-window", "must be at least 1 byte"));
    }
    // initial-window is the value that must sit between the bounds: it is blamed first.
    if s.min_window > s.initial_window {
        return Err(FieldError::new(
            vec!["initial-window", "min-window"],
            format!(
                "initial-window ({}) is below min-window ({}): need min-window ≤ \
                 initial-window ≤ max-window",
                byte_count(s.initial_window),
                byte_count(s.min_window)
            ),
        ));
    }
    if s.initial_window > s.max_window {
        return Err(FieldError::new(
            vec!["initial-window", "max-window"],
            format!(
                "initial-window ({}) is above max-window ({}): need min-window ≤ \
                 initial-window ≤ max-window",
                byte_count(s.initial_window),
                byte_count(s.max_window)
            ),
        ));
    }
    if s.fragment_size > s.max_window {
        return Err(FieldError::new(
            vec!["fragment-size", "max-window"],
            format!(
                "fragment-size ({} bytes) is above max-window ({} bytes): a fragment never \
                 exceeds the window, so fragments that large would never be sent",
                s.fragment_size, s.max_window
            ),
        ));
    }
    if !(0.5..=0.8).contains(&s.beta) {
        return Err(field_error(
            "beta",
            format!("{} is outside [0.5, 0.8]", s.beta),
        ));
    }
    if !(s.alpha > 0.0 && s.alpha <= 1.0) {
        return Err(field_error(
            "alpha",
            format!("{} is outside (0, 1]", s.alpha),
        ));
    }
    if s.target_delay == xrdma::Span::ZERO {
        return Err(field_error("target-delay", "must be above 0"));
    }
    if s.flow_scaling_range > MAX_FLOW_SCALING_RANGE {
        return Err(field_error(
            "flow-scaling-range",
            format!(
                "{} is above 1 s; the range is added to a queueing-delay target",
                s.flow_scaling_range
            ),
        ));
    }
    if s.ack_timeout == xrdma::Span::ZERO {
        return Err(field_error("ack-timeout", "must be above 0"));
    }
    Ok(s)
}

/// `n` bytes in words: "1 byte", "4096 bytes".
fn byte_count(n: u64) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{n} bytes")
    }
}
