//! Builtins over strings: byte-oriented, as Nix's strings are.

use sha2::Digest;

use super::Builtin;
use crate::codes;
use crate::eval::{Machine, error};
use crate::span::Span;
use crate::value::{Bytes, EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "concatStringsSep",
            arity: 2,
            function: concat_strings_sep,
        },
        Builtin {
            name: "hashString",
            arity: 2,
            function: hash_string,
        },
        Builtin {
            name: "replaceStrings",
            arity: 3,
            function: replace_strings,
        },
        Builtin {
            name: "stringLength",
            arity: 1,
            function: string_length,
        },
        Builtin {
            name: "substring",
            arity: 3,
            function: substring,
        },
        Builtin {
            name: "toString",
            arity: 1,
            function: to_string,
        },
    ]
}

fn concat_strings_sep(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let separator = machine.force_string(&arguments[0], span, "`concatStringsSep` separator")?;
    let list = machine.force_list(&arguments[1], span, "`concatStringsSep`")?;
    // the separators before they are made, the items as they come
    machine.make_string(
        separator.len().saturating_mul(list.len().saturating_sub(1)),
        span,
    )?;
    let mut result = machine.string_buffer();
    result.reserve(
        separator
            .len()
            .saturating_add(16)
            .saturating_mul(list.len())
            .min(1 << 20),
    );
    for (index, item) in list.iter().enumerate() {
        if index > 0 {
            result.extend_from_slice(&separator);
        }
        machine.append_counted(item, span, (false, true), &mut result)?;
    }
    Ok(machine.finish_string(result))
}

fn replace_strings(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let from = machine.force_list(&arguments[0], span, "`replaceStrings` patterns")?;
    let to = machine.force_list(&arguments[1], span, "`replaceStrings` replacements")?;
    if from.len() != to.len() {
        return Err(error(
            codes::INVALID_ARGUMENT,
            format!(
                "`replaceStrings` got {} patterns but {} replacements",
                from.len(),
                to.len()
            ),
            span,
            "called here",
            "give one replacement per pattern",
        ));
    }
    let mut patterns = Vec::with_capacity(from.len());
    for pattern in from.iter() {
        patterns.push(machine.force_string(pattern, span, "`replaceStrings` pattern")?);
    }
    // as Nix 2.8 does: every replacement, before the subject, even one never used
    let mut replacements = Vec::with_capacity(to.len());
    for replacement in to.iter() {
        replacements.push(machine.force_string(
            replacement,
            span,
            "`replaceStrings` replacement",
        )?);
    }
    let subject = machine.force_string(&arguments[2], span, "`replaceStrings`")?;
    let mut result = Vec::with_capacity(subject.len());
    let mut position = 0;
    while position <= subject.len() {
        let mut found = false;
        for (index, pattern) in patterns.iter().enumerate() {
            if subject[position..].starts_with(pattern) {
                found = true;
                let replacement = &replacements[index];
                // a short subject with long replacements can grow a lot
                machine.make_string(replacement.len(), span)?;
                result.extend_from_slice(replacement);
                if pattern.is_empty() {
                    if let Some(byte) = subject.get(position) {
                        result.push(*byte);
                    }
                    position += 1;
                } else {
                    position += pattern.len();
                }
                break;
            }
        }
        if !found {
            if let Some(byte) = subject.get(position) {
                result.push(*byte);
            }
            position += 1;
        }
    }
    Ok(Value::String(Bytes::from(result)))
}

/// The text of `value` as `coerceToString` gives it (not `toString`'s more): a
/// string is shared, not copied.
fn text_of(machine: &mut Machine, value: &Value, span: Span) -> EvalResult<Bytes> {
    match machine.force(value, span)? {
        Value::String(text) => Ok(text),
        other => Ok(Bytes::from(
            machine.coerce_to_string(&other, span, false, true)?,
        )),
    }
}

fn string_length(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let text = text_of(machine, &arguments[0], span)?;
    Ok(Value::Int(text.len() as i64))
}

fn substring(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let start = machine.force_int(&arguments[0], span, "`substring` start")?;
    let length = machine.force_int(&arguments[1], span, "`substring` length")?;
    let text = text_of(machine, &arguments[2], span)?;
    if start < 0 {
        return Err(error(
            codes::INVALID_ARGUMENT,
            format!("`substring` start position {start} is negative"),
            span,
            "called here",
            "string positions count from 0",
        ));
    }
    let start = start as usize;
    if start >= text.len() {
        return Ok(Value::string(b""));
    }
    let end = if length < 0 {
        text.len()
    } else {
        start.saturating_add(length as usize).min(text.len())
    };
    if start == 0 && end == text.len() {
        return Ok(Value::String(text));
    }
    Ok(Value::string(&text[start..end]))
}

fn to_string(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    // a string is its own text: shared, not copied
    if let Value::String(text) = machine.force(&arguments[0], span)? {
        return Ok(Value::String(text));
    }
    let mut text = machine.string_buffer();
    machine.coerce_to_string_into(&arguments[0], span, true, false, &mut text)?;
    Ok(machine.finish_string(text))
}

fn hash_string(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let algorithm = machine.force_string(&arguments[0], span, "`hashString` algorithm")?;
    let text = machine.force_string(&arguments[1], span, "`hashString`")?;
    hash_bytes(&algorithm, &text, span)
}

pub(super) fn hash_bytes(algorithm: &[u8], data: &[u8], span: Span) -> EvalResult<Value> {
    let digest = match algorithm {
        b"md5" => hex::encode(md5::Md5::digest(data)),
        b"sha1" => hex::encode(sha1::Sha1::digest(data)),
        b"sha256" => hex::encode(sha2::Sha256::digest(data)),
        b"sha512" => hex::encode(sha2::Sha512::digest(data)),
        other => {
            return Err(error(
                codes::INVALID_ARGUMENT,
                format!(
                    "unknown hash algorithm `{}`",
                    String::from_utf8_lossy(other)
                ),
                span,
                "called here",
                "use one of `md5`, `sha1`, `sha256`, `sha512`",
            ));
        }
    };
    Ok(Value::string_from(&digest))
}
