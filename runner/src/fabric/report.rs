//! The report view of a fabric ([`FabricReport`]): what a run's result and a watcher of the
//! running run read from it (the network's counters, the unloaded path, the simulator's
//! statistics, the transports' attributes, where the run happens, the device's counters now).
//!
//! It is apart from [`super::Fabric`], which only moves time and lends hosts: whoever runs
//! hosts (the turn loop, a tool, a future TCP stack or library worker) needs `Fabric` alone,
//! and whoever collects a result bounds on both (`F: Fabric + FabricReport`). A fabric
//! implements this view beside its `Fabric` (the simulator's in `sim.rs`, a device's in
//! `verbs.rs`).

use xrdma_reports as rep;

/// What a fabric tells a run's result (and a watcher of the running run) about the network,
/// the path and where the run happens; each value in the types of `xrdma-reports`.
pub trait FabricReport {
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
    /// The hosts' CPU time over the run so far; `None` by default (not observed).
    fn host_cpu(&self) -> Option<rep::HostCpuTime> {
        None
    }
    /// The device's port counters as they read now, for a watcher of the running run
    /// ([`crate::watch::LiveStat::device`]); `None` by default (the simulator has no device).
    fn device_reading(&self) -> Option<crate::watch::DeviceReading> {
        None
    }
}
