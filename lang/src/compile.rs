//! Lowers the syntax tree to the evaluator's code: every variable is resolved to a
//! frame distance and slot (or to a `with` lookup, or to a builtin) before anything
//! runs, nested attribute paths are merged, and undefined variables are reported here,
//! as Nix reports them, before evaluation. Pure: no I/O, no evaluation.
//!
//! One idea per file: this one holds the entry point and the expressions;
//! `scope` resolves names, `sets` merges and lowers attribute sets and `let`,
//! `lambda` binds parameters and formals, `strings` lowers strings and paths;
//! `ir` is the code it produces and `paths` the path helpers.

use std::path::Path;
use std::rc::Rc;

use crate::codes;
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::name::Name;
use crate::span::Span;
use crate::symbols::{NameMap, SymbolOrder};
use crate::syntax::{AttrName, BinaryOp, Binding, Expr, ExprKind, Param, StringPart, UnaryOp};
use crate::value::Value;

mod deferred;
mod ir;
mod lambda;
mod paths;
mod scope;
mod sets;
mod strings;
pub use deferred::DeferredIr;
pub use ir::*;
pub use paths::{absolute_path, canonical_path, host_path, path_bytes};
use sets::{SetBuilder, fill_order};

/// What the compiler needs from the evaluator: the builtins in scope everywhere.
pub trait GlobalScope {
    fn global(&self, name: &[u8]) -> Option<Value>;
    fn global_names(&self) -> Vec<String>;
}

pub struct Compiled {
    pub ir: Rc<Ir>,
    pub errors: Vec<Diagnostic>,
    /// Span of a binding's value -> the binding's name (for cycle diagnostics), in
    /// the order found: where a span comes twice, the later entry is the one meant.
    pub binding_names: Vec<(Span, Name)>,
    /// Span of a variable reference -> the name it refers to (for cycle diagnostics),
    /// in the order found, as `binding_names`.
    pub reference_names: Vec<(Span, Name)>,
    /// The files its path literals name that end in `.nix` (absolute, canonical), in
    /// the order written: the files it may import next, which a host may read and
    /// parse ahead (see `eval::prefetch`).
    pub nix_paths: Vec<Vec<u8>>,
}

/// Compiles a parsed expression. `base_directory` resolves relative path literals.
pub fn compile(
    expr: &Expr,
    base_directory: &Path,
    globals: &dyn GlobalScope,
    symbols: &SymbolOrder,
) -> Compiled {
    let mut compiler = Compiler::new(symbols, globals, path_bytes(base_directory));
    let ir = compiler.expr(expr);
    compiler.finish(ir)
}

/// Compiles a parsed file as [`compile`] does, but a file whose top is a set or
/// list literal keeps the plain data on it unlowered until it is evaluated (see
/// `deferred`). Its globals must be the ones every evaluation of it sees. A
/// skimmed tree (`crate::skim`) comes with its file's `text`, from which its hollow
/// sets are parsed when they are lowered.
pub fn compile_file(
    root: &std::sync::Arc<Expr>,
    text: Option<std::sync::Arc<[u8]>>,
    base_directory: &Path,
    globals: &dyn GlobalScope,
    symbols: &SymbolOrder,
) -> Compiled {
    let mut compiler = Compiler::new(symbols, globals, path_bytes(base_directory));
    compiler.root = Some(root.clone());
    compiler.skimmed_text = text;
    compiler.spine = true;
    let ir = compiler.expr(root);
    compiler.finish(ir)
}

/// Cloned cheaply: a value lowered later keeps the scopes it was written in (see
/// `deferred`).
#[derive(Clone)]
enum Scope {
    /// Names bound by a `let`, a `rec` set or a function, with their slots.
    Frame(Rc<scope::Frame>),
    With,
}

struct Compiler<'a> {
    symbols: &'a SymbolOrder,
    scopes: Vec<Scope>,
    base_directory: Vec<u8>,
    globals: &'a dyn GlobalScope,
    errors: Vec<Diagnostic>,
    binding_names: Vec<(Span, Name)>,
    reference_names: Vec<(Span, Name)>,
    nix_paths: Vec<Vec<u8>>,
    /// The file's tree, when its plain data may be deferred.
    root: Option<std::sync::Arc<Expr>>,
    /// Whether the set or list being lowered is on the file's spine: reached from
    /// its top through set and list literals only (see `deferred`).
    spine: bool,
    /// Whether what is lowered is known to be plain data (a deferred value's).
    plain: bool,
    /// The file's text, when `root` is a skimmed tree.
    skimmed_text: Option<std::sync::Arc<[u8]>>,
    /// How many set values, list items and `let` bodies on the spine are being
    /// lowered around what is lowered now (see `deferred`).
    spine_depth: usize,
    /// The scopes last kept for a deferred value, shared by the next one deferred
    /// in the same scopes (an inventory's entries).
    kept_scopes: Option<Rc<[Scope]>>,
    /// What `deferred`'s walk found of values that could be deferred, by their
    /// node's address and the number of scopes around them.
    verdicts: std::cell::RefCell<
        std::collections::HashMap<
            (usize, usize),
            deferred::Verdict,
            std::hash::BuildHasherDefault<crate::symbols::NameHasher>,
        >,
    >,
}

fn node(kind: IrKind, span: Span) -> Rc<Ir> {
    Rc::new(Ir { kind, span })
}

fn name_text(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

impl<'a> Compiler<'a> {
    fn new(
        symbols: &'a SymbolOrder,
        globals: &'a dyn GlobalScope,
        base_directory: Vec<u8>,
    ) -> Compiler<'a> {
        Compiler {
            symbols,
            scopes: Vec::new(),
            base_directory,
            globals,
            errors: Vec::new(),
            binding_names: Vec::new(),
            reference_names: Vec::new(),
            nix_paths: Vec::new(),
            root: None,
            spine: false,
            plain: false,
            skimmed_text: None,
            spine_depth: 0,
            kept_scopes: None,
            verdicts: Default::default(),
        }
    }

    fn finish(self, ir: Rc<Ir>) -> Compiled {
        Compiled {
            ir,
            errors: self.errors,
            binding_names: self.binding_names,
            reference_names: self.reference_names,
            nix_paths: self.nix_paths,
        }
    }

    /// Lowers `expr` off the spine: what it holds is not a set's value or a list's
    /// item reached from the top through literals.
    fn off_spine<T>(&mut self, lower: impl FnOnce(&mut Self) -> T) -> T {
        let spine = std::mem::replace(&mut self.spine, false);
        let lowered = lower(self);
        self.spine = spine;
        lowered
    }

    /// Records a scope error; after [`crate::parser::MAX_ERRORS`] of them the rest are
    /// dropped (compilation goes on, as it cannot fail).
    fn error(&mut self, diagnostic: Diagnostic) {
        if !self.has_too_many_errors() {
            self.errors.push(diagnostic);
        }
    }

    fn has_too_many_errors(&self) -> bool {
        self.errors.len() >= crate::parser::MAX_ERRORS
    }

    fn error_node(&self, span: Span) -> Rc<Ir> {
        node(IrKind::Const(Value::Null), span)
    }

    fn expr(&mut self, expr: &Expr) -> Rc<Ir> {
        // what is not a literal takes its children off the spine, but for a `let`,
        // whose body stays on it (an inventory written as `let ... in { ... }`)
        if self.spine && !deferred::on_spine(expr) && !matches!(expr.kind, ExprKind::Let { .. }) {
            return self.off_spine(|compiler| compiler.lower(expr));
        }
        self.lower(expr)
    }

    fn lower(&mut self, expr: &Expr) -> Rc<Ir> {
        let span = expr.span;
        match &expr.kind {
            ExprKind::Integer(value) => node(IrKind::Const(Value::Int(*value)), span),
            ExprKind::Float(value) => node(IrKind::Const(Value::Float(*value)), span),
            ExprKind::Uri(text) => node(IrKind::Const(Value::string_from(text)), span),
            ExprKind::String(parts) => self.string(parts, span),
            ExprKind::Path(parts) => self.path(parts, span),
            // Nix's parser reads `__curPos` as a position, never as a variable
            ExprKind::Variable(name) if name == "__curPos" => node(IrKind::CurrentPosition, span),
            ExprKind::Variable(name) => self.variable(name, span),
            ExprKind::Select {
                expr: inner,
                path,
                default,
            } => {
                let expr = self.expr(inner);
                let path = self.attr_path(path);
                let default = default.as_ref().map(|d| self.expr(d));
                select_node(expr, path, default, span)
            }
            ExprKind::HasAttr { expr: inner, path } => {
                let expr = self.expr(inner);
                let path = self.attr_path(path);
                node(IrKind::HasAttr { expr, path }, span)
            }
            ExprKind::Attrs {
                recursive,
                bindings,
            } => {
                let mut set = SetBuilder::new(*recursive);
                self.add_bindings(&mut set, bindings, false);
                self.compile_set(set, span)
            }
            // an empty list has no identity (it is never `«repeated»` nor the same
            // object as another): one constant serves every evaluation
            ExprKind::List(items) if items.is_empty() => node(
                IrKind::Const(Value::List(crate::value::List::from(Vec::new()))),
                span,
            ),
            ExprKind::List(items) => {
                let items = items.iter().map(|item| self.value(item)).collect();
                node(IrKind::List(items), span)
            }
            ExprKind::Let { bindings, body } => {
                // the bindings are off the spine; the body is where the `let` is
                let spine = std::mem::replace(&mut self.spine, false);
                let mut set = SetBuilder::new(true);
                self.add_bindings(&mut set, bindings, true);
                let ir = self.compile_let(set, body, span, spine);
                self.spine = spine;
                ir
            }
            ExprKind::LegacyLet { bindings } => {
                let mut set = SetBuilder::new(true);
                self.add_bindings(&mut set, bindings, false);
                let attrs = self.compile_set(set, span);
                node(
                    IrKind::Select {
                        expr: attrs,
                        path: Box::new([IrAttrName::Static(crate::name::Name::new(b"body"))]),
                        default: None,
                    },
                    span,
                )
            }
            ExprKind::With { namespace, body } => {
                let namespace = self.expr(namespace);
                self.scopes.push(Scope::With);
                let body = self.expr(body);
                self.scopes.pop();
                node(IrKind::With { namespace, body }, span)
            }
            ExprKind::If {
                condition,
                then,
                otherwise,
            } => {
                let condition = self.expr(condition);
                let then = self.expr(then);
                let otherwise = self.expr(otherwise);
                node(
                    IrKind::If {
                        condition,
                        then,
                        otherwise,
                    },
                    span,
                )
            }
            ExprKind::Assert { condition, body } => {
                let condition = self.expr(condition);
                let body = self.expr(body);
                node(IrKind::Assert { condition, body }, span)
            }
            ExprKind::Lambda { param, body } => {
                let lambda = self.lambda(param, body, span, None);
                node(IrKind::Lambda(lambda), span)
            }
            ExprKind::Apply {
                function,
                arguments,
            } => {
                let function = self.expr(function);
                let arguments = arguments.iter().map(|a| self.expr(a)).collect();
                node(
                    IrKind::Call {
                        function,
                        arguments,
                    },
                    span,
                )
            }
            ExprKind::Unary {
                op: UnaryOp::Not,
                expr: inner,
            } => {
                let inner = self.expr(inner);
                node(IrKind::Not(inner), span)
            }
            ExprKind::Unary {
                op: UnaryOp::Negate,
                expr: inner,
            } => {
                // Nix reads `-x` as `__sub 0 x`
                let zero = node(IrKind::Const(Value::Int(0)), span);
                let inner = self.expr(inner);
                self.desugared_call(b"__sub", Operator::Subtract, zero, inner, span)
            }
            ExprKind::Binary {
                op, left, right, ..
            } => self.binary(*op, left, right, span),
            ExprKind::Error => self.error_node(span),
        }
    }

    fn binary(&mut self, op: BinaryOp, left: &Expr, right: &Expr, span: Span) -> Rc<Ir> {
        let left = self.expr(left);
        let right = self.expr(right);
        let simple = |op: Operator| {
            node(
                IrKind::Binary {
                    op,
                    left: left.clone(),
                    right: right.clone(),
                },
                span,
            )
        };
        match op {
            BinaryOp::Implies => simple(Operator::Implies),
            BinaryOp::Or => simple(Operator::Or),
            BinaryOp::And => simple(Operator::And),
            BinaryOp::Equal => simple(Operator::Equal),
            BinaryOp::NotEqual => simple(Operator::NotEqual),
            BinaryOp::Update => simple(Operator::Update),
            BinaryOp::Add => simple(Operator::Add),
            BinaryOp::Concat => simple(Operator::Concat),
            BinaryOp::Subtract => {
                self.desugared_call(b"__sub", Operator::Subtract, left, right, span)
            }
            BinaryOp::Multiply => {
                self.desugared_call(b"__mul", Operator::Multiply, left, right, span)
            }
            BinaryOp::Divide => self.desugared_call(b"__div", Operator::Divide, left, right, span),
            BinaryOp::Less => self.desugared_call(b"__lessThan", Operator::Less, left, right, span),
            BinaryOp::Greater => {
                self.desugared_call(b"__lessThan", Operator::Less, right, left, span)
            }
            BinaryOp::LessEqual => {
                let less = self.desugared_call(b"__lessThan", Operator::Less, right, left, span);
                node(IrKind::Not(less), span)
            }
            BinaryOp::GreaterEqual => {
                let less = self.desugared_call(b"__lessThan", Operator::Less, left, right, span);
                node(IrKind::Not(less), span)
            }
        }
    }

    /// Nix parses `a - b` as a call of whatever `__sub` means where it is written.
    /// Usually that is the builtin, and then it is compiled as the operator itself.
    fn desugared_call(
        &mut self,
        function_name: &[u8],
        op: Operator,
        left: Rc<Ir>,
        right: Rc<Ir>,
        span: Span,
    ) -> Rc<Ir> {
        if self.is_shadowed(function_name)
            && let Some(kind) = self.lookup(function_name)
        {
            let function = node(kind, span);
            return node(
                IrKind::Call {
                    function,
                    arguments: Box::new([left, right]),
                },
                span,
            );
        }
        node(IrKind::Binary { op, left, right }, span)
    }
}

/// `a.b.c`, with the names found in a constant set already looked up
/// (`builtins.foldl'`, `inherit (builtins) map`): a value already evaluated in a
/// constant is the same value every time, so selecting it at run time would only
/// search the set again. A name not there, or bound to a thunk still to evaluate,
/// is left to run time (and its error or laziness with it).
fn select_node(
    mut expr: Rc<Ir>,
    path: Box<[IrAttrName]>,
    default: Option<Rc<Ir>>,
    span: Span,
) -> Rc<Ir> {
    let mut folded = 0;
    for name in path.iter() {
        let IrAttrName::Static(name) = name else {
            break;
        };
        let IrKind::Const(Value::Attrs(attrs)) = &expr.kind else {
            break;
        };
        let value = match attrs.get(name) {
            Some(Value::Thunk(thunk)) => match thunk.value() {
                Some(value) => value,
                None => break,
            },
            Some(value) => value.clone(),
            None => break,
        };
        expr = node(IrKind::Const(value), span);
        folded += 1;
    }
    if folded == path.len() {
        return expr;
    }
    let path = if folded == 0 {
        path
    } else {
        path.into_vec().split_off(folded).into_boxed_slice()
    };
    node(
        IrKind::Select {
            expr,
            path,
            default,
        },
        span,
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::rc::Rc;

    use super::{IrAttrName, IrKind};
    use crate::value::Value;
    use crate::{Limits, Machine, MemoryLoader};

    fn compiled(text: &str) -> Rc<super::Ir> {
        let mut machine = Machine::new(Rc::new(MemoryLoader::new()), Vec::new(), Limits::default());
        let (_, ir) = machine
            .compile_source("test.nix", None, text.as_bytes().into(), Path::new("/"))
            .unwrap_or_else(|errors| panic!("{errors:?}"));
        ir
    }

    /// `builtins.foldl'` is the builtin itself in the code, not a selection to run;
    /// a name `builtins` lacks stays a selection (its error or `or` at run time).
    #[test]
    fn selections_of_builtins_are_made_when_compiled() {
        assert!(matches!(
            &compiled("builtins.foldl'").kind,
            IrKind::Const(Value::PrimOp(primop)) if primop.name == "foldl'"
        ));
        assert!(matches!(
            &compiled("builtins.noSuchBuiltin or 1").kind,
            IrKind::Select { .. }
        ));
        assert!(matches!(
            &compiled("let builtins = { foldl' = 1; }; in builtins.foldl'").kind,
            IrKind::Let { .. }
        ));
    }

    /// Two set literals given to one name merge; the names both define are said
    /// once for the pair, with the outer name: one as its path (`app1.address`),
    /// several as one error at the two sets, not one error each (an entry copied
    /// under the same name repeated every field, and never said whose).
    #[test]
    fn names_repeated_by_two_merged_sets_are_said_once_with_the_outer_name() {
        let mut machine = Machine::new(Rc::new(MemoryLoader::new()), Vec::new(), Limits::default());
        let mut errors_of = |source: &str| {
            machine
                .compile_source("dup.nix", None, source.as_bytes().into(), Path::new("/"))
                .expect_err("a duplicate attribute")
        };
        let one = errors_of("{ app1 = { key = 1; a = 2; }; app1 = { key = 3; b = 4; }; }");
        assert_eq!(one.len(), 1, "{one:?}");
        assert_eq!(one[0].code, crate::codes::DUPLICATE_ATTRIBUTE);
        assert!(one[0].message.contains("`app1.key`"), "{}", one[0].message);
        let source = "{ app1 = { key = 1; address = 2; modules = 3; }; app1 = { key = 4; address = 5; modules = 6; }; }";
        let several = errors_of(source);
        assert_eq!(several.len(), 1, "{several:?}");
        assert!(
            several[0].message.contains("`app1`")
                && several[0].message.contains("`address`, `key`, `modules`"),
            "{}",
            several[0].message
        );
        // at the second `app1`, the first named beside it
        let primary = several[0].primary.as_ref().expect("a place").span;
        assert_eq!(primary.start as usize, source.rfind("app1").expect("two"));
        assert_eq!(
            several[0].secondary[0].span.start as usize,
            source.find("app1").expect("one")
        );
    }

    /// A set of more than a few attributes finds its names by an index: a name
    /// given again is still a duplicate, and paths still merge into one set.
    #[test]
    fn large_sets_find_duplicates_and_merge_paths() {
        let names: Vec<String> = (0..20).map(|index| format!("a{index}")).collect();
        let mut machine = Machine::new(Rc::new(MemoryLoader::new()), Vec::new(), Limits::default());
        let duplicated = format!(
            "{{ {} a3 = 2; }}",
            names
                .iter()
                .map(|n| format!("{n} = 1; "))
                .collect::<String>()
        );
        let errors = machine
            .compile_source(
                "dup.nix",
                None,
                duplicated.as_bytes().into(),
                Path::new("/"),
            )
            .expect_err("a duplicate attribute");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].code, crate::codes::DUPLICATE_ATTRIBUTE);
        assert!(errors[0].message.contains("`a3`"), "{}", errors[0].message);

        let merged = format!(
            "let s = {{ {} }}; in s.n.a17 + s.n.a2",
            names
                .iter()
                .enumerate()
                .map(|(index, n)| format!("n.{n} = {index}; "))
                .collect::<String>()
        );
        let ir = compiled(&merged);
        let IrKind::Let { bindings, .. } = &ir.kind else {
            panic!("not a let: {ir:?}");
        };
        let IrKind::Attrs(outer) = &bindings[0].value.kind else {
            panic!("not a set: {:?}", bindings[0].value);
        };
        let IrKind::Attrs(inner) = &outer.statics[0].value.kind else {
            panic!("not a nested set: {:?}", outer.statics[0].value);
        };
        let inner_names: Vec<&[u8]> = inner.statics.iter().map(|attr| &*attr.name).collect();
        let mut sorted: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
        sorted.sort();
        assert_eq!(inner_names, sorted, "one set, its names sorted");
    }

    /// A name resolves to the innermost frame binding it, counted outwards past
    /// frames that do not (each frame's filter skips them) and past `with`.
    #[test]
    fn variables_resolve_to_the_innermost_binding() {
        let ir = compiled("let a = 1; b = 2; in x: with {}; y: [ a b x y ]");
        let IrKind::Let { body, .. } = &ir.kind else {
            panic!("not a let: {ir:?}");
        };
        let IrKind::Lambda(outer) = &body.kind else {
            panic!("not a function: {body:?}");
        };
        let IrKind::With { body, .. } = &outer.body.kind else {
            panic!("not a with: {:?}", outer.body);
        };
        let IrKind::Lambda(inner) = &body.kind else {
            panic!("not a function: {body:?}");
        };
        let IrKind::List(items) = &inner.body.kind else {
            panic!("not a list: {:?}", inner.body);
        };
        let places: Vec<(u32, u32)> = items
            .iter()
            .map(|item| match item.kind {
                IrKind::Var { up, slot } => (up, slot),
                ref other => panic!("not a variable: {other:?}"),
            })
            .collect();
        assert_eq!(places, [(3, 0), (3, 1), (2, 0), (0, 0)]);
    }

    /// Names written in code are one shared copy per name, which lookups find by
    /// address.
    #[test]
    fn names_in_code_are_interned() {
        let ir = compiled("{ port = 1; }.port");
        let IrKind::Select { expr, path, .. } = &ir.kind else {
            panic!("not a selection: {ir:?}");
        };
        let IrKind::Attrs(attrs) = &expr.kind else {
            panic!("not a set: {expr:?}");
        };
        let [IrAttrName::Static(selected)] = &path[..] else {
            panic!("not one static name: {path:?}");
        };
        assert!(selected.same(attrs.statics[0].name));
        assert!(selected.same(crate::name::Name::of("port")));
    }
}
