//! The inventory as the cache compares it: each node's evaluated entry, and the
//! fleet-wide rest (every top-level field but `nodes`, and the node names), each
//! reduced to a digest of its fully evaluated value with the position of every
//! attribute (positions can reach a plan through `unsafeGetAttrPos`). Evaluated on
//! a machine of its own, whose traces are dropped: the compilation's output is
//! never touched. A value that cannot be digested (a function, an error) gives
//! None, and None never equals anything; so does every value of an inventory whose
//! evaluation traced (a node taken from the record would not trace again). An inventory written as plain data (no
//! name but `true`, `false` and `null`, no interpolation, path, operator or call)
//! is not evaluated: its values and their positions are a function of the text, so
//! each entry is digested as its text and where it starts.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::{Machine, Span, Value};

use crate::stdlib;

/// The inventory's digests.
#[derive(Debug, Default)]
pub struct EntryDigests {
    pub fleet: Option<String>,
    /// By node name (looked up once or more for every node of every build).
    pub nodes: super::NodeMap<Option<String>>,
    /// How they were made; None when taken from the last record.
    pub how: Option<Digested>,
}

/// How an inventory's digests were made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digested {
    /// From its text: plain data.
    Plain,
    /// From the text of each entry and of what it reaches ([`super::reach`]),
    /// but for `evaluated` entries of `of` (and the fleet-wide rest when
    /// `fleet_evaluated`), which were evaluated.
    Reached {
        evaluated: usize,
        of: usize,
        fleet_evaluated: bool,
    },
    /// By evaluating it.
    Evaluated,
}

/// Evaluates `inventory` (the repository's `mesh.nix`, read through `loader`, with
/// the session's limits and cancel flag) and digests it. The trees it parses are kept in `parses`.
pub fn digest_inventory(
    root: &Path,
    inventory: &Path,
    loader: Rc<dyn lang::Loader>,
    session: &crate::pipeline::Session,
    parses: &std::sync::Arc<lang::ParseCache>,
) -> EntryDigests {
    let new_machine = || inventory_machine(root, loader.clone(), session, parses);
    if let Some(digests) = literal_digests(root, &mut new_machine(), inventory) {
        return digests;
    }
    let reach = super::reach::digests(root, &mut new_machine(), &*loader, inventory);
    let (mut known, known_fleet, reach_how) = match reach {
        Some(reach) => {
            let of = reach.nodes.len();
            let evaluated = reach
                .nodes
                .iter()
                .filter(|(_, digest)| digest.is_none())
                .count();
            let how = Digested::Reached {
                evaluated,
                of,
                fleet_evaluated: reach.fleet.is_none(),
            };
            let known: super::NodeMap<String> = reach
                .nodes
                .into_iter()
                .filter_map(|(node, digest)| Some((node, digest?)))
                .collect();
            if evaluated == 0 && reach.fleet.is_some() {
                let nodes = known.into_iter().map(|(node, digest)| (node, Some(digest)));
                return EntryDigests {
                    fleet: reach.fleet,
                    nodes: nodes.collect(),
                    how: Some(how),
                };
            }
            (known, reach.fleet, Some(how))
        }
        None => (super::NodeMap::default(), None, None),
    };
    // evaluated on a machine of its own: the one that parsed has the file already,
    // and would not find its tree in the cache under the id it gives it again;
    // what was digested by what it reaches is not evaluated
    let mut machine = new_machine();
    let mut digests = EntryDigests {
        how: Some(Digested::Evaluated),
        ..EntryDigests::default()
    };
    let Ok(value) = machine.eval_file(inventory) else {
        return digests;
    };
    let Ok(Value::Attrs(top)) = machine.force(&value, Span::default()) else {
        return digests;
    };
    let mut fleet = Digester::new(root);
    let mut complete = true;
    for attr in top.iter() {
        fleet.bytes(b"attr", &attr.name);
        if &*attr.name == b"nodes" {
            let Ok(Value::Attrs(nodes)) = machine.force(&attr.value, Span::default()) else {
                return digests;
            };
            for node in nodes.iter() {
                let name = String::from_utf8_lossy(&node.name).into_owned();
                fleet.bytes(b"node", &node.name);
                if let Some(digest) = known.remove(&name) {
                    digests.nodes.insert(name, Some(digest));
                    continue;
                }
                let mut entry = fleet.sibling();
                entry.position(&machine, node.span);
                let digest = entry
                    .value(&mut machine, &node.value, 0)
                    .map(|()| entry.finish());
                digests.nodes.insert(name, digest);
            }
        } else if known_fleet.is_none() {
            fleet.position(&machine, attr.span);
            complete &= fleet.value(&mut machine, &attr.value, 0).is_some();
        }
    }
    match known_fleet {
        Some(known) => digests.fleet = Some(known),
        None if complete => digests.fleet = Some(fleet.finish()),
        None => {}
    }
    if reach_how.is_some() {
        digests.how = reach_how;
    }
    if !machine.traces.is_empty() {
        // what traced would not be said by a compilation that takes an entry from
        // the record: nothing of an inventory that traces is compared equal
        digests.fleet = None;
        digests.nodes.values_mut().for_each(|digest| *digest = None);
    }
    digests
}

/// A tag and a length-prefixed payload added to `bytes`, so that no two sequences
/// feed a digest the same bytes.
pub(super) fn part(bytes: &mut Vec<u8>, tag: &[u8], payload: &[u8]) {
    bytes.extend_from_slice(tag);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(payload);
}

/// The inventory's path as digests name it: relative to the repository.
pub(super) fn shown(root: &Path, inventory: &Path) -> String {
    inventory
        .strip_prefix(root)
        .unwrap_or(inventory)
        .display()
        .to_string()
}

/// An evaluator for the inventory with the session's limits and cancel flag, whose
/// trees are kept in `parses`.
pub(super) fn inventory_machine(
    root: &Path,
    loader: Rc<dyn lang::Loader>,
    session: &crate::pipeline::Session,
    parses: &std::sync::Arc<lang::ParseCache>,
) -> Machine {
    let machine = Machine::new(
        loader,
        vec![root.to_path_buf(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        session.limits,
    )
    .with_parse_cache(parses.clone());
    match &session.cancelled {
        Some(cancelled) => machine.with_cancel_flag(cancelled.clone()),
        None => machine,
    }
}

/// Deeper than this, a value is not digested (None), and an expression is not
/// taken for plain data.
const MAX_DEPTH: usize = 512;

/// The digests of an inventory written as plain data, from its text (None: it is
/// not, or cannot be read or parsed; evaluate it). Its top level and its `nodes` are
/// sets written out, without `rec`, each name once, and every value under them is
/// [`plain`]. Each node's digest is of the text of its binding and the line and
/// column it starts at (which fix the position of every attribute in it); the
/// fleet's of every other binding's text and position and the node names. These
/// are digests of another kind than the evaluated ones, so an inventory that turns
/// from plain data to code, or back, changes every node's digest once.
fn literal_digests(root: &Path, machine: &mut Machine, inventory: &Path) -> Option<EntryDigests> {
    let (file, expr) = machine.parse_file(inventory).ok()?;
    crate::phases::mark("inventory parsed");
    let source = machine.sources.get(file)?.clone();
    let name = shown(root, inventory);
    // what is digested of a binding: where it starts, then its text
    let located = |span: Span, prefix: &mut String| -> Option<&[u8]> {
        use std::fmt::Write;
        let (line, column) = source.line_column(span.start);
        prefix.clear();
        write!(prefix, "literal {name}:{line}:{column} ").ok()?;
        source.text.get(span.start as usize..span.end as usize)
    };
    let mut prefix = String::new();
    let mut digests = EntryDigests {
        how: Some(Digested::Plain),
        ..EntryDigests::default()
    };
    let mut fleet = Digester::new(root);
    for (field, span, value) in fields(&expr)? {
        fleet.bytes(b"attr", field);
        if field == b"nodes" {
            let nodes = fields(value)?;
            for (node, ..) in &nodes {
                fleet.bytes(b"node", node);
            }
            digests.nodes = node_digests(&nodes, &located, DIGESTED_APART)?;
        } else {
            if !plain(value, 0) {
                return None;
            }
            let text = located(span, &mut prefix)?;
            fleet.bytes(b"literal", &[prefix.as_bytes(), text].concat());
        }
    }
    digests.fleet = Some(fleet.finish());
    Some(digests)
}

/// Below this many nodes an inventory's entries are digested on one thread.
const DIGESTED_APART: usize = 1024;

/// The digest of each node's entry (None: one is not plain data), `located`
/// giving what is digested of a binding beside its text. A large inventory's
/// entries are digested in two halves at once: the rest of the build waits for
/// them, and the other core has nothing else to do then (10,000 nodes: 11 ms on
/// one thread).
fn node_digests<'s, L>(
    nodes: &[(&[u8], Span, &lang::syntax::Expr)],
    located: &L,
    apart_from: usize,
) -> Option<super::NodeMap<Option<String>>>
where
    L: Fn(Span, &mut String) -> Option<&'s [u8]> + Sync,
{
    let digest_all = |nodes: &[(&[u8], Span, &lang::syntax::Expr)]| {
        let mut prefix = String::new();
        nodes
            .iter()
            .map(|(node, span, entry)| {
                if !plain(entry, 0) {
                    return None;
                }
                // the prefix and the text hashed in place, not copied together
                let text = located(*span, &mut prefix)?;
                let digest = plan::canonical::sha256_digest_of_parts(&[prefix.as_bytes(), text]);
                Some((String::from_utf8_lossy(node).into_owned(), Some(digest)))
            })
            .collect::<Option<Vec<_>>>()
    };
    let (first, second) = if nodes.len() < apart_from {
        (digest_all(nodes)?, Vec::new())
    } else {
        let (first, second) = nodes.split_at(nodes.len() / 2);
        let (second, first) = super::beside(
            "mesh-inventory-digests",
            || digest_all(second),
            || digest_all(first),
        );
        (first?, second?)
    };
    let mut digests =
        super::NodeMap::with_capacity_and_hasher(first.len() + second.len(), Default::default());
    digests.extend(first.into_iter().chain(second));
    Some(digests)
}

/// The bindings of a set written out (without `rec`), each by its one static name,
/// each name once (None: it is not such a set, or it inherits).
pub(super) fn fields(expr: &lang::syntax::Expr) -> Option<Vec<(&[u8], Span, &lang::syntax::Expr)>> {
    super::reach::top_fields(expr)?
        .into_iter()
        .map(|(name, span, value)| Some((name, span, value?)))
        .collect()
}

/// Whether `expr` is plain data: its value is a function of its text alone. Numbers,
/// strings without interpolation, `true`, `false`, `null`, and lists and sets
/// (without `rec`, `inherit` or a computed name) of plain data.
fn plain(expr: &lang::syntax::Expr, depth: usize) -> bool {
    use lang::syntax::{AttrName, Binding, ExprKind, StringPart};
    if depth > MAX_DEPTH {
        return false;
    }
    match &expr.kind {
        ExprKind::Integer(_) | ExprKind::Float(_) => true,
        ExprKind::String(parts) => parts
            .iter()
            .all(|part| matches!(part, StringPart::Literal(_))),
        ExprKind::Variable(name) => matches!(name.as_str(), "true" | "false" | "null"),
        ExprKind::List(items) => items.iter().all(|item| plain(item, depth + 1)),
        ExprKind::Attrs {
            recursive: false,
            bindings,
        } => bindings.iter().all(|binding| match binding {
            Binding::Assign { path, value, .. } => {
                path.iter()
                    .all(|name| matches!(name, AttrName::Static { .. }))
                    && plain(value, depth + 1)
            }
            Binding::Inherit { .. } => false,
        }),
        _ => false,
    }
}

struct Digester<'a> {
    root: &'a Path,
    bytes: Vec<u8>,
    /// Each file's path as positions name it, by file, shared by the digesters of
    /// one inventory (10,000 entries of a few attributes each named the same file
    /// again for every attribute: the path made and formatted each time).
    paths: Rc<std::cell::RefCell<rustc_hash::FxHashMap<u32, Rc<str>>>>,
}

impl<'a> Digester<'a> {
    fn new(root: &'a Path) -> Digester<'a> {
        Digester {
            root,
            bytes: Vec::new(),
            paths: Rc::default(),
        }
    }

    /// A digester of its own that shares this one's names of files.
    fn sibling(&self) -> Digester<'a> {
        Digester {
            root: self.root,
            bytes: Vec::new(),
            paths: self.paths.clone(),
        }
    }

    /// A tag and a length-prefixed payload, so that no two values feed the same bytes.
    fn bytes(&mut self, tag: &[u8], payload: &[u8]) {
        part(&mut self.bytes, tag, payload);
    }

    fn position(&mut self, machine: &Machine, span: Option<Span>) {
        let Some(span) = span else {
            self.bytes(b"nowhere", b"");
            return;
        };
        match machine.sources.get(span.file) {
            Some(file) => {
                let (line, column) = file.line_column(span.start);
                let path = self
                    .paths
                    .borrow_mut()
                    .entry(span.file.0)
                    .or_insert_with(|| {
                        file.path
                            .as_ref()
                            .map(|path| {
                                path.strip_prefix(self.root)
                                    .unwrap_or(path)
                                    .display()
                                    .to_string()
                            })
                            .unwrap_or_else(|| file.name.clone())
                            .into()
                    })
                    .clone();
                self.bytes(b"at", format!("{path}:{line}:{column}").as_bytes());
            }
            None => self.bytes(b"nowhere", b""),
        }
    }

    fn value(&mut self, machine: &mut Machine, value: &Value, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let value = machine.force(value, Span::default()).ok()?;
        match &value {
            Value::Null => self.bytes(b"null", b""),
            Value::Bool(flag) => self.bytes(b"bool", &[u8::from(*flag)]),
            Value::Int(number) => self.bytes(b"int", &number.to_le_bytes()),
            Value::Float(number) => self.bytes(b"float", &number.to_bits().to_le_bytes()),
            Value::String(text) => self.bytes(b"string", text),
            Value::Path(path) => self.bytes(b"path", path),
            Value::Attrs(attrs) => {
                self.bytes(b"attrs", &(attrs.len() as u64).to_le_bytes());
                for attr in attrs.iter() {
                    self.bytes(b"name", &attr.name);
                    self.position(machine, attr.span);
                    self.value(machine, &attr.value, depth + 1)?;
                }
            }
            Value::List(items) => {
                self.bytes(b"list", &(items.len() as u64).to_le_bytes());
                for item in items.iter() {
                    self.value(machine, item, depth + 1)?;
                }
            }
            Value::Lambda(_)
            | Value::PrimOp(_)
            | Value::PrimOpApp(_)
            | Value::Thunk(_)
            | Value::Opaque(_) => return None,
        }
        Some(())
    }

    fn finish(self) -> String {
        plan::sha256_digest(&self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::{fields, node_digests, plain};
    use lang::Span;

    fn parsed(text: &str) -> lang::syntax::Expr {
        let parsed = lang::parser::parse(text.as_bytes(), lang::FileId::default());
        assert!(parsed.errors.is_empty(), "{text}: {:?}", parsed.errors);
        parsed.expr
    }

    #[test]
    fn plain_data_is_what_the_text_alone_decides() {
        for text in [
            "{ }",
            "{ a = 1; b = [ \"x\" true false null ]; c.d = 2.5; }",
            "{ \"a b\" = ''\n  indented\n''; nested = { deeper = [ [ ] { } ]; }; }",
        ] {
            assert!(plain(&parsed(text), 0), "{text} is plain data");
        }
        for text in [
            "{ a = x; }",
            "rec { a = 1; b = a; }",
            "{ inherit a; }",
            "{ inherit (x) a; }",
            "{ ${x} = 1; }",
            "{ a = \"${b}\"; }",
            "{ a = ./p; }",
            "{ a = -1; }",
            "{ a = f 1; }",
            "{ a = [ 1 ] ++ [ 2 ]; }",
            "{ a = let b = 1; in b; }",
            "{ a = x.y; }",
            "{ a = import ./b.nix; }",
            "{ a = with x; y; }",
            "{ a = if true then 1 else 2; }",
            "{ a = builtins; }",
        ] {
            assert!(!plain(&parsed(text), 0), "{text} is not plain data");
        }
    }

    /// Parsed, walked and dropped on an evaluation stack, as the inventory is in
    /// every compilation (`cache::digest_inventory`): the parser takes nesting up to
    /// `lang::parser::MAX_NESTING` and needs that stack for it; `plain` itself stops
    /// at [`MAX_DEPTH`]. Before, on the test thread's 2 MiB stack, parsing 600 lists
    /// overflowed it in a debug build.
    #[test]
    fn deep_data_is_not_taken_for_plain() {
        lang::eval::run_with_stack(|| {
            let text = format!("{}1{}", "[ ".repeat(600), " ]".repeat(600));
            assert!(!plain(&parsed(&text), 0));
            let text = format!("{}1{}", "[ ".repeat(100), " ]".repeat(100));
            assert!(plain(&parsed(&text), 0));
        })
        .expect("an evaluation thread");
    }

    #[test]
    fn entries_digested_in_two_halves_are_digested_as_on_one_thread() {
        // entries that differ in their text, their place, or only in their name
        let mut text = String::from("{\n");
        for node in 0..40 {
            text.push_str(&format!(
                "  n{node:03} = {{ key = \"k{}\"; modules = [ \"m{}\" ]; }};\n",
                node % 7,
                node % 3
            ));
        }
        text.push('}');
        let expr = parsed(&text);
        let nodes = fields(&expr).expect("a set of plain fields");
        let located = |span: Span, prefix: &mut String| -> Option<&[u8]> {
            prefix.clear();
            prefix.push_str(&format!("at {} ", span.start));
            text.as_bytes().get(span.start as usize..span.end as usize)
        };
        let one = node_digests(&nodes, &located, usize::MAX).expect("plain");
        let two = node_digests(&nodes, &located, 2).expect("plain");
        assert_eq!(one.len(), 40);
        assert_eq!(one, two);
        let distinct: std::collections::BTreeSet<_> = one.values().collect();
        assert_eq!(distinct.len(), 40, "every entry has a digest of its own");
        // a non-plain entry in the half digested apart is seen there too
        let mut with_call = text.clone();
        with_call.replace_range(
            with_call.rfind("\"k").unwrap()..with_call.rfind("\"k").unwrap() + 4,
            "(f 1)",
        );
        let expr = parsed(&with_call);
        let nodes = fields(&expr).expect("a set of fields");
        let located = |span: Span, prefix: &mut String| -> Option<&[u8]> {
            prefix.clear();
            with_call
                .as_bytes()
                .get(span.start as usize..span.end as usize)
        };
        assert!(node_digests(&nodes, &located, usize::MAX).is_none());
        assert!(node_digests(&nodes, &located, 2).is_none());
    }
}
