//! A fault-injecting [`Transport`] wrapper, in the spirit of smoltcp's `phy::FaultInjector`.
//!
//! [`FaultInjector`] stacks on any backend and, from a seeded deterministic RNG and the
//! per-fault probabilities of a [`FaultConfig`], mangles what the backend reports:
//!
//! | fault | what happens | what a real NIC does | what the core does |
//! |---|---|---|---|
//! | **drop** | a completion is lost: the WR completed, its CQE never shows | not for RC | each queue completes in order, so a send WR's lost completion is implied by the next one of its queue; a lost receive completion loses its frame: the next frame is out of sequence ([`XrdmaError::OutOfSequence`]) or, if none follows, the sender's ACK timer fails the sender ([`XrdmaError::AckTimeout`]); a side left waiting on the peer with nothing in flight probes it after the ACK timeout (an ACK, which the peer ignores as a repeat), which completes (implying any lost completion before it) or fails once the peer's QP is gone |
//! | **duplicate** | a completion is reported twice | not for RC | every WR carries a per-queue tag in its `wr_id`; a completion whose WR is no longer outstanding is ignored, so nothing is delivered, reposted or ACKed twice |
//! | **delay** | a completion is held back for 1 to `max_delay_polls` polls | yes, across QPs and between one QP's send and receive queues (one CQ) | nothing but timing changes: order within a queue is kept unless `reorder` is set |
//! | **reorder** (`delay` with `reorder: true`) | a held completion is overtaken by later ones of its own queue | no | an overtaken send completion is implied by the later one and the late copy ignored; an overtaken receive completion is a lost frame, as for **drop** |
//! | **error** | a successful completion turns into [`FaultConfig::error_status`]; its QP is in error from then on: later completions of its WRs report [`WcStatus::WrFlushErr`], later posts complete at once with it | yes (e.g. retries exhausted) | the connection fails with [`XrdmaError::WorkCompletion`], and every pending message with it |
//! | **refuse** | `post_send`/`post_recv` returns [`TransportError::Other`] and the WR is not posted (in a chain: that WR and the ones after it) | yes (e.g. `ENOMEM`) | the connection fails with [`XrdmaError::Post`] |
//!
//! A failed connection's landing buffers go back to the pool at once (admitting connections
//! that waited for the landing budget), and its staging ring and receive buffers serve the
//! next connection once its QP is reset. A connection that has nothing to send and waits for
//! nothing learns of a failed peer only at its next send.
//!
//! Whatever the faults, the core never delivers a message twice, never loses one silently
//! (each message given to [`crate::Endpoint::send`] ends in exactly one
//! [`crate::Event::Sent`] or [`crate::Event::SendFailed`]), and every wait is bounded by the
//! ACK timeout (`xrdma/tests/faults.rs` checks this on random workloads).
//!
//! With every probability 0 (the default) the wrapper is transparent: it forwards every call
//! unchanged and draws nothing from its RNG.
//!
//! A backend that lends its transports per turn (a borrow that does not outlive the turn) keeps
//! the wrapper's state between turns with [`FaultInjector::into_parts`] and
//! [`FaultInjector::from_state`].
//!
//! [`XrdmaError::OutOfSequence`]: crate::XrdmaError::OutOfSequence
//! [`XrdmaError::AckTimeout`]: crate::XrdmaError::AckTimeout
//! [`XrdmaError::WorkCompletion`]: crate::XrdmaError::WorkCompletion
//! [`XrdmaError::Post`]: crate::XrdmaError::Post

use crate::layer::TransportLayer;
use crate::{
    ChainError, QpAddress, QpNum, RecvWr, SendOpcode, SendWr, Transport, TransportError, WcOpcode,
    WcStatus, WorkCompletion,
};
use std::collections::{BTreeSet, VecDeque};

/// Which faults to inject and how often. Probabilities are per completion (drop, duplicate,
/// delay, error) or per post (refusals), in `[0, 1]`; all default to 0 (transparent).
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Seed of the wrapper's RNG: the same seed and the same calls give the same faults.
    pub seed: u64,
    /// Probability that a completion is lost (the WR completed, its CQE is never reported).
    pub drop: f64,
    /// Probability that a completion is reported twice.
    pub duplicate: f64,
    /// Probability that a completion is held back for 1 to `max_delay_polls` polls.
    pub delay: f64,
    /// The longest a delayed completion is held, in `poll_cq` calls (default 4; at least 1
    /// is used).
    pub max_delay_polls: u32,
    /// Whether later completions of the same QP's same queue (send or receive) may overtake a
    /// delayed one (default `false`: they are held behind it, so only the reordering a real CQ
    /// shows, across QPs and between a QP's two queues, happens).
    pub reorder: bool,
    /// Probability that a successful completion is turned into `error_status` (its QP is then
    /// in error: later completions of its WRs are [`WcStatus::WrFlushErr`]).
    pub error: f64,
    /// The status an injected error reports (default [`WcStatus::RetryExcErr`], as when the
    /// peer stops answering).
    pub error_status: WcStatus,
    /// Probability that `post_send` refuses a WR.
    pub refuse_send: f64,
    /// Probability that `post_recv` refuses a WR.
    pub refuse_recv: f64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 0,
            drop: 0.0,
            duplicate: 0.0,
            delay: 0.0,
            max_delay_polls: 4,
            reorder: false,
            error: 0.0,
            error_status: WcStatus::RetryExcErr,
            refuse_send: 0.0,
            refuse_recv: 0.0,
        }
    }
}

/// How many faults of each kind were injected so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Completions lost.
    pub dropped: u64,
    /// Completions reported twice.
    pub duplicated: u64,
    /// Completions held back.
    pub delayed: u64,
    /// Completions turned into an error.
    pub errored: u64,
    /// Completions reported as [`WcStatus::WrFlushErr`] because their QP was in error.
    pub flushed: u64,
    /// `post_send` calls refused.
    pub refused_sends: u64,
    /// `post_recv` calls refused.
    pub refused_recvs: u64,
}

impl FaultCounts {
    /// All faults injected (flushes, which follow from an injected error, not counted).
    pub fn total(&self) -> u64 {
        self.dropped
            + self.duplicated
            + self.delayed
            + self.errored
            + self.refused_sends
            + self.refused_recvs
    }
}

/// A completion held back: released on poll number `release`.
#[derive(Clone, Debug)]
struct Held {
    release: u64,
    wc: WorkCompletion,
}

/// The state of a [`FaultInjector`] apart from its inner transport: configuration, RNG,
/// completions held back, QPs in error and counts.
#[derive(Clone, Debug)]
pub struct FaultState {
    cfg: FaultConfig,
    rng: u64,
    polls: u64,
    held: Vec<Held>,
    ready: VecDeque<WorkCompletion>,
    errored_qps: BTreeSet<QpNum>,
    counts: FaultCounts,
    scratch: Vec<WorkCompletion>,
}

impl FaultState {
    /// A fresh state for `cfg`.
    pub fn new(cfg: FaultConfig) -> Self {
        FaultState {
            rng: cfg.seed,
            cfg,
            polls: 0,
            held: Vec::new(),
            ready: VecDeque::new(),
            errored_qps: BTreeSet::new(),
            counts: FaultCounts::default(),
            scratch: Vec::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// Faults injected so far.
    pub fn counts(&self) -> FaultCounts {
        self.counts
    }

    /// Completions held back or waiting to be polled (0 when the wrapper has nothing of its
    /// own to report: a harness is quiescent only then).
    pub fn pending(&self) -> usize {
        self.held.len() + self.ready.len()
    }

    /// Whether `qpn` is in error (an injected error, until the QP is reset).
    pub fn qp_in_error(&self, qpn: QpNum) -> bool {
        self.errored_qps.contains(&qpn)
    }

    /// The next 64 random bits (splitmix64: tiny, seedable with any value, 0 included).
    fn next_u64(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `true` with probability `p`; draws nothing when `p <= 0`.
    fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        u < p
    }

    /// Apply the faults to one completion from the inner transport.
    fn mangle(&mut self, mut wc: WorkCompletion) {
        if self.errored_qps.contains(&wc.qp_num) {
            self.counts.flushed += 1;
            self.ready
                .push_back(WorkCompletion::flushed(wc.wr_id, wc.opcode, wc.qp_num));
            return;
        }
        if self.chance(self.cfg.drop) {
            self.counts.dropped += 1;
            return;
        }
        if wc.status == WcStatus::Success && self.chance(self.cfg.error) {
            self.counts.errored += 1;
            wc.status = self.cfg.error_status;
            wc.byte_len = 0;
            wc.imm = None;
            self.errored_qps.insert(wc.qp_num);
        }
        let copies = if self.chance(self.cfg.duplicate) {
            self.counts.duplicated += 1;
            2
        } else {
            1
        };
        let mut release = None;
        if self.chance(self.cfg.delay) {
            self.counts.delayed += 1;
            let span = u64::from(self.cfg.max_delay_polls.max(1));
            release = Some(self.polls + 1 + self.next_u64() % span);
        }
        if !self.cfg.reorder {
            // Held behind any earlier completion of the same queue still held.
            let queue = is_send_queue(wc.opcode);
            let behind = self
                .held
                .iter()
                .filter(|h| h.wc.qp_num == wc.qp_num && is_send_queue(h.wc.opcode) == queue)
                .map(|h| h.release)
                .max();
            release = match (release, behind) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        for _ in 0..copies {
            match release {
                Some(release) => self.held.push(Held { release, wc }),
                None => self.ready.push_back(wc),
            }
        }
    }

    /// Move the held completions due at this poll to `ready`, in the order they were held.
    fn release_due(&mut self) {
        let polls = self.polls;
        let mut i = 0;
        while i < self.held.len() {
            if self.held[i].release <= polls {
                let h = self.held.remove(i);
                self.ready.push_back(h.wc);
            } else {
                i += 1;
            }
        }
    }
}

/// Whether a completion of `opcode` comes from a send queue (else a receive queue).
fn is_send_queue(opcode: WcOpcode) -> bool {
    !matches!(opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm)
}

fn refused(verb: &'static str) -> TransportError {
    TransportError::Other {
        verb,
        reason: "refused by the fault injector".into(),
    }
}

/// A [`Transport`] that injects faults into `T`'s completions and posts; see the
/// [module docs](self).
#[derive(Debug)]
pub struct FaultInjector<T> {
    inner: T,
    state: FaultState,
}

impl<T: Transport> FaultInjector<T> {
    /// Wrap `inner` with the faults of `cfg`.
    pub fn new(inner: T, cfg: FaultConfig) -> Self {
        Self::from_state(inner, FaultState::new(cfg))
    }

    /// Wrap `inner` resuming a state kept from an earlier wrapper ([`FaultInjector::into_parts`]).
    pub fn from_state(inner: T, state: FaultState) -> Self {
        FaultInjector { inner, state }
    }

    /// The inner transport and the wrapper's state.
    pub fn into_parts(self) -> (T, FaultState) {
        (self.inner, self.state)
    }

    /// The inner transport.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    /// The inner transport, mutably (calls on it bypass the faults).
    pub fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }

    /// The wrapper's state: configuration, counts, completions pending.
    pub fn state(&self) -> &FaultState {
        &self.state
    }

    /// Faults injected so far.
    pub fn counts(&self) -> FaultCounts {
        self.state.counts
    }
}

impl<T: Transport> FaultInjector<T> {
    /// Draws a refusal for each of `wrs` in order, as posting them one by one would, up to the
    /// first refused one; on a QP in error the WRs before it complete at once with
    /// [`WcStatus::WrFlushErr`], signaled or not, as verbs flushes. Returns how many WRs
    /// from the start go to the inner transport, and the index of the refused one.
    fn admit_sends(&mut self, qpn: QpNum, wrs: &[SendWr]) -> (usize, Option<usize>) {
        let refused_at = (0..wrs.len()).find(|_| {
            let refuse = self.state.chance(self.state.cfg.refuse_send);
            if refuse {
                self.state.counts.refused_sends += 1;
            }
            refuse
        });
        let accepted = &wrs[..refused_at.unwrap_or(wrs.len())];
        if !self.state.errored_qps.contains(&qpn) {
            return (accepted.len(), refused_at);
        }
        for wr in accepted {
            let opcode = match wr.opcode {
                SendOpcode::Send | SendOpcode::SendWithImm => WcOpcode::Send,
                SendOpcode::RdmaWrite | SendOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
                SendOpcode::RdmaRead => WcOpcode::RdmaRead,
            };
            self.state.counts.flushed += 1;
            let wc = WorkCompletion::flushed(wr.wr_id, opcode, qpn);
            self.state.ready.push_back(wc);
        }
        (0, refused_at)
    }
}

/// Intercepts the posts (refusals, flushes on a QP in error), the completions (the faults)
/// and `reset_qp` (which ends a QP's error state); every other call goes to the inner
/// transport unchanged.
impl<T: Transport> TransportLayer for FaultInjector<T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        // RESET leaves the error state; completions already reported or held stay.
        self.state.errored_qps.remove(&qpn);
        self.inner.reset_qp(qpn)
    }
    /// As a chain of one WR; an admitted WR goes to the inner transport's `post_send`.
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        match self.admit_sends(qpn, std::slice::from_ref(wr)) {
            (_, Some(_)) => Err(refused("ibv_post_send")),
            (0, None) => Ok(()),
            (_, None) => self.inner.post_send(qpn, wr),
        }
    }
    /// The WRs before the first refused one go to the inner transport as one chain.
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        let (accepted, refused_at) = self.admit_sends(qpn, wrs);
        if accepted > 0 {
            self.inner.post_send_chain(qpn, &wrs[..accepted])?;
        }
        match refused_at {
            Some(posted) => Err(ChainError {
                posted,
                error: refused("ibv_post_send"),
            }),
            None => Ok(()),
        }
    }
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        if self.state.chance(self.state.cfg.refuse_recv) {
            self.state.counts.refused_recvs += 1;
            return Err(refused("ibv_post_recv"));
        }
        if self.state.errored_qps.contains(&qpn) {
            self.state.counts.flushed += 1;
            let wc = WorkCompletion::flushed(wr.wr_id, WcOpcode::Recv, qpn);
            self.state.ready.push_back(wc);
            return Ok(());
        }
        self.inner.post_recv(qpn, wr)
    }
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        let s = &mut self.state;
        s.polls += 1;
        s.release_due();
        if s.ready.len() < max {
            let mut fresh = std::mem::take(&mut s.scratch);
            fresh.clear();
            self.inner.poll_cq(&mut fresh, max - s.ready.len());
            for wc in fresh.drain(..) {
                s.mangle(wc);
            }
            s.scratch = fresh;
        }
        let n = s.ready.len().min(max);
        out.extend(s.ready.drain(..n));
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rng_is_deterministic_and_rates_are_roughly_kept() {
        let mut a = FaultState::new(FaultConfig {
            seed: 7,
            ..FaultConfig::default()
        });
        let mut b = a.clone();
        let hits = (0..10_000).filter(|_| a.chance(0.25)).count();
        assert!((2_200..2_800).contains(&hits), "{hits}");
        let again = (0..10_000).filter(|_| b.chance(0.25)).count();
        assert_eq!(hits, again);
        assert!(!a.chance(0.0));
        assert!(a.chance(1.0));
    }
}
