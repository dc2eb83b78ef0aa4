//! Looking at a run while it runs: the [`Watch`] the turn loop ([`crate::drive::drive`])
//! asks after every round whether it wants the endpoints now, and the [`LiveStat`] it then
//! hands over (what `xrdma stat --socket` prints). Taking one reads counters only, so a
//! watched run behaves exactly as an unwatched one (on the simulator: the same trace hash).

use serde::{Deserialize, Serialize};
use xrdma::Time;
use xrdma_observe::placement::Placement;
use xrdma_reports as rep;

/// Something that wants the endpoints of a running run from time to time.
pub trait Watch {
    /// Whether it wants a [`LiveStat`] at `now` (fabric clock). Asked after every round of
    /// host turns, so it must be cheap when the answer is no.
    fn due(&mut self, now: Time) -> bool;
    /// The endpoints at the round `due` said yes to.
    fn take(&mut self, stat: LiveStat);
}

/// The watch of an unwatched run: never due.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoWatch;

impl Watch for NoWatch {
    fn due(&mut self, _now: Time) -> bool {
        false
    }
    fn take(&mut self, _stat: LiveStat) {}
}

/// The state of a running run's endpoints at one instant, with the device's own counters
/// where the fabric is a device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct LiveStat {
    /// The process that answered.
    pub pid: u32,
    /// The backend the run is on.
    pub backend: rep::Backend,
    /// When it was taken, on the fabric's clock (virtual on the simulator, since the run's
    /// start on a device), ps.
    pub at_ps: u64,
    /// Every local host's endpoint ([`crate::drive::endpoints`]).
    pub endpoints: Vec<rep::HostEndpoint>,
    /// The device's port counters as read now (`hw_counters/` by bare name, `counters/` as
    /// `counters/NAME`; [`xrdma_observe::device_counters::read_snapshot`]); `None` on the simulator.
    pub device: Option<DeviceReading>,
    /// Where the thread that drives the hosts runs, beside the device's NUMA node
    /// ([`xrdma_observe::placement`]); `None` in an answer from a build before it was kept.
    #[serde(default)]
    pub placement: Option<Placement>,
    /// Events the simulator has processed so far; `None` on a device (and in an answer from
    /// a build before it was kept).
    #[serde(default)]
    pub events: Option<u64>,
}

/// A device port's counters at one instant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeviceReading {
    /// The device (`rxe0`, `mlx5_0`).
    pub device: String,
    /// Its port.
    pub port: u8,
    /// Every counter by name, absolute values since the driver loaded.
    pub counters: xrdma_observe::device_counters::Snapshot,
}
