//! Semantic checks, run after deserialization on each section's raw form.
//!
//! A section is read in two steps. Its raw form is plain serde (derive with defaults and
//! `deny_unknown_fields`): types, units and key names, whose errors serde_yaml_ng locates
//! itself. Once the whole file has been read, a check turns each raw form into the section's
//! type, children first, and refuses what the types cannot say (ranges, orderings, keys that
//! exclude each other) with a [`FieldError`]: the keys to blame and the message, as data. The
//! parent check puts the child's key (or item index) in front of the error's path as the error
//! comes out, so the error names the mapping it is about from the top of the document; the
//! error module then finds the blamed key in the text ([`crate::span_index`]).

use crate::field_path::{FieldPath, Segment};
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A semantic error in one mapping, naming the keys involved.
///
/// `path` is the mapping's field path from the top of the document (each parent check puts
/// its own step in front, [`FieldError::under`]). `keys` lists the keys to blame in order of
/// preference: the error is reported at the first of them that is written in the file (a key
/// left at its default has no line). With no keys, or none written, the error is reported at
/// the mapping itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    /// The mapping the check read.
    pub path: FieldPath,
    /// The keys to blame, most likely first.
    pub keys: Vec<String>,
    /// What is wrong and what was expected, reported as is.
    pub message: String,
}

impl FieldError {
    /// An error blaming `keys` (the first one written) of the mapping being checked.
    pub fn new(keys: Vec<&'static str>, message: impl Into<String>) -> FieldError {
        FieldError {
            path: FieldPath::default(),
            keys: keys.into_iter().map(String::from).collect(),
            message: message.into(),
        }
    }

    /// An error blaming the key at the end of `path` (keys from the mapping being checked, such
    /// as `["ecn", "kmin"]`); an empty `path` blames the mapping itself.
    pub fn at(path: &[String], message: impl Into<String>) -> FieldError {
        let Some((key, parents)) = path.split_last() else {
            return FieldError::mapping(message);
        };
        FieldError {
            path: FieldPath(parents.iter().cloned().map(Segment::Key).collect()),
            keys: vec![key.clone()],
            message: message.into(),
        }
    }

    /// An error about the mapping being checked as a whole.
    pub fn mapping(message: impl Into<String>) -> FieldError {
        FieldError::new(Vec::new(), message)
    }

    /// The same error seen from the parent mapping, where the checked one is `key`'s value.
    pub fn under(mut self, key: &str) -> FieldError {
        self.path.0.insert(0, Segment::Key(key.to_string()));
        self
    }

    /// The same error seen from the parent sequence, where the checked mapping is item `index`.
    pub fn item(mut self, index: usize) -> FieldError {
        self.path.0.insert(0, Segment::Index(index));
        self
    }
}

/// Shorthand for a [`FieldError`] on one key.
pub(crate) fn field_error(key: &'static str, message: impl Into<String>) -> FieldError {
    FieldError::new(vec![key], message)
}

/// For `map_err`: the child's error seen from the mapping where the child is `key`'s value.
pub(crate) fn under(key: &'static str) -> impl Fn(FieldError) -> FieldError {
    move |e| e.under(key)
}

/// Checks every item of a list, each error naming the item's index.
pub(crate) fn check_items<R, T>(
    items: Vec<R>,
    check: impl Fn(R) -> Result<T, FieldError>,
) -> Result<Vec<T>, FieldError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, r)| check(r).map_err(|e| e.item(i)))
        .collect()
}

/// One mapping or a list of them, as written (the error paths differ: `stall` or `stall[1]`).
#[derive(Debug, PartialEq)]
pub(crate) struct OneOrMany<T> {
    /// The mappings in the order written.
    pub items: Vec<T>,
    /// Whether they were written as a list.
    pub listed: bool,
}

impl<T> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany {
            items: Vec::new(),
            listed: true,
        }
    }
}

impl<R> OneOrMany<R> {
    /// Checks every mapping; an error names the item's index when they were listed.
    pub fn check<T>(
        self,
        check: impl Fn(R) -> Result<T, FieldError>,
    ) -> Result<Vec<T>, FieldError> {
        if self.listed {
            check_items(self.items, check)
        } else {
            self.items.into_iter().map(check).collect()
        }
    }

    /// Reads one mapping or a list of them; `what` names them in a type error.
    pub fn deserialize_as<'de, D>(d: D, what: &'static str) -> Result<Self, D::Error>
    where
        D: Deserializer<'de>,
        R: Deserialize<'de>,
    {
        struct V<R>(&'static str, PhantomData<fn() -> R>);
        impl<'de, R: Deserialize<'de>> Visitor<'de> for V<R> {
            type Value = OneOrMany<R>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                R::deserialize(MapAccessDeserializer::new(map)).map(|r| OneOrMany {
                    items: vec![r],
                    listed: false,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<R>::deserialize(SeqAccessDeserializer::new(seq)).map(|items| OneOrMany {
                    items,
                    listed: true,
                })
            }
        }
        d.deserialize_any(V(what, PhantomData))
    }
}

impl<'de, R: Deserialize<'de>> Deserialize<'de> for OneOrMany<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        OneOrMany::deserialize_as(d, "a mapping or a list of mappings")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_put_their_step_in_front() {
        let e = FieldError::new(vec!["size", "count"], "zero")
            .item(1)
            .under("messages")
            .under("incast");
        assert_eq!(e.path.to_string(), "incast.messages[1]");
        assert_eq!(e.keys, vec!["size", "count"]);
        assert_eq!(e.message, "zero");
        let whole = FieldError::mapping("no kind").under("workload");
        assert!(whole.keys.is_empty());
        assert_eq!(whole.path.to_string(), "workload");
    }

    #[test]
    fn one_mapping_is_not_an_item() {
        let check = |v: u32| {
            if v == 0 {
                Err(field_error("for", "zero"))
            } else {
                Ok(v)
            }
        };
        let one = OneOrMany {
            items: vec![0],
            listed: false,
        };
        assert_eq!(one.check(check).unwrap_err().path, FieldPath::default());
        let many = OneOrMany {
            items: vec![1, 0],
            listed: true,
        };
        assert_eq!(many.check(check).unwrap_err().path.to_string(), "[1]");
    }
}
