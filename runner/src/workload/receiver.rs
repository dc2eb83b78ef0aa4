//! The receiving side of the incast and open-loop workloads: records and digests every
//! message that arrives, whole or as streamed fragments.

use xrdma::driver::Application;
use xrdma::{ConnId, Endpoint, Event, Time};
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

/// A message as the receiver got it.
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

/// The receiver: records every arriving message, whole or as streamed fragments.
#[derive(Default)]
pub struct Receiver {
    per_conn: Vec<u32>,
    /// Digest state of the message being streamed on each connection.
    streams: Vec<Option<Xxh3>>,
    /// Everything that arrived, in arrival order.
    pub arrivals: Vec<Arrival>,
    /// Errors xrdma reported, as text.
    pub errors: Vec<String>,
}

impl Receiver {
    fn arrived(&mut self, now: Time, ep: &Endpoint, conn: ConnId, size: u64, digest: u128) {
        let c = conn as usize;
        if self.per_conn.len() <= c {
            self.per_conn.resize(c + 1, 0);
        }
        let index = self.per_conn[c];
        self.per_conn[c] += 1;
        self.arrivals.push(Arrival {
            sender: ep.peer(conn).unwrap_or(u32::MAX),
            index,
            size,
            digest,
            at: now,
        });
    }
}

impl Application for Receiver {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { conn, data } => {
                let digest = xxh3_128(&data);
                self.arrived(now, ep, conn, data.len() as u64, digest);
            }
            Event::Fragment {
                conn,
                message_len,
                offset,
                data,
            } => {
                let c = conn as usize;
                if self.streams.len() <= c {
                    self.streams.resize_with(c + 1, || None);
                }
                let h = self.streams[c].get_or_insert_with(Xxh3::new);
                h.update(&data);
                if offset + data.len() as u64 == message_len {
                    let digest = h.digest128();
                    self.streams[c] = None;
                    self.arrived(now, ep, conn, message_len, digest);
                }
            }
            Event::ConnectionFailed { error, .. } => self.errors.push(error.to_string()),
            Event::Sent { .. }
            | Event::SendFailed { .. }
            | Event::PeerClosed { .. }
            | Event::Closed { .. } => {}
        }
    }

    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}

    fn next_wake(&self) -> Option<Time> {
        None
    }
}
