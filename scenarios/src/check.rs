//! Validation inside deserialization, so a semantic error carries the YAML location.
//!
//! serde_yaml_ng attaches the location and the field path of the mapping being read to any
//! error raised while that mapping is open. A section type therefore reads its raw form (plain
//! serde derive with defaults and `deny_unknown_fields`) from inside its own `visit_map` and
//! checks it there. The check names the offending key with a [`FieldError`]; the error module
//! then moves the reported line from the start of the mapping to that key's line.

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A semantic error in one section, naming the keys involved.
///
/// `keys` lists the keys to blame in order of preference: the error is reported at the first of
/// them that is written in the file (a key left at its default has no line). With no keys the
/// error is reported at the mapping itself.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldError {
    pub keys: Vec<&'static str>,
    pub message: String,
}

/// The marker that starts a [`FieldError`]'s text; the error module parses it back.
pub(crate) const KEYS_PREFIX: &str = "field ";

impl fmt::Display for FieldError {
    /// `field `k1`|`k2`: message`; readable as is if it ever reaches a user unparsed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.keys.is_empty() {
            return f.write_str(&self.message);
        }
        f.write_str(KEYS_PREFIX)?;
        for (i, key) in self.keys.iter().enumerate() {
            if i > 0 {
                f.write_str("|")?;
            }
            write!(f, "`{key}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Shorthand for a [`FieldError`] on one key.
pub(crate) fn field_error(key: &'static str, message: impl Into<String>) -> FieldError {
    FieldError {
        keys: vec![key],
        message: message.into(),
    }
}

/// Reads a mapping as `R`, then turns it into `T` with `check`, inside the mapping so the error
/// gets the mapping's location and path.
pub(crate) fn deserialize_checked<'de, D, R, T>(
    deserializer: D,
    what: &'static str,
    check: fn(R) -> Result<T, FieldError>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    R: Deserialize<'de>,
{
    struct CheckedVisitor<R, T> {
        what: &'static str,
        check: fn(R) -> Result<T, FieldError>,
        _raw: PhantomData<fn() -> R>,
    }

    impl<'de, R: Deserialize<'de>, T> Visitor<'de> for CheckedVisitor<R, T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a mapping ({})", self.what)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            let raw = R::deserialize(MapAccessDeserializer::new(map))?;
            (self.check)(raw).map_err(de::Error::custom)
        }
    }

    deserializer.deserialize_map(CheckedVisitor {
        what,
        check,
        _raw: PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_error_text_lists_keys() {
        let e = FieldError {
            keys: vec!["min-window", "initial-window"],
            message: "too small".into(),
        };
        assert_eq!(
            e.to_string(),
            "field `min-window`|`initial-window`: too small"
        );
        let whole_mapping = FieldError {
            keys: vec![],
            message: "no kind".into(),
        };
        assert_eq!(whole_mapping.to_string(), "no kind");
        assert_eq!(field_error("beta", "x").to_string(), "field `beta`: x");
    }
}
