//! The `rc:` block: the RC QP attributes every backend applies, the simulator's NIC and a real
//! device alike (`xrdma::RcParams`, with the InfiniBand encodings):
//!
//! ```yaml
//! rc:
//!   local-ack-timeout: 12   # 4.096 us x 2^12 = 16.8 ms; 0 = no timeout
//!   retry-cnt: 7            # retransmissions after a timeout before the QP fails
//!   rnr-retry: 7            # resends after an RNR NAK; 7 = forever
//!   min-rnr-timer: 1        # the responder's RNR timer code: 1 = 10 us, 12 = 0.64 ms
//!   path-mtu: 1KiB          # 256, 512, 1024, 2048 or 4096 bytes
//! ```
//!
//! Every key is optional and defaults to `xrdma::RcParams::default()`. A backend applies the
//! smaller of `path-mtu` and its port's MTU: a device's active MTU, the simulator's `sim.mtu`.
//! So that a file means the same on both, a `path-mtu` above `sim.mtu` (written or its
//! default) is refused: the simulated path could not carry it while a device might.

use crate::check::{field_error, FieldError};
use crate::units::Size;
use serde::Deserialize;
use xrdma::RcParams;

/// The `rc:` block as written: `None` for a key left out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RcSection {
    /// `local-ack-timeout`: the 5-bit Local ACK Timeout code (4.096 µs · 2^code, 0 = never).
    pub local_ack_timeout: Option<u8>,
    /// `retry-cnt`: transport retries, 0..=7.
    pub retry_cnt: Option<u8>,
    /// `rnr-retry`: RNR retries, 0..=7 (7 = infinite).
    pub rnr_retry: Option<u8>,
    /// `min-rnr-timer`: the 5-bit minimum RNR NAK timer code (IB Spec vol. 1 Table 45).
    pub min_rnr_timer: Option<u8>,
    /// `path-mtu`, bytes: 256, 512, 1024, 2048 or 4096.
    pub path_mtu: Option<u32>,
}

impl RcSection {
    /// The attributes to apply: what the block gives, the defaults for the rest.
    pub fn params(&self) -> RcParams {
        let d = RcParams::default();
        RcParams {
            local_ack_timeout: self.local_ack_timeout.unwrap_or(d.local_ack_timeout),
            retry_cnt: self.retry_cnt.unwrap_or(d.retry_cnt),
            rnr_retry: self.rnr_retry.unwrap_or(d.rnr_retry),
            min_rnr_timer: self.min_rnr_timer.unwrap_or(d.min_rnr_timer),
            path_mtu: self.path_mtu.unwrap_or(d.path_mtu),
        }
    }
}

/// The `rc:` mapping as written.
#[derive(Deserialize, Default)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (the RC QP attributes `{ local-ack-timeout, retry-cnt, rnr-retry, \
                 min-rnr-timer, path-mtu }`)"
)]
pub(crate) struct RawRc {
    local_ack_timeout: Option<u8>,
    retry_cnt: Option<u8>,
    rnr_retry: Option<u8>,
    min_rnr_timer: Option<u8>,
    path_mtu: Option<Size>,
}

/// Checks the attributes' ranges (`xrdma::RcParams::validate`) and the path MTU's values.
pub(crate) fn check_rc(raw: RawRc) -> Result<RcSection, FieldError> {
    let path_mtu = match raw.path_mtu {
        Some(Size(b)) => Some(u32::try_from(b).map_err(|_| {
            field_error(
                "path-mtu",
                format!("{b} bytes is not an InfiniBand path MTU (256, 512, 1024, 2048 or 4096)"),
            )
        })?),
        None => None,
    };
    let s = RcSection {
        local_ack_timeout: raw.local_ack_timeout,
        retry_cnt: raw.retry_cnt,
        rnr_retry: raw.rnr_retry,
        min_rnr_timer: raw.min_rnr_timer,
        path_mtu,
    };
    if let Err(e) = s.params().validate() {
        let key = match e.field {
            "local_ack_timeout" => "local-ack-timeout",
            "retry_cnt" => "retry-cnt",
            "rnr_retry" => "rnr-retry",
            "min_rnr_timer" => "min-rnr-timer",
            _ => "path-mtu",
        };
        return Err(field_error(key, e.reason));
    }
    Ok(s)
}
