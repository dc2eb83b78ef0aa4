//! The real-RDMA fabric: every host of a scenario is one [`VerbsTransport`] (its own CQ, QPs
//! and MRs) on one RDMA device, so a whole scenario runs in one process. On Soft-RoCE in CI
//! all hosts share `rxe0` and talk over its loopback GID; on a cluster each worker would open
//! its own device.
//!
//! Time is one wall [`Clock`] that the fabric and every host's transport read, so the
//! instants the driver takes from a transport (`driver::open` and `establish` read
//! [`xrdma::Transport::now`]) and those the runner takes from the fabric are of one clock.
//! Its zero is the run's first turn, not the fabric's creation: the clock is held at zero
//! while the QPs, MRs and connections are set up (0.1–1 s on Soft-RoCE, which a message
//! meant for `t = 0` would otherwise carry in its completion time) and starts at the
//! fabric's first [`Fabric::now`], or at [`VerbsFabric::start_clock`] (the common start of
//! a run across ranks). Every host gets a turn on every `advance`; between rounds the loop
//! busy-polls ([`Polling::Busy`], the runner's default: the lowest latency) or follows
//! XRDMA's hybrid loop ([`Polling::Hybrid`]: it blocks on the completion channels once
//! nothing has moved for a while, until a completion or the earliest host wake). The run
//! stops when every sender is finished or the scenario's `verbs.run-timeout` passes.

use super::{Clocked, Fabric, FabricReport, Polling, PollingStats};
use std::path::Path;
use xrdma::{RcParams, Span, Time};
use xrdma_observe::device_counters::{self, Snapshot};
use xrdma_reports as rep;
use xrdma_scenario::VerbsSection;
pub use xrdma_verbs::Device;
use xrdma_verbs::{
    hybrid, Clock, DeviceConfig, Hybrid, HybridPolicy, TransportConfig, VerbsTransport,
};

/// Whether this build has the verbs backend: this one has.
pub const BUILT: bool = true;

/// Open the device the environment names (`XRDMA_VERBS_DEVICE`, `XRDMA_VERBS_PORT`,
/// `XRDMA_VERBS_GID_INDEX`; else the first device and its first routable RoCE v2 GID,
/// [`DeviceConfig::from_env`]).
///
/// # Errors
/// No device, no usable GID, or a malformed variable.
pub fn open_env_device() -> anyhow::Result<Device> {
    let cfg = DeviceConfig::from_env()?;
    Ok(Device::open(&cfg)?)
}

/// Hosts on one RDMA device.
pub struct VerbsFabric {
    device: Device,
    hosts: Vec<VerbsTransport>,
    /// The clock of the fabric and of every host's transport.
    clock: Clock,
    deadline: Time,
    /// The device's counters when the fabric was made ([`device_counters::read_snapshot`]).
    counters_at_start: Snapshot,
    /// The counters at the end of the run, read once by [`FabricReport::network`] so the network
    /// counters and the environment's raw differences are of the same reading.
    counters_at_end: std::cell::RefCell<Option<Snapshot>>,
    /// The last time [`Clocked::now`] read the clock: the run timeout is checked against it, so
    /// `advance` reads no clock of its own (a read costs about 1 µs on the HPET clock source
    /// of the TCG guest CI uses, and the runner reads the clock once per round anyway).
    last_now: std::cell::Cell<Time>,
    /// The RC attributes asked for (what the transports apply may differ: the path MTU, and
    /// Soft-RoCE's local ACK timeout).
    requested_rc: RcParams,
    /// The CPU time of the thread that made the fabric (and runs its hosts), then.
    cpu_at_start: Option<Span>,
    /// The hybrid loop's state ([`Polling::Hybrid`]); `None` busy-polls.
    hybrid: Option<Hybrid>,
    /// Each host's next wake ([`Clocked::set_wake`]; [`Time::MAX`]: none).
    wakes: Vec<Time>,
    /// Hosts with work in flight ([`Clocked::set_in_flight`]): the hybrid loop spins for them.
    in_flight: Vec<bool>,
    /// Why the hybrid loop gave up, if it did (it busy-polls from then on).
    hybrid_failed: Option<String>,
    /// Whether the last advance blocked ([`Clocked::waited`]).
    waited: bool,
}

impl VerbsFabric {
    /// Open the device the scenario's `verbs:` block names (environment variables
    /// `XRDMA_VERBS_DEVICE`, `XRDMA_VERBS_PORT` and `XRDMA_VERBS_GID_INDEX` fill what the block
    /// leaves out) and make `hosts` transports on it.
    ///
    /// # Errors
    /// No device, no usable GID, or a verb that fails.
    pub fn new(hosts: u32, section: &VerbsSection) -> anyhow::Result<Self> {
        Self::with_rc(hosts, section, RcParams::default())
    }

    /// `hosts` transports on the device the environment names, stopping `timeout` after the
    /// run's start: what a tool (`ping`, `bw`, `soak`, `idle`, `calibrate`) runs on.
    ///
    /// # Errors
    /// As [`VerbsFabric::new`].
    pub fn for_tool(hosts: u32, timeout: Span) -> anyhow::Result<Self> {
        let section = VerbsSection {
            run_timeout: timeout,
            ..Default::default()
        };
        Self::new(hosts, &section)
    }

    /// [`VerbsFabric::new`] with every QP connected with the RC attributes `rc` (a scenario's
    /// `rc:` block), the path MTU lowered to the port's active MTU.
    ///
    /// # Errors
    /// As [`VerbsFabric::new`], and `rc` outside its encodings.
    pub fn with_rc(hosts: u32, section: &VerbsSection, rc: RcParams) -> anyhow::Result<Self> {
        let env = DeviceConfig::from_env()?;
        let cfg = DeviceConfig {
            name: section.device.clone().or(env.name),
            port: section.port.or(env.port),
            gid_index: section.gid_index.or(env.gid_index),
        };
        let device = Device::open(&cfg)?;
        Self::build(&device, hosts, section.run_timeout, rc)
    }

    /// `hosts` new transports (each its own CQ and completion channel) on an open `device`,
    /// stopping `run_timeout` after the run's start (its clock's, see the module's note).
    ///
    /// # Errors
    /// A verb that fails while creating a CQ.
    pub fn with_device(device: &Device, hosts: u32, run_timeout: Span) -> anyhow::Result<Self> {
        Self::build(device, hosts, run_timeout, RcParams::default())
    }

    fn build(device: &Device, hosts: u32, run_timeout: Span, rc: RcParams) -> anyhow::Result<Self> {
        let tc = TransportConfig {
            rc,
            ..TransportConfig::default()
        };
        let clock = Clock::held();
        let mut transports = Vec::with_capacity(hosts as usize);
        for _ in 0..hosts {
            transports.push(VerbsTransport::with_clock(device, tc, clock.clone())?);
        }
        let counters_at_start = read_counters(device);
        Ok(VerbsFabric {
            device: device.clone(),
            hosts: transports,
            clock,
            deadline: Time::ZERO + run_timeout,
            counters_at_start,
            counters_at_end: std::cell::RefCell::new(None),
            last_now: std::cell::Cell::new(Time::ZERO),
            requested_rc: rc,
            cpu_at_start: super::thread_cpu(),
            hybrid: None,
            wakes: vec![Time::MAX; hosts as usize],
            in_flight: vec![false; hosts as usize],
            hybrid_failed: None,
            waited: false,
        })
    }

    /// Start the run's clock now (the run timeout counts from here), for the fabric and its
    /// transports alike, unless it runs already ([`Clock::start`]): ranks of a multi-process
    /// run do this on the common `start`, so their clocks agree. Without it, the clock
    /// starts at the first [`Fabric::now`].
    pub fn start_clock(&mut self) {
        self.last_now.set(self.clock.start());
    }

    /// The device in use.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Wait between rounds as `polling` says (a new fabric busy-polls).
    pub fn set_polling(&mut self, polling: Polling) {
        self.hybrid = match polling {
            Polling::Busy => None,
            Polling::Hybrid { spin, max_block } => {
                Some(Hybrid::new(HybridPolicy { spin, max_block }))
            }
        };
    }

    /// What the hybrid loop has done so far; `None` while the fabric busy-polls.
    pub fn polling_stats(&self) -> Option<PollingStats> {
        let failed = self.hybrid_failed.clone();
        match &self.hybrid {
            Some(h) => {
                let s = h.stats();
                Some(PollingStats {
                    rounds: s.rounds,
                    blocks: s.blocks,
                    wakeups: s.wakeups,
                    failed,
                })
            }
            None => failed.map(|f| PollingStats {
                failed: Some(f),
                ..PollingStats::default()
            }),
        }
    }

    /// The hybrid loop's wait after a round (see the module's note): block on the hosts'
    /// completion channels when nothing has moved for the spin time, until a completion,
    /// the earliest host wake or the run's deadline.
    fn hybrid_wait(&mut self) {
        // A busy-polling fabric (the runner's default) does nothing here, not even the sum.
        let Some(h) = self.hybrid.as_mut() else {
            return;
        };
        let activity = self
            .hosts
            .iter()
            .map(|t| t.completions_polled() + t.work_requests_posted())
            .sum();
        if !h.idle(activity) || self.in_flight.contains(&true) {
            return;
        }
        // The round's time may be some rounds old (the loop reads the clock sparsely): read
        // it now, before a block, and the loop reads it again after ([`Clocked::waited`]).
        let now = self.clock.start();
        self.last_now.set(now);
        let first = self.wakes.iter().copied().min().unwrap_or(Time::MAX);
        let until = first.min(self.deadline).saturating_since(now);
        let Some(wait) = h.wait(Some(std::time::Duration::from_nanos(until.as_ps() / 1000))) else {
            return;
        };
        self.waited = true;
        match hybrid::wait_any(&mut self.hosts, wait) {
            Ok(woken) => h.blocked(woken),
            Err(e) => {
                // Busy polling still serves every host: the run goes on, the failure is kept.
                self.hybrid_failed = Some(e.to_string());
                self.hybrid = None;
            }
        }
    }
}

/// Every counter of the device's port, by name ([`device_counters::read_snapshot`]).
fn read_counters(device: &Device) -> Snapshot {
    device_counters::read_snapshot(
        Path::new(device_counters::SYSFS_ROOT),
        device.name(),
        device.port().port,
    )
}

/// The device and port as the result's environment describes them: sysfs's firmware, node
/// GUID and driver, the verbs queries' port, GID, link layer and active MTU.
fn device_info(device: &Device) -> rep::DeviceInfo {
    let port = device.port();
    let gid = device.gid();
    // `ibv_port_attr.link_layer`: 1 InfiniBand, 2 Ethernet, 0 unspecified (older rxe).
    let link_layer = match port.link_layer {
        1 => Some("InfiniBand".to_string()),
        2 => Some("Ethernet".to_string()),
        _ => None,
    };
    rep::DeviceInfo {
        port: Some(port.port),
        gid_index: Some(gid.index),
        gid: Some(gid.addr().to_string()),
        link_layer,
        active_mtu: Some(port.active_mtu_bytes()).filter(|&m| m > 0),
        link_rate_bps: device.link_rate_bps(),
        ..xrdma_observe::environment::sysfs_device(
            Path::new(device_counters::SYSFS_ROOT),
            device.name(),
        )
    }
}

impl VerbsFabric {
    /// The device's counter differences from the fabric's creation to the end reading
    /// (taken now when [`FabricReport::network`] has not taken it).
    fn counter_deltas(&self) -> Snapshot {
        let mut end = self.counters_at_end.borrow_mut();
        let end = end.get_or_insert_with(|| read_counters(&self.device));
        device_counters::delta(&self.counters_at_start, end)
    }
}

/// A device's host is real: it spends its CPU time itself, the model takes nothing.
impl crate::host_cpu::HostCpu for VerbsTransport {}

impl Clocked for VerbsFabric {
    fn backend(&self) -> rep::Backend {
        rep::Backend::Verbs
    }
    fn hosts(&self) -> u32 {
        self.hosts.len() as u32
    }
    /// The time since the run's start; the first reading starts the clock (see the module's
    /// note).
    fn now(&self) -> Time {
        let now = self.clock.start();
        self.last_now.set(now);
        now
    }
    fn advance(&mut self, ready: &mut Vec<u32>, settled: bool) -> bool {
        ready.clear();
        if settled {
            return false;
        }
        if self.last_now.get() >= self.deadline {
            return false;
        }
        self.hybrid_wait();
        // Every host polls its CQ on every round.
        ready.extend(0..self.hosts.len() as u32);
        true
    }
    /// Kept for the hybrid loop, which blocks no later than the earliest wake; busy polling
    /// gives every host a turn on every round anyway.
    fn set_wake(&mut self, h: u32, at: Time) {
        if let Some(w) = self.wakes.get_mut(h as usize) {
            *w = at;
        }
    }
    fn waited(&mut self) -> bool {
        std::mem::take(&mut self.waited)
    }
    fn set_in_flight(&mut self, h: u32, in_flight: bool) {
        if let Some(f) = self.in_flight.get_mut(h as usize) {
            *f = in_flight;
        }
    }
}

impl Fabric for VerbsFabric {
    type Host<'a> = &'a mut VerbsTransport;

    fn host(&mut self, h: u32) -> Self::Host<'_> {
        &mut self.hosts[h as usize]
    }
    /// The port's rate ([`Device::link_rate_bps`]): `None` on a RoCE port whose netdev
    /// declares no speed (rxe on a virtio-net NIC by default), so the delay signal is not
    /// claimed there.
    fn link_rate_bps(&self) -> Option<u64> {
        self.device.link_rate_bps()
    }
    /// The applied RC attributes' retry budget where the device lengthened the local ACK
    /// timeout (Soft-RoCE, `xrdma_verbs::soft_roce`): [`super::ack_timeout_floor`].
    fn ack_timeout_floor(&self) -> Option<Span> {
        use xrdma::Transport as _;
        let applied = self.hosts.first()?.rc_params();
        super::ack_timeout_floor(&self.requested_rc, &applied)
    }
}

impl FabricReport for VerbsFabric {
    fn network(&self) -> rep::NetworkCounters {
        // The end of the run: read the device once, for these and the environment's.
        *self.counters_at_end.borrow_mut() = Some(read_counters(&self.device));
        // The switches (PFC pauses, drops, buffers) are not observable from a host, and a
        // counter the device lacks stays `None` (see `device_counters::TABLE`).
        device_counters::network(&self.counter_deltas())
    }
    fn environment(&self) -> Option<rep::Environment> {
        Some(xrdma_observe::environment::verbs(
            device_info(&self.device),
            self.counter_deltas(),
        ))
    }
    fn device_reading(&self) -> Option<crate::watch::DeviceReading> {
        Some(crate::watch::DeviceReading {
            device: self.device.name().to_string(),
            port: self.device.port().port,
            counters: read_counters(&self.device),
        })
    }
    fn sim_info(&self) -> Option<rep::SimInfo> {
        None
    }
    fn path(&self) -> rep::PathModel {
        // The base RTT and the bottleneck rate of a real path are not known up front; the
        // path MTU is what the QPs were connected with.
        rep::PathModel {
            mtu_bytes: self
                .hosts
                .first()
                .map(|t| u64::from(xrdma::Transport::rc_params(t).path_mtu)),
            ..rep::PathModel::default()
        }
    }
    fn transport_info(&self) -> Option<rep::TransportInfo> {
        self.hosts.first().map(crate::transport_info::of)
    }
    /// The CPU time of the thread that runs the hosts, since the fabric was made: the hosts
    /// busy-poll their CQs, so it is about the run's wall time.
    fn host_cpu(&self) -> Option<rep::HostCpuTime> {
        let (start, now) = (self.cpu_at_start?, super::thread_cpu()?);
        Some(rep::HostCpuTime {
            source: rep::CpuSource::Thread,
            total_ps: now.saturating_sub(start).as_ps(),
            per_host_ps: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use xrdma::Transport;

    /// The device from `XRDMA_VERBS_*` (rxe0 in the Soft-RoCE guest), or why the test skips.
    fn device_or_skip(test: &str) -> Option<Device> {
        match DeviceConfig::from_env().and_then(|cfg| Device::open(&cfg)) {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!("SKIP {test}: no usable RDMA device ({e})");
                None
            }
        }
    }

    #[test]
    fn the_run_starts_at_its_first_turn_not_at_its_setup() {
        let test = "the_run_starts_at_its_first_turn_not_at_its_setup";
        let Some(dev) = device_or_skip(test) else {
            return;
        };
        let mut f = VerbsFabric::with_device(&dev, 2, Span::from_ms(60_000)).unwrap();
        let cfg = xrdma::Config::default();
        let mut eps = vec![
            xrdma::Endpoint::new(cfg.clone()).unwrap(),
            xrdma::Endpoint::new(cfg).unwrap(),
        ];
        // The setup: QPs created, MRs registered, the pair connected, and a pause as long as
        // a slow one.
        crate::run::connect(&mut f, &mut eps, 0, 1).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        // Every instant handed out during the setup is the run's zero.
        assert_eq!(f.host(0).now(), Time::ZERO);
        assert_eq!(f.host(1).now(), Time::ZERO);
        // The first turn starts the run: its time is not the 200 ms of setup.
        let first = f.now();
        assert!(
            first < Time::ZERO + Span::from_ms(20),
            "first turn at {first:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
        assert!(f.host(0).now() >= Time::ZERO + Span::from_ms(20));
    }

    #[test]
    fn the_fabric_and_its_transports_read_one_clock_from_the_common_start() {
        let test = "the_fabric_and_its_transports_read_one_clock_from_the_common_start";
        let Some(dev) = device_or_skip(test) else {
            return;
        };
        let mut f = VerbsFabric::with_device(&dev, 2, Span::from_ms(60_000)).unwrap();
        // Time passes between the transports' creation and the common start (a rank waits
        // for its peers there), then the clock starts.
        std::thread::sleep(Duration::from_millis(50));
        f.start_clock();
        let fabric = f.now();
        assert!(fabric < Time::ZERO + Span::from_ms(20), "{fabric:?}");
        let hosts = [f.host(0).now(), f.host(1).now()];
        for (h, t) in hosts.into_iter().enumerate() {
            // A transport's instant is never ahead of the fabric's read after it: `driver::open`
            // stamps with the transport's clock, the turns with the fabric's.
            let later = f.now();
            assert!(
                t <= later,
                "host {h}'s transport reads {t:?}, the fabric {later:?}"
            );
            assert!(
                later.saturating_since(t) < Span::from_ms(20) && t >= fabric,
                "host {h}: transport {t:?}, fabric {fabric:?}..{later:?}"
            );
        }
    }
}
