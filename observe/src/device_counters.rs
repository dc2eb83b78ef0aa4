//! An RDMA device's own counters, read by name from sysfs, and the one table that says which
//! of a driver's counters stands for which network counter of a result.
//!
//! The kernel exposes a port's counters as one file per counter:
//! `SYSFS/DEV/ports/N/hw_counters/NAME` (the driver's `rdma_hw_stats`, kernel
//! `drivers/infiniband/core/sysfs.c`) and, on devices that answer performance-management MADs
//! (mlx5, not rxe), `SYSFS/DEV/ports/N/counters/NAME` (the IB PMA PortCounters). A
//! [`Snapshot`] holds every such file that reads as a whole number, keyed by its name
//! (`hw_counters/` files by their bare name, `counters/` files as `counters/NAME`, so the
//! two sets never collide); the run's counters are the differences of two snapshots
//! ([`delta`]).
//!
//! [`TABLE`] maps each result counter to the names per driver. Sources: rxe —
//! `drivers/infiniband/sw/rxe/rxe_hw_counters.c` (the names) and where `rxe_resp.c` /
//! `rxe_comp.c` / `rxe_net.c` increment them; mlx5 — `drivers/infiniband/hw/mlx5/counters.c`
//! (the names) and NVIDIA's "Understanding mlx5 Linux Counters" (what they count). A result
//! counter no driver name stands for is `None`, never 0.

use std::collections::BTreeMap;
use std::path::Path;

use xrdma_reports as rep;

/// Where the kernel publishes RDMA devices.
pub const SYSFS_ROOT: &str = "/sys/class/infiniband";

/// Files of `hw_counters/` that are settings, not counters (the stats cache lifetime, ms).
const NOT_COUNTERS: [&str; 1] = ["lifespan"];

/// Every counter of a device port that reads as a whole number, by name (see the module
/// docs for the keys).
pub type Snapshot = BTreeMap<String, u64>;

/// A network counter of the result ([`rep::NetworkCounters`]) that a device counter can stand
/// for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultCounter {
    /// `data-packets`.
    DataPackets,
    /// `ecn-marks`.
    EcnMarks,
    /// `cnps`.
    Cnps,
    /// `retransmit-timeouts`.
    RetransmitTimeouts,
    /// `seq-naks`.
    SeqNaks,
    /// `rnr-naks`.
    RnrNaks,
}

/// One driver's counter for a result counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverCounter {
    /// The kernel driver (`rxe`, `mlx5`).
    pub driver: &'static str,
    /// The key in a [`Snapshot`]: the file name under `hw_counters/`, or `counters/NAME`.
    pub name: &'static str,
    /// What the driver counts, and on which side of the connection.
    pub counts: &'static str,
}

/// A result counter and the driver counters that stand for it, first present wins (the
/// names of the drivers never overlap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The result counter.
    pub counter: ResultCounter,
    /// Its counters per driver; empty where no driver counts it.
    pub names: &'static [DriverCounter],
}

/// Which device counter stands for which result counter, per driver (see the module docs
/// for the sources). On a single-process run both sides of every QP are on the one device,
/// so a count taken at the requester equals the responder's; on a run across processes the
/// counters are summed over the ranks' distinct devices (`xrdma_cluster::rank::devices::merge`),
/// so both sides of a QP count once each.
pub const TABLE: [Mapping; 6] = [
    Mapping {
        counter: ResultCounter::DataPackets,
        names: &[
            DriverCounter {
                driver: "rxe",
                name: "sent_pkts",
                counts: "every packet the device sent (rxe_xmit_packet), ACKs and NAKs included",
            },
            DriverCounter {
                driver: "mlx5",
                name: "counters/port_xmit_packets",
                counts: "every packet the port sent (IB PMA PortXmitPkts), ACKs and NAKs included",
            },
        ],
    },
    Mapping {
        counter: ResultCounter::EcnMarks,
        names: &[DriverCounter {
            driver: "mlx5",
            name: "np_ecn_marked_roce_packets",
            counts: "RoCEv2 packets that arrived CE-marked (the notification point)",
        }],
    },
    Mapping {
        counter: ResultCounter::Cnps,
        names: &[DriverCounter {
            driver: "mlx5",
            name: "np_cnp_sent",
            counts: "CNPs the notification point sent for CE-marked packets",
        }],
    },
    Mapping {
        counter: ResultCounter::RetransmitTimeouts,
        // rxe's completer_retry_err counts retries started by a timeout and by a
        // sequence NAK alike, so it stands for neither.
        names: &[DriverCounter {
            driver: "mlx5",
            name: "local_ack_timeout_err",
            counts: "local ACK timer expirations at the requester (RC), retry limit not exceeded",
        }],
    },
    Mapping {
        counter: ResultCounter::SeqNaks,
        names: &[
            DriverCounter {
                driver: "rxe",
                name: "out_of_seq_request",
                counts: "PSN sequence-error NAKs the responder sent (one per gap, check_psn)",
            },
            DriverCounter {
                driver: "mlx5",
                name: "packet_seq_err",
                counts: "PSN sequence-error NAKs the requester received",
            },
        ],
    },
    Mapping {
        counter: ResultCounter::RnrNaks,
        names: &[
            DriverCounter {
                driver: "rxe",
                name: "send_rnr_err",
                counts: "RNR NAKs the responder sent (no receive WR posted)",
            },
            DriverCounter {
                driver: "mlx5",
                name: "rnr_nak_retry_err",
                counts: "RNR NAKs the requester received, retry limit not exceeded",
            },
        ],
    },
];

/// Reads every counter of port `port` of device `device` under the sysfs root `root`
/// (normally [`SYSFS_ROOT`]; a test passes a directory of its own). A file that is missing,
/// unreadable or not a whole number is left out; a device without counters gives an empty
/// snapshot.
pub fn read_snapshot(root: &Path, device: &str, port: u8) -> Snapshot {
    let port_dir = root.join(device).join("ports").join(port.to_string());
    let mut snap = Snapshot::new();
    for (sub, prefix) in [("hw_counters", ""), ("counters", "counters/")] {
        let Ok(entries) = std::fs::read_dir(port_dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if NOT_COUNTERS.contains(&name.as_str()) {
                continue;
            }
            let value = std::fs::read_to_string(e.path())
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok());
            if let Some(v) = value {
                snap.insert(format!("{prefix}{name}"), v);
            }
        }
    }
    snap
}

/// `end − start` for every counter in both snapshots. A counter that went backwards (reset,
/// or a narrow PMA counter that wrapped) is left out: its difference is not known.
pub fn delta(start: &Snapshot, end: &Snapshot) -> Snapshot {
    end.iter()
        .filter_map(|(k, &now)| {
            let was = *start.get(k)?;
            Some((k.clone(), now.checked_sub(was)?))
        })
        .collect()
}

/// The device counter standing for `counter` in `deltas` and its driver: the first of the
/// table's names for it that `deltas` has.
pub fn lookup(deltas: &Snapshot, counter: ResultCounter) -> Option<(DriverCounter, u64)> {
    TABLE
        .iter()
        .filter(|m| m.counter == counter)
        .flat_map(|m| m.names.iter())
        .find_map(|d| deltas.get(d.name).map(|&v| (*d, v)))
}

/// The result's network counters from a device's counter differences: each counter of
/// [`TABLE`] the device has, the rest `None` (the switches' counters — PFC, drops, buffers —
/// are never observable from a host).
pub fn network(deltas: &Snapshot) -> rep::NetworkCounters {
    let get = |c| lookup(deltas, c).map(|(_, v)| v);
    rep::NetworkCounters {
        data_packets: get(ResultCounter::DataPackets),
        ecn_marks: get(ResultCounter::EcnMarks),
        cnps: get(ResultCounter::Cnps),
        retransmit_timeouts: get(ResultCounter::RetransmitTimeouts),
        // A device counts its timeouts but cannot tell which were spurious.
        spurious_timeouts: None,
        seq_naks: get(ResultCounter::SeqNaks),
        rnr_naks: get(ResultCounter::RnrNaks),
        ..rep::NetworkCounters::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fake sysfs tree under the system's temporary directory, removed on drop.
    struct FakeSysfs(PathBuf);

    impl FakeSysfs {
        fn new(name: &str) -> FakeSysfs {
            let root =
                std::env::temp_dir().join(format!("xrdma-sysfs-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root).unwrap();
            FakeSysfs(root)
        }

        fn counters(&self, device: &str, sub: &str, files: &[(&str, &str)]) {
            let dir = self.0.join(device).join("ports/1").join(sub);
            std::fs::create_dir_all(&dir).unwrap();
            for (name, text) in files {
                std::fs::write(dir.join(name), text).unwrap();
            }
        }
    }

    impl Drop for FakeSysfs {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn rxe_counters_map_by_their_names() {
        let fs = FakeSysfs::new("rxe");
        let rxe = [
            ("sent_pkts", "100\n"),
            ("rcvd_pkts", "90\n"),
            ("send_rnr_err", "2\n"),
            ("rcvd_rnr_err", "2\n"),
            ("out_of_seq_request", "1\n"),
            ("rcvd_seq_err", "1\n"),
            ("duplicate_request", "0\n"),
            ("retry_exceeded_err", "0\n"),
            ("completer_retry_err", "4\n"),
            ("lifespan", "10\n"),
        ];
        fs.counters("rxe0", "hw_counters", &rxe);
        let start = read_snapshot(&fs.0, "rxe0", 1);
        assert_eq!(start.len(), 9, "{start:?}");
        assert!(!start.contains_key("lifespan"));
        fs.counters(
            "rxe0",
            "hw_counters",
            &[
                ("sent_pkts", "164\n"),
                ("send_rnr_err", "5\n"),
                ("out_of_seq_request", "3\n"),
                ("completer_retry_err", "9\n"),
            ],
        );
        let d = delta(&start, &read_snapshot(&fs.0, "rxe0", 1));
        assert_eq!(d["sent_pkts"], 64);
        assert_eq!(d["completer_retry_err"], 5);
        assert_eq!(d["rcvd_pkts"], 0);
        let n = network(&d);
        // The responder's sequence NAKs (out_of_seq_request: 1 -> 3), not the requester's
        // count of NAKs received (rcvd_seq_err, unchanged here).
        assert_eq!(d["rcvd_seq_err"], 0);
        assert_eq!(n.data_packets, Some(64));
        assert_eq!(n.rnr_naks, Some(3));
        assert_eq!(n.seq_naks, Some(2));
        // rxe observes no ECN marks, CNPs or timeouts: unknown, not 0.
        assert_eq!(
            (n.ecn_marks, n.cnps, n.retransmit_timeouts),
            (None, None, None)
        );
        assert_eq!(
            (n.pfc_xoff, n.drops, n.max_buffer_bytes),
            (None, None, None)
        );
        assert_eq!(
            lookup(&d, ResultCounter::RnrNaks).map(|(c, _)| c.driver),
            Some("rxe")
        );
    }

    #[test]
    fn mlx5_counters_map_by_their_names_with_the_port_counters() {
        let fs = FakeSysfs::new("mlx5");
        let hw = |ecn: &str, cnp: &str| {
            // Out-of-sequence packets grow by 12 while only 2 sequence NAKs arrive: the NAKs
            // are what `seq-naks` counts.
            let (oos, nak) = if ecn == "10" {
                ("40", "3")
            } else {
                ("52", "5")
            };
            [
                ("np_ecn_marked_roce_packets", ecn.to_string()),
                ("np_cnp_sent", cnp.to_string()),
                ("rp_cnp_handled", "7".to_string()),
                ("out_of_sequence", oos.to_string()),
                ("packet_seq_err", nak.to_string()),
                ("rnr_nak_retry_err", "1".to_string()),
                ("local_ack_timeout_err", "2".to_string()),
                ("duplicate_request", "5".to_string()),
            ]
        };
        let write = |ecn: &str, cnp: &str, xmit: &str| {
            let files = hw(ecn, cnp);
            let refs: Vec<(&str, &str)> = files.iter().map(|(n, v)| (*n, v.as_str())).collect();
            fs.counters("mlx5_0", "hw_counters", &refs);
            fs.counters(
                "mlx5_0",
                "counters",
                &[("port_xmit_packets", xmit), ("symbol_error", "0")],
            );
        };
        write("10", "4", "1000");
        let start = read_snapshot(&fs.0, "mlx5_0", 1);
        assert_eq!(start["counters/port_xmit_packets"], 1000);
        write("34", "28", "5000");
        let d = delta(&start, &read_snapshot(&fs.0, "mlx5_0", 1));
        let n = network(&d);
        assert_eq!(n.ecn_marks, Some(24));
        assert_eq!(n.cnps, Some(24));
        assert_eq!(n.data_packets, Some(4000));
        assert_eq!(d["out_of_sequence"], 12);
        assert_eq!(
            (n.seq_naks, n.rnr_naks, n.retransmit_timeouts),
            (Some(2), Some(0), Some(0))
        );
        assert_eq!(n.retransmitted_packets, None);
        assert_eq!(
            lookup(&d, ResultCounter::EcnMarks).map(|(c, v)| (c.driver, c.name, v)),
            Some(("mlx5", "np_ecn_marked_roce_packets", 24))
        );
        // The raw differences keep every counter the device has, by its own name.
        assert_eq!(d["rp_cnp_handled"], 0);
        assert_eq!(d["counters/symbol_error"], 0);
        assert!(!d.contains_key("sent_pkts"));
    }

    #[test]
    fn counters_that_are_missing_unreadable_or_went_backwards_are_left_out() {
        let fs = FakeSysfs::new("odd");
        fs.counters(
            "dev0",
            "hw_counters",
            &[
                ("sent_pkts", "50"),
                ("send_rnr_err", "n/a"),
                ("out_of_seq_request", "9"),
            ],
        );
        let start = read_snapshot(&fs.0, "dev0", 1);
        assert!(!start.contains_key("send_rnr_err"));
        fs.counters("dev0", "hw_counters", &[("sent_pkts", "10")]);
        let d = delta(&start, &read_snapshot(&fs.0, "dev0", 1));
        assert!(
            !d.contains_key("sent_pkts"),
            "a counter that went backwards"
        );
        let n = network(&d);
        assert_eq!(
            (n.data_packets, n.rnr_naks, n.seq_naks),
            (None, None, Some(0))
        );
        // No such device, or no such port: nothing, not zeros.
        assert!(read_snapshot(&fs.0, "absent", 1).is_empty());
        assert!(read_snapshot(&fs.0, "dev0", 2).is_empty());
    }

    #[test]
    fn every_driver_name_appears_once() {
        let mut names: Vec<&str> = TABLE
            .iter()
            .flat_map(|m| m.names.iter().map(|d| d.name))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a name stands for two result counters");
    }
}
