//! `xrdma ping --verb send|write|read` on the simulator: each verb's latency against the
//! figure the tools' fabric gives it, derived from its link rate and delay.
//!
//! The tools' fabric ([`sim_fabric`], [`SimConfig::default`]): two hosts behind one switch,
//! two links of `link_delay` each way, store and forward, so one packet train of wire sizes
//! `p` arrives after `2·delay + ser(Σp) + ser(max p)` (the second hop waits for the largest
//! packet's second serialization). Headers are `header_bytes` per packet, a WRITE's first
//! packet carries a RETH, a READ request is a header and a RETH, a READ response's first and
//! last packets carry an AETH. The hosts are ideal (no CPU cost).

use xrdma::Span;
use xrdma_sim::{SimConfig, AETH_BYTES, RETH_BYTES};
use xrdma_tools::ping::PingOptions;
use xrdma_tools::sim_fabric;
use xrdma_tools::verb_ping::{run, Verb, SIM_POLL_PERIOD};

fn cfg() -> SimConfig {
    SimConfig::default()
}

fn ser(bytes: u64) -> u64 {
    Span::serialization(bytes, cfg().link_rate_bps).as_ps()
}

/// The arrival of a train of packets of wire sizes `packets` after its first bit leaves.
fn one_way(packets: &[u64]) -> u64 {
    let total: u64 = packets.iter().sum();
    let largest = packets.iter().copied().max().unwrap_or(0);
    2 * cfg().link_delay.as_ps() + ser(total) + ser(largest)
}

/// The wire sizes of a message of `size` bytes: `first_extra` more bytes on the first
/// packet, `last_extra` on the last (both on a single packet).
fn train(size: u64, first_extra: u64, last_extra: u64) -> Vec<u64> {
    let (hdr, mtu) = (u64::from(cfg().header_bytes), u64::from(cfg().path_mtu()));
    let n = size.div_ceil(mtu).max(1);
    (0..n)
        .map(|k| {
            let payload = (size - k * mtu).min(mtu);
            hdr + payload
                + if k == 0 { first_extra } else { 0 }
                + if k + 1 == n { last_extra } else { 0 }
        })
        .collect()
}

/// The wire size of a transport ACK (header + AETH).
fn ack_wire() -> u64 {
    u64::from(cfg().header_bytes + AETH_BYTES)
}

/// The arrival of an answer of wire sizes `packets`, posted at the request's arrival: the
/// answering NIC has put the request's ACK on the wire then, so the answer's train starts
/// with it (an answer smaller than the ACK also waits for it on the second hop).
fn answer(packets: &[u64]) -> u64 {
    let mut train = vec![ack_wire()];
    train.extend_from_slice(packets);
    one_way(&train)
}

fn opts(size: u64) -> PingOptions {
    PingOptions {
        size,
        iters: 100,
        warmup: 5,
    }
}

fn measure(verb: Verb, size: u64) -> Vec<u64> {
    let r = run(&mut sim_fabric().unwrap(), verb, &opts(size)).unwrap();
    assert_eq!(r.samples_ps.len(), 100);
    assert_eq!(r.stats.iterations, 100);
    assert_eq!(r.verb, verb);
    r.samples_ps
}

#[test]
fn a_send_half_round_trip_is_one_way_of_the_send_behind_the_previous_ack() {
    for size in [64, 4096, 65_536] {
        let want = answer(&train(size, 0, 0));
        let got = measure(Verb::Send, size);
        assert!(
            got.iter().all(|&s| s == want),
            "{size}: {:?} != {want}",
            &got[..3]
        );
    }
    // 64 B: one packet of 82 + 64 = 146 B: 2000 + 2 * 11.68 + 6.88 = 2030.24 ns.
    assert_eq!(answer(&train(64, 0, 0)), 2_030_240);
}

#[test]
fn a_write_half_round_trip_is_the_send_one_plus_the_reth_within_one_poll_period() {
    // The receiver sees the last byte at most one poll period late; its answer queues behind
    // the ACK of the WRITE it saw, which takes longer than the period, so only the client's
    // late look shows: at most one period per round trip, half of it in the figure.
    assert!(SIM_POLL_PERIOD.as_ps() < ser(ack_wire()));
    let tolerance = SIM_POLL_PERIOD.as_ps() / 2;
    for size in [64, 4096, 65_536] {
        let want = answer(&train(size, u64::from(RETH_BYTES), 0));
        let got = measure(Verb::Write, size);
        assert!(
            got.iter().all(|&s| s >= want && s <= want + tolerance),
            "{size}: {:?} not within {tolerance} ps above {want}",
            &got[..3]
        );
        // Beside SEND's: the same wire time but for the RETH's 16 bytes, serialised twice.
        let send = measure(Verb::Send, size);
        let reth = 2 * ser(u64::from(RETH_BYTES));
        assert!(
            got[0] >= send[0] + reth && got[0] <= send[0] + reth + tolerance,
            "{size}"
        );
    }
    // 64 B: 82 + 16 + 64 = 162 B: 2000 + 2 * 12.96 + 6.88 = 2032.80 ns.
    assert_eq!(answer(&train(64, u64::from(RETH_BYTES), 0)), 2_032_800);
}

#[test]
fn a_read_is_a_full_round_trip_of_the_request_and_the_response_not_halved() {
    for size in [64, 4096, 65_536] {
        let hdr = u64::from(cfg().header_bytes);
        let request = one_way(&[hdr + u64::from(RETH_BYTES)]);
        let aeth = u64::from(AETH_BYTES);
        let response = one_way(&train(size, aeth, if size > 1024 { aeth } else { 0 }));
        let want = request + response;
        let got = measure(Verb::Read, size);
        assert!(
            got.iter().all(|&s| s == want),
            "{size}: {:?} != {want}",
            &got[..3]
        );
    }
    // 64 B: a 98 B request and a 150 B response: 4000 + 2 * 7.84 + 2 * 12 = 4039.68 ns.
    assert_eq!(measure(Verb::Read, 64)[0], 4_039_680);
}

#[test]
fn a_larger_message_costs_its_serialisation_at_the_link_rate() {
    // 64 KiB more than 4 KiB: 60 KiB of payload and 60 more headers, once at the link rate
    // (the pipeline's second hop adds only the largest packet, the same for both).
    let extra = ser(60 * 1024 + 60 * u64::from(cfg().header_bytes));
    for verb in [Verb::Send, Verb::Read] {
        let small = measure(verb, 4096)[0];
        let large = measure(verb, 65_536)[0];
        assert_eq!(large - small, extra, "{verb:?}");
    }
    // At 100 Gb/s: 66,360 B in 5308.8 ns.
    assert_eq!(extra, 5_308_800);
}

#[test]
fn the_sizes_and_counts_a_verb_cannot_ping_are_refused() {
    let mut f = sim_fabric().unwrap();
    for verb in [Verb::Write, Verb::Read] {
        let e = run(&mut f, verb, &opts(0)).unwrap_err().to_string();
        assert!(e.contains("at least 1 byte"), "{verb:?}: {e}");
    }
    let zero = PingOptions {
        iters: 0,
        ..opts(64)
    };
    let e = run(&mut f, Verb::Send, &zero).unwrap_err().to_string();
    assert!(e.contains("--iters"), "{e}");
    let e = run(&mut f, Verb::Xrdma, &opts(64)).unwrap_err().to_string();
    assert!(e.contains("xrdma core"), "{e}");
    // A zero-length SEND is a legal ping (perftest's sizes start at 2 B, verbs' at 0): its
    // 82 B packet is shorter than the 86 B ACK ahead of it, so it waits for the ACK on both
    // hops: 2000 + ser(168 B) 13.44 + ser(86 B) 6.88 = 2020.32 ns.
    let r = run(&mut sim_fabric().unwrap(), Verb::Send, &opts(0)).unwrap();
    assert_eq!(r.samples_ps[0], answer(&[82]));
    assert_eq!(answer(&[82]), 2_020_320);
}
