//! Workers on the simulator ([`Worker::simulated`]), so an application's tests run without
//! an RDMA device.

use crate::error::AppError;
use crate::net::Net;
use crate::worker::Worker;
use xrdma::{Config, Endpoint};
use xrdma_runner::fabric::SimFabric;
use xrdma_sim::SimConfig;

impl Worker<SimFabric> {
    /// One worker per host of a new simulated fabric (`sim.hosts` of them, by host index),
    /// each with an endpoint configured as `cfg` (its link rate taken from the fabric where
    /// `cfg` leaves it unset, [`xrdma_runner::fabric::config_for`]). The workers share the
    /// fabric's simulated clock, which moves only while one of them waits.
    ///
    /// # Errors
    /// [`AppError::Setup`]: a simulator configuration or an endpoint configuration its
    /// checks refuse, or one that streams fragments (a worker hands out whole messages).
    pub fn simulated(sim: SimConfig, cfg: &Config) -> Result<Vec<Worker<SimFabric>>, AppError> {
        crate::worker::check_config(cfg)?;
        let fabric = SimFabric::new(sim).map_err(|e| AppError::Setup(e.to_string()))?;
        let cfg = xrdma_runner::fabric::config_for(cfg, &fabric);
        let hosts = xrdma_runner::fabric::Clocked::hosts(&fabric);
        let eps = (0..hosts)
            .map(|_| Endpoint::new(cfg.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| AppError::Setup(e.to_string()))?;
        Ok(Worker::all(Net::new(fabric, eps)))
    }
}
