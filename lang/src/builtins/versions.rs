//! Version strings: `compareVersions`, `splitVersion` and `parseDrvName`, with
//! Nix's component rules (digits compare as numbers, `pre` sorts first).

use super::Builtin;
use crate::eval::Machine;
use crate::span::Span;
use crate::value::{Attr, Attrs, EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "compareVersions",
            arity: 2,
            function: compare_versions_builtin,
        },
        Builtin {
            name: "splitVersion",
            arity: 1,
            function: split_version,
        },
        Builtin {
            name: "parseDrvName",
            arity: 1,
            function: parse_drv_name,
        },
    ]
}

/// The next component of a version, skipping separators; `position` moves past it.
fn next_component<'a>(text: &'a [u8], position: &mut usize) -> &'a [u8] {
    while *position < text.len() && matches!(text[*position], b'.' | b'-') {
        *position += 1;
    }
    let start = *position;
    if *position >= text.len() {
        return &text[start..start];
    }
    if text[*position].is_ascii_digit() {
        while *position < text.len() && text[*position].is_ascii_digit() {
            *position += 1;
        }
    } else {
        while *position < text.len()
            && !text[*position].is_ascii_digit()
            && !matches!(text[*position], b'.' | b'-')
        {
            *position += 1;
        }
    }
    &text[start..*position]
}

/// Nix's `string2Int<int>`: a 32-bit integer, or nothing.
fn as_int(component: &[u8]) -> Option<i32> {
    std::str::from_utf8(component).ok()?.parse::<i32>().ok()
}

fn components_less(left: &[u8], right: &[u8]) -> bool {
    let (left_number, right_number) = (as_int(left), as_int(right));
    match (left_number, right_number) {
        (Some(a), Some(b)) => a < b,
        _ if left.is_empty() && right_number.is_some() => true,
        _ if left == b"pre" && right != b"pre" => true,
        _ if right == b"pre" => false,
        (_, Some(_)) => true,
        (Some(_), _) => false,
        _ => left < right,
    }
}

pub fn compare_versions(left: &[u8], right: &[u8]) -> i64 {
    let (mut left_position, mut right_position) = (0, 0);
    while left_position < left.len() || right_position < right.len() {
        let left_component = next_component(left, &mut left_position);
        let right_component = next_component(right, &mut right_position);
        if components_less(left_component, right_component) {
            return -1;
        }
        if components_less(right_component, left_component) {
            return 1;
        }
    }
    0
}

fn compare_versions_builtin(
    machine: &mut Machine,
    arguments: &[Value],
    span: Span,
) -> EvalResult<Value> {
    let left = machine.force_string(&arguments[0], span, "`compareVersions`")?;
    let right = machine.force_string(&arguments[1], span, "`compareVersions`")?;
    Ok(Value::Int(compare_versions(&left, &right)))
}

fn split_version(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let text = machine.force_string(&arguments[0], span, "`splitVersion`")?;
    let mut position = 0;
    let mut components = Vec::new();
    while position < text.len() {
        let component = next_component(&text, &mut position);
        if component.is_empty() {
            break;
        }
        components.push(Value::string(component));
    }
    Ok(Value::List(crate::value::List::from(components)))
}

fn parse_drv_name(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    // a string, not anything that coerces to one (Nix's `forceStringNoCtx`)
    let text = machine.force_string(&arguments[0], span, "`parseDrvName`")?;
    // the name ends at the first dash followed by something that is not a letter
    let mut name_end = text.len();
    let mut version_start = text.len();
    for index in 0..text.len() {
        if text[index] == b'-'
            && text
                .get(index + 1)
                .is_some_and(|next| !next.is_ascii_alphabetic())
        {
            name_end = index;
            version_start = index + 1;
            break;
        }
    }
    Ok(Value::Attrs(Attrs::from_sorted(vec![
        Attr {
            name: crate::name::Name::of("name"),
            value: Value::string(&text[..name_end]),
            span: None,
        },
        Attr {
            name: crate::name::Name::of("version"),
            value: Value::string(&text[version_start.min(text.len())..]),
            span: None,
        },
    ])))
}

#[cfg(test)]
mod tests {
    use super::compare_versions;

    #[test]
    fn versions_compare_like_nix() {
        assert_eq!(compare_versions(b"1.0", b"2.3"), -1);
        assert_eq!(compare_versions(b"2.1", b"2.3"), -1);
        assert_eq!(compare_versions(b"2.3", b"2.3"), 0);
        assert_eq!(compare_versions(b"2.5", b"2.3"), 1);
        assert_eq!(compare_versions(b"3.1", b"2.3"), 1);
        assert_eq!(compare_versions(b"2.3.1", b"2.3"), 1);
        assert_eq!(compare_versions(b"2.3.1", b"2.3a"), 1);
        assert_eq!(compare_versions(b"2.3pre1", b"2.3"), -1);
        assert_eq!(compare_versions(b"2.3pre3", b"2.3pre12"), -1);
        assert_eq!(compare_versions(b"2.3a", b"2.3c"), -1);
        assert_eq!(compare_versions(b"2.3pre1", b"2.3c"), -1);
        assert_eq!(compare_versions(b"2.3pre1", b"2.3q"), -1);
    }
}
