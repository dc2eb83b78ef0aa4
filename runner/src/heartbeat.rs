//! The heartbeat beside a workload (`heartbeat:` in a scenario,
//! [`xrdma_scenario::Heartbeat`]): one host sends a small beat every interval over its own
//! connection, the other answers each with the same bytes, while the workload runs.
//!
//! [`Beat`] is either end's application; [`Hosted`] puts it beside a host's workload
//! application and routes each event by its connection, so neither learns of the other. The
//! beats stop when the workload is settled ([`HostApp::settle`]); a beat still out then is
//! reported unanswered.

use crate::role::HostApp;
use bytes::Bytes;
use xrdma::driver::Application;
use xrdma::{AnyStack, ConnId, Event, Messages, Time};
use xrdma_reports as rep;
use xrdma_scenario::Heartbeat;

/// One end of the heartbeat: the host that sends beats, or the one that answers them.
pub enum Beat {
    /// The sending end.
    Ping(Pinger),
    /// The answering end: every beat goes back on its connection.
    Answer {
        /// The heartbeat's connection at this host.
        conn: ConnId,
        /// Errors the stack reported.
        errors: Vec<String>,
    },
}

/// The sending end: a beat at every intended time until it is stopped.
pub struct Pinger {
    conn: ConnId,
    cfg: Heartbeat,
    start: Time,
    /// One per beat sent: its intended time and, once answered, its round trip.
    samples: Vec<rep::HeartbeatSample>,
    stopped: bool,
    errors: Vec<String>,
}

impl Beat {
    /// The sending end of `cfg` on `conn`, its first beat intended at `start`.
    pub fn ping(cfg: Heartbeat, conn: ConnId, start: Time) -> Beat {
        Beat::Ping(Pinger {
            conn,
            cfg,
            start,
            samples: Vec::new(),
            stopped: false,
            errors: Vec::new(),
        })
    }

    /// The answering end on `conn`.
    pub fn answer(conn: ConnId) -> Beat {
        Beat::Answer {
            conn,
            errors: Vec::new(),
        }
    }

    fn conn(&self) -> ConnId {
        match self {
            Beat::Ping(p) => p.conn,
            Beat::Answer { conn, .. } => *conn,
        }
    }

    /// Send no more beats.
    fn stop(&mut self) {
        if let Beat::Ping(p) = self {
            p.stopped = true;
        }
    }

    /// What the heartbeat measured, from its sending end (`None` for the answering end).
    pub fn record(&self) -> Option<rep::HeartbeatRecord> {
        let Beat::Ping(p) = self else { return None };
        Some(rep::HeartbeatRecord {
            from: p.cfg.from,
            to: p.cfg.to,
            every_ps: p.cfg.every.as_ps(),
            size: p.cfg.size,
            samples: p.samples.clone(),
        })
    }

    /// Errors the stack reported on the heartbeat's connection, at this end.
    pub fn errors(&self) -> &[String] {
        match self {
            Beat::Ping(p) => &p.errors,
            Beat::Answer { errors, .. } => errors,
        }
    }
}

impl Pinger {
    /// The intended time of beat `k`.
    fn intended(&self, k: usize) -> Time {
        self.start + self.cfg.every * k as u64
    }

    /// Beat `k`'s bytes: its sequence number, then zeros to the beat's size.
    fn payload(&self, k: usize) -> Bytes {
        let mut b = vec![0u8; self.cfg.size as usize];
        b[..8].copy_from_slice(&(k as u64).to_le_bytes());
        Bytes::from(b)
    }
}

impl Application<AnyStack> for Beat {
    fn on_event(&mut self, now: Time, ep: &mut AnyStack, event: Event) {
        match (self, event) {
            (Beat::Answer { conn, errors }, Event::Message { data, .. }) => {
                if let Err(e) = ep.send(now, *conn, data) {
                    errors.push(e.to_string());
                }
            }
            (Beat::Ping(p), Event::Message { data, .. }) => {
                let k = data
                    .get(..8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map(u64::from_le_bytes);
                let slot = k.and_then(|k| p.samples.get_mut(usize::try_from(k).ok()?));
                match slot {
                    Some(s) if s.rtt_ps.is_none() && data.len() as u64 == p.cfg.size => {
                        s.rtt_ps = Some((now - Time::from_ps(s.intended_ps)).as_ps());
                    }
                    _ => p.errors.push(format!(
                        "an answer that is no beat sent ({} bytes, sequence {k:?})",
                        data.len()
                    )),
                }
            }
            (Beat::Ping(Pinger { errors, .. }) | Beat::Answer { errors, .. }, ev) => match ev {
                Event::SendFailed { error, .. } | Event::ConnectionFailed { error, .. } => {
                    errors.push(error.to_string())
                }
                // Nothing else concerns a heartbeat, nor any kind of event the core adds.
                _ => {}
            },
        }
    }

    fn on_turn(&mut self, now: Time, ep: &mut AnyStack) {
        let Beat::Ping(p) = self else { return };
        while !p.stopped && p.intended(p.samples.len()) <= now {
            let k = p.samples.len();
            let intended = p.intended(k);
            if let Err(e) = ep.send(now, p.conn, p.payload(k)) {
                p.errors.push(e.to_string());
                p.stopped = true;
                return;
            }
            p.samples.push(rep::HeartbeatSample {
                intended_ps: intended.as_ps(),
                rtt_ps: None,
            });
        }
    }

    fn next_wake(&self) -> Option<Time> {
        match self {
            Beat::Ping(p) if !p.stopped => Some(p.intended(p.samples.len())),
            _ => None,
        }
    }
}

/// A host's workload application `app`, with the heartbeat's end `beat` beside it when the
/// host has one: each event goes to the one whose connection it is on.
pub struct Hosted<'a, A> {
    /// The host's workload application.
    pub app: &'a mut A,
    /// The heartbeat's end at this host.
    pub beat: Option<&'a mut Beat>,
}

impl<M, A> Application<M> for Hosted<'_, A>
where
    M: Messages + 'static,
    A: Application<M>,
{
    fn on_event(&mut self, now: Time, ep: &mut M, event: Event) {
        match self.beat.as_deref_mut() {
            Some(b) if event.conn() == b.conn() => b.on_event(now, ep, event),
            _ => self.app.on_event(now, ep, event),
        }
    }
    fn on_turn(&mut self, now: Time, ep: &mut M) {
        self.app.on_turn(now, ep);
        if let Some(b) = self.beat.as_deref_mut() {
            b.on_turn(now, ep);
        }
    }
    fn next_wake(&self) -> Option<Time> {
        let beat = self.beat.as_deref().and_then(Beat::next_wake);
        match (self.app.next_wake(), beat) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl<M, A> HostApp<M> for Hosted<'_, A>
where
    M: Messages + 'static,
    A: HostApp<M>,
{
    /// The workload's application alone: a heartbeat never holds a run open.
    fn finished(&self) -> bool {
        self.app.finished()
    }
    fn settle(&mut self) {
        self.app.settle();
        if let Some(b) = self.beat.as_deref_mut() {
            b.stop();
        }
    }
}
