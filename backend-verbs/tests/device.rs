//! Device opening and GID choice on a real device. Without a device each test prints why it
//! skipped.

mod common;

use common::*;
use std::time::Instant;
use xrdma::*;
use xrdma_verbs::{Device, DeviceConfig, GidType, TransportConfig, VerbsError, VerbsTransport};

#[test]
fn the_default_gid_is_a_routable_ipv4_mapped_one() {
    let Some(dev) = device_or_skip("the_default_gid_is_a_routable_ipv4_mapped_one") else {
        return;
    };
    if DeviceConfig::from_env().unwrap().gid_index.is_some() || dev.port().is_infiniband() {
        eprintln!("SKIP the_default_gid_is_a_routable_ipv4_mapped_one: the GID index is forced or the port is InfiniBand");
        return;
    }
    assert_eq!(dev.gid().kind, GidType::RoceV2);
    assert!(dev.gid().is_ipv4_mapped(), "{}", dev.gid().addr());
    // An active RoCE port runs at one of the IB MTUs (256..4096 B).
    assert!([256, 512, 1024, 2048, 4096].contains(&dev.port().active_mtu_bytes()));
}

#[test]
fn an_empty_gid_index_is_an_error_that_lists_the_table() {
    let Some(dev) = device_or_skip("an_empty_gid_index_is_an_error_that_lists_the_table") else {
        return;
    };
    let cfg = DeviceConfig {
        name: Some(dev.name().to_string()),
        port: Some(dev.port().port),
        gid_index: Some(100_000),
    };
    match Device::open(&cfg) {
        Err(VerbsError::NoUsableGid { why, table, .. }) => {
            assert!(why.contains("100000"), "{why}");
            // The table names the GID the default choice found.
            let listed = format!("{}: {}", dev.gid().index, dev.gid().addr());
            assert!(table.contains(&listed), "{table} lacks {listed}");
        }
        other => panic!("expected NoUsableGid, got {other:?}"),
    }
    let missing = DeviceConfig {
        name: Some("no_such_dev9".into()),
        ..DeviceConfig::default()
    };
    match Device::open(&missing) {
        Err(VerbsError::DeviceNotFound { available, .. }) => {
            assert!(available.iter().any(|n| n == dev.name()))
        }
        other => panic!("expected DeviceNotFound, got {other:?}"),
    }
    // rxe and most NICs have one or two ports; port 9 does not exist.
    let no_port = DeviceConfig {
        name: Some(dev.name().to_string()),
        port: Some(9),
        gid_index: None,
    };
    match Device::open(&no_port) {
        Err(VerbsError::BadSetting { reason, .. }) => {
            assert!(reason.contains("has no port 9"), "{reason}")
        }
        other => panic!("expected BadSetting for port 9, got {other:?}"),
    }
}

#[test]
fn a_reset_qp_reconnects_and_both_setup_times_are_reported() {
    let Some(dev) = device_or_skip("a_reset_qp_reconnects_and_both_setup_times_are_reported")
    else {
        return;
    };
    let mut a = VerbsTransport::new(&dev, TransportConfig::default()).unwrap();
    let mut b = VerbsTransport::new(&dev, TransportConfig::default()).unwrap();
    let caps = QpCaps::default();
    let peer = b.create_qp(caps).unwrap();
    // Fresh: create (RESET → INIT) and connect (INIT → RTR → RTS).
    let t0 = Instant::now();
    let mine = a.create_qp(caps).unwrap();
    a.connect_qp(mine.qpn, &peer).unwrap();
    let fresh = t0.elapsed();
    // Cached: reset (→ RESET → INIT) and connect again.
    let t1 = Instant::now();
    let again = a.reset_qp(mine.qpn).unwrap();
    a.connect_qp(mine.qpn, &peer).unwrap();
    let cached = t1.elapsed();
    eprintln!("QP setup: fresh {fresh:?}, from the cache {cached:?}");
    assert_eq!(again.qpn, mine.qpn);
    assert_eq!(a.qp_count(), 1);
    // The granted depths cover the request; the CQ grew to hold both queues of the QP.
    let got = a.qp_caps(mine.qpn).unwrap();
    assert!(got.max_send_wr >= caps.max_send_wr && got.max_recv_wr >= caps.max_recv_wr);
    assert_eq!(a.poll_errors(), 0);
}
