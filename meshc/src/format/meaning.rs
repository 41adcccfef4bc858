//! A formatting must not change what a file means: the file and its formatting
//! parse to the same tree, spans aside. alejandra reads Nix as current Nix does
//! and prints what it read, which is not always what mesh (and Nix 2.8) reads:
//! `.5e1` came back as `.5 e1`, an application of `.5` to a variable. The trees
//! are compared node by node in one order, and the first node where they part is
//! where the formatting is refused. Only reads the trees; iterative, so it needs
//! no stack for deep trees.

use lang::Span;
use lang::syntax::{AttrName, Binding, Expr, ExprKind, Param, StringPart};

/// One node of a tree without its children and spans: two trees mean the same
/// when their nodes, taken in the same order, are equal.
#[derive(Debug, PartialEq)]
enum Node<'a> {
    Integer(i64),
    /// By its bits: `1.0` and `1.` are one number, and the parse of a float is exact.
    Float(u64),
    String,
    Path,
    /// The text between two interpolations, with the string's other literal
    /// pieces beside it joined to it (how the parser splits a string's text is not
    /// its meaning: `''\n''` and `''\n  ''` are both the empty string).
    Literal(Vec<u8>),
    Interpolation,
    Uri(&'a str),
    Variable(&'a str),
    Select {
        default: bool,
    },
    HasAttr,
    Attrs {
        recursive: bool,
    },
    List,
    Let,
    LegacyLet,
    With,
    If,
    Assert,
    Lambda,
    Parameter(&'a str),
    Formals {
        ellipsis: bool,
        at: Option<&'a str>,
    },
    Formal {
        name: &'a str,
        default: bool,
    },
    Apply,
    Unary(lang::syntax::UnaryOp),
    Binary(lang::syntax::BinaryOp),
    Error,
    Assign,
    Inherit {
        from: bool,
    },
    Name(&'a [u8]),
    DynamicName,
    End,
}

/// What is still to be taken of a tree, in order (a stack: pushed in reverse).
enum Pending<'a> {
    Expr(&'a Expr),
    Binding(&'a Binding),
    Name(&'a AttrName),
    Literal(Vec<u8>, Span),
    Interpolation(&'a Expr),
    Param(&'a Param, Span),
    /// The end of a node's children.
    End(Span),
    Formal(&'a lang::syntax::Formal),
}

/// The span in `before` of the first node where `after` means something else (None:
/// the two trees are the same but for their spans). When `after` ends early, the
/// span of the node of `before` it lacks; when it goes on, `before`'s whole span.
pub fn first_difference(before: &Expr, after: &Expr) -> Option<Span> {
    let (mut left, mut right) = (Nodes::new(before), Nodes::new(after));
    loop {
        match (left.next(), right.next()) {
            (None, None) => return None,
            (Some((node, span)), Some((other, _))) if node != other => return Some(span),
            (Some((_, span)), None) => return Some(span),
            (None, Some(_)) => return Some(before.span),
            (Some(_), Some(_)) => {}
        }
    }
}

/// A tree's nodes in pre-order, each with its span.
struct Nodes<'a> {
    pending: Vec<Pending<'a>>,
}

impl<'a> Nodes<'a> {
    fn new(root: &'a Expr) -> Self {
        Nodes {
            pending: vec![Pending::Expr(root)],
        }
    }

    /// Puts `children` next, in their order, and then the end of the node whose
    /// span is `span`: two trees part at the first child one has and the other
    /// has not, not at their parent.
    fn then(&mut self, span: Span, children: impl DoubleEndedIterator<Item = Pending<'a>>) {
        self.pending.push(Pending::End(span));
        self.pending.extend(children.rev());
    }

    fn expr(&mut self, expr: &'a Expr) -> Node<'a> {
        let exprs = |exprs: &'a [Expr]| exprs.iter().map(Pending::Expr);
        let names = |path: &'a [AttrName]| path.iter().map(Pending::Name);
        let bindings = |bindings: &'a [Binding]| bindings.iter().map(Pending::Binding);
        match &expr.kind {
            ExprKind::Integer(value) => Node::Integer(*value),
            ExprKind::Float(value) => Node::Float(value.to_bits()),
            ExprKind::String(parts) | ExprKind::Path(parts) => {
                let pieces = pieces(parts, expr.span);
                self.then(expr.span, pieces.into_iter());
                match &expr.kind {
                    ExprKind::String(_) => Node::String,
                    _ => Node::Path,
                }
            }
            ExprKind::Uri(uri) => Node::Uri(uri),
            ExprKind::Variable(name) => Node::Variable(name),
            ExprKind::Select {
                expr: base,
                path,
                default,
            } => {
                let default_expr = default.as_deref().map(Pending::Expr);
                self.then(
                    expr.span,
                    std::iter::once(Pending::Expr(base))
                        .chain(names(path))
                        .chain(default_expr),
                );
                Node::Select {
                    default: default.is_some(),
                }
            }
            ExprKind::HasAttr { expr: base, path } => {
                self.then(
                    expr.span,
                    std::iter::once(Pending::Expr(base)).chain(names(path)),
                );
                Node::HasAttr
            }
            ExprKind::Attrs {
                recursive,
                bindings: all,
            } => {
                self.then(expr.span, bindings(all));
                Node::Attrs {
                    recursive: *recursive,
                }
            }
            ExprKind::List(items) => {
                self.then(expr.span, exprs(items));
                Node::List
            }
            ExprKind::Let {
                bindings: all,
                body,
            } => {
                self.then(expr.span, bindings(all).chain([Pending::Expr(body)]));
                Node::Let
            }
            ExprKind::LegacyLet { bindings: all } => {
                self.then(expr.span, bindings(all));
                Node::LegacyLet
            }
            ExprKind::With { namespace, body } => {
                self.then(
                    expr.span,
                    [Pending::Expr(namespace), Pending::Expr(body)].into_iter(),
                );
                Node::With
            }
            ExprKind::If {
                condition,
                then,
                otherwise,
            } => {
                self.then(
                    expr.span,
                    [
                        Pending::Expr(condition),
                        Pending::Expr(then),
                        Pending::Expr(otherwise),
                    ]
                    .into_iter(),
                );
                Node::If
            }
            ExprKind::Assert { condition, body } => {
                self.then(
                    expr.span,
                    [Pending::Expr(condition), Pending::Expr(body)].into_iter(),
                );
                Node::Assert
            }
            ExprKind::Lambda { param, body } => {
                self.then(
                    expr.span,
                    [Pending::Param(param, expr.span), Pending::Expr(body)].into_iter(),
                );
                Node::Lambda
            }
            ExprKind::Apply {
                function,
                arguments,
            } => {
                self.then(
                    expr.span,
                    std::iter::once(Pending::Expr(function)).chain(exprs(arguments)),
                );
                Node::Apply
            }
            ExprKind::Unary { op, expr: operand } => {
                self.pending.push(Pending::Expr(operand));
                Node::Unary(*op)
            }
            ExprKind::Binary {
                op, left, right, ..
            } => {
                self.then(
                    expr.span,
                    [Pending::Expr(left), Pending::Expr(right)].into_iter(),
                );
                Node::Binary(*op)
            }
            ExprKind::Error => Node::Error,
        }
    }
}

/// A string's pieces: each run of literal text joined (an empty run left out),
/// and each interpolation.
fn pieces(parts: &[StringPart], span: Span) -> Vec<Pending<'_>> {
    let mut pieces = Vec::new();
    let mut text = Vec::new();
    for part in parts {
        match part {
            StringPart::Literal(bytes) => text.extend_from_slice(bytes),
            StringPart::Interpolation(expr) => {
                if !text.is_empty() {
                    pieces.push(Pending::Literal(std::mem::take(&mut text), span));
                }
                pieces.push(Pending::Interpolation(expr));
            }
        }
    }
    if !text.is_empty() {
        pieces.push(Pending::Literal(text, span));
    }
    pieces
}

impl<'a> Iterator for Nodes<'a> {
    type Item = (Node<'a>, Span);

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.pending.pop()? {
            Pending::Expr(expr) => (self.expr(expr), expr.span),
            Pending::Binding(Binding::Assign { path, value, span }) => {
                self.then(
                    *span,
                    path.iter().map(Pending::Name).chain([Pending::Expr(value)]),
                );
                (Node::Assign, *span)
            }
            Pending::Binding(Binding::Inherit { from, names, span }) => {
                let from_expr = from.as_deref().map(Pending::Expr);
                self.then(
                    *span,
                    from_expr.into_iter().chain(names.iter().map(Pending::Name)),
                );
                let node = Node::Inherit {
                    from: from.is_some(),
                };
                (node, *span)
            }
            Pending::Name(AttrName::Static { name, span }) => (Node::Name(name), *span),
            Pending::Name(AttrName::Dynamic(expr)) => {
                self.pending.push(Pending::Expr(expr));
                (Node::DynamicName, expr.span)
            }
            Pending::Literal(bytes, span) => (Node::Literal(bytes), span),
            Pending::End(span) => (Node::End, span),
            Pending::Interpolation(expr) => {
                self.pending.push(Pending::Expr(expr));
                (Node::Interpolation, expr.span)
            }
            Pending::Param(Param::Identifier { name, span }, _) => (Node::Parameter(name), *span),
            Pending::Param(
                Param::Formals {
                    formals,
                    ellipsis,
                    at,
                },
                span,
            ) => {
                self.then(span, formals.iter().map(Pending::Formal));
                let node = Node::Formals {
                    ellipsis: *ellipsis,
                    at: at.as_ref().map(|(name, _)| name.as_str()),
                };
                (node, span)
            }
            Pending::Formal(formal) => {
                self.then(formal.span, formal.default.iter().map(Pending::Expr));
                let node = Node::Formal {
                    name: &formal.name,
                    default: formal.default.is_some(),
                };
                (node, formal.span)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Expr {
        let parsed = lang::parser::parse(text.as_bytes(), lang::FileId(0));
        assert!(parsed.errors.is_empty(), "{text}: {:?}", parsed.errors);
        parsed.expr
    }

    fn difference(before: &str, after: &str) -> Option<String> {
        first_difference(&parsed(before), &parsed(after))
            .map(|span| before[span.start as usize..span.end as usize].to_string())
    }

    #[test]
    fn layout_and_comments_are_not_meaning() {
        assert_eq!(
            difference(
                "{ a = x: x; b = { c ? 1, ... }@d: \"${c}\"; inherit (e) f; }",
                "{\n  # a comment\n  a = x: x;\n  b = {\n    c ? 1,\n    ...\n  } @ d: \"${c}\";\n  inherit (e) f;\n}\n",
            ),
            None
        );
        // one number written two ways
        assert_eq!(difference("[ 1.0 ]", "[1.]"), None);
        // one string whose text the parser splits two ways
        assert_eq!(
            difference("{ t = ''\n''; }", "{\n  t = ''\n  '';\n}\n"),
            None
        );
        assert_eq!(difference("''a''${\"b\"}''", "''a''${\"b\"}''"), None);
    }

    #[test]
    fn the_first_place_that_means_something_else_is_found() {
        // alejandra's `.5e1` -> `.5 e1`: a number became an application, marked
        // where it is, not as the list around it
        assert_eq!(
            difference("[ 1 2 .5e1 3 ]", "[ 1 2 .5 e1 3 ]").as_deref(),
            Some(".5e1")
        );
        assert_eq!(
            difference("{ a = .5e1; }", "{ a = .5 e1; }").as_deref(),
            Some(".5e1")
        );
        // a string's text, a name, an operator, a default, the parts of a path
        assert_eq!(
            difference("''\n  a\n''", "''\n  b\n''").as_deref(),
            Some("''\n  a\n''")
        );
        assert_eq!(
            difference("{ a.b = 1; }", "{ a.c = 1; }").as_deref(),
            Some("b")
        );
        assert_eq!(difference("1 + 2", "1 - 2").as_deref(), Some("1 + 2"));
        assert_eq!(difference("{ a ? 1 }: a", "{ a }: a").as_deref(), Some("a"));
        assert_eq!(difference("x: x", "y: x").as_deref(), Some("x"));
        // the formatting ends early, or goes on
        assert_eq!(difference("[ 1 2 ]", "[ 1 ]").as_deref(), Some("2"));
        assert_eq!(difference("[ 1 ]", "[ 1 2 ]").as_deref(), Some("[ 1 ]"));
    }

    #[test]
    fn a_deep_tree_needs_no_stack() {
        let deep = format!("{}1{}", "[ ".repeat(9_000), " ]".repeat(9_000));
        let tree = lang::eval::run_with_stack(move || {
            let parsed = lang::parser::parse(deep.as_bytes(), lang::FileId(0));
            let same = first_difference(&parsed.expr, &parsed.expr);
            // the tree is dropped on the large stack too
            drop(parsed);
            same
        });
        assert_eq!(tree.expect("ran"), None);
    }
}
