//! [`SimHarness`]: the conformance cases on the simulator, side A on host 0 and side B on
//! host 1 of a fresh simulation per pair.

use std::time::Duration;
use xrdma::{QpCaps, Span, Transport};
use xrdma_conformance::{Harness, Pair, PairSpec, Seen, Side};
use xrdma_sim::{SimConfig, Simulation};

/// The simulator as a conformance backend.
///
/// [`Harness::connect`] builds a new [`Simulation`] from `base` with the pair's RC
/// parameters (`rnr_retry`, `min_rnr_timer`, which the simulator sets for every QP).
/// [`Harness::wait`] advances simulated time and polls every host that became ready, so each
/// completion is stamped with the simulated time it was produced at, whichever side the
/// case waits on first.
pub struct SimHarness {
    /// The configuration every pair starts from.
    pub base: SimConfig,
    /// The simulation of the last pair.
    pub sim: Simulation,
    /// Completions polled but not yet handed out, per side.
    pending: [Vec<Seen>; 2],
}

impl SimHarness {
    /// A harness whose pairs run on `base` (with the pair's RC parameters).
    pub fn new(base: SimConfig) -> SimHarness {
        let sim = Simulation::new(base.clone()).expect("the base configuration is valid");
        SimHarness {
            base,
            sim,
            pending: [Vec::new(), Vec::new()],
        }
    }

    /// A harness on the default configuration for the case `_name` (never skips).
    pub fn open(_name: &str) -> Option<SimHarness> {
        Some(SimHarness::new(SimConfig::default()))
    }
}

impl Harness for SimHarness {
    fn connect(&mut self, spec: &PairSpec) -> Pair {
        let cfg = SimConfig {
            rc: xrdma::RcParams {
                rnr_retry: spec.rnr_retry,
                min_rnr_timer: spec.min_rnr_timer,
                ..self.base.rc
            },
            ..self.base.clone()
        };
        self.sim = Simulation::new(cfg).expect("a valid configuration");
        self.pending = [Vec::new(), Vec::new()];
        let mut mrs = Vec::new();
        let mut addrs = Vec::new();
        for h in 0..2 {
            let mut t = self.sim.transport(h);
            mrs.push(t.register_memory(spec.mr_bytes).expect("register an MR"));
            addrs.push(t.create_qp(QpCaps::default()).expect("create a QP"));
        }
        for h in 0..2 {
            self.sim
                .transport(h)
                .connect_qp(addrs[h as usize].qpn, &addrs[1 - h as usize])
                .expect("connect a QP");
        }
        Pair {
            qps: [addrs[0].qpn, addrs[1].qpn],
            mrs: [mrs[0], mrs[1]],
        }
    }

    fn transport(&mut self, side: Side) -> impl Transport + '_ {
        self.sim.transport(side.index() as u32)
    }

    fn wait(&mut self, side: Side, n: usize, limit: Duration) -> Vec<Seen> {
        let ps = u64::try_from(limit.as_nanos().saturating_mul(1000)).unwrap_or(u64::MAX);
        let deadline = self.sim.now() + Span::from_ps(ps);
        let mut ready = Vec::new();
        let mut wcs = Vec::new();
        // Completions a verb call produced at once (a flush on a QP in error) are there now.
        let now = self.sim.now();
        for h in 0..2u32 {
            wcs.clear();
            self.sim.transport(h).poll_cq(&mut wcs, usize::MAX);
            self.pending[h as usize].extend(wcs.iter().map(|&wc| Seen { at: now, wc }));
        }
        while self.pending[side.index()].len() < n
            && self.sim.now() <= deadline
            && self.sim.advance(&mut ready)
        {
            let at = self.sim.now();
            for &h in ready.iter().filter(|&&h| h < 2) {
                wcs.clear();
                self.sim.transport(h).poll_cq(&mut wcs, usize::MAX);
                self.pending[h as usize].extend(wcs.iter().map(|&wc| Seen { at, wc }));
            }
        }
        let pending = &mut self.pending[side.index()];
        let take = pending.len().min(n);
        pending.drain(..take).collect()
    }
}
