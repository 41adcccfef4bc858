//! Values lowered when first evaluated, not when their file is compiled. A file
//! whose top is a set or list literal (an inventory, a file of data), or a `let`
//! around one, holds its values on a *spine* of nested set and list literals (and
//! `let` bodies; never a `let`'s bindings). A value on the spine that cannot fail
//! to compile where it is written is kept as its syntax tree and lowered on first
//! use: a 10,000-entry inventory whose build reads one entry lowers one entry. Such
//! a value is plain data (numbers, strings, set and list literals whose names
//! cannot collide) or code over it that names only what is in scope: variables
//! bound there or builtins, selections by static names, calls, operators,
//! interpolation, `if` (an inventory's `modules = base ++ [ ... ]`). It keeps the
//! scopes it is written in. Invariant: a deferred value lowers to exactly the code
//! lowering it with the file would have given (the same code lowers it, in the same
//! scopes, with the same symbols), with no error; only the time of lowering moves.

use std::cell::OnceCell;
use std::sync::Arc;

use super::*;

/// A value on the spine written in fewer bytes than this is lowered at once: it
/// costs about as much to keep as to lower (a skimmed file leaves sets of this
/// size hollow, knowing they are deferred).
use crate::skim::SMALLEST;

/// A value nested deeper than this is lowered with its file, and so is one that
/// names what more scopes than this bind (a deferred value keeps a copy of them),
/// and one further down the spine than this (it is found again from the file's
/// top: deeper ones would make that quadratic).
const DEEPEST: usize = 64;

/// A value kept as its syntax tree: the file's tree, in which it is the value at
/// `at`, and its code once lowered. `set`: a set literal bound by a name, lowered
/// as such a binding is (a set under the name's span).
pub struct DeferredIr {
    root: Arc<Expr>,
    /// The file's text when `root` is skimmed: a hollow set is parsed from it.
    text: Option<Arc<[u8]>>,
    at: Span,
    set: bool,
    /// The scopes the value is written in (none at a file's top).
    scopes: Option<Rc<[Scope]>>,
    /// How far down the spine it is (see `Compiler::spine_depth`).
    depth: usize,
    lowered: OnceCell<Rc<Ir>>,
}

/// Spans and names, as [`Compiled::binding_names`] and
/// [`Compiled::reference_names`].
pub type BindingNames = Vec<(Span, crate::name::Name)>;

/// What lowering a deferred value found: its code, and the names of its bindings
/// and of the variables it names, as compiling the file would have returned them.
pub struct Lowered<'d> {
    pub ir: &'d Rc<Ir>,
    pub binding_names: BindingNames,
    pub reference_names: BindingNames,
}

/// Whether the children of `expr` stay on the spine: it is a set (not `rec`) or
/// list literal.
pub(super) fn on_spine(expr: &Expr) -> bool {
    matches!(
        expr.kind,
        ExprKind::Attrs {
            recursive: false,
            ..
        } | ExprKind::List(_)
    )
}

impl std::fmt::Debug for DeferredIr {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DeferredIr")
            .field("lowered", &self.lowered.get().is_some())
            .finish_non_exhaustive()
    }
}

impl DeferredIr {
    /// The value's code, if it was lowered already.
    pub fn get(&self) -> Option<&Rc<Ir>> {
        self.lowered.get()
    }

    /// Lowers the value at `span` (the deferred node's span) with `globals` and
    /// `symbols`, the ones its file was compiled with; None if the tree has no such
    /// value or it does not lower without error (never: the span was taken from
    /// it, and it was checked). Its own values on the spine are deferred again.
    pub fn lower(
        &self,
        span: Span,
        globals: &dyn GlobalScope,
        symbols: &SymbolOrder,
    ) -> Option<Lowered<'_>> {
        let found = find(&self.root, self.at)?;
        // a hollow set of a skimmed tree is parsed now, and what it holds is deferred
        // in its own tree
        let (root, text) = match (&self.text, &found.kind) {
            (Some(text), ExprKind::Attrs { bindings, .. }) if bindings.is_empty() => {
                let parsed = crate::parser::parse_at(
                    text,
                    self.at.file,
                    self.at.start as usize,
                    self.at.end as usize,
                );
                if !parsed.errors.is_empty() || parsed.expr.span != self.at {
                    return None;
                }
                (Arc::new(parsed.expr), None)
            }
            _ => (self.root.clone(), self.text.clone()),
        };
        let expr = find(&root, self.at)?;
        let mut compiler = Compiler::new(symbols, globals, Vec::new());
        compiler.root = Some(root.clone());
        compiler.skimmed_text = text;
        compiler.spine = true;
        // what a deferred value holds was checked with it
        compiler.plain = true;
        if let Some(scopes) = &self.scopes {
            compiler.scopes = scopes.to_vec();
        }
        compiler.spine_depth = self.depth;
        let ir = compiler.lower_value(expr, span, self.set);
        if !compiler.errors.is_empty() {
            return None;
        }
        Some(Lowered {
            ir: self.lowered.get_or_init(|| ir),
            binding_names: compiler.binding_names,
            reference_names: compiler.reference_names,
        })
    }
}

/// The set or list literal at `span` on the spine of `root` (reached through set
/// and list literals only: a binding's value or a list's item).
fn find(root: &Expr, span: Span) -> Option<&Expr> {
    let mut expr = root;
    loop {
        if expr.span == span {
            return Some(expr);
        }
        let contains = |outer: Span| outer.start <= span.start && span.end <= outer.end;
        expr = match &expr.kind {
            ExprKind::Attrs { bindings, .. } => {
                // bindings are in the order written: the first that does not end
                // before the value starts is the only one that may hold it
                let at =
                    bindings.partition_point(|binding| binding_span(binding).end <= span.start);
                match bindings.get(at)? {
                    Binding::Assign {
                        value, span: whole, ..
                    } if contains(*whole) => value,
                    _ => return None,
                }
            }
            ExprKind::List(items) => {
                let at = items.partition_point(|item| item.span.end <= span.start);
                items.get(at).filter(|item| contains(item.span))?
            }
            // a `let`'s body is on the spine, its bindings are not
            ExprKind::Let { body, .. } if contains(body.span) => body,
            _ => return None,
        };
    }
}

fn binding_span(binding: &Binding) -> Span {
    match binding {
        Binding::Assign { span, .. } | Binding::Inherit { span, .. } => *span,
    }
}

impl Compiler<'_> {
    /// Lowers `expr`, a binding's value or a list's item: deferred when its set or
    /// list is on the spine and it is a value of some size that cannot fail to
    /// compile here.
    pub(super) fn value(&mut self, expr: &Expr) -> Rc<Ir> {
        if self.deferrable(expr) {
            return self.deferred(expr, expr.span, false);
        }
        self.spine_depth += 1;
        let ir = self.expr(expr);
        self.spine_depth -= 1;
        ir
    }

    /// Whether `expr`, a value of a set or list being lowered, is deferred: a value
    /// on the spine, written in [`SMALLEST`] bytes or more, that evaluating would
    /// suspend anyway (a variable, a constant or a selection is shared or copied
    /// where it is bound, never deferred), that cannot fail to compile here, and,
    /// if it names what the scopes bind, in at most [`DEEPEST`] of them.
    pub(super) fn deferrable(&self, expr: &Expr) -> bool {
        self.spine
            && self.root.is_some()
            // a deferred value is found again from the file's top, down the spine
            && self.spine_depth < DEEPEST
            && candidate(expr)
            && (self.plain || {
                let verdict = self.verdict(expr);
                // a copy of the scopes is kept: of a bounded number of them
                verdict.deferrable() && (!verdict.scoped() || self.scopes.len() <= DEEPEST)
            })
    }

    /// The node of `expr` deferred, under `span` (see [`DeferredIr`] for `set`);
    /// lowered now when there is no file's tree to keep (never: only a file's
    /// compiler defers).
    pub(super) fn deferred(&mut self, expr: &Expr, span: Span, set: bool) -> Rc<Ir> {
        let Some(root) = self.root.clone() else {
            return self.lower_value(expr, span, set);
        };
        // a value that names what a frame or a `with` binds keeps the scopes; what
        // a deferred value holds was lowered in the scopes its value kept
        let scoped = if self.plain {
            !self.scopes.is_empty()
        } else {
            self.verdict(expr).scoped()
        };
        let deferred = DeferredIr {
            root,
            text: self.skimmed_text.clone(),
            at: expr.span,
            set,
            scopes: if scoped { self.kept_scopes() } else { None },
            depth: self.spine_depth + 1,
            lowered: OnceCell::new(),
        };
        node(IrKind::Deferred(Rc::new(deferred)), span)
    }

    /// The scopes, kept for a value lowered later: shared with the last value kept
    /// while they are the same scopes (an inventory's entries share one copy).
    fn kept_scopes(&mut self) -> Option<Rc<[Scope]>> {
        if self.scopes.is_empty() {
            return None;
        }
        let same = |kept: &[Scope]| {
            kept.len() == self.scopes.len()
                && kept.iter().zip(&self.scopes).all(|pair| match pair {
                    (Scope::Frame(kept), Scope::Frame(now)) => Rc::ptr_eq(kept, now),
                    (Scope::With, Scope::With) => true,
                    _ => false,
                })
        };
        match &self.kept_scopes {
            Some(kept) if same(kept) => Some(kept.clone()),
            _ => {
                let kept: Rc<[Scope]> = self.scopes.iter().cloned().collect();
                self.kept_scopes = Some(kept.clone());
                Some(kept)
            }
        }
    }

    /// Lowers a value as it is lowered where it is written: a set literal bound by
    /// a name (`set`) as the set of its bindings under `span`.
    fn lower_value(&mut self, expr: &Expr, span: Span, set: bool) -> Rc<Ir> {
        match &expr.kind {
            ExprKind::Attrs { bindings, .. } if set => {
                let mut builder = SetBuilder::new(false);
                self.add_bindings(&mut builder, bindings, false);
                self.compile_set(builder, span)
            }
            // as `value` lowers it: what is not a literal holds no spine
            _ => self.expr(expr),
        }
    }

    /// Whether `expr` cannot fail to compile here, and whether it names what a
    /// frame or a `with` binds: plain data, and code over it that names only what is
    /// in scope, without a function, `let`, `with`, `rec`, `inherit`, path or
    /// computed name (each of which could report an error or bind names). The
    /// verdict on a value that could be deferred is kept, so the values a walk went
    /// through are not walked again when they are asked about in their turn: every
    /// value is walked about once (the walk goes as deep as the tree, which the
    /// parser bounds, as lowering it does).
    fn verdict(&self, expr: &Expr) -> Verdict {
        let kept = candidate(expr);
        let key = (expr as *const Expr as usize, self.scopes.len());
        if kept && let Some(verdict) = self.verdicts.borrow().get(&key) {
            return *verdict;
        }
        let verdict = self.verdict_of(expr);
        if kept {
            self.verdicts.borrow_mut().insert(key, verdict);
        }
        verdict
    }

    fn verdict_of(&self, expr: &Expr) -> Verdict {
        let all = |exprs: &mut dyn Iterator<Item = &Expr>| {
            let mut verdict = Verdict {
                kind: Kind::Plain,
                depth: 0,
            };
            for expr in exprs {
                verdict = verdict.and(self.verdict(expr));
                if verdict.kind == Kind::Open {
                    break;
                }
            }
            verdict.nested()
        };
        let leaf = |kind| Verdict { kind, depth: 0 };
        match &expr.kind {
            ExprKind::Integer(_) | ExprKind::Float(_) | ExprKind::Uri(_) => leaf(Kind::Plain),
            ExprKind::String(parts) => all(&mut parts.iter().filter_map(|part| match part {
                StringPart::Literal(_) => None,
                StringPart::Interpolation(inner) => Some(&**inner),
            })),
            // `__curPos` is a position, and an unbound name is an error
            ExprKind::Variable(name) if name == "__curPos" => leaf(Kind::Open),
            ExprKind::Variable(name) => leaf(match self.bound_as_constant(name.as_bytes()) {
                Some(true) => Kind::Plain,
                Some(false) => Kind::Scoped,
                None => Kind::Open,
            }),
            ExprKind::List(items) => all(&mut items.iter()),
            ExprKind::Attrs {
                recursive: false,
                bindings,
            } => {
                let simple = bindings.iter().all(|binding| match binding {
                    Binding::Assign { path, .. } => {
                        path.iter().all(|name| static_name(name).is_some())
                    }
                    Binding::Inherit { .. } => false,
                });
                if !simple || !collision_free(bindings) {
                    return leaf(Kind::Open);
                }
                all(&mut bindings.iter().filter_map(|binding| match binding {
                    Binding::Assign { value, .. } => Some(value),
                    Binding::Inherit { .. } => None,
                }))
            }
            ExprKind::Select {
                expr: inner,
                path,
                default,
            } if path.iter().all(|name| static_name(name).is_some()) => {
                all(&mut std::iter::once(&**inner).chain(default.as_deref()))
            }
            ExprKind::HasAttr { expr: inner, path }
                if path.iter().all(|name| static_name(name).is_some()) =>
            {
                all(&mut std::iter::once(&**inner))
            }
            ExprKind::Apply {
                function,
                arguments,
            } => all(&mut std::iter::once(&**function).chain(arguments.iter())),
            // Nix reads `-x` as `__sub 0 x`, `a - b` as `__sub a b` and so on: a
            // call of whatever the name means where it is written
            ExprKind::Unary { op, expr: inner } => {
                let operator = match op {
                    UnaryOp::Not => None,
                    UnaryOp::Negate => Some(&b"__sub"[..]),
                };
                all(&mut std::iter::once(&**inner)).and(self.operator(operator))
            }
            ExprKind::Binary {
                op, left, right, ..
            } => {
                let operator = match op {
                    BinaryOp::Subtract => Some(&b"__sub"[..]),
                    BinaryOp::Multiply => Some(&b"__mul"[..]),
                    BinaryOp::Divide => Some(&b"__div"[..]),
                    BinaryOp::Less
                    | BinaryOp::Greater
                    | BinaryOp::LessEqual
                    | BinaryOp::GreaterEqual => Some(&b"__lessThan"[..]),
                    _ => None,
                };
                all(&mut [&**left, &**right].into_iter()).and(self.operator(operator))
            }
            ExprKind::If {
                condition,
                then,
                otherwise,
            } => all(&mut [&**condition, &**then, &**otherwise].into_iter()),
            ExprKind::Assert { condition, body } => all(&mut [&**condition, &**body].into_iter()),
            _ => leaf(Kind::Open),
        }
    }
}

impl Compiler<'_> {
    /// The verdict on an operator Nix reads as a call of `name`: scoped where the
    /// program binds the name (the call is of that binding).
    fn operator(&self, name: Option<&[u8]>) -> Verdict {
        let kind = match name {
            Some(name) if self.is_shadowed(name) => Kind::Scoped,
            _ => Kind::Plain,
        };
        Verdict { kind, depth: 0 }
    }
}

/// What [`Compiler::verdict`] found of a value: its [`Kind`], and how deeply its
/// parts are nested (counted up to just past [`DEEPEST`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Verdict {
    kind: Kind,
    depth: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// It cannot fail to compile, and names nothing a frame or `with` binds.
    Plain,
    /// It cannot fail to compile, and names what a frame or `with` binds.
    Scoped,
    /// It could fail to compile, or binds names, or reads its place: lowered with
    /// its file.
    Open,
}

impl Verdict {
    /// The verdict on a value made of this and `other`.
    fn and(self, other: Verdict) -> Verdict {
        Verdict {
            kind: self.kind.max(other.kind),
            depth: self.depth.max(other.depth),
        }
    }

    /// The verdict on a value whose parts are this.
    fn nested(self) -> Verdict {
        Verdict {
            kind: self.kind,
            depth: self.depth.saturating_add(1).min(DEEPEST as u8 + 1),
        }
    }

    /// Whether the value may be deferred: it cannot fail to compile, and it is
    /// nested no deeper than [`DEEPEST`] (so that lowering it later never recurses
    /// without bound).
    fn deferrable(self) -> bool {
        self.kind != Kind::Open && usize::from(self.depth) <= DEEPEST
    }

    fn scoped(self) -> bool {
        self.kind == Kind::Scoped
    }
}

/// Whether `expr` could be deferred were it on the spine and checked: written in
/// [`SMALLEST`] bytes or more, and suspended by evaluation anyway.
fn candidate(expr: &Expr) -> bool {
    expr.span.end.saturating_sub(expr.span.start) >= SMALLEST && suspended(expr)
}

/// Whether evaluating `expr` where a set's value or a list's item is (delayed,
/// not bound) always suspends it: set and list literals, calls, `if`, `assert`,
/// `!`, `?`, interpolation and the operators never computed at once (`++`, `//`,
/// `&&`, `||`, `->`). A variable or a constant is shared, a selection already
/// evaluated copied, and arithmetic on integers already there computed: deferring
/// those would change what is shared and count a step more.
fn suspended(expr: &Expr) -> bool {
    match &expr.kind {
        ExprKind::Attrs {
            recursive: false, ..
        }
        | ExprKind::List(_)
        | ExprKind::Apply { .. }
        | ExprKind::If { .. }
        | ExprKind::Assert { .. }
        | ExprKind::HasAttr { .. }
        | ExprKind::Unary {
            op: UnaryOp::Not, ..
        } => true,
        ExprKind::String(parts) => !matches!(parts.as_slice(), [] | [StringPart::Literal(_)]),
        ExprKind::Binary { op, .. } => matches!(
            op,
            BinaryOp::Concat | BinaryOp::Update | BinaryOp::And | BinaryOp::Or | BinaryOp::Implies
        ),
        _ => false,
    }
}

fn static_name(name: &AttrName) -> Option<&[u8]> {
    match name {
        AttrName::Static { name, .. } => Some(name.as_slice()),
        AttrName::Dynamic(_) => None,
    }
}

/// Whether no path of a set's bindings (all static) equals another or is a prefix
/// of one: then merging them (`a.b = 1; a.c = 2;`) reports no duplicate.
fn collision_free(bindings: &[Binding]) -> bool {
    let paths = || {
        bindings.iter().filter_map(|binding| match binding {
            Binding::Assign { path, .. } => Some(path.as_slice()),
            Binding::Inherit { .. } => None,
        })
    };
    // a few bindings are compared pair by pair
    if bindings.len() <= 8 {
        return paths().enumerate().all(|(index, path)| {
            paths()
                .skip(index + 1)
                .all(|other| first_name(path) != first_name(other) || !prefix_related(path, other))
        });
    }
    // sorted name by name, a path is right before some path it is a prefix of
    let mut sorted: Vec<&[AttrName]> = paths().collect();
    sorted.sort_unstable_by(|a, b| a.iter().map(static_name).cmp(b.iter().map(static_name)));
    sorted
        .windows(2)
        .all(|pair| !prefix_related(pair[0], pair[1]))
}

fn first_name(path: &[AttrName]) -> Option<&[u8]> {
    path.first().and_then(static_name)
}

/// Whether one of two static paths is a prefix of the other (or they are equal).
fn prefix_related(a: &[AttrName], b: &[AttrName]) -> bool {
    a.iter()
        .zip(b)
        .all(|(a, b)| static_name(a) == static_name(b))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::rc::Rc;

    use super::super::{AttrsIr, Ir, IrKind};
    use crate::{Limits, Machine, MemoryLoader, Value};

    fn machine(files: &[(&str, String)]) -> Machine {
        let mut loader = MemoryLoader::new();
        for (path, text) in files {
            loader.insert(*path, text.as_bytes().to_vec());
        }
        Machine::new(Rc::new(loader), vec!["/d".into()], Limits::default())
    }

    fn compiled(machine: &mut Machine, text: &str) -> Rc<Ir> {
        let (_, ir) = machine
            .compile_source("/d/top.nix", None, text.as_bytes().into(), Path::new("/d"))
            .unwrap_or_else(|errors| panic!("{errors:?}"));
        ir
    }

    /// The code of the first error compiling `text` reports (it must report one).
    fn first_error(machine: &mut Machine, text: &str) -> crate::codes::Code {
        let errors = machine
            .compile_source("/d/bad.nix", None, text.as_bytes().into(), Path::new("/d"))
            .expect_err(text);
        errors[0].code
    }

    fn attrs(ir: &Ir) -> &AttrsIr {
        match &ir.kind {
            IrKind::Attrs(attrs) => attrs,
            other => panic!("not a set: {other:?}"),
        }
    }

    fn value_of<'i>(attrs: &'i AttrsIr, name: &str) -> &'i Ir {
        let attr = attrs
            .statics
            .iter()
            .find(|attr| &*attr.name == name.as_bytes());
        &attr.unwrap_or_else(|| panic!("no {name}")).value
    }

    fn is_deferred(ir: &Ir) -> bool {
        matches!(ir.kind, IrKind::Deferred(_))
    }

    fn printed(machine: &mut Machine, value: &Value) -> String {
        let bytes = machine
            .print_strict(value)
            .unwrap_or_else(|e| panic!("{e:?}"));
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Only values of some size on a file's spine that cannot fail to compile are
    /// deferred: plain data and code naming what is in scope, not a value with a
    /// function, `let`, `with`, path or `inherit`, not a value whose names would be
    /// merged, not `true` where a `rec` set binds it, nothing in a `let`'s bindings.
    #[test]
    fn values_that_cannot_fail_to_compile_on_a_files_spine_are_deferred_and_nothing_else() {
        let mut machine = machine(&[]);
        let ir = compiled(
            &mut machine,
            r#"{
              big = { a = 1; b = "two"; c = [ true false null ]; d.e = 4; f = "a longer string"; };
              small = { a = 1; };
              code = { a = 1; b = 2; c = 3; d = builtins.length [ ]; e = "a longer string"; };
              interpolated = { a = 1; b = 2; c = 3; d = "${"x"} and y"; e = "a longer string"; };
              call = builtins.concatStringsSep "," [ "a longer string" "and another one" ];
              function = { a = 1; b = 2; c = 3; d = x: x; e = "a longer string"; };
              with_ = { a = 1; b = 2; c = 3; d = with builtins; length [ ]; e = "a longer string"; };
              path = { a = 1; b = 2; c = 3; d = ./x; e = "a longer string, and longer"; };
              let_ = { a = 1; b = 2; c = 3; d = let y = 1; in y; e = "a longer string"; };
              inherits = { inherit (builtins) length; a = 1; b = 2; e = "a longer string"; };
              position = { a = 1; b = 2; c = 3; d = __curPos; e = "a longer string"; };
              merged = { a = { x = 1; y = 2; z = 3; w = "a longer string"; }; a.v = 5; };
              shadowed = rec { true = 1; e = { a = true; b = 1; c = 2; d = 3; e = "a longer string"; }; };
              list = [ { a = 1; b = 2; c = 3; d = 4; e = "a longer string, and longer"; } 1 ];
            }"#,
        );
        let top = attrs(&ir);
        for deferred in ["big", "code", "interpolated", "call", "list"] {
            assert!(
                is_deferred(value_of(top, deferred)),
                "{deferred}: {:?}",
                value_of(top, deferred).kind
            );
        }
        for eager in [
            "small", "function", "with_", "path", "let_", "inherits", "position", "merged",
            "shadowed",
        ] {
            assert!(!is_deferred(value_of(top, eager)), "{eager} was deferred");
        }
        // a name bound nowhere is reported when the file is compiled, not when the
        // value is first used
        let undefined = r#"{ d = { a = 1; b = nowhere; e = "a longer string, and longer"; }; }"#;
        assert_eq!(
            first_error(&mut machine, undefined),
            crate::codes::UNDEFINED_VARIABLE
        );
        let shadowed = attrs(value_of(top, "shadowed"));
        assert!(!is_deferred(value_of(shadowed, "e")));
        // a duplicate in plain data is reported when the file is compiled
        let duplicate =
            r#"{ d = { a.b = 1; a.c = 2; a.b.c = 3; e = "a longer string, and longer"; }; }"#;
        assert_eq!(
            first_error(&mut machine, duplicate),
            crate::codes::DUPLICATE_ATTRIBUTE
        );
        let many: String = (0..12).map(|n| format!("b{n} = \"value {n}\"; ")).collect();
        let duplicate = format!("{{ d = {{ {many} a.b = 1; z.y = 2; a.b.c = 3; }}; }}");
        assert_eq!(
            first_error(&mut machine, &duplicate),
            crate::codes::DUPLICATE_ATTRIBUTE
        );
        let merged = format!("{{ d = {{ {many} a.b = 1; z.y = 2; a.c.d = 3; }}; }}");
        let ir = compiled(&mut machine, &merged);
        assert!(is_deferred(value_of(attrs(&ir), "d")));
        // a `let`'s body is on the spine (an inventory written as `let ... in
        // { ... }`), its bindings are not; a value naming what it binds is deferred
        // with its scopes (`true` here is the `let`'s)
        let ir = compiled(
            &mut machine,
            r#"let x = { a = 1; b = 2; c = 3; d = 4; e = "a longer string, and longer"; }; true = 1; in
               let y = 2; in
               { a = { a = 1; b = 2; c = 3; d = 4; e = "a longer string, and longer"; };
                 t = { a = true; b = 2; c = 3; d = 4; e = "a longer string, and longer"; }; }"#,
        );
        let IrKind::Let { bindings, body, .. } = &ir.kind else {
            panic!("not a let: {ir:?}");
        };
        assert!(bindings.iter().all(|binding| !is_deferred(&binding.value)));
        let IrKind::Let { body, .. } = &body.kind else {
            panic!("not a let: {body:?}");
        };
        assert!(is_deferred(value_of(attrs(body), "a")));
        assert!(is_deferred(value_of(attrs(body), "t")));
        // and evaluates as it is written
        let value = machine
            .eval_root(&ir)
            .unwrap_or_else(|error| panic!("{error:?}"));
        assert_eq!(
            printed(&mut machine, &value),
            r#"{ a = { a = 1; b = 2; c = 3; d = 4; e = "a longer string, and longer"; }; t = { a = 1; b = 2; c = 3; d = 4; e = "a longer string, and longer"; }; }"#
        );
    }

    /// Reading one entry of a set of many lowers that entry, and not the others:
    /// entries of plain data, and entries that are code naming a `let` above them
    /// (an inventory as operators write one).
    #[test]
    fn reading_one_entry_lowers_that_entry_alone() {
        let plain: String = (0..50)
            .map(|n| format!("n{n} = {{ key = \"key number {n}\"; address = \"10.0.0.{n}\"; modules = [ \"a\" ]; }};\n"))
            .collect();
        let code: String = (0..50)
            .map(|n| format!("n{n} = {{ key = \"key number {n}\"; address = \"${{net}}.{n}\"; modules = base ++ [ \"b\" ]; }};\n"))
            .collect();
        let cases = [
            (
                format!("{{ nodes = {{ {plain} }}; }}"),
                r#"{ address = "10.0.0.7"; key = "key number 7"; modules = [ "a" ]; }"#,
            ),
            (
                format!("let base = [ \"a\" ]; net = \"10.0.0\"; in {{ nodes = {{ {code} }}; }}"),
                r#"{ address = "10.0.0.7"; key = "key number 7"; modules = [ "a" "b" ]; }"#,
            ),
        ];
        for (text, expected) in cases {
            let mut machine = machine(&[]);
            let ir = compiled(&mut machine, &text);
            let body = match &ir.kind {
                IrKind::Let { body, .. } => body,
                _ => &ir,
            };
            let nodes = value_of(attrs(body), "nodes");
            let IrKind::Deferred(deferred) = &nodes.kind else {
                panic!("nodes not deferred: {nodes:?}");
            };
            let top = machine.eval_root(&ir).unwrap_or_else(|e| panic!("{e:?}"));
            let Value::Attrs(top) = top else {
                panic!("not a set")
            };
            assert!(deferred.get().is_none(), "nodes lowered before it was read");
            let nodes_value = top.get(b"nodes").cloned().unwrap_or(Value::Null);
            let Ok(Value::Attrs(set)) = machine.force(&nodes_value, crate::Span::default()) else {
                panic!("nodes is not a set");
            };
            let entry = set.get(b"n7").cloned().unwrap_or(Value::Null);
            assert_eq!(printed(&mut machine, &entry), expected);
            let lowered = attrs(
                deferred
                    .get()
                    .unwrap_or_else(|| panic!("nodes not lowered")),
            );
            for n in 0..50 {
                let name = format!("n{n}");
                let IrKind::Deferred(entry) = &value_of(lowered, &name).kind else {
                    panic!("{name} not deferred");
                };
                assert_eq!(entry.get().is_some(), n == 7, "{name}");
            }
        }
    }

    /// The output and the steps of `text` evaluated as a file, with at most
    /// `max_steps` steps (None when that is not enough).
    fn within_steps(text: &str, max_steps: u64) -> Option<String> {
        let limits = Limits {
            max_steps: Some(max_steps),
            ..Limits::default()
        };
        let mut machine = Machine::new(Rc::new(MemoryLoader::new()), vec!["/d".into()], limits);
        let value = machine
            .eval_source("/d/top.nix", None, text.as_bytes().into(), Path::new("/d"))
            .ok()?;
        machine
            .print_strict(&value)
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The fewest steps `text` evaluates in, and what it prints then.
    fn fewest_steps(text: &str) -> (u64, String) {
        (1..10_000)
            .find_map(|steps| within_steps(text, steps).map(|printed| (steps, printed)))
            .unwrap_or_else(|| panic!("{text} does not evaluate"))
    }

    /// Writing a value in more bytes (a comment inside it) makes it large enough to
    /// defer, and changes nothing: not what prints (a list shared by a variable
    /// still prints as `«repeated»`), nor the steps evaluation takes (a variable, a
    /// selection, a string or integer arithmetic is never deferred: a thunk would
    /// take a step more), whether the value is deferred or not.
    #[test]
    fn writing_a_value_large_enough_to_defer_changes_nothing() {
        let pad = "/* a comment long enough to make the value sixty-four bytes or more */";
        let programs = [
            "let l = [ 1 2 ]; in { a = l; b = (PAD l); }",
            "let l = [ 1 2 ]; in [ l (PAD l) ]",
            "let s = { a = { b = 3; }; }; in { e = s.a.b or PAD 0; }",
            "let n = 3; in { a = n + PAD 1; b = n - PAD 1; c = n < PAD 4; }",
            "let x = 1; y = 2; in [ x y (PAD \"a string\") ]",
            "let base = [ 1 ]; in { a = base ++ PAD [ 2 ]; b = { x = base; y = PAD base; }; }",
            "let f = x: { inherit x; }; in { a = f PAD 1; b = [ (f PAD 2) ]; }",
            "let t = true; in { a = if t then PAD \"yes\" else \"no\"; b = !PAD t; c = { } ? PAD x; }",
            "let s = \"x\"; in { a = \"${s} and ${PAD s}\"; b = [ \"${s}\" ] ++ [ PAD s ]; }",
            // operators Nix reads as calls of what the program binds
            "let __sub = a: b: a + b; __lessThan = a: b: \"lt\"; in { e = [ (PAD -3) (5 - PAD 1) (1 < PAD 2) ]; }",
        ];
        for program in programs {
            let short = program.replace("PAD ", "");
            let long = program.replace("PAD", pad);
            assert_eq!(fewest_steps(&long), fewest_steps(&short), "{long}");
        }
        // the long values are deferred where evaluation would suspend them anyway
        let mut machine = machine(&[]);
        let long = programs[5].replace("PAD", pad);
        let ir = compiled(&mut machine, &long);
        let IrKind::Let { body, .. } = &ir.kind else {
            panic!("not a let: {ir:?}");
        };
        assert!(is_deferred(value_of(attrs(body), "a")));
        let IrKind::Deferred(b) = &value_of(attrs(body), "b").kind else {
            panic!("b not deferred");
        };
        let value = machine
            .eval_root(&ir)
            .unwrap_or_else(|error| panic!("{error:?}"));
        printed(&mut machine, &value);
        let b = b.get().unwrap_or_else(|| panic!("b not lowered"));
        assert!(!is_deferred(value_of(attrs(b), "y")), "a variable deferred");
    }

    /// A file of data evaluates, deferred, to what it evaluates to lowered at once
    /// (the same data under a `let`, which is not deferred), and its attributes
    /// are where they are written.
    #[test]
    fn deferred_data_is_the_data_lowered_with_its_file_positions_included() {
        let mut data = String::from("{\n  nodes = {\n");
        for n in 0..40 {
            data.push_str(&format!(
                "    n{n:02} = {{\n      key = \"k{n}\";\n      ports = [ {n} {} {{ p = {n}; q = [ 1 2 3 ]; r = true; s = null; }} ];\n      s.t.u = {n}.5; s.t.v = \"v\";\n    }};\n",
                n + 1
            ));
        }
        data.push_str(
            "  };\n  top = [ [ 1 2 3 4 5 6 7 8 ] { a = 1; b = 2; c = 3; d = 4; } ];\n}\n",
        );
        let mut machine = machine(&[("/d/data.nix", data.clone())]);
        let deferred = machine
            .eval_source(
                "/d/a.nix",
                None,
                "import /d/data.nix".as_bytes().into(),
                Path::new("/d"),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        let eager = machine
            .eval_source(
                "/d/b.nix",
                None,
                format!("let d = {data}; in d").as_bytes().into(),
                Path::new("/d"),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        let printed_deferred = printed(&mut machine, &deferred);
        assert_eq!(printed_deferred, printed(&mut machine, &eager));
        assert!(printed_deferred.contains("n39 = { key = \"k39\"; ports = [ 39 40 { p = 39;"));
        let positions = machine
            .eval_source(
                "/d/c.nix",
                None,
                "let d = import /d/data.nix; in map (n: (builtins.unsafeGetAttrPos \"u\" d.nodes.${n}.s.t).line) (builtins.attrNames d.nodes)"
                    .as_bytes()
                    .into(),
                Path::new("/d"),
            )
            .unwrap_or_else(|e| panic!("{e:?}"));
        let lines: Vec<String> = data
            .lines()
            .enumerate()
            .filter(|(_, line)| line.contains("s.t.u"))
            .map(|(index, _)| (index + 1).to_string())
            .collect();
        assert_eq!(
            printed(&mut machine, &positions),
            format!("[ {} ]", lines.join(" "))
        );
    }
}
