//! Where a run happens, for the result's `environment` key ([`rep::Environment`]): the
//! machine's host name and kernel (from procfs), an RDMA device's firmware, node GUID and
//! driver (from sysfs), and where each rank of a run across processes
//! ran. Whatever cannot be read is `None`, never a guessed value; every path root is a
//! parameter so tests can point it at a directory of their own.

use std::net::SocketAddr;
use std::path::Path;

use xrdma_reports as rep;
use xrdma_scenario::VerbsSection;

/// Where the kernel publishes its host name and release (`/proc/sys/kernel`).
pub const PROC_KERNEL: &str = "/proc/sys/kernel";

/// The trimmed text of `path`, `None` when it cannot be read or is empty.
fn read_trimmed(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// The host name the kernel reports while none was set (its `UTS_NODENAME` default).
const UNSET_HOST_NAME: &str = "(none)";

/// The host name under the procfs directory `proc_kernel` (normally [`PROC_KERNEL`]);
/// `None` when it cannot be read or was never set (the kernel then reports `(none)`).
pub fn host_name_at(proc_kernel: &Path) -> Option<String> {
    read_trimmed(&proc_kernel.join("hostname")).filter(|h| h != UNSET_HOST_NAME)
}

/// The kernel release (`uname -r`) under `proc_kernel` (normally [`PROC_KERNEL`]).
pub fn kernel_at(proc_kernel: &Path) -> Option<String> {
    read_trimmed(&proc_kernel.join("osrelease"))
}

/// This machine's host name, `None` when `/proc/sys/kernel/hostname` cannot be read.
pub fn host_name() -> Option<String> {
    host_name_at(Path::new(PROC_KERNEL))
}

/// What sysfs says of RDMA device `device` under `root` (normally
/// [`crate::device_counters::SYSFS_ROOT`]): the firmware version (`fw_ver`), the node GUID
/// (`node_guid`) and the driver of its parent device (the last part of the `device/driver`
/// link; a software device such as rxe has none). The port, GID and MTU fields are left
/// `None` for the caller, which has them from the verbs queries.
pub fn sysfs_device(root: &Path, device: &str) -> rep::DeviceInfo {
    let dir = root.join(device);
    let driver = std::fs::read_link(dir.join("device").join("driver"))
        .ok()
        .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()));
    rep::DeviceInfo {
        name: Some(device.to_string()),
        driver,
        fw_ver: read_trimmed(&dir.join("fw_ver")),
        node_guid: read_trimmed(&dir.join("node_guid")),
        ..rep::DeviceInfo::default()
    }
}

/// The environment of a verbs run on this machine: host name and kernel from procfs,
/// `device` as described, and the device's counter differences over the run.
pub fn verbs(
    device: rep::DeviceInfo,
    counters: crate::device_counters::Snapshot,
) -> rep::Environment {
    let proc_kernel = Path::new(PROC_KERNEL);
    rep::Environment {
        backend: rep::Backend::Verbs,
        simulator_version: None,
        host_name: host_name_at(proc_kernel),
        kernel: kernel_at(proc_kernel),
        device: Some(device),
        device_counters: Some(counters),
        ranks: None,
    }
}

/// Where a run on the kernel-socket backend happened: this machine, its kernel, no device.
pub fn sockets() -> rep::Environment {
    let proc_kernel = Path::new(PROC_KERNEL);
    rep::Environment {
        backend: rep::Backend::Sockets,
        simulator_version: None,
        host_name: host_name_at(proc_kernel),
        kernel: kernel_at(proc_kernel),
        device: None,
        device_counters: None,
        ranks: None,
    }
}

/// A peer rank as the receiver's rank saw it in the bootstrap: its rank, the host name its
/// hello named, and the address its connection came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSeen {
    /// The peer's rank.
    pub rank: u32,
    /// The host name in its hello, when it gave one.
    pub host_name: Option<String>,
    /// The remote address of its bootstrap connection.
    pub from: SocketAddr,
}

/// Where every rank of `section.ranks` ran, in rank order: `own` (this process's rank) on
/// this machine's `own_host`, each of `peers` as seen in the bootstrap; a rank that never
/// connected (it runs no sender) has only its scenario address and hosts.
pub fn ranks(
    section: &VerbsSection,
    own: u32,
    own_host: Option<String>,
    peers: &[PeerSeen],
) -> Vec<rep::RankPlace> {
    section
        .ranks
        .iter()
        .enumerate()
        .map(|(r, spec)| {
            let r = r as u32;
            let seen = peers.iter().find(|p| p.rank == r);
            rep::RankPlace {
                rank: r,
                host_name: if r == own {
                    own_host.clone()
                } else {
                    seen.and_then(|p| p.host_name.clone())
                },
                address: Some(spec.address.to_string()),
                connected_from: seen.map(|p| p.from.to_string()),
                hosts: spec.hosts.clone(),
                device: None,
                device_counters: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xrdma-env-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn procfs_and_sysfs_fields_read_or_stay_unknown() {
        let d = scratch("fs");
        let proc_kernel = d.join("proc");
        std::fs::create_dir_all(&proc_kernel).unwrap();
        assert_eq!(host_name_at(&proc_kernel), None);
        std::fs::write(proc_kernel.join("hostname"), "node7\n").unwrap();
        std::fs::write(proc_kernel.join("osrelease"), "6.1.0-18-amd64\n").unwrap();
        assert_eq!(host_name_at(&proc_kernel).as_deref(), Some("node7"));
        assert_eq!(kernel_at(&proc_kernel).as_deref(), Some("6.1.0-18-amd64"));
        std::fs::write(proc_kernel.join("hostname"), "\n").unwrap();
        assert_eq!(host_name_at(&proc_kernel), None, "empty is unknown");
        // A machine that never set its host name (a bare guest): the kernel says `(none)`.
        std::fs::write(proc_kernel.join("hostname"), "(none)\n").unwrap();
        assert_eq!(
            host_name_at(&proc_kernel),
            None,
            "the kernel's placeholder is unknown"
        );

        let sys = d.join("sys");
        let rxe = sys.join("rxe0");
        std::fs::create_dir_all(&rxe).unwrap();
        std::fs::write(rxe.join("fw_ver"), "0.0.0\n").unwrap();
        std::fs::write(rxe.join("node_guid"), "b208:75ff:fe5f:b85e\n").unwrap();
        let info = sysfs_device(&sys, "rxe0");
        assert_eq!(info.name.as_deref(), Some("rxe0"));
        assert_eq!(info.fw_ver.as_deref(), Some("0.0.0"));
        assert_eq!(info.node_guid.as_deref(), Some("b208:75ff:fe5f:b85e"));
        assert_eq!(info.driver, None, "a software device has no parent driver");
        assert_eq!((info.port, info.gid, info.active_mtu), (None, None, None));

        let mlx = sys.join("mlx5_0");
        let pci = d.join("pci/0000:3b:00.0");
        let drv = d.join("drivers/mlx5_core");
        std::fs::create_dir_all(&pci).unwrap();
        std::fs::create_dir_all(&drv).unwrap();
        std::os::unix::fs::symlink(&drv, pci.join("driver")).unwrap();
        std::fs::create_dir_all(&mlx).unwrap();
        std::os::unix::fs::symlink(&pci, mlx.join("device")).unwrap();
        let info = sysfs_device(&sys, "mlx5_0");
        assert_eq!(info.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(info.fw_ver, None);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn ranks_name_their_hosts_addresses_and_scenario_hosts() {
        let text = "name: t\nworkload:\n  incast: { senders: 3, receiver: 0, messages: [ { size: 4KiB } ] }\nverbs:\n  ranks:\n    - { address: \"10.0.0.1:18515\", hosts: [0, 3] }\n    - { address: \"10.0.0.2:18515\", hosts: [1, 2] }\n";
        let sc = xrdma_scenario::parse(text, Path::new("t.yaml")).unwrap();
        let section = sc.verbs.unwrap();
        let peers = [PeerSeen {
            rank: 1,
            host_name: Some("node2".into()),
            from: "10.0.0.2:40112".parse().unwrap(),
        }];
        let r = ranks(&section, 0, Some("node1".into()), &peers);
        assert_eq!(
            r,
            vec![
                rep::RankPlace {
                    rank: 0,
                    host_name: Some("node1".into()),
                    address: Some("10.0.0.1:18515".into()),
                    connected_from: None,
                    hosts: vec![0, 3],
                    device: None,
                    device_counters: None,
                },
                rep::RankPlace {
                    rank: 1,
                    host_name: Some("node2".into()),
                    address: Some("10.0.0.2:18515".into()),
                    connected_from: Some("10.0.0.2:40112".into()),
                    hosts: vec![1, 2],
                    device: None,
                    device_counters: None,
                },
            ]
        );
        // A peer that never connected: where the scenario puts it, nothing more.
        let r = ranks(&section, 0, None, &[]);
        assert_eq!(
            (r[1].host_name.clone(), r[1].connected_from.clone()),
            (None, None)
        );
        assert_eq!(r[0].host_name, None);
    }
}
