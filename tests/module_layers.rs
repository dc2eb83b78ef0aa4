//! Inside every crate of the workspace the modules are layered: no module imports, through a
//! chain of others, itself.
//!
//! The graph is read from the source text. Each crate root (`lib.rs`, `main.rs`) is followed
//! through its `mod name;` declarations (with `#[path]`), one node per file; an inline
//! `mod name { … }` belongs to its file's node. An edge runs from a file to the file that
//! defines an item it names through `crate::…`, `super::…` or `self::…`, in a `use` (grouped
//! imports included) or in code; comments, doc comments and string literals are not code. A
//! path that names an item a module re-exports (`pub use child::Item`, or a `pub use child::*`
//! whose child defines the item) leads on to the module the item comes from.
//!
//! Test code (`#[cfg(test)]` modules and items) is left out: a test may use any module of
//! its crate.
//!
//! The rule: a module and its submodules are one unit to the rest of the crate. At every
//! module, its child modules, each standing for its whole subtree, must form an acyclic
//! graph; one child reaches another when any file of its subtree names an item of the
//! other's. Edges between a module's own file and its descendants are not counted either
//! way: the parent declares its children, re-exports their items and holds what they share,
//! and a child reads those through `super::`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod workspace;

/// One token of Rust source, with comments and literals' contents gone.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    PathSep,
    Punct(char),
}

/// The tokens of `src`: identifiers, `::`, string literals and single punctuation; comments
/// (doc comments included), char literals and numbers are dropped.
fn tokens(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some((end, text)) = raw_string(&c, i) {
            out.push(Tok::Str(text));
            i = end;
        } else if ch == '"' || (ch == 'b' && at(i + 1) == '"') {
            i += if ch == 'b' { 2 } else { 1 };
            let start = i;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push(Tok::Str(c[start..i.min(c.len())].iter().collect()));
            i += 1;
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            i += if ch == 'b' { 1 } else { 0 };
            if at(i + 1) == '\\' {
                i += 3;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1; // a lifetime, whose name is no identifier of the code
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            if !ch.is_ascii_digit() {
                out.push(Tok::Ident(c[start..i].iter().collect()));
            }
        } else if ch == ':' && at(i + 1) == ':' {
            out.push(Tok::PathSep);
            i += 2;
        } else {
            if ch != '$' {
                out.push(Tok::Punct(ch));
            }
            i += 1;
        }
    }
    out
}

/// A raw string literal (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`: where it ends, and its text.
fn raw_string(c: &[char], i: usize) -> Option<(usize, String)> {
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') || (i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')) {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&h| h == '#').count();
    j += hashes;
    if c.get(j) != Some(&'"') {
        return None;
    }
    let start = j + 1;
    let mut k = start;
    while k < c.len() {
        if c[k] == '"'
            && c[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == '#')
                .count()
                == hashes
        {
            return Some((k + 1 + hashes, c[start..k].iter().collect()));
        }
        k += 1;
    }
    Some((c.len(), c[start..].iter().collect()))
}

/// A path one file names: the scope it is named in (the inline modules around it, below the
/// file's own module), its segments, the name it binds and whether it is a public re-export.
#[derive(Debug, Clone, PartialEq)]
struct Named {
    scope: Vec<String>,
    path: Vec<String>,
    binds: String,
    reexport: bool,
}

/// What one file declares and names.
#[derive(Debug, Default)]
struct FileScan {
    /// `mod name;` declarations: the inline modules around it, the name, its `#[path]`.
    children: Vec<(Vec<String>, String, Option<String>)>,
    /// Inline `mod name { … }` blocks, as paths below the file's module.
    inline: Vec<Vec<String>>,
    /// Every path named, in a `use` or in code.
    named: Vec<Named>,
    /// The names of the items the file defines.
    defines: BTreeSet<String>,
}

/// Reads one file's declarations and named paths.
fn scan(src: &str) -> FileScan {
    let t = tokens(src);
    let ident = |i: usize| match t.get(i) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let mut scan = FileScan::default();
    // The open braces: an inline module's name, and whether the block is test code.
    let mut scopes: Vec<(Option<String>, bool)> = Vec::new();
    let mut pending_path: Option<String> = None;
    let mut pending_test = false;
    let mut i = 0;
    while i < t.len() {
        let inline: Vec<String> = scopes.iter().filter_map(|s| s.0.clone()).collect();
        let in_test = pending_test || scopes.iter().any(|s| s.1);
        match &t[i] {
            Tok::Punct('#')
                if t.get(i + 1) == Some(&Tok::Punct('['))
                    && ident(i + 2) == Some("cfg")
                    && ident(i + 4) == Some("test")
                    && t.get(i + 5) == Some(&Tok::Punct(')')) =>
            {
                pending_test = true;
                i += 7;
            }
            Tok::Punct('#')
                if t.get(i + 1) == Some(&Tok::Punct('[')) && ident(i + 2) == Some("path") =>
            {
                if let Some(Tok::Str(p)) = t.get(i + 4) {
                    pending_path = Some(p.clone());
                }
                i += 5;
            }
            Tok::Ident(k) if k == "mod" && ident(i + 1).is_some() => {
                let name = ident(i + 1).unwrap_or_default().to_string();
                if t.get(i + 2) == Some(&Tok::Punct('{')) {
                    scopes.push((Some(name.clone()), in_test));
                    scan.inline.push([inline, vec![name]].concat());
                    i += 3;
                } else {
                    if !in_test {
                        scan.children.push((inline, name, pending_path.take()));
                    }
                    i += 2;
                }
                pending_path = None;
                pending_test = false;
            }
            Tok::Ident(k) if k == "use" => {
                let reexport = ident(i.wrapping_sub(1)) == Some("pub")
                    || (t.get(i.wrapping_sub(1)) == Some(&Tok::Punct(')'))
                        && t[..i]
                            .iter()
                            .rev()
                            .position(|x| x == &Tok::Punct('('))
                            .is_some_and(|p| ident((i - p).wrapping_sub(2)) == Some("pub")));
                let mut leaves = Vec::new();
                i += 1;
                use_tree(&t, &mut i, Vec::new(), &mut leaves);
                for (path, binds) in leaves.into_iter().filter(|_| !in_test) {
                    scan.named.push(Named {
                        scope: inline.clone(),
                        path,
                        binds,
                        reexport,
                    });
                }
            }
            Tok::Ident(k)
                if matches!(k.as_str(), "crate" | "super" | "self")
                    && t.get(i + 1) == Some(&Tok::PathSep) =>
            {
                let mut path = vec![k.clone()];
                i += 2;
                while let Some(s) = ident(i) {
                    path.push(s.to_string());
                    i += 1;
                    if t.get(i) != Some(&Tok::PathSep) {
                        break;
                    }
                    i += 1;
                }
                let binds = path.last().cloned().unwrap_or_default();
                if !in_test {
                    scan.named.push(Named {
                        scope: inline,
                        path,
                        binds,
                        reexport: false,
                    });
                }
            }
            Tok::Ident(k)
                if matches!(
                    k.as_str(),
                    "struct" | "enum" | "union" | "trait" | "type" | "fn" | "const" | "static"
                ) && ident(i + 1).is_some() =>
            {
                scan.defines
                    .insert(ident(i + 1).unwrap_or_default().to_string());
                i += 2;
            }
            Tok::Punct('{') => {
                scopes.push((None, in_test));
                pending_test = false;
                i += 1;
            }
            Tok::Punct('}' | ';') => {
                if t[i] == Tok::Punct('}') {
                    scopes.pop();
                }
                pending_test = false;
                i += 1;
            }
            _ => i += 1,
        }
    }
    scan
}

/// Reads one use tree from `t[*i]` on, adding each leaf's full path and bound name to `out`.
fn use_tree(t: &[Tok], i: &mut usize, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let mut path = prefix;
    loop {
        match t.get(*i) {
            Some(Tok::PathSep) => *i += 1,
            Some(Tok::Punct('*')) => {
                *i += 1;
                path.push("*".into());
                out.push((path, "*".into()));
                return;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                while t.get(*i).is_some_and(|x| x != &Tok::Punct('}')) {
                    use_tree(t, i, path.clone(), out);
                    if t.get(*i) == Some(&Tok::Punct(',')) {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            Some(Tok::Ident(s)) => {
                *i += 1;
                if s != "self" || path.is_empty() {
                    path.push(s.clone());
                }
                if t.get(*i) == Some(&Tok::PathSep) {
                    *i += 1;
                    continue;
                }
                let mut binds = path.last().cloned().unwrap_or_default();
                if let (Some(Tok::Ident(a)), Some(Tok::Ident(b))) = (t.get(*i), t.get(*i + 1)) {
                    if a == "as" {
                        binds = b.clone();
                        *i += 2;
                    }
                }
                out.push((path, binds));
                return;
            }
            _ => return,
        }
    }
}

/// One module: the file it lives in (its node) and what that file says.
struct Module {
    file: PathBuf,
    /// The module path of the file's own module (differs from the key for inline modules).
    file_mod: Vec<String>,
}

/// The edges between the children of one module: (from, to) and the file edges behind it.
type Level = BTreeMap<(String, String), Vec<String>>;

/// One crate's module tree, read from its root file.
struct Tree {
    modules: BTreeMap<Vec<String>, Module>,
    scans: BTreeMap<Vec<String>, FileScan>,
}

/// Follows the `mod` declarations from `root`.
fn read_tree(root: &Path) -> Tree {
    let mut tree = Tree {
        modules: BTreeMap::new(),
        scans: BTreeMap::new(),
    };
    let mut todo = vec![(Vec::<String>::new(), root.to_path_buf())];
    while let Some((m, file)) = todo.pop() {
        let src =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let s = scan(&src);
        let dir = file.parent().expect("a file has a directory");
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let owns_dir = m.is_empty() || stem == "mod";
        for inl in &s.inline {
            let key = [m.clone(), inl.clone()].concat();
            tree.modules.insert(
                key,
                Module {
                    file: file.clone(),
                    file_mod: m.clone(),
                },
            );
        }
        for (inl, name, path_attr) in &s.children {
            let child_file = match path_attr {
                Some(p) => dir.join(p),
                None => {
                    let base = if owns_dir {
                        dir.to_path_buf()
                    } else {
                        dir.join(stem)
                    };
                    let base = inl.iter().fold(base, |b, d| b.join(d));
                    let flat = base.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        base.join(name).join("mod.rs")
                    }
                }
            };
            todo.push((
                [m.clone(), inl.clone(), vec![name.clone()]].concat(),
                child_file,
            ));
        }
        tree.modules.insert(
            m.clone(),
            Module {
                file,
                file_mod: m.clone(),
            },
        );
        tree.scans.insert(m, s);
    }
    tree
}

impl Tree {
    /// The module `path` names from module `ctx`, and the item it names there if any; `None`
    /// when it leaves the crate.
    fn locate(&self, ctx: &[String], path: &[String]) -> Option<(Vec<String>, Option<String>)> {
        let (mut cur, rest): (Vec<String>, &[String]) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (ctx.to_vec(), &path[1..]),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                (ctx[..ctx.len().checked_sub(ups)?].to_vec(), &path[ups..])
            }
            first => {
                let child = [ctx.to_vec(), vec![first.to_string()]].concat();
                self.modules.contains_key(&child).then_some(())?;
                (ctx.to_vec(), path)
            }
        };
        for seg in rest {
            let next = [cur.clone(), vec![seg.clone()]].concat();
            if self.modules.contains_key(&next) {
                cur = next;
            } else {
                return Some((cur, (seg != "*").then(|| seg.clone())));
            }
        }
        Some((cur, None))
    }

    /// The file module that defines what `path`, named from module `ctx`, names, following
    /// re-exports.
    fn resolve(&self, ctx: &[String], path: &[String], depth: usize) -> Option<Vec<String>> {
        let (m, item) = self.locate(ctx, path)?;
        let file_mod = self.modules[&m].file_mod.clone();
        let (Some(item), true) = (item, depth < 16) else {
            return Some(file_mod);
        };
        let s = &self.scans[&file_mod];
        let at = |n: &Named| [file_mod.clone(), n.scope.clone()].concat();
        if let Some(n) = s.named.iter().find(|n| n.reexport && n.binds == item) {
            return self.resolve(&at(n), &n.path, depth + 1).or(Some(file_mod));
        }
        if !s.defines.contains(&item) {
            for n in s.named.iter().filter(|n| n.reexport && n.binds == "*") {
                let Some(g) = self.resolve(&at(n), &n.path[..n.path.len() - 1], depth + 1) else {
                    continue;
                };
                let gs = &self.scans[&g];
                if gs.defines.contains(&item)
                    || gs.named.iter().any(|x| x.reexport && x.binds == item)
                {
                    return self.resolve(
                        &g,
                        &[vec!["self".into()], vec![item]].concat(),
                        depth + 1,
                    );
                }
            }
        }
        Some(file_mod)
    }

    /// Every file-to-file edge, with the names that make it.
    fn edges(&self) -> BTreeMap<(Vec<String>, Vec<String>), BTreeSet<String>> {
        let mut edges: BTreeMap<_, BTreeSet<String>> = BTreeMap::new();
        for (m, s) in &self.scans {
            for n in &s.named {
                let ctx = [m.clone(), n.scope.clone()].concat();
                if let Some(to) = self.resolve(&ctx, &n.path, 0) {
                    if &to != m {
                        edges
                            .entry((m.clone(), to))
                            .or_default()
                            .insert(n.path.last().cloned().unwrap_or_default());
                    }
                }
            }
        }
        edges
    }

    /// The cycles among sibling modules, one line per strongly connected set and one per edge
    /// in it.
    fn cycles(&self, root: &Path) -> Vec<String> {
        // At each parent module, the edges between its children's subtrees.
        let mut levels: BTreeMap<Vec<String>, Level> = BTreeMap::new();
        for ((from, to), names) in self.edges() {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // a module and its own ancestor
            }
            let line = format!(
                "{} -> {} ({})",
                self.shown(&from, root),
                self.shown(&to, root),
                names.into_iter().collect::<Vec<_>>().join(", ")
            );
            levels
                .entry(from[..common].to_vec())
                .or_default()
                .entry((from[common].clone(), to[common].clone()))
                .or_default()
                .push(line);
        }
        let mut out = Vec::new();
        for (parent, edges) in levels {
            let graph: BTreeMap<&str, BTreeSet<&str>> =
                edges.keys().fold(BTreeMap::new(), |mut g, (a, b)| {
                    g.entry(a.as_str()).or_default().insert(b.as_str());
                    g
                });
            for set in strongly_connected(&graph) {
                let at = if parent.is_empty() {
                    "crate".to_string()
                } else {
                    parent.join("::")
                };
                out.push(format!(
                    "cycle in {at}: {}",
                    set.iter().copied().collect::<Vec<_>>().join(", ")
                ));
                for ((a, b), lines) in &edges {
                    if set.contains(a.as_str()) && set.contains(b.as_str()) {
                        out.extend(lines.iter().map(|l| format!("    {l}")));
                    }
                }
            }
        }
        out
    }

    /// A module's file, relative to `root`.
    fn shown(&self, m: &[String], root: &Path) -> String {
        let f = &self.modules[m].file;
        f.strip_prefix(root).unwrap_or(f).display().to_string()
    }
}

/// The strongly connected sets of more than one node of `g` (Tarjan's algorithm).
fn strongly_connected<'a>(g: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<BTreeSet<&'a str>> {
    struct St<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<BTreeSet<&'a str>>,
    }
    fn visit<'a>(v: &'a str, g: &BTreeMap<&'a str, BTreeSet<&'a str>>, st: &mut St<'a>) {
        let n = st.index.len();
        st.index.insert(v, n);
        st.low.insert(v, n);
        st.stack.push(v);
        for &w in g.get(v).into_iter().flatten() {
            if !st.index.contains_key(w) {
                visit(w, g, st);
                let lw = st.low[w];
                st.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if st.stack.contains(&w) {
                let iw = st.index[w];
                st.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if st.low[v] == st.index[v] {
            let mut set = BTreeSet::new();
            while let Some(w) = st.stack.pop() {
                set.insert(w);
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                st.out.push(set);
            }
        }
    }
    let mut st = St {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for &v in g.keys() {
        if !st.index.contains_key(v) {
            visit(v, g, &mut st);
        }
    }
    st.out
}

/// The cycles known and not yet broken, as `crate: parent module: its children in the cycle`;
/// the list only shrinks.
const STILL_TO_BREAK: &[&str] = &[];

/// Every library and binary root of the workspace, with its package's name.
fn crate_roots() -> Vec<(String, PathBuf)> {
    let meta = workspace::metadata();
    let mut roots = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        for t in p["targets"].as_array().expect("targets") {
            let kinds = t["kind"].as_array().expect("kind");
            if kinds
                .iter()
                .any(|k| matches!(k.as_str(), Some("lib" | "bin" | "proc-macro")))
            {
                let name = p["name"].as_str().expect("name").to_string();
                roots.push((
                    name,
                    PathBuf::from(t["src_path"].as_str().expect("src_path")),
                ));
            }
        }
    }
    roots
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let roots = crate_roots();
    for must in [
        "xrdma",
        "xrdma-sim",
        "xrdma-verbs",
        "xrdma-reports",
        "xrdma-runner",
        "xrdma-observe",
        "xrdma-cluster",
        "xrdma-tools",
        "xrdma-testbed",
    ] {
        assert!(roots.iter().any(|(n, _)| n == must), "{must} is checked");
    }
    let mut found = Vec::new();
    let mut cycles = BTreeSet::new();
    for (name, file) in &roots {
        let tree = read_tree(file);
        assert!(
            tree.modules.len() > 1 || name == "xrdma-testbed",
            "{name}: modules found"
        );
        for line in tree.cycles(root) {
            if let Some(c) = line.strip_prefix("cycle in ") {
                cycles.insert(format!("{name}: {c}"));
            }
            found.push(format!("{name}: {line}"));
        }
    }
    let known: BTreeSet<String> = STILL_TO_BREAK.iter().map(|s| s.to_string()).collect();
    assert!(
        cycles.is_subset(&known),
        "import cycles between modules:\n{}",
        found.join("\n")
    );
    assert_eq!(
        cycles, known,
        "a cycle of STILL_TO_BREAK is gone: take it off the list"
    );
}

#[test]
fn the_scan_reads_grouped_imports_and_skips_comments_and_strings() {
    let s = scan(
        "//! Uses crate::doc::Nothing.\n\
         /// See [`crate::also::Nothing`].\n\
         use crate::{a::X, b::{self, Y, Z as W}};\n\
         pub use super::c::*;\n\
         /* crate::block::Nothing */\n\
         fn f() -> &'static str { let _ = '{'; crate::d::g(); r#\"crate::raw::Nothing\"# }\n\
         mod inner { use super::*; }\n\
         #[cfg(test)]\n\
         mod tests { use crate::e::Nothing; }\n",
    );
    let paths: Vec<(String, &str, bool)> = s
        .named
        .iter()
        .map(|n| (n.path.join("::"), n.binds.as_str(), n.reexport))
        .collect();
    assert_eq!(
        paths,
        [
            ("crate::a::X".to_string(), "X", false),
            ("crate::b".to_string(), "b", false),
            ("crate::b::Y".to_string(), "Y", false),
            ("crate::b::Z".to_string(), "W", false),
            ("super::c::*".to_string(), "*", true),
            ("crate::d::g".to_string(), "g", false),
            ("super::*".to_string(), "*", false),
        ]
    );
    assert_eq!(
        s.named[6].scope,
        ["inner"],
        "the inline module's super:: is the file's module"
    );
    assert_eq!(s.defines, BTreeSet::from(["f".to_string()]));
}
