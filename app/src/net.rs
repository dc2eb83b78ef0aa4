//! The hosts a set of workers share ([`Net`]): a fabric, an xrdma endpoint per host, and per
//! host the events its worker has not taken yet. A worker waiting for something runs the one
//! turn loop ([`xrdma_runner::drive::turns`]) over every host of its fabric, so on the
//! simulator the other workers' endpoints keep answering (ACKs, grants, completions) while
//! one of them waits; what they receive meanwhile waits in their inboxes.

use bytes::Bytes;
use std::collections::VecDeque;
use xrdma::driver::{Application, TurnScratch};
use xrdma::{ConnId, Endpoint, Event, Time};
use xrdma_runner::drive::{turns, Clock, Hosts, Round};
use xrdma_runner::fabric::Fabric;

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
    scratch: TurnScratch,
}

/// A server's answer to each message: the reply to send on its connection, if any.
pub(crate) type Handler = Box<dyn FnMut(ConnId, Bytes) -> Option<Bytes>>;

/// Host `h`'s application while the hosts run: its handler answers its messages, and it
/// keeps the rest of what it is told.
struct Keep<'a> {
    inbox: &'a mut VecDeque<Event>,
    unacked: &'a mut u64,
    handler: Option<&'a mut Handler>,
}

impl Application for Keep<'_> {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { conn, data } if self.handler.is_some() => {
                let reply = self.handler.as_mut().and_then(|h| h(conn, data));
                match reply.map(|r| ep.send(now, conn, r)) {
                    Some(Ok(_)) => *self.unacked += 1,
                    Some(Err(error)) => {
                        self.inbox
                            .push_back(Event::ConnectionFailed { conn, error });
                    }
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
            scratch: TurnScratch::default(),
        }
    }

    /// Run every host's turns until `done(self's host `me` inbox, its unacked count)` holds
    /// or `deadline` passes on the fabric's clock (or the fabric has nothing left to do);
    /// whether `done` holds.
    pub(crate) fn run_until(
        &mut self,
        me: u32,
        deadline: Time,
        done: impl Fn(&VecDeque<Event>, u64) -> bool,
    ) -> bool {
        let m = me as usize;
        if done(&self.inbox[m], self.unacked[m]) {
            return true;
        }
        struct Run<'a, P> {
            eps: &'a mut [Endpoint],
            inbox: &'a mut [VecDeque<Event>],
            unacked: &'a mut [u64],
            handlers: &'a mut [Option<Handler>],
            scratch: &'a mut TurnScratch,
            me: u32,
            deadline: Time,
            done: P,
        }
        impl<F: Fabric, P: Fn(&VecDeque<Event>, u64) -> bool> Hosts<F> for Run<'_, P> {
            fn turn(&mut self, fabric: &mut F, h: u32, now: Time, _settled: bool) -> Option<Time> {
                let i = h as usize;
                let mut app = Keep {
                    inbox: &mut self.inbox[i],
                    unacked: &mut self.unacked[i],
                    handler: self.handlers[i].as_mut(),
                };
                let ep = &mut self.eps[i];
                let wake = xrdma_runner::host_cpu::turn(
                    now,
                    ep,
                    &mut fabric.host(h),
                    &mut app,
                    self.scratch,
                );
                // The waiting host wants a turn at its deadline, so the clock gets there.
                if h == self.me {
                    Some(wake.map_or(self.deadline, |w| w.min(self.deadline)))
                } else {
                    wake
                }
            }
            fn after_round(&mut self, _fabric: &mut F, now: Time) -> Round {
                let m = self.me as usize;
                if (self.done)(&self.inbox[m], self.unacked[m]) || now >= self.deadline {
                    Round::Stop
                } else {
                    Round::Go
                }
            }
        }
        let mut run = Run {
            eps: &mut self.eps,
            inbox: &mut self.inbox,
            unacked: &mut self.unacked,
            handlers: &mut self.handlers,
            scratch: &mut self.scratch,
            me,
            deadline,
            done: &done,
        };
        turns(&mut self.fabric, Clock::EveryRound, &mut run);
        done(&self.inbox[m], self.unacked[m])
    }
}
