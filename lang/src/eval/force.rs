//! Forcing and cycles: a thunk is evaluated at most once, blackholed while it is
//! (forcing it again is infinite recursion, reported with the names of the cycle),
//! and left as it was when its evaluation fails; `force_deep` for `--strict`.

use std::rc::Rc;

use super::*;
use crate::codes;
use crate::diagnostic::{Diagnostic, Label};
use crate::span::Span;
use crate::value::{EvalResult, Over, Thunk, ThunkState, Value};

impl Machine {
    /// Forces a value to weak head normal form.
    #[inline]
    pub fn force(&mut self, value: &Value, span: Span) -> EvalResult<Value> {
        match value {
            Value::Thunk(thunk) => self.force_thunk(thunk, span),
            other => Ok(other.clone()),
        }
    }

    /// Forces a thunk. Its state stays in place, borrowed mutably while it is
    /// evaluated: forcing it again meanwhile finds it borrowed, which is infinite
    /// recursion; a failed evaluation leaves it as it was (forcing it again
    /// evaluates it again), a finished one replaces it with the value.
    pub fn force_thunk(&mut self, thunk: &Rc<Thunk>, span: Span) -> EvalResult<Value> {
        let address = Rc::as_ptr(thunk) as *const u8 as usize;
        // nothing else keeps a thunk's state borrowed past a call: borrowed, it is
        // being forced
        let Ok(mut state) = thunk.state.try_borrow_mut() else {
            return Err(self.infinite_recursion(address, span));
        };
        let frame_span = match &*state {
            ThunkState::Done(value) => return Ok(value.clone()),
            ThunkState::Blackhole => return Err(self.infinite_recursion(address, span)),
            ThunkState::Suspended { code, .. } => code.span,
            ThunkState::Generated { call, .. } => call.span,
            ThunkState::Apply(application) => application.span,
        };
        self.force_stack.push(ForceFrame {
            thunk: address,
            span: frame_span,
        });
        let result = match &*state {
            ThunkState::Suspended { code, env } => self.eval(code, env),
            // genList's elements (the most) are called here; the others apart
            ThunkState::Generated { call, index } => match &call.over {
                Over::Indices => self.apply_one(&call.function, Value::Int(*index), call.span),
                _ => self.apply_generated(call, *index),
            },
            ThunkState::Apply(application) => self.apply_all(
                application.function.clone(),
                &application.arguments,
                application.span,
            ),
            ThunkState::Done(_) | ThunkState::Blackhole => unreachable_done(),
        };
        self.force_stack.pop();
        let value = fresh_slot(result?);
        *state = ThunkState::Done(value.clone());
        Ok(value)
    }

    pub(super) fn apply_all(
        &mut self,
        function: Value,
        arguments: &[Value],
        span: Span,
    ) -> EvalResult<Value> {
        if arguments.is_empty() {
            // a refused constant: a primop of no arguments
            if let Value::PrimOp(primop) = &function {
                return self.call_primop(primop, &[], span);
            }
            return self.force(&function, span);
        }
        if let [first, second] = arguments {
            return self.call_curried(&function, first.clone(), second.clone(), span);
        }
        let mut result = function;
        for argument in arguments {
            result = self.call(result, argument.clone(), span)?;
        }
        Ok(result)
    }

    pub(super) fn infinite_recursion(&self, address: usize, span: Span) -> Box<Diagnostic> {
        let start = self
            .force_stack
            .iter()
            .rposition(|frame| frame.thunk == address);
        let cycle: Vec<&ForceFrame> = match start {
            Some(index) => self.force_stack[index..].iter().collect(),
            None => Vec::new(),
        };
        let names: Vec<String> = cycle
            .iter()
            .filter_map(|frame| self.binding_names.get(&frame.span))
            .map(|name| format!("`{}`", String::from_utf8_lossy(name)))
            .collect();
        let mut names = names;
        // the reference that closed the cycle, when it reached the first binding
        // through another name (`let a = b; b = a;`)
        if let Some(name) = self.reference_names.get(&span) {
            names.push(format!("`{}`", String::from_utf8_lossy(name)));
        }
        let mut deduplicated: Vec<String> = Vec::new();
        for name in names {
            if deduplicated.last() != Some(&name) {
                deduplicated.push(name);
            }
        }
        if deduplicated.len() > 1 && deduplicated.first() == deduplicated.last() {
            deduplicated.pop();
        }
        let message = match deduplicated.as_slice() {
            [] => "infinite recursion: a value depends on itself".to_string(),
            [one] => format!("infinite recursion: {one} depends on itself"),
            many => format!("infinite recursion: {} -> {}", many.join(" -> "), many[0]),
        };
        let primary = cycle.first().map(|frame| frame.span).unwrap_or(span);
        let mut diagnostic = Diagnostic::error(codes::INFINITE_RECURSION, message)
            .with_primary(primary, "evaluating this needs its own value")
            .with_help(
                "break the cycle: one of these bindings must be computable without the others",
            );
        for frame in cycle.iter().skip(1) {
            let label = match self.binding_names.get(&frame.span) {
                Some(name) => format!("`{}` is part of the cycle", String::from_utf8_lossy(name)),
                None => "part of the cycle".to_string(),
            };
            diagnostic = diagnostic.with_secondary(frame.span, label);
        }
        if span != primary {
            diagnostic = diagnostic.with_secondary(span, "and is needed again here");
        }
        Box::new(diagnostic)
    }

    /// Forces a value and everything inside it (`--strict`, `deepSeq`).
    pub fn force_deep(&mut self, value: &Value, span: Span) -> EvalResult<Value> {
        let mut seen = Seen::default();
        let forced = self.force(value, span)?;
        self.force_deep_inner(&forced, span, &mut seen)?;
        Ok(forced)
    }

    /// Forces what is inside `value`. A set or list is recorded in `seen` (and
    /// not entered again) only once it is found to hold a set or list: one that
    /// holds none cannot be part of a cycle, and entering it again forces nothing
    /// new (its values are already forced), so most sets are never hashed.
    pub(super) fn force_deep_inner(
        &mut self,
        value: &Value,
        span: Span,
        seen: &mut Seen,
    ) -> EvalResult<()> {
        let result = match value {
            Value::Attrs(attrs) => {
                let address = attrs.address();
                self.enter(span)?;
                let members = attrs
                    .iter()
                    .map(|attr| (&attr.value, attr.span.unwrap_or(span), Some(&attr.name[..])));
                self.force_members(address, members, seen)
            }
            Value::List(items) if !items.is_empty() => {
                let address = items.address();
                self.enter(span)?;
                self.force_members(address, items.iter().map(|item| (item, span, None)), seen)
            }
            _ => return Ok(()),
        };
        self.leave();
        result
    }

    /// Forces each member of the set or list at `address` (with its span and, for an
    /// attribute, its name for the trace), and what is inside those that hold values.
    fn force_members<'v>(
        &mut self,
        address: usize,
        members: impl Iterator<Item = (&'v Value, Span, Option<&'v [u8]>)>,
        seen: &mut Seen,
    ) -> EvalResult<()> {
        let mut recorded = false;
        for (member, span, name) in members {
            let forced = self.force(member, span)?;
            if !holds_values(&forced) {
                continue;
            }
            if !recorded {
                recorded = true;
                if !seen.insert(address) {
                    break;
                }
            }
            if let Err(mut error) = self.force_deep_inner(&forced, span, seen) {
                if let Some(name) = name
                    && error.trace.len() < 64
                {
                    error.trace.push(Label::new(
                        span,
                        format!(
                            "while evaluating the attribute `{}`",
                            String::from_utf8_lossy(name)
                        ),
                    ));
                }
                return Err(error);
            }
        }
        Ok(())
    }
}

/// The sets and lists [`Machine::force_deep`] has entered, by address.
pub(super) type Seen = std::collections::HashSet<usize, crate::value::AddressHash>;

/// A set or a non-empty list: what `force_deep` goes into.
fn holds_values(value: &Value) -> bool {
    match value {
        Value::Attrs(attrs) => !attrs.is_empty(),
        Value::List(items) => !items.is_empty(),
        _ => false,
    }
}

/// A list of one or two elements lives inside its value slot in Nix, so a copy into
/// a new slot is a new list (this decides `«repeated»`). A list nothing else holds
/// is already one no other slot has: it is moved, not copied (most small lists are
/// made by the evaluation that returns them).
pub(super) fn fresh_slot(value: Value) -> Value {
    match value {
        Value::List(list) if !list.is_empty() && list.len() <= 2 && !list.is_unique() => {
            Value::List(crate::value::List::from(&list[..]))
        }
        other => other,
    }
}

/// Does `value` hold a secret among its parts evaluated so far? Nothing is forced (the
/// same object compares equal to itself in Nix without its parts being evaluated).
pub(crate) fn holds_evaluated_secret(value: &Value) -> bool {
    let mut pending: Vec<Value> = match value {
        Value::List(_) | Value::Attrs(_) => vec![value.clone()],
        _ => return false,
    };
    let mut seen = std::collections::HashSet::new();
    while let Some(value) = pending.pop() {
        let value = match value {
            Value::Thunk(thunk) => match thunk.value() {
                Some(value) => value,
                None => continue,
            },
            other => other,
        };
        match &value {
            Value::Opaque(_) => return true,
            Value::List(items) if seen.insert(items.address()) => {
                pending.extend(items.iter().cloned());
            }
            Value::Attrs(attrs) if seen.insert(attrs.address()) => {
                pending.extend(attrs.iter().map(|attr| attr.value.clone()));
            }
            _ => {}
        }
    }
    false
}
