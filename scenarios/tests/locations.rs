//! Where errors are reported in texts a hand-written scanner gets wrong: explicit keys,
//! anchors, tags and aliases, quoted keys, flow mappings inside block ones, sequence items,
//! keys of the same name in other mappings.

mod common;

use common::{err, ok, with};
use xrdma_scenario::locate_key;

#[test]
fn an_explicit_key_is_blamed_itself() {
    // `? kmin` writes the key on its own line; the error names kmin (line 6, after "? "), not
    // kmax.
    assert_eq!(
        err(&with(
            "sim:\n  ecn:\n    ? kmin\n    : 2MB\n    kmax: 1MB\n"
        )),
        "scenarios/x.yaml:6:7: sim.ecn.kmin: Kmin (2097152 bytes) is above Kmax (1048576 \
         bytes): need kmin ≤ kmax"
    );
}

#[test]
fn keys_of_an_anchored_or_tagged_mapping_are_found() {
    // `kmin` at column 22, after the anchor `&thresholds {`.
    assert_eq!(
        err(&with("sim:\n  ecn: &thresholds { kmin: 2MB, kmax: 1MB }\n")),
        "scenarios/x.yaml:5:22: sim.ecn.kmin: Kmin (2097152 bytes) is above Kmax (1048576 \
         bytes): need kmin ≤ kmax"
    );
    assert_eq!(
        err(&with("sim:\n  ecn: !!map { kmin: 2MB, kmax: 1MB }\n")),
        "scenarios/x.yaml:5:16: sim.ecn.kmin: Kmin (2097152 bytes) is above Kmax (1048576 \
         bytes): need kmin ≤ kmax"
    );
    // The same through locate_key: `headroom` sits after `&p {`.
    let text = "sim:\n  pfc: &p { headroom: 1MiB }\n";
    assert_eq!(
        locate_key(text, &["sim", "pfc", "headroom"]),
        Some((2, 13, 3))
    );
}

#[test]
fn aliases_are_read_and_located() {
    // An alias repeats the anchored item: the error is at the anchored item's key.
    let text = "name: t\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages: [ &m { size: 0 }, *m ]\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:6:22: workload.incast.messages[0].size: must be at least 1 byte"
    );
    // An alias as a value: the key that holds it is blamed.
    assert_eq!(
        err(&with(
            "sim:\n  header-bytes: &zero 0B\n  pfc: { xoff: *zero }\n"
        )),
        "scenarios/x.yaml:6:10: sim.pfc.xoff: must be at least 1 byte"
    );
    // A mapping's alias where a string belongs: a type error at the alias, no panic.
    assert_eq!(
        err("name: t\nworkload: &w\n  incast: { senders: 2, receiver: 0, messages: [ { size: 4KiB } ] }\ndescription: *w\n"),
        "scenarios/x.yaml:2:11: description: invalid type: map, expected a string"
    );
    // Aliases of values that are valid where they are repeated.
    let s = ok(&with(
        "sim:\n  link-delay: &d 2us\n  cnp-interval: *d\n  pfc: &p { xoff: 100KiB }\n",
    ));
    assert_eq!(s.sim.unwrap().cnp_interval, xrdma::Span::from_us(2));
}

#[test]
fn quoted_keys_are_located() {
    assert_eq!(
        err(&with("sim:\n  pfc: { xoff: 10KiB, \"xon\": 20KiB }\n")),
        "scenarios/x.yaml:5:23: sim.pfc.xon: XON (20480 bytes) is above XOFF (10240 bytes): \
         need xon ≤ xoff"
    );
    assert_eq!(
        err(&with("sim:\n  ecn:\n    \"kmin\": 2MB\n    'kmax': 1MB\n")),
        "scenarios/x.yaml:6:5: sim.ecn.kmin: Kmin (2097152 bytes) is above Kmax (1048576 \
         bytes): need kmin ≤ kmax"
    );
}

#[test]
fn flow_mappings_inside_block_mappings() {
    // A flow mapping in a flow mapping in a block mapping: `for` at column 49.
    assert_eq!(
        err(&with(
            "sim:\n  faults: { stop-reposting: { host: 1, at: 1us, for: 0us } }\n"
        )),
        "scenarios/x.yaml:5:49: sim.faults.stop-reposting.for: must be longer than 0"
    );
    // A value refused as it is read is located at the value: `0us` at column 54.
    assert_eq!(
        err(&with(
            "sim:\n  faults: { link-down: { link: host 1, at: 1us, for: 0us } }\n"
        )),
        "scenarios/x.yaml:5:54: sim.faults.link-down.for: must be longer than 0"
    );
    // A flow mapping over two lines.
    assert_eq!(
        err(&with(
            "sim:\n  ecn: { pmax: 0.2,\n         kmin: 2MB, kmax: 1MB }\n"
        )),
        "scenarios/x.yaml:6:10: sim.ecn.kmin: Kmin (2097152 bytes) is above Kmax (1048576 \
         bytes): need kmin ≤ kmax"
    );
}

#[test]
fn sequence_items_are_located_by_index() {
    let text = "name: t\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages:\n      - { size: 64KiB, count: 4 }\n      - { size: 0 }\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:8:11: workload.incast.messages[1].size: must be at least 1 byte"
    );
    let text = "name: t\nworkload:\n  incast:\n    senders: 2\n    receiver: 0\n    messages:\n      - size: 64KiB\n      - size: 1KiB\n        count: 0\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:9:9: workload.incast.messages[1].count: must be at least 1"
    );
}

#[test]
fn a_key_is_found_in_its_own_mapping_only() {
    // `for` is written under workload.echo.stall (valid) and under sim.faults.stop-reposting
    // (zero): the second one is blamed.
    let text = "name: t\nworkload:\n  echo:\n    clients: 1\n    server: 0\n    requests: 10\n    request-size: 4KiB\n    stall: { host: 0, at: 1us, for: 1us }\nsim:\n  faults:\n    stop-reposting:\n      host: 0\n      at: 1us\n      for: 0us\n";
    assert_eq!(
        err(text),
        "scenarios/x.yaml:14:7: sim.faults.stop-reposting.for: must be longer than 0"
    );
    // locate_key walks the path: `kmin` under sim.ecn, not the one under `other`.
    let text = "other: { kmin: 1 }\nsim:\n  ecn:\n    kmin: 1KB\n";
    assert_eq!(locate_key(text, &["sim", "ecn", "kmin"]), Some((4, 5, 3)));
    assert_eq!(locate_key(text, &["other", "kmin"]), Some((1, 10, 2)));
    // `ecn:` has no value; the `kmin` below it is sim's own key, not ecn's: the deepest key of
    // sim.ecn.kmin that is written is `ecn`.
    let text = "sim:\n  ecn:\n  kmin: 1KB\n";
    assert_eq!(locate_key(text, &["sim", "ecn", "kmin"]), Some((2, 3, 2)));
    assert_eq!(locate_key(text, &["sim", "kmin"]), Some((3, 3, 2)));
}

#[test]
fn the_initial_window_outside_its_bounds_is_blamed_itself() {
    // initial-window is the value that must sit within [min-window, max-window]: the error is
    // at its line whichever bound it crosses, and one byte is "1 byte".
    assert_eq!(
        err(&with("xrdma:\n  initial-window: 1B\n  min-window: 4KiB\n")),
        "scenarios/x.yaml:5:3: xrdma.initial-window: initial-window (1 byte) is below \
         min-window (4096 bytes): need min-window ≤ initial-window ≤ max-window"
    );
    // Only min-window written: it is the one blamed.
    assert_eq!(
        err(&with("xrdma:\n  min-window: 1MiB\n")),
        "scenarios/x.yaml:5:3: xrdma.min-window: initial-window (65536 bytes) is below \
         min-window (1048576 bytes): need min-window ≤ initial-window ≤ max-window"
    );
}

#[test]
fn a_byte_order_mark_is_read_past_and_does_not_shift_places() {
    // With a UTF-8 BOM the file read as no scenario at all ("missing field `workload`", 1:2).
    let text = format!(
        "\u{feff}{}",
        with("sim:\n  ecn: { kmin: 2MB, kmax: 1MB }\n")
    );
    assert_eq!(
        err(&text),
        "scenarios/x.yaml:5:10: sim.ecn.kmin: Kmin (2097152 bytes) is above Kmax (1048576 \
         bytes): need kmin ≤ kmax"
    );
    assert_eq!(ok(&format!("\u{feff}{}", with(""))).name, "t");
}

#[test]
fn an_unclosed_flow_mapping_is_a_syntax_error_not_a_bad_value() {
    // The next line was read into the mapping's last value, which was then blamed for a bad
    // unit: "sim.ecn.kmax: `1MB seed` has unknown unit".
    let e = err(&with("sim:\n  ecn: { kmin: 2MB, kmax: 1MB\n  seed: 3\n"));
    assert_eq!(
        e,
        "scenarios/x.yaml:6:7: did not find expected ',' or '}', while parsing a flow mapping \
         at line 5 column 8"
    );
}

#[test]
fn a_repeated_key_is_blamed_where_it_is_repeated() {
    // Both were reported at the start of their mapping (1:1 for the top level).
    assert_eq!(
        err(&format!("{}name: u\n", with("sim:\n  seed: 3\n"))),
        "scenarios/x.yaml:6:1: name: `name` is written twice in this mapping (once is allowed)"
    );
    assert_eq!(
        err(&with("sim:\n  seed: 3\n  pfc: {}\n  seed: 4\n")),
        "scenarios/x.yaml:7:3: sim.seed: `seed` is written twice in this mapping (once is \
         allowed)"
    );
}

#[test]
fn a_name_too_long_for_a_directory_is_refused_by_validation() {
    // 300 characters passed `validate` and failed at run time creating results/<name>.
    let workload =
        "workload:\n  incast: { senders: 2, receiver: 0, messages: [ { size: 4KiB } ] }\n";
    let e = err(&format!("name: {}\n{workload}", "a".repeat(300)));
    assert!(
        e.starts_with(
            "scenarios/x.yaml:1:1: name: is 300 bytes long; it names result directories, so \
             at most 200 bytes"
        ),
        "{e}"
    );
    let most = "b".repeat(xrdma_scenario::MAX_NAME_BYTES);
    ok(&format!("name: {most}\n{workload}"));
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    // Reading a FIFO as a scenario blocked forever waiting for a writer.
    let dir = std::env::temp_dir().join(format!("xrdma-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let fifo = dir.join("s.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let e = xrdma_scenario::load(&fifo).expect_err("a FIFO is no scenario");
    std::fs::remove_dir_all(&dir).ok();
    assert!(format!("{e:?}").contains("not a regular file"), "{e:?}");
}

#[test]
fn a_file_that_is_no_scenario_is_not_printed_back() {
    // A job secret given as the scenario was printed whole in the error, into CI logs.
    let secret = "226643d09f1d2c49f4d2db42ee959ce05dd773a8f71c07be6631521b2299971f";
    let e = err(&format!("{secret}\n"));
    assert!(!e.contains(&secret[..16]), "{e}");
    assert!(e.contains("<64 characters, not shown>"), "{e}");
    // A short text stays: it shows the mistake.
    let e = err(&with("sim:\n  ecn: { kmin: 1MB seed }\n"));
    assert!(e.contains("1MB seed"), "{e}");
}

#[test]
fn flow_collections_nested_too_deep_are_refused_at_the_first_bracket_too_many() {
    // Refused before the YAML parsers read the text: the deserializer's own recursion limit
    // ("recursion limit exceeded") came only after work that grew with the square of the
    // depth, minutes for a 400 KB file.
    let depth = 2000;
    let text = with(&format!(
        "sim:\n  seed: {}1{}\n",
        "[1,".repeat(depth),
        "]".repeat(depth)
    ));
    assert_eq!(
        err(&text),
        "scenarios/x.yaml:5:393: flow collections (`[`, `{`) nested deeper than 128 levels"
    );
}
