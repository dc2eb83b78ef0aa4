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

/// Client queues `bulk` 1 MiB messages (each its own byte), runs `warm` µs, then one urgent
/// message of `size` bytes; returns what the server received, in order.
fn behind_bulk(seed: u64, bulk: u8, warm: u64, size: usize) -> Vec<Bytes> {
    let (mut server, mut client) = common::pair(seed);
    let conn = client.connect(&server).expect("connects");
    for b in 0..bulk {
        client.send(conn, vec![b + 1; BULK]).expect("queued");
    }
    client.run_for(Span::from_us(warm)).expect("runs");
    client.send_urgent(conn, vec![0xEE; size]).expect("queued");
    client
        .flush(Span::from_ms(100))
        .expect("every message ACKed");
    (0..=bulk)
        .map(|_| server.recv(Span::from_ms(100)).expect("arrives").1)
        .collect()
}

#[test]
fn a_large_urgent_message_never_overtakes_an_announced_one() {
    // An urgent message above the eager limit put ahead of bulk whose RTS was out took that
    // bulk's landing buffer: the bulk's last 64 KiB arrived as zeros, or the connection
    // failed ("fragments exceed the 1048576-byte message length", "a grant ... matches no
    // RTS").
    for seed in common::SEEDS {
        for size in [4097, 65536, 65537, 100_000, BULK] {
            for (bulk, warm) in [(2, 20), (3, 20), (3, 0), (2, 200)] {
                let got = behind_bulk(seed, bulk, warm, size);
                let what =
                    format!("seed {seed}, {size} B urgent behind {bulk} bulk after {warm} us");
                let urgent = got
                    .iter()
                    .filter(|m| m.len() == size && m.iter().all(|&x| x == 0xEE));
                assert_eq!(urgent.count(), 1, "{what}: the urgent message intact");
                let mut bulks: Vec<u8> = got
                    .iter()
                    .filter(|m| m.len() == BULK && m[0] != 0xEE)
                    .map(|m| {
                        assert!(
                            m.iter().all(|&x| x == m[0]),
                            "{what}: a bulk message corrupted"
                        );
                        m[0]
                    })
                    .collect();
                assert_eq!(bulks.len(), usize::from(bulk), "{what}");
                let sent: Vec<u8> = (1..=bulk).collect();
                assert_eq!(bulks, sent, "{what}: the bulk in order");
                bulks.clear();
            }
        }
    }
}
