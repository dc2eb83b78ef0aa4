//! The endpoint is sans-IO: no code under `src/endpoint/` names the `Transport` trait or asks
//! a transport anything (its clock, a QP's state). Observations come in as inputs; the driver
//! (`src/driver.rs`) is the only code that calls the transport. Staging copies go through
//! `LocalMemory`, which the driver lends `poll_op`.

use std::path::Path;

/// Code lines of `text` that name the transport: the `Transport` trait (not
/// `TransportError`) or a transport's observation calls.
fn transport_uses(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter(|l| {
            let named = l.match_indices("Transport").any(|(i, _)| {
                let after = &l[i + "Transport".len()..];
                let before = &l[..i];
                !after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    && !before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
            });
            named || l.contains("observe_qp") || l.contains("t.now()")
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn no_endpoint_file_names_the_transport() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/endpoint");
    let mut found = Vec::new();
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("src/endpoint is readable") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            files += 1;
            let text = std::fs::read_to_string(&path).expect("a source file is readable");
            for l in transport_uses(&text) {
                found.push(format!("{}: {}", path.display(), l.trim()));
            }
        }
    }
    assert!(files > 5, "only {files} files under {}", dir.display());
    assert!(
        found.is_empty(),
        "the endpoint calls its transport:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_transport_call_and_not_an_error_type() {
    assert_eq!(
        transport_uses("use crate::Transport;\nlet s = t.observe_qp(q);\n// Transport\n").len(),
        2
    );
    assert!(transport_uses("fn f(e: TransportError) {}\nlet x = TransportLayer;").is_empty());
}
