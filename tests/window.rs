//! The adaptive send window fills the link and shares it (issue 9): simulator runs of the
//! `scenarios/window/` files, shortened to keep the test fast, measured as `xrdma bench --case
//! window` measures them.

use xrdma_testbed::window_bench::{measure, JAIN_TARGET, ONE_SENDER_TARGET, TOTAL_TARGET};

fn scenario(name: &str) -> String {
    let path = format!("{}/scenarios/window/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("scenario file reads")
}

#[test]
fn two_senders_with_ecn_share_25g_fairly_and_fill_it() {
    // Before the delay-based decrease and the serialisation-aware target, these two split
    // 17 / 6 Gb/s (Jain 0.77) and a lone tail ran at three quarters of the link.
    let yaml = scenario("two-senders-25g.yaml").replace("count: 48", "count: 32");
    let f = measure("two-senders-25g.yaml", &yaml).expect("runs");
    assert!(f.windows >= 2, "{f:?}");
    assert!(f.intact, "{f:?}");
    assert!(f.total >= TOTAL_TARGET, "{f:?}");
    assert!(f.worst_jain.unwrap() >= JAIN_TARGET, "{f:?}");
}

#[test]
fn a_lone_sender_whose_first_fragments_were_small_still_fills_25g() {
    // A 16 KiB initial window makes the first fragments 16 KiB, so the smallest RTT is a
    // small fragment's; full 64 KiB fragments later carry 16 us more serialisation, which the
    // old law read as queueing above its 10 us target, freezing the window at one fragment.
    let yaml = scenario("one-sender-25g.yaml")
        .replace("count: 96", "count: 40")
        .replace(
            "adaptive-window: true",
            "adaptive-window: true\n  initial-window: 16KiB",
        );
    let f = measure("one-sender-25g.yaml", &yaml).expect("runs");
    assert!(f.windows >= 1 && f.intact, "{f:?}");
    assert!(f.total >= ONE_SENDER_TARGET, "{f:?}");
}

#[test]
fn a_lone_sender_fills_400g() {
    // 1 MiB takes 21 us at 400 Gb/s, about five base RTTs: when the next message was queued
    // only after the head was wholly posted, its RTS/CTS round trip left the link idle for
    // one RTT per message (84.8 % of the payload line rate). The sender now keeps the next
    // message queued and its RTS goes out while the head is on the wire.
    let yaml = scenario("one-sender-400g.yaml").replace("count: 1536", "count: 640");
    let f = measure("one-sender-400g.yaml", &yaml).expect("runs");
    assert!(f.windows >= 1 && f.intact, "{f:?}");
    assert!(f.total >= ONE_SENDER_TARGET, "{f:?}");
}
