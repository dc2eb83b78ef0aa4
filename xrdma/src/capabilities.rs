//! [`Capabilities`]: what a backend observes and delivers, declared instead of answered with a
//! silent `None` or `0`.

use serde::{Deserialize, Serialize};

/// The congestion signals and counters a [`crate::Transport`] backend delivers. A runner puts
/// them in its results, so a counter a backend cannot observe reads as absent, not as zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Capabilities {
    /// [`crate::Transport::poll_congestion`] reports, per QP, the RoCEv2 CNPs that QP received
    /// (its peer saw ECN CE marks on its packets). `false`: it always returns `None`, and a
    /// window that shrinks on ECN never shrinks.
    pub cnp_per_qp: bool,
    /// The backend counts the packets marked ECN CE in the network.
    pub ecn_marks: bool,
    /// The backend reports buffer occupancy: switch buffer and egress queue depths (the most
    /// at once, and over time when sampled).
    pub buffer_occupancy: bool,
    /// The backend reads per-port packet counters: data packets sent, RNR NAKs, sequence-error
    /// NAKs.
    pub port_counters: bool,
}

impl Capabilities {
    /// Everything observed (the simulator: it is the network).
    pub const ALL: Capabilities = Capabilities {
        cnp_per_qp: true,
        ecn_marks: true,
        buffer_occupancy: true,
        port_counters: true,
    };

    /// Nothing observed beyond completions.
    pub const NONE: Capabilities = Capabilities {
        cnp_per_qp: false,
        ecn_marks: false,
        buffer_occupancy: false,
        port_counters: false,
    };
}
