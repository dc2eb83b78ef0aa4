//! [`Capabilities`]: what a backend observes and delivers, declared instead of answered with a
//! silent `None` or `0`.
//!
//! The send window ([`crate::window`]) runs the same law on every backend; which congestion
//! signals reach it ([`crate::WindowSignals`], the result's `transport.congestion-signals`) follows
//! from these declarations and the link rate the runner passes:
//!
//! | backend | queueing delay | ECN, per-QP CNPs | ECN, port CNPs |
//! |---|---|---|---|
//! | simulator | yes (its `link-rate`) | yes | — (per-QP supersedes) |
//! | verbs, mlx5 | yes (the port's active rate) | no | yes (`rp_cnp_handled`) |
//! | verbs, rxe | with a netdev that declares its speed; none on a virtio-net NIC without one | no | no (no CNP counter) |
//! | in-memory (tests) | with a configured rate | yes | no |

use serde::{Deserialize, Serialize};

/// The congestion signals and counters a [`crate::Transport`] backend delivers. A runner puts
/// them in its results, so a counter a backend cannot observe reads as absent, not as zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub struct Capabilities {
    /// [`crate::Transport::poll_congestion`] reports, per QP, the RoCEv2 CNPs that QP received
    /// (its peer saw ECN CE marks on its packets). `false`: it always returns `None`, and a
    /// window that shrinks on ECN never shrinks.
    pub cnp_per_qp: bool,
    /// [`crate::Transport::poll_port_cnps`] reports the CNPs the port received as a DCQCN
    /// reaction point (mlx5's `rp_cnp_handled`), not which QP they were for: the endpoint
    /// takes a rise as an ECN echo for every connection with bytes in flight. Ignored when
    /// [`Capabilities::cnp_per_qp`] holds (the finer signal). Absent from capabilities
    /// written before it was declared (read as `false`).
    #[serde(default)]
    pub cnp_per_port: bool,
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
    /// Everything observed (the simulator: it is the network). CNPs per QP, so no port-level
    /// count: it would say less than the per-QP reports.
    pub const ALL: Capabilities = Capabilities {
        cnp_per_qp: true,
        cnp_per_port: false,
        ecn_marks: true,
        buffer_occupancy: true,
        port_counters: true,
    };

    /// Nothing observed beyond completions.
    pub const NONE: Capabilities = Capabilities {
        cnp_per_qp: false,
        cnp_per_port: false,
        ecn_marks: false,
        buffer_occupancy: false,
        port_counters: false,
    };
}
