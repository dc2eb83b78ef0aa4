//! The host model at run time: each host's CPU clock, the visibility of its CQEs, and the wake
//! that gives a host its turn when a CQE becomes visible or its CPU becomes free. Nothing here
//! runs with the ideal model (`Simulation::host_on` is false).
//!
//! The model's wake is a `Wake` event that is not the driver's: `Simulation::wake_due` hands a
//! `Wake` that is not the host's queued driver wake to [`Simulation::host_model_wake`], which
//! handles it there, so the event loop has no event kind or dispatch of its own for the model
//! and costs nothing more without it.
//!
//! # State
//! [`HostClock`] (`Host::clock`):
//! - `cpu`: the host's CPU is busy until then (the end of its last charged call); moves only
//!   inside a turn (`in_turn`, between `HostTransport::begin_turn` and `end_turn`).
//! - `cq_visible`: the time each CQE of the host's CQ becomes visible, in CQ order (so
//!   non-decreasing); `cq_last` the last one pushed.
//! - `deferred`: the host needs a turn but its CPU is busy: it gets it at `cpu`.
//! - `ready_event`: the time of the model's one wake that counts ([`Time::MAX`]: none); one
//!   at another time is stale and dropped without moving the clock.
//!
//! # Events
//! - The model's `Wake` ([`Simulation::on_host_ready`]): a deferred turn whose CPU is now
//!   free, or a CQE now visible, marks the host ready; what is still to come re-arms it.

use crate::engine::Event;
use crate::{HostId, Simulation};
use std::collections::VecDeque;
use xrdma::{Span, Time, WorkCompletion};

/// One host's CPU clock and CQE visibility (see the module doc).
#[derive(Debug)]
pub(crate) struct HostClock {
    pub cpu: Time,
    pub in_turn: bool,
    pub cq_visible: VecDeque<Time>,
    pub cq_last: Time,
    pub deferred: bool,
    pub ready_event: Time,
}

impl HostClock {
    pub(crate) fn new() -> Self {
        HostClock {
            cpu: Time::ZERO,
            in_turn: false,
            cq_visible: VecDeque::new(),
            cq_last: Time::ZERO,
            deferred: false,
            ready_event: Time::MAX,
        }
    }
}

impl Simulation {
    /// When a CPU call of host `h` made now starts: at its CPU clock if that is later.
    #[inline]
    pub(crate) fn cpu_start(&self, h: HostId) -> Time {
        self.now.max(self.hosts[h as usize].clock.cpu)
    }

    /// Charge `cost` of CPU time to host `h` for a call made now; returns when the call ends
    /// (for a call outside a turn: when it starts, nothing is charged).
    pub(crate) fn charge_cpu(&mut self, h: HostId, cost: Span) -> Time {
        let start = self.cpu_start(h);
        let c = &mut self.hosts[h as usize].clock;
        if !c.in_turn {
            return start;
        }
        c.cpu = start + cost;
        c.cpu
    }

    /// A turn of host `h` starts now: charge the turn's fixed cost.
    pub(crate) fn begin_turn(&mut self, h: HostId) {
        self.hosts[h as usize].clock.in_turn = true;
        let turn = self.cfg.host.turn;
        self.charge_cpu(h, turn);
    }

    /// The turn of host `h` is over: calls cost nothing until the next one starts.
    pub(crate) fn end_turn(&mut self, h: HostId) {
        self.hosts[h as usize].clock.in_turn = false;
    }

    /// A CQE was just pushed on host `h`'s CQ, generated at `at` (the NIC's decision, plus the
    /// data's DMA write for a receive): it is visible `cqe-write` later, and never before the
    /// CQE ahead of it.
    #[cold]
    #[inline(never)]
    pub(crate) fn cqe_generated(&mut self, h: HostId, at: Time) {
        let at = at + self.cfg.host.cqe_write;
        let c = &mut self.hosts[h as usize].clock;
        let v = at.max(c.cq_last);
        c.cq_last = v;
        c.cq_visible.push_back(v);
        if v <= self.now {
            self.mark_ready(h);
        } else {
            self.arm_host_ready(h, v);
        }
    }

    /// `poll_cq` on host `h` under the host model: the CQEs visible when the call starts, at
    /// most `max`, in order; the call costs `poll-call + n × poll-cqe`. When a CQE is left, the
    /// host is woken when it is visible (at once for one already visible: `max` left it).
    #[inline(never)]
    pub(crate) fn poll_cq_timed(
        &mut self,
        h: HostId,
        out: &mut Vec<WorkCompletion>,
        max: usize,
    ) -> usize {
        let start = self.cpu_start(h);
        let host = &mut self.hosts[h as usize];
        let n = host
            .clock
            .cq_visible
            .iter()
            .take(max)
            .take_while(|&&v| v <= start)
            .count();
        host.clock.cq_visible.drain(..n);
        // Not `extend(drain)`: the ideal `poll_cq` has that one inlined to itself.
        for _ in 0..n {
            out.extend(host.cq.pop_front());
        }
        let next = host.clock.cq_visible.front().copied();
        let cost = self.cfg.host.poll_cost(n as u64);
        self.charge_cpu(h, cost);
        if let Some(v) = next {
            self.arm_host_ready(h, v);
        }
        n
    }

    /// Host `h` needs a turn now but its CPU is busy: give it the turn when the CPU is free.
    #[cold]
    #[inline(never)]
    pub(crate) fn defer_ready(&mut self, h: HostId) {
        let c = &mut self.hosts[h as usize].clock;
        c.deferred = true;
        let at = c.cpu;
        self.arm_host_ready(h, at);
    }

    /// Make sure the model's wake for host `h` fires at or before `at`, and not before now: a
    /// CQE that became visible in the past (one a poll left behind) wakes the host now.
    fn arm_host_ready(&mut self, h: HostId, at: Time) {
        let at = at.max(self.now);
        let c = &mut self.hosts[h as usize].clock;
        if at < c.ready_event {
            c.ready_event = at;
            self.queue.push(at, Event::Wake(h));
        }
    }

    /// A `Wake` for host `h` popped at `t` that is not the driver's: when it is the model's
    /// wake that counts, the clock moves to `t` (as for any due event) and
    /// [`Simulation::on_host_ready`] handles it; a stale one does nothing.
    #[cold]
    #[inline(never)]
    pub(crate) fn host_model_wake(&mut self, h: HostId, t: Time) {
        if self.hosts[h as usize].clock.ready_event != t {
            return;
        }
        debug_assert!(
            t >= self.now,
            "the host model's wake at {t} is before now, {}",
            self.now
        );
        self.sample_until(t);
        self.now = t;
        self.on_host_ready(h);
    }

    /// The model's wake for host `h`: a deferred turn whose CPU is free, or a visible CQE, marks
    /// the host ready (a busy CPU defers it again); a CQE still to become visible re-arms.
    #[cold]
    #[inline(never)]
    pub(crate) fn on_host_ready(&mut self, h: HostId) {
        let now = self.now;
        let c = &mut self.hosts[h as usize].clock;
        c.ready_event = Time::MAX;
        let head = c.cq_visible.front().copied();
        let deferred = std::mem::take(&mut c.deferred);
        match head {
            Some(v) if v > now => self.arm_host_ready(h, v),
            Some(_) => {
                self.mark_ready(h);
                return;
            }
            None => {}
        }
        if deferred {
            self.mark_ready(h);
        }
    }
}
