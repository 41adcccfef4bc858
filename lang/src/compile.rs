//! Lowers the syntax tree to the evaluator's code: every variable is resolved to a
//! frame distance and slot (or to a `with` lookup, or to a builtin) before anything
//! runs, nested attribute paths are merged, and undefined variables are reported here,
//! as Nix reports them, before evaluation. Pure: no I/O, no evaluation.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::rc::Rc;

use crate::codes;
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::span::Span;
use crate::symbols::SymbolOrder;
use crate::syntax::{AttrName, BinaryOp, Binding, Expr, ExprKind, Param, StringPart, UnaryOp};
use crate::value::{Bytes, Value};

mod ir;
mod paths;
pub use ir::*;
pub use paths::{absolute_path, canonical_path, path_bytes};

/// What the compiler needs from the evaluator: the builtins in scope everywhere.
pub trait GlobalScope {
    fn global(&self, name: &[u8]) -> Option<Value>;
    fn global_names(&self) -> Vec<String>;
}

pub struct Compiled {
    pub ir: Rc<Ir>,
    pub errors: Vec<Diagnostic>,
    /// Span of a binding's value -> the binding's name (for cycle diagnostics).
    pub binding_names: HashMap<Span, Bytes>,
    /// Span of a variable reference -> the name it refers to (for cycle diagnostics).
    pub reference_names: HashMap<Span, Bytes>,
}

/// Compiles a parsed file. `base_directory` resolves relative path literals.
pub fn compile(
    expr: &Expr,
    base_directory: &Path,
    globals: &dyn GlobalScope,
    symbols: &SymbolOrder,
) -> Compiled {
    let mut compiler = Compiler {
        symbols,
        scopes: Vec::new(),
        base_directory: path_bytes(base_directory),
        globals,
        errors: Vec::new(),
        binding_names: HashMap::new(),
        reference_names: HashMap::new(),
    };
    let ir = compiler.expr(expr);
    Compiled {
        ir,
        errors: compiler.errors,
        binding_names: compiler.binding_names,
        reference_names: compiler.reference_names,
    }
}

enum Scope {
    Frame(HashMap<Bytes, u32>),
    With,
}

struct Compiler<'a> {
    symbols: &'a SymbolOrder,
    scopes: Vec<Scope>,
    base_directory: Vec<u8>,
    globals: &'a dyn GlobalScope,
    errors: Vec<Diagnostic>,
    binding_names: HashMap<Span, Bytes>,
    reference_names: HashMap<Span, Bytes>,
}

/// An attribute set (or `let`) while its bindings are merged, before compilation.
struct SetBuilder<'e> {
    recursive: bool,
    statics: BTreeMap<Bytes, Entry<'e>>,
    dynamics: Vec<(&'e Expr, Entry<'e>, Span)>,
}

enum Entry<'e> {
    Value {
        expr: &'e Expr,
        span: Span,
    },
    Nested {
        set: SetBuilder<'e>,
        span: Span,
    },
    Inherited {
        from: Option<&'e Expr>,
        name: Bytes,
        span: Span,
    },
}

impl Entry<'_> {
    fn span(&self) -> Span {
        match self {
            Entry::Value { span, .. }
            | Entry::Nested { span, .. }
            | Entry::Inherited { span, .. } => *span,
        }
    }
}

/// Slot indices sorted by the symbol order of their names (ties keep slot order).
fn fill_order<'n>(symbols: &SymbolOrder, names: impl Iterator<Item = &'n [u8]>) -> Box<[u32]> {
    let mut ranked: Vec<(u64, u32)> = names
        .enumerate()
        .map(|(slot, name)| (symbols.rank(name), slot as u32))
        .collect();
    ranked.sort();
    ranked.into_iter().map(|(_, slot)| slot).collect()
}

fn node(kind: IrKind, span: Span) -> Rc<Ir> {
    Rc::new(Ir { kind, span })
}

fn name_text(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

impl<'a> Compiler<'a> {
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

    fn lookup(&self, name: &[u8]) -> Option<IrKind> {
        let mut withs = Vec::new();
        for (up, scope) in self.scopes.iter().rev().enumerate() {
            match scope {
                Scope::Frame(names) => {
                    if let Some(slot) = names.get(name) {
                        return Some(IrKind::Var {
                            up: up as u32,
                            slot: *slot,
                        });
                    }
                }
                Scope::With => withs.push(up as u32),
            }
        }
        if let Some(value) = self.globals.global(name) {
            return Some(IrKind::Const(value));
        }
        if !withs.is_empty() {
            return Some(IrKind::WithVar {
                name: crate::value::intern(name),
                withs: withs.into_boxed_slice(),
            });
        }
        None
    }

    /// Is `name` bound by the program (not a builtin)? Operators that Nix desugars
    /// into calls of `__sub` and friends honour such bindings.
    fn is_shadowed(&self, name: &[u8]) -> bool {
        self.scopes.iter().any(|scope| match scope {
            Scope::Frame(names) => names.contains_key(name),
            Scope::With => false,
        })
    }

    fn variable(&mut self, name: &str, span: Span) -> Rc<Ir> {
        match self.lookup(name.as_bytes()) {
            Some(kind) => {
                if matches!(kind, IrKind::Var { .. }) {
                    self.reference_names.insert(span, Rc::from(name.as_bytes()));
                }
                node(kind, span)
            }
            None if self.has_too_many_errors() => self.error_node(span),
            None => {
                let mut candidates: Vec<String> = self.globals.global_names();
                for scope in &self.scopes {
                    if let Scope::Frame(names) = scope {
                        candidates.extend(names.keys().map(|n| name_text(n)));
                    }
                }
                let mut diagnostic = Diagnostic::error(
                    codes::UNDEFINED_VARIABLE,
                    format!("undefined variable `{name}`"),
                )
                .with_primary(span, "not defined in this scope");
                diagnostic = match did_you_mean(name, candidates.iter().map(String::as_str)) {
                    Some(suggestion) => diagnostic.with_help(suggestion),
                    None => diagnostic.with_help(format!(
                        "bind `{name}` with `let {name} = ...; in` or take it as a function argument"
                    )),
                };
                self.error(diagnostic);
                self.error_node(span)
            }
        }
    }

    fn expr(&mut self, expr: &Expr) -> Rc<Ir> {
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
                let mut set = SetBuilder {
                    recursive: *recursive,
                    statics: BTreeMap::new(),
                    dynamics: Vec::new(),
                };
                self.add_bindings(&mut set, bindings, false);
                self.compile_set(set, span)
            }
            ExprKind::List(items) => {
                let items = items.iter().map(|item| self.expr(item)).collect();
                node(IrKind::List(items), span)
            }
            ExprKind::Let { bindings, body } => {
                let mut set = SetBuilder {
                    recursive: true,
                    statics: BTreeMap::new(),
                    dynamics: Vec::new(),
                };
                self.add_bindings(&mut set, bindings, true);
                self.compile_let(set, body, span)
            }
            ExprKind::LegacyLet { bindings } => {
                let mut set = SetBuilder {
                    recursive: true,
                    statics: BTreeMap::new(),
                    dynamics: Vec::new(),
                };
                self.add_bindings(&mut set, bindings, false);
                let attrs = self.compile_set(set, span);
                node(
                    IrKind::Select {
                        expr: attrs,
                        path: Box::new([IrAttrName::Static(crate::value::intern(b"body"))]),
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

    fn string(&mut self, parts: &[StringPart], span: Span) -> Rc<Ir> {
        match parts {
            [] => node(IrKind::Const(Value::string(b"")), span),
            [StringPart::Literal(bytes)] => node(IrKind::Const(Value::string(bytes)), span),
            _ => {
                let parts = parts
                    .iter()
                    .map(|part| match part {
                        StringPart::Literal(bytes) => {
                            node(IrKind::Const(Value::string(bytes)), span)
                        }
                        StringPart::Interpolation(expr) => self.expr(expr),
                    })
                    .collect();
                node(IrKind::Interpolate(parts), span)
            }
        }
    }

    fn path(&mut self, parts: &[StringPart], span: Span) -> Rc<Ir> {
        let Some(StringPart::Literal(first)) = parts.first() else {
            return self.error_node(span);
        };
        let mut resolved = absolute_path(first, &self.base_directory);
        if first.len() > 1 && first.last() == Some(&b'/') && resolved != b"/" {
            resolved.push(b'/');
        }
        let first = node(IrKind::Const(Value::Path(Rc::from(resolved))), span);
        if parts.len() == 1 {
            return first;
        }
        let mut compiled = vec![first];
        for part in &parts[1..] {
            compiled.push(match part {
                StringPart::Literal(bytes) => node(IrKind::Const(Value::string(bytes)), span),
                StringPart::Interpolation(expr) => self.expr(expr),
            });
        }
        node(IrKind::PathConcat(compiled.into_boxed_slice()), span)
    }

    fn attr_path(&mut self, path: &[AttrName]) -> Box<[IrAttrName]> {
        path.iter()
            .map(|name| match name {
                AttrName::Static { name, .. } => IrAttrName::Static(crate::value::intern(name)),
                AttrName::Dynamic(expr) => IrAttrName::Dynamic(self.expr(expr)),
            })
            .collect()
    }

    fn duplicate(&mut self, name: &[u8], first: Span, second: Span) {
        self.error(
            Diagnostic::error(
                codes::DUPLICATE_ATTRIBUTE,
                format!("attribute `{}` is defined twice", name_text(name)),
            )
            .with_primary(second, "defined again here")
            .with_secondary(first, "first defined here")
            .with_help("remove one of the definitions, or merge them into one attribute set"),
        );
    }

    /// Adds bindings to a set the way Nix's parser does (`addAttr`): `a.b = 1; a.c = 2;`
    /// builds one nested set, and two attribute-set literals for one name merge.
    fn add_bindings<'e>(
        &mut self,
        set: &mut SetBuilder<'e>,
        bindings: &'e [Binding],
        in_let: bool,
    ) {
        for binding in bindings {
            match binding {
                Binding::Assign { path, value, span } => {
                    self.add_assignment(set, path, value, *span, in_let);
                }
                Binding::Inherit { from, names, .. } => {
                    for name in names {
                        match name {
                            AttrName::Static { name, span } => {
                                let key: Bytes = crate::value::intern(name);
                                if let Some(existing) = set.statics.get(&key) {
                                    let first = existing.span();
                                    self.duplicate(name, first, *span);
                                    continue;
                                }
                                set.statics.insert(
                                    key.clone(),
                                    Entry::Inherited {
                                        from: from.as_deref(),
                                        name: key,
                                        span: *span,
                                    },
                                );
                            }
                            AttrName::Dynamic(expr) => {
                                self.error(
                                    Diagnostic::error(
                                        codes::DYNAMIC_ATTRIBUTE_NOT_ALLOWED,
                                        "dynamic attributes are not allowed in `inherit`",
                                    )
                                    .with_primary(expr.span, "a name computed at evaluation time")
                                    .with_help("write the name out, or use `name = expr;` instead of `inherit`"),
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    fn add_assignment<'e>(
        &mut self,
        set: &mut SetBuilder<'e>,
        path: &'e [AttrName],
        value: &'e Expr,
        span: Span,
        in_let: bool,
    ) {
        let Some((last, prefix)) = path.split_last() else {
            return;
        };
        let mut current = set;
        for name in prefix {
            match name {
                AttrName::Static {
                    name,
                    span: name_span,
                } => {
                    let key: Bytes = crate::value::intern(name);
                    let entry =
                        current
                            .statics
                            .entry(key.clone())
                            .or_insert_with(|| Entry::Nested {
                                set: SetBuilder {
                                    recursive: false,
                                    statics: BTreeMap::new(),
                                    dynamics: Vec::new(),
                                },
                                span: *name_span,
                            });
                    // an attribute-set literal seen before becomes mergeable
                    if let Entry::Value {
                        expr,
                        span: value_span,
                    } = entry
                        && let ExprKind::Attrs {
                            recursive,
                            bindings,
                        } = &expr.kind
                    {
                        let mut nested = SetBuilder {
                            recursive: *recursive,
                            statics: BTreeMap::new(),
                            dynamics: Vec::new(),
                        };
                        let value_span = *value_span;
                        self.add_bindings(&mut nested, bindings, false);
                        *entry = Entry::Nested {
                            set: nested,
                            span: value_span,
                        };
                    }
                    match entry {
                        Entry::Nested { set, .. } => current = set,
                        other => {
                            let first = other.span();
                            self.duplicate(name, first, *name_span);
                            return;
                        }
                    }
                }
                AttrName::Dynamic(expr) => {
                    if in_let {
                        self.dynamic_in_let(expr.span);
                        return;
                    }
                    current.dynamics.push((
                        expr,
                        Entry::Nested {
                            set: SetBuilder {
                                recursive: false,
                                statics: BTreeMap::new(),
                                dynamics: Vec::new(),
                            },
                            span,
                        },
                        span,
                    ));
                    let Some((_, Entry::Nested { set, .. }, _)) = current.dynamics.last_mut()
                    else {
                        return;
                    };
                    current = set;
                }
            }
        }
        match last {
            AttrName::Static {
                name,
                span: name_span,
            } => {
                let key: Bytes = crate::value::intern(name);
                self.binding_names.insert(value.span, key.clone());
                match current.statics.get_mut(&key) {
                    None => {
                        let entry = match &value.kind {
                            ExprKind::Attrs {
                                recursive,
                                bindings,
                            } => {
                                // attribute-set literals stay mergeable with later paths
                                let mut nested = SetBuilder {
                                    recursive: *recursive,
                                    statics: BTreeMap::new(),
                                    dynamics: Vec::new(),
                                };
                                self.add_bindings(&mut nested, bindings, false);
                                Entry::Nested {
                                    set: nested,
                                    span: *name_span,
                                }
                            }
                            _ => Entry::Value {
                                expr: value,
                                span: *name_span,
                            },
                        };
                        current.statics.insert(key, entry);
                    }
                    Some(existing) => {
                        let mergeable = matches!(existing, Entry::Nested { .. })
                            || matches!(existing, Entry::Value { expr, .. } if matches!(expr.kind, ExprKind::Attrs { .. }));
                        match (&value.kind, mergeable) {
                            (ExprKind::Attrs { bindings, .. }, true) => {
                                if let Entry::Value {
                                    expr,
                                    span: value_span,
                                } = existing
                                    && let ExprKind::Attrs {
                                        recursive,
                                        bindings: first_bindings,
                                    } = &expr.kind
                                {
                                    let mut nested = SetBuilder {
                                        recursive: *recursive,
                                        statics: BTreeMap::new(),
                                        dynamics: Vec::new(),
                                    };
                                    let value_span = *value_span;
                                    self.add_bindings(&mut nested, first_bindings, false);
                                    *existing = Entry::Nested {
                                        set: nested,
                                        span: value_span,
                                    };
                                }
                                if let Entry::Nested { set: nested, .. } = existing {
                                    // later Nix merges dynamic attributes too; 2.8 dropped them
                                    let mut incoming = SetBuilder {
                                        recursive: false,
                                        statics: BTreeMap::new(),
                                        dynamics: Vec::new(),
                                    };
                                    self.add_bindings(&mut incoming, bindings, false);
                                    self.merge_sets(nested, incoming);
                                }
                            }
                            _ => {
                                let first = existing.span();
                                self.duplicate(name, first, *name_span);
                            }
                        }
                    }
                }
            }
            AttrName::Dynamic(expr) => {
                if in_let {
                    self.dynamic_in_let(expr.span);
                    return;
                }
                current.dynamics.push((
                    expr,
                    Entry::Value {
                        expr: value,
                        span: expr.span,
                    },
                    span,
                ));
            }
        }
    }

    fn merge_sets<'e>(&mut self, into: &mut SetBuilder<'e>, from: SetBuilder<'e>) {
        for (name, entry) in from.statics {
            if let Some(existing) = into.statics.get(&name) {
                let first = existing.span();
                self.duplicate(&name, first, entry.span());
                continue;
            }
            into.statics.insert(name, entry);
        }
        into.dynamics.extend(from.dynamics);
    }

    fn dynamic_in_let(&mut self, span: Span) {
        self.error(
            Diagnostic::error(
                codes::DYNAMIC_ATTRIBUTE_NOT_ALLOWED,
                "dynamic attributes are not allowed in `let`",
            )
            .with_primary(span, "a name computed at evaluation time")
            .with_help("a `let` binds names known when the file is read; use an attribute set for computed names"),
        );
    }

    fn entry_value(&mut self, entry: Entry<'_>, name: &Bytes) -> (Rc<Ir>, Span, bool) {
        match entry {
            Entry::Value { expr, span } => {
                let ir = match &expr.kind {
                    ExprKind::Lambda { param, body } => {
                        let lambda = self.lambda(param, body, expr.span, Some(name.clone()));
                        node(IrKind::Lambda(lambda), expr.span)
                    }
                    _ => self.expr(expr),
                };
                (ir, span, false)
            }
            Entry::Nested { set, span } => (self.compile_set(set, span), span, false),
            Entry::Inherited {
                from: None,
                name,
                span,
            } => (self.variable(&name_text(&name), span), span, true),
            Entry::Inherited {
                from: Some(from),
                name,
                span,
            } => {
                let from = self.expr(from);
                (
                    select_node(from, Box::new([IrAttrName::Static(name)]), None, span),
                    span,
                    false,
                )
            }
        }
    }

    fn compile_set(&mut self, set: SetBuilder<'_>, span: Span) -> Rc<Ir> {
        let recursive = set.recursive;
        if recursive {
            let names = set
                .statics
                .keys()
                .enumerate()
                .map(|(slot, name)| (name.clone(), slot as u32))
                .collect();
            self.scopes.push(Scope::Frame(names));
        }
        let mut statics = Vec::with_capacity(set.statics.len());
        for (name, entry) in set.statics {
            let inherited_plain = matches!(entry, Entry::Inherited { from: None, .. });
            let (value, span, outer) = if recursive && inherited_plain {
                // `inherit x;` in `rec` looks outside the set
                let scope = self.scopes.pop();
                let result = self.entry_value(entry, &name);
                if let Some(scope) = scope {
                    self.scopes.push(scope);
                }
                result
            } else {
                self.entry_value(entry, &name)
            };
            statics.push(StaticAttrIr {
                name,
                value,
                span,
                outer,
            });
        }
        let mut dynamics = Vec::with_capacity(set.dynamics.len());
        for (name_expr, entry, span) in set.dynamics {
            let name = self.expr(name_expr);
            let (value, _, _) = self.entry_value(entry, &Rc::from(&b""[..]));
            dynamics.push(DynamicAttrIr { name, value, span });
        }
        if recursive {
            self.scopes.pop();
        }
        node(
            IrKind::Attrs(Rc::new(AttrsIr {
                recursive,
                order: fill_order(self.symbols, statics.iter().map(|attr| &*attr.name)),
                statics: statics.into_boxed_slice(),
                dynamics: dynamics.into_boxed_slice(),
            })),
            span,
        )
    }

    fn compile_let(&mut self, set: SetBuilder<'_>, body: &Expr, span: Span) -> Rc<Ir> {
        let order = fill_order(self.symbols, set.statics.keys().map(|name| &**name));
        let names = set
            .statics
            .keys()
            .enumerate()
            .map(|(slot, name)| (name.clone(), slot as u32))
            .collect();
        self.scopes.push(Scope::Frame(names));
        let mut bindings = Vec::with_capacity(set.statics.len());
        for (name, entry) in set.statics {
            let inherited_plain = matches!(entry, Entry::Inherited { from: None, .. });
            let (value, _, outer) = if inherited_plain {
                let scope = self.scopes.pop();
                let result = self.entry_value(entry, &name);
                if let Some(scope) = scope {
                    self.scopes.push(scope);
                }
                result
            } else {
                self.entry_value(entry, &name)
            };
            bindings.push(BindingIr { value, outer });
        }
        let body = self.expr(body);
        self.scopes.pop();
        node(
            IrKind::Let {
                bindings: bindings.into_boxed_slice(),
                order,
                body,
            },
            span,
        )
    }

    fn lambda(
        &mut self,
        param: &Param,
        body: &Expr,
        span: Span,
        name: Option<Bytes>,
    ) -> Rc<LambdaIr> {
        match param {
            Param::Identifier {
                name: parameter, ..
            } => {
                let mut names = HashMap::new();
                names.insert(Rc::from(parameter.as_bytes()), 0);
                self.scopes.push(Scope::Frame(names));
                let body = self.expr(body);
                self.scopes.pop();
                Rc::new(LambdaIr {
                    name,
                    parameter_name: Some(Rc::from(parameter.as_bytes())),
                    param: ParamIr::Identifier,
                    body,
                    span,
                    frame_size: 1,
                })
            }
            Param::Formals {
                formals,
                ellipsis,
                at,
            } => {
                let mut names: HashMap<Bytes, u32> = HashMap::new();
                let mut spans: HashMap<Bytes, Span> = HashMap::new();
                for (slot, formal) in formals.iter().enumerate() {
                    let key: Bytes = Rc::from(formal.name.as_bytes());
                    if let Some(first) = spans.get(&key) {
                        let first = *first;
                        self.duplicate_formal(&formal.name, first, formal.span);
                        continue;
                    }
                    spans.insert(key.clone(), formal.span);
                    names.insert(key, slot as u32);
                }
                if let Some((at_name, at_span)) = at {
                    let key: Bytes = Rc::from(at_name.as_bytes());
                    if let Some(first) = spans.get(&key) {
                        let first = *first;
                        self.duplicate_formal(at_name, first, *at_span);
                    } else {
                        names.insert(key, formals.len() as u32);
                    }
                }
                self.scopes.push(Scope::Frame(names));
                let compiled_formals = formals
                    .iter()
                    .map(|formal| FormalIr {
                        name: crate::value::intern(formal.name.as_bytes()),
                        span: formal.span,
                        default: formal.default.as_ref().map(|d| self.expr(d)),
                    })
                    .collect();
                let body = self.expr(body);
                self.scopes.pop();
                Rc::new(LambdaIr {
                    name,
                    parameter_name: at.as_ref().map(|(name, _)| Rc::from(name.as_bytes())),
                    param: ParamIr::Formals {
                        order: fill_order(
                            self.symbols,
                            formals.iter().map(|formal| formal.name.as_bytes()),
                        ),
                        formals: compiled_formals,
                        ellipsis: *ellipsis,
                        at: at.is_some(),
                    },
                    body,
                    span,
                    frame_size: formals.len() + usize::from(at.is_some()),
                })
            }
        }
    }

    fn duplicate_formal(&mut self, name: &str, first: Span, second: Span) {
        self.error(
            Diagnostic::error(
                codes::DUPLICATE_FORMAL,
                format!("function argument `{name}` is named twice"),
            )
            .with_primary(second, "named again here")
            .with_secondary(first, "first named here")
            .with_help("give each argument a different name"),
        );
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
        assert!(Rc::ptr_eq(selected, &attrs.statics[0].name));
        assert!(Rc::ptr_eq(selected, &crate::value::name("port")));
    }
}
