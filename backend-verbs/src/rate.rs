//! A port's active rate, bits/s: `ibv_port_attr.active_speed` × `active_width` decoded as the
//! InfiniBand specification encodes them, and on a RoCE port the speed of the netdev under
//! it.
//!
//! **InfiniBand.** `active_speed` names a lane's signalling rate and `active_width` the
//! number of lanes (`ibv_query_port(3)`; IBTA InfiniBand Architecture Specification vol. 1
//! §14.2.5.6, PortInfo `LinkSpeedActive`, `LinkSpeedExtActive`, `LinkWidthActive`; vol. 2
//! §5.2–5.3 for the encodings). The rate a payload is serialised at is the *data* rate, the
//! signalling rate less the line code: 8b/10b for SDR, DDR and QDR, 64b/66b for FDR10, FDR
//! and EDR; HDR and NDR (PAM4 with RS-FEC) carry 50 and 100 Gb/s of data per lane:
//!
//! | `active_speed` | name  | signalling per lane | code    | data per lane     |
//! |---------------:|-------|--------------------:|---------|------------------:|
//! | 1              | SDR   | 2.5 Gb/s            | 8b/10b  | 2 Gb/s            |
//! | 2              | DDR   | 5 Gb/s              | 8b/10b  | 4 Gb/s            |
//! | 4              | QDR   | 10 Gb/s             | 8b/10b  | 8 Gb/s            |
//! | 8              | FDR10 | 10.3125 Gb/s        | 64b/66b | 10 Gb/s           |
//! | 16             | FDR   | 14.0625 Gb/s        | 64b/66b | 13.636… Gb/s      |
//! | 32             | EDR   | 25.78125 Gb/s       | 64b/66b | 25 Gb/s           |
//! | 64             | HDR   | 53.125 Gb/s         | PAM4    | 50 Gb/s           |
//! | 128            | NDR   | 106.25 Gb/s         | PAM4    | 100 Gb/s          |
//!
//! `active_width`: 1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x lanes. Any other code decodes to
//! no rate.
//!
//! **RoCE.** The kernel fills a RoCE port's speed and width from its netdev's ethtool speed
//! (`ib_get_eth_speed`, `drivers/infiniband/core/verbs.c`, which rxe's `rxe_query_port`
//! calls), coarsely: up to 1 Gb/s reads 1X SDR, up to 10 Gb/s 1X FDR10, 25 Gb/s 1X EDR,
//! 100 Gb/s 4X EDR, and so on. A netdev whose speed is unknown (`SPEED_UNKNOWN`, as a
//! virtio-net NIC reports unless its device declares one) is taken as 1 Gb/s and so reads
//! 1X SDR: a made-up 2 Gb/s. So on a RoCE port the rate is the netdev's own speed
//! (`/sys/class/net/NDEV/speed`, Mb/s), and no rate at all when that speed is unknown.

use std::path::Path;

/// Where the kernel publishes network interfaces.
pub const NET_SYSFS_ROOT: &str = "/sys/class/net";

/// Data rate of one lane at `active_speed` code `speed`, bits/s (see the module's table);
/// `None` for a code the specification does not define.
pub fn lane_data_rate_bps(speed: u8) -> Option<u64> {
    Some(match speed {
        1 => 2_000_000_000,
        2 => 4_000_000_000,
        4 => 8_000_000_000,
        8 => 10_000_000_000,
        // 14.0625 Gb/s × 64/66.
        16 => 13_636_363_636,
        32 => 25_000_000_000,
        64 => 50_000_000_000,
        128 => 100_000_000_000,
        _ => return None,
    })
}

/// Lanes of `active_width` code `width`; `None` for an undefined code.
pub fn width_lanes(width: u8) -> Option<u64> {
    Some(match width {
        1 => 1,
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => return None,
    })
}

/// The data rate of an InfiniBand port at `speed` × `width`, bits/s; `None` when either code
/// is undefined.
pub fn ib_rate_bps(speed: u8, width: u8) -> Option<u64> {
    Some(lane_data_rate_bps(speed)? * width_lanes(width)?)
}

/// What the netdev under a RoCE GID says of its speed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetdevSpeed {
    /// The netdev `name` runs at `mbps` Mb/s.
    Known {
        /// The netdev.
        name: String,
        /// Its speed, Mb/s (10⁶ bits/s).
        mbps: u64,
    },
    /// The netdev `name` does not know its speed (its `speed` file reads -1 or cannot be
    /// read, as for a virtio-net NIC without a declared speed).
    Unknown {
        /// The netdev.
        name: String,
    },
    /// No netdev is recorded for the GID.
    NoNetdev,
}

impl NetdevSpeed {
    /// The speed in bits/s, when known.
    pub fn bps(&self) -> Option<u64> {
        match self {
            NetdevSpeed::Known { mbps, .. } => mbps.checked_mul(1_000_000),
            _ => None,
        }
    }
}

/// The speed of the netdev under GID `gid_index` of port `port` of device `dev`: its name
/// from `IB_ROOT/DEV/ports/PORT/gid_attrs/ndevs/GID_INDEX`, its speed from
/// `NET_ROOT/NAME/speed` (the roots are normally `/sys/class/infiniband` and
/// [`NET_SYSFS_ROOT`]; a test passes directories of its own).
pub fn netdev_speed(
    ib_root: &Path,
    net_root: &Path,
    dev: &str,
    port: u8,
    gid_index: u32,
) -> NetdevSpeed {
    let ndev = ib_root
        .join(dev)
        .join("ports")
        .join(port.to_string())
        .join("gid_attrs/ndevs")
        .join(gid_index.to_string());
    let Some(name) = std::fs::read_to_string(ndev)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
    else {
        return NetdevSpeed::NoNetdev;
    };
    // The kernel prints SPEED_UNKNOWN as -1, which does not parse as a u64; 0 is no speed
    // either.
    match std::fs::read_to_string(net_root.join(&name).join("speed"))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&m| m > 0)
    {
        Some(mbps) => NetdevSpeed::Known { name, mbps },
        None => NetdevSpeed::Unknown { name },
    }
}

/// The rate fragments leave a port at, bits/s: on InfiniBand the decoded `speed` × `width`,
/// on RoCE (`roce`) the netdev's speed `netdev` (see the module docs); `None` when it is not
/// known.
pub fn port_rate_bps(roce: bool, speed: u8, width: u8, netdev: &NetdevSpeed) -> Option<u64> {
    if roce {
        netdev.bps()
    } else {
        ib_rate_bps(speed, width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The module's table: (code, signalling per lane in bits/s, line code's data share).
    const SPEC: [(u8, f64, f64); 8] = [
        (1, 2.5e9, 8.0 / 10.0),
        (2, 5.0e9, 8.0 / 10.0),
        (4, 10.0e9, 8.0 / 10.0),
        (8, 10.3125e9, 64.0 / 66.0),
        (16, 14.0625e9, 64.0 / 66.0),
        (32, 25.78125e9, 64.0 / 66.0),
        (64, 53.125e9, 50.0 / 53.125),
        (128, 106.25e9, 100.0 / 106.25),
    ];

    #[test]
    fn each_speed_code_is_its_signalling_rate_less_the_line_code() {
        for (code, signalling, share) in SPEC {
            let want = signalling * share;
            let got = lane_data_rate_bps(code).expect("a defined code") as f64;
            assert!((got - want).abs() < 1.0, "speed {code}: {got} != {want}");
        }
        for undefined in [0, 3, 5, 255] {
            assert_eq!(lane_data_rate_bps(undefined), None);
        }
    }

    #[test]
    fn widths_decode_to_lanes() {
        let lanes: Vec<_> = [1, 2, 4, 8, 16].map(width_lanes).to_vec();
        assert_eq!(lanes, [1, 4, 8, 12, 2].map(Some).to_vec());
        assert_eq!(width_lanes(0), None);
        assert_eq!(width_lanes(3), None);
    }

    #[test]
    fn common_ports_read_their_nominal_rates() {
        // 4X EDR: 100 Gb/s; 4X HDR: 200 Gb/s; 4X QDR: 32 Gb/s of data (40 Gb/s signalling);
        // 1X FDR10, what the kernel reports for a 10 GbE netdev: 10 Gb/s.
        assert_eq!(ib_rate_bps(32, 2), Some(100_000_000_000));
        assert_eq!(ib_rate_bps(64, 2), Some(200_000_000_000));
        assert_eq!(ib_rate_bps(4, 2), Some(32_000_000_000));
        assert_eq!(ib_rate_bps(8, 1), Some(10_000_000_000));
        assert_eq!(ib_rate_bps(128, 16), Some(200_000_000_000));
        assert_eq!(ib_rate_bps(32, 0), None);
        assert_eq!(ib_rate_bps(0, 2), None);
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xrdma-rate-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch dir");
        d
    }

    /// A fake sysfs: `rxe0` port 1 with GID 1 on netdev `ndev`, whose speed file holds
    /// `speed` (none when `None`).
    fn sysfs(name: &str, ndev: &str, speed: Option<&str>) -> (PathBuf, PathBuf) {
        let root = scratch(name);
        let (ib, net) = (root.join("infiniband"), root.join("net"));
        let ndevs = ib.join("rxe0/ports/1/gid_attrs/ndevs");
        std::fs::create_dir_all(&ndevs).expect("ndevs dir");
        std::fs::write(ndevs.join("1"), format!("{ndev}\n")).expect("ndev file");
        std::fs::create_dir_all(net.join(ndev)).expect("netdev dir");
        if let Some(s) = speed {
            std::fs::write(net.join(ndev).join("speed"), s).expect("speed file");
        }
        (ib, net)
    }

    #[test]
    fn a_roce_port_takes_its_netdevs_speed() {
        let (ib, net) = sysfs("known", "eth0", Some("25000\n"));
        let s = netdev_speed(&ib, &net, "rxe0", 1, 1);
        assert_eq!(
            s,
            NetdevSpeed::Known {
                name: "eth0".into(),
                mbps: 25_000
            }
        );
        // The port's own codes (1X EDR here) are not what decides on RoCE.
        assert_eq!(port_rate_bps(true, 1, 1, &s), Some(25_000_000_000));
    }

    #[test]
    fn an_unknown_netdev_speed_is_no_rate_not_the_kernels_1x_sdr() {
        // virtio-net without a declared speed: the kernel prints -1, and the port reads 1X
        // SDR (speed 1, width 1), which decodes to a made-up 2 Gb/s.
        let (ib, net) = sysfs("unknown", "eth0", Some("-1\n"));
        let s = netdev_speed(&ib, &net, "rxe0", 1, 1);
        assert_eq!(
            s,
            NetdevSpeed::Unknown {
                name: "eth0".into()
            }
        );
        assert_eq!(port_rate_bps(true, 1, 1, &s), None);
        let (ib, net) = sysfs("unreadable", "eth0", None);
        assert!(matches!(
            netdev_speed(&ib, &net, "rxe0", 1, 1),
            NetdevSpeed::Unknown { .. }
        ));
        // No ndev recorded for another GID index.
        assert_eq!(netdev_speed(&ib, &net, "rxe0", 1, 7), NetdevSpeed::NoNetdev);
        assert_eq!(port_rate_bps(true, 1, 1, &NetdevSpeed::NoNetdev), None);
    }

    #[test]
    fn an_infiniband_port_decodes_its_codes() {
        assert_eq!(
            port_rate_bps(false, 64, 2, &NetdevSpeed::NoNetdev),
            Some(200_000_000_000)
        );
    }
}
