//! Where each key and value of a scenario is written: an index built once from a YAML
//! parser's events (saphyr-parser, a YAML 1.2 parser that marks every event with its line and
//! column).
//!
//! The index is the document's tree of nodes, each with the place its text starts, and each
//! mapping entry with the place of its key. A field path (keys and sequence indices) is looked
//! up by walking the tree, so a key is found only in the mapping it belongs to, whatever other
//! key of the same name the file has, whether the mapping is written in block (`a:\n  b: 1`)
//! or flow (`a: { b: 1 }`) style and whether its keys are quoted. An alias (`*a`) leads to the
//! node its anchor (`&a`) names, where the keys are written.

use crate::field_path::{FieldPath, Segment};
use saphyr_parser::{Event, Parser};
use std::collections::HashMap;

/// A place in the text: 1-based line and 1-based column, in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Mark {
    fn from_marker(m: saphyr_parser::Marker) -> Mark {
        Mark {
            line: m.line(),
            column: m.col() + 1,
        }
    }
}

/// One node of the document.
#[derive(Debug)]
enum Kind {
    /// A mapping's entries in the order written.
    Mapping(Vec<Entry>),
    /// A sequence's items (node ids) in order.
    Sequence(Vec<usize>),
    /// A scalar (a key's value or an item).
    Scalar,
    /// `*name`: the node its anchor names, if that anchor came before.
    Alias(Option<usize>),
}

/// One `key: value` of a mapping.
#[derive(Debug)]
struct Entry {
    /// The key's text (unquoted), or `None` for a key that is a collection.
    key: Option<String>,
    /// Where the key is written.
    key_mark: Mark,
    /// The value's node id.
    value: usize,
}

#[derive(Debug)]
struct Node {
    /// Where the node starts: a block mapping's first key, a flow collection's bracket, a
    /// scalar's first character (or its anchor or tag, when it has one).
    mark: Mark,
    kind: Kind,
}

/// The places of a scenario's keys and values, by field path.
#[derive(Debug, Default)]
pub(crate) struct SpanIndex {
    nodes: Vec<Node>,
    root: Option<usize>,
}

/// A collection being read: its node id, and for a mapping the key read before its value.
struct Open {
    node: usize,
    pending_key: Option<(Option<String>, Mark)>,
}

impl SpanIndex {
    /// Indexes the first document of `text`. Where the parser refuses the text, the index
    /// holds what came before the refused place: those events are the same under any YAML
    /// parser, while serde_yaml_ng (libyaml) accepts a few texts that YAML 1.2 does not (a
    /// flow mapping's closing `}` indented less than its block). A look-up past that place
    /// finds nothing, and a located error falls back to the nearest mapping found, or to
    /// naming the field alone.
    pub fn new(text: &str) -> SpanIndex {
        let mut index = SpanIndex::default();
        let mut stack: Vec<Open> = Vec::new();
        let mut anchors: HashMap<usize, usize> = HashMap::new();
        for item in Parser::new_from_str(text) {
            let (event, span) = match item {
                Ok(e) => e,
                Err(e) => {
                    // A key read before the refused place is written: give it the refused
                    // place as its value.
                    let mark = Mark::from_marker(*e.marker());
                    for open in stack.iter_mut().rev() {
                        if open.pending_key.is_some() {
                            let id = index.nodes.len();
                            index.nodes.push(Node {
                                mark,
                                kind: Kind::Scalar,
                            });
                            index.attach(Some(open), id, None, mark);
                        }
                    }
                    break;
                }
            };
            let mark = Mark::from_marker(span.start);
            let (kind, key, anchor, opens) = match event {
                Event::Scalar(value, _, anchor, _) => {
                    (Kind::Scalar, Some(value.into_owned()), anchor, false)
                }
                Event::MappingStart(anchor, _) => (Kind::Mapping(Vec::new()), None, anchor, true),
                Event::SequenceStart(anchor, _) => (Kind::Sequence(Vec::new()), None, anchor, true),
                Event::Alias(id) => (Kind::Alias(anchors.get(&id).copied()), None, 0, false),
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                    continue;
                }
                Event::DocumentEnd => break,
                Event::StreamStart
                | Event::StreamEnd
                | Event::DocumentStart(_)
                | Event::Nothing => continue,
            };
            let id = index.nodes.len();
            index.nodes.push(Node { mark, kind });
            if anchor != 0 {
                anchors.insert(anchor, id);
            }
            index.attach(stack.last_mut(), id, key, mark);
            if opens {
                stack.push(Open {
                    node: id,
                    pending_key: None,
                });
            }
        }
        index
    }

    /// Places node `id` in the collection being read (as a key or a value in a mapping, an
    /// item in a sequence), or as the root.
    fn attach(&mut self, parent: Option<&mut Open>, id: usize, text: Option<String>, mark: Mark) {
        let Some(open) = parent else {
            self.root.get_or_insert(id);
            return;
        };
        match &mut self.nodes[open.node].kind {
            Kind::Sequence(items) => items.push(id),
            Kind::Mapping(entries) => match open.pending_key.take() {
                Some((key, key_mark)) => entries.push(Entry {
                    key,
                    key_mark,
                    value: id,
                }),
                None => open.pending_key = Some((text, mark)),
            },
            Kind::Scalar | Kind::Alias(_) => {}
        }
    }

    /// The node an alias stands for (the node itself otherwise).
    fn resolve(&self, id: usize) -> usize {
        match self.nodes[id].kind {
            Kind::Alias(Some(target)) => target,
            _ => id,
        }
    }

    /// The entry `key` of the mapping at `id` (through an alias).
    fn entry(&self, id: usize, key: &str) -> Option<&Entry> {
        match &self.nodes[self.resolve(id)].kind {
            Kind::Mapping(entries) => entries.iter().find(|e| e.key.as_deref() == Some(key)),
            _ => None,
        }
    }

    /// The node at `path`.
    fn node(&self, path: &FieldPath) -> Option<usize> {
        let mut id = self.root?;
        for seg in &path.0 {
            id = match seg {
                Segment::Key(k) => self.entry(id, k)?.value,
                Segment::Index(i) => match &self.nodes[self.resolve(id)].kind {
                    Kind::Sequence(items) => *items.get(*i)?,
                    _ => return None,
                },
            };
        }
        Some(id)
    }

    /// Where `key` is written in the mapping at `mapping`; `None` if it is not written there.
    pub fn key(&self, mapping: &FieldPath, key: &str) -> Option<Mark> {
        let id = self.node(mapping)?;
        self.entry(id, key).map(|e| e.key_mark)
    }

    /// Where `key` is written the second time in the mapping at `mapping`; `None` if it is
    /// written at most once there.
    pub fn repeated_key(&self, mapping: &FieldPath, key: &str) -> Option<Mark> {
        let id = self.resolve(self.node(mapping)?);
        match &self.nodes[id].kind {
            Kind::Mapping(entries) => entries
                .iter()
                .filter(|e| e.key.as_deref() == Some(key))
                .nth(1)
                .map(|e| e.key_mark),
            _ => None,
        }
    }

    /// Where the value at `path` starts (for a block mapping, its first key; for a flow one,
    /// its `{`); `None` if it is not written.
    pub fn value(&self, path: &FieldPath) -> Option<Mark> {
        self.node(path).map(|id| self.nodes[id].mark)
    }
}

/// Where the deepest written key of `path` (e.g. `["sim", "pfc", "headroom"]`) sits in the
/// scenario text: its 1-based line and column (in characters), and how many components of
/// `path` were found. Keys left out of the file fall back to their nearest written parent;
/// `None` when not even the first component is written (or the text is not YAML). Used to
/// point at a field that a backend rejects after parsing (e.g. PFC headroom that does not fit
/// the buffer for the run's port count).
pub fn locate_key(text: &str, path: &[&str]) -> Option<(usize, usize, usize)> {
    let index = SpanIndex::new(text);
    let mut mapping = FieldPath::default();
    let mut found = None;
    for (depth, key) in path.iter().enumerate() {
        let Some(mark) = index.key(&mapping, key) else {
            break;
        };
        found = Some((mark.line, mark.column, depth + 1));
        mapping = mapping.key(key);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(keys: &[&str]) -> FieldPath {
        keys.iter().fold(FieldPath::default(), |p, k| p.key(k))
    }

    fn at(line: usize, column: usize) -> Option<Mark> {
        Some(Mark { line, column })
    }

    #[test]
    fn finds_keys_in_block_mappings() {
        let text = "a:\n  b: 1\n  # note\n\n  c: 2\n  nested:\n    c: 3\nd: 4\n";
        let i = SpanIndex::new(text);
        assert_eq!(i.key(&path(&["a"]), "c"), at(5, 3));
        assert_eq!(i.key(&path(&["a"]), "b"), at(2, 3));
        assert_eq!(i.key(&path(&["a", "nested"]), "c"), at(7, 5));
        // `d` belongs to the top level: not found inside `a`.
        assert_eq!(i.key(&path(&["a"]), "d"), None);
        assert_eq!(i.key(&path(&[]), "d"), at(8, 1));
        // A block mapping starts at its first key.
        assert_eq!(i.value(&path(&["a"])), at(2, 3));
        // Sequence items.
        let text = "m:\n  - size: 1\n    count: 0\n  - size: 2\n";
        let i = SpanIndex::new(text);
        let mut item = path(&["m"]);
        item.0.push(Segment::Index(0));
        assert_eq!(i.key(&item, "count"), at(3, 5));
        item.0[1] = Segment::Index(1);
        assert_eq!(i.key(&item, "count"), None);
        assert_eq!(i.key(&item, "size"), at(4, 5));
        // Quoted keys, single or double.
        let i = SpanIndex::new("\"beta\": 0.9\n'alpha': 1\n");
        assert_eq!(i.key(&path(&[]), "beta"), at(1, 1));
        assert_eq!(i.key(&path(&[]), "alpha"), at(2, 1));
    }

    #[test]
    fn finds_keys_in_flow_mappings() {
        let i = SpanIndex::new("ecn: { kmin: 1, kmax: 2, pmax: 0.2 }\n");
        assert_eq!(i.key(&path(&["ecn"]), "kmax"), at(1, 17));
        // A flow mapping starts at its `{`.
        assert_eq!(i.value(&path(&["ecn"])), at(1, 6));
        // A nested mapping's key of the same name is not taken.
        let i = SpanIndex::new("x: { a: { kmax: 1 }, kmax: 2 }\n");
        assert_eq!(i.key(&path(&["x"]), "kmax"), at(1, 22));
        assert_eq!(i.key(&path(&["x", "a"]), "kmax"), at(1, 11));
        let i = SpanIndex::new("x: {\n  a: 1,\n  b: 2 }\n");
        assert_eq!(i.key(&path(&["x"]), "b"), at(3, 3));
        assert_eq!(i.key(&path(&["x"]), "c"), None);
    }

    #[test]
    fn columns_count_characters() {
        let i = SpanIndex::new("x: { d: 10µs, beta: 0.9 }\n");
        assert_eq!(i.key(&path(&["x"]), "beta"), at(1, 15));
    }

    #[test]
    fn aliases_lead_to_their_anchor_and_cycles_end() {
        let text = "base: &b { kmin: 1 }\nsim:\n  ecn: *b\n";
        let i = SpanIndex::new(text);
        assert_eq!(i.key(&path(&["sim", "ecn"]), "kmin"), at(1, 12));
        // The value at the alias's path is where the alias is written.
        assert_eq!(i.value(&path(&["sim", "ecn"])), at(3, 8));
        // An alias naming no earlier anchor leads nowhere.
        let i = SpanIndex::new("a: *nothing\n");
        assert_eq!(i.key(&path(&["a"]), "b"), None);
        // A sequence that holds itself: a look-up ends with its path.
        let i = SpanIndex::new("a: &s [ *s ]\n");
        let mut deep = path(&["a"]);
        deep.0.extend((0..1000).map(|_| Segment::Index(0)));
        assert_eq!(i.value(&deep), at(1, 9));
    }

    #[test]
    fn refused_text_keeps_what_came_before() {
        // libyaml reads this flow mapping; YAML 1.2 refuses its under-indented `}`.
        let text = "sim:\n  ecn: { kmin: 4KB, pmax: 0.\n }\n  pfc: {}\n";
        let i = SpanIndex::new(text);
        assert_eq!(i.key(&path(&["sim", "ecn"]), "pmax"), at(2, 21));
        assert_eq!(i.key(&path(&["sim"]), "pfc"), None);
        // A key whose value is refused is still written.
        let i = SpanIndex::new("a: { b: 1, c:\n0 }\n");
        assert_eq!(i.key(&path(&["a"]), "c"), at(1, 12));
        assert_eq!(locate_key(text, &["sim", "pfc"]), Some((1, 1, 1)));
        assert_eq!(locate_key("{ [", &["a"]), None);
        assert_eq!(SpanIndex::new("").value(&path(&[])), None);
    }
}
