//! Scenario errors: every one names the file, the line and column, and the field.

use crate::check::KEYS_PREFIX;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a scenario could not be loaded.
///
/// Display forms:
/// - `FILE: cannot read the scenario: REASON` ([`ScenarioError::Read`]);
/// - `FILE:LINE:COLUMN: FIELD: MESSAGE` ([`ScenarioError::Invalid`]), e.g.
///   ``scenarios/x.yaml:5:5: workload.incast: unknown field `sendrs`, expected one of `senders`,
///   `receiver`, `start`, `messages` ``. `FIELD` is the dotted path of the mapping or key at
///   fault (`workload.incast.messages[1].size`) and is left out for the top-level mapping.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{}: cannot read the scenario", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid scenario: YAML syntax, an unknown or missing key, a bad value or
    /// unit, or a semantic check (ranges, orderings) failed.
    #[error("{0}")]
    Invalid(Box<Diagnostic>),
}

/// One located problem in a scenario file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file, as given to [`crate::load`] or [`crate::parse`].
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters), when known.
    pub column: Option<usize>,
    /// Dotted path of the field at fault (`sim.ecn.kmin`); `None` for the top-level mapping.
    pub field: Option<String>,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl ScenarioError {
    /// The located problem, for [`ScenarioError::Invalid`].
    pub fn diagnostic(&self) -> Option<&Diagnostic> {
        match self {
            ScenarioError::Invalid(d) => Some(d),
            ScenarioError::Read { .. } => None,
        }
    }

    /// Builds the located error from serde_yaml_ng's error on `text` read from `path`.
    pub(crate) fn from_yaml(err: &serde_yaml_ng::Error, text: &str, path: &Path) -> Self {
        let location = err.location().map(|l| (l.line(), l.column()));
        let mut message = err.to_string();
        if let Some((line, column)) = location {
            let suffix = format!(" at line {line} column {column}");
            if let Some(stripped) = message.strip_suffix(&suffix) {
                message = stripped.to_string();
            }
        }
        let (mut field, mut message) = split_field_path(message);
        let (mut line, mut column) = match location {
            Some((l, c)) => (Some(l), Some(c)),
            None => (None, None),
        };
        if let Some((keys, rest)) = parse_field_error(&message) {
            // A semantic check on a mapping: report it at the first blamed key that is written,
            // or else at the mapping itself under the first key's name.
            let found = location.and_then(|(l, c)| {
                keys.iter()
                    .find_map(|k| find_key(text, l, c, k).map(|pos| (k.clone(), pos)))
            });
            let key = match &found {
                Some((k, (l, c))) => {
                    line = Some(*l);
                    column = Some(*c);
                    k.clone()
                }
                None => keys.first().cloned().unwrap_or_default(),
            };
            field = Some(match field {
                Some(parent) => format!("{parent}.{key}"),
                None => key,
            });
            message = rest;
        }
        ScenarioError::Invalid(Box::new(Diagnostic {
            path: path.to_path_buf(),
            line,
            column,
            field,
            message,
        }))
    }
}

/// Splits `path: message` as serde_yaml_ng writes it. The path is made of keys and `[index]`
/// parts, with no spaces; messages raised at the top level have no path.
fn split_field_path(message: String) -> (Option<String>, String) {
    if let Some((head, rest)) = message.split_once(": ") {
        let is_path = !head.is_empty()
            && !head.starts_with(KEYS_PREFIX.trim_end())
            && !head.contains(char::is_whitespace)
            && !head.contains('`');
        if is_path {
            return (Some(head.to_string()), rest.to_string());
        }
    }
    (None, message)
}

/// Parses the text of a [`crate::check::FieldError`]: ``field `a`|`b`: message``.
fn parse_field_error(message: &str) -> Option<(Vec<String>, String)> {
    let rest = message.strip_prefix(KEYS_PREFIX)?;
    let (keys, text) = rest.split_once(": ")?;
    let keys: Option<Vec<String>> = keys
        .split('|')
        .map(|k| {
            k.strip_prefix('`')
                .and_then(|k| k.strip_suffix('`'))
                .map(str::to_string)
        })
        .collect();
    Some((keys?, text.to_string()))
}

/// Where the deepest written key of `path` (e.g. `["sim", "pfc", "headroom"]`) sits in the
/// scenario text: its 1-based line and column, and how many components of `path` were found.
/// Keys left out of the file fall back to their nearest written parent; `None` when not even
/// the first component is written. Used to point at a field that a backend rejects after
/// parsing (e.g. PFC headroom that does not fit the buffer for the run's port count).
pub fn locate_key(text: &str, path: &[&str]) -> Option<(usize, usize, usize)> {
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    // The top-level mapping starts at the first line that is neither blank nor a comment.
    let first = lines.iter().position(|l| {
        let indent = l.iter().take_while(|c| **c == ' ').count();
        !matches!(l.get(indent), None | Some('#') | Some('-'))
    })?;
    let mut start = (
        first + 1,
        lines[first].iter().take_while(|c| **c == ' ').count() + 1,
    );
    let mut found = None;
    for (depth, key) in path.iter().enumerate() {
        let Some((line, column)) = find_key(text, start.0, start.1, key) else {
            break;
        };
        found = Some((line, column, depth + 1));
        // The value's mapping: a `{` after the key on the same line, else the next written line.
        let chars = &lines[line - 1];
        let after_colon = chars[column - 1..].iter().position(|c| *c == ':')? + column;
        let rest = chars.get(after_colon..).unwrap_or_default();
        let ws = rest.iter().take_while(|c| c.is_whitespace()).count();
        if rest.get(ws) == Some(&'{') {
            start = (line, after_colon + ws + 1);
            continue;
        }
        let next = lines.iter().enumerate().skip(line).find(|(_, l)| {
            let indent = l.iter().take_while(|c| **c == ' ').count();
            !matches!(l.get(indent), None | Some('#'))
        });
        let Some((i, l)) = next else { break };
        start = (i + 1, l.iter().take_while(|c| **c == ' ').count() + 1);
    }
    found
}

/// Finds where `key` is written in the mapping that starts at 1-based `line`:`column`
/// (a block mapping's first key, or a flow mapping's `{`). Returns the key's 1-based line and
/// column.
fn find_key(text: &str, line: usize, column: usize, key: &str) -> Option<(usize, usize)> {
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let first = line.checked_sub(1)?;
    let col0 = column.checked_sub(1)?;
    if lines.get(first)?.get(col0) == Some(&'{') {
        return find_flow_key(&lines, first, col0 + 1, key);
    }
    for (i, chars) in lines.iter().enumerate().skip(first) {
        if i > first {
            let indent = chars.iter().take_while(|c| **c == ' ').count();
            match chars.get(indent) {
                None | Some('#') => continue,
                _ => {}
            }
            if indent < col0 {
                break;
            }
        }
        if key_at(chars, col0, key) {
            return Some((i + 1, col0 + 1));
        }
    }
    None
}

/// Scans a flow mapping (`{ a: 1, b: 2 }`, possibly over several lines) from just after its
/// `{` for `key` at nesting depth 0.
fn find_flow_key(
    lines: &[Vec<char>],
    line: usize,
    start: usize,
    key: &str,
) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut at_token_start = true;
    for (i, chars) in lines.iter().enumerate().skip(line) {
        let from = if i == line { start } else { 0 };
        for j in from..chars.len() {
            let c = chars[j];
            if let Some(q) = quote {
                if c == q {
                    quote = None;
                }
                continue;
            }
            if depth == 0 && at_token_start && !c.is_whitespace() && key_at(chars, j, key) {
                return Some((i + 1, j + 1));
            }
            match c {
                '{' | '[' => depth += 1,
                '}' | ']' => {
                    if depth == 0 {
                        return None;
                    }
                    depth -= 1;
                }
                '"' | '\'' => quote = Some(c),
                '#' if at_token_start => break,
                _ => {}
            }
            at_token_start = c == ',' || c.is_whitespace() || (c == '{' && depth > 0);
        }
        at_token_start = true;
    }
    None
}

/// Whether `key` (bare or quoted) followed by optional spaces and `:` starts at `chars[at]`.
fn key_at(chars: &[char], at: usize, key: &str) -> bool {
    let key: Vec<char> = key.chars().collect();
    let rest = match chars.get(at..) {
        Some(r) => r,
        None => return false,
    };
    let after = match rest.first() {
        Some(q @ ('"' | '\'')) => {
            let inner = &rest[1..];
            if inner.starts_with(&key) && inner.get(key.len()) == Some(q) {
                key.len() + 2
            } else {
                return false;
            }
        }
        _ if rest.starts_with(&key) => key.len(),
        _ => return false,
    };
    let tail = &rest[after..];
    let spaces = tail.iter().take_while(|c| **c == ' ').count();
    tail.get(spaces) == Some(&':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_paths_but_not_messages() {
        assert_eq!(
            split_field_path("workload.incast: missing field `receiver`".into()),
            (
                Some("workload.incast".into()),
                "missing field `receiver`".into()
            )
        );
        assert_eq!(
            split_field_path("a.b[1].c: field `size`: zero".into()),
            (Some("a.b[1].c".into()), "field `size`: zero".into())
        );
        assert_eq!(
            split_field_path("invalid type: map, expected a string".into()),
            (None, "invalid type: map, expected a string".into())
        );
        assert_eq!(
            split_field_path("field `name`: empty".into()),
            (None, "field `name`: empty".into())
        );
    }

    #[test]
    fn parses_field_errors() {
        assert_eq!(
            parse_field_error("field `kmin`|`kmax`: Kmin above Kmax"),
            Some((vec!["kmin".into(), "kmax".into()], "Kmin above Kmax".into()))
        );
        assert_eq!(parse_field_error("missing field `x`"), None);
    }

    #[test]
    fn finds_keys_in_block_mappings() {
        let text = "a:\n  b: 1\n  # note\n\n  c: 2\n  nested:\n    c: 3\nd: 4\n";
        // The mapping under `a` starts at line 2 column 3 (its first key).
        assert_eq!(find_key(text, 2, 3, "c"), Some((5, 3)));
        assert_eq!(find_key(text, 2, 3, "b"), Some((2, 3)));
        // `d` belongs to the outer mapping: not found inside `a`.
        assert_eq!(find_key(text, 2, 3, "d"), None);
        // Sequence items: the mapping starts after "- ".
        let text = "m:\n  - size: 1\n    count: 0\n  - size: 2\n";
        assert_eq!(find_key(text, 2, 5, "count"), Some((3, 5)));
        assert_eq!(find_key(text, 4, 5, "count"), None);
        // Quoted keys.
        assert_eq!(find_key("\"beta\": 0.9\n", 1, 1, "beta"), Some((1, 1)));
    }

    #[test]
    fn finds_keys_in_flow_mappings() {
        let text = "ecn: { kmin: 1, kmax: 2, pmax: 0.2 }\n";
        assert_eq!(find_key(text, 1, 6, "kmax"), Some((1, 17)));
        // A nested mapping's key of the same name is not taken.
        let text = "x: { a: { kmax: 1 }, kmax: 2 }\n";
        assert_eq!(find_key(text, 1, 4, "kmax"), Some((1, 22)));
        let text = "x: {\n  a: 1,\n  b: 2 }\n";
        assert_eq!(find_key(text, 1, 4, "b"), Some((3, 3)));
        assert_eq!(find_key(text, 1, 4, "c"), None);
    }
}
