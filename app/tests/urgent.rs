//! Urgent messages on the simulator: a heartbeat sent with `send_urgent` behind a queue of
//! bulk messages goes out between the fragments of the one in progress, at every seed.

mod common;

use xrdma_app::{Bytes, SimFabric, Span, Worker};

const BULK: usize = 1 << 20;
const QUEUED: usize = 8;

/// Client sends QUEUED bulk messages, lets the first get going, then two 8-byte heartbeats
/// (urgent or not). Returns the heartbeats' places in the server's arrival order (0-based)
/// and the first one's latency (sent to received, simulated µs).
fn heartbeat(seed: u64, urgent: bool) -> (Vec<usize>, f64) {
    let (mut server, mut client) = common::pair(seed);
    let conn = client.connect(&server).expect("connects");
    let bulk = Bytes::from(vec![1u8; BULK]);
    for _ in 0..QUEUED {
        client.send(conn, bulk.clone()).expect("queued");
    }
    client.run_for(Span::from_us(20)).expect("runs");
    let t0 = client.now();
    for beat in [b"beat-one", b"beat-two"] {
        let send = |w: &mut Worker<SimFabric>| {
            if urgent {
                w.send_urgent(conn, &beat[..])
            } else {
                w.send(conn, &beat[..])
            }
        };
        send(&mut client).expect("queued");
    }
    let (mut places, mut latency) = (Vec::new(), None);
    for i in 0..QUEUED + 2 {
        let (_, msg) = server.recv(Span::from_ms(100)).expect("arrives");
        if msg.len() < BULK {
            places.push(i);
            latency.get_or_insert((server.now() - t0).as_us_f64());
        }
    }
    (places, latency.expect("a heartbeat"))
}

#[test]
fn an_urgent_heartbeat_goes_out_between_the_fragments_of_the_bulk_in_progress() {
    for seed in common::SEEDS {
        let (normal, slow) = heartbeat(seed, false);
        let (urgent, fast) = heartbeat(seed, true);
        println!("seed {seed}: heartbeat latency {slow:.1} us behind {QUEUED} x 1 MiB, {fast:.1} us urgent");
        assert_eq!(
            normal,
            vec![QUEUED, QUEUED + 1],
            "seed {seed}: normal ones queue behind the bulk"
        );
        // The first bulk message was already going out; the urgent ones overtake it between
        // two of its fragments, in their own order.
        assert_eq!(urgent, vec![0, 1], "seed {seed}");
        // Their wait: one 64 KiB fragment ahead at most, not a 1 MiB message.
        assert!(fast < 10.0, "seed {seed}: {fast} us urgent");
        assert!(
            slow > 8.0 * 80.0,
            "seed {seed}: {slow} us behind 8 MiB at 100 Gb/s"
        );
    }
}
