//! Every rank's RDMA device in the one result of a run across processes.
//!
//! After the receiver's rank says `bye`, each sender rank answers with a `device` frame: its
//! device as its own fabric describes it and that device's counter differences over its run
//! (from the fabric's creation to the end of its run, [`xrdma_runner::fabric::FabricReport::environment`],
//! the same definition as the receiver rank's own). The receiver's rank records each rank's
//! in its `environment.ranks` entry and makes the top-level `environment.device-counters`
//! and the device-derived network counters ([`xrdma_observe::device_counters::network`]) the sum
//! over the run's distinct devices ([`merge`]).
//!
//! A device is a rank's host name and its device's node GUID, or the device's name where the
//! GUID is unknown ([`rep::RankPlace::device_key`]): ranks on one device (two processes on
//! one guest's `rxe0`) count it once, by the lowest such rank's reading (every rank's
//! reading spans the whole run: each fabric is made before the common start and read after
//! the last record is in). A counter one of the devices lacks is absent from the sum, and a
//! network counter one of them cannot observe is `None`: never a partial sum. When a rank
//! that connected sent no device, the sum is not known: the top-level counters are absent
//! (`None`) and the per-rank values stay.

use crate::bootstrap::{Frame, Peer};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use xrdma_observe::device_counters::{self, Snapshot};
use xrdma_reports as rep;
use xrdma_runner::fabric::FabricReport;

/// What a rank tells the receiver's rank of its device (the `device` frame).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RankDevice {
    /// The device, as [`rep::Environment::device`]; `None` when the fabric has none.
    #[serde(default)]
    pub device: Option<rep::DeviceInfo>,
    /// Its counter differences over the rank's run, as [`rep::Environment::device_counters`].
    #[serde(default)]
    pub device_counters: Option<Snapshot>,
}

impl RankDevice {
    /// The device of `fabric` and its counters from the fabric's creation to now (the end
    /// of the rank's run), from [`FabricReport::environment`]; empty on a fabric without one.
    pub fn of<F: FabricReport>(fabric: &F) -> RankDevice {
        let env = fabric.environment();
        RankDevice {
            device: env.as_ref().and_then(|e| e.device.clone()),
            device_counters: env.and_then(|e| e.device_counters),
        }
    }

    /// The `device` frame carrying it.
    ///
    /// # Errors
    /// It cannot be serialized (never for these types).
    pub fn frame(&self) -> Result<Frame> {
        Ok(Frame::Device {
            device: serde_json::to_value(self)?,
        })
    }
}

/// Read peer rank `rank`'s `device` frame from `p`.
///
/// # Errors
/// The peer closed, timed out, sent another frame, or a malformed device.
pub fn receive(p: &mut Peer, rank: u32) -> Result<RankDevice> {
    let f = p.expect("device")?;
    decode(f, rank)
}

/// Decode peer rank `rank`'s `device` frame.
///
/// # Errors
/// Another frame, or a value that is not a [`RankDevice`].
pub fn decode(frame: Frame, rank: u32) -> Result<RankDevice> {
    let Frame::Device { device } = frame else {
        bail!("rank {rank} sent no device");
    };
    serde_json::from_value(device).with_context(|| format!("malformed device from rank {rank}"))
}

/// Record every rank's device in `result` (written by rank `own`, whose device is the
/// environment's own) and sum the counters over the distinct devices (see the module docs).
/// `peers` are the other ranks that connected, each with what it sent (`None`: nothing
/// usable arrived). Call it after `environment.ranks` is filled; a result without them is
/// left as it is.
pub fn merge(result: &mut rep::RunResult, own: u32, peers: Vec<(u32, Option<RankDevice>)>) {
    if let Some(env) = result.environment.as_mut() {
        merge_into(env, &mut result.network, own, peers);
    }
}

/// [`merge`] on a result's environment and network counters.
fn merge_into(
    env: &mut rep::Environment,
    network: &mut rep::NetworkCounters,
    own: u32,
    peers: Vec<(u32, Option<RankDevice>)>,
) {
    let Some(ranks) = env.ranks.as_mut() else {
        return;
    };
    let mine = RankDevice {
        device: env.device.clone(),
        device_counters: env.device_counters.clone(),
    };
    let mut known = true;
    for (r, sent) in std::iter::once((own, Some(mine))).chain(peers) {
        let sent = sent.unwrap_or_default();
        known &= sent.device.is_some() && sent.device_counters.is_some();
        if let Some(place) = ranks.iter_mut().find(|p| p.rank == r) {
            place.device = sent.device;
            place.device_counters = sent.device_counters;
        }
    }
    // One reading per device, the lowest rank's (the list is in rank order).
    let mut seen = Vec::new();
    let mut readings: Vec<&Snapshot> = Vec::new();
    for p in ranks.iter() {
        if let (Some(k), Some(c)) = (p.device_key(), &p.device_counters) {
            if !seen.contains(&k) {
                seen.push(k);
                readings.push(c);
            }
        }
    }
    let (sum, net) = if known && !readings.is_empty() {
        let nets: Vec<rep::NetworkCounters> = readings
            .iter()
            .map(|c| device_counters::network(c))
            .collect();
        (Some(sum_counters(&readings)), sum_network(&nets))
    } else {
        (None, rep::NetworkCounters::default())
    };
    env.device_counters = sum;
    let n = network;
    n.data_packets = net.data_packets;
    n.ecn_marks = net.ecn_marks;
    n.cnps = net.cnps;
    n.retransmit_timeouts = net.retransmit_timeouts;
    n.spurious_timeouts = net.spurious_timeouts;
    n.seq_naks = net.seq_naks;
    n.rnr_naks = net.rnr_naks;
}

/// Counter by counter, the sum of `readings`; a counter one reading lacks (or a sum that
/// would overflow) is left out.
fn sum_counters(readings: &[&Snapshot]) -> Snapshot {
    let Some((first, rest)) = readings.split_first() else {
        return Snapshot::new();
    };
    first
        .iter()
        .filter_map(|(k, &v)| {
            let total = rest.iter().try_fold(v, |a, r| a.checked_add(*r.get(k)?))?;
            Some((k.clone(), total))
        })
        .collect()
}

/// The device-derived network counters ([`device_counters::network`]) summed over devices;
/// a counter one device cannot observe is `None`.
fn sum_network(nets: &[rep::NetworkCounters]) -> rep::NetworkCounters {
    let sum = |f: fn(&rep::NetworkCounters) -> Option<u64>| {
        nets.iter().try_fold(0u64, |a, n| a.checked_add(f(n)?))
    };
    rep::NetworkCounters {
        data_packets: sum(|n| n.data_packets),
        ecn_marks: sum(|n| n.ecn_marks),
        cnps: sum(|n| n.cnps),
        retransmit_timeouts: sum(|n| n.retransmit_timeouts),
        spurious_timeouts: sum(|n| n.spurious_timeouts),
        seq_naks: sum(|n| n.seq_naks),
        rnr_naks: sum(|n| n.rnr_naks),
        ..rep::NetworkCounters::default()
    }
}

#[cfg(test)]
#[path = "devices_tests.rs"]
mod tests;
