//! Editor navigation on the syntax tree: what is written at a byte offset (an
//! attribute name of a binding with its full path, a string literal, a variable with
//! the place that binds it, an attribute of a selection). Purely syntactic, so it
//! works on a buffer that does not evaluate; it must not evaluate or read files.
//! Scopes follow the compiler's rules (`let`, `rec`, function arguments; `inherit x`
//! looks outside the set that holds it; a lexical binding wins over `with`).

use crate::span::Span;
use crate::syntax::{AttrName, Binding, Expr, ExprKind, Param, StringPart};

/// What is at an offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// A static attribute name of a binding (`a.b.c = ...;`). `path` is the binding's
    /// path from the value of the file when `in_value` (through nested sets, `let`
    /// and function bodies, `//` and `if`), else from the innermost enclosing set or
    /// `let`; `index` is the element under the offset.
    AttrName {
        path: Vec<String>,
        index: usize,
        span: Span,
        in_value: bool,
    },
    /// A string literal without interpolation. `binding` is the path of the innermost
    /// binding whose value holds it (as in `AttrName`, empty if none).
    String {
        text: String,
        span: Span,
        binding: Vec<String>,
    },
    /// A variable, or the name of an `inherit` without `(from)`: `bound_at` is the
    /// name that binds it, or None for a builtin, a `with` name or an undefined one.
    Variable {
        name: String,
        span: Span,
        bound_at: Option<Span>,
    },
    /// An attribute name of a selection `base.a.b` (or `base ? a.b`); `base` is the
    /// variable it starts from, when it is one.
    Selected {
        base: Option<String>,
        path: Vec<String>,
        index: usize,
        span: Span,
    },
}

/// What is written at `offset` in the tree of one file, innermost first.
pub fn find(root: &Expr, offset: u32) -> Option<Found> {
    let mut walker = Walker {
        offset,
        scopes: Vec::new(),
        found: None,
    };
    walker.expr(root, &Context::value(Vec::new()));
    walker.found
}

/// Every name bound at `offset` (innermost first), for completion.
pub fn names_in_scope(root: &Expr, offset: u32) -> Vec<String> {
    let mut walker = Walker {
        offset,
        scopes: Vec::new(),
        found: None,
    };
    let mut names = Vec::new();
    walker.scopes_at(root, &mut names);
    names
}

fn contains(span: Span, offset: u32) -> bool {
    span.start <= offset && offset <= span.end
}

fn text(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

fn static_path(path: &[AttrName]) -> Vec<Option<String>> {
    path.iter()
        .map(|name| match name {
            AttrName::Static { name, .. } => Some(text(name)),
            AttrName::Dynamic(_) => None,
        })
        .collect()
}

/// The path of bindings around the expression being walked.
#[derive(Clone)]
struct Context {
    path: Vec<String>,
    /// Whether `path` leads from the file's value (see [`Found::AttrName`]).
    in_value: bool,
}

impl Context {
    fn value(path: Vec<String>) -> Context {
        Context {
            path,
            in_value: true,
        }
    }

    /// Inside something that is not part of the value's shape (a call, a list).
    fn opaque(&self) -> Context {
        Context {
            path: self.path.clone(),
            in_value: false,
        }
    }
}

/// One lexical frame: names and where they are bound.
struct Frame {
    names: Vec<(String, Span)>,
}

struct Walker {
    offset: u32,
    scopes: Vec<Frame>,
    found: Option<Found>,
}

impl Walker {
    fn lookup(&self, name: &str, skip: usize) -> Option<Span> {
        self.scopes.iter().rev().skip(skip).find_map(|frame| {
            frame
                .names
                .iter()
                .find(|(bound, _)| bound == name)
                .map(|(_, span)| *span)
        })
    }

    fn bindings_frame(bindings: &[Binding]) -> Frame {
        let mut names = Vec::new();
        for binding in bindings {
            match binding {
                Binding::Assign { path, .. } => {
                    if let Some(AttrName::Static { name, span }) = path.first() {
                        let name = text(name);
                        if !names.iter().any(|(bound, _)| *bound == name) {
                            names.push((name, *span));
                        }
                    }
                }
                Binding::Inherit {
                    names: inherited, ..
                } => {
                    for attr in inherited {
                        if let AttrName::Static { name, span } = attr {
                            names.push((text(name), *span));
                        }
                    }
                }
            }
        }
        Frame { names }
    }

    fn param_frame(param: &Param) -> Frame {
        let names = match param {
            Param::Identifier { name, span } => vec![(name.clone(), *span)],
            Param::Formals { formals, at, .. } => {
                let mut names: Vec<(String, Span)> = formals
                    .iter()
                    .map(|formal| (formal.name.clone(), formal.span))
                    .collect();
                if let Some((name, span)) = at {
                    names.push((name.clone(), *span));
                }
                names
            }
        };
        Frame { names }
    }

    fn expr(&mut self, expr: &Expr, context: &Context) {
        if self.found.is_some() || !contains(expr.span, self.offset) {
            return;
        }
        match &expr.kind {
            ExprKind::Integer(_)
            | ExprKind::Float(_)
            | ExprKind::Uri(_)
            | ExprKind::Error
            | ExprKind::Path(_) => {
                if let ExprKind::Path(parts) = &expr.kind {
                    self.parts(parts, context);
                }
            }
            ExprKind::String(parts) => {
                if parts
                    .iter()
                    .all(|part| matches!(part, StringPart::Literal(_)))
                {
                    let bytes: Vec<u8> = parts
                        .iter()
                        .flat_map(|part| match part {
                            StringPart::Literal(bytes) => bytes.clone(),
                            StringPart::Interpolation(_) => Vec::new(),
                        })
                        .collect();
                    self.found = Some(Found::String {
                        text: text(&bytes),
                        span: expr.span,
                        binding: context.path.clone(),
                    });
                } else {
                    self.parts(parts, context);
                }
            }
            ExprKind::Variable(name) => {
                self.found = Some(Found::Variable {
                    name: name.clone(),
                    span: expr.span,
                    bound_at: self.lookup(name, 0),
                });
            }
            ExprKind::Select {
                expr: inner,
                path,
                default,
            } => {
                self.expr(inner, &context.opaque());
                self.selection(inner, path, context);
                if let Some(default) = default {
                    self.expr(default, &context.opaque());
                }
            }
            ExprKind::HasAttr { expr: inner, path } => {
                self.expr(inner, &context.opaque());
                self.selection(inner, path, context);
            }
            ExprKind::Attrs {
                recursive,
                bindings,
            } => {
                if *recursive {
                    self.scopes.push(Self::bindings_frame(bindings));
                    self.bindings(bindings, context, true);
                    self.scopes.pop();
                } else {
                    self.bindings(bindings, context, false);
                }
            }
            ExprKind::List(items) => {
                for item in items {
                    self.expr(item, &context.opaque());
                }
            }
            ExprKind::Let { bindings, body } => {
                self.scopes.push(Self::bindings_frame(bindings));
                let local = Context {
                    path: Vec::new(),
                    in_value: false,
                };
                self.bindings(bindings, &local, true);
                self.expr(body, context);
                self.scopes.pop();
            }
            ExprKind::LegacyLet { bindings } => {
                self.scopes.push(Self::bindings_frame(bindings));
                self.bindings(bindings, &context.opaque(), true);
                self.scopes.pop();
            }
            ExprKind::With { namespace, body } => {
                self.expr(namespace, &context.opaque());
                self.expr(body, context);
            }
            ExprKind::If {
                condition,
                then,
                otherwise,
            } => {
                self.expr(condition, &context.opaque());
                self.expr(then, context);
                self.expr(otherwise, context);
            }
            ExprKind::Assert { condition, body } => {
                self.expr(condition, &context.opaque());
                self.expr(body, context);
            }
            ExprKind::Lambda { param, body } => {
                if let Param::Identifier { name, span } = &**param
                    && contains(*span, self.offset)
                {
                    self.found = Some(Found::Variable {
                        name: name.clone(),
                        span: *span,
                        bound_at: Some(*span),
                    });
                    return;
                }
                self.scopes.push(Self::param_frame(param));
                if let Param::Formals { formals, at, .. } = &**param {
                    if let Some((name, span)) = at
                        && contains(*span, self.offset)
                    {
                        self.found = Some(Found::Variable {
                            name: name.clone(),
                            span: *span,
                            bound_at: Some(*span),
                        });
                    }
                    for formal in formals {
                        if self.found.is_some() {
                            break;
                        }
                        if let Some(default) = &formal.default {
                            self.expr(default, &context.opaque());
                        }
                        if self.found.is_none() && contains(formal.span, self.offset) {
                            self.found = Some(Found::Variable {
                                name: formal.name.clone(),
                                span: formal.span,
                                bound_at: Some(formal.span),
                            });
                        }
                    }
                }
                self.expr(body, context);
                self.scopes.pop();
            }
            ExprKind::Apply {
                function,
                arguments,
            } => {
                self.expr(function, &context.opaque());
                for argument in arguments {
                    self.expr(argument, &context.opaque());
                }
            }
            ExprKind::Unary { expr: inner, .. } => self.expr(inner, &context.opaque()),
            ExprKind::Binary {
                op, left, right, ..
            } => {
                let side = if *op == crate::syntax::BinaryOp::Update {
                    context.clone()
                } else {
                    context.opaque()
                };
                self.expr(left, &side);
                self.expr(right, &side);
            }
        }
    }

    fn parts(&mut self, parts: &[StringPart], context: &Context) {
        for part in parts {
            if let StringPart::Interpolation(inner) = part {
                self.expr(inner, &context.opaque());
            }
        }
    }

    fn selection(&mut self, base: &Expr, path: &[AttrName], context: &Context) {
        if self.found.is_some() {
            return;
        }
        let names = static_path(path);
        for (index, attr) in path.iter().enumerate() {
            match attr {
                AttrName::Static { span, .. } if contains(*span, self.offset) => {
                    self.found = Some(Found::Selected {
                        base: match &base.kind {
                            ExprKind::Variable(name) => Some(name.clone()),
                            _ => None,
                        },
                        path: names
                            .iter()
                            .map(|n| n.clone().unwrap_or_default())
                            .collect(),
                        index,
                        span: *span,
                    });
                    return;
                }
                AttrName::Dynamic(inner) => self.expr(inner, &context.opaque()),
                AttrName::Static { .. } => {}
            }
        }
    }

    /// The bindings of a set or `let`; `recursive` when their frame is pushed already
    /// (an `inherit x` then looks one frame further out).
    fn bindings(&mut self, bindings: &[Binding], context: &Context, recursive: bool) {
        for binding in bindings {
            if self.found.is_some() {
                return;
            }
            match binding {
                Binding::Assign { path, value, span } => {
                    if !contains(*span, self.offset) {
                        continue;
                    }
                    let names = static_path(path);
                    let mut full = context.path.clone();
                    full.extend(names.iter().map(|n| n.clone().unwrap_or_default()));
                    for (index, attr) in path.iter().enumerate() {
                        match attr {
                            AttrName::Static { span, .. } if contains(*span, self.offset) => {
                                self.found = Some(Found::AttrName {
                                    path: full.clone(),
                                    index: context.path.len() + index,
                                    span: *span,
                                    in_value: context.in_value,
                                });
                                return;
                            }
                            AttrName::Dynamic(inner) => self.expr(inner, &context.opaque()),
                            AttrName::Static { .. } => {}
                        }
                    }
                    let inner = Context {
                        path: full,
                        in_value: context.in_value && names.iter().all(Option::is_some),
                    };
                    self.expr(value, &inner);
                }
                Binding::Inherit { from, names, span } => {
                    if !contains(*span, self.offset) {
                        continue;
                    }
                    if let Some(from) = from {
                        self.expr(from, &context.opaque());
                    }
                    for attr in names {
                        if let AttrName::Static { name, span } = attr
                            && contains(*span, self.offset)
                        {
                            let name = text(name);
                            self.found = Some(match from {
                                Some(_) => {
                                    let mut path = context.path.clone();
                                    path.push(name);
                                    Found::AttrName {
                                        index: path.len() - 1,
                                        path,
                                        span: *span,
                                        in_value: context.in_value,
                                    }
                                }
                                None => Found::Variable {
                                    bound_at: self.lookup(&name, usize::from(recursive)),
                                    name,
                                    span: *span,
                                },
                            });
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Collects the names of every frame around `offset`, innermost first.
    fn scopes_at(&mut self, expr: &Expr, names: &mut Vec<String>) {
        let mut frames: Vec<Vec<String>> = Vec::new();
        let mut current = expr;
        loop {
            let mut next: Option<&Expr> = None;
            match &current.kind {
                ExprKind::Let { bindings, body } => {
                    frames.push(binding_names(bindings));
                    next = children_containing(bindings, self.offset).or(Some(body));
                }
                ExprKind::Attrs {
                    recursive,
                    bindings,
                } => {
                    if *recursive {
                        frames.push(binding_names(bindings));
                    }
                    next = children_containing(bindings, self.offset);
                }
                ExprKind::LegacyLet { bindings } => {
                    frames.push(binding_names(bindings));
                    next = children_containing(bindings, self.offset);
                }
                ExprKind::Lambda { param, body } => {
                    frames.push(
                        Self::param_frame(param)
                            .names
                            .into_iter()
                            .map(|(name, _)| name)
                            .collect(),
                    );
                    next = Some(body);
                }
                _ => {
                    for child in children(current) {
                        if contains(child.span, self.offset) {
                            next = Some(child);
                            break;
                        }
                    }
                }
            }
            match next {
                Some(child) if contains(child.span, self.offset) => current = child,
                _ => break,
            }
        }
        for frame in frames.into_iter().rev() {
            for name in frame {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
    }
}

fn binding_names(bindings: &[Binding]) -> Vec<String> {
    Walker::bindings_frame(bindings)
        .names
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

fn children_containing(bindings: &[Binding], offset: u32) -> Option<&Expr> {
    bindings.iter().find_map(|binding| match binding {
        Binding::Assign { value, span, .. } if contains(*span, offset) => Some(value),
        Binding::Inherit {
            from: Some(from),
            span,
            ..
        } if contains(*span, offset) => Some(&**from),
        _ => None,
    })
}

/// The direct sub-expressions of an expression (bindings' values included).
fn children(expr: &Expr) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = Vec::new();
    match &expr.kind {
        ExprKind::String(parts) | ExprKind::Path(parts) => {
            out.extend(parts.iter().filter_map(|part| match part {
                StringPart::Interpolation(inner) => Some(&**inner),
                StringPart::Literal(_) => None,
            }))
        }
        ExprKind::Select { expr, default, .. } => {
            out.push(expr);
            out.extend(default.as_deref());
        }
        ExprKind::HasAttr { expr, .. } | ExprKind::Unary { expr, .. } => out.push(expr),
        ExprKind::List(items) => out.extend(items.iter()),
        ExprKind::With { namespace, body } => out.extend([&**namespace, &**body]),
        ExprKind::If {
            condition,
            then,
            otherwise,
        } => out.extend([&**condition, &**then, &**otherwise]),
        ExprKind::Assert { condition, body } => out.extend([&**condition, &**body]),
        ExprKind::Apply {
            function,
            arguments,
        } => {
            out.push(function);
            out.extend(arguments.iter());
        }
        ExprKind::Binary { left, right, .. } => out.extend([&**left, &**right]),
        _ => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse;
    use crate::span::FileId;

    fn at(source: &str, marker: &str) -> Option<Found> {
        let parsed = parse(source.as_bytes(), FileId(0));
        let offset = source.find(marker).expect("marker in source") as u32;
        find(&parsed.expr, offset)
    }

    fn span_of(source: &str, needle: &str) -> (u32, u32) {
        let start = source.find(needle).expect("needle") as u32;
        (start, start + needle.len() as u32)
    }

    #[test]
    fn a_variable_resolves_to_its_let_binding() {
        let source = "let value = 1; other = value; in other";
        let Some(Found::Variable { name, bound_at, .. }) = at(source, "value;") else {
            panic!("no variable found");
        };
        assert_eq!(name, "value");
        let bound = bound_at.expect("bound");
        assert_eq!((bound.start, bound.end), span_of(source, "value"));
    }

    #[test]
    fn formals_and_builtins() {
        let source = "{ mesh, ... }: { x = mesh.option; y = map; }";
        let Some(Found::Variable { bound_at, .. }) = at(source, "mesh.option") else {
            panic!("no variable found");
        };
        assert_eq!(bound_at.map(|s| s.start), Some(2));
        let Some(Found::Variable { bound_at, name, .. }) = at(source, "map;") else {
            panic!("no variable found");
        };
        assert_eq!((name.as_str(), bound_at), ("map", None));
    }

    #[test]
    fn inherit_looks_outside_its_let() {
        let source = "x: let inherit x; in x";
        let Some(Found::Variable { bound_at, .. }) = at(source, "x; in") else {
            panic!("no variable found");
        };
        assert_eq!(bound_at.map(|s| s.start), Some(0));
    }

    #[test]
    fn attribute_paths_run_from_the_value_of_the_file() {
        let source = "{ nodes.db1 = { settings = { postgres.port = 5432; }; }; }";
        let Some(Found::AttrName {
            path,
            index,
            in_value,
            ..
        }) = at(source, "port")
        else {
            panic!("no attribute found");
        };
        assert_eq!(path, ["nodes", "db1", "settings", "postgres", "port"]);
        assert_eq!(index, 4);
        assert!(in_value);
    }

    #[test]
    fn strings_know_their_binding() {
        let source = "{ mesh, ... }: { requires = { node, ... }: [ \"networking\" ]; }";
        let Some(Found::String { text, binding, .. }) = at(source, "networking") else {
            panic!("no string found");
        };
        assert_eq!(text, "networking");
        assert_eq!(binding, ["requires"]);
    }

    #[test]
    fn selections_name_their_base() {
        let source = "builtins.map (x: x) [ ]";
        let Some(Found::Selected {
            base, path, index, ..
        }) = at(source, "map")
        else {
            panic!("no selection found");
        };
        assert_eq!(
            (base.as_deref(), path, index),
            (Some("builtins"), vec!["map".to_string()], 0)
        );
    }

    #[test]
    fn names_in_scope_are_innermost_first() {
        let source = "let a = 1; in { b, ... }: let c = 2; in c";
        let offset = source.rfind('c').expect("c") as u32;
        let parsed = parse(source.as_bytes(), FileId(0));
        let names = names_in_scope(&parsed.expr, offset);
        assert_eq!(names, ["c", "b", "a"]);
    }
}
