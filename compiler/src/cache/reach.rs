//! Digests of an inventory written as code around entries written out: `let`s
//! above a set (without `rec`) whose `nodes` is a set of entries, each bound by
//! its one name, as the example fleet's `mesh.nix` is. The language is pure and
//! its names are lexical, so an entry's value, with the position of every
//! attribute in it, is a function of its text and where it starts, of the same of
//! every `let` binding its names reach (and theirs, and so on), and of the files
//! it imports by a path written out (each a function of its own text). Such an
//! entry is digested so, unevaluated. One that reaches anything else (a builtin
//! that reads a file or traces, `import` of a computed path, a name a `with`
//! could give, a `rec` set merged with another binding, whose names Nix binds
//! otherwise than it reads) is not digested here (None): the caller evaluates it.
//! Each binding reached is digested once, with what it reaches ([`Merkle`]).
//!
//! Invariant: a digest made here changes whenever the entry's value or the
//! position of anything in it could; an entry is never given one otherwise.

use std::collections::BTreeSet;
use std::path::Path;

use super::entries::part;

use lang::syntax::{AttrName, BinaryOp, Binding, Expr, ExprKind, Param, StringPart, UnaryOp};
use lang::{FileKind, Machine, SourceFile, Span};

/// Builtins (as `builtins.NAME` or `__NAME`) whose result is a function of their
/// arguments alone: no file read, nothing printed, no clock or environment.
const PURE_BUILTINS: &[&str] = &[
    "abort",
    "add",
    "addErrorContext",
    "all",
    "any",
    "attrNames",
    "attrValues",
    "baseNameOf",
    "bitAnd",
    "bitOr",
    "bitXor",
    "catAttrs",
    "ceil",
    "compareVersions",
    "concatLists",
    "concatMap",
    "concatStringsSep",
    "deepSeq",
    "dirOf",
    "div",
    "elem",
    "elemAt",
    "false",
    "filter",
    "floor",
    "foldl'",
    "fromJSON",
    "fromTOML",
    "functionArgs",
    "genList",
    "genericClosure",
    "getAttr",
    "groupBy",
    "hasAttr",
    "hashString",
    "head",
    "intersectAttrs",
    "isAttrs",
    "isBool",
    "isFloat",
    "isFunction",
    "isInt",
    "isList",
    "isNull",
    "isPath",
    "isString",
    "langVersion",
    "length",
    "lessThan",
    "listToAttrs",
    "map",
    "mapAttrs",
    "match",
    "mul",
    "nixVersion",
    "null",
    "parseDrvName",
    "partition",
    "removeAttrs",
    "replaceStrings",
    "seq",
    "sort",
    "split",
    "splitVersion",
    "stringLength",
    "sub",
    "substring",
    "tail",
    "throw",
    "toJSON",
    "toString",
    "toXML",
    "true",
    "tryEval",
    "typeOf",
    "unsafeGetAttrPos",
    "zipAttrsWith",
];

/// Names global without `builtins.` that are pure (the rest of the unprefixed
/// globals import, fetch or make derivations).
const PURE_GLOBALS: &[&str] = &[
    "abort",
    "baseNameOf",
    "dirOf",
    "false",
    "fromTOML",
    "isNull",
    "map",
    "null",
    "removeAttrs",
    "throw",
    "toString",
    "true",
    // its value is where it is written: a function of the text and its start
    "__curPos",
];

/// What a walk reports for `builtins.NAME` of a pure builtin: a name that is no
/// variable's (it starts with a space), which stands for the builtin as long as
/// no `let` binds `builtins`.
const BUILTINS_SELECTED: &[u8] = b" builtins";
/// What a walk reports for `import ./path` (the path recorded apart): the
/// builtin as long as no `let` binds `import`.
const IMPORT_CALLED: &[u8] = b" import";

/// Whether `name`, bound by no `let`, is a pure global.
fn pure_global(name: &[u8]) -> bool {
    if name == BUILTINS_SELECTED || name == IMPORT_CALLED {
        return true;
    }
    let Ok(name) = std::str::from_utf8(name) else {
        return false;
    };
    PURE_GLOBALS.contains(&name)
        || name
            .strip_prefix("__")
            .is_some_and(|builtin| PURE_BUILTINS.contains(&builtin))
}

/// Deeper than this, an expression is not followed (None).
const MAX_DEPTH: usize = 512;
/// A file imported larger than this is left to evaluation (which reads it only
/// if it is reached).
const MAX_IMPORTED: u64 = 16 << 20;
/// Files imported from files imported from the inventory, at most this deep.
const MAX_IMPORT_DEPTH: usize = 32;

/// What an expression reaches beyond itself: the names it leaves free (each with
/// the scope level it is resolved at) and the paths it imports, as written.
#[derive(Default)]
struct Reached<'t> {
    names: Vec<(&'t [u8], usize)>,
    imports: Vec<Vec<u8>>,
}

/// Names bound inside a walk so far: a stack (to leave a scope) counted by name
/// (a lookup costs the same however many are bound).
#[derive(Default)]
struct Bound<'t> {
    stack: Vec<&'t [u8]>,
    counts: rustc_hash::FxHashMap<&'t [u8], u32>,
}

impl<'t> Bound<'t> {
    fn len(&self) -> usize {
        self.stack.len()
    }

    fn push(&mut self, name: &'t [u8]) {
        self.stack.push(name);
        *self.counts.entry(name).or_default() += 1;
    }

    fn extend(&mut self, names: impl IntoIterator<Item = &'t [u8]>) {
        for name in names {
            self.push(name);
        }
    }

    fn contains(&self, name: &[u8]) -> bool {
        self.counts.get(name).is_some_and(|count| *count > 0)
    }

    /// Leaves the scopes entered since the stack was `mark` long.
    fn truncate(&mut self, mark: usize) {
        while self.stack.len() > mark {
            if let Some(name) = self.stack.pop()
                && let Some(count) = self.counts.get_mut(name)
            {
                *count -= 1;
            }
        }
    }
}

/// The walk of one expression: the names bound inside it so far.
struct Walk<'t> {
    bound: Bound<'t>,
    level: usize,
    reached: Reached<'t>,
}

impl<'t> Walk<'t> {
    fn new(level: usize) -> Walk<'t> {
        Walk {
            bound: Bound::default(),
            level,
            reached: Reached::default(),
        }
    }

    fn name(&mut self, name: &'t [u8]) {
        if !self.bound.contains(name) {
            self.reached.names.push((name, self.level));
        }
    }

    fn parts(&mut self, parts: &'t [StringPart], depth: usize) -> Option<()> {
        for part in parts {
            if let StringPart::Interpolation(expr) = part {
                self.expr(expr, depth + 1)?;
            }
        }
        Some(())
    }

    fn path(&mut self, path: &'t [AttrName], depth: usize) -> Option<()> {
        for name in path {
            if let AttrName::Dynamic(expr) = name {
                self.expr(expr, depth + 1)?;
            }
        }
        Some(())
    }

    /// The names a `let` or `rec` set binds (None: one is computed).
    fn bound_by(bindings: &'t [Binding]) -> Option<Vec<&'t [u8]>> {
        let mut names = Vec::new();
        for binding in bindings {
            match binding {
                Binding::Assign { path, .. } => match path.first()? {
                    AttrName::Static { name, .. } => names.push(name.as_slice()),
                    AttrName::Dynamic(_) => return None,
                },
                Binding::Inherit {
                    names: inherited, ..
                } => {
                    for name in inherited {
                        match name {
                            AttrName::Static { name, .. } => names.push(name.as_slice()),
                            AttrName::Dynamic(_) => return None,
                        }
                    }
                }
            }
        }
        Some(names)
    }

    /// The bindings of a set or `let`; `recursive`: their names are bound in
    /// their values (an `inherit` without a source still names the scope around).
    fn bindings(
        &mut self,
        bindings: &'t [Binding],
        recursive: bool,
        depth: usize,
    ) -> Option<usize> {
        if merges_a_rec(bindings) {
            return None;
        }
        let mark = self.bound.len();
        for binding in bindings {
            if let Binding::Inherit {
                from: None, names, ..
            } = binding
            {
                for name in names {
                    match name {
                        AttrName::Static { name, .. } => self.name(name),
                        AttrName::Dynamic(_) => return None,
                    }
                }
            }
        }
        if recursive {
            let names = Walk::bound_by(bindings)?;
            self.bound.extend(names);
        }
        for binding in bindings {
            match binding {
                Binding::Assign { path, value, .. } => {
                    // a set's first name may be computed; a `let`'s may not
                    // (`bound_by` refused it)
                    self.path(path, depth)?;
                    self.expr(value, depth + 1)?;
                }
                Binding::Inherit {
                    from: Some(from), ..
                } => self.expr(from, depth + 1)?,
                Binding::Inherit { from: None, .. } => {}
            }
        }
        Some(mark)
    }

    fn expr(&mut self, expr: &'t Expr, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match &expr.kind {
            ExprKind::Integer(_) | ExprKind::Float(_) | ExprKind::Uri(_) => Some(()),
            // a path is a value: nothing is read until something reads it, and
            // what reads it (a builtin here, a module later) is followed there
            ExprKind::String(parts) | ExprKind::Path(parts) => self.parts(parts, depth),
            ExprKind::Variable(name) => {
                self.name(name.as_bytes());
                Some(())
            }
            ExprKind::Select {
                expr: from,
                path,
                default,
            } => {
                let mut rest: &[AttrName] = path;
                match (&from.kind, path.first()) {
                    (ExprKind::Variable(name), Some(first))
                        if name == "builtins" && !self.bound.contains(b"builtins") =>
                    {
                        let AttrName::Static { name, .. } = first else {
                            return None;
                        };
                        if !std::str::from_utf8(name)
                            .is_ok_and(|name| PURE_BUILTINS.contains(&name))
                        {
                            return None;
                        }
                        self.name(BUILTINS_SELECTED);
                        rest = &path[1..];
                    }
                    _ => self.expr(from, depth + 1)?,
                }
                self.path(rest, depth)?;
                match default {
                    Some(default) => self.expr(default, depth + 1),
                    None => Some(()),
                }
            }
            ExprKind::HasAttr { expr: from, path } => {
                self.expr(from, depth + 1)?;
                self.path(path, depth)
            }
            ExprKind::Attrs {
                recursive,
                bindings,
            } => {
                let mark = self.bindings(bindings, *recursive, depth)?;
                self.bound.truncate(mark);
                Some(())
            }
            ExprKind::List(items) => {
                for item in items {
                    self.expr(item, depth + 1)?;
                }
                Some(())
            }
            ExprKind::Let { bindings, body } => {
                let mark = self.bindings(bindings, true, depth)?;
                let body = self.expr(body, depth + 1);
                self.bound.truncate(mark);
                body
            }
            // the names a `with` gives are known only from its value
            ExprKind::LegacyLet { .. } | ExprKind::With { .. } | ExprKind::Error => None,
            ExprKind::If {
                condition,
                then,
                otherwise,
            } => {
                self.expr(condition, depth + 1)?;
                self.expr(then, depth + 1)?;
                self.expr(otherwise, depth + 1)
            }
            ExprKind::Assert { condition, body } => {
                self.expr(condition, depth + 1)?;
                self.expr(body, depth + 1)
            }
            ExprKind::Lambda { param, body } => {
                let mark = self.bound.len();
                let mut defaults = Vec::new();
                match &**param {
                    Param::Identifier { name, .. } => self.bound.push(name.as_bytes()),
                    Param::Formals { formals, at, .. } => {
                        for formal in formals {
                            self.bound.push(formal.name.as_bytes());
                            defaults.extend(formal.default.as_ref());
                        }
                        if let Some((name, _)) = at {
                            self.bound.push(name.as_bytes());
                        }
                    }
                }
                let walked = defaults
                    .into_iter()
                    .try_for_each(|default| self.expr(default, depth + 1))
                    .and_then(|()| self.expr(body, depth + 1));
                self.bound.truncate(mark);
                walked
            }
            ExprKind::Apply {
                function,
                arguments,
            } => {
                let mut arguments: &[Expr] = arguments;
                match (&function.kind, arguments.first()) {
                    // `import ./file.nix`: the file is followed where it is named
                    (ExprKind::Variable(name), Some(first))
                        if name == "import" && !self.bound.contains(b"import") =>
                    {
                        let ExprKind::Path(parts) = &first.kind else {
                            return None;
                        };
                        let mut written = Vec::new();
                        for part in parts {
                            match part {
                                StringPart::Literal(bytes) => written.extend_from_slice(bytes),
                                StringPart::Interpolation(_) => return None,
                            }
                        }
                        self.name(IMPORT_CALLED);
                        self.reached.imports.push(written);
                        arguments = &arguments[1..];
                    }
                    _ => self.expr(function, depth + 1)?,
                }
                for argument in arguments {
                    self.expr(argument, depth + 1)?;
                }
                Some(())
            }
            ExprKind::Unary { op, expr: operand } => {
                // `-x` is `__sub 0 x`, which a `let` may bind
                if *op == UnaryOp::Negate {
                    self.name(b"__sub");
                }
                self.expr(operand, depth + 1)
            }
            ExprKind::Binary {
                op, left, right, ..
            } => {
                // the operators Nix calls a global for, which a `let` may bind
                let called: &'static [u8] = match op {
                    BinaryOp::Subtract => b"__sub",
                    BinaryOp::Multiply => b"__mul",
                    BinaryOp::Divide => b"__div",
                    BinaryOp::Less
                    | BinaryOp::LessEqual
                    | BinaryOp::Greater
                    | BinaryOp::GreaterEqual => b"__lessThan",
                    _ => b"",
                };
                if !called.is_empty() {
                    self.name(called);
                }
                self.expr(left, depth + 1)?;
                self.expr(right, depth + 1)
            }
        }
    }
}

/// Whether `bindings` bind one name twice where one of them is a `rec` set
/// literal: merged (`s = { x = 1; }; s = rec { y = x; };`, or `s.x = 1;` first),
/// Nix drops the `rec`, and the literal's names no longer bind in its values;
/// merged into (`s = rec { ... }; s.b = ...;`), its names bind in values written
/// outside it. Neither is followed.
fn merges_a_rec<'b>(bindings: &'b [Binding]) -> bool {
    let holds_a_rec = bindings.iter().any(|binding| {
        matches!(
            binding,
            Binding::Assign {
                value: Expr {
                    kind: ExprKind::Attrs {
                        recursive: true,
                        ..
                    },
                    ..
                },
                ..
            }
        )
    });
    // most sets hold none: nothing is counted for them
    if !holds_a_rec {
        return false;
    }
    let mut first_names: rustc_hash::FxHashMap<&'b [u8], (u32, bool)> = Default::default();
    let mut count = |name: &'b [u8], rec: bool| {
        let seen = first_names.entry(name).or_default();
        seen.0 += 1;
        seen.1 |= rec;
    };
    for binding in bindings {
        match binding {
            Binding::Assign { path, value, .. } => {
                if let Some(AttrName::Static { name, .. }) = path.first() {
                    let rec = path.len() == 1
                        && matches!(
                            value.kind,
                            ExprKind::Attrs {
                                recursive: true,
                                ..
                            }
                        );
                    count(name, rec);
                }
            }
            Binding::Inherit { names, .. } => {
                for name in names {
                    if let AttrName::Static { name, .. } = name {
                        count(name, false);
                    }
                }
            }
        }
    }
    first_names.values().any(|(count, rec)| *count > 1 && *rec)
}

/// What `expr` reaches, its names resolved at `level` (None: it reaches what
/// cannot be followed), each name once.
fn reached(expr: &Expr, level: usize) -> Option<Reached<'_>> {
    let mut walk = Walk::new(level);
    walk.expr(expr, 0)?;
    let mut reached = walk.reached;
    reached.names.sort_unstable();
    reached.names.dedup();
    Some(reached)
}

/// One binding of a `let` of the inventory: where it is, and what it reaches
/// (None: something that cannot be followed).
struct LetBinding<'t> {
    span: Span,
    reached: Option<Reached<'t>>,
}

/// The `let`s above the inventory's set, outermost first: each one's bindings,
/// and by name the bindings that bind it (`a.b = 1; a.c = 2;` bind `a` twice).
struct Scopes<'t> {
    bindings: Vec<Vec<LetBinding<'t>>>,
    names: Vec<rustc_hash::FxHashMap<&'t [u8], Vec<usize>>>,
}

impl<'t> Scopes<'t> {
    /// The `let`s around `expr` and the expression inside them.
    fn peel(mut expr: &'t Expr) -> Option<(Scopes<'t>, &'t Expr)> {
        let mut scopes = Scopes {
            bindings: Vec::new(),
            names: Vec::new(),
        };
        while let ExprKind::Let { bindings, body } = &expr.kind {
            // a binding of this `let` sees it and every one around it; an
            // `inherit x;` names the scope around
            let level = scopes.bindings.len();
            let merged_rec = merges_a_rec(bindings);
            let mut made = Vec::with_capacity(bindings.len());
            let mut names: rustc_hash::FxHashMap<&[u8], Vec<usize>> = Default::default();
            for (index, binding) in bindings.iter().enumerate() {
                let (span, reached) = match binding {
                    Binding::Assign { path, value, span } => {
                        let AttrName::Static { name, .. } = path.first()? else {
                            return None;
                        };
                        names.entry(name.as_slice()).or_default().push(index);
                        let mut walk = Walk::new(level + 1);
                        let walked = walk.path(&path[1..], 0).and_then(|()| walk.expr(value, 0));
                        (*span, walked.map(|()| walk.reached))
                    }
                    Binding::Inherit {
                        from,
                        names: inherited,
                        span,
                    } => {
                        let mut reached = Reached::default();
                        for name in inherited {
                            let AttrName::Static { name, .. } = name else {
                                return None;
                            };
                            names.entry(name.as_slice()).or_default().push(index);
                            if from.is_none() {
                                reached.names.push((name.as_slice(), level));
                            }
                        }
                        let reached = match from {
                            Some(from) => self::reached(from, level + 1),
                            None => Some(reached),
                        };
                        (*span, reached)
                    }
                };
                // each name once; none of a `let` that merges a `rec` set
                let reached = reached.filter(|_| !merged_rec).map(|mut reached| {
                    reached.names.sort_unstable();
                    reached.names.dedup();
                    reached
                });
                made.push(LetBinding { span, reached });
            }
            scopes.bindings.push(made);
            scopes.names.push(names);
            expr = body;
        }
        Some((scopes, expr))
    }

    /// The innermost binding of `name` visible at `level` (a scope index and its
    /// bindings of the name).
    fn resolve(&self, name: &[u8], level: usize) -> Option<(usize, &[usize])> {
        (0..level.min(self.names.len()))
            .rev()
            .find_map(|scope| Some((scope, self.names[scope].get(name)?.as_slice())))
    }
}

/// The digests of an inventory made here.
pub(super) struct Reach {
    /// The fleet-wide rest (every top-level field but `nodes`, and the node
    /// names); None when a field reaches what cannot be followed.
    pub fleet: Option<String>,
    /// Each node's, by name; None where the entry reaches what cannot be followed.
    pub nodes: Vec<(String, Option<String>)>,
}

/// The inventory `inventory`'s digests by what its entries reach (None: it is not
/// written as `let`s above a set whose `nodes` is a set of entries written out).
/// `machine` parses the inventory and the files it imports (through the
/// recording loader); `loader` says which paths are directories.
pub(super) fn digests(
    root: &Path,
    machine: &mut Machine,
    loader: &dyn lang::Loader,
    inventory: &Path,
) -> Option<Reach> {
    let (file, expr) = machine.parse_file(inventory).ok()?;
    let source = machine.sources.get(file)?.clone();
    let (scopes, body) = Scopes::peel(&expr)?;
    let level = scopes.bindings.len();
    let fields = top_fields(body)?;
    let name = super::entries::shown(root, inventory);
    let mut reach = Merkle {
        scopes: &scopes,
        source: &source,
        name: &name,
        inventory,
        files: Files {
            root,
            loader,
            digests: Default::default(),
        },
        offsets: scopes
            .bindings
            .iter()
            .scan(0, |next, scope| {
                let offset = *next;
                *next += scope.len();
                Some(offset)
            })
            .collect(),
        digests: rustc_hash::FxHashMap::default(),
    };
    let mut nodes = None;
    let mut fleet = Some(Vec::new());
    for (field, span, value) in &fields {
        if *field == b"nodes" {
            nodes = Some(super::entries::fields((*value)?)?);
            continue;
        }
        let digest = value
            .and_then(|value| reached(value, level))
            .or_else(|| {
                // `inherit x;` of the set: the name, in the scope the set is in
                value.is_none().then(|| Reached {
                    names: vec![(*field, level)],
                    imports: Vec::new(),
                })
            })
            .and_then(|reached| reach.item(*span, &reached, machine));
        match (&mut fleet, digest) {
            (Some(bytes), Some(digest)) => {
                part(bytes, b"field", field);
                part(bytes, b"digest", digest.as_bytes());
            }
            _ => fleet = None,
        }
    }
    let nodes = nodes?;
    let mut digests = Vec::with_capacity(nodes.len());
    for (node, span, entry) in &nodes {
        if let Some(bytes) = &mut fleet {
            part(bytes, b"node", node);
        }
        let digest = reached(entry, level).and_then(|reached| reach.item(*span, &reached, machine));
        digests.push((String::from_utf8_lossy(node).into_owned(), digest));
    }
    Some(Reach {
        fleet: fleet.map(|bytes| plan::sha256_digest(&bytes)),
        nodes: digests,
    })
}

/// The fields of a set written out (without `rec`): each with its one static
/// name, where its binding is, and its value (None for an `inherit x;`, which
/// names `x` of the scope around), in name order. None: not such a set, or a name
/// bound twice.
#[allow(clippy::type_complexity)]
pub(super) fn top_fields(expr: &Expr) -> Option<Vec<(&[u8], Span, Option<&Expr>)>> {
    let ExprKind::Attrs {
        recursive: false,
        bindings,
    } = &expr.kind
    else {
        return None;
    };
    let mut fields = Vec::with_capacity(bindings.len());
    for binding in bindings {
        match binding {
            Binding::Assign { path, value, span } => {
                let [AttrName::Static { name, .. }] = path.as_slice() else {
                    return None;
                };
                fields.push((name.as_slice(), *span, Some(value)));
            }
            Binding::Inherit {
                from: None,
                names,
                span,
            } => {
                for name in names {
                    let AttrName::Static { name, .. } = name else {
                        return None;
                    };
                    fields.push((name.as_slice(), *span, None));
                }
            }
            Binding::Inherit { from: Some(_), .. } => return None,
        }
    }
    fields.sort_by(|a, b| a.0.cmp(b.0));
    fields
        .windows(2)
        .all(|pair| pair[0].0 != pair[1].0)
        .then_some(fields)
}

/// A binding met by [`Merkle::digest_from`]: Tarjan's numbers, and what it
/// reaches (None: what cannot be followed).
struct Visit {
    index: usize,
    low: usize,
    on_stack: bool,
    edges: Option<(Vec<usize>, Vec<String>)>,
}

/// The digests of what entries reach, made once for every binding reached: a
/// binding's digest is of the text and position of every binding in its
/// strongly connected component (bindings of one `let` may name each other),
/// of the files they import, and of the digests of the components they reach,
/// so an entry's digest changes with any binding it reaches, however far, and
/// digesting every entry costs each binding once (a chain of 6,000 bindings
/// named by 6,000 entries took 9 s when each entry hashed its whole closure).
struct Merkle<'a, 't> {
    scopes: &'a Scopes<'t>,
    source: &'a SourceFile,
    name: &'a str,
    inventory: &'a Path,
    files: Files<'a>,
    /// The first flat index of each scope's bindings.
    offsets: Vec<usize>,
    /// By flat index: the digest of the binding's component (None: it reaches
    /// what cannot be followed).
    digests: rustc_hash::FxHashMap<usize, Option<String>>,
}

impl Merkle<'_, '_> {
    /// The bindings `reached` names (flat indices), and its imports' digests (None:
    /// a name bound by no `let` that is not a pure global, an `import` a `let`
    /// binds, or a file that cannot be followed).
    fn targets(
        &mut self,
        reached: &Reached<'_>,
        machine: &mut Machine,
    ) -> Option<(Vec<usize>, Vec<String>)> {
        let mut targets = Vec::new();
        for &(name, level) in &reached.names {
            let looked_up = match name {
                BUILTINS_SELECTED => b"builtins".as_slice(),
                IMPORT_CALLED => b"import".as_slice(),
                name => name,
            };
            let Some((scope, bound)) = self.scopes.resolve(looked_up, level) else {
                if pure_global(name) {
                    continue;
                }
                return None;
            };
            // an `import` a `let` binds is not the builtin: what it reads is unknown
            if name == IMPORT_CALLED {
                return None;
            }
            targets.extend(bound.iter().map(|index| self.offsets[scope] + index));
        }
        targets.sort_unstable();
        targets.dedup();
        let mut imports = Vec::new();
        for import in &reached.imports {
            let key = self.files.import(self.inventory, import, machine, 0)?;
            imports.push(self.files.digests.get(&key)?.clone()?);
        }
        imports.sort_unstable();
        Some((targets, imports))
    }

    /// The scope and index of the binding at flat index `flat`.
    fn binding(&self, flat: usize) -> (usize, usize) {
        let scope = self.offsets.partition_point(|offset| *offset <= flat) - 1;
        (scope, flat - self.offsets[scope])
    }

    /// Digests the components of every binding reachable from `roots` that has
    /// none yet (Tarjan's algorithm, without recursion: components come out after
    /// every component they reach).
    fn digest_from(&mut self, roots: &[usize], machine: &mut Machine) {
        let mut visits: rustc_hash::FxHashMap<usize, Visit> = Default::default();
        let mut stack: Vec<usize> = Vec::new();
        let mut next = 0;
        for &root in roots {
            if self.digests.contains_key(&root) || visits.contains_key(&root) {
                continue;
            }
            let mut calls: Vec<(usize, usize)> = Vec::new();
            let mut enter = |flat: usize,
                             visits: &mut rustc_hash::FxHashMap<usize, Visit>,
                             stack: &mut Vec<usize>,
                             calls: &mut Vec<(usize, usize)>,
                             this: &mut Self,
                             machine: &mut Machine| {
                let (scope, index) = this.binding(flat);
                let edges = this.scopes.bindings[scope][index]
                    .reached
                    .as_ref()
                    .and_then(|reached| this.targets(reached, machine));
                visits.insert(
                    flat,
                    Visit {
                        index: next,
                        low: next,
                        on_stack: true,
                        edges,
                    },
                );
                next += 1;
                stack.push(flat);
                calls.push((flat, 0));
            };
            enter(root, &mut visits, &mut stack, &mut calls, self, machine);
            while let Some(&(flat, at)) = calls.last() {
                let successor = visits
                    .get(&flat)
                    .and_then(|visit| visit.edges.as_ref())
                    .and_then(|(targets, _)| targets.get(at).copied());
                if let Some(successor) = successor {
                    if let Some(top) = calls.last_mut() {
                        top.1 += 1;
                    }
                    if self.digests.contains_key(&successor) {
                        continue;
                    }
                    match visits.get(&successor) {
                        None => enter(
                            successor,
                            &mut visits,
                            &mut stack,
                            &mut calls,
                            self,
                            machine,
                        ),
                        Some(visit) if visit.on_stack => {
                            let index = visit.index;
                            if let Some(visit) = visits.get_mut(&flat) {
                                visit.low = visit.low.min(index);
                            }
                        }
                        Some(_) => {}
                    }
                    continue;
                }
                calls.pop();
                let (index, low) = visits
                    .get(&flat)
                    .map_or((0, 0), |visit| (visit.index, visit.low));
                if let Some(&(parent, _)) = calls.last()
                    && let Some(visit) = visits.get_mut(&parent)
                {
                    visit.low = visit.low.min(low);
                }
                if low != index {
                    continue;
                }
                let mut members = Vec::new();
                while let Some(member) = stack.pop() {
                    if let Some(visit) = visits.get_mut(&member) {
                        visit.on_stack = false;
                    }
                    members.push(member);
                    if member == flat {
                        break;
                    }
                }
                members.sort_unstable();
                let digest = self.component(&members, &visits);
                for member in members {
                    self.digests.insert(member, digest.clone());
                }
            }
        }
    }

    /// The digest of the component `members` (sorted), whose successors outside it
    /// are digested already (None: one of them, or a member, reaches what cannot
    /// be followed).
    fn component(
        &self,
        members: &[usize],
        visits: &rustc_hash::FxHashMap<usize, Visit>,
    ) -> Option<String> {
        let mut bytes = Vec::new();
        let mut reaches = BTreeSet::new();
        for &member in members {
            let (targets, imports) = visits.get(&member)?.edges.as_ref()?;
            let (scope, index) = self.binding(member);
            part(&mut bytes, b"scope", scope.to_string().as_bytes());
            self.located(b"let", self.scopes.bindings[scope][index].span, &mut bytes);
            for import in imports {
                part(&mut bytes, b"import", import.as_bytes());
            }
            for target in targets {
                if members.binary_search(target).is_err() {
                    reaches.insert(self.digests.get(target)?.as_deref()?);
                }
            }
        }
        for digest in reaches {
            part(&mut bytes, b"reaches", digest.as_bytes());
        }
        Some(plan::sha256_digest(&bytes))
    }

    /// The digest of the binding at `span` (an entry or field) that reaches
    /// `reached`: its text and where it starts, its imports' digests, and the
    /// digests of the bindings it reaches (None: it reaches what cannot be
    /// followed).
    fn item(&mut self, span: Span, reached: &Reached<'_>, machine: &mut Machine) -> Option<String> {
        let (targets, imports) = self.targets(reached, machine)?;
        self.digest_from(&targets, machine);
        let mut bytes = Vec::with_capacity(256);
        self.located(b"reach", span, &mut bytes);
        for import in &imports {
            part(&mut bytes, b"import", import.as_bytes());
        }
        let mut reaches = BTreeSet::new();
        for target in &targets {
            reaches.insert(self.digests.get(target)?.as_deref()?);
        }
        for digest in reaches {
            part(&mut bytes, b"reaches", digest.as_bytes());
        }
        Some(plan::sha256_digest(&bytes))
    }

    /// What is digested of a binding at `span`: where it starts and its text.
    fn located(&self, tag: &[u8], span: Span, bytes: &mut Vec<u8>) {
        let (line, column) = self.source.line_column(span.start);
        let text = self
            .source
            .text
            .get(span.start as usize..span.end as usize)
            .unwrap_or_default();
        part(
            bytes,
            tag,
            format!("{}:{line}:{column}", self.name).as_bytes(),
        );
        part(bytes, b"text", text);
    }
}

/// The files imported, each digested once: by its path (absolute, as the
/// evaluator names it) the digest of its text and of the files it imports (None:
/// it cannot be read, is outside the repository, or reaches what cannot be
/// followed).
struct Files<'a> {
    root: &'a Path,
    loader: &'a dyn lang::Loader,
    digests: rustc_hash::FxHashMap<Vec<u8>, Option<String>>,
}

impl Files<'_> {
    /// The path `written` (as written in the file `from`) imports, with the
    /// digest it is kept under in [`Files::digests`] (None: see [`Files`]).
    fn import(
        &mut self,
        from: &Path,
        written: &[u8],
        machine: &mut Machine,
        depth: usize,
    ) -> Option<Vec<u8>> {
        if depth > MAX_IMPORT_DEPTH || !(written.starts_with(b"./") || written.starts_with(b"../"))
        {
            return None;
        }
        let mut joined = lang::compile::path_bytes(from.parent()?);
        joined.push(b'/');
        joined.extend_from_slice(written);
        let mut path = lang::compile::canonical_path(&joined);
        let root = lang::compile::path_bytes(self.root);
        if !path.starts_with(&root) || path.get(root.len()).is_some_and(|byte| *byte != b'/') {
            return None;
        }
        if self.loader.kind(&lang::compile::host_path(&path)) == Some(FileKind::Directory) {
            path.extend_from_slice(b"/default.nix");
        }
        match self.digests.get(&path) {
            Some(Some(_)) => return Some(path),
            // refused, or being digested (an import cycle, which evaluation reports)
            Some(None) => return None,
            None => {}
        }
        self.digests.insert(path.clone(), None);
        let file_path = lang::compile::host_path(&path);
        // followed where it is written, perhaps in a branch evaluation never
        // takes: only a regular file (a named pipe would wait for its writer) of a
        // size a module's file has is read for it
        if self.loader.kind(&file_path) != Some(FileKind::File) {
            return None;
        }
        // the size on disk decides only whether to follow it (reading through the
        // loader with a smaller bound would be an answer the evaluation's read
        // contradicts); a file that grows meanwhile is read within the session's
        // limits, as evaluation reads it
        if std::fs::metadata(&file_path).map_or(true, |metadata| metadata.len() > MAX_IMPORTED) {
            return None;
        }
        let (file, expr) = machine.parse_file(&file_path).ok()?;
        let text = machine.sources.get(file)?.text.clone();
        // a file imported is evaluated in no scope but the globals
        let reached = reached(&expr, 0)?;
        if reached.names.iter().any(|(name, _)| !pure_global(name)) {
            return None;
        }
        let mut bytes = Vec::new();
        // named as positions name it: relative to the repository
        part(&mut bytes, b"file", &path[root.len()..]);
        part(&mut bytes, b"text", &text);
        let mut imported = BTreeSet::new();
        for import in &reached.imports {
            imported.insert(self.import(&file_path, import, machine, depth + 1)?);
        }
        for import in &imported {
            part(
                &mut bytes,
                b"import",
                self.digests.get(import)?.as_ref()?.as_bytes(),
            );
        }
        self.digests
            .insert(path.clone(), Some(plan::sha256_digest(&bytes)));
        Some(path)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::rc::Rc;

    use super::{PURE_BUILTINS, PURE_GLOBALS, Reach, digests};

    /// The reach digests of `mesh.nix` written as `inventory` (beside `files`)
    /// in a new repository.
    fn reach(inventory: &str, files: &[(&str, &str)]) -> Option<Reach> {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let root = directory.path().canonicalize().expect("its name");
        for (name, text) in files {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("directories");
            std::fs::write(path, text).expect("a file");
        }
        let inventory_path = root.join("mesh.nix");
        std::fs::write(&inventory_path, inventory).expect("the inventory");
        lang::eval::run_with_stack(move || {
            let loader = Rc::new(crate::stdlib::MeshLoader::new(root.clone()));
            let mut machine =
                lang::Machine::new(loader.clone(), vec![root.clone()], lang::Limits::default());
            digests(&root, &mut machine, &*loader, &inventory_path)
        })
        .expect("an evaluation thread")
    }

    fn node<'r>(reach: &'r Reach, name: &str) -> Option<&'r str> {
        reach
            .nodes
            .iter()
            .find(|(node, _)| node == name)
            .unwrap_or_else(|| panic!("no node {name}"))
            .1
            .as_deref()
    }

    const FLEET: &str = "let\n  admins = [ \"alice\" ];\n  ports = { web = 80; };\n  unused = 1;\nin\n{\n  registry = \"r\";\n  nodes = {\n    a = { accounts = admins; port = ports.web; };\n    b = { address = \"10.0.0.2\"; };\n  };\n}\n";

    #[test]
    fn an_entry_is_digested_by_its_text_and_the_bindings_it_reaches() {
        let before = reach(FLEET, &[]).expect("digested");
        let (a, b) = (node(&before, "a").unwrap(), node(&before, "b").unwrap());
        assert!(before.fleet.is_some());
        // a binding `a` reaches: `a` changes, `b` does not
        let after = reach(&FLEET.replace("\"alice\"", "\"bob\""), &[]).expect("digested");
        assert_ne!(node(&after, "a").unwrap(), a);
        assert_eq!(node(&after, "b").unwrap(), b);
        assert_eq!(after.fleet, before.fleet);
        // a binding nothing reaches: nothing changes
        let after = reach(&FLEET.replace("unused = 1;", "unused = 2;"), &[]).expect("digested");
        assert_eq!(node(&after, "a").unwrap(), a);
        assert_eq!(node(&after, "b").unwrap(), b);
        assert_eq!(after.fleet, before.fleet);
        // a field beside the nodes: the fleet's digest
        let after = reach(&FLEET.replace("registry = \"r\"", "registry = \"s\""), &[]).unwrap();
        assert_ne!(after.fleet, before.fleet);
        assert_eq!(node(&after, "a").unwrap(), a);
        // a line above a reached binding moves it: `a` changes
        let after = reach(&FLEET.replace("let\n", "let\n\n"), &[]).expect("digested");
        assert_ne!(node(&after, "a").unwrap(), a);
    }

    #[test]
    fn names_resolve_as_the_evaluator_resolves_them() {
        // bound inside the entry: no binding of the `let` is reached
        let local = "let admins = 1; in { nodes = { a = { x = (admins: admins) 2; y = let admins = 3; in admins; }; }; }";
        let changed = local.replace("admins = 1;", "admins = 5;");
        let (one, two) = (reach(local, &[]).unwrap(), reach(&changed, &[]).unwrap());
        assert_eq!(node(&one, "a"), node(&two, "a"));
        // a `let` that binds `true`, `builtins`, or an operator's global is reached
        for (text, from, to) in [
            (
                "let true = 1; in { nodes = { a = { x = true; }; }; }",
                "true = 1",
                "true = 2",
            ),
            (
                "let builtins = { map = 1; }; in { nodes = { a = { x = builtins.map; }; }; }",
                "map = 1",
                "map = 2",
            ),
            (
                "let __sub = a: b: 7; in { nodes = { a = { x = 3 - 1; }; }; }",
                "7",
                "8",
            ),
            (
                "let __sub = a: b: 7; in { nodes = { a = { x = -1; }; }; }",
                "7",
                "8",
            ),
            (
                "let __lessThan = a: b: true; in { nodes = { a = { x = 3 < 1; }; }; }",
                "true;",
                "false;",
            ),
            (
                "let f = { a ? d }: a; d = 1; in { nodes = { a = { x = f { }; }; }; }",
                "d = 1",
                "d = 2",
            ),
            (
                "let r = rec { inherit d; e = d; }; d = 1; in { nodes = { a = { x = r.e; }; }; }",
                "d = 1",
                "d = 2",
            ),
            (
                "let inherit (s) d; s = { d = 1; }; in { nodes = { a = { x = d; }; }; }",
                "d = 1",
                "d = 2",
            ),
        ] {
            let (one, two) = (reach(text, &[]), reach(&text.replace(from, to), &[]));
            let (one, two) = (one.expect(text), two.expect(text));
            assert!(node(&one, "a").is_some(), "{text}");
            assert_ne!(node(&one, "a"), node(&two, "a"), "{text}");
        }
    }

    #[test]
    fn what_reads_prints_or_cannot_be_told_is_left_to_evaluation() {
        for entry in [
            "x = builtins.readFile ./f;",
            "x = builtins.trace 1 2;",
            "x = builtins;",
            "x = builtins.getAttr \"readFile\" builtins ./f;",
            "x = import (./. + \"/f\");",
            "x = with { y = 1; }; y;",
            "x = undefinedName;",
            "x = builtins.${\"readFile\"} ./f;",
        ] {
            let text = format!("{{ nodes = {{ a = {{ {entry} }}; b = {{ }}; }}; }}");
            let reach = reach(&text, &[("f", "1"), ("lib.nix", "1")]).expect(&text);
            assert_eq!(node(&reach, "a"), None, "{entry}");
            assert!(node(&reach, "b").is_some(), "{entry}");
        }
        // an `import` a `let` binds is not followed
        let text = "let import = x: 1; in { nodes = { a = { x = import ./lib.nix; }; }; }";
        assert_eq!(node(&reach(text, &[("lib.nix", "1")]).unwrap(), "a"), None);
        // no `nodes` set written out: not digested here at all
        assert!(reach("let n = { }; in { nodes = n; }", &[]).is_none());
        assert!(reach("{ nodes = { }; } // { }", &[]).is_none());
    }

    #[test]
    fn a_file_imported_by_a_path_written_out_is_digested_by_its_text() {
        let text = "let shell = import ./lib/shell.nix; in { nodes = { a = { x = shell; }; b = { y = import ./lib; }; }; }";
        let files = |shell: &str, inner: &str| {
            reach(
                text,
                &[
                    ("lib/shell.nix", shell),
                    ("lib/default.nix", "import ./inner.nix"),
                    ("lib/inner.nix", inner),
                ],
            )
            .expect("digested")
        };
        let before = files("null", "1");
        assert!(node(&before, "a").is_some() && node(&before, "b").is_some());
        let after = files("\"/bin/sh\"", "1");
        assert_ne!(node(&after, "a"), node(&before, "a"));
        assert_eq!(node(&after, "b"), node(&before, "b"));
        // a file the imported directory's default.nix imports
        let after = files("null", "2");
        assert_eq!(node(&after, "a"), node(&before, "a"));
        assert_ne!(node(&after, "b"), node(&before, "b"));
        // a file that reads another is left to evaluation
        let reads = files("builtins.readFile ./inner.nix", "1");
        assert_eq!(node(&reads, "a"), None);
        // outside the repository
        let text = "{ nodes = { a = { x = import ../outside.nix; }; }; }";
        assert_eq!(node(&reach(text, &[]).unwrap(), "a"), None);
    }

    /// A binding reached through a chain, or through bindings that name each
    /// other, is digested with the entry: an edit at the chain's far end, or to
    /// either binding of a cycle, changes it.
    #[test]
    fn bindings_reached_through_chains_and_cycles_are_digested() {
        let chain: String = (1..200).map(|n| format!("b{n} = b{};\n", n - 1)).collect();
        let text = format!(
            "let b0 = \"x\";\n{chain}in {{ nodes = {{ a = {{ x = b199; }}; c = {{ }}; }}; }}"
        );
        let before = reach(&text, &[]).expect("digested");
        let after = reach(&text.replace("b0 = \"x\"", "b0 = \"y\""), &[]).expect("digested");
        assert!(node(&before, "a").is_some());
        assert_ne!(node(&before, "a"), node(&after, "a"));
        assert_eq!(node(&before, "c"), node(&after, "c"));
        let cycle = "let p = { q = q; v = 1; }; q = { p = p; w = 2; }; in { nodes = { a = { x = p.v; }; }; }";
        let before = reach(cycle, &[]).expect("digested");
        for (from, to) in [("v = 1", "v = 3"), ("w = 2", "w = 4")] {
            let after = reach(&cycle.replace(from, to), &[]).expect("digested");
            assert!(node(&after, "a").is_some());
            assert_ne!(node(&before, "a"), node(&after, "a"), "{from}");
        }
        // a cycle with a binding that cannot be followed: neither is followed
        let poisoned =
            "let p = [ q ]; q = [ p (builtins.readFile ./f) ]; in { nodes = { a = { x = p; }; }; }";
        assert_eq!(node(&reach(poisoned, &[("f", "1")]).unwrap(), "a"), None);
    }

    /// A `rec` set merged with another binding of its name loses its `rec` in Nix
    /// (or, merged into, binds in values written outside it): its names cannot be
    /// told from the text, and neither an entry nor a binding that holds such a
    /// merge is followed.
    #[test]
    fn a_rec_set_merged_with_another_binding_is_not_followed() {
        for text in [
            "let x2 = 1; in { nodes = { a = { t = { s = { x = 1; }; s = rec { x2 = 2; y = x2; }; }; }; }; }",
            "let x2 = 1; in { nodes = { a = { t = { s.x = 1; s = rec { x2 = 2; y = x2; }; }; }; }; }",
            "let x2 = 1; s = { x = 1; }; s = rec { x2 = 2; y = x2; }; in { nodes = { a = { t = s; }; }; }",
            "let x2 = 1; s.x = 1; s = rec { x2 = 2; y = x2; }; in { nodes = { a = { t = s; }; }; }",
            "let v = 1; in { nodes = { a = { s = rec { v = 2; }; s.b = { x = v; }; }; }; }",
        ] {
            let reach = reach(text, &[]).expect(text);
            assert_eq!(node(&reach, "a"), None, "{text}");
        }
        // a `rec` set bound once is followed, its names bound in its values
        let once = "let x2 = 1; in { nodes = { a = { s = rec { x2 = 2; y = x2; }; }; }; }";
        let (one, two) = (
            reach(once, &[]).unwrap(),
            reach(&once.replace("x2 = 1", "x2 = 5"), &[]).unwrap(),
        );
        assert!(node(&one, "a").is_some());
        assert_eq!(node(&one, "a"), node(&two, "a"));
    }

    /// A file imported in a branch evaluation may never take is read only when it
    /// is a regular file of a module's size: a named pipe would wait for a writer.
    #[test]
    fn only_a_regular_file_is_followed_into() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let pipe = directory.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let text = format!(
            "let t = if true then \"x\" else import ./{}; in {{ nodes = {{ a = {{ x = t; }}; }}; }}",
            "pipe"
        );
        let root = directory.path().canonicalize().expect("its name");
        std::fs::write(root.join("mesh.nix"), &text).expect("the inventory");
        let inventory = root.join("mesh.nix");
        let digested = lang::eval::run_with_stack(move || {
            let loader = Rc::new(crate::stdlib::MeshLoader::new(root.clone()));
            let mut machine =
                lang::Machine::new(loader.clone(), vec![root.clone()], lang::Limits::default());
            digests(&root, &mut machine, &*loader, &inventory)
        })
        .expect("an evaluation thread")
        .expect("digested");
        assert_eq!(node(&digested, "a"), None);
    }

    /// Every name the lists call pure is a builtin of the evaluator.
    #[test]
    fn the_pure_names_are_the_evaluators() {
        let loader = Rc::new(lang::MemoryLoader::default());
        let mut machine = lang::Machine::new(loader, Vec::new(), lang::Limits::default());
        for name in PURE_BUILTINS {
            let expr = format!("builtins ? {name:?}");
            let value = machine.eval_source("t", None, expr.as_bytes().into(), Path::new("/"));
            assert!(
                matches!(value, Ok(lang::Value::Bool(true))),
                "builtins.{name}: {value:?}"
            );
        }
        for name in PURE_GLOBALS {
            let expr = format!("let f = x: x; in f {name}");
            let value = machine.eval_source("t", None, expr.as_bytes().into(), Path::new("/"));
            assert!(value.is_ok(), "{name}: {value:?}");
        }
    }
}
