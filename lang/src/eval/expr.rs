//! The loop: evaluates one compiled expression in an environment to weak head
//! normal form, and `delay` stores one without evaluating it (no thunk for what is
//! already a value, nor for arithmetic on integers already there; `delay_bound` also
//! makes a literal list or plain set bound by `let` or passed to a function). Every
//! step but a leaf (constant, variable) goes through `enter`/`leave`.

use std::rc::Rc;

use super::*;
use crate::codes;
use crate::compile::{self, AttrsIr, BindingIr, DeferredIr, Ir, IrAttrName, IrKind, Operator};
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::span::Span;
use crate::value::{
    Attr, Attrs, Bytes, Closure, Env, EnvFrame, EvalResult, Name, Thunk, ThunkState, Value,
};

impl Machine {
    /// A value to store without evaluating it (Nix's `maybeThunk`): constants and
    /// variables are shared, everything else is suspended.
    pub(crate) fn delay(&mut self, ir: &Rc<Ir>, env: &Env) -> Value {
        self.delay_at(ir, env, 0)
    }

    /// [`Machine::delay`] of a value bound by `let` or passed to a function, which
    /// is almost always used: a literal list or plain set is made at once (two
    /// levels deep), not suspended. A literal inside a set or list is not: a set of
    /// data (an inventory of 10,000 nodes) is often read in part.
    pub(crate) fn delay_bound(&mut self, ir: &Rc<Ir>, env: &Env) -> Value {
        self.delay_at(ir, env, BOUND_DEPTH)
    }

    /// [`Machine::delay`], making literals at once down to `depth` levels of
    /// nesting; deeper ones are suspended, so that this never recurses without
    /// bound.
    fn delay_at(&mut self, ir: &Rc<Ir>, env: &Env, depth: u32) -> Value {
        match &ir.kind {
            IrKind::Const(value) => value.clone(),
            IrKind::Var { up, slot } => match lookup(env, *up, *slot) {
                Some(value) => value,
                None => Thunk::suspended(ir.clone(), env.clone()),
            },
            IrKind::Lambda(lambda) => Value::Lambda(Rc::new(Closure {
                lambda: lambda.clone(),
                env: env.clone(),
            })),
            IrKind::WithVar { name, withs } => {
                for up in withs.iter() {
                    let Some(namespace) = lookup(env, *up, 0) else {
                        break;
                    };
                    let namespace = match namespace {
                        Value::Thunk(thunk) => match thunk.value() {
                            Some(value) => value,
                            None => break,
                        },
                        other => other,
                    };
                    match namespace {
                        Value::Attrs(attrs) => {
                            // Nix suspends a `with` variable: its value is copied
                            // into a slot of its own
                            if let Some(value) = attrs.get(*name) {
                                return super::force::fresh_slot(value.clone());
                            }
                        }
                        _ => break,
                    }
                }
                Thunk::suspended(ir.clone(), env.clone())
            }
            IrKind::Binary { op, left, right } => match eager_arithmetic(*op, left, right, env) {
                Some(value) => value,
                None => Thunk::suspended(ir.clone(), env.clone()),
            },
            IrKind::Select { expr, path, .. } => match evaluated_select(expr, path, env) {
                // the copy forcing Nix's thunk of the selection would make
                Some(value) => super::force::fresh_slot(value),
                None => Thunk::suspended(ir.clone(), env.clone()),
            },
            IrKind::List(items) if depth > 0 && constructible(ir, env) => {
                self.list_at(items, env, depth - 1)
            }
            IrKind::Attrs(attrs) if depth > 0 && constructible(ir, env) => {
                Value::Attrs(Attrs::from_sorted(self.plain_attrs(attrs, env, depth - 1)))
            }
            _ => Thunk::suspended(ir.clone(), env.clone()),
        }
    }

    /// A list's elements delayed (literals among them made down to `depth`): one
    /// allocation, a slice mapped is of known length.
    #[inline]
    fn list_at(&mut self, items: &[Rc<Ir>], env: &Env, depth: u32) -> Value {
        Value::List(
            items
                .iter()
                .map(|item| self.delay_at(item, env, depth))
                .collect(),
        )
    }

    /// The static attributes of a set without `rec`, their values delayed
    /// (literals among them made down to `depth`), in name order; with room for
    /// the dynamic ones.
    #[inline]
    fn plain_attrs(&mut self, ir: &AttrsIr, env: &Env, depth: u32) -> Vec<Attr> {
        let mut entries = Vec::with_capacity(ir.statics.len() + ir.dynamics.len());
        entries.extend(ir.statics.iter().map(|attr| Attr {
            name: attr.name,
            value: self.delay_at(&attr.value, env, depth),
            span: Some(attr.span),
        }));
        entries
    }

    pub fn eval(&mut self, ir: &Ir, env: &Env) -> EvalResult<Value> {
        // leaves take no step and no depth: they recurse into nothing (a variable's
        // thunk is forced by `force_thunk`, whose evaluation enters)
        match &ir.kind {
            IrKind::Const(value) => return Ok(value.clone()),
            IrKind::Var { up, slot } => return self.variable(*up, *slot, env, ir.span),
            _ => {}
        }
        self.enter(ir.span)?;
        let result = self.eval_inner(ir, env);
        self.leave();
        result
    }

    #[inline]
    fn variable(&mut self, up: u32, slot: u32, env: &Env, span: Span) -> EvalResult<Value> {
        // borrowed, not cloned: a thunk is forced in place, without a reference
        // count up and down per variable
        match lookup_ref(env, up, slot).as_deref() {
            Some(Value::Thunk(thunk)) => self.force_thunk(thunk, span),
            Some(value) => Ok(value.clone()),
            None => Err(self.infinite_recursion(usize::MAX, span)),
        }
    }

    /// One step of [`Machine::eval`]. The branches of `if` and the body of `assert`
    /// are evaluated in the same step (a loop, not a call); the arms that are rare or
    /// large live in functions of their own, so that this one's frame stays small.
    /// Not inlined into [`Machine::eval`]: a constant or variable (half of all
    /// nodes) then returns without setting up this function's large frame (5%
    /// fewer instructions on every program of bench/lang).
    #[inline(never)]
    fn eval_inner(&mut self, mut ir: &Ir, env: &Env) -> EvalResult<Value> {
        loop {
            match &ir.kind {
                IrKind::Const(value) => return Ok(value.clone()),
                IrKind::Var { up, slot } => return self.variable(*up, *slot, env, ir.span),
                IrKind::WithVar { name, withs } => {
                    return self.with_lookup(name, withs, env, ir.span);
                }
                IrKind::Select {
                    expr,
                    path,
                    default,
                } => return self.select(expr, path, default.as_ref(), env, ir.span),
                IrKind::HasAttr { expr, path } => return self.has_attr(expr, path, env, ir.span),
                IrKind::Attrs(attrs) => return self.attrs(attrs, env),
                IrKind::List(items) => return Ok(self.list(items, env)),
                IrKind::Let {
                    bindings,
                    order,
                    body,
                } => return self.let_in(bindings, order, body, env),
                IrKind::With { namespace, body } => {
                    let namespace = self.delay(namespace, env);
                    let frame = EnvFrame::one(Some(env.clone()), namespace);
                    return self.eval(body, &frame);
                }
                IrKind::If {
                    condition,
                    then,
                    otherwise,
                } => match self.eval(condition, env)? {
                    Value::Bool(true) => ir = then,
                    Value::Bool(false) => ir = otherwise,
                    other => return Err(condition_error(&other, condition.span, "if")),
                },
                IrKind::Assert { condition, body } => match self.eval(condition, env)? {
                    Value::Bool(true) => ir = body,
                    other => return Err(assertion_error(&other, condition.span)),
                },
                IrKind::Lambda(lambda) => {
                    return Ok(Value::Lambda(Rc::new(Closure {
                        lambda: lambda.clone(),
                        env: env.clone(),
                    })));
                }
                IrKind::Call {
                    function,
                    arguments,
                } => return self.call_ir(function, arguments, env, ir.span),
                IrKind::Not(inner) => {
                    return match self.eval(inner, env)? {
                        Value::Bool(value) => Ok(Value::Bool(!value)),
                        other => Err(type_error(
                            "a Boolean",
                            &other,
                            inner.span,
                            "the operand of `!`",
                        )),
                    };
                }
                IrKind::Binary { op, left, right } => {
                    return self.binary(*op, left, right, env, ir.span);
                }
                IrKind::Interpolate(parts) => return self.interpolate(parts, env, ir.span),
                IrKind::CurrentPosition => return Ok(self.position_value(ir.span)),
                IrKind::PathConcat(parts) => return self.path_concat(parts, env),
                // lowered in the same step: plain data takes no more steps or depth
                // for having been deferred
                IrKind::Deferred(deferred) => ir = self.lowered(deferred, ir.span)?,
            }
        }
    }

    /// The code of a deferred value, lowered the first time it is asked for.
    #[inline(never)]
    fn lowered<'d>(&mut self, deferred: &'d DeferredIr, span: Span) -> EvalResult<&'d Ir> {
        if let Some(ir) = deferred.get() {
            return Ok(ir);
        }
        match deferred.lower(span, &*self.globals, &self.symbols) {
            Some(lowered) => {
                self.binding_names.extend(lowered.binding_names);
                self.reference_names.extend(lowered.reference_names);
                Ok(lowered.ir)
            }
            None => Err(Box::new(
                Diagnostic::bug("a deferred value could not be lowered")
                    .with_primary(span, "this value"),
            )),
        }
    }

    fn call_ir(
        &mut self,
        function: &Ir,
        arguments: &[Rc<Ir>],
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        let mut result = self.eval(function, env)?;
        let mut rest = arguments;
        // a built-in given all its arguments at once (`builtins.elem x xs`,
        // `foldl' f z xs`) is called with them: no partial application is made and
        // copied per argument, which is what calling it one argument at a time does
        if let Value::PrimOp(primop) = &result
            && primop.arity >= 2
            && rest.len() >= primop.arity
        {
            let primop = primop.clone();
            let (now, after) = rest.split_at(primop.arity);
            result = match now {
                [first, second] => {
                    let given = [self.delay_bound(first, env), self.delay_bound(second, env)];
                    self.call_primop(&primop, &given, span)?
                }
                [first, second, third] => {
                    let given = [
                        self.delay_bound(first, env),
                        self.delay_bound(second, env),
                        self.delay_bound(third, env),
                    ];
                    self.call_primop(&primop, &given, span)?
                }
                _ => {
                    let given: Vec<Value> =
                        now.iter().map(|ir| self.delay_bound(ir, env)).collect();
                    self.call_primop(&primop, &given, span)?
                }
            };
            rest = after;
        }
        // `f a b` of `a: b: body` makes no closure for `b: body`
        if let [first, second, after @ ..] = rest {
            let first = self.delay_bound(first, env);
            let second = self.delay_bound(second, env);
            result = self.call_curried(&result, first, second, span)?;
            rest = after;
        }
        for argument in rest.iter() {
            let argument = self.delay_bound(argument, env);
            result = self.call(result, argument, span)?;
        }
        Ok(result)
    }

    #[inline(never)]
    fn has_attr(
        &mut self,
        expr: &Ir,
        path: &[IrAttrName],
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        // as Nix: each set on the path is forced, the attribute found last is not;
        // names and values are borrowed, not copied
        let mut current = self.eval(expr, env)?;
        for (index, name) in path.iter().enumerate() {
            let key = self.attr_key(name, env)?;
            let Value::Attrs(attrs) = &current else {
                return Ok(Value::Bool(false));
            };
            let Some(value) = key.find(attrs) else {
                return Ok(Value::Bool(false));
            };
            if index + 1 == path.len() {
                break;
            }
            let next = self.force(value, span)?;
            current = next;
        }
        Ok(Value::Bool(true))
    }

    fn list(&mut self, items: &[Rc<Ir>], env: &Env) -> Value {
        self.list_at(items, env, 0)
    }

    fn let_in(
        &mut self,
        bindings: &[BindingIr],
        order: &[u32],
        body: &Ir,
        env: &Env,
    ) -> EvalResult<Value> {
        let frame = EnvFrame::empty(Some(env.clone()), bindings.len());
        self.reclaim.record(&frame);
        for &slot in order.iter() {
            let binding = &bindings[slot as usize];
            let scope = if binding.outer { env } else { &frame };
            let value = self.delay_bound(&binding.value, scope);
            frame.slots.set(slot as usize, value);
        }
        self.eval(body, &frame)
    }

    #[inline(never)]
    fn interpolate(&mut self, parts: &[Rc<Ir>], env: &Env, span: Span) -> EvalResult<Value> {
        // room for the usual line of text: most interpolations never grow the buffer
        let mut result = self.string_buffer();
        result.reserve(64);
        // a string part's bytes are counted against the memory bound before they
        // are written (`"${s}${s}"` doubled in a loop); the rest, and the steps of
        // the whole, when the string is made
        let mut counted = 0;
        for part in parts.iter() {
            if let Err(error) = self.interpolate_part(part, env, span, &mut result, &mut counted) {
                // the string is not made: what its parts counted is given back,
                // but the bytes copied were work done, and their steps count (a
                // failing interpolation retried under `tryEval` ends at the budget)
                self.give_back(counted);
                self.write_string(result.len(), span)?;
                return Err(error);
            }
        }
        self.allocate(result.len() - counted, span)?;
        self.write_string(result.len(), span)?;
        Ok(self.finish_string(result))
    }

    /// One part of an interpolation written into `out`; a string's bytes counted
    /// (into `counted`) before they are copied.
    #[inline]
    fn interpolate_part(
        &mut self,
        part: &Rc<Ir>,
        env: &Env,
        span: Span,
        out: &mut Vec<u8>,
        counted: &mut usize,
    ) -> EvalResult<()> {
        if let Some(argument) = to_string_argument(part) {
            return self.interpolate_to_string(argument, env, (part.span, span), out, counted);
        }
        let value = self.eval(part, env)?;
        if let Value::String(text) = &value {
            self.allocate(text.len(), span)?;
            *counted += text.len();
            out.extend_from_slice(text);
            return Ok(());
        }
        self.coerce_to_string_into(&value, part.span, false, true, out)
    }

    /// `${toString x}`: x's text written into the string being built, as the call
    /// would make it (the same forcing, spans and steps), without the call and the
    /// string it would make.
    fn interpolate_to_string(
        &mut self,
        argument: &Rc<Ir>,
        env: &Env,
        (span, whole): (Span, Span),
        out: &mut Vec<u8>,
        counted: &mut usize,
    ) -> EvalResult<()> {
        // the steps of the call's evaluation and of the builtin's
        self.enter(span)?;
        if let Err(error) = self.enter(span) {
            self.leave();
            return Err(error);
        }
        // a variable or constant is forced where the builtin forces it (at the
        // call); anything else would be a thunk of its own, evaluated here instead
        let value = match &argument.kind {
            IrKind::Const(_) | IrKind::Var { .. } => Ok(self.delay(argument, env)),
            _ => self.eval(argument, env),
        };
        // a string or an integer (most of what is interpolated) is written in
        // place, a string counted first as the interpolation's string parts are;
        // anything else, and a thunk, as `toString` coerces it
        let result = value.and_then(|value| match &value {
            Value::String(text) => {
                self.allocate(text.len(), whole)?;
                *counted += text.len();
                out.extend_from_slice(text);
                Ok(())
            }
            Value::Int(number) => {
                super::coerce::push_decimal(out, *number);
                Ok(())
            }
            _ => self.coerce_to_string_into(&value, span, true, false, out),
        });
        self.leave();
        self.leave();
        result
    }

    #[inline(never)]
    fn path_concat(&mut self, parts: &[Rc<Ir>], env: &Env) -> EvalResult<Value> {
        let mut result = Vec::new();
        for part in parts.iter() {
            let value = self.eval(part, env)?;
            self.coerce_to_string_into(&value, part.span, false, false, &mut result)?;
        }
        Ok(Value::Path(Bytes::from(compile::canonical_path(&result))))
    }

    pub(super) fn with_lookup(
        &mut self,
        name: &Name,
        withs: &[u32],
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        let mut searched = Vec::new();
        for up in withs {
            let Some(namespace) = lookup_ref(env, *up, 0) else {
                continue;
            };
            let namespace = self.force(&namespace, span)?;
            let Value::Attrs(attrs) = namespace else {
                return Err(type_error(
                    "a set",
                    &namespace,
                    span,
                    "the namespace of `with`",
                ));
            };
            if let Some(value) = attrs.get(*name) {
                return self.force(value, span);
            }
            searched.push(attrs);
        }
        let text = String::from_utf8_lossy(name).into_owned();
        let candidates: Vec<String> = searched
            .iter()
            .flat_map(|attrs| {
                attrs
                    .iter()
                    .map(|a| String::from_utf8_lossy(&a.name).into_owned())
            })
            .collect();
        let help =
            did_you_mean(&text, candidates.iter().map(String::as_str)).unwrap_or_else(|| {
                format!("`{text}` is neither bound here nor an attribute of the `with` namespaces")
            });
        Err(error(
            codes::UNDEFINED_VARIABLE,
            format!("undefined variable `{text}`"),
            span,
            "not bound here nor in any `with` namespace",
            help,
        ))
    }

    /// The name of one step of an attribute path: a static name as written, a
    /// dynamic one evaluated to its string.
    #[inline]
    pub(crate) fn attr_key(&mut self, name: &IrAttrName, env: &Env) -> EvalResult<Key> {
        match name {
            IrAttrName::Static(name) => Ok(Key::Name(*name)),
            IrAttrName::Dynamic(expr) => self.dynamic_attr_name(expr, env).map(Key::Text),
        }
    }

    pub(crate) fn dynamic_attr_name(&mut self, expr: &Ir, env: &Env) -> EvalResult<Bytes> {
        let value = self.eval(expr, env)?;
        match value {
            Value::String(bytes) => Ok(bytes),
            other => Err(type_error(
                "a string",
                &other,
                expr.span,
                "an attribute name",
            )),
        }
    }

    pub(super) fn select(
        &mut self,
        expr: &Rc<Ir>,
        path: &[IrAttrName],
        default: Option<&Rc<Ir>>,
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        // `x.name` of a set already in a variable (or in the variable's evaluated
        // thunk): borrowed, the set not copied
        if let IrKind::Var { up, slot } = &expr.kind
            && let [IrAttrName::Static(name)] = path
            && let Some(variable) = lookup_ref(env, *up, *slot)
        {
            let found = match &*variable {
                Value::Attrs(attrs) => match attrs.get(*name) {
                    Some(value) => return self.force(value, span),
                    None => None,
                },
                // a thunk being forced is borrowed: its value is not there yet
                Value::Thunk(thunk) => match thunk.state.try_borrow().as_deref() {
                    Ok(ThunkState::Done(Value::Attrs(attrs))) => attrs.get(*name).cloned(),
                    _ => None,
                },
                _ => None,
            };
            drop(variable);
            if let Some(value) = found {
                return self.force(&value, span);
            }
        }
        self.select_path(expr, path, default, env, span)
    }

    /// [`Machine::select`] past its fast path: a longer path, a missing name, a set
    /// still to evaluate. Kept apart so that the fast path's frame stays small.
    #[inline(never)]
    fn select_path(
        &mut self,
        expr: &Rc<Ir>,
        path: &[IrAttrName],
        default: Option<&Rc<Ir>>,
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        // `x.a.b` of a set already in a variable: the set borrowed, not copied
        let mut start = 0;
        let mut current_span = expr.span;
        let mut current = if let IrKind::Var { up, slot } = &expr.kind
            && path.len() > 1
            && let Some(IrAttrName::Static(name)) = path.first()
            && let Some(variable) = lookup_ref(env, *up, *slot)
            && let Value::Attrs(attrs) = &*variable
            && let Some(value) = attrs.get(*name)
        {
            let value = self.force(value, span)?;
            start = 1;
            current_span = span;
            value
        } else {
            self.eval(expr, env)?
        };
        for (index, name) in path.iter().enumerate().skip(start) {
            let key = self.attr_key(name, env)?;
            let name = key.bytes();
            // the value found is forced in place, not cloned first
            let next = match &current {
                Value::Attrs(attrs) => match key.find(attrs) {
                    Some(value) => self.force(value, span)?,
                    None => {
                        if let Some(default) = default {
                            return self.eval(default, env);
                        }
                        return Err(self.missing_attribute(attrs, name, path, index, span));
                    }
                },
                other => {
                    if let Some(default) = default {
                        return self.eval(default, env);
                    }
                    let text = String::from_utf8_lossy(name);
                    return Err(type_error(
                        "a set",
                        other,
                        current_span,
                        &format!("cannot select attribute `{text}`"),
                    ));
                }
            };
            current = next;
            current_span = span;
        }
        Ok(current)
    }

    pub(super) fn attrs(&mut self, ir: &AttrsIr, env: &Env) -> EvalResult<Value> {
        let scope = if ir.recursive {
            let frame = EnvFrame::empty(Some(env.clone()), ir.statics.len());
            self.reclaim.record(&frame);
            frame
        } else {
            env.clone()
        };
        let entries = if ir.recursive {
            // the frame is filled in symbol order, as Nix fills it; the attributes
            // are in slot order, each value put in place as its slot is filled
            let mut entries = Vec::with_capacity(ir.statics.len() + ir.dynamics.len());
            entries.extend(ir.statics.iter().map(|attr| Attr {
                name: attr.name,
                value: Value::Null,
                span: Some(attr.span),
            }));
            for &slot in ir.order.iter() {
                let attr = &ir.statics[slot as usize];
                let value_env = if attr.outer { env } else { &scope };
                let value = self.delay(&attr.value, value_env);
                scope.slots.set(slot as usize, value.clone());
                if let Some(entry) = entries.get_mut(slot as usize) {
                    entry.value = value;
                }
            }
            entries
        } else if ir.dynamics.is_empty() {
            return Ok(Value::Attrs(Attrs::from_sorted(
                self.plain_attrs(ir, env, 0),
            )));
        } else {
            self.plain_attrs(ir, env, 0)
        };
        // the statics are sorted and unique; a dynamic name is checked against them
        // and the dynamic names before it, in the order they are evaluated
        let statics = entries.len();
        let mut entries = entries;
        for dynamic in ir.dynamics.iter() {
            let name = self.eval(&dynamic.name, &scope)?;
            let name = match name {
                Value::Null => continue,
                Value::String(bytes) => bytes,
                other => {
                    return Err(type_error(
                        "a string",
                        &other,
                        dynamic.name.span,
                        "an attribute name",
                    ));
                }
            };
            let name = Name::new(&name);
            let (sorted, added) = entries.split_at(statics);
            let existing = Attrs::find_sorted(sorted, name)
                .or_else(|| added.iter().find(|attr| attr.name == name));
            if let Some(existing) = existing {
                let text = String::from_utf8_lossy(&name);
                let mut diagnostic = Diagnostic::error(
                    codes::DUPLICATE_ATTRIBUTE,
                    format!("attribute `{text}` is defined twice"),
                )
                .with_primary(dynamic.name.span, "defined again here")
                .with_help("remove one of the definitions");
                if let Some(first) = existing.span {
                    diagnostic = diagnostic.with_secondary(first, "first defined here");
                }
                return Err(Box::new(diagnostic));
            }
            let value = self.delay(&dynamic.value, &scope);
            entries.push(Attr {
                name,
                value,
                span: Some(dynamic.span),
            });
        }
        Ok(Value::Attrs(Attrs::from_unsorted(entries)))
    }
}

/// One step of an attribute path, evaluated: a name written in the code (found
/// by address) or a computed string (found by its bytes).
pub(crate) enum Key {
    Name(Name),
    Text(Bytes),
}

impl Key {
    #[inline]
    pub(crate) fn find<'a>(&self, attrs: &'a Attrs) -> Option<&'a Value> {
        match self {
            Key::Name(name) => attrs.get(*name),
            Key::Text(text) => attrs.get(text),
        }
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Key::Name(name) => name.as_bytes(),
            Key::Text(text) => text,
        }
    }
}

/// Reads slot `slot` of the frame `up` levels out.
#[inline]
pub(crate) fn lookup(env: &Env, up: u32, slot: u32) -> Option<Value> {
    lookup_ref(env, up, slot).map(|value| value.clone())
}

/// The value in `slot` of the frame `up` levels out; frames are filled once, so
/// the reference lives as long as `env`.
#[inline]
pub(super) fn lookup_ref(env: &Env, up: u32, slot: u32) -> Option<std::cell::Ref<'_, Value>> {
    let mut frame = env;
    for _ in 0..up {
        frame = frame.parent.as_ref()?;
    }
    frame.slots.get(slot as usize)
}

/// How deep [`Machine::delay_bound`] makes a literal of literals at once.
const BOUND_DEPTH: u32 = 2;

/// A list, or a set without `rec` and dynamic names, whose making now gives what
/// making it when forced would: it evaluates nothing and cannot fail, and no
/// variable it shares is still unfilled (a slot filled later would be shared
/// then, and suspended now).
fn constructible(ir: &Ir, env: &Env) -> bool {
    let ready = |item: &Ir| match &item.kind {
        IrKind::Var { up, slot } => lookup_ref(env, *up, *slot).is_some(),
        _ => true,
    };
    match &ir.kind {
        IrKind::List(items) => items.iter().all(|item| ready(item)),
        IrKind::Attrs(attrs) => {
            !attrs.recursive
                && attrs.dynamics.is_empty()
                && attrs.statics.iter().all(|attr| ready(&attr.value))
        }
        _ => false,
    }
}

/// An operand already evaluated: a constant, or a variable whose value (or whose
/// thunk's value) is there. Forces nothing. Always inlined: where the compiler
/// chose not to (a change elsewhere in the crate moves its choices), every `n - 1`
/// of a recursive function paid a call (fib +2.6% instructions).
#[inline(always)]
fn evaluated(ir: &Ir, env: &Env) -> Option<Value> {
    match &ir.kind {
        IrKind::Const(value) => Some(value.clone()),
        IrKind::Var { up, slot } => match &*lookup_ref(env, *up, *slot)? {
            Value::Thunk(thunk) => thunk.value(),
            value => Some(value.clone()),
        },
        _ => None,
    }
}

/// `x.a.b` (or `inherit (x) a;`) where `x` and every attribute on the path are
/// already there and evaluated: the value is shared instead of suspended, since
/// forcing the selection would give it back and nothing else (a missing name, a
/// value still to evaluate, a dynamic name give `None`: they stay lazy).
#[inline]
fn evaluated_select(expr: &Ir, path: &[IrAttrName], env: &Env) -> Option<Value> {
    let mut current = evaluated(expr, env)?;
    for name in path {
        let IrAttrName::Static(name) = name else {
            return None;
        };
        let Value::Attrs(attrs) = &current else {
            return None;
        };
        let next = match attrs.get(*name)? {
            Value::Thunk(thunk) => thunk.value()?,
            value => value.clone(),
        };
        current = next;
    }
    Some(current)
}

/// `n - 1` of two integers already evaluated, computed instead of suspended: it
/// cannot fail (an overflow is left to the thunk, which reports it when forced),
/// has no effect and takes no time, so laziness is not observable. Anything else
/// (floats, strings, operands still to evaluate) gives `None`.
#[inline]
fn eager_arithmetic(op: Operator, left: &Ir, right: &Ir, env: &Env) -> Option<Value> {
    if matches!(
        op,
        Operator::And | Operator::Or | Operator::Implies | Operator::Divide
    ) {
        return None;
    }
    let Value::Int(left) = evaluated(left, env)? else {
        return None;
    };
    let Value::Int(right) = evaluated(right, env)? else {
        return None;
    };
    super::operators::int_operation(op, left, right)
}

/// The argument of a part `toString x` (the builtin itself, not a binding named so).
#[inline]
fn to_string_argument(part: &Ir) -> Option<&Rc<Ir>> {
    let IrKind::Call {
        function,
        arguments,
    } = &part.kind
    else {
        return None;
    };
    let (IrKind::Const(Value::PrimOp(primop)), [argument]) = (&function.kind, &arguments[..])
    else {
        return None;
    };
    (primop.name == "toString" && matches!(primop.function, crate::value::PrimFunction::Builtin(_)))
        .then_some(argument)
}

#[cold]
fn condition_error(found: &Value, span: Span, keyword: &str) -> Box<Diagnostic> {
    type_error(
        "a Boolean",
        found,
        span,
        &format!("the condition of `{keyword}`"),
    )
}

#[cold]
fn assertion_error(found: &Value, span: Span) -> Box<Diagnostic> {
    match found {
        Value::Bool(false) => error(
            codes::ASSERTION_FAILED,
            "assertion failed",
            span,
            "this is false",
            "the assertion states a condition the inputs must meet; fix the inputs or the condition",
        ),
        other => condition_error(other, span, "assert"),
    }
}
