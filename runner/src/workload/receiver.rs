//! The receiving side of a workload: reassembles and digests every message that arrives,
//! whole or as streamed fragments, and numbers it by its connection ([`ArrivalLog`]); the
//! incast and open-loop [`Receiver`] is that log and nothing more, the echo server answers
//! from it.

use serde::{Deserialize, Serialize};
use xrdma::driver::Application;
use xrdma::slab::PerConn;
use xrdma::AnyStack;
use xrdma::{ConnId, Event, Time};
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// An error xrdma reported on a host, and the instant it was reported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ErrorAt {
    /// When, picoseconds on the fabric's clock.
    pub at_ps: u64,
    /// What, as text.
    pub what: String,
}

impl ErrorAt {
    /// `what`, reported at `at`.
    pub fn new(at: Time, what: impl std::fmt::Display) -> Self {
        ErrorAt {
            at_ps: at.as_ps(),
            what: what.to_string(),
        }
    }
}

/// A message as the receiving host got it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The sender's host index.
    pub sender: u32,
    /// Arrival order on that sender's connection (xrdma delivers in order, so this is the
    /// sender's message index when nothing was lost or duplicated).
    pub index: u32,
    /// Payload bytes.
    pub size: u64,
    /// XXH3-128 of the payload.
    pub digest: u128,
    /// When the whole message was delivered.
    pub at: Time,
}

/// Whole messages from [`Event::Message`]s and streamed [`Event::Fragment`]s: the digest
/// state of the message being streamed on each connection.
#[derive(Default)]
pub(crate) struct Reassembly {
    streams: PerConn<Xxh3>,
}

impl Reassembly {
    /// The (connection, size, XXH3-128) of the message `event` completes, if it completes one.
    pub(crate) fn whole(&mut self, event: &Event) -> Option<(ConnId, u64, u128)> {
        match event {
            Event::Message { conn, data, .. } => Some((*conn, data.len() as u64, xxh3_128(data))),
            Event::Fragment {
                conn,
                message_len,
                offset,
                data,
                ..
            } => {
                let h = self.streams.entry(*conn, Xxh3::new);
                h.update(data);
                if offset + data.len() as u64 == *message_len {
                    let d = h.digest128();
                    self.streams.remove(*conn);
                    Some((*conn, *message_len, d))
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

/// Every whole message that arrived, numbered per connection, and the errors xrdma reported.
#[derive(Default)]
pub struct ArrivalLog {
    reassembly: Reassembly,
    /// Messages completed so far per connection (a reused slot's connection starts afresh).
    per_conn: PerConn<u32>,
    /// Everything that arrived, in arrival order.
    pub arrivals: Vec<Arrival>,
    /// Errors xrdma reported, and when.
    pub errors: Vec<ErrorAt>,
}

impl ArrivalLog {
    /// Take `event` at `now`: a connection failure is recorded, a completed message logged and
    /// returned with the connection it came on.
    pub fn on_event(
        &mut self,
        now: Time,
        ep: &AnyStack,
        event: &Event,
    ) -> Option<(ConnId, &Arrival)> {
        if let Event::ConnectionFailed { error, .. } = event {
            self.errors.push(ErrorAt::new(now, error));
            return None;
        }
        let (conn, size, digest) = self.reassembly.whole(event)?;
        let count = self.per_conn.entry(conn, || 0);
        let index = *count;
        *count += 1;
        self.arrivals.push(Arrival {
            sender: ep.peer(conn).unwrap_or(u32::MAX),
            index,
            size,
            digest,
            at: now,
        });
        self.arrivals.last().map(|a| (conn, a))
    }
}

/// The incast and open-loop receiver: records every arriving message.
#[derive(Default)]
pub struct Receiver {
    /// What arrived, and the errors.
    pub log: ArrivalLog,
}

impl Application<AnyStack> for Receiver {
    fn on_event(&mut self, now: Time, ep: &mut AnyStack, event: Event) {
        self.log.on_event(now, ep, &event);
    }

    fn on_turn(&mut self, _now: Time, _ep: &mut AnyStack) {}

    fn next_wake(&self) -> Option<Time> {
        None
    }
}
