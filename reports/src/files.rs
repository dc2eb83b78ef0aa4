//! Writing files atomically (to a temporary sibling, then renamed over the target), and
//! reading and writing a run result's JSON. The plots, the run directory and the reports
//! all write through here.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::ReportError;
use crate::schema::{RunResult, SCHEMA_VERSION};

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The temporary sibling a file is written to before it is renamed over `path`:
/// `NAME.tmp.EXT` beside it (the extension kept last, so encoders that choose the format by
/// extension still do).
pub fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let tmp = match path.extension() {
        Some(ext) => format!("{name}.tmp.{}", ext.to_string_lossy()),
        None => format!("{name}.tmp"),
    };
    path.with_file_name(tmp)
}

/// Moves the finished temporary file `tmp` over `path` (a rename: readers see the old file
/// or the whole new one, never a truncated one); the temporary file is removed if the rename
/// fails.
///
/// # Errors
/// [`ReportError::Io`] naming `path` when the rename fails.
pub fn commit_temp(tmp: &Path, path: &Path) -> Result<(), ReportError> {
    std::fs::rename(tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(tmp);
        io_err(path)(e)
    })
}

/// Writes `bytes` to `path` atomically: to [`temp_sibling`] first, then renamed over `path`,
/// so a full disk or a crash never leaves a truncated file (the previous one stays).
///
/// # Errors
/// [`ReportError::Io`] naming the file that could not be written or renamed; the temporary
/// file is removed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let tmp = temp_sibling(path);
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_err(path)(e));
    }
    commit_temp(&tmp, path)
}

/// Writes `r` to `path` as pretty-printed JSON (two-space indent, keys in schema declaration
/// order, trailing newline). Equal inputs give byte-identical files. The text is streamed to
/// a temporary sibling through a buffer, never held whole in memory, then renamed over
/// `path` ([`commit_temp`]).
///
/// # Errors
/// [`ReportError::Io`] if the file cannot be written (the temporary file is removed),
/// [`ReportError::Json`] if serialization fails.
pub fn write_json(path: &Path, r: &RunResult) -> Result<(), ReportError> {
    let tmp = temp_sibling(path);
    let written = (|| {
        let file = std::fs::File::create(&tmp).map_err(io_err(path))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        r.write_json_to(&mut w).map_err(|source| {
            if source.is_io() {
                io_err(path)(source.into())
            } else {
                ReportError::Json {
                    path: path.to_path_buf(),
                    source,
                }
            }
        })?;
        w.flush().map_err(io_err(path))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    commit_temp(&tmp, path)
}

/// Reads a run result written by [`write_json`].
///
/// The `schema-version` key is checked first: a missing key, or a version of 0 or newer than
/// [`SCHEMA_VERSION`], is rejected with [`ReportError::UnsupportedSchema`]. Unknown keys are
/// ignored (so additions within a version stay readable).
///
/// # Errors
/// [`ReportError::Io`] if the file cannot be read, [`ReportError::Json`] (with line and column)
/// if it is not valid JSON for the schema, [`ReportError::UnsupportedSchema`] as above.
pub fn read_json(path: &Path) -> Result<RunResult, ReportError> {
    let text = std::fs::read_to_string(path).map_err(io_err(path))?;
    let json_err = |source| ReportError::Json {
        path: path.to_path_buf(),
        source,
    };
    let found = serde_json::from_str::<VersionProbe>(&text)
        .map_err(json_err)?
        .0;
    match found {
        Some(v) if v >= 1 && v <= u64::from(SCHEMA_VERSION) => {}
        _ => {
            return Err(ReportError::UnsupportedSchema {
                path: path.to_path_buf(),
                found,
                supported: SCHEMA_VERSION,
            })
        }
    }
    // Parse from the text (not the Value) so errors carry line and column.
    let mut r: RunResult = serde_json::from_str(&text).map_err(json_err)?;
    if found.is_some_and(|v| v < 3) {
        if let Some(i) = &r.ideal {
            r.path = crate::PathModel::of_ideal(i);
        }
        // Version 2 stated T* for every workload; only an incast's bounds its completion.
        if r.workload.kind != crate::WorkloadKind::Incast {
            r.ideal = None;
        }
    }
    Ok(r)
}

/// The `schema-version` of a result's text, read without building the rest (a
/// `serde_json::Value` of a million messages takes about a gigabyte): `None` when the key is
/// missing or not an unsigned integer, or the text is not an object.
struct VersionProbe(Option<u64>);

impl<'de> serde::Deserialize<'de> for VersionProbe {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(VersionVisitor)
    }
}

struct VersionVisitor;

impl<'de> serde::de::Visitor<'de> for VersionVisitor {
    type Value = VersionProbe;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a run result")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<VersionProbe, A::Error> {
        use serde::de::IgnoredAny;
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "schema-version" {
                found = map.next_value::<serde_json::Value>()?.as_u64();
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(VersionProbe(found))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<VersionProbe, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(VersionProbe(None))
    }

    fn visit_unit<E>(self) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<VersionProbe, E> {
        Ok(VersionProbe(None))
    }
}
