//! The path model of a run: what the ideal FCT of a message (and so its slowdown) needs.

use crate::schema::IdealCompletion;
use serde::{Deserialize, Serialize};

/// The unloaded path between a sender and the receiving host, as the backend states it.
///
/// Every run has one; a backend that cannot state a figure leaves it `null` (the verbs
/// backend does not know the base RTT, for one), and then no slowdown is computed. T*
/// ([`IdealCompletion`]) is derived from it for an incast only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PathModel {
    /// Round trip of a header-only packet and its ACK on idle links, ps.
    pub base_rtt_ps: Option<u64>,
    /// Bottleneck link rate B, bits per second.
    pub bottleneck_bps: Option<u64>,
    /// Per-packet wire overhead, bytes.
    pub header_bytes: Option<u64>,
    /// Payload bytes per packet (the path MTU).
    pub mtu_bytes: Option<u64>,
}

impl PathModel {
    /// T* of `total_bytes` through this path ([`IdealCompletion::incast`]); `None` when a
    /// figure is unknown or T* does not fit.
    pub fn ideal(&self, total_bytes: u64) -> Option<IdealCompletion> {
        IdealCompletion::incast(
            total_bytes,
            self.header_bytes?,
            self.mtu_bytes?,
            self.bottleneck_bps?,
            self.base_rtt_ps?,
        )
    }

    /// The path of an ideal completion (how a result of schema version 2, which had no path
    /// model, states it).
    pub fn of_ideal(i: &IdealCompletion) -> Self {
        PathModel {
            base_rtt_ps: Some(i.base_rtt_ps),
            bottleneck_bps: Some(i.bottleneck_bps),
            header_bytes: Some(i.header_bytes),
            mtu_bytes: Some(i.mtu_bytes),
        }
    }
}
