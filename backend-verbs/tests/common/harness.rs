//! [`VerbsHarness`]: the conformance cases on a real device, both sides on one device,
//! connected through loopback.

use super::device_or_skip;
use std::time::{Duration, Instant};
use xrdma::RcParams;
use xrdma::{QpCaps, Transport};
use xrdma_conformance::{Harness, Pair, PairSpec, Seen, Side};
use xrdma_verbs::{Device, TransportConfig, VerbsTransport};

/// The two transports of the last pair, side A then side B.
pub struct Ends {
    /// Side A.
    pub a: VerbsTransport,
    /// Side B.
    pub b: VerbsTransport,
}

/// A device as a conformance backend: each pair is two fresh transports on it.
///
/// [`Harness::connect`] applies the pair's RC parameters to both transports'
/// [`RcParams`] (`rnr_retry`, `min_rnr_timer`; the rest stay the backend's defaults),
/// so each QP gets them as requester and as responder. [`Harness::wait`] busy-polls the
/// side's CQ against the wall clock.
pub struct VerbsHarness {
    dev: Device,
    /// The transports of the last pair (`None` before the first [`Harness::connect`]).
    pub ends: Option<Ends>,
}

impl VerbsHarness {
    /// A harness on the device from `XRDMA_VERBS_DEVICE` (or the first one) for the case
    /// `name`, or `None` after printing `SKIP <name>: no RDMA device: <reason>`.
    pub fn open(name: &str) -> Option<VerbsHarness> {
        device_or_skip(name).map(|dev| VerbsHarness { dev, ends: None })
    }

    /// The transport of `side`.
    ///
    /// # Panics
    /// Before the first [`Harness::connect`].
    pub fn side(&mut self, side: Side) -> &mut VerbsTransport {
        let ends = self.ends.as_mut().expect("connect a pair first");
        match side {
            Side::A => &mut ends.a,
            Side::B => &mut ends.b,
        }
    }
}

impl Harness for VerbsHarness {
    fn connect(&mut self, spec: &PairSpec) -> Pair {
        self.ends = None;
        let cfg = TransportConfig {
            rc: RcParams {
                rnr_retry: spec.rnr_retry,
                min_rnr_timer: spec.min_rnr_timer,
                ..RcParams::default()
            },
            ..TransportConfig::default()
        };
        let mut a = VerbsTransport::new(&self.dev, cfg).expect("a transport");
        let mut b = VerbsTransport::new(&self.dev, cfg).expect("a transport");
        let ma = a.register_memory(spec.mr_bytes).expect("register an MR");
        let mb = b.register_memory(spec.mr_bytes).expect("register an MR");
        let caps = QpCaps {
            max_send_wr: 64,
            max_recv_wr: 64,
            max_inline_data: 0,
        };
        let qa = a.create_qp(caps).expect("create a QP");
        let qb = b.create_qp(caps).expect("create a QP");
        a.connect_qp(qa.qpn, &qb).expect("connect A's QP");
        b.connect_qp(qb.qpn, &qa).expect("connect B's QP");
        self.ends = Some(Ends { a, b });
        Pair {
            qps: [qa.qpn, qb.qpn],
            mrs: [ma, mb],
        }
    }

    fn transport(&mut self, side: Side) -> impl Transport + '_ {
        self.side(side)
    }

    fn wait(&mut self, side: Side, n: usize, limit: Duration) -> Vec<Seen> {
        let t = self.side(side);
        let start = Instant::now();
        let mut wcs = Vec::new();
        let mut out = Vec::new();
        while out.len() < n && start.elapsed() < limit {
            wcs.clear();
            t.poll_cq(&mut wcs, n - out.len());
            let at = t.now();
            out.extend(wcs.iter().map(|&wc| Seen { at, wc }));
        }
        out
    }
}
