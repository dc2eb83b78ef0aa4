//! The core's cost per message, for callgrind: two endpoints on the in-memory transport, host 0
//! streaming `N` messages of `SIZE` bytes to host 1 (at most `DEPTH` unACKed), each host's
//! driver turns in a function of its own so callgrind's inclusive counts split the two sides.
//!
//! ```sh
//! cargo build --release -p xrdma-conformance --example msg_cost
//! ci/msg-cost.sh    # runs it under callgrind at two message counts; prints Ir per message
//! ```
//!
//! usage: msg_cost [N (10000)] [SIZE (64)] [DEPTH (16)]

use bytes::Bytes;
use std::hint::black_box;
use xrdma::driver::{self, Application, TurnScratch};
use xrdma::{Config, ConnId, Endpoint, Event, Time};
use xrdma_conformance::mem::MemPair;

/// Counts what a host is told.
#[derive(Default)]
struct Count {
    sent: u64,
    received: u64,
}

impl Application for Count {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Sent { .. } => self.sent += 1,
            Event::Message { data, .. } => {
                black_box(data);
                self.received += 1;
            }
            _ => {}
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

#[inline(never)]
fn sender_turn(pair: &mut MemPair, ep: &mut Endpoint, app: &mut Count, s: &mut TurnScratch) {
    let now = pair.now;
    driver::turn(now, ep, &mut pair.side(0), app, s);
}

#[inline(never)]
fn receiver_turn(pair: &mut MemPair, ep: &mut Endpoint, app: &mut Count, s: &mut TurnScratch) {
    let now = pair.now;
    driver::turn(now, ep, &mut pair.side(1), app, s);
}

#[inline(never)]
fn send(ep: &mut Endpoint, now: Time, conn: ConnId, msg: &Bytes) {
    if let Err(e) = ep.send(now, conn, msg.clone()) {
        panic!("send refused: {e}");
    }
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .map_or(default, |a| a.parse().expect("a whole number"))
}

fn main() {
    let (n, size, depth) = (arg(1, 10_000), arg(2, 64), arg(3, 16));
    let mut pair = MemPair::new();
    let cfg = Config::default();
    let mut eps = [
        Endpoint::new(cfg.clone()).expect("an endpoint"),
        Endpoint::new(cfg).expect("an endpoint"),
    ];
    let (e0, e1) = eps.split_at_mut(1);
    let a = driver::open(&mut e0[0], &mut pair.side(0)).expect("opens");
    let b = driver::open(&mut e1[0], &mut pair.side(1)).expect("opens");
    let conn = driver::establish(&mut e0[0], &mut pair.side(0), a, &b.info, 1).expect("connects");
    driver::establish(&mut e1[0], &mut pair.side(1), b, &a.info, 0).expect("connects");
    let msg = Bytes::from(vec![7u8; usize::try_from(size).expect("a size")]);
    let mut apps = [Count::default(), Count::default()];
    let mut scratch = [TurnScratch::default(), TurnScratch::default()];
    let [ep0, ep1] = &mut eps;
    let mut queued = 0u64;
    let mut rounds = 0u64;
    while apps[0].sent < n {
        while queued < n && queued - apps[0].sent < depth {
            send(ep0, pair.now, conn, &msg);
            queued += 1;
        }
        sender_turn(&mut pair, ep0, &mut apps[0], &mut scratch[0]);
        receiver_turn(&mut pair, ep1, &mut apps[1], &mut scratch[1]);
        rounds += 1;
        assert!(
            rounds < 100 * n + 1000,
            "no progress: {} of {n} sent",
            apps[0].sent
        );
    }
    assert_eq!(apps[1].received, n);
    println!("messages={n} size={size} depth={depth} rounds={rounds}");
}
