//! `match` and `split`: POSIX extended regular expressions, as Nix compiles them
//! with `std::regex::extended`, translated to the `regex` crate's syntax (bytes,
//! no Unicode classes, `.` matching newline, unknown escapes literal).

use std::rc::Rc;

use super::Builtin;
use crate::codes;
use crate::eval::{Machine, error};
use crate::span::Span;
use crate::value::{EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "match",
            arity: 2,
            function: match_builtin,
        },
        Builtin {
            name: "split",
            arity: 2,
            function: split,
        },
    ]
}

/// The POSIX ERE `pattern` in the `regex` crate's syntax.
pub fn translate(pattern: &[u8]) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut index = 0;
    let push_byte = |out: &mut String, byte: u8| {
        if byte.is_ascii() && !byte.is_ascii_control() {
            out.push(byte as char);
        } else {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    };
    while index < pattern.len() {
        let byte = pattern[index];
        match byte {
            b'\\' => {
                index += 1;
                match pattern.get(index) {
                    Some(next) if next.is_ascii_alphanumeric() => out.push(*next as char),
                    Some(next) if next.is_ascii() && !next.is_ascii_control() => {
                        out.push('\\');
                        out.push(*next as char);
                    }
                    Some(next) => push_byte(&mut out, *next),
                    None => out.push_str("\\\\"),
                }
                index += 1;
            }
            b'[' => {
                index += 1;
                out.push('[');
                if pattern.get(index) == Some(&b'^') {
                    out.push('^');
                    index += 1;
                }
                if pattern.get(index) == Some(&b']') {
                    out.push_str("\\]");
                    index += 1;
                }
                while index < pattern.len() && pattern[index] != b']' {
                    let inner = pattern[index];
                    if inner == b'[' && matches!(pattern.get(index + 1), Some(b':' | b'.' | b'=')) {
                        let delimiter = pattern[index + 1];
                        let close = pattern[index + 2..]
                            .windows(2)
                            .position(|w| w[0] == delimiter && w[1] == b']')
                            .map(|p| index + 2 + p);
                        if let Some(close) = close {
                            let name = &pattern[index + 2..close];
                            if delimiter == b':' {
                                out.push_str("[:");
                                out.push_str(&String::from_utf8_lossy(name));
                                out.push_str(":]");
                            } else {
                                for byte in name {
                                    out.push_str(&format!("\\x{byte:02x}"));
                                }
                            }
                            index = close + 2;
                            continue;
                        }
                    }
                    match inner {
                        b'\\' | b'[' | b'&' | b'~' => {
                            out.push('\\');
                            out.push(inner as char);
                        }
                        b'-' if pattern.get(index + 1) == Some(&b'-')
                            || (index > 0 && pattern[index - 1] == b'-') =>
                        {
                            out.push_str("\\-");
                        }
                        other => push_byte(&mut out, other),
                    }
                    index += 1;
                }
                if index < pattern.len() {
                    out.push(']');
                    index += 1;
                }
            }
            other => {
                push_byte(&mut out, other);
                index += 1;
            }
        }
    }
    out
}

fn compile(
    machine: &mut Machine,
    pattern: &[u8],
    anchored: bool,
    span: Span,
) -> EvalResult<Rc<regex::bytes::Regex>> {
    let mut key = vec![u8::from(anchored)];
    key.extend_from_slice(pattern);
    if let Some(compiled) = machine.regex_cache.get(&key) {
        return Ok(compiled.clone());
    }
    let translated = translate(pattern);
    let source = if anchored {
        format!("^(?:{translated})$")
    } else {
        translated
    };
    let compiled = regex::bytes::RegexBuilder::new(&source)
        .unicode(false)
        .dot_matches_new_line(true)
        .size_limit(1 << 24)
        .build()
        .map_err(|regex_error| {
            let detail = regex_error.to_string();
            let last = detail.lines().last().unwrap_or("invalid pattern").trim().to_string();
            error(
                codes::INVALID_REGEX,
                format!("invalid regular expression `{}`: {last}", String::from_utf8_lossy(pattern)),
                span,
                "used here",
                "patterns are POSIX extended regular expressions; escape special characters with `\\\\`",
            )
        })?;
    let compiled = Rc::new(compiled);
    machine.regex_cache.insert(key, compiled.clone());
    Ok(compiled)
}

fn groups(captures: &regex::bytes::Captures<'_>) -> Value {
    let items: Vec<Value> = (1..captures.len())
        .map(|index| match captures.get(index) {
            Some(group) => Value::string(group.as_bytes()),
            None => Value::Null,
        })
        .collect();
    Value::List(Rc::from(items))
}

fn match_builtin(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let pattern = machine.force_string(&arguments[0], span, "`match` pattern")?;
    let subject = machine.force_string(&arguments[1], span, "`match`")?;
    let regex = compile(machine, &pattern, true, span)?;
    Ok(match regex.captures(&subject) {
        Some(captures) => groups(&captures),
        None => Value::Null,
    })
}

fn split(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let pattern = machine.force_string(&arguments[0], span, "`split` pattern")?;
    let subject_value = machine.force(&arguments[1], span)?;
    let subject = machine.force_string(&subject_value, span, "`split`")?;
    let regex = compile(machine, &pattern, false, span)?;
    let mut result = Vec::new();
    let mut previous_end = 0;
    let mut position = 0;
    let mut after_empty = false;
    while position <= subject.len() {
        let Some(captures) = regex.captures_at(&subject, position) else {
            break;
        };
        let Some(whole) = captures.get(0) else { break };
        if after_empty && whole.start() == position && whole.is_empty() {
            // std::regex_iterator: after an empty match, look again one byte on
            after_empty = false;
            position += 1;
            continue;
        }
        result.push(Value::string(&subject[previous_end..whole.start()]));
        result.push(groups(&captures));
        previous_end = whole.end();
        after_empty = whole.is_empty();
        position = whole.end();
        if whole.is_empty() {
            // the next match may not be empty at this same position
            after_empty = true;
        }
    }
    if result.is_empty() {
        return Ok(Value::List(Rc::from(vec![subject_value])));
    }
    result.push(Value::string(&subject[previous_end..]));
    Ok(Value::List(Rc::from(result)))
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn posix_brackets_translate() {
        assert_eq!(translate(b"[[:alpha:]]+"), "[[:alpha:]]+");
        assert_eq!(translate(b"[]a]"), "[\\]a]");
        assert_eq!(translate(b"[\\]"), "[\\\\]");
        assert_eq!(translate(b"\\d"), "d");
        assert_eq!(translate(b"a\\.b"), "a\\.b");
    }
}
