//! Scenario errors: every one names the file, the line and column, and the field.
//!
//! Both kinds of error reach [`Diagnostic`] as data. A deserialization error brings
//! serde_yaml_ng's location and serde_path_to_error's field path; only serde_yaml_ng's
//! message is text, from which the path and location it writes in are removed by exact match.
//! A failed check brings its mapping's path, the blamed keys and the message; the span index
//! ([`crate::span_index`]) gives the location.

use crate::check::FieldError;
use crate::field_path::FieldPath;
use crate::span_index::SpanIndex;
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

    /// The located error for a deserialization error: serde_yaml_ng's own location (the key
    /// of an unknown or misplaced field, the value that does not read, the mapping that misses
    /// a key), the field path as serde_path_to_error records it, and serde_yaml_ng's message.
    ///
    /// Two errors are located anew from `text`: a syntax error that the typed reading did
    /// not reach first (an unclosed `{` whose contents read as a bad value) is reported as
    /// the syntax error, at the parser's place; a repeated key is reported at its second
    /// occurrence, not at the mapping's start.
    pub(crate) fn from_serde(
        err: serde_path_to_error::Error<serde_yaml_ng::Error>,
        text: &str,
        path: &Path,
    ) -> Self {
        let steps = FieldPath::from_serde(err.path());
        let err = err.into_inner();
        let invalid = |line: Option<usize>, column, field, message| {
            ScenarioError::Invalid(Box::new(Diagnostic {
                path: path.to_path_buf(),
                line,
                column,
                field,
                message,
            }))
        };
        let text_error = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text).err();
        if let Some(syntax) = text_error.filter(|e| !e.to_string().contains("duplicate entry")) {
            let location = syntax.location().map(|l| (l.line(), l.column()));
            let (_, message) = serde_message(&syntax.to_string(), &FieldPath(Vec::new()), location);
            let message = without_long_quotes(&message);
            return invalid(location.map(|l| l.0), location.map(|l| l.1), None, message);
        }
        let mut location = err.location().map(|l| (l.line(), l.column()));
        let (field, message) = serde_message(&err.to_string(), &steps, location);
        let message = without_long_quotes(&message);
        if let Some(key) = duplicate_key(&message) {
            // The mapping the message is about: the longest prefix of the path that names it.
            let mapping = (0..=steps.0.len())
                .rev()
                .map(|n| steps.prefix(n))
                .find(|p| field.as_deref().unwrap_or("") == p.to_string())
                .unwrap_or(FieldPath(Vec::new()));
            if let Some(m) = SpanIndex::new(text).repeated_key(&mapping, key) {
                location = Some((m.line, m.column));
                let field = Some(mapping.key(key).to_string());
                let message = format!("`{key}` is written twice in this mapping (once is allowed)");
                return invalid(location.map(|l| l.0), location.map(|l| l.1), field, message);
            }
        }
        let message = match field.as_deref() {
            Some(f) => without_refused_keys(f, message),
            None => message,
        };
        ScenarioError::Invalid(Box::new(Diagnostic {
            path: path.to_path_buf(),
            line: location.map(|l| l.0),
            column: location.map(|l| l.1),
            field,
            message,
        }))
    }

    /// The located error for a failed check on `text`: at the first blamed key written in the
    /// checked mapping, else at the mapping itself (under the first blamed key's name), else
    /// at the nearest enclosing value the index holds.
    pub(crate) fn from_check(err: FieldError, text: &str, path: &Path) -> Self {
        let index = SpanIndex::new(text);
        let written = err
            .keys
            .iter()
            .find_map(|k| index.key(&err.path, k).map(|mark| (k.as_str(), mark)));
        let (key, mark) = match written {
            Some((key, mark)) => (Some(key), Some(mark)),
            None => {
                let enclosing = (0..=err.path.0.len())
                    .rev()
                    .find_map(|n| index.value(&err.path.prefix(n)));
                (err.keys.first().map(String::as_str), enclosing)
            }
        };
        let field = match key {
            Some(key) => err.path.key(key),
            None => err.path,
        };
        ScenarioError::Invalid(Box::new(Diagnostic {
            path: path.to_path_buf(),
            line: mark.map(|m| m.line),
            column: mark.map(|m| m.column),
            field: field.name(),
            message: err.message,
        }))
    }
}

/// serde_yaml_ng's text of an error is `PATH: MESSAGE at line L column C`, where PATH is the
/// mapping or value it was reading (left out at the top level) and the location is left out at
/// line 1 column 1. PATH is `steps` or, for a key that no field takes, `steps` without that
/// key. Both parts are removed by exact match against what is known of them: the location as
/// given and each prefix of `steps`, the longest first (a longer prefix would continue with
/// `.` or `[` where the text has `: `). Returns the field (the matched path) and the message.
/// The longest quoted text an error repeats from a file, characters.
pub const MAX_ECHOED_CHARS: usize = 24;

/// `message` with every double-quoted text longer than [`MAX_ECHOED_CHARS`] replaced by its
/// length: an error about a file that is not a scenario (a job secret, `/etc/passwd`) must
/// not print its contents into a terminal or a CI log. Shorter texts (a mistyped unit,
/// `1MB seed`) stay, since they show the mistake.
pub fn without_long_quotes(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else {
            break;
        };
        out.push_str(&rest[..open]);
        let quoted = &after[..close];
        let n = quoted.chars().count();
        if n > MAX_ECHOED_CHARS {
            out.push_str(&format!("<{n} characters, not shown>"));
        } else {
            out.push('"');
            out.push_str(quoted);
            out.push('"');
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The key of serde's "duplicate field `KEY`" (a struct's field) or serde_yaml_ng's
/// "duplicate entry with key "KEY"" (a mapping read as a map) message.
fn duplicate_key(message: &str) -> Option<&str> {
    if let Some(rest) = message.strip_prefix("duplicate field `") {
        return rest.split_once('`').map(|(k, _)| k);
    }
    message
        .strip_prefix("duplicate entry with key \"")?
        .split_once('"')
        .map(|(k, _)| k)
}

/// Keys a mapping reads only to refuse them with a pointer to where they belong: an unknown
/// key's list of expected keys must not offer them.
const REFUSED_KEYS: [(&str, &[&str]); 1] = [("sim", &crate::sim_section::MOVED_TO_RC)];

/// `message` without the [`REFUSED_KEYS`] of mapping `field` in its "expected one of" list.
fn without_refused_keys(field: &str, message: String) -> String {
    let Some((_, refused)) = REFUSED_KEYS.iter().find(|(f, _)| *f == field) else {
        return message;
    };
    let marker = "expected one of ";
    let Some(at) = message.find(marker) else {
        return message;
    };
    let (head, list) = message.split_at(at + marker.len());
    let kept: Vec<&str> = list
        .split(", ")
        .filter(|k| !refused.iter().any(|r| k.trim_matches('`') == *r))
        .collect();
    format!("{head}{}", kept.join(", "))
}

fn serde_message(
    text: &str,
    steps: &FieldPath,
    location: Option<(usize, usize)>,
) -> (Option<String>, String) {
    let mut owned = text.to_string();
    if let Some((line, column)) = location {
        // The place is given apart: take it out of the text, at its end or inside it (a
        // parser's "... at line L column C, while parsing ...").
        owned = owned.replacen(&format!(" at line {line} column {column}"), "", 1);
    }
    let text = owned.as_str();
    for n in (1..=steps.0.len()).rev() {
        let field = steps.prefix(n).to_string();
        if let Some(message) = text
            .strip_prefix(field.as_str())
            .and_then(|t| t.strip_prefix(": "))
        {
            return (Some(field), message.to_string());
        }
    }
    (None, text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(keys: Vec<&'static str>, message: &str) -> Diagnostic {
        let text = "name: t\nsim:\n  ecn: { kmin: 1KB }\n";
        let err = FieldError {
            path: steps(&["sim", "ecn"]),
            keys: keys.into_iter().map(String::from).collect(),
            message: message.into(),
        };
        match ScenarioError::from_check(err, text, Path::new("f.yaml")) {
            ScenarioError::Invalid(d) => *d,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn check_messages_are_reported_verbatim() {
        // A message that reads like a list of keys and holds `: ` stays what it is.
        let message = "field `kmin`|`kmax`: a: b";
        let d = check(vec![], message);
        assert_eq!(
            (d.line, d.column, d.field.as_deref(), d.message.as_str()),
            (Some(3), Some(8), Some("sim.ecn"), message)
        );
        // At the first blamed key written; a key left out falls to the next one.
        let d = check(vec!["kmax", "kmin"], message);
        assert_eq!(
            (d.line, d.column, d.field.as_deref(), d.message.as_str()),
            (Some(3), Some(10), Some("sim.ecn.kmin"), message)
        );
        // None written: at the mapping, under the first key's name.
        let d = check(vec!["kmax", "pmax"], message);
        assert_eq!(
            (d.line, d.column, d.field.as_deref()),
            (Some(3), Some(8), Some("sim.ecn.kmax"))
        );
        assert_eq!(
            d.to_string(),
            "f.yaml:3:8: sim.ecn.kmax: field `kmin`|`kmax`: a: b"
        );
    }

    fn steps(keys: &[&str]) -> FieldPath {
        keys.iter().fold(FieldPath::default(), |p, k| p.key(k))
    }

    #[test]
    fn serde_text_loses_exactly_its_path_and_location() {
        assert_eq!(
            serde_message(
                "workload.incast: missing field `receiver` at line 4 column 5",
                &steps(&["workload", "incast"]),
                Some((4, 5))
            ),
            (
                Some("workload.incast".into()),
                "missing field `receiver`".into()
            )
        );
        // An unknown key: the path names the mapping, not the key.
        assert_eq!(
            serde_message(
                "sim.ecn: unknown field `kmn`, expected `kmin` at line 5 column 10",
                &steps(&["sim", "ecn", "kmn"]),
                Some((5, 10))
            ),
            (
                Some("sim.ecn".into()),
                "unknown field `kmn`, expected `kmin`".into()
            )
        );
        // At the top level there is no path; a message that looks like one is kept whole.
        assert_eq!(
            serde_message(
                "field `name`: invalid type: map, expected a string",
                &steps(&[]),
                None
            ),
            (
                None,
                "field `name`: invalid type: map, expected a string".into()
            )
        );
        assert_eq!(
            serde_message(
                "invalid type: sequence, expected a mapping (a scenario)",
                &steps(&[]),
                Some((1, 1))
            ),
            (
                None,
                "invalid type: sequence, expected a mapping (a scenario)".into()
            )
        );
        // A message past the path that starts like a longer path stays the message.
        assert_eq!(
            serde_message(
                "sim: ecn: x at line 2 column 3",
                &steps(&["sim", "ecn"]),
                Some((2, 3))
            ),
            (Some("sim".into()), "ecn: x".into())
        );
    }
}
