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

use crate::host_cpu::HostCpu;
use xrdma::{Time, Transport};
use xrdma_reports as rep;

/// Hosts with transports, and time.
pub trait Fabric {
    /// A host's transport, borrowed from the fabric for one driver turn, with its side of the
    /// host model ([`crate::host_cpu::HostCpu`]).
    type Host<'a>: Transport + HostCpu
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
    /// `link-rate`); the send window adds one fragment's serialisation at this rate to its
    /// target ([`xrdma::Config::link_rate_bps`]). `None` by default.
    fn link_rate_bps(&self) -> Option<u64> {
        None
    }
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
