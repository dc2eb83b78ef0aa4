//! Large messages handed to the application as leases on their landing buffers (no copy out):
//! a lent buffer is granted to no peer until the lease is dropped, counts against the landing
//! budget meanwhile, and comes back free.

mod util;

use bytes::Bytes;
use proptest::prelude::*;
use util::world::{pattern, World};
use xrdma::*;

/// A world whose memory lends (the receiver's landed messages are leases).
fn lending(cfg: Config) -> World {
    let mut w = World::new(cfg);
    w.pair.lending = true;
    w
}

/// Take the messages host 1 received so far out of its recorder, so dropping them drops
/// their leases.
fn take_received(w: &mut World) -> Vec<Bytes> {
    let got = w.received(1);
    w.apps[1].events.clear();
    got
}

#[test]
fn a_held_lease_keeps_its_buffer_from_the_next_grant_but_not_the_budget() {
    // A 128 KiB budget: one 100 000-byte message's buffer lands at a time. The application
    // keeps every message: each keeps its buffer (the next message lands in another) but not
    // the budget, so all three land.
    let cfg = Config {
        landing_budget: 128 << 10,
        ..Config::default()
    };
    let mut w = lending(cfg);
    for i in 0..3u8 {
        let now = w.pair.now;
        w.eps[0].send(now, w.conns[0], pattern(100_000, i)).unwrap();
    }
    w.settle();
    let kept = take_received(&mut w);
    assert_eq!(
        kept.len(),
        3,
        "every message lands while the others are held"
    );
    for (i, m) in kept.iter().enumerate() {
        assert!(*m == pattern(100_000, i as u8), "message {i}");
    }
    assert_eq!(w.pair.leases_out(1), 3);
    let r = w.eps[1].resources();
    assert_eq!(r.landing_lent_bytes, Some(3 * (128 << 10)));
    assert_eq!(r.landing_in_use_bytes, 3 * (128 << 10));
    assert_eq!(w.eps[1].landing_pool().peak_in_use_bytes(), 3 * (128 << 10));
    assert_eq!(w.pair.lease_violations(), 0);
    drop(kept);
    w.settle();
    let r = w.eps[1].resources();
    assert_eq!((r.landing_lent_bytes, r.landing_in_use_bytes), (Some(0), 0));
    assert_eq!(r.lent_out_bytes, Some(300_000));
    assert_eq!(w.pair.leases_out(1), 0);
    // The buffers serve the next messages: nothing more is carved.
    let carved = r.landing_carved_bytes;
    for i in 0..3u8 {
        let now = w.pair.now;
        w.eps[0].send(now, w.conns[0], pattern(100_000, i)).unwrap();
    }
    w.settle();
    assert_eq!(w.received(1).len(), 3);
    assert_eq!(w.eps[1].resources().landing_carved_bytes, carved);
}

#[test]
fn without_lending_every_byte_is_copied_out_once() {
    let mut w = World::new(Config::default());
    let now = w.pair.now;
    w.eps[0].send(now, w.conns[0], pattern(1 << 20, 7)).unwrap();
    w.settle();
    assert_eq!(w.received(1), vec![pattern(1 << 20, 7)]);
    let r = w.eps[1].resources();
    assert_eq!(r.lent_out_bytes, Some(0));
    // The message, plus the RTS frame that announced it.
    let copied = r.copied_out_bytes.unwrap_or(0);
    assert!((1 << 20) < copied && copied < (1 << 20) + 4096, "{copied}");
}

#[test]
fn streamed_fragments_are_copied_not_lent() {
    let cfg = Config {
        deliver_fragments: true,
        ..Config::default()
    };
    let mut w = lending(cfg);
    let now = w.pair.now;
    w.eps[0].send(now, w.conns[0], pattern(300_000, 3)).unwrap();
    w.settle();
    let r = w.eps[1].resources();
    assert_eq!((r.lent_out_bytes, r.landing_lent_bytes), (Some(0), Some(0)));
    assert_eq!(w.pair.leases_out(1), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Messages of every class (eager, one fragment, many) under a small landing budget,
    /// with the application dropping what it got at random points: every message arrives
    /// intact and in order, no WRITE ever lands in a lent buffer, and every buffer comes
    /// back.
    #[test]
    fn leases_never_share_a_buffer_with_a_write(
        sizes in prop::collection::vec(
            prop_oneof![1usize..4096, 4097usize..70_000, 70_000usize..600_000], 1..12),
        holds in prop::collection::vec(0usize..4, 12),
        budget_kib in prop_oneof![Just(128u64), Just(512), Just(4096)],
    ) {
        let cfg = Config {
            landing_budget: budget_kib << 10,
            ..Config::default()
        };
        let mut w = lending(cfg);
        for (i, &n) in sizes.iter().enumerate() {
            let now = w.pair.now;
            w.eps[0].send(now, w.conns[0], pattern(n, i as u8)).unwrap();
        }
        let mut got = 0;
        let mut held: Vec<Bytes> = Vec::new();
        for round in 0..1000 {
            w.settle();
            let new = take_received(&mut w);
            let moved = !new.is_empty();
            for m in new {
                prop_assert!(got < sizes.len(), "more messages than sent");
                prop_assert_eq!(&m, &pattern(sizes[got], got as u8), "message {}", got);
                got += 1;
                held.push(m);
            }
            if got == sizes.len() {
                break;
            }
            // Drop the oldest few held: at least one when nothing arrived this round.
            let k = holds[round % holds.len()].max(usize::from(!moved)).min(held.len());
            held.drain(..k);
        }
        prop_assert_eq!(got, sizes.len());
        prop_assert_eq!(w.pair.lease_violations(), 0);
        drop(held);
        w.settle();
        prop_assert_eq!(w.pair.leases_out(1), 0);
        let r = w.eps[1].resources();
        prop_assert_eq!((r.landing_lent_bytes, r.landing_in_use_bytes), (Some(0), 0));
        let large: usize = sizes.iter().filter(|&&n| n > 4096).sum();
        prop_assert_eq!(r.lent_out_bytes, Some(large as u64));
    }
}
