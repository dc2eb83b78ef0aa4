//! `Endpoint::snapshot`: the `stat` tool's view of an endpoint, checked against the counters
//! it is made of and through a JSON round trip.

mod util;

use util::world::{pattern, World};
use xrdma::*;

#[test]
fn a_snapshot_shows_the_connection_its_counters_and_what_it_holds() {
    let mut w = World::new(Config::default());
    // 100 queued 100 B messages go in three eager frames (see the coalescing test in core.rs)
    // and one 1 MiB message by rendezvous.
    for i in 0..100u8 {
        w.eps[0]
            .send(w.pair.now, w.conns[0], pattern(100, i))
            .unwrap();
    }
    w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(1 << 20, 7))
        .unwrap();
    // Before any turn: everything is queued, nothing in flight.
    let queued = driver::snapshot(&w.eps[0], &w.pair.side(0));
    assert_eq!(queued.connections.len(), 1);
    assert_eq!(queued.connections[0].queued, 101);
    assert_eq!(queued.connections[0].inflight, 0);
    assert_eq!(queued.messages_accepted, 101);
    w.settle();
    let tx = driver::snapshot(&w.eps[0], &w.pair.side(0));
    let rx = driver::snapshot(&w.eps[1], &w.pair.side(1));
    assert_eq!(tx.at_ps, w.pair.now.as_ps());
    let (t, r) = (&tx.connections[0], &rx.connections[0]);
    assert_eq!(
        (t.state.as_str(), t.peer, t.conn.as_str()),
        ("established", 1, "0")
    );
    assert_eq!((r.state.as_str(), r.peer), ("established", 0));
    assert_eq!(t.stats, w.eps[0].stats(w.conns[0]).unwrap());
    assert_eq!((t.stats.eager_messages, t.stats.batched_frames), (100, 3));
    assert_eq!(t.stats.rendezvous_messages, 1);
    assert_eq!(t.stats.send_bytes, 100 * 100 + (1 << 20));
    assert_eq!(r.stats.recv_bytes, t.stats.send_bytes);
    assert_eq!(r.stats.messages_received, 101);
    assert_eq!(
        (t.queued, t.inflight, t.inflight_bytes, t.landings),
        (0, 0, 0, 0)
    );
    // The in-memory transport observes nothing of its QPs: unknown, not zero.
    assert_eq!((t.retransmitted_packets, t.rnr_retries), (None, None));
    assert_eq!(t.qp_state, None);
    assert_eq!(tx.resources, w.eps[0].resources());
    assert_eq!(tx.mr_used_bytes, w.eps[0].mr_pool().used_bytes());
    assert!(tx.resources.registered_bytes >= tx.mr_used_bytes);
    assert_eq!(rx.resources.landing_carved_bytes, 1 << 20);
}

#[test]
fn a_snapshot_round_trips_through_json_with_unknowns_as_null() {
    let mut w = World::new(Config::default());
    w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(64, 1))
        .unwrap();
    w.settle();
    let s = driver::snapshot(&w.eps[0], &w.pair.side(0));
    let text = serde_json::to_string(&s).unwrap();
    assert!(text.contains("\"retransmitted-packets\":null"), "{text}");
    assert!(text.contains("\"rnr-retries\":null"), "{text}");
    assert!(text.contains("\"qps-created\":1"), "{text}");
    assert!(text.contains("\"send-bytes\":64"), "{text}");
    let back: EndpointSnapshot = serde_json::from_str(&text).unwrap();
    assert_eq!(back, s);
}

#[test]
fn a_closed_connection_is_shown_closed() {
    let mut w = World::new(Config::default());
    w.eps[0]
        .send(w.pair.now, w.conns[0], pattern(64, 1))
        .unwrap();
    w.settle();
    w.eps[0].close(w.conns[0]).unwrap();
    w.settle();
    let states: Vec<String> = (0..2)
        .flat_map(|h| driver::snapshot(&w.eps[h], &w.pair.side(h)).connections)
        .map(|c| c.state)
        .collect();
    assert_eq!(states, ["closed", "closed"]);
}
