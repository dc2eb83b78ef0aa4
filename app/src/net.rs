//! The hosts a set of workers share ([`Net`]): a fabric, an xrdma endpoint per host, and per
//! host the events its worker has not taken yet. A worker waiting for something runs the one
//! turn loop ([`xrdma_runner::drive::turns`]) over every host of its fabric, so on the
//! simulator the other workers' endpoints keep answering (ACKs, grants, completions) while
//! one of them waits; what they receive meanwhile waits in their inboxes.

use crate::error::AppError;
use crate::exchange::AddrListener;
use crate::tag::Tagged;
use bytes::Bytes;
use std::collections::{HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use xrdma::driver::{Application, TurnScratch};
use xrdma::Span;
use xrdma::{ConnId, Endpoint, Event, Time};
use xrdma_runner::drive::{turns, Clock, Hosts, Round};
use xrdma_runner::fabric::Fabric;

/// How often (fabric time) a waiting call looks for workers connecting to a listening one:
/// an `accept` is a system call, too much for every busy-polling round.
const ACCEPT_POLL: Span = Span::from_ms(1);

/// The hosts of one fabric and what each has been told (see the module doc).
pub(crate) struct Net<F: Fabric> {
    pub(crate) fabric: F,
    pub(crate) eps: Vec<Endpoint>,
    /// Per host: the events its worker has not taken, in order (not [`Event::Sent`], which
    /// only counts down [`Net::unacked`]).
    pub(crate) inbox: Vec<VecDeque<Event>>,
    /// Per host: messages sent and not yet ACKed or failed.
    pub(crate) unacked: Vec<u64>,
    /// Per host: what answers its messages inside the turns ([`crate::Worker::serve`]).
    pub(crate) handlers: Vec<Option<Handler>>,
    /// Per host: its listening socket, if it listens ([`crate::Worker::listen`]).
    pub(crate) listeners: Vec<Option<AddrListener>>,
    /// Per host: connections to its listener dropped in the exchange.
    pub(crate) refused: Vec<u64>,
    /// Per host: calls that timed out, by connection and id: their late replies are dropped.
    pub(crate) abandoned: Vec<HashSet<(ConnId, u32)>>,
    /// Per host: its worker was dropped. Its endpoint gets no more turns, as a process that
    /// exited runs no more code, and its QPs were reset ([`crate::Worker`]'s `Drop`).
    pub(crate) gone: Vec<bool>,
    /// Per host: the id of its next call ([`crate::rpc`]).
    pub(crate) next_call: Vec<u32>,
    /// Per host: what its handler's replies met (the core refused one), in order.
    pub(crate) errors: Vec<VecDeque<AppError>>,
    /// Per host: what answers `xrdma stat` while its worker waits ([`crate::Worker::stat_socket`]).
    pub(crate) watchers: Vec<Option<Watcher<F>>>,
    scratch: TurnScratch,
}

/// What a worker with a stat socket runs after every round of its waiting calls
/// ([`crate::Worker::stat_socket`]): answers a waiting `xrdma stat` client with every endpoint
/// of the net and the calling thread's placement.
pub(crate) type Watcher<F> = Box<dyn FnMut(&mut F, &[Endpoint])>;

/// A server's answer to each message: the reply to send on its connection, if any.
pub(crate) type Handler = Box<dyn FnMut(ConnId, Bytes) -> Option<Bytes>>;

/// Host `h`'s application while the hosts run: its handler answers its messages, and it
/// keeps the rest of what it is told.
struct Keep<'a> {
    inbox: &'a mut VecDeque<Event>,
    unacked: &'a mut u64,
    handler: Option<&'a mut Handler>,
    abandoned: &'a mut HashSet<(ConnId, u32)>,
    errors: &'a mut VecDeque<AppError>,
}

impl Application for Keep<'_> {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        if let Event::Message { conn, tag, .. } = &event {
            // The late reply of a call that timed out: nobody waits for it.
            if let Tagged::Reply(id) = Tagged::of(*tag) {
                if self.abandoned.remove(&(*conn, id)) {
                    return;
                }
            }
        }
        match event {
            Event::Message { conn, tag, data }
                if self.handler.is_some() && !matches!(Tagged::of(tag), Tagged::Reply(_)) =>
            {
                let Some(h) = self.handler.as_mut() else {
                    return;
                };
                // A panicking handler is this worker's error, not the caller's panic.
                let reply = match catch_unwind(AssertUnwindSafe(|| h(conn, data))) {
                    Ok(r) => r,
                    Err(p) => {
                        let message = p
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_string())
                            .or_else(|| p.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        self.errors
                            .push_back(AppError::HandlerPanicked { conn, message });
                        return;
                    }
                };
                match reply.map(|r| ep.send_tagged(now, conn, r, Tagged::answer(tag))) {
                    Some(Ok(_)) => *self.unacked += 1,
                    Some(Err(e)) => self.errors.push_back(AppError::Refused(e)),
                    None => {}
                }
            }
            Event::Sent { .. } => *self.unacked = self.unacked.saturating_sub(1),
            Event::SendFailed { .. } => {
                *self.unacked = self.unacked.saturating_sub(1);
                self.inbox.push_back(event);
            }
            e => self.inbox.push_back(e),
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

impl<F: Fabric> Net<F> {
    /// A net of `fabric`'s hosts, one endpoint each (`eps`, by host index).
    pub(crate) fn new(fabric: F, eps: Vec<Endpoint>) -> Self {
        let n = eps.len();
        Net {
            fabric,
            eps,
            inbox: vec![VecDeque::new(); n],
            unacked: vec![0; n],
            handlers: (0..n).map(|_| None).collect(),
            listeners: (0..n).map(|_| None).collect(),
            refused: vec![0; n],
            abandoned: vec![HashSet::new(); n],
            gone: vec![false; n],
            next_call: vec![1; n],
            errors: (0..n).map(|_| VecDeque::new()).collect(),
            watchers: (0..n).map(|_| None).collect(),
            scratch: TurnScratch::default(),
        }
    }

    /// Run every host's turns until `done` holds of host `me`'s inbox and its count of
    /// unACKed messages, or `deadline` passes on the fabric's clock (or the fabric has
    /// nothing left to do); whether `done` holds. Listening hosts take the workers that
    /// connect meanwhile, every [`ACCEPT_POLL`]. With `spin`, `me` keeps a loop that may
    /// sleep (the hybrid verbs loop) spinning while its messages are in flight: a caller
    /// waiting for a reply or an ACK; a server running for a while sleeps between requests.
    pub(crate) fn run_until(
        &mut self,
        me: u32,
        deadline: Time,
        spin: bool,
        done: impl Fn(&VecDeque<Event>, u64) -> bool,
    ) -> bool {
        let m = me as usize;
        if done(&self.inbox[m], self.unacked[m]) {
            return true;
        }
        struct Run<'a, F, P> {
            watcher: Option<&'a mut Watcher<F>>,
            eps: &'a mut [Endpoint],
            inbox: &'a mut [VecDeque<Event>],
            unacked: &'a mut [u64],
            handlers: &'a mut [Option<Handler>],
            listeners: &'a [Option<AddrListener>],
            refused: &'a mut [u64],
            abandoned: &'a mut [HashSet<(ConnId, u32)>],
            gone: &'a [bool],
            errors: &'a mut [VecDeque<AppError>],
            next_accept: Time,
            scratch: &'a mut TurnScratch,
            me: u32,
            deadline: Time,
            spin: bool,
            done: P,
        }
        impl<F: Fabric, P: Fn(&VecDeque<Event>, u64) -> bool> Hosts<F> for Run<'_, F, P> {
            fn turn(&mut self, fabric: &mut F, h: u32, now: Time, _settled: bool) -> Option<Time> {
                let i = h as usize;
                if self.gone[i] {
                    return None;
                }
                let mut app = Keep {
                    inbox: &mut self.inbox[i],
                    unacked: &mut self.unacked[i],
                    handler: self.handlers[i].as_mut(),
                    abandoned: &mut self.abandoned[i],
                    errors: &mut self.errors[i],
                };
                let ep = &mut self.eps[i];
                let wake = xrdma_runner::host_cpu::turn(
                    now,
                    ep,
                    &mut fabric.host(h),
                    &mut app,
                    self.scratch,
                );
                // The waiting host with messages in flight keeps a loop that can sleep (the
                // hybrid verbs loop) spinning when asked to. A listening host wants a turn
                // when it next looks for connecting workers; the waiting host at its
                // deadline, so the clock gets there.
                fabric.set_in_flight(h, self.spin && h == self.me && self.unacked[i] > 0);
                let mut wake = wake;
                if self.listeners[i].is_some() {
                    wake = Some(wake.map_or(self.next_accept, |w| w.min(self.next_accept)));
                }
                if h == self.me {
                    Some(wake.map_or(self.deadline, |w| w.min(self.deadline)))
                } else {
                    wake
                }
            }
            fn after_round(&mut self, fabric: &mut F, now: Time) -> Round {
                if now >= self.next_accept {
                    self.next_accept = now + ACCEPT_POLL;
                    for (h, l) in self.listeners.iter().enumerate() {
                        if let Some(l) = l {
                            let ep = &mut self.eps[h];
                            l.accept_waiting(fabric, h as u32, ep, &mut self.refused[h]);
                        }
                    }
                }
                if let Some(w) = self.watcher.as_mut() {
                    w(fabric, self.eps);
                }
                let m = self.me as usize;
                let done = (self.done)(&self.inbox[m], self.unacked[m]);
                if done || !self.errors[m].is_empty() || now >= self.deadline {
                    Round::Stop
                } else {
                    Round::Go
                }
            }
        }
        let mut run = Run {
            watcher: self.watchers[m].as_mut(),
            eps: &mut self.eps,
            inbox: &mut self.inbox,
            unacked: &mut self.unacked,
            handlers: &mut self.handlers,
            listeners: &self.listeners,
            refused: &mut self.refused,
            abandoned: &mut self.abandoned,
            gone: &self.gone,
            errors: &mut self.errors,
            next_accept: Time::ZERO,
            scratch: &mut self.scratch,
            me,
            deadline,
            spin,
            done: &done,
        };
        turns(&mut self.fabric, Clock::Sparse, &mut run);
        done(&self.inbox[m], self.unacked[m])
    }
}
