//! The `verbs:` block: where the real-RDMA backend runs (the simulator ignores it).
//!
//! ```yaml
//! verbs:
//!   device: rxe0        # as ibv_devices names it; default: the first device
//!   port: 1             # default 1
//!   gid-index: 1        # default: the first RoCE v2 IPv4-mapped GID
//!   run-timeout: 60s    # wall-clock limit of one run; default 60 s
//! ```

use crate::check::{deserialize_checked, field_error, FieldError};
use crate::units::Span;
use serde::{Deserialize, Deserializer};
use xrdma::Time;

/// Device, port and GID of the real-RDMA backend, and its run limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerbsSection {
    /// Device name (`rxe0`, `mlx5_0`); `None`: the first device.
    pub device: Option<String>,
    /// Port number (1-based); `None`: 1.
    pub port: Option<u8>,
    /// GID index; `None`: the backend chooses a RoCE v2 IPv4-mapped GID.
    pub gid_index: Option<u32>,
    /// Wall-clock limit of one run; messages not finished by then are reported missing.
    pub run_timeout: Time,
}

impl Default for VerbsSection {
    fn default() -> Self {
        VerbsSection {
            device: None,
            port: None,
            gid_index: None,
            run_timeout: Time::from_ms(60_000),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawVerbs {
    device: Option<String>,
    port: Option<u8>,
    gid_index: Option<u32>,
    run_timeout: Option<Span>,
}

fn check_verbs(raw: RawVerbs) -> Result<VerbsSection, FieldError> {
    if raw.port == Some(0) {
        return Err(field_error("port", "ports are numbered from 1"));
    }
    if raw.device.as_deref().is_some_and(|d| d.trim().is_empty()) {
        return Err(field_error("device", "must not be empty"));
    }
    let d = VerbsSection::default();
    let run_timeout = raw.run_timeout.map_or(d.run_timeout, |t| t.0);
    if run_timeout == Time::ZERO {
        return Err(field_error("run-timeout", "must be greater than 0"));
    }
    Ok(VerbsSection {
        device: raw.device,
        port: raw.port,
        gid_index: raw.gid_index,
        run_timeout,
    })
}

impl<'de> Deserialize<'de> for VerbsSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked(
            d,
            "the RDMA device `{ device, port, gid-index, run-timeout }`",
            check_verbs,
        )
    }
}
