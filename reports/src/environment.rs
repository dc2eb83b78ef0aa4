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
    /// The RDMA device, on the verbs backend; absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
    /// The device's own counters over the run, by the device's names (the files of
    /// `ports/N/hw_counters/` and `ports/N/counters/` in sysfs): each the value at the end
    /// minus the value at the start. A counter the device lacks is absent, never 0; one that
    /// went backwards (reset or wrapped) is left out. Absent on the simulator.
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
            },
            RankPlace {
                rank: 1,
                host_name: None,
                address: Some("10.0.0.2:18515".into()),
                connected_from: Some("10.0.0.2:40112".into()),
                hosts: vec![1, 2],
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
