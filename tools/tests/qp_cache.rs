//! The QP cache on the simulator: a cleanly closed connection's QPs are reset, handed to the
//! next connection of the same endpoints, and carry its traffic.

use bytes::Bytes;
use xrdma::driver::{self, qp_caps, Application};
use xrdma::{Config, ConnId, Endpoint, Event, QpAddress, QpCaps, Time, Transport};
use xrdma_runner::fabric::{Fabric, SimFabric};
use xrdma_tools::{drive, Pair};

/// Sends one message at its first turn and closes the connection once it is ACKed.
struct SendThenClose {
    conn: ConnId,
    data: Bytes,
    sent: bool,
    closed: bool,
}

impl Application for SendThenClose {
    fn on_event(&mut self, _now: Time, ep: &mut Endpoint, event: Event) {
        match event {
            Event::Sent { conn, .. } => ep.close(conn).unwrap(),
            Event::Closed { .. } => self.closed = true,
            _ => {}
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

/// Records messages and whether the peer closed and the close completed.
#[derive(Default)]
struct Got {
    messages: Vec<Bytes>,
    peer_closed: bool,
    closed: bool,
}

impl Application for Got {
    fn on_event(&mut self, _now: Time, _ep: &mut Endpoint, event: Event) {
        match event {
            Event::Message { data, .. } => self.messages.push(data),
            Event::PeerClosed { .. } => self.peer_closed = true,
            Event::Closed { .. } => self.closed = true,
            _ => {}
        }
    }
    fn on_turn(&mut self, _now: Time, _ep: &mut Endpoint) {}
    fn next_wake(&self) -> Option<Time> {
        None
    }
}

/// Connect the pair's endpoints (hosts 0 and 1) again; returns each side's QP address and
/// whether it came from that endpoint's QP cache.
fn connect(fabric: &mut SimFabric, pair: &mut Pair) -> ([QpAddress; 2], [bool; 2]) {
    let [a, b] = &mut pair.eps;
    let ha = driver::open(a, &mut fabric.host(0)).unwrap();
    let hb = driver::open(b, &mut fabric.host(1)).unwrap();
    let ca = driver::establish(a, &mut fabric.host(0), ha, &hb.info, 1).unwrap();
    let cb = driver::establish(b, &mut fabric.host(1), hb, &ha.info, 0).unwrap();
    pair.conns = [ca, cb];
    ([ha.info.qp, hb.info.qp], [ha.reused_qp, hb.reused_qp])
}

/// Send `data` from host 0 to host 1 on the pair's connection, close it, and return what
/// arrived once both sides have closed.
fn exchange_and_close(fabric: &mut SimFabric, pair: &mut Pair, data: &[u8]) -> Vec<Bytes> {
    let mut tx = SendThenClose {
        conn: pair.conns[0],
        data: Bytes::copy_from_slice(data),
        sent: false,
        closed: false,
    };
    let mut rx = Got::default();
    drive(fabric, pair, &mut tx, &mut rx, |t, r| t.closed && r.closed).unwrap();
    assert!(rx.peer_closed, "the receiver heard the close");
    rx.messages
}

#[test]
fn a_closed_connections_qps_are_reused_by_the_next_connection() {
    let mut fabric = SimFabric::new(xrdma_sim::SimConfig::default()).unwrap();
    let cfg = Config::default();
    let mut pair = Pair {
        eps: [
            Endpoint::new(cfg.clone()).unwrap(),
            Endpoint::new(cfg.clone()).unwrap(),
        ],
        conns: [ConnId::new(0, 0); 2],
    };
    let (qps, reused) = connect(&mut fabric, &mut pair);
    assert_eq!(reused, [false, false], "an empty cache creates QPs");
    let got = exchange_and_close(&mut fabric, &mut pair, b"first");
    assert_eq!(got, [&b"first"[..]]);
    for (h, ep) in pair.eps.iter_mut().enumerate() {
        assert_eq!(
            ep.qp_cache().len(),
            1,
            "host {h}'s QP went back to its cache"
        );
    }

    // A QP asked for with other capacities is not served from the cache (asked of a copy:
    // the endpoint's own cache only changes through its inputs), so one is created.
    let other = QpCaps {
        max_send_wr: 8,
        ..qp_caps(&cfg)
    };
    let mut probe = pair.eps[0].qp_cache().clone();
    assert_eq!(probe.take(other), None);
    probe.count_created();
    assert_eq!([probe.hits(), probe.misses()], [0, 2]);
    let fresh = fabric.host(0).create_qp(other).unwrap();
    assert_ne!(fresh.qpn, qps[0].qpn);

    let (qps2, reused) = connect(&mut fabric, &mut pair);
    assert_eq!(reused, [true, true], "both QPs come from the caches");
    assert_eq!([qps2[0].qpn, qps2[1].qpn], [qps[0].qpn, qps[1].qpn]);
    for ep in &mut pair.eps {
        assert!(ep.qp_cache().is_empty());
    }
    assert_eq!(
        [
            pair.eps[0].qp_cache().hits(),
            pair.eps[0].qp_cache().misses()
        ],
        [1, 1],
        "one QP created (the first connection's), one reused (the second's)"
    );
    // The second connection runs on the very QPs of the first, with new PSNs, and a message
    // that goes by rendezvous (5000 B > the 4 KiB eager limit) crosses it intact.
    let payload: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let got = exchange_and_close(&mut fabric, &mut pair, &payload);
    assert_eq!(got, [&payload[..]]);
}
