//! The adaptive send window fills the link and shares it: simulator runs of the
//! `scenarios/window/` files, measured as `xrdma bench --case window` measures them. The
//! two-sender shares are swept over seeds: a share that holds for one seed is not shown.

use xrdma_tools::window_bench::{measure, WindowFigures, ONE_SENDER_TARGET, SCENARIOS};

fn scenario(name: &str) -> String {
    let path = format!("{}/../scenarios/window/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).expect("scenario file reads")
}

/// Seeds 1–20 of the shipped scenario `name`, unedited: every 10 ms window after 1 ms in which
/// both senders send has Jain ≥ 0.95 and ≥ 90 % of the payload line rate, and nothing drops.
fn sweep(name: &str) {
    let (_, yaml) = SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .expect("a shipped scenario");
    let rows: Vec<WindowFigures> = (1..=20)
        .map(|seed| measure(name, yaml, Some(seed)).expect("runs"))
        .collect();
    let bad: Vec<String> = rows
        .iter()
        .filter(|f| !f.met() || f.windows < 2)
        .map(WindowFigures::line)
        .collect();
    assert!(
        bad.is_empty(),
        "{}\n{}",
        WindowFigures::header(),
        bad.join("\n")
    );
}

#[test]
fn two_senders_with_ecn_share_fairly_at_every_seed() {
    // Before the target and the decrease pace stopped depending on the window, one sender
    // fell to the 4 KiB minimum at seeds 5, 7–9, 12 (worst-window Jain 0.57 at seed 5).
    sweep("two-senders-25g.yaml");
}

#[test]
fn two_senders_on_delay_alone_share_fairly_at_every_seed() {
    sweep("two-senders-25g-no-ecn.yaml");
}

#[test]
fn two_senders_with_dcqcn_share_fairly_at_every_seed() {
    // With a 300 µs DCQCN rate-increase timer each CNP left a sender slow for 1.5 ms of fast
    // recovery, and one sender's rate stayed low at 12 of these seeds (worst Jain 0.71).
    sweep("two-senders-25g-dcqcn.yaml");
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
    let f = measure("one-sender-25g.yaml", &yaml, None).expect("runs");
    assert!(f.windows >= 1 && f.intact, "{f:?}");
    assert!(f.total >= ONE_SENDER_TARGET, "{f:?}");
}

#[test]
fn a_lone_sender_fills_25g_100g_and_400g() {
    // At 400 Gb/s 1 MiB takes 21 us, about five base RTTs: when the next message was queued
    // only after the head was wholly posted, its RTS/CTS round trip left the link idle for
    // one RTT per message (84.8 % of the payload line rate). The sender now keeps the next
    // message queued and its RTS goes out while the head is on the wire.
    for name in [
        "one-sender-25g.yaml",
        "one-sender-100g.yaml",
        "one-sender-400g.yaml",
    ] {
        let f = measure(name, &scenario(name), None).expect("runs");
        assert!(f.windows >= 1 && f.intact, "{f:?}");
        assert!(f.met(), "{f:?}");
    }
}
