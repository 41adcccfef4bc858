//! `toJSON` and `fromJSON`.

use std::rc::Rc;

use super::Builtin;
use crate::codes;
use crate::eval::{Machine, error};
use crate::span::Span;
use crate::value::{Attr, Attrs, EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "toJSON",
            arity: 1,
            function: to_json,
        },
        Builtin {
            name: "fromJSON",
            arity: 1,
            function: from_json,
        },
    ]
}

fn to_json(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let json = machine.to_json(&arguments[0], span)?;
    Ok(Value::String(Rc::from(json)))
}

fn from_json(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let text = machine.force_string(&arguments[0], span, "`fromJSON`")?;
    let parsed: serde_json::Value = serde_json::from_slice(&text).map_err(|json_error| {
        error(
            codes::INVALID_JSON,
            format!("invalid JSON: {json_error}"),
            span,
            "parsed here",
            "check the JSON text; `builtins.toJSON` produces valid JSON",
        )
    })?;
    convert(&parsed, span)
}

fn convert(json: &serde_json::Value, span: Span) -> EvalResult<Value> {
    Ok(match json {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(value) => Value::Bool(*value),
        serde_json::Value::Number(number) => {
            if let Some(integer) = number.as_i64() {
                Value::Int(integer)
            } else if number.is_u64() {
                return Err(error(
                    codes::INVALID_JSON,
                    format!("JSON number {number} is outside the integer range"),
                    span,
                    "parsed here",
                    "integers are 64-bit signed",
                ));
            } else {
                Value::Float(number.as_f64().unwrap_or(0.0))
            }
        }
        serde_json::Value::String(text) => Value::string_from(text),
        serde_json::Value::Array(items) => {
            let mut values = Vec::with_capacity(items.len());
            for item in items {
                values.push(convert(item, span)?);
            }
            Value::List(Rc::from(values))
        }
        serde_json::Value::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (name, value) in map {
                entries.push(Attr {
                    name: Rc::from(name.as_bytes()),
                    value: convert(value, span)?,
                    span: None,
                });
            }
            Value::Attrs(Rc::new(Attrs::from_unsorted(entries)))
        }
    })
}
