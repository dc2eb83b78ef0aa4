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
//! - `tcp_news`: sockets with news for the application and when it sees it (`tcp-wakeup`
//!   after the kernel had it), in time order; moved to `Host::tcp_ready` when due.
//! - `busy`: every cost charged so far, application and kernel (the host's CPU time).
//!
//! # Events
//! - The model's `Wake` ([`Simulation::on_host_ready`]): a deferred turn whose CPU is now
//!   free, a CQE now visible, or a socket's news now due marks the host ready; what is still
//!   to come re-arms it.

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
    pub tcp_news: VecDeque<(Time, u32)>,
    pub busy: Span,
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
            tcp_news: VecDeque::new(),
            busy: Span::ZERO,
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
        c.busy += cost;
        c.cpu
    }

    /// Charge `cost` of the kernel's CPU time to host `h`, starting at `not_before` or when
    /// the CPU is free, in a turn or not (a softirq runs when a packet comes); returns when
    /// the work ends.
    pub(crate) fn charge_kernel(&mut self, h: HostId, not_before: Time, cost: Span) -> Time {
        let start = self.cpu_start(h).max(not_before);
        let c = &mut self.hosts[h as usize].clock;
        c.cpu = start + cost;
        c.busy += cost;
        c.cpu
    }

    /// CPU time host `h` has been charged so far by the host model (its turns, calls, the
    /// application's messages and the kernel's TCP work); zero with the ideal model.
    pub fn host_cpu_busy(&self, h: HostId) -> Span {
        self.hosts
            .get(h as usize)
            .map_or(Span::ZERO, |host| host.clock.busy)
    }

    /// Socket `s` of host `h` has news the application sees `tcp-wakeup` from now.
    #[cold]
    #[inline(never)]
    pub(crate) fn tcp_news_later(&mut self, h: HostId, s: u32) {
        let at = self.now + self.cfg.host.tcp_wakeup;
        self.hosts[h as usize].clock.tcp_news.push_back((at, s));
        self.arm_host_ready(h, at);
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
        let host = &mut self.hosts[h as usize];
        let c = &mut host.clock;
        c.ready_event = Time::MAX;
        let head = c.cq_visible.front().copied();
        let deferred = std::mem::take(&mut c.deferred);
        let mut news = false;
        while let Some(&(at, s)) = c.tcp_news.front() {
            if at > now {
                break;
            }
            c.tcp_news.pop_front();
            host.tcp_ready.push(s);
            news = true;
        }
        if let Some(&(at, _)) = host.clock.tcp_news.front() {
            self.arm_host_ready(h, at);
        }
        match head {
            Some(v) if v > now => self.arm_host_ready(h, v),
            Some(_) => {
                self.mark_ready(h);
                return;
            }
            None => {}
        }
        if deferred || news {
            self.mark_ready(h);
        }
    }
}
