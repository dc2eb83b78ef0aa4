//! `xrdma qp-setup`: the cost of connecting a QP pair, fresh vs from the QP cache.
//!
//! Each iteration takes a new fabric (its hosts' CQs and protection domain are made before
//! the clock starts, so CQ creation and growth are not charged to QP creation), then times
//! on the wall clock:
//!
//! - **fresh**: a QP on each host, asked of an empty [`QpCache`] (a miss, so `create_qp`:
//!   RESET → INIT), then `connect_qp` on both (INIT → RTR → RTS);
//! - **cached**: both QPs reset (`reset_qp`: → RESET → INIT with a new PSN) and returned to
//!   their hosts' caches ([`QpCache::put`]), taken again ([`QpCache::take`]) and connected to
//!   each other's new address: XRDMA's reuse path for a closed connection's QP.
//!
//! Medians of both and their ratio are reported. On the simulator the control path costs no
//! virtual time; the wall times there are only the simulator's book-keeping.

use super::stats::median;
use anyhow::{bail, Context, Result};
use std::time::Instant;
use xrdma::driver::{qp_caps, QpCache};
use xrdma::{Config, QpCaps, Transport};
use xrdma_runner::fabric::Fabric;

/// What a QP-setup run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct QpSetupReport {
    /// Capacities of the QPs (what an xrdma connection with the default config asks for).
    pub caps: QpCaps,
    /// Fresh pair setups, ns of wall time, in order.
    pub fresh_ns: Vec<u64>,
    /// Setups from the cache (reset included), ns of wall time, in order.
    pub cached_ns: Vec<u64>,
    /// The part of each cached setup after the resets (take + connect), ns, in order.
    pub cached_connect_ns: Vec<u64>,
}

impl QpSetupReport {
    /// Median fresh setup, µs.
    pub fn fresh_median_us(&self) -> f64 {
        median(&self.fresh_ns).unwrap_or(0) as f64 / 1e3
    }

    /// Median setup from the cache, µs.
    pub fn cached_median_us(&self) -> f64 {
        median(&self.cached_ns).unwrap_or(0) as f64 / 1e3
    }

    /// Median of the cached setups' take + connect part, µs.
    pub fn cached_connect_median_us(&self) -> f64 {
        median(&self.cached_connect_ns).unwrap_or(0) as f64 / 1e3
    }

    /// How many times faster the cache is: fresh median / cached median (∞ when the cached
    /// median is 0).
    pub fn speedup(&self) -> f64 {
        self.fresh_median_us() / self.cached_median_us()
    }

    /// The header line of [`QpSetupReport::row`].
    pub fn header() -> &'static str {
        " #pairs  fresh_median[usec]  cached_median[usec]  speedup  \
         cached_without_reset_median[usec]"
    }

    /// One data line under [`QpSetupReport::header`].
    pub fn row(&self) -> String {
        format!(
            " {:<7} {:<19.2} {:<20.2} {:<8.2} {:.2}",
            self.fresh_ns.len(),
            self.fresh_median_us(),
            self.cached_median_us(),
            self.speedup(),
            self.cached_connect_median_us()
        )
    }
}

fn elapsed_ns(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Run `iters` iterations, each on a fabric from `make` (at least two hosts; hosts 0 and 1
/// are used).
///
/// # Errors
/// `make`'s error, a verb that fails, or a cached QP that is not the one returned (the cache
/// must hand back the same QP number).
pub fn run<F: Fabric>(mut make: impl FnMut() -> Result<F>, iters: u32) -> Result<QpSetupReport> {
    if iters == 0 {
        bail!("--iters must be at least 1");
    }
    let caps = qp_caps(&Config::default());
    let mut fresh_ns = Vec::with_capacity(iters as usize);
    let mut cached_ns = Vec::with_capacity(iters as usize);
    let mut cached_connect_ns = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        let mut fabric = make().with_context(|| format!("iteration {i}: making the fabric"))?;
        if fabric.hosts() < 2 {
            bail!(
                "qp-setup needs two hosts; the fabric has {}",
                fabric.hosts()
            );
        }
        let mut cache = [QpCache::new(), QpCache::new()];

        let t = Instant::now();
        let mut fresh = |h: usize| match cache[h].take(caps) {
            Some(qp) => Ok(qp),
            None => {
                cache[h].count_created();
                fabric.host(h as u32).create_qp(caps)
            }
        };
        let a = fresh(0)?;
        let b = fresh(1)?;
        fabric.host(0).connect_qp(a.qpn, &b)?;
        fabric.host(1).connect_qp(b.qpn, &a)?;
        fresh_ns.push(elapsed_ns(t));

        let t = Instant::now();
        let reset_a = fabric.host(0).reset_qp(a.qpn)?;
        cache[0].put(reset_a, caps);
        let reset_b = fabric.host(1).reset_qp(b.qpn)?;
        cache[1].put(reset_b, caps);
        let t_connect = Instant::now();
        let (Some(a2), Some(b2)) = (cache[0].take(caps), cache[1].take(caps)) else {
            bail!("iteration {i}: the cache did not hand back the reset QPs");
        };
        fabric.host(0).connect_qp(a2.qpn, &b2)?;
        fabric.host(1).connect_qp(b2.qpn, &a2)?;
        cached_ns.push(elapsed_ns(t));
        cached_connect_ns.push(elapsed_ns(t_connect));

        if !(a2.qpn == a.qpn && b2.qpn == b.qpn) {
            bail!(
                "iteration {i}: the cache did not hand back the reset QPs ({:#x}, {:#x} → \
                 {:#x}, {:#x})",
                a.qpn,
                b.qpn,
                a2.qpn,
                b2.qpn
            );
        }
    }
    Ok(QpSetupReport {
        caps,
        fresh_ns,
        cached_ns,
        cached_connect_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim_fabric;

    #[test]
    fn every_iteration_reuses_the_reset_qps_on_the_simulator() {
        let r = run(sim_fabric, 5).unwrap();
        assert_eq!(r.fresh_ns.len(), 5);
        assert_eq!(r.cached_ns.len(), 5);
        assert_eq!(r.cached_connect_ns.len(), 5);
        // The take + connect part is part of the whole cached setup.
        assert!(r
            .cached_ns
            .iter()
            .zip(&r.cached_connect_ns)
            .all(|(a, b)| b <= a));
        // An xrdma connection's QP: send_depth 512, recv_depth 256 (Config defaults).
        assert_eq!(r.caps.max_send_wr, 512);
        assert_eq!(r.caps.max_recv_wr, 256);
    }

    #[test]
    fn report_row_states_medians_and_their_ratio() {
        // Medians (nearest rank, rank ⌈1.5⌉ = 2 of 3): fresh 300 ns, cached 10 ns → 30×.
        let r = QpSetupReport {
            caps: QpCaps::default(),
            fresh_ns: vec![900, 100, 300],
            cached_ns: vec![10, 5, 20],
            cached_connect_ns: vec![4, 2, 8],
        };
        assert_eq!(r.fresh_median_us(), 0.3);
        assert_eq!(r.cached_median_us(), 0.01);
        assert!((r.speedup() - 30.0).abs() < 1e-9);
        let cols: Vec<String> = r.row().split_whitespace().map(String::from).collect();
        assert_eq!(r.cached_connect_median_us(), 0.004);
        assert_eq!(cols, ["3", "0.30", "0.01", "30.00", "0.00"]);
    }
}
