use super::*;

/// An rxe device `guid` on host `host`.
fn rxe(host: &str, guid: Option<&str>) -> (String, rep::DeviceInfo) {
    (
        host.to_string(),
        rep::DeviceInfo {
            name: Some("rxe0".into()),
            node_guid: guid.map(str::to_string),
            port: Some(1),
            ..rep::DeviceInfo::default()
        },
    )
}

fn counters(pairs: &[(&str, u64)]) -> Snapshot {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A receiver rank 0 on `own`'s host and device with `own_counters`, and ranks 1.. on the
/// hosts of `peers` (each also connected): its environment as `record_ranks` leaves it, and
/// its own network counters.
fn run(
    own: (String, rep::DeviceInfo),
    own_counters: Snapshot,
    peers: &[&str],
) -> (rep::Environment, rep::NetworkCounters) {
    let mut ranks = vec![rep::RankPlace {
        rank: 0,
        host_name: Some(own.0),
        address: Some("10.0.0.1:18630".into()),
        connected_from: None,
        hosts: vec![0],
        device: None,
        device_counters: None,
    }];
    for (i, h) in peers.iter().enumerate() {
        ranks.push(rep::RankPlace {
            rank: i as u32 + 1,
            host_name: Some(h.to_string()),
            address: Some(format!("10.0.0.{}:18631", i + 2)),
            connected_from: Some(format!("10.0.0.{}:40000", i + 2)),
            hosts: vec![i as u32 + 1],
            device: None,
            device_counters: None,
        });
    }
    let mut net = device_counters::network(&own_counters);
    net.ack_timeouts = Some(0);
    let env = rep::Environment {
        backend: rep::Backend::Verbs,
        simulator_version: None,
        host_name: None,
        kernel: None,
        device: Some(own.1),
        device_counters: Some(own_counters),
        ranks: Some(ranks),
    };
    (env, net)
}

fn sent(dev: (String, rep::DeviceInfo), c: Snapshot) -> Option<RankDevice> {
    Some(RankDevice {
        device: Some(dev.1),
        device_counters: Some(c),
    })
}

#[test]
fn distinct_devices_are_summed() {
    let a = counters(&[
        ("sent_pkts", 100),
        ("send_rnr_err", 1),
        ("out_of_seq_request", 0),
    ]);
    let b = counters(&[
        ("sent_pkts", 250),
        ("send_rnr_err", 2),
        ("out_of_seq_request", 3),
    ]);
    let (mut env, mut net) = run(rxe("a", Some("g1")), a.clone(), &["b"]);
    let peer = sent(rxe("b", Some("g2")), b.clone());
    merge_into(&mut env, &mut net, 0, vec![(1, peer)]);
    assert_eq!(
        env.device_counters,
        Some(counters(&[
            ("sent_pkts", 350),
            ("send_rnr_err", 3),
            ("out_of_seq_request", 3)
        ]))
    );
    assert_eq!(
        (net.data_packets, net.rnr_naks, net.seq_naks),
        (Some(350), Some(3), Some(3))
    );
    // rxe observes none of these: unknown on both, unknown in the sum.
    assert_eq!(
        (net.ecn_marks, net.cnps, net.retransmit_timeouts),
        (None, None, None)
    );
    // What no device determines is kept.
    assert_eq!(net.ack_timeouts, Some(0));
    let ranks = env.ranks.as_ref().unwrap();
    assert_eq!(ranks[0].device_counters.as_ref(), Some(&a));
    assert_eq!(ranks[1].device_counters.as_ref(), Some(&b));
    assert_eq!(
        ranks[1].device.as_ref().unwrap().node_guid.as_deref(),
        Some("g2")
    );
    // The environment's device stays the receiver rank's.
    assert_eq!(
        env.device.as_ref().unwrap().node_guid.as_deref(),
        Some("g1")
    );
}

#[test]
fn one_guid_on_two_hosts_is_two_devices() {
    let c = counters(&[("sent_pkts", 10)]);
    let (mut env, mut net) = run(rxe("a", Some("g1")), c.clone(), &["b"]);
    merge_into(
        &mut env,
        &mut net,
        0,
        vec![(1, sent(rxe("b", Some("g1")), c))],
    );
    assert_eq!(net.data_packets, Some(20));
}

#[test]
fn a_device_shared_by_two_ranks_counts_once() {
    let own = counters(&[("sent_pkts", 400), ("send_rnr_err", 2)]);
    // Rank 1 on the same guest's rxe0 read it over its own run: the same traffic.
    let theirs = counters(&[("sent_pkts", 398), ("send_rnr_err", 2)]);
    let (mut env, mut net) = run(rxe("a", Some("g1")), own.clone(), &["a"]);
    merge_into(
        &mut env,
        &mut net,
        0,
        vec![(1, sent(rxe("a", Some("g1")), theirs.clone()))],
    );
    assert_eq!(
        env.device_counters,
        Some(own.clone()),
        "the lowest rank's reading"
    );
    assert_eq!((net.data_packets, net.rnr_naks), (Some(400), Some(2)));
    assert_eq!(env.ranks.as_ref().unwrap()[1].device_counters, Some(theirs));
    // Without a GUID the device's name identifies it on its host.
    let (mut env, mut net) = run(rxe("a", None), own.clone(), &["a", "b"]);
    let peers = vec![
        (1, sent(rxe("a", None), own.clone())),
        (2, sent(rxe("b", None), own.clone())),
    ];
    merge_into(&mut env, &mut net, 0, peers);
    assert_eq!(
        net.data_packets,
        Some(800),
        "rxe0 on a once, rxe0 on b once"
    );
}

#[test]
fn a_counter_one_device_lacks_is_absent_from_the_sum() {
    // An rxe device and an mlx5 one: raw names differ, so no raw counter is on both, but
    // the packets sent map on both drivers.
    let a = counters(&[("sent_pkts", 100), ("send_rnr_err", 1)]);
    let b = counters(&[("counters/port_xmit_packets", 50), ("np_cnp_sent", 4)]);
    let (mut env, mut net) = run(rxe("a", Some("g1")), a.clone(), &["b"]);
    let mlx5 = rep::DeviceInfo {
        name: Some("mlx5_0".into()),
        node_guid: Some("g2".into()),
        ..rep::DeviceInfo::default()
    };
    merge_into(
        &mut env,
        &mut net,
        0,
        vec![(1, sent(("b".into(), mlx5), b.clone()))],
    );
    assert_eq!(env.device_counters, Some(Snapshot::new()));
    assert_eq!(net.data_packets, Some(150));
    // CNPs: mlx5 counts them, rxe cannot: unknown, not 4. RNR NAKs: rxe counts them, mlx5's
    // counter is missing here: unknown, not 1.
    assert_eq!((net.cnps, net.rnr_naks), (None, None));
    // Each rank keeps its own.
    let ranks = env.ranks.as_ref().unwrap();
    assert_eq!(ranks[0].device_counters.as_ref(), Some(&a));
    assert_eq!(ranks[1].device_counters.as_ref(), Some(&b));
    // Two rxe devices, one without a counter the other has.
    let b = counters(&[("sent_pkts", 7)]);
    let (mut env, mut net) = run(rxe("a", Some("g1")), a, &["b"]);
    merge_into(
        &mut env,
        &mut net,
        0,
        vec![(1, sent(rxe("b", Some("g2")), b))],
    );
    assert_eq!(env.device_counters, Some(counters(&[("sent_pkts", 107)])));
    assert_eq!((net.data_packets, net.rnr_naks), (Some(107), None));
}

#[test]
fn a_rank_that_sent_no_device_leaves_the_sum_unknown() {
    let a = counters(&[("sent_pkts", 100), ("send_rnr_err", 1)]);
    let (mut env, mut net) = run(rxe("a", Some("g1")), a.clone(), &["b"]);
    merge_into(&mut env, &mut net, 0, vec![(1, None)]);
    assert_eq!(env.device_counters, None, "not a partial sum");
    assert_eq!((net.data_packets, net.rnr_naks), (None, None));
    assert_eq!(net.ack_timeouts, Some(0));
    let ranks = env.ranks.as_ref().unwrap();
    assert_eq!(
        ranks[0].device_counters.as_ref(),
        Some(&a),
        "rank 0's own stay"
    );
    assert_eq!(
        (&ranks[1].device, &ranks[1].device_counters),
        (&None, &None)
    );
    // A device without counters is as good as none.
    let (mut env, mut net) = run(rxe("a", Some("g1")), a.clone(), &["b"]);
    let peer = Some(RankDevice {
        device: Some(rxe("b", Some("g2")).1),
        device_counters: None,
    });
    merge_into(&mut env, &mut net, 0, vec![(1, peer)]);
    assert_eq!((env.device_counters, net.data_packets), (None, None));
}

#[test]
fn a_single_rank_keeps_its_own_counters() {
    let a = counters(&[
        ("sent_pkts", 100),
        ("send_rnr_err", 1),
        ("out_of_seq_request", 2),
    ]);
    let (mut env, mut net) = run(rxe("a", Some("g1")), a.clone(), &[]);
    let before = net;
    merge_into(&mut env, &mut net, 0, vec![]);
    assert_eq!(env.device_counters, Some(a.clone()));
    assert_eq!(net, before);
    assert_eq!(env.ranks.as_ref().unwrap()[0].device_counters, Some(a));
}

#[test]
fn the_device_frame_round_trips_and_other_frames_are_refused() {
    let d = sent(rxe("b", Some("g2")), counters(&[("sent_pkts", 5)])).unwrap();
    assert_eq!(decode(d.frame().unwrap(), 1).unwrap(), d);
    let e = decode(Frame::Bye, 1).unwrap_err().to_string();
    assert!(e.contains("rank 1 sent no device"), "{e}");
    let bad = Frame::Device {
        device: serde_json::json!({"device-counters": {"sent_pkts": -1}}),
    };
    let e = format!("{:#}", decode(bad, 2).unwrap_err());
    assert!(e.contains("malformed device from rank 2"), "{e}");
    // A fabric without a device (the simulator) sends an empty one.
    let sim = xrdma_runner::fabric::SimFabric::new(xrdma_sim::SimConfig::default()).unwrap();
    assert_eq!(RankDevice::of(&sim), RankDevice::default());
}
