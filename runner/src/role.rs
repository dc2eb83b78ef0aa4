//! One host's part in a workload, so one vector holds every host's application: a sender
//! (an incast or open-loop sender, an echo client), the receiver (or echo server), or a host
//! of the fabric that takes no part. The runner turns every host through this one type.

use xrdma::driver::Application;
use xrdma::{AnyStack, Endpoint, Event, Messages, Time};

/// A host's role in a workload with senders of type `S` and a receiving side of type `R`.
pub enum HostRole<S, R> {
    /// A host that sends (an echo client sends requests).
    Sender(S),
    /// The host that receives (an echo server receives requests and answers them).
    Receiver(R),
    /// A host of the fabric that takes no part in the workload.
    Idle,
}

/// A host's application on message stack `M`, as the runner sees it.
pub trait HostApp<M = Endpoint>: Application<M> {
    /// Whether this host has nothing left to do (a sender whose every message was ACKed or
    /// failed; hosts that only react always are).
    fn finished(&self) -> bool;
    /// The workload is settled (every host finished): stop what runs only beside it (a
    /// heartbeat, [`crate::heartbeat`]). Default: nothing.
    fn settle(&mut self) {}
}

/// Whether a sending application has nothing left to do: every message ACKed or failed (or,
/// for an echo client, answered).
pub trait Finish {
    /// See the trait.
    fn finished(&self) -> bool;
}

impl<T: Finish + ?Sized> Finish for Box<T> {
    fn finished(&self) -> bool {
        (**self).finished()
    }
}

impl<S: Finish, R> HostRole<S, R> {
    /// Whether this host has nothing left to do: a finished sender; the receiving side and
    /// idle hosts always are (they only react).
    pub fn finished(&self) -> bool {
        match self {
            HostRole::Sender(s) => s.finished(),
            HostRole::Receiver(_) | HostRole::Idle => true,
        }
    }
}

/// Workloads are written for any stack (`dyn Messages`); a role runs on the stack `M` its
/// host has.
impl<M, S, R> Application<M> for HostRole<S, R>
where
    M: Messages + 'static,
    S: Application<AnyStack>,
    R: Application<AnyStack>,
{
    fn on_event(&mut self, now: Time, ep: &mut M, event: Event) {
        match self {
            HostRole::Sender(s) => s.on_event(now, ep, event),
            HostRole::Receiver(r) => r.on_event(now, ep, event),
            HostRole::Idle => {}
        }
    }
    fn on_turn(&mut self, now: Time, ep: &mut M) {
        match self {
            HostRole::Sender(s) => s.on_turn(now, ep),
            HostRole::Receiver(r) => r.on_turn(now, ep),
            HostRole::Idle => {}
        }
    }
    fn next_wake(&self) -> Option<Time> {
        match self {
            HostRole::Sender(s) => s.next_wake(),
            HostRole::Receiver(r) => r.next_wake(),
            HostRole::Idle => None,
        }
    }
}

impl<M, S, R> HostApp<M> for HostRole<S, R>
where
    M: Messages + 'static,
    S: Application<AnyStack> + Finish,
    R: Application<AnyStack>,
{
    fn finished(&self) -> bool {
        HostRole::finished(self)
    }
}
