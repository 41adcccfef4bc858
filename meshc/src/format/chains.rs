//! The longest chain of a syntax tree: the most arguments of one application
//! (`f a b c`) or the most elements of one attribute path (`a.b.c`, `a.b.c = ...;`,
//! `x ? a.b.c`). alejandra's time grows with the square of a chain's length (measured:
//! a path of 1,000 elements takes 0.8 s, of 4,000 takes 11.6 s, of 16,000 more than a
//! minute; an application of 4,000 arguments 4.7 s), so the formatter refuses a file
//! whose longest chain is above a bound before it starts. Only reads the tree.

use lang::Span;
use lang::syntax::{Binding, Expr, ExprKind, Param, StringPart};

/// The longest chain the formatter accepts: formatting one this long takes about
/// 0.2 s; no hand-written Nix comes near it.
pub const MAX_CHAIN: usize = 512;

/// The length of the longest chain of `root` and the span of its first element (the
/// function applied, the first name of the path); 0 and the root's span when it has
/// none. Iterative, so it needs no stack for deep trees.
pub fn longest_chain(root: &Expr) -> (usize, Span) {
    let mut longest = (0, root.span);
    let mut pending = vec![root];
    let mut note = |length: usize, span: Span| {
        if length > longest.0 {
            longest = (length, span);
        }
    };
    while let Some(expr) = pending.pop() {
        match &expr.kind {
            ExprKind::String(parts) | ExprKind::Path(parts) => {
                pending.extend(parts.iter().filter_map(|part| match part {
                    StringPart::Interpolation(inner) => Some(&**inner),
                    StringPart::Literal(_) => None,
                }))
            }
            ExprKind::Select {
                expr: base,
                path,
                default,
            } => {
                note(path.len(), first(path, expr.span));
                pending.push(base);
                pending.extend(default.as_deref());
                pending.extend(path.iter().filter_map(dynamic));
            }
            ExprKind::HasAttr { expr: base, path } => {
                note(path.len(), first(path, expr.span));
                pending.push(base);
                pending.extend(path.iter().filter_map(dynamic));
            }
            ExprKind::Attrs { bindings, .. } | ExprKind::LegacyLet { bindings } => {
                bindings_of(bindings, &mut note, &mut pending)
            }
            ExprKind::Let { bindings, body } => {
                bindings_of(bindings, &mut note, &mut pending);
                pending.push(body);
            }
            ExprKind::List(items) => pending.extend(items.iter()),
            ExprKind::With { namespace, body } => pending.extend([&**namespace, &**body]),
            ExprKind::If {
                condition,
                then,
                otherwise,
            } => pending.extend([&**condition, &**then, &**otherwise]),
            ExprKind::Assert { condition, body } => pending.extend([&**condition, &**body]),
            ExprKind::Lambda { param, body } => {
                if let Param::Formals { formals, .. } = &**param {
                    pending.extend(formals.iter().filter_map(|formal| formal.default.as_ref()));
                }
                pending.push(body);
            }
            ExprKind::Apply {
                function,
                arguments,
            } => {
                note(arguments.len() + 1, function.span);
                pending.push(function);
                pending.extend(arguments.iter());
            }
            ExprKind::Unary { expr: inner, .. } => pending.push(inner),
            ExprKind::Binary { left, right, .. } => pending.extend([&**left, &**right]),
            ExprKind::Integer(_)
            | ExprKind::Float(_)
            | ExprKind::Uri(_)
            | ExprKind::Variable(_)
            | ExprKind::Error => {}
        }
    }
    longest
}

fn first(path: &[lang::syntax::AttrName], otherwise: Span) -> Span {
    path.first().map_or(otherwise, lang::syntax::AttrName::span)
}

fn dynamic(name: &lang::syntax::AttrName) -> Option<&Expr> {
    match name {
        lang::syntax::AttrName::Dynamic(expr) => Some(expr),
        lang::syntax::AttrName::Static { .. } => None,
    }
}

fn bindings_of<'a>(
    bindings: &'a [Binding],
    note: &mut impl FnMut(usize, Span),
    pending: &mut Vec<&'a Expr>,
) {
    for binding in bindings {
        match binding {
            Binding::Assign { path, value, span } => {
                note(path.len(), first(path, *span));
                pending.push(value);
                pending.extend(path.iter().filter_map(dynamic));
            }
            Binding::Inherit { from, names, .. } => {
                pending.extend(from.as_deref());
                pending.extend(names.iter().filter_map(dynamic));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longest(source: &str) -> usize {
        let parsed = lang::parser::parse(source.as_bytes(), lang::FileId::default());
        assert!(parsed.errors.is_empty(), "{source}: {:?}", parsed.errors);
        longest_chain(&parsed.expr).0
    }

    #[test]
    fn applications_and_paths_are_chains() {
        assert_eq!(longest("1"), 0);
        assert_eq!(longest("f a b c"), 4);
        assert_eq!(longest("{ a.b.c.d = 1; }"), 4);
        assert_eq!(longest("[ (x: x.a.b) ]"), 2);
        assert_eq!(longest("let y = { } ? a.b.c; in \"${f 1 2 3 4 5}\""), 6);
        assert_eq!(longest("{ x ? a.b.c.d.e.f }: x"), 5);
    }
}
