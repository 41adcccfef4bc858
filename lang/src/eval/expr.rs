//! The loop: evaluates one compiled expression in an environment to weak head
//! normal form, and `delay` stores one without evaluating it (no thunk for what is
//! already a value). Every evaluation step goes through `enter`/`leave`.

use std::rc::Rc;

use super::*;
use crate::codes;
use crate::compile::{self, AttrsIr, Ir, IrAttrName, IrKind};
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::span::Span;
use crate::value::{Attr, Attrs, Bytes, Closure, Env, EnvFrame, EvalResult, Thunk, Value};

impl Machine {
    /// A value to store without evaluating it (Nix's `maybeThunk`): constants and
    /// variables are shared, everything else is suspended.
    pub(crate) fn delay(&mut self, ir: &Rc<Ir>, env: &Env) -> Value {
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
                            if let Some(value) = attrs.get(name) {
                                return value.clone();
                            }
                        }
                        _ => break,
                    }
                }
                Thunk::suspended(ir.clone(), env.clone())
            }
            _ => Thunk::suspended(ir.clone(), env.clone()),
        }
    }

    pub fn eval(&mut self, ir: &Ir, env: &Env) -> EvalResult<Value> {
        self.enter(ir.span)?;
        let result = self.eval_inner(ir, env);
        self.leave();
        result
    }

    pub(super) fn eval_inner(&mut self, ir: &Ir, env: &Env) -> EvalResult<Value> {
        match &ir.kind {
            IrKind::Const(value) => Ok(value.clone()),
            // borrowed, not cloned: a thunk is forced in place, without a reference
            // count up and down per variable
            IrKind::Var { up, slot } => match lookup_ref(env, *up, *slot) {
                Some(Value::Thunk(thunk)) => self.force_thunk(thunk, ir.span),
                Some(value) => Ok(value.clone()),
                None => Err(self.infinite_recursion(usize::MAX, ir.span)),
            },
            IrKind::WithVar { name, withs } => self.with_lookup(name, withs, env, ir.span),
            IrKind::Select {
                expr,
                path,
                default,
            } => self.select(expr, path, default.as_ref(), env, ir.span),
            IrKind::HasAttr { expr, path } => {
                // as Nix: each set on the path is forced, the attribute found last is not
                let mut current = self.eval(expr, env)?;
                for (index, name) in path.iter().enumerate() {
                    if index > 0 {
                        current = self.force(&current, ir.span)?;
                    }
                    let name = self.attr_name(name, env)?;
                    let Value::Attrs(attrs) = &current else {
                        return Ok(Value::Bool(false));
                    };
                    match attrs.get(&name) {
                        Some(value) => current = value.clone(),
                        None => return Ok(Value::Bool(false)),
                    }
                }
                Ok(Value::Bool(true))
            }
            IrKind::Attrs(attrs) => self.attrs(attrs, env),
            IrKind::List(items) => {
                let values: Vec<Value> = items.iter().map(|item| self.delay(item, env)).collect();
                Ok(Value::List(Rc::from(values)))
            }
            IrKind::Let {
                bindings,
                order,
                body,
            } => {
                let frame = EnvFrame::empty(Some(env.clone()), bindings.len());
                for &slot in order.iter() {
                    let binding = &bindings[slot as usize];
                    let scope = if binding.outer { env } else { &frame };
                    let value = self.delay(&binding.value, scope);
                    frame.slots.set(slot as usize, value);
                }
                self.eval(body, &frame)
            }
            IrKind::With { namespace, body } => {
                let namespace = self.delay(namespace, env);
                let frame = EnvFrame::one(Some(env.clone()), namespace);
                self.eval(body, &frame)
            }
            IrKind::If {
                condition,
                then,
                otherwise,
            } => {
                let condition_value = self.eval(condition, env)?;
                match condition_value {
                    Value::Bool(true) => self.eval(then, env),
                    Value::Bool(false) => self.eval(otherwise, env),
                    other => Err(type_error(
                        "a Boolean",
                        &other,
                        condition.span,
                        "the condition of `if`",
                    )),
                }
            }
            IrKind::Assert { condition, body } => {
                let condition_value = self.eval(condition, env)?;
                match condition_value {
                    Value::Bool(true) => self.eval(body, env),
                    Value::Bool(false) => Err(error(
                        codes::ASSERTION_FAILED,
                        "assertion failed",
                        condition.span,
                        "this is false",
                        "the assertion states a condition the inputs must meet; fix the inputs or the condition",
                    )),
                    other => Err(type_error(
                        "a Boolean",
                        &other,
                        condition.span,
                        "the condition of `assert`",
                    )),
                }
            }
            IrKind::Lambda(lambda) => Ok(Value::Lambda(Rc::new(Closure {
                lambda: lambda.clone(),
                env: env.clone(),
            }))),
            IrKind::Call {
                function,
                arguments,
            } => {
                let mut result = self.eval(function, env)?;
                for argument in arguments.iter() {
                    let argument = self.delay(argument, env);
                    result = self.call(result, argument, ir.span)?;
                }
                Ok(result)
            }
            IrKind::Not(inner) => match self.eval(inner, env)? {
                Value::Bool(value) => Ok(Value::Bool(!value)),
                other => Err(type_error(
                    "a Boolean",
                    &other,
                    inner.span,
                    "the operand of `!`",
                )),
            },
            IrKind::Binary { op, left, right } => self.binary(*op, left, right, env, ir.span),
            IrKind::Interpolate(parts) => {
                let mut result = Vec::new();
                for part in parts.iter() {
                    let value = self.eval(part, env)?;
                    self.coerce_to_string_into(&value, part.span, false, true, &mut result)?;
                }
                self.make_string(result.len(), ir.span)?;
                Ok(Value::String(Rc::from(result)))
            }
            IrKind::CurrentPosition => Ok(self.position_value(ir.span)),
            IrKind::PathConcat(parts) => {
                let mut result = Vec::new();
                for part in parts.iter() {
                    let value = self.eval(part, env)?;
                    self.coerce_to_string_into(&value, part.span, false, false, &mut result)?;
                }
                Ok(Value::Path(Rc::from(compile::canonical_path(&result))))
            }
        }
    }

    pub(super) fn with_lookup(
        &mut self,
        name: &Bytes,
        withs: &[u32],
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        let mut searched = Vec::new();
        for up in withs {
            let Some(namespace) = lookup_ref(env, *up, 0) else {
                continue;
            };
            let namespace = self.force(namespace, span)?;
            let Value::Attrs(attrs) = namespace else {
                return Err(type_error(
                    "a set",
                    &namespace,
                    span,
                    "the namespace of `with`",
                ));
            };
            if let Some(value) = attrs.get(name) {
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

    pub(crate) fn attr_name(&mut self, name: &IrAttrName, env: &Env) -> EvalResult<Bytes> {
        match name {
            IrAttrName::Static(name) => Ok(name.clone()),
            IrAttrName::Dynamic(expr) => {
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
        let mut current = self.eval(expr, env)?;
        let mut current_span = expr.span;
        for (index, name) in path.iter().enumerate() {
            let name = self.attr_name(name, env)?;
            let attrs = match &current {
                Value::Attrs(attrs) => attrs.clone(),
                other => {
                    if let Some(default) = default {
                        return self.eval(default, env);
                    }
                    let text = String::from_utf8_lossy(&name);
                    return Err(type_error(
                        "a set",
                        other,
                        current_span,
                        &format!("cannot select attribute `{text}`"),
                    ));
                }
            };
            match attrs.get(&name) {
                Some(value) => {
                    current = self.force(value, span)?;
                    current_span = span;
                }
                None => {
                    if let Some(default) = default {
                        return self.eval(default, env);
                    }
                    return Err(self.missing_attribute(&attrs, &name, path, index, span));
                }
            }
        }
        Ok(current)
    }

    pub(super) fn attrs(&mut self, ir: &AttrsIr, env: &Env) -> EvalResult<Value> {
        let scope = if ir.recursive {
            EnvFrame::empty(Some(env.clone()), ir.statics.len())
        } else {
            env.clone()
        };
        let mut entries = Vec::with_capacity(ir.statics.len() + ir.dynamics.len());
        if ir.recursive {
            // the frame is filled in symbol order, as Nix fills it
            let mut values: Vec<Option<Value>> = vec![None; ir.statics.len()];
            for &slot in ir.order.iter() {
                let attr = &ir.statics[slot as usize];
                let value_env = if attr.outer { env } else { &scope };
                let value = self.delay(&attr.value, value_env);
                scope.slots.set(slot as usize, value.clone());
                values[slot as usize] = Some(value);
            }
            for (attr, value) in ir.statics.iter().zip(values) {
                entries.push(Attr {
                    name: attr.name.clone(),
                    value: value.unwrap_or(Value::Null),
                    span: Some(attr.span),
                });
            }
        } else {
            for attr in ir.statics.iter() {
                entries.push(Attr {
                    name: attr.name.clone(),
                    value: self.delay(&attr.value, env),
                    span: Some(attr.span),
                });
            }
        }
        let mut attrs = Attrs::from_sorted(entries);
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
            if let Some(existing) = attrs.get_attr(&name) {
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
            attrs.insert(Attr {
                name,
                value,
                span: Some(dynamic.span),
            });
        }
        Ok(Value::Attrs(Rc::new(attrs)))
    }
}

/// Reads slot `slot` of the frame `up` levels out.
#[inline]
pub(crate) fn lookup(env: &Env, up: u32, slot: u32) -> Option<Value> {
    lookup_ref(env, up, slot).cloned()
}

/// The value in `slot` of the frame `up` levels out; frames are filled once, so
/// the reference lives as long as `env`.
#[inline]
pub(super) fn lookup_ref(env: &Env, up: u32, slot: u32) -> Option<&Value> {
    let mut frame = env;
    for _ in 0..up {
        frame = frame.parent.as_ref()?;
    }
    frame.slots.get(slot as usize)
}
