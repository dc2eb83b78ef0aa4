//! The `rc:` block: the RC QP attributes every backend applies, the simulator's NIC and a real
//! device alike, read straight into [`xrdma::RcParams`] (its keys, encodings and defaults are
//! that type's):
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
//! So that a file means the same on both, a `path-mtu` written above `sim.mtu` (written or its
//! default) is refused: the simulated path could not carry it while a device might.

use crate::check::{field_error, FieldError};
use crate::sim_section::SimSection;
use xrdma::RcParams;

/// Checks the attributes' encodings ([`RcParams::validate`], which names the key).
pub(crate) fn check_rc(rc: RcParams) -> Result<RcParams, FieldError> {
    rc.validate().map_err(|e| field_error(e.field, e.reason))?;
    Ok(rc)
}

/// Refuses an `rc.path-mtu`, when the file writes one (`path_mtu_written`), above the
/// simulated ports' `sim.mtu`: the simulator would carry `sim.mtu`-byte packets where a device
/// might carry `path-mtu`, so the file would mean two things. A `path-mtu` at or below
/// `sim.mtu` is what both backends apply; one left out is the port's.
pub(crate) fn check_path_mtu(
    rc: &RcParams,
    path_mtu_written: bool,
    sim: Option<&SimSection>,
) -> Result<(), FieldError> {
    if !path_mtu_written {
        return Ok(());
    }
    let path_mtu = rc.path_mtu;
    let port = sim.map_or(SimSection::default().mtu, |s| s.mtu);
    if path_mtu > port {
        let whose = if sim.is_some() {
            "`sim.mtu`"
        } else {
            "`sim.mtu` (its default)"
        };
        return Err(field_error(
            "rc",
            format!(
                "path-mtu {path_mtu} bytes is above the simulated ports' MTU, {whose} = \
                 {port} bytes: the simulator would send {port}-byte packets where a device may \
                 send {path_mtu}-byte ones; set `sim: {{ mtu: {path_mtu} }}` or lower \
                 rc.path-mtu"
            ),
        ));
    }
    Ok(())
}
