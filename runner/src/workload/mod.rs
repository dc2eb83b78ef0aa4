//! Workloads: what the hosts of a run do, and how their outcome becomes a result.
//!
//! A workload is one implementation of [`Workload`]: it builds each host's application (a
//! sender, the receiving side, or nothing), says when the run stops, and turns what its
//! senders recorded into [`SenderRecord`]s. Everything else is shared by every workload and
//! every backend: the runner connects each sender to the receiving host, drives the fabric
//! ([`crate::drive`]), and [`tally`] checks every intended message against what arrived (one
//! delivery check for all workloads). A multi-process run (`xrdma_cluster::rank`) moves the same
//! records between processes, so every workload runs across ranks too.
//!
//! Adding a workload: a module here with its applications and `impl Workload for` its
//! scenario section, plus one arm in [`visit`].

pub mod echo;
pub mod incast;
pub mod open_loop;
mod payload;
mod receiver;
mod record;

pub use payload::PayloadPool;
pub use receiver::{Arrival, ArrivalLog, ErrorAt, Receiver};
pub use record::{tally, Digest, ReceiverView, Response, SenderRecord, SentRecord, Tally};

use crate::role::Finish;
use xrdma::driver::Application;
use xrdma::{ConnId, Time};
use xrdma_reports as rep;
use xrdma_scenario::Stall;

/// What every host's application is built from: the run's seed and its payload bytes.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The scenario seed (payload bytes, open-loop arrivals, echo request sizes).
    pub seed: u64,
    /// The run's payload bytes, large enough for the workload's largest message.
    pub pool: PayloadPool,
}

/// One kind of workload: N senders (or clients), each with one RC connection to one receiving
/// host (the receiver, or the echo server).
pub trait Workload {
    /// A sending host's application.
    type Sender: Application<xrdma::AnyStack> + Finish;
    /// The receiving host's application.
    type Receiver: Application<xrdma::AnyStack>;

    /// The kind, as results name it.
    fn kind(&self) -> rep::WorkloadKind;
    /// Hosts the workload uses (host indices `0..hosts()`).
    fn hosts(&self) -> u32;
    /// The receiving host.
    fn receiver_host(&self) -> u32;
    /// Whether host `h` sends: every host of the workload but the receiving one.
    fn is_sender(&self, h: u32) -> bool {
        h < self.hosts() && h != self.receiver_host()
    }
    /// The largest payload any host sends, bytes (sizes the payload pool).
    fn largest_message(&self) -> u64;
    /// Hosts that stop polling for a while (see [`crate::drive::drive`]).
    fn stalls(&self) -> &[Stall] {
        &[]
    }
    /// When a run with `seed` stops on the run's clock; `None`: when the fabric has nothing
    /// left to do.
    fn deadline(&self, seed: u64) -> Option<Time>;
    /// The application of sending host `host`, connected to the receiving host by `conn`.
    fn sender(&self, setup: &Setup, host: u32, conn: ConnId) -> Self::Sender;
    /// The receiving host's application.
    fn receiver(&self, setup: &Setup) -> Self::Receiver;
    /// What sender `s` did: one [`SentRecord`] per message it intended, posted or not.
    fn record(&self, s: &Self::Sender) -> SenderRecord;
    /// What the receiving side got.
    fn view<'a>(&self, r: &'a Self::Receiver) -> ReceiverView<'a>;
    /// The messages sending host `host` intended with `seed`, none of them posted: the record
    /// of a sender whose process sent nothing back.
    fn planned(&self, seed: u64, host: u32) -> Vec<SentRecord>;
    /// The run's shape in the result, from its message records.
    fn shape(&self, messages: &[rep::MessageRecord]) -> rep::WorkloadInfo;
    /// Payload bytes through the busiest direction of the bottleneck link.
    fn bottleneck_bytes(&self, messages: &[rep::MessageRecord]) -> u64;
    /// Whether the ideal completion T* bounds this workload: only an incast, whose messages
    /// are all intended at once (see [`rep::IdealCompletion`]).
    fn bounded_by_t_star(&self) -> bool {
        false
    }
}

/// Something to do with whichever [`Workload`] a scenario holds ([`visit`]).
pub trait Visit {
    /// What it returns.
    type Output;
    /// Do it with `w`.
    fn visit<W: Workload>(self, w: &W) -> Self::Output;
}

/// Call `v` with the workload `section` describes.
pub fn visit<V: Visit>(section: &xrdma_scenario::Workload, v: V) -> V::Output {
    match section {
        xrdma_scenario::Workload::Incast(w) => v.visit(w),
        xrdma_scenario::Workload::OpenLoop(w) => v.visit(w),
        xrdma_scenario::Workload::Echo(w) => v.visit(w),
    }
}

/// The shape of a workload whose senders send different amounts: per-sender figures are the
/// means over the `senders`, rounded down.
pub fn mean_shape(
    kind: rep::WorkloadKind,
    senders: u32,
    receiver: u32,
    records: &[rep::MessageRecord],
) -> rep::WorkloadInfo {
    let n = u64::from(senders.max(1));
    let bytes: u64 = records.iter().map(rep::MessageRecord::payload_bytes).sum();
    rep::WorkloadInfo {
        kind,
        senders,
        receiver,
        bytes_per_sender: bytes / n,
        messages_per_sender: u32::try_from(records.len() as u64 / n).unwrap_or(u32::MAX),
    }
}

/// When a run of `workload` with `seed` stops, on the run's clock ([`Workload::deadline`]).
pub fn deadline(workload: &xrdma_scenario::Workload, seed: u64) -> Option<Time> {
    struct Deadline(u64);
    impl Visit for Deadline {
        type Output = Option<Time>;
        fn visit<W: Workload>(self, w: &W) -> Option<Time> {
            w.deadline(self.0)
        }
    }
    visit(workload, Deadline(seed))
}
