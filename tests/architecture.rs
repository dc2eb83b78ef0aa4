//! The crate boundaries of ARCHITECTURE.md hold: each project crate depends (normal and build
//! dependencies) on exactly the project crates the table there allows, so the core never
//! learns of a backend and the reports never of a backend or a run (they carry the core's
//! records, such as a transport's capabilities, as the core defines them).

use std::collections::{BTreeMap, BTreeSet};

mod workspace;

/// What each project crate may import, from ARCHITECTURE.md's table.
const ALLOWED: [(&str, &[&str]); 12] = [
    ("xrdma", &[]),
    ("xrdma-conformance", &["xrdma"]),
    ("xrdma-sim", &["xrdma", "xrdma-reports"]),
    ("xrdma-verbs", &["xrdma"]),
    ("xrdma-scenario", &["xrdma", "xrdma-sim", "xrdma-reports"]),
    ("xrdma-reports", &["xrdma"]),
    ("xrdma-observe", &["xrdma-scenario", "xrdma-reports"]),
    (
        "xrdma-runner",
        &[
            "xrdma",
            "xrdma-sim",
            "xrdma-verbs",
            "xrdma-scenario",
            "xrdma-reports",
            "xrdma-observe",
        ],
    ),
    (
        "xrdma-app",
        &[
            "xrdma",
            "xrdma-sim",
            "xrdma-runner",
            "xrdma-cluster",
            "xrdma-observe",
        ],
    ),
    (
        "xrdma-cluster",
        &[
            "xrdma",
            "xrdma-scenario",
            "xrdma-reports",
            "xrdma-observe",
            "xrdma-runner",
        ],
    ),
    (
        "xrdma-tools",
        &[
            "xrdma",
            "xrdma-sim",
            "xrdma-verbs",
            "xrdma-scenario",
            "xrdma-reports",
            "xrdma-observe",
            "xrdma-runner",
            "xrdma-cluster",
        ],
    ),
    (
        "xrdma-testbed",
        &[
            "xrdma",
            "xrdma-sim",
            "xrdma-scenario",
            "xrdma-reports",
            "xrdma-runner",
            "xrdma-cluster",
            "xrdma-tools",
        ],
    ),
];

#[test]
fn every_crate_imports_only_what_the_architecture_allows() {
    let meta = workspace::metadata();
    let packages = meta["packages"].as_array().expect("packages");
    let ours: BTreeSet<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(k, v)| (*k, v.iter().copied().collect()))
        .collect();
    assert_eq!(
        ours,
        allowed.keys().copied().collect(),
        "every workspace crate is in ARCHITECTURE.md's table"
    );
    for p in packages {
        let name = p["name"].as_str().expect("name");
        let deps: BTreeSet<&str> = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .map(|d| d["name"].as_str().expect("dependency name"))
            .filter(|d| ours.contains(d))
            .collect();
        assert_eq!(deps, allowed[name], "{name} imports {deps:?}");
    }
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).expect("a source directory") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn the_verbs_feature_is_gated_in_one_module_per_crate() {
    // The runner's fabric module chooses the real or the absent verbs fabric; the tools
    // crate's root the real or the absent `idle`. Every other caller is written once, for
    // both builds (ARCHITECTURE.md, "Backends").
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "src",
        "tools/src",
        "runner/src",
        "cluster/src",
        "observe/src",
        "scenarios/src",
        "reports/src",
        "xrdma/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut gated: Vec<String> = files
        .iter()
        .filter(|p| {
            std::fs::read_to_string(p)
                .expect("a source file")
                .contains("feature = \"verbs\"")
        })
        .map(|p| {
            p.strip_prefix(root)
                .expect("under the workspace")
                .display()
                .to_string()
        })
        .collect();
    gated.sort();
    assert_eq!(gated, ["runner/src/fabric/mod.rs", "tools/src/lib.rs"]);
}
