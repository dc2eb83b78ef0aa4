//! Where a run happened (the `environment` key of a result): the backend, the simulator's
//! build, or the machine, kernel and RDMA device, with the device's own counters and, for a
//! run across processes, where each rank ran.
//!
//! Every field is optional and `null` when unknown, never a guessed value. A result without
//! the key (written before it existed, schema versions 1 to 3) reads with `environment`
//! absent; the key needs no new schema version because an older reader ignores it and a
//! newer one reads its absence as "not recorded".
//!
//! The simulator's figures do not depend on the machine, so a simulated run records only the
//! simulator's build: its `result.json` stays byte-identical from one machine to the next.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::kinds::Backend;

/// Where a run happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Environment {
    /// The backend that ran it.
    pub backend: Backend,
    /// The simulator's crate version (`xrdma-sim`), on the simulator; absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator_version: Option<String>,
    /// Host name of the machine (`/proc/sys/kernel/hostname`); `null` on the simulator,
    /// whose results do not depend on the machine, and when it cannot be read.
    #[serde(default)]
    pub host_name: Option<String>,
    /// Kernel release (`uname -r`, read from `/proc/sys/kernel/osrelease`); `null` on the
    /// simulator and when it cannot be read.
    #[serde(default)]
    pub kernel: Option<String>,
    /// The RDMA device, on the verbs backend; absent elsewhere. On a run across processes it
    /// is the device of the receiver's rank, the process that wrote the result (the one
    /// `platform` line names it); every rank's own is its [`RankPlace::device`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
    /// The device's own counters over the run, by the device's names (the files of
    /// `ports/N/hw_counters/` and `ports/N/counters/` in sysfs): each the value at the end
    /// minus the value at the start. A counter the device lacks is absent, never 0; one that
    /// went backwards (reset or wrapped) is left out. Absent on the simulator.
    ///
    /// On a run across processes: the sum over the run's distinct devices
    /// ([`RankPlace::device_key`]: ranks on one device count it once), holding only the
    /// counters every one of them has (a counter one lacks is absent, never a partial sum);
    /// absent when a rank that connected sent no counters. Each rank's own are its
    /// [`RankPlace::device_counters`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_counters: Option<BTreeMap<String, u64>>,
    /// Each rank of a run across processes (`verbs.ranks`), in rank order; absent for a
    /// single-process run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<RankPlace>>,
}

/// The RDMA device and port a run used.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct DeviceInfo {
    /// Device name (`rxe0`, `mlx5_0`, ...).
    pub name: Option<String>,
    /// Kernel driver of the device's parent (the `device/driver` link in sysfs, e.g.
    /// `mlx5_core`); `null` for a software device without one (rxe).
    pub driver: Option<String>,
    /// Firmware version (`/sys/class/infiniband/DEV/fw_ver`, as `ibv_devinfo` shows it).
    pub fw_ver: Option<String>,
    /// Node GUID (`/sys/class/infiniband/DEV/node_guid`, `xxxx:xxxx:xxxx:xxxx`).
    pub node_guid: Option<String>,
    /// Port number, from 1.
    pub port: Option<u8>,
    /// Index of the source GID in the port's GID table.
    pub gid_index: Option<u32>,
    /// The source GID, written as an IPv6 address.
    pub gid: Option<String>,
    /// The port's link layer (`Ethernet` for RoCE, `InfiniBand`).
    pub link_layer: Option<String>,
    /// The port's active MTU, bytes.
    pub active_mtu: Option<u32>,
    /// The rate fragments leave the port at, bits/s, as the send window's delay signal
    /// takes it: the decoded active speed × width on InfiniBand, the netdev's speed on RoCE;
    /// `null` when not known (a netdev that declares no speed). Absent from results written
    /// before it was recorded.
    pub link_rate_bps: Option<u64>,
}

/// Where one rank of a run across processes ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RankPlace {
    /// The rank (its index in `verbs.ranks`).
    pub rank: u32,
    /// The host name the rank reported; `null` when it did not say.
    #[serde(default)]
    pub host_name: Option<String>,
    /// The rank's bootstrap address as the scenario gives it (`IP:port`).
    #[serde(default)]
    pub address: Option<String>,
    /// The address the receiver's rank saw the rank's bootstrap connection come from;
    /// `null` for the receiver's own rank.
    #[serde(default)]
    pub connected_from: Option<String>,
    /// The scenario hosts the rank ran.
    #[serde(default)]
    pub hosts: Vec<u32>,
    /// The rank's RDMA device as the rank itself described it (its verbs queries and
    /// sysfs, as [`Environment::device`]); absent when the rank sent none (it runs no
    /// sender and never connected, or it failed first). Absent from results written before
    /// it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
    /// The rank's device counters over its run, by the device's names, as
    /// [`Environment::device_counters`] of a single process: the end of the rank's run
    /// (after the receiver's rank said `bye`) minus the creation of its fabric. Absent when
    /// the rank sent none, never zeros; absent from results written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_counters: Option<BTreeMap<String, u64>>,
}

/// Which device a rank ran on, for counting each device once ([`RankPlace::device_key`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceKey {
    /// The host name the rank reported (`None` when unknown: ranks that all left it unknown
    /// are taken for one machine).
    pub host_name: Option<String>,
    /// The device's node GUID, or its name where the GUID is unknown.
    pub device: Option<String>,
}

impl RankPlace {
    /// The device this rank ran on: its host name and its device's node GUID, the device
    /// name where the GUID is unknown; `None` when the rank sent no device. Two ranks with
    /// one key ran on one device (two processes on one machine's `rxe0`), whose counters
    /// count once. The host name is part of the key because a node GUID is unique per
    /// adapter only by convention: rxe derives it from its netdev's MAC address, and two
    /// virtual machines may well share one.
    pub fn device_key(&self) -> Option<DeviceKey> {
        let d = self.device.as_ref()?;
        Some(DeviceKey {
            host_name: self.host_name.clone(),
            device: d.node_guid.clone().or_else(|| d.name.clone()),
        })
    }
}

impl Environment {
    /// The environment of a simulated run: the backend and the simulator's version.
    pub fn sim(simulator_version: &str) -> Environment {
        Environment {
            backend: Backend::Sim,
            simulator_version: Some(simulator_version.to_string()),
            host_name: None,
            kernel: None,
            device: None,
            device_counters: None,
            ranks: None,
        }
    }

    /// One line naming where the run happened, e.g. `sim, xrdma-sim 0.1.0` or
    /// `verbs on host h1 (kernel 6.1.0), rxe0 port 1 (fw 0.0.0, GID 1 ::ffff:10.0.0.1,
    /// Ethernet, MTU 1024 B)`; what is unknown is written `?`.
    pub fn one_line(&self) -> String {
        let q = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
        let mut o = self.backend.to_string();
        if let Some(v) = &self.simulator_version {
            let _ = write!(o, ", xrdma-sim {v}");
        }
        if self.backend != Backend::Sim || self.host_name.is_some() || self.kernel.is_some() {
            let _ = write!(
                o,
                " on host {} (kernel {})",
                q(&self.host_name),
                q(&self.kernel)
            );
        }
        if let Some(d) = &self.device {
            let _ = write!(
                o,
                ", {} port {} (fw {}, GID {} {}, {}, MTU {})",
                q(&d.name),
                d.port.map_or_else(|| "?".into(), |p| p.to_string()),
                q(&d.fw_ver),
                d.gid_index.map_or_else(|| "?".into(), |i| i.to_string()),
                q(&d.gid),
                q(&d.link_layer),
                d.active_mtu
                    .map_or_else(|| "?".into(), |m| format!("{m} B"))
            );
        }
        o
    }

    /// What the top-level device counters cover on a run across processes, for the
    /// summary's `device` block: `summed over 2 devices (rank 0: rxe0 on a, rank 1: rxe0 on
    /// b)` (the node GUID in place of an unknown host name), `of 1 device, shared by ranks 0, 1 (counted once)`, or which ranks sent no
    /// counters; `None` for a single-process run (no `ranks`) and where no rank has a device.
    pub fn device_scope(&self) -> Option<String> {
        let ranks = self.ranks.as_ref()?;
        let silent: Vec<String> = ranks
            .iter()
            .filter(|r| r.connected_from.is_some() && r.device.is_none())
            .map(|r| r.rank.to_string())
            .collect();
        if !silent.is_empty() {
            return Some(format!(
                "not summed: rank {} sent no device counters (each rank's are in result.json)",
                silent.join(", ")
            ));
        }
        let mut keys: Vec<(DeviceKey, Vec<&RankPlace>)> = Vec::new();
        for r in ranks {
            let Some(k) = r.device_key() else { continue };
            match keys.iter_mut().find(|(q, _)| *q == k) {
                Some((_, rs)) => rs.push(r),
                None => keys.push((k, vec![r])),
            }
        }
        match keys.as_slice() {
            [] => None,
            [(_, rs)] if rs.len() == 1 => None,
            [(_, rs)] => Some(format!(
                "of 1 device, shared by ranks {} (counted once)",
                rs.iter()
                    .map(|r| r.rank.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => Some(format!(
                "summed over {} devices ({})",
                keys.len(),
                keys.iter()
                    .map(|(_, rs)| {
                        let r = rs[0];
                        let d = r.device.as_ref();
                        let q = |v: Option<&str>| v.unwrap_or("?").to_string();
                        // Without a host name, the GUID is what tells the devices apart.
                        let at = match &r.host_name {
                            Some(h) => format!("on {h}"),
                            None => format!("GUID {}", q(d.and_then(|d| d.node_guid.as_deref()))),
                        };
                        format!(
                            "rank {}: {} {at}",
                            rs.iter()
                                .map(|r| r.rank.to_string())
                                .collect::<Vec<_>>()
                                .join("+"),
                            q(d.and_then(|d| d.name.as_deref())),
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The summary's lines: `platform ...` ([`Environment::one_line`]) and, for a run
    /// across processes, one `rank R ...` line per rank.
    pub fn summary_lines(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "platform   {}", self.one_line());
        for r in self.ranks.iter().flatten() {
            let _ = writeln!(
                o,
                "           rank {} on host {} at {}{}: scenario hosts {}",
                r.rank,
                r.host_name.as_deref().unwrap_or("?"),
                r.address.as_deref().unwrap_or("?"),
                r.connected_from
                    .as_deref()
                    .map_or_else(String::new, |a| format!(" (connected from {a})")),
                host_list(&r.hosts)
            );
        }
        o
    }
}

/// `0, 2, 5`, or `-` for none.
fn host_list(hosts: &[u32]) -> String {
    if hosts.is_empty() {
        return "-".into();
    }
    hosts
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verbs() -> Environment {
        Environment {
            backend: Backend::Verbs,
            simulator_version: None,
            host_name: Some("h1".into()),
            kernel: Some("6.1.0-18-amd64".into()),
            device: Some(DeviceInfo {
                name: Some("rxe0".into()),
                driver: None,
                fw_ver: Some("0.0.0".into()),
                node_guid: Some("b208:75ff:fe5f:b85e".into()),
                port: Some(1),
                gid_index: Some(1),
                gid: Some("::ffff:10.0.2.15".into()),
                link_layer: Some("Ethernet".into()),
                active_mtu: Some(1024),
                link_rate_bps: None,
            }),
            device_counters: Some(BTreeMap::from([("sent_pkts".to_string(), 120)])),
            ranks: None,
        }
    }

    #[test]
    fn lines_name_the_machine_and_device() {
        assert_eq!(
            Environment::sim("0.1.0").summary_lines(),
            "platform   sim, xrdma-sim 0.1.0\n"
        );
        assert_eq!(
            verbs().one_line(),
            "verbs on host h1 (kernel 6.1.0-18-amd64), rxe0 port 1 (fw 0.0.0, GID 1 \
             ::ffff:10.0.2.15, Ethernet, MTU 1024 B)"
        );
        let mut e = verbs();
        e.host_name = None;
        e.device = Some(DeviceInfo::default());
        e.ranks = Some(vec![
            RankPlace {
                rank: 0,
                host_name: Some("h1".into()),
                address: Some("10.0.0.1:18515".into()),
                connected_from: None,
                hosts: vec![0],
                device: None,
                device_counters: None,
            },
            RankPlace {
                rank: 1,
                host_name: None,
                address: Some("10.0.0.2:18515".into()),
                connected_from: Some("10.0.0.2:40112".into()),
                hosts: vec![1, 2],
                device: None,
                device_counters: None,
            },
        ]);
        assert_eq!(
            e.summary_lines(),
            "platform   verbs on host ? (kernel 6.1.0-18-amd64), ? port ? (fw ?, GID ? ?, ?, \
             MTU ?)\n           rank 0 on host h1 at 10.0.0.1:18515: scenario hosts 0\n           \
             rank 1 on host ? at 10.0.0.2:18515 (connected from 10.0.0.2:40112): scenario \
             hosts 1, 2\n"
        );
    }

    fn place(rank: u32, host: &str, guid: Option<&str>) -> RankPlace {
        RankPlace {
            rank,
            host_name: Some(host.into()),
            address: None,
            connected_from: (rank > 0).then(|| "10.0.0.2:40112".into()),
            hosts: vec![rank],
            device: Some(DeviceInfo {
                name: Some("rxe0".into()),
                node_guid: guid.map(str::to_string),
                ..DeviceInfo::default()
            }),
            device_counters: Some(BTreeMap::from([("sent_pkts".to_string(), 10)])),
        }
    }

    #[test]
    fn a_device_is_its_host_and_guid_or_name() {
        let a = place(0, "a", Some("5054:00ff:fe00:0001"));
        let b = place(1, "b", Some("5054:00ff:fe00:0001"));
        assert_ne!(
            a.device_key(),
            b.device_key(),
            "one GUID on two hosts: two devices"
        );
        let a1 = place(1, "a", Some("5054:00ff:fe00:0001"));
        assert_eq!(a.device_key(), a1.device_key(), "two ranks on one device");
        let nameless = place(2, "a", None);
        assert_eq!(
            nameless.device_key().unwrap().device.as_deref(),
            Some("rxe0"),
            "the name where the GUID is unknown"
        );
        let mut none = place(3, "a", None);
        none.device = None;
        assert_eq!(none.device_key(), None);
    }

    #[test]
    fn the_device_scope_says_what_the_counters_cover() {
        let mut e = verbs();
        assert_eq!(e.device_scope(), None, "a single-process run");
        e.ranks = Some(vec![place(0, "a", Some("g1")), place(1, "b", Some("g2"))]);
        assert_eq!(
            e.device_scope().as_deref(),
            Some("summed over 2 devices (rank 0: rxe0 on a, rank 1: rxe0 on b)")
        );
        e.ranks = Some(vec![
            place(0, "a", Some("g1")),
            place(1, "a", Some("g1")),
            place(2, "b", Some("g2")),
        ]);
        assert_eq!(
            e.device_scope().as_deref(),
            Some("summed over 2 devices (rank 0+1: rxe0 on a, rank 2: rxe0 on b)")
        );
        let mut nameless = vec![place(0, "a", Some("g1")), place(1, "b", Some("g2"))];
        (nameless[0].host_name, nameless[1].host_name) = (None, None);
        e.ranks = Some(nameless);
        assert_eq!(
            e.device_scope().as_deref(),
            Some("summed over 2 devices (rank 0: rxe0 GUID g1, rank 1: rxe0 GUID g2)")
        );
        e.ranks = Some(vec![place(0, "a", Some("g1")), place(1, "a", Some("g1"))]);
        assert_eq!(
            e.device_scope().as_deref(),
            Some("of 1 device, shared by ranks 0, 1 (counted once)")
        );
        let mut silent = place(1, "b", Some("g2"));
        silent.device = None;
        silent.device_counters = None;
        e.ranks = Some(vec![place(0, "a", Some("g1")), silent]);
        assert_eq!(
            e.device_scope().as_deref(),
            Some("not summed: rank 1 sent no device counters (each rank's are in result.json)")
        );
        // A rank that never connected (no senders) has no device and is no gap.
        let mut idle = place(1, "b", None);
        (idle.device, idle.connected_from) = (None, None);
        e.ranks = Some(vec![place(0, "a", Some("g1")), idle]);
        assert_eq!(e.device_scope(), None);
    }

    #[test]
    fn unknown_fields_are_null_and_sections_that_do_not_apply_absent() {
        let v = serde_json::to_value(Environment::sim("0.1.0")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "backend": "sim",
                "simulator-version": "0.1.0",
                "host-name": null,
                "kernel": null
            })
        );
        let mut e = verbs();
        e.device.as_mut().unwrap().fw_ver = None;
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["device"]["fw-ver"], serde_json::Value::Null);
        assert_eq!(v["device"]["node-guid"], "b208:75ff:fe5f:b85e");
        assert_eq!(v["device-counters"]["sent_pkts"], 120);
        assert!(v.get("ranks").is_none() && v.get("simulator-version").is_none());
        let back: Environment = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        // A partial section (fields missing) reads with them unknown.
        let partial: Environment =
            serde_json::from_str(r#"{"backend":"verbs","device":{"name":"mlx5_0"}}"#).unwrap();
        assert_eq!(partial.host_name, None);
        assert_eq!(partial.device.unwrap().name.as_deref(), Some("mlx5_0"));
    }
}
