//! Host-side faults the runner injects (`sim.faults.stop-reposting`, `sim.faults.slow-receiver`)
//! and the middleware outcomes it counts on every run (ACK timeouts).
//!
//! Both faults sit between the driver and the host, so they need nothing from the backend:
//! - **stop reposting**: inside the window the host keeps running, polling and acknowledging,
//!   but the receive WRs the core reposts are held back by a transport wrapper (`Holding`)
//!   and posted when the window ends (or dropped with their QP if it is reset meanwhile).
//!   With `xrdma.receive-credits: false` the sender keeps sending and the NIC answers RNR
//!   NAKs; with credits on, the sender simply runs out of credits and waits.
//! - **slow receiver**: after a turn in which `n` messages were delivered to the host's
//!   application, the host gets its next turn only `n × per-message` later (it is busy
//!   processing them); its NIC keeps receiving and ACKing meanwhile.

use xrdma::driver::Application;
use xrdma::layer::TransportLayer;
use xrdma::{Event, QpAddress, QpNum, RecvWr, Span, Time, Transport, TransportError, XrdmaError};
pub use xrdma_scenario::HostFaults;
use xrdma_scenario::Stall;

/// What the runner counted during a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCounters {
    /// `AckTimeout` errors the core reported (connections failed for lack of an ACK).
    pub ack_timeouts: u64,
    /// Receive WRs held back by a stop-reposting window.
    pub held_receives: u64,
}

/// Per-host state of the host faults during a run.
pub struct HostFaultState {
    faults: HostFaults,
    /// Per host: receive WRs held back, in the order the core posted them.
    held: Vec<Vec<(QpNum, RecvWr)>>,
    /// Per host: busy processing delivered messages until then.
    busy_until: Vec<Time>,
    /// Per host: processing time per delivered message (0: not slow).
    per_message: Vec<Span>,
    /// What the faults did so far.
    pub counters: HostCounters,
}

impl HostFaultState {
    /// The state of `faults` over `hosts` hosts, before the run.
    pub fn new(faults: &HostFaults, hosts: u32) -> Self {
        let mut per_message = vec![Span::ZERO; hosts as usize];
        for s in &faults.slow_receiver {
            if let Some(p) = per_message.get_mut(s.host as usize) {
                *p = s.per_message;
            }
        }
        HostFaultState {
            faults: faults.clone(),
            held: vec![Vec::new(); hosts as usize],
            busy_until: vec![Time::ZERO; hosts as usize],
            per_message,
            counters: HostCounters::default(),
        }
    }

    /// While host `h` is busy processing messages at `now`: until when.
    pub(crate) fn busy_until(&self, h: u32, now: Time) -> Option<Time> {
        let t = *self.busy_until.get(h as usize)?;
        (t > now).then_some(t)
    }

    /// The end of the stop-reposting window host `h` is in at `now`, if any.
    pub(crate) fn holding_until(&self, h: u32, now: Time) -> Option<Time> {
        self.faults
            .stop_reposting
            .iter()
            .filter(|s| s.host == h && s.at <= now && now < s.end())
            .map(Stall::end)
            .max()
    }

    /// Posts the receive WRs held for host `h` (its window is over). A QP that refuses one is
    /// gone already (its connection failed); the rest are still posted.
    pub(crate) fn release<T: Transport + ?Sized>(&mut self, h: u32, t: &mut T) {
        let Some(held) = self.held.get_mut(h as usize) else {
            return;
        };
        for (qpn, wr) in held.drain(..) {
            let _ = t.post_recv(qpn, &wr);
        }
    }

    /// Whether host `h` has receive WRs held back.
    pub(crate) fn has_held(&self, h: u32) -> bool {
        self.held.get(h as usize).is_some_and(|v| !v.is_empty())
    }

    /// After a turn of host `h` at `now` that delivered `delivered` messages: when the host
    /// is free again (`None`: not a slow receiver, or nothing delivered).
    pub(crate) fn after_turn(&mut self, h: u32, now: Time, delivered: u64) -> Option<Time> {
        let per = *self.per_message.get(h as usize)?;
        if per == Span::ZERO || delivered == 0 {
            return None;
        }
        let busy = now + per * delivered;
        self.busy_until[h as usize] = busy;
        Some(busy)
    }

    /// The held-receive list of host `h`, for a [`Holding`] wrapper.
    pub(crate) fn held_mut(&mut self, h: u32) -> (&mut Vec<(QpNum, RecvWr)>, &mut u64) {
        (&mut self.held[h as usize], &mut self.counters.held_receives)
    }
}

/// A transport that, while `holding`, keeps the receive WRs posted to it instead of posting
/// them; everything else goes straight through.
pub(crate) struct Holding<'a, T> {
    pub inner: T,
    pub holding: bool,
    pub held: &'a mut Vec<(QpNum, RecvWr)>,
    pub count: &'a mut u64,
}

/// Intercepts `post_recv` (held while `holding`) and `reset_qp` (which drops the QP's held
/// receives); every other call goes to the inner transport.
impl<T: Transport> TransportLayer for Holding<'_, T> {
    type Inner = T;
    fn inner(&self) -> &T {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut T {
        &mut self.inner
    }
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        // A reset QP loses its posted receives; so do the ones held for it.
        self.held.retain(|(q, _)| *q != qpn);
        self.inner.reset_qp(qpn)
    }
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        if self.holding {
            self.held.push((qpn, *wr));
            *self.count += 1;
            return Ok(());
        }
        self.inner.post_recv(qpn, wr)
    }
}

impl<T: crate::host_cpu::HostCpu> crate::host_cpu::HostCpu for Holding<'_, T> {
    fn charges(&self) -> bool {
        self.inner.charges()
    }
    fn begin_turn(&mut self) {
        self.inner.begin_turn();
    }
    fn end_turn(&mut self) {
        self.inner.end_turn();
    }
    fn app_messages(&mut self, delivered: u64, sent: u64) {
        self.inner.app_messages(delivered, sent);
    }
}

/// An application seen through the runner: counts the messages delivered to it and the ACK
/// timeouts the core reports, and passes everything on.
pub(crate) struct Observed<'a, A: ?Sized> {
    pub app: &'a mut A,
    pub delivered: u64,
    pub ack_timeouts: &'a mut u64,
}

impl<M: ?Sized, A: Application<M> + ?Sized> Application<M> for Observed<'_, A> {
    fn on_event(&mut self, now: Time, ep: &mut M, event: Event) {
        match &event {
            Event::Message { .. } => self.delivered += 1,
            Event::Fragment {
                message_len,
                offset,
                data,
                ..
            } if offset + data.len() as u64 == *message_len => self.delivered += 1,
            Event::ConnectionFailed {
                error: XrdmaError::AckTimeout { .. },
                ..
            } => *self.ack_timeouts += 1,
            _ => {}
        }
        self.app.on_event(now, ep, event);
    }
    fn on_turn(&mut self, now: Time, ep: &mut M) {
        self.app.on_turn(now, ep);
    }
    fn next_wake(&self) -> Option<Time> {
        self.app.next_wake()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xrdma_conformance::forwarding::{assert_forwards_every_call, Probe};

    #[test]
    fn holding_outside_its_window_passes_every_call_on() {
        let mut probe = Probe::default();
        let log = probe.log();
        let (mut held, mut count) = (Vec::new(), 0);
        let mut holding = Holding {
            inner: &mut probe,
            holding: false,
            held: &mut held,
            count: &mut count,
        };
        assert_forwards_every_call(&mut holding, &log);
        assert!(held.is_empty());
        assert_eq!(count, 0);
    }
}
