//! The prelude `mesh` every module receives: `mesh.option`, `mesh.types` and one
//! constructor per shape kind. Built once per compilation; it holds no per-node state.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::codes;
use lang::value::{Attr, Attrs, EvalResult, HostFn, PrimFunction, PrimOp};
use lang::{Diagnostic, Machine, Span, Value};

use crate::shape::{self, Kind, Made};
use crate::stdlib;
use crate::types::{self, type_value};

pub const OPTION_MARKER: &str = "mesh-option";

fn host(
    name: &'static str,
    arity: usize,
    function: impl Fn(&mut Machine, &[Value], Span) -> EvalResult<Value> + 'static,
) -> Value {
    let function: Rc<HostFn> = Rc::new(function);
    Value::PrimOp(Rc::new(PrimOp {
        name,
        arity,
        function: PrimFunction::Host(function),
    }))
}

fn attr(name: &str, value: Value) -> Attr {
    Attr {
        name: lang::Name::new(name.as_bytes()),
        value,
        span: None,
    }
}

fn set(entries: Vec<Attr>) -> Value {
    Value::Attrs(Attrs::from_unsorted(entries))
}

/// How a source file is named in plans and diagnostics: relative to the repository,
/// or under `<stdlib>/` for the standard library.
pub fn display_path(absolute: &str, repository_root: &Path) -> String {
    if let Some(rest) = absolute.strip_prefix(stdlib::VIRTUAL_ROOT) {
        return format!("{}{rest}", stdlib::DISPLAY_PREFIX);
    }
    match Path::new(absolute).strip_prefix(repository_root) {
        Ok(relative) => relative.to_string_lossy().into_owned(),
        Err(_) => absolute.to_string(),
    }
}

/// File (repository-relative), line and column of a span.
pub fn location(machine: &Machine, span: Span, repository_root: &Path) -> (String, usize, usize) {
    match machine.sources.get(span.file) {
        Some(file) => {
            let (line, column) = file.line_column(span.start);
            let name = file
                .path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| file.name.clone());
            (display_path(&name, repository_root), line, column)
        }
        None => ("<unknown>".to_string(), 0, 0),
    }
}

fn type_constructor(name: &'static str) -> Value {
    host(
        name,
        1,
        move |machine, arguments, span| match types::read_type(machine, &arguments[0], span)? {
            Ok(_) => Ok(type_value(
                name,
                vec![attr("element", arguments[0].clone())],
            )),
            Err(problem) => Err(invalid_option(
                format!("invalid argument to `mesh.types.{name}`: {problem}"),
                span,
                format!("write e.g. `mesh.types.{name} mesh.types.str`"),
            )),
        },
    )
}

fn invalid_option(message: String, span: Span, help: String) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(codes::INVALID_OPTION, message)
            .with_primary(span, "here")
            .with_help(help),
    )
}

/// The names `mesh.types` has, in the order a help line lists them.
pub const TYPES: &[&str] = &[
    "any",
    "bool",
    "int",
    "float",
    "str",
    "port",
    "path",
    "node",
    "enum",
    "strMatching",
    "listOf",
    "attrsOf",
    "nullOr",
    "record",
];

fn types_value() -> Value {
    let mut entries = Vec::new();
    for name in ["any", "bool", "int", "float", "str", "port", "path", "node"] {
        entries.push(attr(name, type_value(name, Vec::new())));
    }
    for name in ["listOf", "attrsOf", "nullOr"] {
        entries.push(attr(name, type_constructor(name)));
    }
    entries.push(attr(
        "enum",
        host("enum", 1, |machine, arguments, span| {
            let values = machine.force(&arguments[0], span)?;
            let Value::List(items) = &values else {
                return Err(invalid_option(
                    format!(
                        "`mesh.types.enum` takes a list of strings, not {}",
                        values.describe_type()
                    ),
                    span,
                    "write e.g. `mesh.types.enum [ \"debug\" \"info\" ]`".into(),
                ));
            };
            for item in items.iter() {
                let item = machine.force(item, span)?;
                if !matches!(item, Value::String(_)) {
                    return Err(invalid_option(
                        format!(
                            "`mesh.types.enum` takes strings, not {}",
                            item.describe_type()
                        ),
                        span,
                        "write e.g. `mesh.types.enum [ \"debug\" \"info\" ]`".into(),
                    ));
                }
            }
            Ok(type_value("enum", vec![attr("values", values.clone())]))
        }),
    ));
    entries.push(attr(
        "strMatching",
        host("strMatching", 1, |machine, arguments, span| {
            let pattern = machine.force(&arguments[0], span)?;
            let Value::String(text) = &pattern else {
                return Err(invalid_option(
                    format!(
                        "`mesh.types.strMatching` takes a regular expression as a string, not {}",
                        pattern.describe_type()
                    ),
                    span,
                    "write e.g. `mesh.types.strMatching \"[a-z]+\"`".into(),
                ));
            };
            // an invalid pattern is refused here, where it is written (E040)
            types::matches(machine, text, b"", span)?;
            Ok(type_value(
                "strMatching",
                vec![attr("pattern", pattern.clone())],
            ))
        }),
    ));
    entries.push(attr(
        "record",
        host("record", 1, |machine, arguments, span| {
            let fields = machine.force(&arguments[0], span)?;
            let Value::Attrs(attrs) = &fields else {
                return Err(invalid_option(
                    format!("`mesh.types.record` takes a set of field types, not {}", fields.describe_type()),
                    span,
                    "write e.g. `mesh.types.record { host = mesh.types.str; port = mesh.types.port; }`".into(),
                ));
            };
            for field in attrs.iter() {
                if let Err(problem) = types::read_type(machine, &field.value, field.span.unwrap_or(span))? {
                    return Err(invalid_option(
                        format!("invalid type for field `{}` of the record: {problem}", String::from_utf8_lossy(&field.name)),
                        field.span.unwrap_or(span),
                        "each field's value is a `mesh.types.*` type".into(),
                    ));
                }
            }
            Ok(type_value("record", vec![attr("fields", fields.clone())]))
        }),
    ));
    set(entries)
}

fn option_value() -> Value {
    host("option", 1, |machine, arguments, span| {
        let given = machine.force(&arguments[0], span)?;
        let Value::Attrs(given) = &given else {
            return Err(invalid_option(
                format!("`mesh.option` takes a set, not {}", given.describe_type()),
                span,
                "write `mesh.option { type = mesh.types.port; default = 80; description = \"...\"; }`".into(),
            ));
        };
        for entry in given.iter() {
            let name = String::from_utf8_lossy(&entry.name).into_owned();
            if !matches!(
                name.as_str(),
                "type" | "default" | "description" | "example"
            ) {
                let help = lang::diagnostic::did_you_mean(
                    &name,
                    ["type", "default", "description", "example"],
                )
                .unwrap_or_else(|| {
                    "`mesh.option` takes `type`, `default`, `description` and `example`".into()
                });
                return Err(invalid_option(
                    format!("`mesh.option` has no field `{name}`"),
                    entry.span.unwrap_or(span),
                    help,
                ));
            }
        }
        let Some(type_entry) = given.get_attr(b"type") else {
            // the type the default has, if it has one that can be told (a default
            // that fails is said once it is checked)
            let default = match given.get(b"default") {
                Some(default) => machine.force(&default.clone(), span).ok(),
                None => None,
            };
            let suggested = match default {
                Some(Value::Int(_)) => "`type = mesh.types.int;` (or `mesh.types.port` for a port)",
                Some(Value::Float(_)) => "`type = mesh.types.float;`",
                Some(Value::Bool(_)) => "`type = mesh.types.bool;`",
                Some(Value::String(_)) => "`type = mesh.types.str;`",
                Some(Value::List(_)) => {
                    "`type = mesh.types.listOf mesh.types.str;` (the type of its elements)"
                }
                Some(Value::Attrs(_)) => {
                    "`type = mesh.types.attrsOf mesh.types.str;` (the type of its values)"
                }
                Some(Value::Null) => {
                    "`type = mesh.types.nullOr mesh.types.str;` (what it is when not null)"
                }
                _ => "e.g. `type = mesh.types.str;`",
            };
            return Err(invalid_option(
                "a setting needs a `type`".into(),
                span,
                format!("add {suggested}"),
            ));
        };
        if let Err(problem) =
            types::read_type(machine, &type_entry.value, type_entry.span.unwrap_or(span))?
        {
            return Err(invalid_option(
                format!("invalid setting `type`: {problem}"),
                type_entry.span.unwrap_or(span),
                "use one of `mesh.types.*`".into(),
            ));
        }
        let description = match given.get(b"description") {
            Some(description) => machine.force(&description.clone(), span)?,
            None => {
                return Err(invalid_option(
                    "a setting needs a `description`".into(),
                    span,
                    "say in a sentence what the setting does; it is shown on hover and in documentation".into(),
                ));
            }
        };
        if !matches!(description, Value::String(_)) {
            return Err(invalid_option(
                format!(
                    "the setting's `description` must be a string, not {}",
                    description.describe_type()
                ),
                span,
                "write the description as a string".into(),
            ));
        }
        let mut entries = vec![
            Attr {
                name: lang::Name::of("_type"),
                value: Value::string_from(OPTION_MARKER),
                span: Some(span),
            },
            attr("description", description),
            attr("type", type_entry.value.clone()),
        ];
        if let Some(default) = given.get_attr(b"default") {
            entries.push(default.clone());
        }
        Ok(set(entries))
    })
}

/// File names of constructor calls, by file: the same few files make every shape.
type FileNames = RefCell<HashMap<lang::FileId, Value>>;

fn shape_constructor(
    kind: Kind,
    repository_root: Rc<PathBuf>,
    made: Rc<Made>,
    files: Rc<FileNames>,
) -> Value {
    host(kind.name(), 1, move |machine, arguments, span| {
        let file = files
            .borrow_mut()
            .entry(span.file)
            .or_insert_with(|| Value::string_from(&location(machine, span, &repository_root).0))
            .clone();
        let (line, column) = machine
            .sources
            .get(span.file)
            .map(|source| source.line_column(span.start))
            .unwrap_or((0, 0));
        let source = shape::source_value(&file, line, column, span);
        shape::construct(machine, kind, &arguments[0], span, source, Some(&made))
    })
}

/// Where `mesh.lib` is, under the standard library's virtual root.
pub const LIB_FILE: &str = "lib/default.nix";

/// The `mesh` prelude value, and the registry of the shapes its constructors make.
/// `machine` evaluates `mesh.lib` (its members stay lazy until a module uses them).
pub fn prelude(repository_root: &Path, machine: &mut Machine) -> (Value, Rc<Made>) {
    let root = Rc::new(repository_root.to_path_buf());
    let made = Rc::new(Made::default());
    let files: Rc<FileNames> = Rc::default();
    let lib_path = PathBuf::from(format!("{}/{LIB_FILE}", stdlib::VIRTUAL_ROOT));
    // the standard library's own file: it evaluates (compiler/tests/lib.rs holds it to
    // that), so an error here is a bug in meshc, shown where `mesh.lib` is used
    let lib = machine.eval_file(&lib_path).unwrap_or_else(|errors| {
        let message = errors
            .first()
            .map(|error| error.message.clone())
            .unwrap_or_default();
        Value::string_from(&format!(
            "mesh.lib failed to load (please report): {message}"
        ))
    });
    let mut entries = vec![
        attr("option", option_value()),
        attr("types", types_value()),
        attr("lib", lib),
    ];
    for kind in Kind::ALL {
        entries.push(attr(
            kind.name(),
            shape_constructor(kind, root.clone(), made.clone(), files.clone()),
        ));
    }
    (set(entries), made)
}

#[cfg(test)]
mod tests {
    /// The names a help line lists are the ones `mesh.types` has.
    #[test]
    fn the_listed_types_are_the_types() {
        let lang::Value::Attrs(types) = super::types_value() else {
            panic!("mesh.types is a set");
        };
        let mut have: Vec<String> = types
            .iter()
            .map(|attr| String::from_utf8_lossy(&attr.name).into_owned())
            .collect();
        let mut listed: Vec<String> = super::TYPES.iter().map(|name| name.to_string()).collect();
        have.sort();
        listed.sort();
        assert_eq!(have, listed);
    }
}
