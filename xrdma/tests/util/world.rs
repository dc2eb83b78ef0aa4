//! Two endpoints connected over the in-memory pair, each with a recording application.

use super::{Pair, Recorder};
use bytes::Bytes;
use xrdma::driver::{self, TurnScratch};
use xrdma::*;

/// Two connected endpoints, their recorders, and the connection at each.
pub struct World {
    pub pair: Pair,
    pub eps: [Endpoint; 2],
    pub apps: [Recorder; 2],
    pub conns: [ConnId; 2],
    pub scratch: TurnScratch,
}

impl World {
    pub fn new(cfg: Config) -> World {
        let pair = Pair::new();
        let eps = [
            Endpoint::new(cfg.clone()).unwrap(),
            Endpoint::new(cfg).unwrap(),
        ];
        let mut w = World {
            pair,
            eps,
            apps: Default::default(),
            conns: [ConnId::new(0, 0); 2],
            scratch: TurnScratch::default(),
        };
        w.connect();
        w
    }

    /// Connect a new QP pair between the two endpoints; returns whether each side's QP came
    /// from its QP cache.
    pub fn connect(&mut self) -> [bool; 2] {
        let (e0, e1) = self.eps.split_at_mut(1);
        let a = driver::open(&mut e0[0], &mut self.pair.side(0)).unwrap();
        let b = driver::open(&mut e1[0], &mut self.pair.side(1)).unwrap();
        let ca = driver::establish(&mut e0[0], &mut self.pair.side(0), a, &b.info, 1).unwrap();
        let cb = driver::establish(&mut e1[0], &mut self.pair.side(1), b, &a.info, 0).unwrap();
        self.conns = [ca, cb];
        [a.reused_qp, b.reused_qp]
    }

    /// One turn of host 0 (its recorder) and then of host 1 running `server` instead of its
    /// recorder, both at `pair.now`.
    pub fn round(&mut self, server: &mut dyn driver::Application) {
        let now = self.pair.now;
        let (a, s) = (&mut self.apps[0], &mut self.scratch);
        driver::turn(now, &mut self.eps[0], &mut self.pair.side(0), a, s);
        driver::turn(now, &mut self.eps[1], &mut self.pair.side(1), server, s);
    }

    pub fn count(&self, h: usize, pred: impl Fn(&Event) -> bool) -> usize {
        self.apps[h].events.iter().filter(|e| pred(e)).count()
    }

    /// Turn both hosts until no completion is left to handle.
    pub fn settle(&mut self) {
        for _ in 0..10_000 {
            for h in 0..2 {
                let now = self.pair.now;
                let mut side = self.pair.side(h);
                driver::turn(
                    now,
                    &mut self.eps[h],
                    &mut side,
                    &mut self.apps[h],
                    &mut self.scratch,
                );
            }
            if !self.pair.busy() {
                return;
            }
        }
        panic!("did not settle");
    }

    pub fn received(&self, h: usize) -> Vec<Bytes> {
        self.apps[h]
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Message { data, .. } => Some(data.clone()),
                _ => None,
            })
            .collect()
    }
}

/// `len` bytes of a pattern that differs with `salt`.
pub fn pattern(len: usize, salt: u8) -> Bytes {
    Bytes::from(
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
            .collect::<Vec<_>>(),
    )
}
