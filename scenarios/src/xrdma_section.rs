//! The `xrdma:` block: the middleware's settings, read straight into [`xrdma::Config`] (its
//! keys, units and defaults are that type's, see its docs) and checked by
//! [`xrdma::Config::validate`]. What this module adds is the scenario's own limits, stricter
//! than the core's, and the mapping of a failed check to the keys to blame.

use crate::check::{field_error, FieldError};
use xrdma::Config;

/// The largest `flow-scaling-range` accepted: 1 s (a target beyond it is no target).
pub const MAX_FLOW_SCALING_RANGE: xrdma::Span = xrdma::Span::from_ms(1000);

/// The smallest fragment size accepted: 1 KiB, the smallest common RoCE MTU.
pub const MIN_FRAGMENT_SIZE: u64 = 1 << 10;
/// The largest fragment size accepted: 1 GiB, the core's own bound ([`Config::validate`]).
pub const MAX_FRAGMENT_SIZE: u64 = 1 << 30;

/// Checks the settings: the core's ranges ([`Config::validate`]) and the scenario's own
/// limits (fragments of at least 1 KiB and at most `max-window`, a flow scaling range of at
/// most 1 s).
pub(crate) fn check_xrdma(c: Config) -> Result<Config, FieldError> {
    if c.fragment_size < MIN_FRAGMENT_SIZE {
        return Err(field_error(
            "fragment-size",
            format!(
                "{} bytes is below the minimum of 1 KiB ({MIN_FRAGMENT_SIZE} bytes)",
                c.fragment_size
            ),
        ));
    }
    // Said here in the scenario's own range: the core's check would name 1 B as its floor.
    if c.fragment_size > MAX_FRAGMENT_SIZE {
        return Err(field_error(
            "fragment-size",
            format!(
                "{} bytes is above the maximum of 1 GiB ({MAX_FRAGMENT_SIZE} bytes)",
                c.fragment_size
            ),
        ));
    }
    if let Err(e) = c.validate() {
        let keys = std::iter::once(e.field).chain(e.also).collect();
        return Err(FieldError::new(keys, e.reason));
    }
    if c.fragment_size > c.max_window {
        return Err(FieldError::new(
            vec!["fragment-size", "max-window"],
            format!(
                "fragment-size ({} bytes) is above max-window ({} bytes): a fragment never \
                 exceeds the window, so fragments that large would never be sent",
                c.fragment_size, c.max_window
            ),
        ));
    }
    if c.flow_scaling_range > MAX_FLOW_SCALING_RANGE {
        return Err(field_error(
            "flow-scaling-range",
            format!(
                "{} is above 1 s; the range is added to a queueing-delay target",
                c.flow_scaling_range
            ),
        ));
    }
    Ok(c)
}
