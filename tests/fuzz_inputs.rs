//! Fuzzing the inputs a user or a peer controls (a stable-toolchain harness on proptest): the
//! scenario loader and checker with mutated shipped scenarios, and the bootstrap's wire
//! framing with mutated and random frames. Neither may panic; a refused scenario's error
//! names the file; a frame that parses re-encodes to the same frame.
//!
//! `PROPTEST_CASES=N` sets the cases per property (default 256); failures are kept in
//! `proptest-regressions/` and replayed first, and each defect found is a plain test below.

use proptest::prelude::*;
use std::path::Path;
use xrdma_cluster::bootstrap::{encode_frame, parse_frame, ConnRecord, Frame, Hello};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// The shipped scenarios (`scenarios/*.yaml` and one level of folders below): the seeds the
/// mutations start from.
fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    if let Ok(entries) = std::fs::read_dir(&root) {
        let mut subs: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        dirs.extend(subs);
    }
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == "yaml") {
                out.push(std::fs::read_to_string(&p).expect("readable"));
            }
        }
    }
    assert!(out.len() >= 5, "the shipped scenarios are the corpus");
    out
}

/// Values a hostile or careless user writes.
const HOSTILE: &[&str] = &[
    "0",
    "-1",
    "1e400",
    "nan",
    "~",
    "[]",
    "{}",
    "\"\"",
    "18446744073709551616",
    "1.5",
    "99999999999999999999GiB",
    "0B",
    "1ns",
    "0us",
    "1000G/s",
    "0/s",
    "1Tbps",
    "0Gbps",
    "yes",
    "[1, 2",
    "{ a: 1 }",
    "!!binary AA==",
    "&a 1",
    "*a",
    "1KiB",
    "4294967296",
    "1e-30s",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the value after the `k`th colon with a hostile one.
    Value(usize, usize),
    /// Delete line `k`.
    DeleteLine(usize),
    /// Duplicate line `k`.
    DuplicateLine(usize),
    /// Overwrite byte `k` with `b`.
    Byte(usize, u8),
    /// Cut the text at `k`.
    Truncate(usize),
    /// Indent line `k` by two more spaces.
    Indent(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0..HOSTILE.len()).prop_map(|(k, v)| Mutation::Value(k, v)),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<u8>()).prop_map(|(k, b)| Mutation::Byte(k, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::Indent),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len().max(1);
    match *m {
        Mutation::Value(k, v) => {
            let colons: Vec<usize> = text.match_indices(": ").map(|(i, _)| i).collect();
            let Some(&at) = colons.get(k % colons.len().max(1)) else {
                return text.to_string();
            };
            let end = text[at..].find('\n').map_or(text.len(), |e| at + e);
            format!("{}: {}{}", &text[..at], HOSTILE[v], &text[end..])
        }
        Mutation::DeleteLine(k) => {
            let mut l = lines.clone();
            if !l.is_empty() {
                l.remove(k % n);
            }
            l.join("\n")
        }
        Mutation::DuplicateLine(k) => {
            let mut l = lines.clone();
            if !l.is_empty() {
                l.insert(k % n, lines[k % n]);
            }
            l.join("\n")
        }
        Mutation::Byte(k, b) => {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.is_empty() {
                let i = k % bytes.len();
                bytes[i] = b;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Mutation::Truncate(k) => {
            let cut = k % (text.len() + 1);
            let cut = (0..=cut)
                .rev()
                .find(|&c| text.is_char_boundary(c))
                .unwrap_or(0);
            text[..cut].to_string()
        }
        Mutation::Indent(k) => {
            let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            if !l.is_empty() {
                l[k % n] = format!("  {}", l[k % n]);
            }
            l.join("\n")
        }
    }
}

/// Parse and check `text` as `fuzz.yaml`: never a panic; an error names the file.
fn load_and_check(text: &str) {
    let path = Path::new("fuzz.yaml");
    match xrdma_scenario::parse(text, path) {
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains("fuzz.yaml"),
                "an error without the file: {msg}"
            );
        }
        Ok(sc) => {
            if let Err(e) = xrdma_runner::check::check(&sc) {
                let msg = format!("{e:#}");
                assert!(
                    msg.contains("fuzz.yaml"),
                    "an error without the file: {msg}"
                );
            }
        }
    }
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (any::<u32>(), "[a-z0-9-]{0,12}", "[0-9a-f]{0,32}")
            .prop_map(|(rank, name, hash)| { Frame::Hello(Hello::new(&name, &hash, rank)) }),
        proptest::collection::vec((any::<u32>(), any::<u32>()), 0..4).prop_map(|v| Frame::Conns {
            conns: v
                .into_iter()
                .filter_map(|(s, r)| ConnRecord::new(s, r, &(s, r)).ok())
                .collect()
        }),
        Just(Frame::Start),
        Just(Frame::Bye),
        "[0-9a-f]{0,64}".prop_map(|nonce| Frame::Challenge { nonce }),
        "[0-9a-f]{0,64}".prop_map(|mac| Frame::Proof { mac }),
        (
            any::<u32>(),
            any::<[u8; 4]>(),
            any::<u16>(),
            "[0-9a-f]{0,64}"
        )
            .prop_map(|(size, ip, port, mac)| Frame::Join {
                size,
                address: std::net::SocketAddr::from((ip, port)),
                mac,
            }),
        (
            proptest::collection::vec((any::<[u8; 16]>(), any::<u16>()), 0..4),
            "[0-9a-f]{0,64}"
        )
            .prop_map(|(v, mac)| Frame::Table {
                ranks: v.into_iter().map(std::net::SocketAddr::from).collect(),
                mac,
            }),
        any::<i64>().prop_map(|n| Frame::Records {
            records: serde_json::json!({ "n": n })
        }),
        any::<u64>().prop_map(|n| Frame::Device {
            device: serde_json::json!({ "device-counters": { "sent_pkts": n } })
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn mutated_scenarios_are_refused_cleanly_or_run_checks(
        seed in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..5),
    ) {
        let seeds = seeds();
        let mut text = seeds[seed % seeds.len()].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        load_and_check(&text);
    }

    #[test]
    fn frames_round_trip_and_mutated_frames_never_panic(
        f in frame(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        cut in any::<usize>(),
    ) {
        let wire = encode_frame(&f).expect("encodes");
        let (back, used) = parse_frame(&wire).expect("parses").expect("whole");
        prop_assert_eq!(&back, &f);
        prop_assert_eq!(used, wire.len());
        // Every prefix is incomplete, not an error.
        prop_assert!(matches!(parse_frame(&wire[..cut % wire.len()]), Ok(None)));
        let mut bad = wire.clone();
        for (i, b) in flips {
            let i = i % bad.len();
            bad[i] = b;
        }
        if let Ok(Some((g, used))) = parse_frame(&bad) {
            prop_assert!(used <= bad.len());
            let again = encode_frame(&g).expect("re-encodes");
            prop_assert_eq!(parse_frame(&again).expect("parses").map(|(h, _)| h), Some(g));
        }
    }

    #[test]
    fn random_bytes_are_never_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_frame(&bytes);
    }
}

#[test]
fn a_length_above_the_limit_is_refused_before_its_body_arrives() {
    let e = parse_frame(&u32::MAX.to_be_bytes()).unwrap_err();
    assert!(e.contains("exceeds the limit"), "{e}");
}
