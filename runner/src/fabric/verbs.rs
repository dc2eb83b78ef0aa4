//! The real-RDMA fabric: every host of a scenario is one [`VerbsTransport`] (its own CQ, QPs
//! and MRs) on one RDMA device, so a whole scenario runs in one process. On Soft-RoCE in CI
//! all hosts share `rxe0` and talk over its loopback GID; on a cluster each worker would open
//! its own device.
//!
//! Time is the wall clock from the fabric's creation. Every host gets a turn on every
//! `advance` (busy polling); the run stops when every sender is finished or the scenario's
//! `verbs.run-timeout` passes.

use super::Fabric;
use std::path::PathBuf;
use std::time::Instant;
use xrdma::{RcParams, Time};
use xrdma_reports as rep;
use xrdma_scenario::VerbsSection;
use xrdma_verbs::{Device, DeviceConfig, TransportConfig, VerbsTransport};

/// Hosts on one RDMA device.
pub struct VerbsFabric {
    device: Device,
    hosts: Vec<VerbsTransport>,
    start: Instant,
    deadline: Time,
    counters_at_start: Counters,
    /// The last time [`Fabric::now`] read the clock: the run timeout is checked against it, so
    /// `advance` reads no clock of its own (a read costs about 1 µs on the HPET clock source
    /// of the TCG guest CI uses, and the runner reads the clock once per round anyway).
    last_now: std::cell::Cell<Time>,
}

/// The device's port counters this fabric reports (rxe and mlx5 names); `None` where the
/// device has no such counter.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    sent_pkts: Option<u64>,
    rnr_naks: Option<u64>,
    seq_errors: Option<u64>,
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
    /// stopping `run_timeout` after creation.
    ///
    /// # Errors
    /// A verb that fails while creating a CQ.
    pub fn with_device(device: &Device, hosts: u32, run_timeout: Time) -> anyhow::Result<Self> {
        Self::build(device, hosts, run_timeout, RcParams::default())
    }

    fn build(device: &Device, hosts: u32, run_timeout: Time, rc: RcParams) -> anyhow::Result<Self> {
        let tc = TransportConfig {
            rc,
            ..TransportConfig::default()
        };
        let mut transports = Vec::with_capacity(hosts as usize);
        for _ in 0..hosts {
            transports.push(VerbsTransport::new(device, tc)?);
        }
        let counters_at_start = read_counters(device);
        Ok(VerbsFabric {
            device: device.clone(),
            hosts: transports,
            start: Instant::now(),
            deadline: run_timeout,
            counters_at_start,
            last_now: std::cell::Cell::new(Time::ZERO),
        })
    }

    /// Restart the clock at zero now (the run timeout then counts from here): ranks of a
    /// multi-process run do this on the common `start`, so their clocks agree.
    pub fn restart_clock(&mut self) {
        self.start = Instant::now();
        self.last_now.set(Time::ZERO);
    }

    /// The device in use.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

fn counters_dir(device: &Device) -> PathBuf {
    PathBuf::from(format!(
        "/sys/class/infiniband/{}/ports/{}/hw_counters",
        device.name(),
        device.port().port
    ))
}

fn read_counters(device: &Device) -> Counters {
    let dir = counters_dir(device);
    let get = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    Counters {
        sent_pkts: get("sent_pkts"),
        rnr_naks: get("send_rnr_err"),
        seq_errors: get("rcvd_seq_err").max(get("out_of_sequence")),
    }
}

/// A device's host is real: it spends its CPU time itself, the model takes nothing.
impl crate::host_cpu::HostCpu for VerbsTransport {}

impl Fabric for VerbsFabric {
    type Host<'a> = &'a mut VerbsTransport;

    fn backend(&self) -> rep::Backend {
        rep::Backend::Verbs
    }
    fn hosts(&self) -> u32 {
        self.hosts.len() as u32
    }
    fn host(&mut self, h: u32) -> Self::Host<'_> {
        &mut self.hosts[h as usize]
    }
    fn now(&self) -> Time {
        let now = Time::from_ns(u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX));
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
        // Busy polling: every host polls its CQ on every turn.
        ready.extend(0..self.hosts.len() as u32);
        true
    }
    fn set_wake(&mut self, _h: u32, _at: Time) {
        // Every host gets a turn on every advance, so a wake time needs no bookkeeping.
    }
    fn network(&self) -> rep::NetworkCounters {
        let now = read_counters(&self.device);
        let was = self.counters_at_start;
        let delta = |now: Option<u64>, was: Option<u64>| Some(now?.saturating_sub(was?));
        // The switches (ECN marks, PFC pauses, drops, buffers) are not observable from a
        // host: those counters stay `None`.
        rep::NetworkCounters {
            data_packets: delta(now.sent_pkts, was.sent_pkts),
            rnr_naks: delta(now.rnr_naks, was.rnr_naks),
            seq_naks: delta(now.seq_errors, was.seq_errors),
            ..rep::NetworkCounters::default()
        }
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
}
