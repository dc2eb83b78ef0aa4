//! Test utilities of the core: the in-memory transport (`xrdma-conformance`'s [`MemPair`],
//! which the verbs-level conformance suite also runs on) and an application that records
//! events.

#![allow(dead_code)]

use xrdma::driver::Application;
use xrdma::*;
pub use xrdma_conformance::mem::MemPair as Pair;

pub mod logged;
pub mod world;

/// An application that only records every event it is told, in order.
#[derive(Default)]
pub struct Recorder {
    pub events: Vec<Event>,
}

impl Application for Recorder {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        self.events.push(event);
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Echoes every message back on its connection.
pub struct Echo;

impl Application for Echo {
    fn on_event(&mut self, now: Time, ep: &mut Endpoint, event: Event) {
        if let Event::Message { conn, data, .. } = event {
            ep.send(now, conn, data).unwrap();
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}
