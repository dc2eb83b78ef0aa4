//! The QP cache on the simulator: a closed connection's QPs are reset, handed to the next
//! connection, and carry its traffic.

use bytes::Bytes;
use xrdma::driver::{self, open_cached, qp_caps, Application, QpCache};
use xrdma::{Config, ConnId, Endpoint, Event, QpAddress, QpCaps, Time};
use xrdma_testbed::fabric::{Fabric, SimFabric};
use xrdma_testbed::tools::{drive, Pair};

/// Sends one message at its first turn.
struct One {
    conn: ConnId,
    data: Bytes,
    sent: bool,
    acked: bool,
}

impl Application for One {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        if let Event::Sent { .. } = event {
            self.acked = true;
        }
    }
    fn on_turn(&mut self, now: Time, ep: &mut Endpoint) {
        if !self.sent {
            ep.send(now, self.conn, self.data.clone()).unwrap();
            self.sent = true;
        }
    }
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

#[derive(Default)]
struct Got(Vec<Bytes>);

impl Application for Got {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        if let Event::Message { data, .. } = event {
            self.0.push(data);
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Connect a new endpoint pair through the caches; returns the pair, each side's QP address
/// and whether it came from that side's cache.
fn connect(fabric: &mut SimFabric, caches: &mut [QpCache; 2]) -> (Pair, [QpAddress; 2], [bool; 2]) {
    let cfg = Config::default();
    let mut a = Endpoint::new(cfg.clone()).unwrap();
    let mut b = Endpoint::new(cfg).unwrap();
    let (ha, ra) = open_cached(&mut a, &mut fabric.host(0), &mut caches[0]).unwrap();
    let (hb, rb) = open_cached(&mut b, &mut fabric.host(1), &mut caches[1]).unwrap();
    let qps = [ha.info.qp, hb.info.qp];
    let ca = driver::establish(&mut a, &mut fabric.host(0), ha, &hb.info, 1).unwrap();
    let cb = driver::establish(&mut b, &mut fabric.host(1), hb, &ha.info, 0).unwrap();
    let pair = Pair {
        eps: [a, b],
        conns: [ca, cb],
    };
    (pair, qps, [ra, rb])
}

fn exchange(fabric: &mut SimFabric, pair: &mut Pair, data: &[u8]) -> Vec<Bytes> {
    let mut tx = One {
        conn: pair.conns[0],
        data: Bytes::copy_from_slice(data),
        sent: false,
        acked: false,
    };
    let mut rx = Got::default();
    drive(fabric, pair, &mut tx, &mut rx, |t, _| t.acked).unwrap();
    rx.0
}

#[test]
fn a_reset_qp_is_reused_by_the_next_connection_and_carries_its_traffic() {
    let mut fabric = SimFabric::new(xrdma_sim::SimConfig::default()).unwrap();
    let mut caches = [QpCache::new(), QpCache::new()];

    let (mut first, qps, reused) = connect(&mut fabric, &mut caches);
    assert_eq!(reused, [false, false], "an empty cache creates QPs");
    assert_eq!(exchange(&mut fabric, &mut first, b"first"), [&b"first"[..]]);

    // Close the first connection: its QPs go back to the caches (RESET → INIT, new PSN).
    let caps = qp_caps(&Config::default());
    let mut reset = Vec::new();
    for h in 0..2u32 {
        let i = h as usize;
        reset.push(
            caches[i]
                .put(&mut fabric.host(h), qps[i].qpn, caps)
                .unwrap(),
        );
        assert_eq!(reset[i].qpn, qps[i].qpn);
    }
    assert_eq!(caches[0].len() + caches[1].len(), 2);
    // A QP asked for with other capacities is not served from the cache.
    let other = QpCaps {
        max_send_wr: 8,
        ..caps
    };
    let (fresh, hit) = caches[0].take(&mut fabric.host(0), other).unwrap();
    assert!(!hit);
    assert_ne!(fresh.qpn, qps[0].qpn);

    let (mut second, qps2, reused) = connect(&mut fabric, &mut caches);
    assert_eq!(reused, [true, true], "both QPs come from the caches");
    assert!(caches.iter().all(QpCache::is_empty));
    assert_eq!([caches[0].hits(), caches[0].misses()], [1, 2]);
    assert_eq!([caches[1].hits(), caches[1].misses()], [1, 1]);
    // The second connection runs on the very QPs of the first, with the PSNs the reset drew,
    // and a message crosses it intact.
    assert_eq!(qps2.to_vec(), reset);
    let payload: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(exchange(&mut fabric, &mut second, &payload), [&payload[..]]);
}
