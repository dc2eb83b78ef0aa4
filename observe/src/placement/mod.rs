//! Where a thread runs, beside the RDMA device it uses: the CPU it runs on, the CPUs it may
//! run on, that CPU's NUMA node and the device's (Linux procfs and sysfs), and whether the two
//! nodes differ. A worker on the node far from its NIC pays every doorbell, CQ poll and DMA'd
//! buffer across the socket interconnect: the misplacement XR-Stat found in PolarDB (X-RDMA,
//! Alibaba's RDMA middleware, IEEE CLUSTER 2019). [`pin`] moves a thread where it belongs.
//!
//! Every field is `None` where the machine does not say: a virtual machine's NIC reports NUMA
//! node -1 (none), a kernel without NUMA has no `nodeN` entries, a simulated fabric has no
//! device.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The calling thread's own procfs directory.
pub const THREAD_SELF: &str = "/proc/thread-self";
/// Where sysfs lists the CPUs, each with a `nodeN` entry for its NUMA node.
pub const CPU_ROOT: &str = "/sys/devices/system/cpu";

/// Where one thread runs and where its RDMA device sits (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Placement {
    /// The thread's id (Linux TID).
    pub tid: Option<u32>,
    /// The CPU it ran on last (`/proc/thread-self/stat`, field 39).
    pub cpu: Option<u32>,
    /// The CPUs it may run on, as Linux lists them (`Cpus_allowed_list`: `0-3,8`).
    pub cpus_allowed: Option<String>,
    /// The NUMA node of [`Placement::cpu`].
    pub numa_node: Option<u32>,
    /// The RDMA device the thread's fabric uses (`rxe0`, `mlx5_0`).
    pub device: Option<String>,
    /// The device's NUMA node (`/sys/class/infiniband/DEV/device/numa_node`; -1 there is
    /// `None`).
    pub device_numa_node: Option<u32>,
    /// The thread runs on another NUMA node than its device: `None` unless both are known.
    pub far_node: Option<bool>,
}

impl Placement {
    /// The calling thread's placement, beside `device` (an RDMA device under
    /// [`crate::device_counters::SYSFS_ROOT`]) when it uses one.
    pub fn here(device: Option<&str>) -> Placement {
        Placement::read(
            Path::new(THREAD_SELF),
            Path::new(CPU_ROOT),
            Path::new(crate::device_counters::SYSFS_ROOT),
            device,
        )
    }

    /// The placement as read from a thread's procfs directory `thread`, the CPUs under
    /// `cpus` and the RDMA devices under `devices` (the roots [`Placement::here`] uses; a
    /// test hands others). What cannot be read is `None`.
    pub fn read(thread: &Path, cpus: &Path, devices: &Path, device: Option<&str>) -> Placement {
        let stat = std::fs::read_to_string(thread.join("stat")).ok();
        let (tid, cpu) = stat.as_deref().map_or((None, None), parse_stat);
        let cpus_allowed = std::fs::read_to_string(thread.join("status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .map(|v| v.trim().to_string())
            });
        let numa_node = cpu.and_then(|c| cpu_node(cpus, c));
        let device_numa_node = device.and_then(|d| {
            let text = std::fs::read_to_string(devices.join(d).join("device/numa_node")).ok()?;
            u32::try_from(text.trim().parse::<i64>().ok()?).ok()
        });
        let far_node = match (numa_node, device_numa_node) {
            (Some(a), Some(b)) => Some(a != b),
            _ => None,
        };
        Placement {
            tid,
            cpu,
            cpus_allowed,
            numa_node,
            device: device.map(str::to_string),
            device_numa_node,
            far_node,
        }
    }
}

/// The thread id (field 1) and last CPU (field 39) of a `/proc/PID/task/TID/stat` line. The
/// command name (field 2) is in parentheses and may hold spaces and parentheses itself, so
/// the fields after it are counted from its last `)`.
fn parse_stat(line: &str) -> (Option<u32>, Option<u32>) {
    let tid = line.split_whitespace().next().and_then(|t| t.parse().ok());
    let cpu = line
        .rfind(')')
        .and_then(|i| line[i + 1..].split_whitespace().nth(39 - 3))
        .and_then(|c| c.parse().ok());
    (tid, cpu)
}

/// The NUMA node of CPU `cpu`: the `nodeN` entry of its sysfs directory under `cpus`.
fn cpu_node(cpus: &Path, cpu: u32) -> Option<u32> {
    std::fs::read_dir(cpus.join(format!("cpu{cpu}")))
        .ok()?
        .filter_map(Result::ok)
        .find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
}

/// Why [`pin`] could not move the thread.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// No CPU was named.
    #[error("name at least one CPU to pin to")]
    NoCpu,
    /// A CPU number beyond what the affinity mask holds.
    #[error("CPU {cpu} is beyond the {max} CPUs an affinity mask holds")]
    OutOfRange {
        /// The CPU.
        cpu: usize,
        /// How many CPUs a mask holds.
        max: usize,
    },
    /// The kernel refused (`sched_setaffinity(2)`: none of the CPUs is online or allowed to
    /// this process, `EINVAL`; another user's thread, `EPERM`).
    #[error("sched_setaffinity to CPUs {cpus:?}: {source}")]
    Refused {
        /// The CPUs asked for.
        cpus: Vec<usize>,
        /// The kernel's error.
        source: nix::Error,
    },
}

/// Restrict the calling thread to `cpus` (`sched_setaffinity(2)`); it moves at once if it
/// runs elsewhere. Threads it starts afterwards inherit the mask.
///
/// # Errors
/// [`PinError`]: no CPU named, a CPU number too large for the mask, or the kernel refused.
pub fn pin(cpus: &[usize]) -> Result<(), PinError> {
    use nix::sched::{sched_setaffinity, CpuSet};
    if cpus.is_empty() {
        return Err(PinError::NoCpu);
    }
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).map_err(|_| PinError::OutOfRange {
            cpu,
            max: CpuSet::count(),
        })?;
    }
    sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|source| PinError::Refused {
        cpus: cpus.to_vec(),
        source,
    })
}

#[cfg(test)]
mod tests;
