//! The book cannot rot: in `README.md`, `ARCHITECTURE.md` and every chapter under `docs/`,
//! - every `xrdma` command (in a code block or a code span; `cargo run --release --` counts as
//!   `xrdma`) names a subcommand the binary has, and each `--flag` it passes is one that
//!   subcommand's `--help` lists;
//! - every file of the repository it names (`scenarios/….yaml`, `ci/….sh`, `ci/….txt`) exists;
//! - every relative link resolves to a file, and a `#fragment` to one of its headings
//!   (GitHub's anchors: lower case, punctuation dropped, spaces as `-`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents the test reads: the README, ARCHITECTURE.md and every chapter of `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut chapters: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    assert!(
        chapters.len() >= 5,
        "docs/ holds {} chapters",
        chapters.len()
    );
    docs.extend(chapters);
    docs
}

/// The code in `text`: the lines of fenced blocks, and each inline code span.
fn code_of(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            out.push(line.to_string());
        } else {
            out.extend(line.split('`').skip(1).step_by(2).map(str::to_string));
        }
    }
    out
}

/// Each `xrdma` command in a line of code: whether `xrdma` leads the line, and its words up
/// to the end of the command (a pipe, `;`, `&&`, `)`, a comment or the end of the line).
fn commands_in(code: &str) -> Vec<(bool, Vec<String>)> {
    let code = code.replace("cargo run --release --", "xrdma");
    let words: Vec<&str> = code.split_whitespace().collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_start_matches(['(', '$', '"']);
        if w != "xrdma" && !w.ends_with("/xrdma") {
            continue;
        }
        let cmd: Vec<String> = words[i + 1..]
            .iter()
            .take_while(|w| !matches!(**w, "|" | ";" | "&&" | "||" | "#" | ">" | "2>&1"))
            .map(|w| w.trim_end_matches([')', ';', '"', ',']).to_string())
            .collect();
        out.push((i == 0, cmd));
    }
    out
}

/// GitHub's anchor of a heading's text.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of every heading of a Markdown file (outside code blocks).
fn anchors_of(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The relative link targets of a Markdown text: `](target)` not starting with a scheme.
fn links_of(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &text[i + 2..];
            let end = rest.find(')')?;
            let target = &rest[..end];
            (!target.contains("://") && !target.starts_with("mailto:")).then(|| target.into())
        })
        .collect()
}

/// `xrdma … --help`, cached by the subcommand path.
struct Help(BTreeMap<Vec<String>, Option<String>>);

impl Help {
    fn of(&mut self, path: &[String]) -> Option<String> {
        self.0
            .entry(path.to_vec())
            .or_insert_with(|| {
                let o = Command::new(env!("CARGO_BIN_EXE_xrdma"))
                    .args(path)
                    .arg("--help")
                    .output()
                    .expect("xrdma runs");
                o.status
                    .success()
                    .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
            })
            .clone()
    }

    /// The subcommand names a help text lists under `Commands:`.
    fn subcommands(text: &str) -> BTreeSet<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    }
}

/// What is wrong with one command: its subcommand path and unknown flags. A word after `xrdma`
/// that is no subcommand is an error where `xrdma` leads the line (`leads`), and otherwise
/// prose or an argument (`… in use by xrdma pid N`, `script.sh target/release/xrdma 4`).
fn check_command(help: &mut Help, leads: bool, cmd: &[String]) -> Result<(), String> {
    let mut path: Vec<String> = Vec::new();
    let mut text = help.of(&path).ok_or("xrdma --help failed")?;
    let top = Help::subcommands(&text);
    match cmd.first() {
        Some(w) if !w.starts_with('-') && !top.contains(w) => {
            let word = w.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            return if leads && word {
                Err(format!("`{w}` is not a subcommand of xrdma"))
            } else {
                Ok(())
            };
        }
        _ => {}
    }
    for w in cmd {
        let subs = Help::subcommands(&text);
        if subs.is_empty() {
            break;
        }
        if !subs.contains(w) {
            if path.is_empty() || w.starts_with('-') {
                return Err(format!(
                    "`{w}` is not a subcommand of `xrdma {}`",
                    path.join(" ")
                ));
            }
            break;
        }
        path.push(w.clone());
        text = help.of(&path).ok_or("--help failed")?;
    }
    for w in cmd.iter().filter(|w| w.starts_with("--") && w.len() > 2) {
        let flag = w.split('=').next().unwrap_or(w);
        let flag = flag.trim_end_matches(['.', ',', ':', ']']);
        if !text.contains(&format!("{flag} ")) && !text.contains(&format!("{flag}\n")) {
            return Err(format!("`xrdma {}` has no flag {flag}", path.join(" ")));
        }
    }
    Ok(())
}

/// Paths of the repository that a code line names.
fn repo_paths(code: &str) -> Vec<String> {
    code.split(|c: char| c.is_whitespace() || matches!(c, '`' | '(' | ')' | '"' | '\'' | ',' | '='))
        .filter(|w| {
            (w.starts_with("scenarios/") && w.ends_with(".yaml"))
                || (w.starts_with("ci/") && (w.ends_with(".sh") || w.ends_with(".txt")))
        })
        .filter(|w| !w.contains(['*', '<', '{', '$']))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_command_file_and_link_of_the_book_is_real() {
    let mut help = Help(BTreeMap::new());
    let mut problems = Vec::new();
    let mut commands = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a document is readable");
        let name = doc
            .strip_prefix(root())
            .unwrap_or(&doc)
            .display()
            .to_string();
        for code in code_of(&text) {
            for (leads, cmd) in commands_in(&code) {
                commands += 1;
                if let Err(e) = check_command(&mut help, leads, &cmd) {
                    problems.push(format!("{name}: `{}`: {e}", code.trim()));
                }
            }
            for p in repo_paths(&code) {
                if !root().join(&p).exists() {
                    problems.push(format!("{name}: names {p}, which does not exist"));
                }
            }
        }
        let dir = doc.parent().unwrap_or(Path::new("."));
        for link in links_of(&text) {
            let (file, frag) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                doc.clone()
            } else {
                dir.join(file)
            };
            if !target.exists() {
                problems.push(format!("{name}: link {link}: no file {}", target.display()));
            } else if !frag.is_empty() && target.is_file() {
                let t = std::fs::read_to_string(&target).unwrap_or_default();
                if !anchors_of(&t).contains(frag) {
                    problems.push(format!("{name}: link {link}: no heading #{frag}"));
                }
            }
        }
    }
    assert!(
        commands > 50,
        "only {commands} commands found: is the parser blind?"
    );
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_checks_see_what_they_must() {
    assert_eq!(
        commands_in("cargo run --release -- run x.yaml --seed 3 | tee log"),
        vec![(
            true,
            vec![
                "run".to_string(),
                "x.yaml".into(),
                "--seed".into(),
                "3".into()
            ]
        )]
    );
    assert_eq!(
        code_of("a `xrdma ping --size 4097B` b\n```sh\nxrdma bw\n```\n"),
        vec!["xrdma ping --size 4097B", "xrdma bw"]
    );
    assert_eq!(
        anchor("Where the time went: `xrdma trace`"),
        "where-the-time-went-xrdma-trace"
    );
    assert_eq!(
        links_of("see [a](docs/x.md#y) and [b](https://e.org)"),
        vec!["docs/x.md#y"]
    );
    let mut help = Help(BTreeMap::new());
    let mut check = |leads: bool, words: &[&str]| {
        let cmd: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        check_command(&mut help, leads, &cmd)
    };
    assert!(check(true, &["run", "--seed", "1"]).is_ok());
    assert!(check(false, &["run", "--no-such-flag"]).is_err());
    assert!(check(true, &["no-such-command"]).is_err());
    assert!(check(false, &["pid", "N"]).is_ok());
    assert!(check(true, &["calibrate", "run", "--device-result", "x"]).is_ok());
    assert!(check(true, &["calibrate", "run", "--no-such-flag"]).is_err());
}
