//! The port's CNP count as a congestion signal ([`xrdma::Capabilities::cnp_per_port`]).
//!
//! No verbs device reports CNPs per QP. mlx5 counts, per port, the CNPs its reaction point
//! handled (`hw_counters/rp_cnp_handled`: CNPs received for the QPs this port sends on,
//! `drivers/infiniband/hw/mlx5/counters.c`; NVIDIA, "Understanding mlx5 Linux Counters");
//! rxe has no such counter (`drivers/infiniband/sw/rxe/rxe_hw_counters.c`). [`PortCnps`]
//! samples that counter and hands out its rise; the endpoint takes a rise as an ECN echo for
//! every connection with bytes in flight ([`xrdma::Endpoint::handle_port_congestion`]).
//!
//! The kernel caches a device's `hw_counters` for `hw_counters/lifespan` milliseconds
//! (default 10, `RDMA_HW_STATS_DEFAULT_LIFESPAN` in `include/rdma/ib_verbs.h`; writable), so
//! reading more often only returns the cached value and costs a system call: the counter is
//! read once per lifespan (at least 1 ms). The signal therefore lags by up to one lifespan.

use std::path::{Path, PathBuf};
use xrdma::{Span, Time};

/// The counter of CNPs a port's reaction point handled (mlx5).
pub const RP_CNP_HANDLED: &str = "rp_cnp_handled";

/// The kernel's default cache lifetime of `hw_counters`, ms (`RDMA_HW_STATS_DEFAULT_LIFESPAN`).
pub const DEFAULT_LIFESPAN_MS: u64 = 10;

/// The shortest interval between two reads of the counter, whatever the lifespan says.
pub const MIN_INTERVAL: Span = Span::from_ms(1);

/// A port's `rp_cnp_handled`, read at most once per interval.
#[derive(Debug)]
pub struct PortCnps {
    path: PathBuf,
    last: u64,
    every: Span,
    next: Option<Time>,
}

/// A whole number in the file at `path`, if it reads as one.
fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

impl PortCnps {
    /// The counter of port `port` of device `dev` under the sysfs root `ib_root` (normally
    /// [`crate::device::IB_SYSFS_ROOT`]; a test passes a directory of its own), its current
    /// value taken as the baseline; `None` when the device has no such counter (rxe) or it
    /// does not read as a number. Read every `hw_counters/lifespan` ms
    /// ([`DEFAULT_LIFESPAN_MS`] when that file is missing), at least every [`MIN_INTERVAL`].
    pub fn open(ib_root: &Path, dev: &str, port: u8) -> Option<PortCnps> {
        let dir = ib_root
            .join(dev)
            .join("ports")
            .join(port.to_string())
            .join("hw_counters");
        let path = dir.join(RP_CNP_HANDLED);
        let last = read_u64(&path)?;
        let lifespan = read_u64(&dir.join("lifespan")).unwrap_or(DEFAULT_LIFESPAN_MS);
        Some(PortCnps {
            path,
            last,
            every: Span::from_ms(lifespan).max(MIN_INTERVAL),
            next: None,
        })
    }

    /// How often the counter is read.
    pub fn interval(&self) -> Span {
        self.every
    }

    /// CNPs handled since the last read, when `now` is at least one interval after it (the
    /// first call reads at once); 0 otherwise, and 0 when the counter went backwards (reset)
    /// or cannot be read (it then becomes the new baseline once it reads again).
    pub fn sample(&mut self, now: Time) -> u64 {
        if self.next.is_some_and(|n| now < n) {
            return 0;
        }
        self.next = Some(now + self.every);
        let Some(v) = read_u64(&self.path) else {
            return 0;
        };
        let rise = v.saturating_sub(self.last);
        self.last = v;
        rise
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xrdma-cnps-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("mlx5_0/ports/1/hw_counters")).expect("scratch dir");
        d
    }

    fn set(root: &Path, file: &str, v: &str) {
        std::fs::write(root.join("mlx5_0/ports/1/hw_counters").join(file), v).expect("write");
    }

    fn at_ms(ms: u64) -> Time {
        Time::ZERO + Span::from_ms(ms)
    }

    #[test]
    fn no_counter_no_signal() {
        // rxe's hw_counters have no rp_cnp_handled.
        let root = scratch("none");
        set(&root, "sent_pkts", "120\n");
        assert!(PortCnps::open(&root, "mlx5_0", 1).is_none());
        assert!(PortCnps::open(&root, "mlx5_0", 2).is_none(), "no such port");
        set(&root, RP_CNP_HANDLED, "n/a\n");
        assert!(PortCnps::open(&root, "mlx5_0", 1).is_none(), "not a number");
    }

    #[test]
    fn rises_are_handed_out_once_per_lifespan() {
        let root = scratch("rises");
        set(&root, RP_CNP_HANDLED, "40\n");
        let mut c = PortCnps::open(&root, "mlx5_0", 1).expect("the counter");
        assert_eq!(c.interval(), Span::from_ms(DEFAULT_LIFESPAN_MS));
        assert_eq!(c.sample(at_ms(0)), 0, "the baseline is the value at open");
        set(&root, RP_CNP_HANDLED, "43\n");
        assert_eq!(c.sample(at_ms(5)), 0, "within the lifespan: not read");
        assert_eq!(c.sample(at_ms(10)), 3);
        assert_eq!(c.sample(at_ms(25)), 0, "no rise");
        set(&root, RP_CNP_HANDLED, "50\n");
        assert_eq!(c.sample(at_ms(30)), 0, "next read at 35 ms");
        assert_eq!(c.sample(at_ms(35)), 7);
        // A reset counter: no rise, and the new value is the baseline.
        set(&root, RP_CNP_HANDLED, "2\n");
        assert_eq!(c.sample(at_ms(50)), 0);
        set(&root, RP_CNP_HANDLED, "6\n");
        assert_eq!(c.sample(at_ms(60)), 4);
    }

    #[test]
    fn the_interval_follows_the_lifespan_file_and_has_a_floor() {
        let root = scratch("lifespan");
        set(&root, RP_CNP_HANDLED, "0\n");
        set(&root, "lifespan", "3\n");
        assert_eq!(
            PortCnps::open(&root, "mlx5_0", 1)
                .expect("counter")
                .interval(),
            Span::from_ms(3)
        );
        set(&root, "lifespan", "0\n");
        assert_eq!(
            PortCnps::open(&root, "mlx5_0", 1)
                .expect("counter")
                .interval(),
            MIN_INTERVAL
        );
    }
}
