//! `sim.faults:` — faults injected into a simulated run: packet loss and corruption per link
//! and links that go down for a while (the simulator's [`xrdma_sim::FaultConfig`], read
//! straight into its types), a receiver that stops reposting receives and a slow receiver
//! (the runner's host faults, [`HostFaults`]).
//!
//! ```yaml
//! sim:
//!   faults:
//!     loss:                                   # one mapping or a list
//!       - { rate: 0.1% }                      # every link, both directions
//!       - { link: host 3, direction: up, rate: 2% }
//!     corrupt: { link: host 1, direction: down, rate: 1% }
//!     link-down: { link: host 2, at: 200us, for: 100us }
//!     stop-reposting: { host: 0, at: 50us, for: 300us }
//!     slow-receiver: { host: 0, per-message: 20us }
//! ```

use crate::check::{under, FieldError, OneOrMany};
use crate::traffic::{Stall, Stalls};
use serde::Deserialize;
use xrdma_sim::{FaultConfig, LinkOutage, LinkRate};

/// A receiving application that takes `per-message` for every message delivered to it: the
/// host gets its next turn only that long after the turn in which the messages arrived
/// (`slow-receiver: { host: 0, per-message: 20us }`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (a slow receiver `{ host: 0, per-message: 20us }`)"
)]
pub struct SlowReceiver {
    /// Host index.
    pub host: u32,
    /// Processing time per delivered message, > 0.
    #[serde(deserialize_with = "xrdma::units::deserialize_nonzero_span")]
    pub per_message: xrdma::Span,
}

/// The host faults of `sim.faults`, which the runner injects between the driver and each host
/// (the network's faults are the simulator's [`FaultConfig`]). Default: none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostFaults {
    /// Windows in which a host keeps running, polling and acknowledging, but does not
    /// repost the receive WRs it consumes (they are posted when the window ends).
    pub stop_reposting: Vec<Stall>,
    /// Receivers that take a processing time per delivered message.
    pub slow_receiver: Vec<SlowReceiver>,
}

impl HostFaults {
    /// Whether no host fault is configured.
    pub fn is_empty(&self) -> bool {
        self.stop_reposting.is_empty() && self.slow_receiver.is_empty()
    }

    /// Every host index the faults name, with the key that names it.
    pub fn hosts(&self) -> Vec<(&'static str, u32)> {
        let stop = self
            .stop_reposting
            .iter()
            .map(|s| ("stop-reposting", s.host));
        let slow = self.slow_receiver.iter().map(|s| ("slow-receiver", s.host));
        stop.chain(slow).collect()
    }
}

/// The `faults:` mapping as written: the simulator's link faults in its own types, one mapping
/// or a list of them each, and the host faults.
#[derive(Deserialize)]
#[serde(
    rename_all = "kebab-case",
    deny_unknown_fields,
    expecting = "a mapping (faults `{ loss, corrupt, link-down, stop-reposting, slow-receiver }`)"
)]
pub(crate) struct RawFaults {
    #[serde(default)]
    loss: OneOrMany<LinkRate>,
    #[serde(default)]
    corrupt: OneOrMany<LinkRate>,
    #[serde(default)]
    link_down: OneOrMany<LinkOutage>,
    #[serde(default)]
    stop_reposting: Stalls,
    #[serde(default)]
    slow_receiver: OneOrMany<SlowReceiver>,
}

/// Splits the block into the simulator's link faults and the runner's host faults (the values
/// were checked as they were read; the hosts are checked against the fabric by the runner).
pub(crate) fn check_faults(raw: RawFaults) -> Result<(FaultConfig, HostFaults), FieldError> {
    let link = FaultConfig {
        loss: raw.loss.items,
        corrupt: raw.corrupt.items,
        link_down: raw.link_down.items,
    };
    let host = HostFaults {
        stop_reposting: raw
            .stop_reposting
            .check()
            .map_err(under("stop-reposting"))?,
        slow_receiver: raw.slow_receiver.items,
    };
    Ok((link, host))
}
