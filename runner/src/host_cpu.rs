//! What the runner tells a host's model of CPU time: when a driver turn starts and ends, and
//! how many messages the application handled (the simulator's host model,
//! [`xrdma_sim::HostModel`]). A real host spends its CPU time itself, so the verbs fabric's
//! hosts take the default methods, which do nothing.
//!
//! [`turn`] is the driver turn every runner loop and tool uses. On a host that charges
//! nothing it is exactly [`xrdma::driver::turn`]; otherwise it starts the turn
//! ([`HostCpu::begin_turn`]), counts the messages delivered to the application (an
//! [`Event::Message`], or the last [`Event::Fragment`] of one) and the messages it sends
//! ([`Endpoint::messages_accepted`] before and after each callback), and reports them
//! ([`HostCpu::app_messages`]) before the next transport call — so the application's work on
//! a message delivered in a turn comes before the WRs it posts in reply — then ends the turn.

use std::cell::Cell;
use xrdma::driver::{self, Application, TurnScratch};
use xrdma::layer::TransportLayer;
use xrdma::{
    ChainError, Endpoint, Event, MemoryRegion, QpAddress, QpCaps, QpNum, RecvWr, SendWr, Time,
    Transport, TransportError, WorkCompletion,
};

/// A host transport's side of the host model. Default: nothing (a real host).
pub trait HostCpu {
    /// Whether the host model charges anything: `false` (a real host, the ideal model) lets
    /// [`turn`] run the driver's turn as it is, with nothing counted.
    fn charges(&self) -> bool {
        false
    }
    /// A driver turn starts now (the model charges its fixed cost).
    fn begin_turn(&mut self) {}
    /// The turn is over.
    fn end_turn(&mut self) {}
    /// Since the last report, `delivered` messages were delivered to the application and it
    /// sent `sent` messages (the model charges their per-message costs).
    fn app_messages(&mut self, _delivered: u64, _sent: u64) {}
}

impl<T: HostCpu + ?Sized> HostCpu for &mut T {
    fn charges(&self) -> bool {
        (**self).charges()
    }
    fn begin_turn(&mut self) {
        (**self).begin_turn();
    }
    fn end_turn(&mut self) {
        (**self).end_turn();
    }
    fn app_messages(&mut self, delivered: u64, sent: u64) {
        (**self).app_messages(delivered, sent);
    }
}

impl HostCpu for xrdma_sim::HostTransport<'_> {
    fn charges(&self) -> bool {
        xrdma_sim::HostTransport::charges(self)
    }
    fn begin_turn(&mut self) {
        xrdma_sim::HostTransport::begin_turn(self);
    }
    fn end_turn(&mut self) {
        xrdma_sim::HostTransport::end_turn(self);
    }
    fn app_messages(&mut self, delivered: u64, sent: u64) {
        xrdma_sim::HostTransport::app_messages(self, delivered, sent);
    }
}

/// Whether `event` completes a message for the application: a whole message, or the last
/// fragment of one delivered in fragments.
pub fn is_delivery(event: &Event) -> bool {
    match event {
        Event::Message { .. } => true,
        Event::Fragment {
            message_len,
            offset,
            data,
            ..
        } => offset + data.len() as u64 == *message_len,
        _ => false,
    }
}

/// Messages handled by the application and not yet reported: (delivered, sent).
type Pending = Cell<(u64, u64)>;

/// One driver turn ([`xrdma::driver::turn`]) of `ep` on `t` at `now` with `app`, telling `t`'s
/// host model when it starts and ends and what the application handled (see the module doc).
/// Returns the endpoint's next wake, as the driver's turn does.
pub fn turn<T, A>(
    now: Time,
    ep: &mut Endpoint,
    t: &mut T,
    app: &mut A,
    scratch: &mut TurnScratch,
) -> Option<Time>
where
    T: Transport + HostCpu + ?Sized,
    A: Application + ?Sized,
{
    if !t.charges() {
        return driver::turn(now, ep, t, app, scratch);
    }
    t.begin_turn();
    let pending = Pending::default();
    let mut charged = Charging {
        inner: t,
        pending: &pending,
    };
    let mut counted = Counting {
        inner: app,
        pending: &pending,
    };
    let wake = driver::turn(now, ep, &mut charged, &mut counted, scratch);
    charged.settle();
    charged.inner.end_turn();
    wake
}

/// The application, counting what it handles into `pending`.
struct Counting<'a, A: ?Sized> {
    inner: &'a mut A,
    pending: &'a Pending,
}

impl<A: Application + ?Sized> Counting<'_, A> {
    fn count(&self, delivered: bool, before: u64, after: u64) {
        let (d, s) = self.pending.get();
        self.pending
            .set((d + u64::from(delivered), s + after.saturating_sub(before)));
    }
}

impl<A: Application + ?Sized> Application for Counting<'_, A> {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        let delivered = is_delivery(&event);
        let before = ep.messages_accepted();
        self.inner.on_event(now, ep, event);
        self.count(delivered, before, ep.messages_accepted());
    }
    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        let before = ep.messages_accepted();
        self.inner.on_turn(now, ep);
        self.count(false, before, ep.messages_accepted());
    }
    fn next_wake(&self) -> Option<Time> {
        self.inner.next_wake()
    }
}

/// The transport, reporting what the application handled before each call.
struct Charging<'a, T: ?Sized> {
    inner: &'a mut T,
    pending: &'a Pending,
}

impl<T: HostCpu + ?Sized> Charging<'_, T> {
    #[inline]
    fn settle(&mut self) {
        let (d, s) = self.pending.take();
        if d + s > 0 {
            self.inner.app_messages(d, s);
        }
    }
}

/// Settles what the application handled before each call that may cost host CPU time on the
/// wrapped transport (memory writes, control-path calls, posts, polling the CQ); the
/// observations (the clock, reads, congestion, CNPs, parameters) go straight through.
impl<T: Transport + HostCpu + ?Sized> TransportLayer for Charging<'_, T> {
    type Inner = T;
    fn inner(&self) -> &T {
        self.inner
    }
    fn inner_mut(&mut self) -> &mut T {
        self.inner
    }
    fn write(&mut self, addr: u64, parts: &[&[u8]]) -> Result<(), TransportError> {
        self.settle();
        self.inner.write(addr, parts)
    }
    fn register_memory(&mut self, len: u64) -> Result<MemoryRegion, TransportError> {
        self.settle();
        self.inner.register_memory(len)
    }
    fn create_qp(&mut self, caps: QpCaps) -> Result<QpAddress, TransportError> {
        self.settle();
        self.inner.create_qp(caps)
    }
    fn connect_qp(&mut self, qpn: QpNum, remote: &QpAddress) -> Result<(), TransportError> {
        self.settle();
        self.inner.connect_qp(qpn, remote)
    }
    fn reset_qp(&mut self, qpn: QpNum) -> Result<QpAddress, TransportError> {
        self.settle();
        self.inner.reset_qp(qpn)
    }
    fn post_send(&mut self, qpn: QpNum, wr: &SendWr) -> Result<(), TransportError> {
        self.settle();
        self.inner.post_send(qpn, wr)
    }
    fn post_send_chain(&mut self, qpn: QpNum, wrs: &[SendWr]) -> Result<(), ChainError> {
        self.settle();
        self.inner.post_send_chain(qpn, wrs)
    }
    fn post_recv(&mut self, qpn: QpNum, wr: &RecvWr) -> Result<(), TransportError> {
        self.settle();
        self.inner.post_recv(qpn, wr)
    }
    fn poll_cq(&mut self, out: &mut Vec<WorkCompletion>, max: usize) -> usize {
        self.settle();
        self.inner.poll_cq(out, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xrdma_conformance::forwarding::{assert_forwards_every_call, Probe};

    /// A host whose model charges, with nothing pending: the charging wrapper is neutral.
    impl HostCpu for Probe {
        fn charges(&self) -> bool {
            true
        }
    }

    #[test]
    fn charging_reports_the_port_cnps_of_the_transport_it_wraps() {
        let now = Time::from_ps(42_000);
        let counted = Probe::default().poll_port_cnps(now);
        assert_ne!(counted, 0);
        let mut probe = Probe::default();
        let pending = Pending::default();
        let mut charging = Charging {
            inner: &mut probe,
            pending: &pending,
        };
        assert_eq!(Transport::poll_port_cnps(&mut charging, now), counted);
    }

    #[test]
    fn charging_passes_every_call_on() {
        let mut probe = Probe::default();
        let log = probe.log();
        let pending = Pending::default();
        let mut charging = Charging {
            inner: &mut probe,
            pending: &pending,
        };
        assert_forwards_every_call(&mut charging, &log);
    }
}
