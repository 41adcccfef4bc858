//! Comparison: Nix's `eqValues` (the same object is equal to itself, a secret is
//! never compared) and `lessThan` (numbers, strings, paths, lists).

use super::pure::with_settled;
use super::*;
use crate::codes;
use crate::span::Span;
use crate::value::{Attrs, EvalResult, Value, same_object};

impl Machine {
    /// Nix's `eqValues`. `top` is false for elements of lists and sets, where the
    /// same object is equal to itself even if it is a function.
    pub fn equal(
        &mut self,
        left: &Value,
        right: &Value,
        span: Span,
        top: bool,
    ) -> EvalResult<bool> {
        if let Some(equal) = plain_equal(left, right) {
            return Ok(equal);
        }
        let left_forced = self.force(left, span)?;
        let right_forced = self.force(right, span)?;
        // a secret is compared with nothing, not even itself (`[ s ] == [ s ]`)
        if matches!(left_forced, Value::Opaque(_)) || matches!(right_forced, Value::Opaque(_)) {
            return Err(opaque_error(span));
        }
        if !top && (same_object(left, right) || same_object(&left_forced, &right_forced)) {
            // the same object is equal to itself without a look inside, but a secret
            // already evaluated inside it is compared all the same
            if holds_evaluated_secret(&left_forced) {
                return Err(opaque_error(span));
            }
            return Ok(true);
        }
        self.enter(span)?;
        let result = self.equal_forced(&left_forced, &right_forced, span);
        self.leave();
        result
    }

    pub(super) fn equal_forced(
        &mut self,
        left: &Value,
        right: &Value,
        span: Span,
    ) -> EvalResult<bool> {
        Ok(match (left, right) {
            (Value::Int(a), Value::Float(b)) => (*a as f64) == *b,
            (Value::Float(a), Value::Int(b)) => *a == (*b as f64),
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Path(a), Value::Path(b)) => a == b,
            (Value::Null, Value::Null) => true,
            (Value::List(a), Value::List(b)) => {
                if a.len() != b.len() {
                    return Ok(false);
                }
                let (a, b) = (a.clone(), b.clone());
                for (x, y) in a.iter().zip(b.iter()) {
                    if !self.equal(x, y, span, false)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Attrs(a), Value::Attrs(b)) => {
                if self.is_derivation(a, span)?
                    && self.is_derivation(b, span)?
                    && let (Some(x), Some(y)) =
                        (a.get(b"outPath").cloned(), b.get(b"outPath").cloned())
                {
                    return self.equal(&x, &y, span, false);
                }
                if a.len() != b.len() {
                    return Ok(false);
                }
                let (a, b) = (a.clone(), b.clone());
                for (x, y) in a.iter().zip(b.iter()) {
                    if x.name != y.name || !self.equal(&x.value, &y.value, span, false)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Opaque(_), _) | (_, Value::Opaque(_)) => return Err(opaque_error(span)),
            _ => false,
        })
    }

    pub(super) fn is_derivation(&mut self, attrs: &Attrs, span: Span) -> EvalResult<bool> {
        match attrs.get(b"type").cloned() {
            Some(kind) => {
                let kind = self.force(&kind, span)?;
                Ok(matches!(kind, Value::String(s) if &*s == b"derivation"))
            }
            None => Ok(false),
        }
    }

    /// Nix's `lessThan`: numbers, strings, paths, and lists lexicographically.
    pub fn less_than(&mut self, left: &Value, right: &Value, span: Span) -> EvalResult<bool> {
        let left = self.force(left, span)?;
        let right = self.force(right, span)?;
        Ok(match (&left, &right) {
            (Value::Int(a), Value::Int(b)) => a < b,
            (Value::Int(a), Value::Float(b)) => (*a as f64) < *b,
            (Value::Float(a), Value::Int(b)) => *a < (*b as f64),
            (Value::Float(a), Value::Float(b)) => a < b,
            (Value::String(a), Value::String(b)) => a < b,
            (Value::Path(a), Value::Path(b)) => a < b,
            (Value::List(a), Value::List(b)) => {
                let (a, b) = (a.clone(), b.clone());
                self.enter(span)?;
                let mut index = 0;
                let result = loop {
                    if index == b.len() {
                        break Ok(false);
                    }
                    if index == a.len() {
                        break Ok(true);
                    }
                    match self.equal(&a[index], &b[index], span, false) {
                        Ok(true) => index += 1,
                        Ok(false) => break self.less_than(&a[index], &b[index], span),
                        Err(error) => break Err(error),
                    }
                };
                self.leave();
                return result;
            }
            (Value::Opaque(_), _) | (_, Value::Opaque(_)) => return Err(opaque_error(span)),
            _ => {
                return Err(error(
                    codes::NOT_COMPARABLE,
                    format!(
                        "cannot compare {} with {}",
                        left.describe_type(),
                        right.describe_type()
                    ),
                    span,
                    "compared here",
                    "`<` compares two numbers, two strings, two paths or two lists",
                ));
            }
        })
    }
}

/// [`Machine::equal`] of two values that are plain data already evaluated (a thunk
/// that is done is looked into, not copied): numbers, Booleans, null, strings and
/// paths compare as `equal_forced` compares them, without forcing, copying or a
/// step. None for anything else (sets, lists, functions, secrets, unevaluated
/// thunks), which the full comparison takes.
fn plain_equal(left: &Value, right: &Value) -> Option<bool> {
    with_settled(left, |left| {
        with_settled(right, |right| {
            Some(match (left, right) {
                (Value::Int(a), Value::Int(b)) => a == b,
                (Value::String(a), Value::String(b)) => a == b,
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Null, Value::Null) => true,
                (Value::Path(a), Value::Path(b)) => a == b,
                (Value::Float(a), Value::Float(b)) => a == b,
                (Value::Int(a), Value::Float(b)) => (*a as f64) == *b,
                (Value::Float(a), Value::Int(b)) => *a == (*b as f64),
                (a, b) if is_plain(a) && is_plain(b) => false,
                _ => return None,
            })
        })
    })
}

fn is_plain(value: &Value) -> bool {
    matches!(
        value,
        Value::Null
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Float(_)
            | Value::String(_)
            | Value::Path(_)
    )
}
