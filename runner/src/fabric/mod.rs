//! The `Fabric` trait: a set of hosts, each with a `Transport`, and a clock that moves.
//!
//! The scenario runner is written once against this trait. The simulator's fabric moves
//! virtual time from event to event and says which hosts need a turn; a real-RDMA fabric
//! moves with the wall clock and polls its hosts. The same scenario therefore runs unchanged
//! on either.

mod sim;
#[cfg(feature = "verbs")]
mod verbs;

pub use sim::{ideal_base_rtt, SimFabric};
#[cfg(feature = "verbs")]
pub use verbs::VerbsFabric;

use xrdma::{Time, Transport};
use xrdma_reports as rep;

/// Hosts with transports, and time.
pub trait Fabric {
    /// A host's transport, borrowed from the fabric for one driver turn.
    type Host<'a>: Transport
    where
        Self: 'a;

    /// The backend, as reports name it.
    fn backend(&self) -> rep::Backend;
    /// Number of hosts.
    fn hosts(&self) -> u32;
    /// Host `h`'s transport.
    fn host(&mut self, h: u32) -> Self::Host<'_>;
    /// Now, on the fabric's clock.
    fn now(&self) -> Time;
    /// Move time forward until some hosts need a turn and push them into `ready` (each once).
    /// `settled` says the workload has nothing left to do: a real-time fabric stops then; a
    /// simulated one runs out its remaining events. Returns `false` when the run is over.
    fn advance(&mut self, ready: &mut Vec<u32>, settled: bool) -> bool;
    /// Host `h` wants a turn at `at` even if nothing arrives ([`Time::MAX`]: no wake).
    fn set_wake(&mut self, h: u32, at: Time);
    /// Network counters for the result: `None` for each counter the backend cannot observe.
    fn network(&self) -> rep::NetworkCounters;
    /// Simulator statistics, on a simulated fabric.
    fn sim_info(&self) -> Option<rep::SimInfo>;
    /// The RC QP attributes the hosts' transports apply and the capabilities they declare
    /// (every host of a fabric is configured alike); `None` for a fabric without hosts.
    fn transport_info(&self) -> Option<rep::TransportInfo>;
    /// Where the run happens (the result's `environment`): the simulator's build, or the
    /// machine and device with the device's counters over the run; `None` by default.
    fn environment(&self) -> Option<rep::Environment> {
        None
    }
    /// The unloaded path between two hosts, as far as the fabric can state it (the runner
    /// derives T* and slowdowns from it).
    fn path(&self) -> rep::PathModel;
    /// Network state over time, where the fabric samples it (the simulator with sampling
    /// on); `None` by default.
    fn timeseries(&self) -> Option<rep::TimeSeries> {
        None
    }
    /// Rate of a host's link, bits/s, where the fabric knows it (the simulator's
    /// `link-rate`, a device port's active rate); the send window adds one fragment's
    /// serialisation at this rate to its target and shrinks on delay only with it
    /// ([`xrdma::Config::link_rate_bps`]). `None` by default.
    fn link_rate_bps(&self) -> Option<u64> {
        None
    }
}

/// `cfg` as an endpoint on `fabric` runs it: [`with_link_rate`], then
/// [`with_rc_retry_budget`]. Every endpoint the runner and the tools make on a fabric takes
/// its configuration from here.
pub fn config_for<F: Fabric>(cfg: &xrdma::Config, fabric: &F) -> xrdma::Config {
    with_rc_retry_budget(&with_link_rate(cfg, fabric), fabric)
}

/// `cfg` with its ACK timeout ([`xrdma::Config::ack_timeout`]) raised, where it is shorter,
/// to the retry budget of the RC attributes `fabric`'s transports apply
/// ([`xrdma::RcParams::retry_budget`], from [`Fabric::transport_info`]).
///
/// The core's ACK timer says the peer stopped answering; while the NIC may still be
/// retransmitting a frame (up to `retry_cnt + 1` local ACK timeouts before it fails the WR
/// itself), its ACK is late, not missing, and failing the connection then loses what the
/// transport would have delivered. So the timer is never shorter than that budget: on
/// Soft-RoCE, whose QPs get a local ACK timeout of about 537 ms (`xrdma_verbs::soft_roce`),
/// 8 × 537 ms ≈ 4.3 s with `retry_cnt` 7. With the default attributes (8 × 16.8 ms ≈ 134 ms)
/// and every shipped scenario's, the budget is below the 1 s default and nothing changes.
pub fn with_rc_retry_budget<F: Fabric>(cfg: &xrdma::Config, fabric: &F) -> xrdma::Config {
    let mut c = cfg.clone();
    let budget = fabric.transport_info().and_then(|t| {
        xrdma::RcParams {
            local_ack_timeout: t.rc.local_ack_timeout,
            retry_cnt: t.rc.retry_cnt,
            rnr_retry: t.rc.rnr_retry,
            min_rnr_timer: t.rc.min_rnr_timer,
            path_mtu: t.rc.path_mtu,
        }
        .retry_budget()
    });
    if let Some(b) = budget {
        c.ack_timeout = c.ack_timeout.max(b);
    }
    c
}

/// `cfg` with [`xrdma::Config::link_rate_bps`] filled in from `fabric` where `cfg` leaves it
/// unset.
pub fn with_link_rate<F: Fabric>(cfg: &xrdma::Config, fabric: &F) -> xrdma::Config {
    let mut c = cfg.clone();
    if c.link_rate_bps.is_none() {
        c.link_rate_bps = fabric.link_rate_bps();
    }
    c
}
