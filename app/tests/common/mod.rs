//! What the simulator tests of the worker API share: the seeds they sweep and a server and a
//! client worker on one simulated fabric.
// Each test binary uses what it needs of this module.
#![allow(dead_code)]

use xrdma_app::{Config, SimConfig, SimFabric, Worker};

/// The seeds every property is checked at.
pub const SEEDS: [u64; 5] = [1, 2, 3, 17, 99];

/// The workers of hosts 0 (the server) and 1 (the client) of a simulated fabric at `seed`.
pub fn pair(seed: u64) -> (Worker<SimFabric>, Worker<SimFabric>) {
    let sim = SimConfig {
        seed,
        ..SimConfig::default()
    };
    let mut hosts = Worker::simulated(sim, &Config::default()).expect("a simulated fabric");
    let server = hosts.remove(0);
    (server, hosts.remove(0))
}
