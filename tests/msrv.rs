//! The Rust versions the project declares are its true minimums: every package's
//! `rust-version` is at least what each of its locked dependencies declares (normal and
//! build, transitively, as resolved for this host: what building it as a dependency needs),
//! and the README states the test suite's minimum, which also counts every dev-dependency.
//! The code's own use of newer standard-library items is checked by clippy's
//! `incompatible_msrv` lint against the same field (CI runs clippy with `-D warnings`).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

fn version(v: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = v.split('.').map(|p| p.parse().unwrap_or(0)).collect();
    parts.resize(3, 0);
    parts
}

fn cargo(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("utf-8")
}

#[test]
fn every_package_declares_at_least_what_its_dependencies_need() {
    let host = cargo(&["-vV"])
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("cargo -vV names the host");
    // Not `--offline`: metadata needs every locked package's manifest, including the verbs
    // backend's build dependencies that no earlier step of the suite downloads, and a fresh
    // machine's cargo home holds none of them (`.ci/run` starts from an empty one).
    let meta: Value = serde_json::from_str(&cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--filter-platform",
        &host,
    ]))
    .expect("metadata is JSON");
    let packages: BTreeMap<&str, &Value> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| (p["id"].as_str().expect("id"), p))
        .collect();
    let deps: BTreeMap<&str, Vec<(&str, bool)>> = meta["resolve"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            let d = n["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .map(|d| {
                    let dev_only = d["dep_kinds"]
                        .as_array()
                        .expect("dep_kinds")
                        .iter()
                        .all(|k| k["kind"] == "dev");
                    (d["pkg"].as_str().expect("pkg"), dev_only)
                })
                .collect();
            (n["id"].as_str().expect("id"), d)
        })
        .collect();
    let mut problems = Vec::new();
    for member in meta["workspace_members"].as_array().expect("members") {
        let root = member.as_str().expect("member id");
        let declared = packages[root]["rust_version"]
            .as_str()
            .unwrap_or_else(|| panic!("{root} declares no rust-version"));
        for p in reachable(&deps, root, false) {
            let pkg = packages[p];
            if let Some(need) = pkg["rust_version"].as_str() {
                if version(need) > version(declared) {
                    problems.push(format!(
                        "{} declares rust-version {declared}, but {} {} needs {need}",
                        packages[root]["name"], pkg["name"], pkg["version"]
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The test suite builds every member with its dev-dependencies.
    let mut suite = version("0");
    let mut needs = "";
    for member in meta["workspace_members"].as_array().expect("members") {
        for p in reachable(&deps, member.as_str().expect("member id"), true) {
            if let Some(v) = packages[p]["rust_version"].as_str() {
                if version(v) > suite {
                    (suite, needs) = (version(v), v);
                }
            }
        }
    }
    let short = needs.trim_end_matches(".0");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    assert!(
        readme.contains(&format!("test suite needs Rust {short}")),
        "README.md must say the test suite needs Rust {short}"
    );
}

/// Packages reachable from `root` through normal and build dependencies, and through
/// `root`'s own dev-dependencies when `with_dev` is set.
fn reachable<'a>(
    deps: &BTreeMap<&'a str, Vec<(&'a str, bool)>>,
    root: &'a str,
    with_dev: bool,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = deps[root]
        .iter()
        .filter(|&&(_, dev)| with_dev || !dev)
        .map(|&(p, _)| p)
        .collect();
    while let Some(p) = stack.pop() {
        if seen.insert(p) {
            stack.extend(deps[p].iter().filter(|&&(_, dev)| !dev).map(|&(q, _)| q));
        }
    }
    seen
}
