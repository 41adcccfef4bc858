//! Calls computed without calling: a function `x: body` (or `a: b: body`) whose body
//! is integer arithmetic, comparison, `if` and Boolean logic over its arguments,
//! constants and values already evaluated gives its result here, with no frame, no
//! thunk and no step. Anything that could fail, force a thunk or have an effect (a
//! call, an overflow, a division by zero, a missing attribute, a thunk still to
//! evaluate) gives `None`, and the caller makes the real call; so computing it now
//! rather than when Nix would is not observable. Results are integers or Booleans
//! only (no list or set, whose identity decides `«repeated»`).

use std::cell::Ref;

use super::expr::lookup_ref;
use crate::compile::{Ir, IrAttrName, IrKind, LambdaIr, Operator, ParamIr};
use crate::value::{Env, ThunkState, Value};

/// How deep an expression is walked before giving up (the real call handles the
/// rest): bounds the recursion, whatever the code.
const MAX_DEPTH: u32 = 16;

/// A function of one identifier argument, checked once for many calls.
pub(crate) struct Pure1<'a> {
    body: &'a Ir,
    env: &'a Env,
}

impl<'a> Pure1<'a> {
    /// `Some` for a lambda `x: body` (not one with formals, nor a builtin).
    pub(crate) fn new(function: &'a Value) -> Option<Pure1<'a>> {
        let Value::Lambda(closure) = function else {
            return None;
        };
        let ParamIr::Identifier = closure.lambda.param else {
            return None;
        };
        Some(Pure1 {
            body: &closure.lambda.body,
            env: &closure.env,
        })
    }

    /// The call's result, if it can be computed here.
    #[inline]
    pub(crate) fn call(&self, argument: &Value) -> Option<Value> {
        let scope = Scope {
            params: [argument, argument],
            count: 1,
            env: self.env,
        };
        settle_result(scope.eval(self.body, 0)?)
    }
}

/// A function `a: b: body` of two identifier arguments, checked once.
pub(crate) struct Pure2<'a> {
    inner: &'a LambdaIr,
    env: &'a Env,
}

impl<'a> Pure2<'a> {
    pub(crate) fn new(function: &'a Value) -> Option<Pure2<'a>> {
        let Value::Lambda(closure) = function else {
            return None;
        };
        let (ParamIr::Identifier, IrKind::Lambda(inner)) =
            (&closure.lambda.param, &closure.lambda.body.kind)
        else {
            return None;
        };
        let ParamIr::Identifier = inner.param else {
            return None;
        };
        Some(Pure2 {
            inner,
            env: &closure.env,
        })
    }

    #[inline]
    pub(crate) fn call(&self, first: &Value, second: &Value) -> Option<Value> {
        let scope = Scope {
            params: [second, first],
            count: 2,
            env: self.env,
        };
        settle_result(scope.eval(&self.inner.body, 0)?)
    }
}

fn settle_result(value: Value) -> Option<Value> {
    match value {
        Value::Int(_) | Value::Bool(_) => Some(value),
        _ => None,
    }
}

/// The frames a call would make, without making them: `params[0]` is the innermost
/// argument (`up = 0`), then the closure's environment.
struct Scope<'a> {
    params: [&'a Value; 2],
    count: u32,
    env: &'a Env,
}

/// `f` of a value already evaluated (itself, or the value of a thunk that is
/// done), borrowed: a set read for one field is not counted up and down.
#[inline]
pub(super) fn with_settled<R>(value: &Value, f: impl FnOnce(&Value) -> Option<R>) -> Option<R> {
    match value {
        Value::Thunk(thunk) => match &*thunk.state.try_borrow().ok()? {
            ThunkState::Done(value) => f(value),
            _ => None,
        },
        other => f(other),
    }
}

/// `value.path` of sets already evaluated: `Some(None)` when an attribute is
/// missing (for `or`), `None` when it cannot be told here.
fn select(value: &Value, path: &[IrAttrName]) -> Option<Option<Value>> {
    let Some((IrAttrName::Static(name), rest)) = path.split_first() else {
        return None;
    };
    let Value::Attrs(attrs) = value else {
        return None;
    };
    let Some(next) = attrs.get(name) else {
        return Some(None);
    };
    if rest.is_empty() {
        return with_settled(next, |value| Some(Some(value.clone())));
    }
    with_settled(next, |value| select(value, rest))
}

impl Scope<'_> {
    fn with_variable<R>(
        &self,
        up: u32,
        slot: u32,
        f: impl FnOnce(&Value) -> Option<R>,
    ) -> Option<R> {
        if up < self.count {
            if slot != 0 {
                return None;
            }
            return with_settled(self.params[up as usize], f);
        }
        let value: Ref<'_, Value> = lookup_ref(self.env, up - self.count, slot)?;
        with_settled(&value, f)
    }

    fn boolean(&self, ir: &Ir, depth: u32) -> Option<bool> {
        match self.eval(ir, depth)? {
            Value::Bool(value) => Some(value),
            _ => None,
        }
    }

    fn eval(&self, ir: &Ir, depth: u32) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        let depth = depth + 1;
        match &ir.kind {
            IrKind::Const(value) => Some(value.clone()),
            IrKind::Var { up, slot } => self.with_variable(*up, *slot, |value| Some(value.clone())),
            IrKind::Select {
                expr,
                path,
                default,
            } => {
                let found = match &expr.kind {
                    IrKind::Var { up, slot } => {
                        self.with_variable(*up, *slot, |value| select(value, path))?
                    }
                    _ => select(&self.eval(expr, depth)?, path)?,
                };
                match found {
                    Some(value) => Some(value),
                    None => self.eval(default.as_ref()?, depth),
                }
            }
            IrKind::Not(inner) => Some(Value::Bool(!self.boolean(inner, depth)?)),
            IrKind::If {
                condition,
                then,
                otherwise,
            } => {
                if self.boolean(condition, depth)? {
                    self.eval(then, depth)
                } else {
                    self.eval(otherwise, depth)
                }
            }
            IrKind::Binary { op, left, right } => match op {
                Operator::And => Some(Value::Bool(
                    self.boolean(left, depth)? && self.boolean(right, depth)?,
                )),
                Operator::Or => Some(Value::Bool(
                    self.boolean(left, depth)? || self.boolean(right, depth)?,
                )),
                Operator::Implies => Some(Value::Bool(
                    !self.boolean(left, depth)? || self.boolean(right, depth)?,
                )),
                _ => {
                    let left = self.eval(left, depth)?;
                    let right = self.eval(right, depth)?;
                    operate(*op, &left, &right)
                }
            },
            _ => None,
        }
    }
}

/// An operator that cannot fail on these operands, as the evaluator computes it.
fn operate(op: Operator, left: &Value, right: &Value) -> Option<Value> {
    match (left, right) {
        (Value::Int(a), Value::Int(b)) => match op {
            Operator::Add => a.checked_add(*b).map(Value::Int),
            Operator::Subtract => a.checked_sub(*b).map(Value::Int),
            Operator::Multiply => a.checked_mul(*b).map(Value::Int),
            Operator::Divide => a.checked_div(*b).map(Value::Int),
            Operator::Less => Some(Value::Bool(a < b)),
            Operator::Equal => Some(Value::Bool(a == b)),
            Operator::NotEqual => Some(Value::Bool(a != b)),
            _ => None,
        },
        (Value::String(a), Value::String(b)) => match op {
            Operator::Less => Some(Value::Bool(a < b)),
            Operator::Equal => Some(Value::Bool(a == b)),
            Operator::NotEqual => Some(Value::Bool(a != b)),
            _ => None,
        },
        (Value::Bool(a), Value::Bool(b)) => match op {
            Operator::Equal => Some(Value::Bool(a == b)),
            Operator::NotEqual => Some(Value::Bool(a != b)),
            _ => None,
        },
        _ => None,
    }
}
