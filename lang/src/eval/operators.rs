//! Operators: the lazy Boolean ones, `//`, `++`, `+` on numbers, strings and
//! paths, and arithmetic with overflow and division-by-zero errors.

use std::rc::Rc;

use smallvec::{SmallVec, smallvec};

use super::*;
use crate::codes;
use crate::compile::{self, Ir, IrKind, Operator};
use crate::span::Span;
use crate::value::{Attrs, Env, EvalResult, Value};

impl Machine {
    pub(super) fn binary(
        &mut self,
        op: Operator,
        left: &Rc<Ir>,
        right: &Rc<Ir>,
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        match op {
            Operator::And => {
                if !self.eval_bool(left, env, "the left side of `&&`")? {
                    return Ok(Value::Bool(false));
                }
                Ok(Value::Bool(self.eval_bool(
                    right,
                    env,
                    "the right side of `&&`",
                )?))
            }
            Operator::Or => {
                if self.eval_bool(left, env, "the left side of `||`")? {
                    return Ok(Value::Bool(true));
                }
                Ok(Value::Bool(self.eval_bool(
                    right,
                    env,
                    "the right side of `||`",
                )?))
            }
            Operator::Implies => {
                if !self.eval_bool(left, env, "the left side of `->`")? {
                    return Ok(Value::Bool(true));
                }
                Ok(Value::Bool(self.eval_bool(
                    right,
                    env,
                    "the right side of `->`",
                )?))
            }
            Operator::Update | Operator::Concat
                if matches!(
                    &right.kind,
                    IrKind::Binary { op: inner, .. } if *inner == op
                ) =>
            {
                self.right_chain(op, left, right, env, span)
            }
            Operator::Add
                if matches!(
                    left.kind,
                    IrKind::Binary {
                        op: Operator::Add,
                        ..
                    }
                ) =>
            {
                self.add_chain(left, right, env, span)
            }
            _ => {
                let left_value = self.eval(left, env)?;
                let right_value = self.eval(right, env)?;
                if let (Value::Int(a), Value::Int(b)) = (&left_value, &right_value)
                    && let Some(result) = int_operation(op, *a, *b)
                {
                    return Ok(result);
                }
                self.binary_values(op, left_value, right_value, left.span, right.span, span)
            }
        }
    }

    /// `a // b // c ...` or `a ++ b ++ c ...` (grouped to the right) evaluated as
    /// the nested operators evaluate it: each operator one step and one level of
    /// depth, entered once its left operand is evaluated (so an operand is
    /// evaluated as deep, and an error in one stops the chain as early, as
    /// before), then the operands checked from the innermost operator out; but
    /// merged or concatenated at once, not into a new set or list per operator (a
    /// chain of n lists copied the last one n times).
    #[inline(never)]
    fn right_chain(
        &mut self,
        op: Operator,
        left: &Rc<Ir>,
        right: &Rc<Ir>,
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        let mut operands: Vec<(&Rc<Ir>, Span)> = vec![(left, span)];
        let mut values = Vec::new();
        let mut entered = 0;
        let result = self.chain_values(op, right, env, &mut operands, &mut values, &mut entered);
        let result = result.and_then(|()| self.chain_operands(op, &operands, values));
        for _ in 0..entered {
            self.leave();
        }
        result
    }

    /// The operands of [`Machine::right_chain`] evaluated left to right into
    /// `values` (the first is in `operands` already), each operator after the
    /// first entered (counted in `entered`) once the operand to its left is done.
    fn chain_values<'i>(
        &mut self,
        op: Operator,
        right: &'i Rc<Ir>,
        env: &Env,
        operands: &mut Vec<(&'i Rc<Ir>, Span)>,
        values: &mut Vec<Value>,
        entered: &mut usize,
    ) -> EvalResult<()> {
        values.push(self.eval(operands[0].0, env)?);
        let mut rest = right;
        loop {
            match &rest.kind {
                IrKind::Binary {
                    op: inner,
                    left,
                    right,
                } if *inner == op => {
                    self.enter(rest.span)?;
                    *entered += 1;
                    operands.push((left, rest.span));
                    values.push(self.eval(left, env)?);
                    rest = right;
                }
                _ => {
                    let last_span = operands.last().map_or(rest.span, |(_, span)| *span);
                    operands.push((rest, last_span));
                    values.push(self.eval(rest, env)?);
                    return Ok(());
                }
            }
        }
    }

    /// `a + b + c ...` (grouped to the left) evaluated as one step and one level
    /// of depth per `+`, as the nested ones take them, and its operands left to
    /// right, each added as its `+` would add it, with the same spans in an error;
    /// but a string the chain builds is appended to in one buffer instead of copied
    /// into a new string at every `+` (n strings added copied O(n^2) bytes, and
    /// counted them against the memory bound).
    #[inline(never)]
    fn add_chain(
        &mut self,
        left: &Rc<Ir>,
        right: &Rc<Ir>,
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        // the right operands from the outermost `+` in, each with its `+`'s span;
        // every `+` but the outermost (which `eval` entered) is entered here
        let mut rights: SmallVec<[(&Rc<Ir>, Span); 8]> = smallvec![(right, span)];
        let mut first = left;
        let mut entered = 0;
        let mut result = Ok(Value::Null);
        while let IrKind::Binary {
            op: Operator::Add,
            left,
            right,
        } = &first.kind
        {
            if let Err(error) = self.enter(first.span) {
                result = Err(error);
                break;
            }
            entered += 1;
            rights.push((right, first.span));
            first = left;
        }
        if result.is_ok() {
            result = self.add_operands(first, &rights, env, &mut entered);
        }
        for _ in 0..entered {
            self.leave();
        }
        result
    }

    /// The operands of [`Machine::add_chain`] added from the innermost `+` out,
    /// each `+` left (its level of depth given back) once it is done.
    fn add_operands(
        &mut self,
        first: &Ir,
        rights: &[(&Rc<Ir>, Span)],
        env: &Env,
        entered: &mut usize,
    ) -> EvalResult<Value> {
        let mut value = self.eval(first, env)?;
        let mut left_span = first.span;
        // the string so far, once the sum is a string
        let mut built: Option<Vec<u8>> = None;
        for (index, (right, node_span)) in rights.iter().enumerate().rev() {
            let right_value = self.eval(right, env)?;
            match (&mut built, &value) {
                (Some(buffer), _) => self.append_added(buffer, &right_value, right.span)?,
                (None, Value::String(string)) => {
                    let string = string.clone();
                    self.make_string(string.len(), right.span)?;
                    let mut buffer = self.string_buffer();
                    buffer.extend_from_slice(&string);
                    self.append_added(&mut buffer, &right_value, right.span)?;
                    built = Some(buffer);
                }
                (None, _) => {
                    value = match (&value, &right_value) {
                        (Value::Int(a), Value::Int(b))
                            if let Some(sum) = int_operation(Operator::Add, *a, *b) =>
                        {
                            sum
                        }
                        _ => self.binary_values(
                            Operator::Add,
                            value,
                            right_value,
                            left_span,
                            right.span,
                            *node_span,
                        )?,
                    };
                }
            }
            left_span = *node_span;
            if index > 0 {
                self.leave();
                *entered -= 1;
            }
        }
        Ok(match built {
            Some(buffer) => self.finish_string(buffer),
            None => value,
        })
    }

    /// `right` added to the string in `buffer`, as [`Machine::add`] adds it to a
    /// string, counting only the bytes it adds.
    fn append_added(&mut self, buffer: &mut Vec<u8>, right: &Value, span: Span) -> EvalResult<()> {
        let before = buffer.len();
        match right {
            Value::String(right) => {
                self.make_string(right.len(), span)?;
                buffer.extend_from_slice(right);
            }
            _ => {
                self.coerce_to_string_into(right, span, false, true, buffer)?;
                self.make_string(buffer.len() - before, span)?;
            }
        }
        Ok(())
    }

    /// The operands of [`Machine::right_chain`], evaluated, checked and merged
    /// (`//`) or concatenated (`++`). Where at most one is not empty, that one (or the
    /// last) is the result itself, as the nested operators give it.
    fn chain_operands(
        &mut self,
        op: Operator,
        operands: &[(&Rc<Ir>, Span)],
        mut values: Vec<Value>,
    ) -> EvalResult<Value> {
        let (expected, left_side, right_side) = match op {
            Operator::Concat => ("a list", "the left side of `++`", "the right side of `++`"),
            _ => ("a set", "the left side of `//`", "the right side of `//`"),
        };
        let fits = |value: &Value| match op {
            Operator::Concat => matches!(value, Value::List(_)),
            _ => matches!(value, Value::Attrs(_)),
        };
        // the innermost operator checks its left then its right side; each outer
        // one its left (its right is made by the inner one)
        let last = values.len() - 1;
        for index in (0..=last).rev() {
            let index = if index == last {
                last - 1
            } else if index == last - 1 {
                last
            } else {
                index
            };
            if !fits(&values[index]) {
                let side = if index == last { right_side } else { left_side };
                return Err(type_error(
                    expected,
                    &values[index],
                    operands[index].0.span,
                    side,
                ));
            }
        }
        // `a // {}` and `a ++ []` are `a` itself, as Nix gives them; all empty
        // gives the last
        let size = |value: &Value| match value {
            Value::List(list) => list.len(),
            Value::Attrs(attrs) => attrs.len(),
            _ => 0,
        };
        if values.iter().filter(|value| size(value) > 0).count() <= 1 {
            let kept = values
                .iter()
                .rposition(|value| size(value) > 0)
                .unwrap_or(last);
            return Ok(values.swap_remove(kept));
        }
        let total = values.iter().map(size).sum();
        let span = operands[0].1;
        if op == Operator::Concat {
            self.make_list(total, span)?;
            let items = values
                .iter()
                .flat_map(|value| match value {
                    Value::List(list) => &list[..],
                    _ => &[],
                })
                .cloned();
            return Ok(Value::List(crate::builtins::collect_list(
                self, total, items, span,
            )?));
        }
        self.make_attrs(total, span)?;
        let sets: Vec<&Attrs> = values
            .iter()
            .filter_map(|value| match value {
                Value::Attrs(attrs) if !attrs.is_empty() => Some(attrs),
                _ => None,
            })
            .collect();
        let merged = if let [left, right] = sets[..] {
            left.update(right)
        } else {
            Attrs::update_all(&sets)
        };
        Ok(Value::Attrs(merged))
    }

    pub(super) fn eval_bool(&mut self, ir: &Rc<Ir>, env: &Env, context: &str) -> EvalResult<bool> {
        match self.eval(ir, env)? {
            Value::Bool(value) => Ok(value),
            other => Err(type_error("a Boolean", &other, ir.span, context)),
        }
    }

    pub(crate) fn binary_values(
        &mut self,
        op: Operator,
        left: Value,
        right: Value,
        left_span: Span,
        right_span: Span,
        span: Span,
    ) -> EvalResult<Value> {
        match op {
            Operator::Equal => Ok(Value::Bool(self.equal(&left, &right, span, true)?)),
            Operator::NotEqual => Ok(Value::Bool(!self.equal(&left, &right, span, true)?)),
            Operator::Less => Ok(Value::Bool(self.less_than(&left, &right, span)?)),
            Operator::Update => {
                let Value::Attrs(left_attrs) = &left else {
                    return Err(type_error(
                        "a set",
                        &left,
                        left_span,
                        "the left side of `//`",
                    ));
                };
                let Value::Attrs(right_attrs) = &right else {
                    return Err(type_error(
                        "a set",
                        &right,
                        right_span,
                        "the right side of `//`",
                    ));
                };
                if left_attrs.is_empty() {
                    return Ok(right);
                }
                if right_attrs.is_empty() {
                    return Ok(left);
                }
                self.make_attrs(left_attrs.len() + right_attrs.len(), span)?;
                Ok(Value::Attrs(left_attrs.update(right_attrs)))
            }
            Operator::Concat => {
                let Value::List(left_list) = &left else {
                    return Err(type_error(
                        "a list",
                        &left,
                        left_span,
                        "the left side of `++`",
                    ));
                };
                let Value::List(right_list) = &right else {
                    return Err(type_error(
                        "a list",
                        &right,
                        right_span,
                        "the right side of `++`",
                    ));
                };
                if left_list.is_empty() {
                    return Ok(right);
                }
                if right_list.is_empty() {
                    return Ok(left);
                }
                let total = left_list.len() + right_list.len();
                self.make_list(total, span)?;
                let items = left_list.iter().chain(right_list.iter()).cloned();
                Ok(Value::List(crate::builtins::collect_list(
                    self, total, items, span,
                )?))
            }
            Operator::Add => self.add(left, right, left_span, right_span),
            Operator::Subtract | Operator::Multiply | Operator::Divide => {
                arithmetic(op, &left, &right, left_span, right_span, span)
            }
            Operator::And | Operator::Or | Operator::Implies => unreachable_logic(),
        }
    }

    pub(super) fn add(
        &mut self,
        left: Value,
        right: Value,
        left_span: Span,
        right_span: Span,
    ) -> EvalResult<Value> {
        match (&left, &right) {
            (Value::Int(a), Value::Int(b)) => a
                .checked_add(*b)
                .map(Value::Int)
                .ok_or_else(|| overflow(left_span.to(right_span), "+")),
            (Value::Int(a), Value::Float(b)) => Ok(Value::Float(*a as f64 + b)),
            (Value::Float(a), Value::Int(b)) => Ok(Value::Float(a + *b as f64)),
            (Value::Float(a), Value::Float(b)) => Ok(Value::Float(a + b)),
            (Value::Int(_), other) => Err(type_error(
                "a number",
                other,
                right_span,
                "cannot add to an integer",
            )),
            (Value::Float(_), other) => Err(type_error(
                "a number",
                other,
                right_span,
                "cannot add to a float",
            )),
            (Value::Path(path), _) => {
                let mut result = path.to_vec();
                self.coerce_to_string_into(&right, right_span, false, false, &mut result)?;
                Ok(Value::Path(Bytes::from(compile::canonical_path(&result))))
            }
            (Value::String(string), _) => {
                // counted before it is made when both sizes are known (a string
                // doubled in a loop), after when the right side is coerced
                let right_length = match &right {
                    Value::String(right) => right.len(),
                    _ => 0,
                };
                self.make_string(string.len() + right_length, right_span)?;
                let mut result = self.string_buffer();
                result.reserve(string.len() + right_length.max(16));
                result.extend_from_slice(string);
                self.coerce_to_string_into(&right, right_span, false, true, &mut result)?;
                if right_length == 0 {
                    self.make_string(result.len() - string.len(), right_span)?;
                }
                Ok(self.finish_string(result))
            }
            _ => {
                let mut result = self.string_buffer();
                self.coerce_to_string_into(&left, left_span, false, true, &mut result)?;
                self.coerce_to_string_into(&right, right_span, false, true, &mut result)?;
                Ok(self.finish_string(result))
            }
        }
    }
}

pub(super) fn arithmetic(
    op: Operator,
    left: &Value,
    right: &Value,
    left_span: Span,
    right_span: Span,
    span: Span,
) -> EvalResult<Value> {
    let symbol = match op {
        Operator::Subtract => "-",
        Operator::Multiply => "*",
        _ => "/",
    };
    let check = |value: &Value, side_span: Span| -> EvalResult<()> {
        match value {
            Value::Int(_) | Value::Float(_) => Ok(()),
            other => Err(type_error(
                "a number",
                other,
                side_span,
                &format!("the operands of `{symbol}`"),
            )),
        }
    };
    check(left, left_span)?;
    check(right, right_span)?;
    if op == Operator::Divide {
        let zero = match right {
            Value::Int(b) => *b == 0,
            Value::Float(b) => *b == 0.0,
            _ => false,
        };
        if zero {
            return Err(error(
                codes::DIVISION_BY_ZERO,
                "division by zero",
                right_span,
                "this is zero",
                "check the divisor before dividing",
            ));
        }
    }
    match (left, right) {
        (Value::Int(a), Value::Int(b)) => {
            let result = match op {
                Operator::Subtract => a.checked_sub(*b),
                Operator::Multiply => a.checked_mul(*b),
                _ => a.checked_div(*b),
            };
            result.map(Value::Int).ok_or_else(|| overflow(span, symbol))
        }
        _ => {
            let a = as_float(left);
            let b = as_float(right);
            Ok(Value::Float(match op {
                Operator::Subtract => a - b,
                Operator::Multiply => a * b,
                _ => a / b,
            }))
        }
    }
}

pub(crate) fn as_float(value: &Value) -> f64 {
    match value {
        Value::Int(number) => *number as f64,
        Value::Float(number) => *number,
        _ => 0.0,
    }
}

/// An operator on two integers that cannot fail (no overflow, no division), or
/// `None` for the general path (which reports what went wrong).
#[inline]
pub(super) fn int_operation(op: Operator, left: i64, right: i64) -> Option<Value> {
    match op {
        Operator::Add => left.checked_add(right).map(Value::Int),
        Operator::Subtract => left.checked_sub(right).map(Value::Int),
        Operator::Multiply => left.checked_mul(right).map(Value::Int),
        Operator::Less => Some(Value::Bool(left < right)),
        Operator::Equal => Some(Value::Bool(left == right)),
        Operator::NotEqual => Some(Value::Bool(left != right)),
        _ => None,
    }
}
