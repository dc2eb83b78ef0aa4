//! A serialisable picture of one endpoint at one instant: the `stat` tool's rows. Every
//! field is a counter the core keeps anyway ([`ConnStats`], [`ConnUsage`],
//! [`EndpointResources`]); taking a snapshot walks the connection table once and changes
//! nothing. What the core cannot observe is `None` (`null` in JSON), never `0`: the RC
//! transport retransmits and retries RNR inside the NIC, so those per-connection counts and
//! the QP state come from the transport ([`crate::Transport::observe_qp`]) when it can tell
//! (the simulator's NIC model) and stay `None` otherwise.
//!
//! The core does no I/O here either: the caller reads the transport's clock and observes the
//! QPs the endpoint names ([`Endpoint::live_qpns`]), and hands both in.

use super::{ConnState, ConnUsage, Endpoint};
use crate::event::{ConnStats, EndpointResources};
use crate::{QpNum, QpObservation, Time};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the transport observed of each QP a snapshot shows, by QP number
/// ([`crate::Transport::observe_qp`] for each of [`Endpoint::live_qpns`]).
pub type QpObservations = BTreeMap<QpNum, QpObservation>;

/// One connection's row. Bytes are payload bytes; times in ps.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConnSnapshot {
    /// The connection id as displayed (`index` or `index#generation`, [`crate::ConnId`]).
    pub conn: String,
    /// The peer label given at setup (the runner's host number).
    pub peer: u32,
    /// The connection's state ([`ConnState::name`]).
    pub state: String,
    /// Its QP number (as [`crate::ConnSetup::qpn`]: all zero before the QP is connected).
    pub qpn: u32,
    /// The QP's state as the transport reports it (`RTS`, `ERR`, …); `None` when it
    /// cannot tell, and for an ended (failed or closed) connection, whose QP was reset for
    /// reuse.
    pub qp_state: Option<String>,
    /// Its counters.
    #[serde(flatten)]
    pub stats: ConnStats,
    /// Frames and fragments posted and not yet ACKed (in-flight messages' pieces).
    pub inflight: usize,
    /// Payload bytes of those frames and fragments.
    pub inflight_bytes: u64,
    /// Messages queued, not yet wholly posted (waiting for the window or a grant).
    pub queued: usize,
    /// Landing buffers granted to the peer and not yet filled.
    pub landings: usize,
    /// Send WRs posted whose completion has not been seen.
    pub send_wrs_outstanding: u32,
    /// Request packets the transport sent again on this connection's QP (go-back-N
    /// rewinds) since it was connected; `None` when the transport cannot observe it, and for
    /// an ended connection.
    pub retransmitted_packets: Option<u64>,
    /// RNR NAKs the QP received (each an RNR retry); `None` when not observable.
    pub rnr_retries: Option<u64>,
}

/// One endpoint (one worker: its QP cache, MR pool and connections) at `at_ps`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct EndpointSnapshot {
    /// When it was taken, on the fabric's clock, ps.
    pub at_ps: u64,
    /// Registered memory, QPs and buffers it holds ([`Endpoint::resources`]).
    #[serde(flatten)]
    pub resources: EndpointResources,
    /// Bytes of the MR pool handed out and not yet returned.
    pub mr_used_bytes: u64,
    /// Messages accepted by [`Endpoint::send`] so far.
    pub messages_accepted: u64,
    /// Every connection record, in slot order (a slot a later connection reused shows only
    /// the later one).
    pub connections: Vec<ConnSnapshot>,
}

impl ConnState {
    /// The state's name as the `stat` tool prints it: `connecting`, `established`,
    /// `draining`, `closing`, `closed` or `failed`.
    pub fn name(self) -> &'static str {
        match self {
            ConnState::Connecting => "connecting",
            ConnState::Established => "established",
            ConnState::Draining { .. } => "draining",
            ConnState::Closing { .. } => "closing",
            ConnState::Closed => "closed",
            ConnState::Failed => "failed",
        }
    }
}

impl Endpoint {
    /// The QPs whose transport view a snapshot shows: those of connections that have not
    /// ended, in slot order. An ended connection's QP went back to the QP cache (reset for
    /// the next connection) or was destroyed: what the transport says of that QPN now is not
    /// that connection's.
    pub fn live_qpns(&self) -> Vec<QpNum> {
        self.conns
            .iter()
            .filter(|(_, c)| !c.state.is_ended())
            .map(|(_, c)| c.setup.qpn)
            .collect()
    }

    /// Everything this endpoint holds and has counted, at `at` (the transport's clock), with
    /// `qps`: what the transport observes of the QPs of [`Endpoint::live_qpns`]. A QP missing
    /// from `qps`, and every ended connection's, shows as unobserved (`None`).
    pub fn snapshot(&self, at: Time, qps: &QpObservations) -> EndpointSnapshot {
        let unobserved = QpObservation::default();
        let connections = self
            .conns
            .iter()
            .filter_map(|(id, c)| {
                let stats = self.stats(id)?;
                let u: ConnUsage = self.usage(id)?;
                let qpn = c.setup.qpn;
                let qp = if c.state.is_ended() {
                    &unobserved
                } else {
                    qps.get(&qpn).unwrap_or(&unobserved)
                };
                Some(ConnSnapshot {
                    conn: id.to_string(),
                    peer: c.setup.peer,
                    state: c.state.name().to_string(),
                    qpn,
                    qp_state: qp.state.map(str::to_string),
                    stats,
                    inflight: u.inflight,
                    inflight_bytes: u.inflight_bytes,
                    queued: u.queued,
                    landings: u.landings,
                    send_wrs_outstanding: u.send_wrs_outstanding,
                    retransmitted_packets: qp.retransmitted_packets,
                    rnr_retries: qp.rnr_retries,
                })
            })
            .collect();
        EndpointSnapshot {
            at_ps: at.as_ps(),
            resources: self.resources(),
            mr_used_bytes: self.pool.used_bytes(),
            messages_accepted: self.messages_accepted(),
            connections,
        }
    }
}
