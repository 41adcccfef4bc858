//! Calls: a lambda, a built-in function (partially applied until it has all its
//! arguments) or a set with `__functor` applied to an argument, and the binding of
//! formal arguments into the callee's frame (or the argument error).

use std::rc::Rc;

use super::*;
use crate::codes;
use crate::compile::{FormalIr, IrKind, LambdaIr, ParamIr};
use crate::diagnostic::{Diagnostic, Label, did_you_mean};
use crate::span::Span;
use crate::value::{
    Closure, Env, EnvFrame, EvalResult, Over, PrimFunction, PrimOp, PrimOpApp, SharedCall, Value,
};

impl Machine {
    /// Applies a function value to one argument.
    pub fn call(&mut self, function: Value, argument: Value, span: Span) -> EvalResult<Value> {
        let function = match function {
            Value::Thunk(thunk) => self.force_thunk(&thunk, span)?,
            other => other,
        };
        match function {
            Value::Lambda(closure) => self.call_lambda(&closure, argument, span),
            Value::PrimOp(primop) => {
                if primop.arity <= 1 {
                    self.call_primop(&primop, &[argument], span)
                } else {
                    Ok(Value::PrimOpApp(Rc::new(PrimOpApp {
                        primop,
                        arguments: vec![argument],
                    })))
                }
            }
            Value::PrimOpApp(partial) => {
                let mut arguments = Vec::with_capacity(partial.arguments.len() + 1);
                arguments.extend(partial.arguments.iter().cloned());
                arguments.push(argument);
                if arguments.len() >= partial.primop.arity {
                    self.call_primop(&partial.primop, &arguments, span)
                } else {
                    Ok(Value::PrimOpApp(Rc::new(PrimOpApp {
                        primop: partial.primop.clone(),
                        arguments,
                    })))
                }
            }
            Value::Attrs(attrs) if attrs.contains(b"__functor") => {
                // a step deeper: a functor that gives a set with `__functor` again
                // (`__functor = s: s`) ends at the depth bound, not in a stack overflow
                self.enter(span)?;
                let functor = attrs.get(b"__functor").cloned().unwrap_or(Value::Null);
                let result = self
                    .call(functor, Value::Attrs(attrs.clone()), span)
                    .and_then(|bound| self.call(bound, argument, span));
                self.leave();
                result
            }
            other => Err(error(
                codes::NOT_A_FUNCTION,
                format!(
                    "attempt to call {}, which is not a function",
                    other.describe_type()
                ),
                span,
                &format!("this calls {}", other.describe_type()),
                "only functions can be applied to arguments; check the parentheses around the call",
            )),
        }
    }

    /// [`Machine::call`] of a function the caller keeps (a thunk's `map f` or
    /// `genList f`, the function a builtin calls per element): a lambda is called
    /// through the reference, not copied.
    pub(crate) fn apply_one(
        &mut self,
        function: &Value,
        argument: Value,
        span: Span,
    ) -> EvalResult<Value> {
        match function {
            Value::Lambda(closure) => self.call_lambda(closure, argument, span),
            other => self.call(other.clone(), argument, span),
        }
    }

    /// Element `index` of a shared call (`genList`, `map`, `mapAttrs`,
    /// `zipAttrsWith`): its function applied to what the element stands for.
    #[inline(never)]
    pub(super) fn apply_generated(&mut self, call: &SharedCall, index: i64) -> EvalResult<Value> {
        let position = usize::try_from(index).unwrap_or(usize::MAX);
        // one call site each for one and two arguments: a second one of
        // `call_curried` here changed how it is inlined where comparators call it
        let (first, second) = match &call.over {
            Over::Indices => return self.apply_one(&call.function, Value::Int(index), call.span),
            Over::List(list) => match list.get(position) {
                Some(item) => return self.apply_one(&call.function, item.clone(), call.span),
                None => return Err(missing_element(call.span)),
            },
            Over::Attrs(attrs) => match attrs.entries().get(position) {
                Some(attr) => (Value::String(attr.name.string()), attr.value.clone()),
                None => return Err(missing_element(call.span)),
            },
            Over::Groups(groups) => match groups.get(position) {
                Some((name, values)) => (Value::String(name.string()), Value::List(values)),
                None => return Err(missing_element(call.span)),
            },
        };
        self.call_curried(&call.function, first, second, call.span)
    }

    pub(crate) fn call_primop(
        &mut self,
        primop: &Rc<PrimOp>,
        arguments: &[Value],
        span: Span,
    ) -> EvalResult<Value> {
        self.enter(span)?;
        let result = match &primop.function {
            PrimFunction::Builtin(function) => function(self, arguments, span),
            PrimFunction::Host(function) => {
                let function = function.clone();
                function(self, arguments, span)
            }
        };
        self.leave();
        result
    }

    pub(super) fn call_lambda(
        &mut self,
        closure: &Rc<Closure>,
        argument: Value,
        span: Span,
    ) -> EvalResult<Value> {
        self.call_lambda_in(&closure.lambda, &closure.env, argument, span)
    }

    /// Applies `a: b: body` to two arguments (what `foldl'`, `sort` and `mapAttrs`
    /// do for every element) without making the closure `b: body` in between; it
    /// gives what two calls give, as the outer call cannot fail.
    pub(crate) fn call_curried(
        &mut self,
        function: &Value,
        first: Value,
        second: Value,
        span: Span,
    ) -> EvalResult<Value> {
        // borrowed unless it is a thunk: no count up and down per `foldl'` step
        let forced;
        let function = match function {
            Value::Thunk(thunk) => {
                forced = self.force_thunk(thunk, span)?;
                &forced
            }
            other => other,
        };
        if let Value::PrimOp(primop) = function
            && primop.arity == 2
        {
            return self.call_primop(primop, &[first, second], span);
        }
        if let Value::Lambda(closure) = function
            && let ParamIr::Identifier = closure.lambda.param
            && let IrKind::Lambda(inner) = &closure.lambda.body.kind
        {
            let frame = EnvFrame::one(Some(closure.env.clone()), first);
            return self.call_lambda_in(inner, &frame, second, span);
        }
        let partial = self.call(function.clone(), first, span)?;
        self.call(partial, second, span)
    }

    /// Applies the function `lambda` closing over `env` to one argument.
    pub(super) fn call_lambda_in(
        &mut self,
        lambda: &Rc<LambdaIr>,
        env: &Env,
        argument: Value,
        span: Span,
    ) -> EvalResult<Value> {
        let frame = match &lambda.param {
            ParamIr::Identifier => EnvFrame::one(Some(env.clone()), argument),
            ParamIr::Formals {
                formals,
                ellipsis,
                at,
                order,
            } => self.bind_formals(lambda, formals, *ellipsis, *at, order, env, argument, span)?,
        };
        self.enter(span)?;
        let result = self.eval(&lambda.body, &frame);
        self.leave();
        result.map_err(|error| call_trace(error, lambda, span))
    }

    /// The frame of a call of a function with formals: the `@` name first, then the
    /// formals in symbol order (as Nix fills them), or the argument error. Apart
    /// from [`Machine::call_lambda_in`], whose frame then stays small for the
    /// calls of `x: ...` functions.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn bind_formals(
        &mut self,
        lambda: &LambdaIr,
        formals: &[FormalIr],
        ellipsis: bool,
        at: bool,
        order: &[u32],
        env: &Env,
        argument: Value,
        span: Span,
    ) -> EvalResult<Env> {
        let forced = self.force(&argument, span)?;
        let Value::Attrs(attrs) = forced else {
            return Err(type_error(
                "a set",
                &forced,
                span,
                &format!("{} takes a set of named arguments", lambda_name(lambda)),
            ));
        };
        let frame = EnvFrame::empty(Some(env.clone()), lambda.frame_size);
        self.reclaim.record(&frame);
        if at {
            frame.slots.set(formals.len(), argument);
        }
        // formals' names are unique: when every attribute matched one, none is
        // unexpected
        let mut matched = 0;
        for &slot in order.iter() {
            let slot = slot as usize;
            let formal = &formals[slot];
            match attrs.get(formal.name) {
                Some(value) => {
                    matched += 1;
                    frame.slots.set(slot, value.clone())
                }
                None => match &formal.default {
                    Some(default) => {
                        let value = self.delay_bound(default, &frame);
                        frame.slots.set(slot, value);
                    }
                    None => return Err(missing_argument(lambda, formal, span)),
                },
            }
        }
        if !ellipsis && matched != attrs.len() {
            return Err(unexpected_argument(lambda, formals, &attrs, span));
        }
        Ok(frame)
    }
}

/// The trace line a call adds to an error raised inside it.
#[cold]
fn call_trace(mut error: Box<Diagnostic>, lambda: &LambdaIr, span: Span) -> Box<Diagnostic> {
    if error.trace.len() < 64 {
        error.trace.push(Label::new(
            span,
            format!("while calling {}", lambda_name(lambda)),
        ));
    }
    error
}

#[cold]
fn missing_argument(lambda: &LambdaIr, formal: &FormalIr, span: Span) -> Box<Diagnostic> {
    let name = String::from_utf8_lossy(&formal.name);
    Box::new(
        Diagnostic::error(
            codes::MISSING_ARGUMENT,
            format!(
                "{} called without required argument `{name}`",
                lambda_name(lambda)
            ),
        )
        .with_primary(span, "called here")
        .with_secondary(formal.span, "the argument is declared here")
        .with_help(format!(
            "pass `{name}` in the argument set, or give it a default with `{name} ? value`"
        )),
    )
}

/// The error for the first attribute of `attrs` that no formal takes.
#[cold]
fn unexpected_argument(
    lambda: &LambdaIr,
    formals: &[FormalIr],
    attrs: &crate::value::Attrs,
    span: Span,
) -> Box<Diagnostic> {
    let Some(attr) = attrs
        .iter()
        .find(|attr| !formals.iter().any(|formal| formal.name == attr.name))
    else {
        return Box::new(
            Diagnostic::bug("an argument was counted as unexpected")
                .with_primary(span, "called here"),
        );
    };
    let name = String::from_utf8_lossy(&attr.name).into_owned();
    let names: Vec<String> = formals
        .iter()
        .map(|f| String::from_utf8_lossy(&f.name).into_owned())
        .collect();
    let help = did_you_mean(&name, names.iter().map(String::as_str)).unwrap_or_else(|| {
        format!(
            "it takes {}; add `...` to its arguments to accept others",
            if names.is_empty() {
                "no arguments".to_string()
            } else {
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )
    });
    let mut diagnostic = Diagnostic::error(
        codes::UNEXPECTED_ARGUMENT,
        format!(
            "{} called with unexpected argument `{name}`",
            lambda_name(lambda)
        ),
    )
    .with_primary(span, "called here")
    .with_help(help);
    if let Some(given) = attr.span {
        diagnostic = diagnostic.with_secondary(given, "the argument is given here");
    }
    Box::new(diagnostic.with_secondary(lambda.span, "the function is defined here"))
}

/// An element index past what its shared call runs over: never made (each index
/// comes from the length of the list or set it was made for), but an error, not a
/// panic, if it were.
#[cold]
fn missing_element(span: Span) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::bug(
            "an element of a `map`, `mapAttrs`, `zipAttrsWith` or `genList` refers past its list",
        )
        .with_primary(span, "made here"),
    )
}
