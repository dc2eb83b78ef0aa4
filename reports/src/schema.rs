//! The versioned run-result schema written by the runner and read back by the reports.
//!
//! Serialized as JSON with kebab-case keys. Field order in the JSON is the declaration order
//! below, so the output is byte-stable for equal inputs. Every field is a deterministic function
//! of the scenario and seed **except** the [`WallClock`] group, which is kept in one object
//! (`"wall-clock"`) so that a determinism check can drop exactly that key.
//!
//! Times are integer picoseconds (`u64`, ~213 days of range), sizes are bytes, rates are bits
//! per second (SI).

use serde::{Deserialize, Deserializer, Serialize};

use crate::kinds::{Backend, Stack, WorkloadKind};
use crate::path::{IdealCompletion, PathModel};
use crate::series::TimeSeries;

/// Version of the result schema written by this crate (the `schema-version` key).
///
/// Readers reject files whose version is newer than this; see [`crate::read_json`].
///
/// History: 1 = the first schema; 2 adds the optional `scenario-yaml` and `timeseries` keys
/// (a version-1 file reads with both absent); 3 adds `path` (the path model), states `ideal`
/// for incasts only, and writes a network counter the backend cannot observe as `null`
/// rather than 0 (an older file reads with `path` taken from its `ideal`). Within version 3
/// the optional `environment` key was added ([`crate::Environment`]): an older reader ignores
/// it and a file without it (of any version) reads with it absent, so it needs no new
/// version; so were, by the same reasoning, each rank's `device` and `device-counters` in
/// `environment.ranks` (a run across processes then sums its distinct devices' counters at
/// the top level, where an older one had the receiver rank's alone), and the optional
/// `figures` ([`crate::Figures`], derived from the messages), and each endpoint's
/// `landing-lent-bytes`, `copied-out-bytes`, `lent-out-bytes`, `staged-bytes` and
/// `sent-in-place-bytes` (`null` when read from a file without them).
pub const SCHEMA_VERSION: u32 = 3;

/// One complete run: what was run, what happened to every message, network counters, the
/// analytical reference and simulator statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RunResult {
    /// Schema version of this record; [`SCHEMA_VERSION`] when produced by this crate.
    pub schema_version: u32,
    /// Version string of the tool that produced the record (e.g. the CLI's crate version).
    pub tool_version: String,
    /// Which scenario was run, on which backend, with which seed.
    pub scenario: ScenarioInfo,
    /// The workload shape.
    pub workload: WorkloadInfo,
    /// One record per message the workload intended to send, delivered or not.
    pub messages: Vec<MessageRecord>,
    /// Receiver-side delivery verification.
    pub delivery: DeliveryCheck,
    /// Network-wide counters.
    pub network: NetworkCounters,
    /// The unloaded path as the backend states it (what slowdown needs); absent from a
    /// version-2 file, where it reads back from `ideal`.
    #[serde(default)]
    pub path: PathModel,
    /// Analytical lower bound T* on the completion time: an incast's only (its messages are
    /// all intended at once), on a fabric that states the whole path model.
    pub ideal: Option<IdealCompletion>,
    /// Simulator statistics; `None` on backends that are not simulated.
    pub sim: Option<SimInfo>,
    /// Errors the middleware reported during the run (connection failures, timeouts), one
    /// line each, in the order they happened per host.
    #[serde(default)]
    pub errors: Vec<String>,
    /// Messages that did not complete before the run ended (sender, index, intended time), in
    /// record order; they have no latency. Absent from the JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfinished: Vec<UnfinishedMessage>,
    /// The run's headline figures ([`crate::Figures`]: completion-time percentiles to p99.99,
    /// goodput, fairness), derived from `messages` when the result is made; absent in results
    /// written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<crate::Figures>,
    /// The heartbeat beside the workload (a scenario's `heartbeat:`); `None` without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat: Option<crate::HeartbeatRecord>,
    /// The hosts' CPU time over the run (the CPU column of a comparison of stacks); `None`
    /// where the backend cannot observe it (see [`crate::HostCpuTime`]).
    #[serde(default)]
    pub host_cpu: Option<crate::HostCpuTime>,
    /// Wall-clock measurements: the only non-deterministic fields of the record.
    pub wall_clock: WallClock,
    /// The text of the scenario file that produced the run, when known (schema version 2).
    #[serde(default)]
    pub scenario_yaml: Option<String>,
    /// Network state over time, on the simulator with sampling on; `None` on other backends
    /// (schema version 2).
    #[serde(default)]
    pub timeseries: Option<TimeSeries>,
    /// The RC QP attributes the transport applied and the capabilities it declared; absent
    /// in results written before the runner reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<crate::transport_info::TransportInfo>,
    /// Where the run happened: the simulator's build, or the machine, kernel and RDMA
    /// device with the device's counters (see [`crate::Environment`]); absent in results
    /// written before the runner recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<crate::environment::Environment>,
    /// Every host's endpoint as the run left it — counters, connections, QP states, MR
    /// pool and QP cache — in host order: what `xrdma stat` prints for a finished run.
    /// Absent from results written before the runner recorded it, and from a rank's part of
    /// a multi-process run (each rank's endpoints are its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<HostEndpoint>>,
}

/// One host's endpoint at the end of a run ([`RunResult::endpoints`]), or at an instant of
/// it (what `xrdma stat` prints): the core's own record, with the host it is of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HostEndpoint {
    /// The host (the scenario's host number).
    pub host: u32,
    /// Its endpoint's counters and connections (keys `at-ps`, `mr-bytes`, …, `connections`
    /// beside `host`), written with every object's keys in name order.
    #[serde(flatten, serialize_with = "keys_in_name_order")]
    pub snapshot: xrdma::EndpointSnapshot,
}

/// `snapshot` with every object's keys in name order (as a [`serde_json::Value`] writes
/// them), the order results have always held endpoint records in.
fn keys_in_name_order<S: serde::Serializer>(
    snapshot: &xrdma::EndpointSnapshot,
    s: S,
) -> Result<S::Ok, S::Error> {
    serde_json::to_value(snapshot)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// Identification of the scenario run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ScenarioInfo {
    /// Scenario name (from the scenario file).
    pub name: String,
    /// Path of the scenario file as given on the command line.
    pub path: String,
    /// Backend that executed the run (`"sim"` or `"verbs"`).
    pub backend: Backend,
    /// Seed of every pseudo-random choice in the run.
    pub seed: u64,
    /// The message stack the workload ran over; results written before there was a choice
    /// ran over xrdma.
    #[serde(default)]
    pub stack: Stack,
}

/// Shape of the workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WorkloadInfo {
    /// Workload kind (`"incast"`, `"open-loop"`, `"echo"`).
    pub kind: WorkloadKind,
    /// Number of sending hosts (the fan-in N of an incast).
    pub senders: u32,
    /// Host index of the receiver.
    pub receiver: u32,
    /// Payload bytes each sender sends in total (S), summed over its messages.
    pub bytes_per_sender: u64,
    /// Number of messages each sender sends.
    pub messages_per_sender: u32,
}

/// One message of the workload.
///
/// The latency of a message is `completed_ps - intended_ps`: it is measured from the time the
/// workload *intended* to send it, not from when the sender got around to posting it, so a
/// stalled sender or receiver cannot hide queueing delay (no coordinated omission).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MessageRecord {
    /// Sending host index.
    pub sender: u32,
    /// Receiving host index.
    pub receiver: u32,
    /// Position of this message in its sender's sequence, from 0.
    pub index: u32,
    /// Payload size in bytes.
    pub size: u64,
    /// Time the workload intended the message to be sent, ps since the start of the run.
    pub intended_ps: u64,
    /// Time the message completed, ps since the start of the run: the sender holds the
    /// receiver's ACK of its last fragment (its buffers are free; the FCT convention). `None`
    /// when that did not happen before the run ended (such a message has no latency).
    pub completed_ps: Option<u64>,
    /// Time the whole message was delivered to the receiving application, ps since the start
    /// of the run; `None` when it was not.
    #[serde(default)]
    pub delivered_ps: Option<u64>,
    /// For a request/response exchange (the `echo` workload): the response's payload bytes;
    /// the record then stands for the whole exchange (`size` is the request), completing when
    /// the response has fully arrived. Absent for one-way messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_bytes: Option<u64>,
    /// Where its completion time went ([`MessageStages`]); recorded when the scenario says
    /// `trace: true` (`xrdma run --trace`) for one-way messages that completed, absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<MessageStages>,
}

/// A message's completion time (intended send to the ACK of its last piece) cut at the
/// instants the sender and receiver stamp on it, in order, ps; the six add up to
/// [`MessageRecord::latency_ps`] exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MessageStages {
    /// Intended → handed to xrdma: held by the application (an incast sender keeps two
    /// messages queued in xrdma, so later ones wait here).
    pub app_ps: u64,
    /// Handed over → at the head of its connection's queue: behind the connection's earlier
    /// messages inside xrdma.
    pub queue_ps: u64,
    /// At the head → its landing buffer granted (the CTS back): rendezvous only, 0 when the
    /// grant was back first or the message went eagerly.
    pub grant_ps: u64,
    /// Ready → its last fragment posted: waiting for the send window, receive credits and
    /// send-queue room between fragments.
    pub send_ps: u64,
    /// Last fragment posted → delivered to the receiving application: the send queue, the
    /// wire and the network, and the receiver until delivery.
    pub network_ps: u64,
    /// Delivered → the ACK of its last piece back at the sender.
    pub ack_ps: u64,
}

impl MessageStages {
    /// The stages' names, in order, as tables and plots show them.
    pub const NAMES: [&'static str; 6] = ["app", "queue", "grant", "send", "network", "ack"];

    /// The six stages in [`MessageStages::NAMES`] order, ps.
    pub fn values(&self) -> [u64; 6] {
        [
            self.app_ps,
            self.queue_ps,
            self.grant_ps,
            self.send_ps,
            self.network_ps,
            self.ack_ps,
        ]
    }

    /// Their sum, ps: the message's completion time.
    pub fn total_ps(&self) -> u64 {
        // Saturating: a hand-edited record must not wrap into agreement.
        self.values().iter().fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// A message that did not complete before the run ended: it is counted and listed, never
/// given a latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct UnfinishedMessage {
    /// Sending host index.
    pub sender: u32,
    /// Position in the sender's sequence.
    pub index: u32,
    /// Intended send time, ps since the start of the run.
    pub intended_ps: u64,
}

impl MessageRecord {
    /// Message completion time in ps: `completed_ps - intended_ps`, or `None` when undelivered.
    ///
    /// A completion earlier than the intended send time cannot happen in a causal run;
    /// [`RunResult::validate`] reports it, and this accessor clamps it to 0 rather than wrap.
    pub fn latency_ps(&self) -> Option<u64> {
        self.completed_ps
            .map(|done| done.saturating_sub(self.intended_ps))
    }

    /// Payload bytes the record moved: `size`, plus `response_bytes` for an exchange.
    pub fn payload_bytes(&self) -> u64 {
        self.size.saturating_add(self.response_bytes.unwrap_or(0))
    }
}

/// Receiver-side verification of the delivered payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeliveryCheck {
    /// Messages delivered with the expected content.
    pub delivered: u64,
    /// Messages whose payload digest did not match what the sender sent.
    pub digest_mismatches: u64,
    /// Messages delivered more than once.
    pub duplicates: u64,
    /// Messages never delivered.
    pub missing: u64,
}

/// Network-wide counters, summed over all switches and NICs; each is `None` (written `null`)
/// where the backend cannot observe it (a real fabric's switches), never a silent 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct NetworkCounters {
    // Every counter is `None` (`null`) where the backend cannot observe it, never 0.
    /// Data packets transmitted by NICs (retransmissions included): RoCE packets carrying
    /// data, and TCP segments carrying data.
    pub data_packets: Option<u64>,
    /// Packets ECN-marked (CE) by switches; a packet marked at several hops counts once.
    pub ecn_marks: Option<u64>,
    /// Congestion Notification Packets sent by receivers (DCQCN).
    pub cnps: Option<u64>,
    /// PFC PAUSE frames with a non-zero quanta (XOFF) sent.
    pub pfc_xoff: Option<u64>,
    /// PFC PAUSE frames with zero quanta (XON) sent.
    pub pfc_xon: Option<u64>,
    /// Packets switches dropped (buffer full, no route); 0 on a working lossless fabric.
    /// Injected faults are counted apart (`injected_losses`, `link_down_drops`, `icrc_drops`).
    pub drops: Option<u64>,
    /// Peak occupancy of any switch's shared buffer, bytes.
    pub max_buffer_bytes: Option<u64>,
    /// Peak length of any single egress queue, bytes.
    pub max_egress_queue_bytes: Option<u64>,
    /// Data packets sent again (included in `data_packets`): by RC go-back-N, and TCP
    /// segments sent again (fast retransmits, timeouts, partial ACKs).
    pub retransmitted_packets: Option<u64>,
    /// Retransmission timeouts that fired: RC local ACK timeouts and TCP RTOs.
    pub retransmit_timeouts: Option<u64>,
    /// Among `retransmit_timeouts`, RC local ACK timeouts that resent nothing lost: no packet
    /// of the QP at or past its oldest unacknowledged PSN was discarded since its previous
    /// timeout, so the ACKs were only late (queued longer than the timeout). `None` where the
    /// backend cannot tell (a device; a run with TCP RTOs).
    #[serde(default)]
    pub spurious_timeouts: Option<u64>,
    /// PSN sequence-error NAKs sent by responders.
    pub seq_naks: Option<u64>,
    /// RNR NAKs sent by responders (no receive WR posted).
    pub rnr_naks: Option<u64>,
    /// Whether the fabric was configured lossless (PFC on every port): then any drop is a
    /// failed run. `None` where the backend does not know (a real fabric's switches).
    #[serde(default)]
    pub lossless: Option<bool>,
    /// Packets lost on a link by an injected loss fault (`sim.faults.loss`). `None` where the
    /// backend injects no faults (schema version 2 files without the field read as `None`).
    #[serde(default)]
    pub injected_losses: Option<u64>,
    /// Packets dropped by a link an injected fault took down (`sim.faults.link-down`); `None`
    /// where the backend injects no faults.
    #[serde(default)]
    pub link_down_drops: Option<u64>,
    /// Corrupted packets (`sim.faults.corrupt`) that a NIC dropped for a bad ICRC; `None`
    /// where the backend cannot observe them.
    #[serde(default)]
    pub icrc_drops: Option<u64>,
    /// Connections the middleware failed because a fragment's ACK did not come within
    /// `xrdma.ack-timeout` (the core's `AckTimeout` error); `None` where the runner did not
    /// count them (a multi-process run).
    #[serde(default)]
    pub ack_timeouts: Option<u64>,
}

/// Statistics of the discrete-event simulator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct SimInfo {
    /// Events processed.
    pub events: u64,
    /// Simulated time at the end of the run, ps.
    pub simulated_ps: u64,
    /// Hash of the event trace, lowercase hex; equal seeds must give equal hashes.
    pub trace_hash: String,
    /// The host model the hosts ran with (the scenario's `sim.host`); absent when the hosts
    /// cost nothing (the `ideal` profile) and in results written before the model existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_model: Option<HostModelInfo>,
    /// The packet capture files written beside the result (`sim.capture` or `xrdma run
    /// --capture`), one per captured host link; absent without capture.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CaptureFile>,
}

/// One packet capture file of a simulated run: the pcap of one host's link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CaptureFile {
    /// The host whose host-switch link it holds (both directions).
    pub host: u32,
    /// The file name, in the run's directory.
    pub file: String,
    /// Packets in the file.
    pub packets: u64,
    /// Packets on the link left out by the capture's bounds (time window, packet limit).
    pub skipped: u64,
}

impl CaptureFile {
    /// The file name of host `host`'s capture in a run's directory: `capture-host<H>.pcap`.
    pub fn name_for(host: u32) -> String {
        format!("capture-host{host}.pcap")
    }

    /// Whether `name` is a capture's file name ([`CaptureFile::name_for`] of some host).
    pub fn is_capture_name(name: &str) -> bool {
        name.strip_prefix("capture-host")
            .and_then(|r| r.strip_suffix(".pcap"))
            .is_some_and(|h| h.parse::<u32>().is_ok_and(|n| Self::name_for(n) == name))
    }
}

/// The simulator's host model as run: its profile and every per-operation cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HostModelInfo {
    /// The profile the costs were taken from (`connectx6`, `rxe-guest`, ...).
    pub profile: String,
    /// The keys of the costs that differ from the profile's (overridden in the scenario).
    #[serde(default)]
    pub overridden: Vec<String>,
    /// Every cost by its scenario key, ps.
    pub costs_ps: std::collections::BTreeMap<String, u64>,
}

/// Wall-clock measurements. These are the only non-deterministic fields in a [`RunResult`];
/// they sit in one JSON object (`"wall-clock"`) so determinism checks can remove it.
///
/// Non-finite values (e.g. an events rate over a zero duration) are written as JSON `null` by
/// serde_json and read back as NaN.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WallClock {
    /// Wall-clock duration of the run, seconds.
    #[serde(deserialize_with = "f64_or_null")]
    pub wall_seconds: f64,
    /// Simulated events per wall-clock second (0 or NaN when not applicable).
    #[serde(deserialize_with = "f64_or_null")]
    pub events_per_second: f64,
}

fn f64_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// A consistency problem found by [`RunResult::validate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inconsistency {
    /// A message completed before its intended send time.
    CompletedBeforeIntended {
        /// Sending host.
        sender: u32,
        /// Index in the sender's sequence.
        index: u32,
    },
    /// A message completed (or was delivered) after the simulated run ended: no event of the
    /// run can happen past its simulated time.
    CompletedAfterRunEnd {
        /// Sending host.
        sender: u32,
        /// Index in the sender's sequence.
        index: u32,
        /// Its completion (or delivery, whichever is later), ps.
        at_ps: u64,
        /// The simulated time of the run ([`SimInfo::simulated_ps`]), ps.
        end_ps: u64,
    },
    /// Every message was delivered, yet the last completion, measured from the first intended
    /// send time, is below T* (a completion below the ideal is a simulator bug).
    LastCompletionBelowIdeal {
        /// Last completion minus first intended send time, ps.
        completion_span_ps: u64,
        /// T*, ps.
        t_star_ps: u64,
    },
    /// Messages the receiving application was handed whose senders never saw them complete
    /// (no ACK, or no response, before the run ended): lost from the latency samples.
    DeliveredNotCompleted {
        /// `(sender, index)` of each, in message order.
        messages: Vec<(u32, u32)>,
    },
    /// Messages their senders saw complete that the receiving application was never handed
    /// (an ACK for something not delivered).
    CompletedNotDelivered {
        /// `(sender, index)` of each, in message order.
        messages: Vec<(u32, u32)>,
    },
    /// The fabric was configured lossless (PFC) and still dropped packets: its headroom or
    /// thresholds do not hold what arrives after XOFF, and the run does not show a lossless
    /// fabric.
    DropsOnLosslessFabric {
        /// Packets dropped.
        drops: u64,
    },
    /// Messages whose stages do not add up to their completion time (or that have stages
    /// without having completed): the breakdown is not of that message.
    StagesNotCompletion {
        /// `(sender, index)` of each, in message order.
        messages: Vec<(u32, u32)>,
    },
    /// `delivery.delivered + delivery.missing` differs from the number of message records.
    DeliveryCountMismatch {
        /// Number of message records.
        records: u64,
        /// `delivered + missing` from the delivery check.
        delivered_plus_missing: u64,
    },
}

impl std::fmt::Display for Inconsistency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CompletedBeforeIntended { sender, index } => write!(
                f,
                "message {index} of sender {sender} completed before its intended send time"
            ),
            Self::CompletedAfterRunEnd {
                sender,
                index,
                at_ps,
                end_ps,
            } => write!(
                f,
                "message {index} of sender {sender} completed at {at_ps} ps, after the run's \
                 simulated time of {end_ps} ps"
            ),
            Self::LastCompletionBelowIdeal {
                completion_span_ps,
                t_star_ps,
            } => write!(
                f,
                "last completion {completion_span_ps} ps after the first intended send is below \
                 the ideal T* = {t_star_ps} ps"
            ),
            Self::DeliveredNotCompleted { messages } => {
                write!(
                    f,
                    "{} message(s) delivered but never complete at the sender: ",
                    messages.len()
                )?;
                list_messages(f, messages)
            }
            Self::CompletedNotDelivered { messages } => {
                write!(
                    f,
                    "{} message(s) complete at the sender but never delivered: ",
                    messages.len()
                )?;
                list_messages(f, messages)
            }
            Self::StagesNotCompletion { messages } => {
                write!(
                    f,
                    "{} message(s) whose stages do not add up to their completion time: ",
                    messages.len()
                )?;
                list_messages(f, messages)
            }
            Self::DropsOnLosslessFabric { drops } => write!(
                f,
                "the fabric is configured lossless (PFC) but dropped {drops} packet(s): its \
                 headroom or XOFF threshold does not hold what arrives after a PAUSE"
            ),
            Self::DeliveryCountMismatch {
                records,
                delivered_plus_missing,
            } => write!(
                f,
                "{records} message records but delivered + missing = {delivered_plus_missing}"
            ),
        }
    }
}

/// Writes `sender S message I` for the first [`LISTED_OFFENDERS`] of `messages`, then how
/// many more there are.
fn list_messages(f: &mut std::fmt::Formatter<'_>, messages: &[(u32, u32)]) -> std::fmt::Result {
    for (k, (sender, index)) in messages.iter().take(LISTED_OFFENDERS).enumerate() {
        let sep = if k == 0 { "" } else { ", " };
        write!(f, "{sep}sender {sender} message {index}")?;
    }
    if messages.len() > LISTED_OFFENDERS {
        write!(f, " and {} more", messages.len() - LISTED_OFFENDERS)?;
    }
    Ok(())
}

/// How many offending messages an [`Inconsistency`]'s text names (all are in the value).
const LISTED_OFFENDERS: usize = 20;

impl RunResult {
    /// The ideal completion where T* bounds the run: an incast, whose messages are all intended
    /// at once. Open-loop and echo runs spread their arrivals over time, so their `ideal` only
    /// serves the per-message slowdown.
    pub fn t_star_bound(&self) -> Option<IdealCompletion> {
        self.ideal
    }

    /// Checks invariants a correct run must satisfy and returns every violation found, in
    /// message order (empty when consistent):
    /// - no message completes before its intended send time, nor (on the simulator) after the
    ///   run's simulated time;
    /// - when every message was delivered and `ideal` is set, the last completion minus the
    ///   first intended send time is ≥ T* (a completion below the ideal is a simulator bug);
    /// - every message delivered to the receiving application completed at its sender, and
    ///   every message complete at its sender was delivered (both directions, with the
    ///   offenders listed);
    /// - a fabric configured lossless (`network.lossless`) dropped nothing;
    /// - `delivery.delivered + delivery.missing` equals the number of message records.
    pub fn validate(&self) -> Vec<Inconsistency> {
        let mut problems = Vec::new();
        let (mut not_completed, mut not_delivered) = (Vec::new(), Vec::new());
        for m in &self.messages {
            if m.completed_ps.is_some_and(|c| c < m.intended_ps) {
                problems.push(Inconsistency::CompletedBeforeIntended {
                    sender: m.sender,
                    index: m.index,
                });
            }
            let at = m.completed_ps.max(m.delivered_ps);
            if let (Some(at_ps), Some(sim)) = (at, &self.sim) {
                if at_ps > sim.simulated_ps {
                    problems.push(Inconsistency::CompletedAfterRunEnd {
                        sender: m.sender,
                        index: m.index,
                        at_ps,
                        end_ps: sim.simulated_ps,
                    });
                }
            }
            match (m.delivered_ps, m.completed_ps) {
                (Some(_), None) => not_completed.push((m.sender, m.index)),
                (None, Some(_)) => not_delivered.push((m.sender, m.index)),
                _ => {}
            }
        }
        let bad_stages: Vec<(u32, u32)> = self
            .messages
            .iter()
            .filter(|m| {
                m.stages
                    .is_some_and(|s| Some(s.total_ps()) != m.latency_ps())
            })
            .map(|m| (m.sender, m.index))
            .collect();
        if !bad_stages.is_empty() {
            problems.push(Inconsistency::StagesNotCompletion {
                messages: bad_stages,
            });
        }
        if !not_completed.is_empty() {
            problems.push(Inconsistency::DeliveredNotCompleted {
                messages: not_completed,
            });
        }
        if !not_delivered.is_empty() {
            problems.push(Inconsistency::CompletedNotDelivered {
                messages: not_delivered,
            });
        }
        let all_delivered = self.messages.iter().all(|m| m.completed_ps.is_some());
        let last = self.messages.iter().filter_map(|m| m.completed_ps).max();
        let first = self.messages.iter().map(|m| m.intended_ps).min();
        if let (true, Some(last), Some(first), Some(ideal)) =
            (all_delivered, last, first, self.ideal)
        {
            let span = last.saturating_sub(first);
            if span < ideal.t_star_ps {
                problems.push(Inconsistency::LastCompletionBelowIdeal {
                    completion_span_ps: span,
                    t_star_ps: ideal.t_star_ps,
                });
            }
        }
        if let (Some(true), Some(drops @ 1..)) = (self.network.lossless, self.network.drops) {
            problems.push(Inconsistency::DropsOnLosslessFabric { drops });
        }
        let records = self.messages.len() as u64;
        let dpm = self
            .delivery
            .delivered
            .saturating_add(self.delivery.missing);
        if dpm != records {
            problems.push(Inconsistency::DeliveryCountMismatch {
                records,
                delivered_plus_missing: dpm,
            });
        }
        problems
    }

    /// Serializes the record as pretty-printed JSON with a trailing newline.
    ///
    /// # Errors
    /// Only if serde_json fails, which does not happen for this schema in practice.
    pub fn to_json_string(&self) -> Result<String, serde_json::Error> {
        let mut out = Vec::new();
        self.write_json_to(&mut out)?;
        // serde_json writes UTF-8 only.
        String::from_utf8(out).map_err(|e| serde_json::Error::io(std::io::Error::other(e)))
    }

    /// Writes the record to `w` as [`RunResult::to_json_string`] gives it, without holding
    /// the whole text in memory (a result of a million messages is about 200 MB of JSON).
    ///
    /// # Errors
    /// serde_json's error, wrapping the writer's I/O error when writing fails.
    pub fn write_json_to<W: std::io::Write>(&self, mut w: W) -> Result<(), serde_json::Error> {
        serde_json::to_writer_pretty(&mut w, self)?;
        w.write_all(b"\n").map_err(serde_json::Error::io)
    }
}
