//! The hosts' CPU time over a run ([`HostCpuTime`], `host-cpu` in `result.json`): the column
//! that compares what each message stack costs the hosts, per message and per GB.

use serde::{Deserialize, Serialize};

/// Where a run's CPU time was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuSource {
    /// The simulator's host model: the costs it charged each host (its turns and calls, the
    /// application's messages, the kernel's TCP work), as `xrdma_sim`'s `HostModel` states
    /// them.
    HostModel,
    /// The real CPU time of the thread that ran every host of a single-process run, user
    /// and kernel (`CLOCK_THREAD_CPUTIME_ID`): the kernel's TCP work done in its system calls
    /// and the interrupts taken while it ran included, its sleeps excluded.
    Thread,
}

impl std::fmt::Display for CpuSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CpuSource::HostModel => "the host model's charged costs",
            CpuSource::Thread => "the running thread's CPU time",
        })
    }
}

/// The CPU time each host spent on a run. Absent (`null`) where the backend cannot observe
/// it: the simulator's ideal host, which charges nothing, and real hosts for now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct HostCpuTime {
    /// Where the figures come from.
    pub source: CpuSource,
    /// Every host's CPU time together, ps.
    pub total_ps: u64,
    /// Each host's CPU time, ps, in host order; `None` where hosts share a process and
    /// their time cannot be told apart.
    pub per_host_ps: Option<Vec<u64>>,
}

impl HostCpuTime {
    /// A record of each host's time, in host order, with their total.
    pub fn of_hosts(source: CpuSource, per_host_ps: Vec<u64>) -> HostCpuTime {
        HostCpuTime {
            source,
            total_ps: per_host_ps.iter().sum(),
            per_host_ps: Some(per_host_ps),
        }
    }

    /// The hosts' CPU time per completed message, ps, over `completed` messages (all hosts'
    /// time, an echo's request and response as one); `None` when none completed.
    pub fn per_message_ps(&self, completed: u64) -> Option<f64> {
        (completed > 0).then(|| self.total_ps as f64 / completed as f64)
    }

    /// The hosts' CPU time per 10^9 payload bytes, ps, over `payload_bytes` delivered
    /// (request and response for an echo); `None` when nothing was delivered.
    pub fn per_gb_ps(&self, payload_bytes: u128) -> Option<f64> {
        (payload_bytes > 0).then(|| self.total_ps as f64 * 1e9 / payload_bytes as f64)
    }

    /// The summary's line for `completed` messages carrying `payload_bytes`: per message and
    /// per GB, and the busiest host's time.
    pub fn summary_line(&self, completed: u64, payload_bytes: u128) -> String {
        let per_msg = self
            .per_message_ps(completed)
            .map_or_else(|| "-".to_string(), |p| format!("{:.3} µs", p / 1e6));
        let per_gb = self.per_gb_ps(payload_bytes).map_or_else(
            || "-".to_string(),
            |p| {
                if p >= 1e12 {
                    format!("{:.3} s", p / 1e12)
                } else {
                    format!("{:.3} ms", p / 1e9)
                }
            },
        );
        let busiest = self
            .per_host_ps
            .iter()
            .flatten()
            .enumerate()
            .max_by_key(|&(h, &p)| (p, std::cmp::Reverse(h)));
        let busiest = match busiest {
            Some((h, &p)) => format!("; busiest host {h}: {:.3} ms", p as f64 / 1e9),
            None => String::new(),
        };
        format!(
            "host CPU   {per_msg} per message, {per_gb} per GB (10^9 B), all hosts ({}){busiest}",
            self.source
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_message_and_per_gb_divide_the_total_by_what_completed() {
        let cpu = HostCpuTime::of_hosts(CpuSource::HostModel, vec![3_000_000, 1_000_000]);
        assert_eq!(cpu.total_ps, 4_000_000);
        assert_eq!(cpu.per_message_ps(2), Some(2_000_000.0));
        // 4 µs for 4 000 bytes: 1 s per 10^9 bytes.
        assert_eq!(cpu.per_gb_ps(4_000), Some(1e12));
        let line = cpu.summary_line(2, 4_000);
        assert!(
            line.contains("2.000 µs per message")
                && line.contains("1.000 s per GB")
                && line.contains("busiest host 0: 0.003 ms"),
            "{line}"
        );
        assert_eq!(cpu.per_message_ps(0), None);
        assert_eq!(cpu.per_gb_ps(0), None);
        let small = HostCpuTime::of_hosts(CpuSource::HostModel, vec![4_000]);
        assert!(small.summary_line(2, 4_000).contains("1.000 ms per GB"));
    }
}
