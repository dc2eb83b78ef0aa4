//! Field paths: where a value sits in a scenario, as data (`sim.ecn.kmin`,
//! `workload.incast.messages[1].size`).

use std::fmt;

/// One step from a node to one of its children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Segment {
    /// The value of a mapping's key (`kmin`).
    Key(String),
    /// A sequence's item, 0-based (`[1]`).
    Index(usize),
}

/// The steps from the document's top-level mapping to a value; empty for the top level itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    /// The path of `key` in the mapping at `self`.
    pub fn key(&self, key: &str) -> FieldPath {
        let mut p = self.clone();
        p.0.push(Segment::Key(key.to_string()));
        p
    }

    /// Whether the path is the top level.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The first `n` steps.
    pub fn prefix(&self, n: usize) -> FieldPath {
        FieldPath(self.0[..n.min(self.0.len())].to_vec())
    }

    /// The path as a field name, or `None` for the top level.
    pub fn name(&self) -> Option<String> {
        (!self.is_empty()).then(|| self.to_string())
    }

    /// The path of a serde error, as serde_path_to_error records it. A key that is not a
    /// string (or a step serde could not name) becomes the key `?`, as serde_yaml_ng writes it.
    pub fn from_serde(path: &serde_path_to_error::Path) -> FieldPath {
        use serde_path_to_error::Segment as S;
        FieldPath(
            path.iter()
                .map(|s| match s {
                    S::Seq { index } => Segment::Index(*index),
                    S::Map { key } => Segment::Key(key.clone()),
                    S::Enum { variant } => Segment::Key(variant.clone()),
                    S::Unknown => Segment::Key("?".to_string()),
                })
                .collect(),
        )
    }
}

impl fmt::Display for FieldPath {
    /// Keys joined by `.`, items as `[i]`: `workload.incast.messages[1].size`, the form
    /// serde_yaml_ng gives its own paths.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if i == 0 => f.write_str(k)?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_keys_and_items_as_serde_yaml_ng_does() {
        let p = FieldPath::default()
            .key("workload")
            .key("incast")
            .key("messages");
        let mut item = p.clone();
        item.0.push(Segment::Index(1));
        assert_eq!(
            item.key("size").to_string(),
            "workload.incast.messages[1].size"
        );
        assert_eq!(p.prefix(1).name().as_deref(), Some("workload"));
        assert_eq!(FieldPath::default().name(), None);
    }
}
