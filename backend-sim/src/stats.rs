//! Simulation counters.

use serde::{Deserialize, Serialize};
use xrdma::Span;

/// Counters of a simulation run. Packet counts are packets put on a wire unless noted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimStats {
    /// Events processed.
    pub events: u64,
    /// Data-carrying packets (SEND/WRITE packets, READ responses) and READ requests sent by
    /// NICs.
    pub data_packets: u64,
    /// ACK packets sent by NICs.
    pub ack_packets: u64,
    /// NAK packets sent by NICs (all syndromes).
    pub nak_packets: u64,
    /// RNR NAKs among `nak_packets`.
    pub rnr_naks: u64,
    /// CNPs queued by responders (notification points).
    pub cnps_sent: u64,
    /// CNPs received by requesters (reaction points).
    pub cnps_received: u64,
    /// Packets that switches marked ECN CE; a packet marked at several hops counts once.
    pub ecn_marks: u64,
    /// PFC XOFF (PAUSE) frames the switch sent.
    pub pfc_xoff_sent: u64,
    /// PFC XON (RESUME) frames the switch sent.
    pub pfc_xon_sent: u64,
    /// Packets the switch dropped because the shared buffer was full.
    pub drops: u64,
    /// Data packets a responder discarded because their PSN was ahead of the expected PSN
    /// (an earlier packet was lost or NAKed), plus packets for unknown or unconnected QPs.
    pub out_of_sequence_drops: u64,
    /// Largest shared-buffer occupancy seen, bytes (wire size of queued packets).
    pub max_buffer_bytes: u64,
    /// Largest single egress queue seen, bytes.
    pub max_egress_queue_bytes: u64,
    /// Payload bytes written into a receiver's memory (SEND, WRITE, READ response).
    pub delivered_payload_bytes: u64,
    /// Work completions pushed into CQs (all hosts, all statuses).
    pub completions: u64,
    /// Total time host NICs spent paused by PFC, summed over hosts.
    pub paused_time: Span,
    /// Packets allocated and not yet delivered or dropped (on wires, in queues, in NICs).
    pub packets_in_flight: u64,
    /// Request packets (SEND/WRITE packets, READ requests) sent again after a go-back-N
    /// rewind (sequence-error NAK, RNR NAK or retransmission timeout); counted in
    /// `data_packets` too.
    pub retransmitted_packets: u64,
    /// Retransmission (local ACK) timer expiries with unacknowledged packets outstanding.
    pub retransmit_timeouts: u64,
    /// Retransmission timeouts among `retransmit_timeouts` that resent nothing lost: no packet
    /// of the QP at or past its oldest unacknowledged PSN (request or response) was discarded
    /// since its previous timeout, so the ACKs were only late (queued longer than the local
    /// ACK timeout).
    #[serde(default)]
    pub spurious_timeouts: u64,
    /// PSN sequence-error NAKs among `nak_packets` (one per gap a responder saw).
    pub seq_naks: u64,
    /// Packets lost on a wire by an injected loss fault (not in `drops`).
    #[serde(default)]
    pub injected_losses: u64,
    /// Packets dropped by a link that an injected fault took down (not in `drops`).
    #[serde(default)]
    pub link_down_drops: u64,
    /// Packets an injected fault corrupted on a wire.
    #[serde(default)]
    pub corrupted_packets: u64,
    /// Packets a NIC dropped for a bad ICRC (corrupted packets that reached it).
    #[serde(default)]
    pub icrc_drops: u64,
    /// TCP segments carrying data the hosts' kernels sent, retransmissions included (not in
    /// `data_packets`).
    #[serde(default)]
    pub tcp_segments: u64,
    /// Pure TCP ACKs the hosts' kernels sent (not in `ack_packets`).
    #[serde(default)]
    pub tcp_acks: u64,
    /// TCP data segments sent again (fast retransmits, timeouts, partial ACKs), counted in
    /// `tcp_segments` too.
    #[serde(default)]
    pub tcp_retransmitted_segments: u64,
    /// TCP fast retransmits (three duplicate ACKs, RFC 5681 §3.2).
    #[serde(default)]
    pub tcp_fast_retransmits: u64,
    /// TCP retransmission timeouts (RFC 6298 §5.4): with RTOmin, what incast collapse is
    /// made of.
    #[serde(default)]
    pub tcp_timeouts: u64,
}
