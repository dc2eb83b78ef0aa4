//! [`MemHarness`]: the generic cases on the in-memory transport ([`MemPair`]).

use crate::harness::{Harness, Pair, PairSpec, Seen, Side};
use crate::mem::MemPair;
use std::time::Duration;
use xrdma::{QpCaps, Span, Transport};

/// The in-memory transport as a conformance backend: side A is host 0, side B host 1.
///
/// Every WR completes when it is posted, so [`Harness::wait`] only polls; when fewer than
/// `n` completions are there, none will come, and the pair's clock moves on by the limit
/// (simulated time passes while the case waits). The RNR parameters of [`PairSpec`] change
/// nothing: RNR retries are spent at once (see [`crate::mem`]).
#[derive(Debug, Default)]
pub struct MemHarness {
    /// The pair the last [`Harness::connect`] made.
    pub pair: MemPair,
}

impl MemHarness {
    /// A harness for the case `_name`: the in-memory transport is always there.
    pub fn open(_name: &str) -> Option<MemHarness> {
        Some(MemHarness::default())
    }
}

impl Harness for MemHarness {
    fn connect(&mut self, spec: &PairSpec) -> Pair {
        self.pair = MemPair::new();
        let mut addrs = Vec::new();
        let mut mrs = Vec::new();
        for h in 0..2 {
            let mut t = self.pair.side(h);
            mrs.push(t.register_memory(spec.mr_bytes).expect("register an MR"));
            addrs.push(t.create_qp(QpCaps::default()).expect("create a QP"));
        }
        for h in 0..2 {
            self.pair
                .side(h)
                .connect_qp(addrs[h].qpn, &addrs[1 - h])
                .expect("connect a QP");
        }
        Pair {
            qps: [addrs[0].qpn, addrs[1].qpn],
            mrs: [mrs[0], mrs[1]],
        }
    }

    fn transport(&mut self, side: Side) -> impl Transport + '_ {
        self.pair.side(side.index())
    }

    fn wait(&mut self, side: Side, n: usize, limit: Duration) -> Vec<Seen> {
        let mut wcs = Vec::new();
        let mut t = self.pair.side(side.index());
        t.poll_cq(&mut wcs, n);
        let at = t.now();
        if wcs.len() < n {
            let ps = u64::try_from(limit.as_nanos().saturating_mul(1000)).unwrap_or(u64::MAX);
            self.pair.now += Span::from_ps(ps);
        }
        wcs.into_iter().map(|wc| Seen { at, wc }).collect()
    }
}
