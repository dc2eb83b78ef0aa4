//! Where a worker runs, and what it tells `xrdma stat`: pin its thread to CPUs (the NUMA node
//! of its NIC, as XR-Stat found PolarDB needed), read its placement beside the device's node,
//! and answer `xrdma stat --socket PATH` while it works.

use crate::error::AppError;
use crate::net::Watcher;
use crate::worker::Worker;
use std::path::Path;
use xrdma::Endpoint;
use xrdma_observe::placement::{pin, Placement};
use xrdma_runner::fabric::{Fabric, FabricReport};
use xrdma_runner::stat_socket::StatSocket;
use xrdma_runner::watch::Watch;

impl<F: Fabric + FabricReport + 'static> Worker<F> {
    /// Restrict the calling thread (the one this worker runs on) to `cpus`, as
    /// `sched_setaffinity(2)` does, and return where it runs then. Pin each worker to CPUs
    /// of its NIC's NUMA node ([`Worker::placement`] says which node that is).
    ///
    /// # Errors
    /// [`AppError::Setup`]: no CPU named, a CPU number beyond the affinity mask, or the kernel
    /// refused (no named CPU online or allowed to this process).
    pub fn pin(&mut self, cpus: &[usize]) -> Result<Placement, AppError> {
        pin(cpus).map_err(|e| AppError::Setup(e.to_string()))?;
        Ok(self.placement())
    }

    /// Where the calling thread runs (CPU, allowed CPUs, NUMA node) beside the worker's RDMA
    /// device and its NUMA node, and whether the two nodes differ (`None` where the machine
    /// does not say: a simulated fabric has no device, a virtual machine's NIC no node).
    pub fn placement(&mut self) -> Placement {
        let device = self.with_net(|net, _| net.fabric.device_reading());
        Placement::here(device.as_ref().map(|d| d.device.as_str()))
    }

    /// Answer `xrdma stat --socket path` from now on: a client that connects is written the
    /// endpoints of this worker's net, the device's counters and this thread's placement
    /// (flagged when it runs on the node far from its device). The worker answers inside its
    /// waiting calls ([`Worker::run_for`], [`Worker::recv`], [`Worker::call`], ...), at most
    /// every 5 ms of wall time and within 10 % of it ([`xrdma_runner::stat_socket`]). The
    /// socket file goes with the last worker of this worker's fabric (on a device, the
    /// worker itself).
    ///
    /// # Errors
    /// [`AppError::Setup`]: a live process answers on `path`, something else is in the way,
    /// or the socket cannot be bound.
    pub fn stat_socket(&mut self, path: &Path) -> Result<(), AppError> {
        let mut socket = StatSocket::bind(path).map_err(|e| AppError::Setup(e.to_string()))?;
        let watcher: Watcher<F> = Box::new(move |fabric: &mut F, eps: &[Endpoint]| {
            if socket.due(fabric.now()) {
                socket.take(xrdma_runner::drive::live_stat(fabric, eps));
            }
        });
        self.with_net(|net, h| net.watchers[h] = Some(watcher));
        Ok(())
    }
}
