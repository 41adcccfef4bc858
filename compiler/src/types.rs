//! Setting and collection types (`mesh.types.*`): how they look as language values,
//! how they are read back into Rust, and how a value is checked against one. A
//! check names the exact value path that is wrong and what was expected.

use std::collections::{BTreeMap, BTreeSet};

use lang::Machine;
use lang::Span;
use lang::Value;
use lang::diagnostic::did_you_mean;
use lang::value::{Attr, Attrs, EvalResult};

/// The marker attribute of type values.
pub const TYPE_MARKER: &str = "mesh-type";

#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    Any,
    Bool,
    Int,
    Float,
    Str,
    /// A TCP/UDP port, 1 to 65535.
    Port,
    /// An absolute path on the node, as a string.
    Path,
    /// The name of a node of the inventory.
    Node,
    Enum(Vec<String>),
    /// A string the whole of which matches a POSIX extended regular expression, as
    /// `builtins.match` matches (nixpkgs' `types.strMatching`).
    StrMatching(String),
    ListOf(Box<Type>),
    AttrsOf(Box<Type>),
    NullOr(Box<Type>),
    Record(BTreeMap<String, Type>),
}

impl Type {
    /// How a diagnostic names the type: "a port (1 to 65535)".
    pub fn describe(&self) -> String {
        match self {
            Type::Any => "any value".into(),
            Type::Bool => "a Boolean".into(),
            Type::Int => "an integer".into(),
            Type::Float => "a number".into(),
            Type::Str => "a string".into(),
            Type::Port => "a port (an integer from 1 to 65535)".into(),
            Type::Path => "an absolute path (a string starting with `/`)".into(),
            Type::Node => "the name of a node".into(),
            Type::Enum(values) => format!(
                "one of {}",
                values
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Type::StrMatching(pattern) => format!("a string matching `{pattern}`"),
            Type::ListOf(element) => format!("a list of {}", plural(element)),
            Type::AttrsOf(element) => format!("a set of {}", plural(element)),
            Type::NullOr(inner) => format!("null or {}", inner.describe()),
            Type::Record(fields) => format!(
                "a record with {}",
                fields
                    .keys()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The short name used in documentation: `listOf port`.
    pub fn name(&self) -> String {
        match self {
            Type::Any => "any".into(),
            Type::Bool => "bool".into(),
            Type::Int => "int".into(),
            Type::Float => "float".into(),
            Type::Str => "str".into(),
            Type::Port => "port".into(),
            Type::Path => "path".into(),
            Type::Node => "node".into(),
            Type::Enum(values) => format!(
                "enum [ {} ]",
                values
                    .iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Type::StrMatching(pattern) => format!("strMatching {pattern:?}"),
            Type::ListOf(element) => format!("listOf ({})", element.name()),
            Type::AttrsOf(element) => format!("attrsOf ({})", element.name()),
            Type::NullOr(inner) => format!("nullOr ({})", inner.name()),
            Type::Record(fields) => format!(
                "record {{ {} }}",
                fields
                    .iter()
                    .map(|(k, t)| format!("{k} = {};", t.name()))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }
}

fn plural(element: &Type) -> String {
    match element {
        Type::Str => "strings".into(),
        Type::Int => "integers".into(),
        Type::Port => "ports".into(),
        Type::Bool => "Booleans".into(),
        Type::Path => "absolute paths".into(),
        Type::Node => "node names".into(),
        other => format!("({})", other.describe()),
    }
}

fn attr(name: &str, value: Value) -> Attr {
    Attr {
        name: lang::Name::new(name.as_bytes()),
        value,
        span: None,
    }
}

/// The language value of a type: `{ _type = "mesh-type"; name = ...; ... }`.
pub fn type_value(name: &str, extra: Vec<Attr>) -> Value {
    let mut entries = vec![
        attr("_type", Value::string_from(TYPE_MARKER)),
        attr("name", Value::string_from(name)),
    ];
    entries.extend(extra);
    Value::Attrs(Attrs::from_unsorted(entries))
}

/// Reads a type value back; `Err(message)` if it is not one.
pub fn read_type(
    machine: &mut Machine,
    value: &Value,
    span: Span,
) -> EvalResult<Result<Type, String>> {
    let value = machine.force(value, span)?;
    let Value::Attrs(attrs) = &value else {
        return Ok(Err(format!("{} is not a type", value.describe_type())));
    };
    let marker = match attrs.get(b"_type") {
        Some(marker) => machine.force(&marker.clone(), span)?,
        None => Value::Null,
    };
    if !matches!(&marker, Value::String(s) if &**s == TYPE_MARKER.as_bytes()) {
        return Ok(Err("a set that is not a type (use `mesh.types.*`)".into()));
    }
    let name = match attrs.get(b"name") {
        Some(name) => machine.force(&name.clone(), span)?,
        None => Value::Null,
    };
    let Value::String(name) = name else {
        return Ok(Err("a type without a name".into()));
    };
    let inner = |machine: &mut Machine, key: &[u8]| -> EvalResult<Result<Type, String>> {
        match attrs.get(key) {
            Some(inner) => read_type(machine, &inner.clone(), span),
            None => Ok(Err("an incomplete type".into())),
        }
    };
    Ok(Ok(match &*name {
        b"any" => Type::Any,
        b"bool" => Type::Bool,
        b"int" => Type::Int,
        b"float" => Type::Float,
        b"str" => Type::Str,
        b"port" => Type::Port,
        b"path" => Type::Path,
        b"node" => Type::Node,
        b"listOf" => match inner(machine, b"element")? {
            Ok(element) => Type::ListOf(Box::new(element)),
            Err(error) => return Ok(Err(error)),
        },
        b"attrsOf" => match inner(machine, b"element")? {
            Ok(element) => Type::AttrsOf(Box::new(element)),
            Err(error) => return Ok(Err(error)),
        },
        b"nullOr" => match inner(machine, b"element")? {
            Ok(element) => Type::NullOr(Box::new(element)),
            Err(error) => return Ok(Err(error)),
        },
        b"enum" => {
            let values = attrs.get(b"values").cloned().unwrap_or(Value::Null);
            let values = machine.force(&values, span)?;
            let Value::List(items) = values else {
                return Ok(Err("`enum` takes a list of strings".into()));
            };
            let mut names = Vec::new();
            for item in items.iter() {
                match machine.force(item, span)? {
                    Value::String(text) => names.push(String::from_utf8_lossy(&text).into_owned()),
                    other => {
                        return Ok(Err(format!(
                            "`enum` takes strings, not {}",
                            other.describe_type()
                        )));
                    }
                }
            }
            Type::Enum(names)
        }
        b"strMatching" => match attrs.get(b"pattern").cloned() {
            Some(pattern) => match machine.force(&pattern, span)? {
                Value::String(text) => {
                    Type::StrMatching(String::from_utf8_lossy(&text).into_owned())
                }
                _ => return Ok(Err("`strMatching` takes a string".into())),
            },
            None => return Ok(Err("an incomplete type".into())),
        },
        b"record" => {
            let fields = attrs.get(b"fields").cloned().unwrap_or(Value::Null);
            let fields = machine.force(&fields, span)?;
            let Value::Attrs(fields) = fields else {
                return Ok(Err("`record` takes a set of field types".into()));
            };
            let mut types = BTreeMap::new();
            for field in fields.iter() {
                match read_type(machine, &field.value, field.span.unwrap_or(span))? {
                    Ok(field_type) => {
                        types.insert(
                            String::from_utf8_lossy(&field.name).into_owned(),
                            field_type,
                        );
                    }
                    Err(error) => return Ok(Err(error)),
                }
            }
            Type::Record(types)
        }
        other => {
            return Ok(Err(format!(
                "unknown type `{}`",
                String::from_utf8_lossy(other)
            )));
        }
    }))
}

/// Where a checked value is wrong.
#[derive(Debug, Clone)]
pub struct Mismatch {
    /// The value path below the checked value, e.g. `[".ports", "[2]"]`.
    pub path: String,
    pub expected: String,
    pub found: String,
    /// Where the wrong value was written, if known.
    pub span: Option<Span>,
    /// A better help line than "give a value that is EXPECTED", if there is one.
    pub hint: Option<String>,
}

/// Context a check needs: the nodes of the inventory (for `node`), in order (a
/// name is looked for by halving: a monitoring node that lists 10,000 nodes
/// checks 10,000 names).
pub struct CheckContext<'a> {
    pub node_names: &'a [String],
    /// Nodes written in the inventory whose entries have errors (reported): a
    /// setting that names one is not also wrong.
    pub failed_nodes: &'a BTreeSet<String>,
}

/// Whether the whole of `text` matches `pattern`, exactly as `builtins.match` decides
/// (the language's one regular expression engine); an invalid pattern is E040.
pub fn matches(machine: &mut Machine, pattern: &[u8], text: &[u8], span: Span) -> EvalResult<bool> {
    let Some(Value::Attrs(builtins)) = machine.global("builtins") else {
        return Ok(false);
    };
    let Some(builtin) = builtins.get(b"match").cloned() else {
        return Ok(false);
    };
    let partial = machine.call(
        builtin,
        Value::String(lang::value::Bytes::from(pattern)),
        span,
    )?;
    let result = machine.call(partial, Value::String(lang::value::Bytes::from(text)), span)?;
    Ok(!matches!(machine.force(&result, span)?, Value::Null))
}

/// Checks `value` against `expected`, forcing as much of it as the type needs.
pub fn check(
    machine: &mut Machine,
    expected: &Type,
    value: &Value,
    span: Span,
    context: &CheckContext<'_>,
) -> EvalResult<Result<(), Mismatch>> {
    check_at(machine, expected, value, span, context, String::new(), None)
}

fn describe_value(value: &Value) -> String {
    match value {
        Value::Int(number) => format!("the integer {number}"),
        Value::String(text) if text.len() <= 40 => {
            format!("the string {:?}", String::from_utf8_lossy(text))
        }
        Value::Bool(boolean) => format!("{boolean}"),
        other => other.describe_type().to_string(),
    }
}

fn check_at(
    machine: &mut Machine,
    expected: &Type,
    value: &Value,
    span: Span,
    context: &CheckContext<'_>,
    path: String,
    value_span: Option<Span>,
) -> EvalResult<Result<(), Mismatch>> {
    let forced = machine.force(value, span)?;
    let mismatch = |found: &Value| -> EvalResult<Result<(), Mismatch>> {
        Ok(Err(Mismatch {
            path: path.clone(),
            expected: expected.describe(),
            found: describe_value(found),
            span: value_span,
            hint: None,
        }))
    };
    match (expected, &forced) {
        (Type::Any, _) => Ok(Ok(())),
        (Type::Bool, Value::Bool(_)) => Ok(Ok(())),
        (Type::Int, Value::Int(_)) => Ok(Ok(())),
        (Type::Float, Value::Int(_) | Value::Float(_)) => Ok(Ok(())),
        (Type::Str, Value::String(_)) => Ok(Ok(())),
        (Type::Port, Value::Int(port)) if (1..=65535).contains(port) => Ok(Ok(())),
        (Type::Path, Value::String(text)) if text.first() == Some(&b'/') => Ok(Ok(())),
        (Type::Node, Value::String(text)) => {
            let name = String::from_utf8_lossy(text);
            let known = context
                .node_names
                .binary_search_by(|node| node.as_str().cmp(&name))
                .is_ok();
            debug_assert!(context.node_names.is_sorted());
            if known || context.failed_nodes.contains(name.as_ref()) {
                Ok(Ok(()))
            } else {
                let hint = did_you_mean(&name, context.node_names.iter().map(String::as_str))
                    .unwrap_or_else(|| {
                        format!(
                            "the inventory's nodes are {}",
                            lang::diagnostic::quoted_few(context.node_names)
                        )
                    });
                Ok(Err(Mismatch {
                    path,
                    expected: "the name of a node of the inventory".into(),
                    found: format!("{name:?}, which is not a node"),
                    span: value_span,
                    hint: Some(hint),
                }))
            }
        }
        (Type::Enum(values), Value::String(text)) => {
            let text = String::from_utf8_lossy(text);
            if values.iter().any(|v| *v == text) {
                Ok(Ok(()))
            } else {
                mismatch(&forced)
            }
        }
        (Type::StrMatching(pattern), Value::String(text)) => {
            if matches(machine, pattern.as_bytes(), text, span)? {
                Ok(Ok(()))
            } else {
                mismatch(&forced)
            }
        }
        (Type::NullOr(_), Value::Null) => Ok(Ok(())),
        (Type::NullOr(inner), _) => {
            // said of this value itself, the mismatch says null would do as well
            let here = path.clone();
            Ok(
                check_at(machine, inner, &forced, span, context, path, value_span)?.map_err(
                    |mut mismatch| {
                        if mismatch.path == here {
                            mismatch.expected.push_str(" or null");
                        }
                        mismatch
                    },
                ),
            )
        }
        (Type::ListOf(element), Value::List(items)) => {
            for (index, item) in items.iter().enumerate() {
                let result = check_at(
                    machine,
                    element,
                    item,
                    span,
                    context,
                    format!("{path}[{index}]"),
                    value_span,
                )?;
                if result.is_err() {
                    return Ok(result);
                }
            }
            Ok(Ok(()))
        }
        (Type::AttrsOf(element), Value::Attrs(attrs)) => {
            for entry in attrs.iter() {
                let name = String::from_utf8_lossy(&entry.name);
                let result = check_at(
                    machine,
                    element,
                    &entry.value,
                    span,
                    context,
                    format!("{path}.{name}"),
                    entry.span.or(value_span),
                )?;
                if result.is_err() {
                    return Ok(result);
                }
            }
            Ok(Ok(()))
        }
        (Type::Record(fields), Value::Attrs(attrs)) => {
            for entry in attrs.iter() {
                let name = String::from_utf8_lossy(&entry.name).into_owned();
                if !fields.contains_key(&name) {
                    return Ok(Err(Mismatch {
                        path: format!("{path}.{name}"),
                        expected: format!(
                            "one of the record's fields ({})",
                            fields
                                .keys()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        found: format!("an unknown field `{name}`"),
                        span: entry.span.or(value_span),
                        hint: None,
                    }));
                }
            }
            for (name, field_type) in fields {
                match attrs.get_attr(name.as_bytes()) {
                    Some(entry) => {
                        let result = check_at(
                            machine,
                            field_type,
                            &entry.value,
                            span,
                            context,
                            format!("{path}.{name}"),
                            entry.span.or(value_span),
                        )?;
                        if result.is_err() {
                            return Ok(result);
                        }
                    }
                    None if matches!(field_type, Type::NullOr(_) | Type::Any) => {}
                    None => {
                        return Ok(Err(Mismatch {
                            path: format!("{path}.{name}"),
                            expected: field_type.describe(),
                            found: "nothing (the field is missing)".into(),
                            span: value_span,
                            hint: None,
                        }));
                    }
                }
            }
            Ok(Ok(()))
        }
        _ => mismatch(&forced),
    }
}
