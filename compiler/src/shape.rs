//! The eight shape constructors as the language sees them (`mesh.file { ... }`):
//! which fields each kind takes, their defaults, and the one validation used both
//! when a module calls a constructor and when the compiler reads the shapes back.
//! A shape in the language is a plain set marked `_type = "mesh-shape"`.

use std::rc::Rc;

use base64::Engine;
use lang::codes;
use lang::value::{Attr, Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value};

pub const SHAPE_MARKER: &str = "mesh-shape";
/// The marker of `artifacts.NAME` values.
pub const ARTIFACT_MARKER: &str = "mesh-artifact";

pub use plan::Kind;

/// Records made by the constructors during this compilation, by address. A record
/// found here was validated when it was made and is read back without checking it
/// again; holding the record keeps its address from being reused.
#[derive(Default)]
pub struct Made {
    records: std::cell::RefCell<std::collections::HashMap<usize, Attrs, lang::value::AddressHash>>,
}

impl Made {
    fn remember(&self, record: &Attrs) {
        self.records
            .borrow_mut()
            .insert(record.address(), record.clone());
    }

    pub fn contains(&self, record: &Attrs) -> bool {
        self.records.borrow().contains_key(&(record.address()))
    }

    /// Forgets every record (after a node's shapes have been read).
    pub fn clear(&self) {
        self.records.borrow_mut().clear();
    }
}

#[derive(Clone, Copy, Debug)]
enum FieldType {
    /// A user, service or container name: `[a-z_][a-z0-9_.@-]*`.
    Name,
    /// An absolute, canonical path on the node.
    AbsolutePath,
    Text,
    OptionalText,
    Bool,
    /// An octal mode string, normalised to four digits.
    Mode,
    TextList,
    NonEmptyTextList,
    TextMap,
    Mounts,
    Image,
    /// An opaque handle from `secrets` or `credentials`.
    Handle(&'static str),
    /// An artifact from `artifacts` (`{ _type = "mesh-artifact"; ... }`).
    Artifact,
}

#[derive(Clone, Copy, Debug)]
enum FieldDefault {
    Required,
    Text(&'static str),
    Null,
    Bool(bool),
    EmptyList,
    EmptyMap,
}

struct Field {
    name: &'static str,
    field_type: FieldType,
    default: FieldDefault,
}

const fn field(name: &'static str, field_type: FieldType, default: FieldDefault) -> Field {
    Field {
        name,
        field_type,
        default,
    }
}

/// The constructor's own copy of the field `name` of `kind`, if it has one.
pub(crate) fn field_name(kind: Kind, name: &[u8]) -> Option<&'static str> {
    let extra: &[&'static str] = if kind == Kind::File {
        &FILE_CONTENT_FIELDS
    } else {
        &[]
    };
    // most names differ in their first byte: compare it before calling memcmp
    fields(kind)
        .iter()
        .map(|field| field.name)
        .chain(extra.iter().copied())
        .find(|field| field.as_bytes().first() == name.first() && field.as_bytes() == name)
}

/// A file's content fields, which are not in its table (one of the two is given).
const FILE_CONTENT_FIELDS: [&str; 2] = ["content", "source"];

fn fields(kind: Kind) -> &'static [Field] {
    use FieldDefault as D;
    use FieldType as T;
    match kind {
        Kind::User => {
            const FIELDS: &[Field] = &[
                field("name", T::Name, D::Required),
                field("system", T::Bool, D::Bool(true)),
                field("home", T::OptionalText, D::Null),
                field("shell", T::OptionalText, D::Null),
                field("groups", T::TextList, D::EmptyList),
            ];
            FIELDS
        }
        Kind::Directory => {
            const FIELDS: &[Field] = &[
                field("path", T::AbsolutePath, D::Required),
                field("owner", T::Name, D::Text("root")),
                field("group", T::Name, D::Text("root")),
                field("mode", T::Mode, D::Text("0755")),
            ];
            FIELDS
        }
        // `content` / `source` are handled specially
        Kind::File => {
            const FIELDS: &[Field] = &[
                field("path", T::AbsolutePath, D::Required),
                field("owner", T::Name, D::Text("root")),
                field("group", T::Name, D::Text("root")),
                field("mode", T::Mode, D::Text("0644")),
            ];
            FIELDS
        }
        Kind::Link => {
            const FIELDS: &[Field] = &[
                field("path", T::AbsolutePath, D::Required),
                field("target", T::Text, D::Required),
            ];
            FIELDS
        }
        Kind::Secret => {
            const FIELDS: &[Field] = &[
                field("path", T::AbsolutePath, D::Required),
                field(
                    "secret",
                    T::Handle("a secret (from `secrets` or `credentials`)"),
                    D::Required,
                ),
                field("owner", T::Name, D::Text("root")),
                field("group", T::Name, D::Text("root")),
                field("mode", T::Mode, D::Text("0400")),
            ];
            FIELDS
        }
        Kind::Archive => {
            const FIELDS: &[Field] = &[
                field("path", T::AbsolutePath, D::Required),
                field("artifact", T::Artifact, D::Required),
                field("owner", T::Name, D::Text("root")),
                field("group", T::Name, D::Text("root")),
            ];
            FIELDS
        }
        Kind::Service => {
            const FIELDS: &[Field] = &[
                field("name", T::Name, D::Required),
                field("exec", T::NonEmptyTextList, D::Required),
                field("user", T::Name, D::Text("root")),
                field("environment", T::TextMap, D::EmptyMap),
                field("after", T::TextList, D::EmptyList),
                field("restart", T::Text, D::Text("on-failure")),
            ];
            FIELDS
        }
        Kind::Container => {
            const FIELDS: &[Field] = &[
                field("name", T::Name, D::Required),
                field("image", T::Image, D::Required),
                field("command", T::TextList, D::EmptyList),
                field("environment", T::TextMap, D::EmptyMap),
                field("mounts", T::Mounts, D::EmptyList),
                field("ports", T::TextList, D::EmptyList),
                field("user", T::OptionalText, D::Null),
            ];
            FIELDS
        }
    }
}

/// The names of a kind's fields as a module writes them.
pub fn field_names(kind: Kind) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = fields(kind).iter().map(|f| f.name).collect();
    if kind == Kind::File {
        names.extend(FILE_CONTENT_FIELDS);
    }
    names
}

/// What a field NixOS gives the same thing (`environment.etc.<name>.text`,
/// `systemd.services.<name>.script`, `users.users.<name>.extraGroups`) is called
/// in a shape, where the names differ.
fn nixos_field(kind: Kind, field: &str) -> Option<&'static str> {
    Some(match (kind, field) {
        (Kind::File, "text") => {
            "a file's text is its `content` (NixOS's `environment.etc.<name>.text`), or `source` for a file of the repository"
        }
        (Kind::File | Kind::Secret | Kind::Directory, "user") => "the owner is `owner`",
        (Kind::Link, "source") => {
            "a link is `mesh.link { path = \"/where/it/is\"; target = \"/what/it/points/to\"; }`"
        }
        (Kind::Service, "script" | "ExecStart" | "serviceConfig" | "command") => {
            "a service runs `exec`, a list of the program's absolute path and its arguments: `exec = [ \"/usr/bin/app\" \"--port\" \"8080\" ];`"
        }
        (Kind::Service, "wantedBy" | "enable") => {
            "a declared service is enabled and started: there is nothing to turn on"
        }
        (Kind::Service, "requires" | "wants" | "bindsTo") => {
            "a service waits for others with `after` (mesh services or systemd units)"
        }
        (Kind::User, "extraGroups") => "a user's supplementary groups are `groups`",
        (Kind::User, "isNormalUser" | "isSystemUser") => {
            "a user is a system account with `system = true;`, a normal one without it"
        }
        (Kind::User, "uid" | "gid") => {
            "ids are given by `useradd` on the node: a user is named, never numbered"
        }
        (Kind::Container, "cmd" | "entrypoint") => {
            "a container's command is `command`, a list of words"
        }
        (Kind::Container, "volumes") => "a container's volumes are `mounts`",
        _ => return None,
    })
}

fn name_attr(name: &'static str, value: Value, span: Span) -> Attr {
    Attr {
        name: lang::Name::of(name),
        value,
        span: Some(span),
    }
}

fn invalid(kind: Kind, message: String, span: Span, help: String) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(
            codes::INVALID_SHAPE,
            format!("`mesh.{}`: {message}", kind.name()),
        )
        .with_primary(span, "in this shape")
        .with_help(help),
    )
}

fn is_valid_name(text: &[u8]) -> bool {
    match text.first() {
        Some(first) if first.is_ascii_lowercase() || first.is_ascii_digit() || *first == b'_' => {
            text.iter().all(|b| {
                b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(b, b'_' | b'-' | b'.' | b'@')
            })
        }
        _ => false,
    }
}

/// The help for a path that is not canonical: the path written canonically when
/// it only has a trailing `/` or doubled ones (`"/srv/web/"` is `"/srv/web"`), else
/// what a path on the node looks like.
fn canonical_path_help(path: &[u8]) -> String {
    let text = String::from_utf8_lossy(path);
    let joined: Vec<&str> = text.split('/').filter(|part| !part.is_empty()).collect();
    let tidy = format!("/{}", joined.join("/"));
    if text.starts_with('/') && tidy.len() > 1 && is_canonical_absolute(tidy.as_bytes()) {
        return format!("write `\"{tidy}\"`: a path on the node has no trailing or doubled `/`");
    }
    "write the path on the node, e.g. \"/etc/nginx/nginx.conf\"".to_string()
}

/// Is `path` absolute and canonical (no `.`, `..`, `//` or trailing slash)?
pub fn is_canonical_absolute(path: &[u8]) -> bool {
    if path.first() != Some(&b'/') || path == b"/" {
        return path == b"/";
    }
    path[1..]
        .split(|b| *b == b'/')
        .all(|component| !component.is_empty() && component != b"." && component != b"..")
}

fn interned_attr(name: &lang::Name, value: Value, span: Span) -> Attr {
    Attr {
        name: *name,
        value,
        span: Some(span),
    }
}

/// The interned names and texts records are made of, per thread, so that making a
/// record interns nothing (`lang::Name::of` looks its text up at every call).
struct Names {
    marker: lang::value::Bytes,
    type_key: lang::Name,
    kind_key: lang::Name,
    source_key: lang::Name,
    content_key: lang::Name,
    content_base64_key: lang::Name,
    column_key: lang::Name,
    file_key: lang::Name,
    line_key: lang::Name,
    empty_list: Value,
    empty_set: Value,
    /// By kind, in [`Kind::ALL`] order.
    kinds: Vec<KindNames>,
}

struct KindNames {
    kind: lang::value::Bytes,
    /// The names of [`fields`], in its order.
    fields: Vec<lang::Name>,
    /// The interned default text of each of [`fields`], if it has one.
    defaults: Vec<Option<lang::value::Bytes>>,
    /// The positions of a record's entries as [`construct`] pushes them (`_type`,
    /// `kind`, `source`, the fields, a file's `content` and `content_base64`),
    /// in name order.
    order: Vec<usize>,
    /// The names of a record's entries in name order (the record's own order).
    sorted: Vec<&'static str>,
    /// The same, interned: a record whose names are these copies has this layout.
    sorted_names: Vec<lang::Name>,
    /// [`field_name`] of each of `sorted`.
    sorted_fields: Vec<Option<&'static str>>,
}

impl KindNames {
    /// Does `record` hold exactly the entries [`construct`] makes, in its order?
    /// (Names are compared by address: the copies interned here.)
    fn made(&self, record: &Attrs) -> bool {
        record.len() == self.sorted_names.len()
            && record
                .iter()
                .zip(&self.sorted_names)
                .all(|(entry, name)| entry.name.same(*name))
    }

    /// The position of the entry `name` in a record of this layout.
    fn position(&self, name: &str) -> Option<usize> {
        let (length, first) = (name.len(), name.as_bytes().first());
        self.sorted.iter().position(|other| {
            other.len() == length && other.as_bytes().first() == first && *other == name
        })
    }
}

impl Names {
    fn new() -> Names {
        let name = lang::Name::of;
        let text = |text: &str| -> lang::value::Bytes { lang::value::Bytes::from(text.as_bytes()) };
        let kinds = Kind::ALL
            .iter()
            .map(|&kind| {
                let mut layout: Vec<&'static str> = vec!["_type", "kind", "source"];
                layout.extend(fields(kind).iter().map(|field| field.name));
                if kind == Kind::File {
                    layout.extend(["content", "content_base64"]);
                }
                let mut order: Vec<usize> = (0..layout.len()).collect();
                order.sort_by_key(|&index| layout.get(index).map(|text| text.as_bytes()));
                let sorted: Vec<&'static str> = order
                    .iter()
                    .filter_map(|&index| layout.get(index).copied())
                    .collect();
                KindNames {
                    sorted_names: sorted.iter().map(|text| name(text)).collect(),
                    sorted_fields: sorted
                        .iter()
                        .map(|text| field_name(kind, text.as_bytes()))
                        .collect(),
                    sorted,
                    kind: text(kind.name()),
                    fields: fields(kind).iter().map(|field| name(field.name)).collect(),
                    defaults: fields(kind)
                        .iter()
                        .map(|field| match field.default {
                            FieldDefault::Text(default) => Some(text(default)),
                            _ => None,
                        })
                        .collect(),
                    order,
                }
            })
            .collect();
        Names {
            marker: text(SHAPE_MARKER),
            type_key: name("_type"),
            kind_key: name("kind"),
            source_key: name("source"),
            content_key: name("content"),
            content_base64_key: name("content_base64"),
            column_key: name("column"),
            file_key: name("file"),
            line_key: name("line"),
            empty_list: Value::List(lang::value::List::from(Vec::new())),
            empty_set: Value::Attrs(Attrs::new()),
            kinds,
        }
    }
}

thread_local! {
    static NAMES: Rc<Names> = Rc::new(Names::new());
}

/// Checks a shape's fields and fills defaults. `given` is what the module wrote;
/// the result is the shape as the language holds it, marked, with `source` (the
/// `{ file; line; column; }` set of the constructor call) attached.
pub fn construct(
    machine: &mut Machine,
    kind: Kind,
    given: &Value,
    span: Span,
    source: Value,
    made: Option<&Made>,
) -> EvalResult<Value> {
    let given = machine.force(given, span)?;
    let Value::Attrs(given) = given else {
        return Err(invalid(
            kind,
            format!("expected a set of fields, found {}", given.describe_type()),
            span,
            format!(
                "call it as `mesh.{} {{ {} = ...; }}`",
                kind.name(),
                kind.identity_field()
            ),
        ));
    };
    let names = NAMES.with(Rc::clone);
    let kind_names = names.kinds.get(kind as usize).ok_or_else(|| {
        invalid(
            kind,
            "unknown kind".into(),
            span,
            "use a constructor of `mesh`".into(),
        )
    })?;
    // a shape read back from a module carries its markers; they are not fields
    let revalidating = given.contains(b"_type");
    for entry in given.iter() {
        if revalidating
            && matches!(
                &*entry.name,
                b"_type" | b"kind" | b"source" | b"content_base64"
            )
        {
            continue;
        }
        // names written in code are the interned copies: most are found by address
        let interned = kind_names.fields.iter().any(|name| name.same(entry.name));
        if !interned && field_name(kind, &entry.name).is_none() {
            let known = field_names(kind);
            let name = String::from_utf8_lossy(&entry.name);
            let help = nixos_field(kind, &name)
                .map(str::to_string)
                .or_else(|| lang::diagnostic::did_you_mean(&name, known.iter().copied()))
                .unwrap_or_else(|| {
                    format!(
                        "`mesh.{}` takes {}",
                        kind.name(),
                        lang::diagnostic::quoted(known)
                    )
                });
            return Err(Box::new(
                Diagnostic::error(
                    codes::INVALID_SHAPE,
                    format!("`mesh.{}` has no field `{name}`", kind.name()),
                )
                .with_primary(entry.span.unwrap_or(span), "unknown field")
                .with_help(help),
            ));
        }
    }
    let mut entries = Vec::with_capacity(kind_names.order.len());
    entries.push(interned_attr(
        &names.type_key,
        Value::String(names.marker.clone()),
        span,
    ));
    entries.push(interned_attr(
        &names.kind_key,
        Value::String(kind_names.kind.clone()),
        span,
    ));
    entries.push(interned_attr(&names.source_key, source, span));
    for ((spec, name), default) in fields(kind)
        .iter()
        .zip(&kind_names.fields)
        .zip(&kind_names.defaults)
    {
        // a field keeps the span of the attribute that gave it, so a rule of the
        // plan checked later points at that line
        let mut value_span = span;
        let value = match given.get_attr(name) {
            Some(entry) => {
                let field_span = entry.span.unwrap_or(span);
                value_span = field_span;
                check_field(machine, kind, spec, &entry.value.clone(), field_span)?
            }
            None => match (spec.default, default) {
                (FieldDefault::Required, _) => {
                    return Err(invalid(
                        kind,
                        format!("the field `{}` is required", spec.name),
                        span,
                        format!("add `{} = ...;`", spec.name),
                    ));
                }
                (FieldDefault::Text(_), Some(text)) => Value::String(text.clone()),
                (FieldDefault::Text(text), None) => Value::string_from(text),
                (FieldDefault::Null, _) => Value::Null,
                (FieldDefault::Bool(value), _) => Value::Bool(value),
                (FieldDefault::EmptyList, _) => names.empty_list.clone(),
                (FieldDefault::EmptyMap, _) => names.empty_set.clone(),
            },
        };
        entries.push(interned_attr(name, value, value_span));
    }
    if kind == Kind::User {
        system_user_shell(&mut entries, span);
    }
    if kind == Kind::File {
        let (content, content_base64) = file_content(machine, &given, span)?;
        let content_span = given
            .get_attr(b"content")
            .or_else(|| given.get_attr(b"source"))
            .and_then(|entry| entry.span)
            .unwrap_or(span);
        entries.push(interned_attr(&names.content_key, content, content_span));
        entries.push(interned_attr(
            &names.content_base64_key,
            content_base64,
            content_span,
        ));
    }
    // the entries in name order, known for each kind: nothing to sort
    let record = if entries.len() == kind_names.order.len() {
        let mut slots: Vec<Option<Attr>> = entries.into_iter().map(Some).collect();
        let sorted: Vec<Attr> = kind_names
            .order
            .iter()
            .filter_map(|&index| slots.get_mut(index).and_then(Option::take))
            .collect();
        Attrs::from_sorted(sorted)
    } else {
        Attrs::from_unsorted(entries)
    };
    let record = record;
    if let Some(made) = made {
        made.remember(&record);
    }
    Ok(Value::Attrs(record))
}

/// The login shell of a system user without one: `/usr/sbin/nologin`, not the
/// host's default shell (`useradd` would give `/bin/sh` or `/bin/bash`), since a
/// service account is not for logging in. A user with `system = false` keeps the
/// host's default.
pub const SYSTEM_USER_SHELL: &str = "/usr/sbin/nologin";

fn system_user_shell(entries: &mut [Attr], span: Span) {
    let system = entries
        .iter()
        .any(|entry| &*entry.name == b"system" && matches!(entry.value, Value::Bool(true)));
    if !system {
        return;
    }
    if let Some(shell) = entries.iter_mut().find(|entry| &*entry.name == b"shell")
        && matches!(shell.value, Value::Null)
    {
        *shell = name_attr(
            "shell",
            Value::string_from(SYSTEM_USER_SHELL),
            shell.span.unwrap_or(span),
        );
    }
}

/// The `source` set of a constructor call.
pub fn source_value(file: &Value, line: usize, column: usize, span: Span) -> Value {
    let names = NAMES.with(Rc::clone);
    Value::Attrs(Attrs::from_sorted(vec![
        interned_attr(&names.column_key, Value::Int(column as i64), span),
        interned_attr(&names.file_key, file.clone(), span),
        interned_attr(&names.line_key, Value::Int(line as i64), span),
    ]))
}

/// Where each field of a shape record was given, by the constructor's own name of
/// the field (see [`field_name`]), in the record's order.
pub(crate) fn field_spans(kind: Kind, record: &Attrs) -> Vec<(&'static str, Span)> {
    let names = NAMES.with(Rc::clone);
    if let Some(layout) = names.kinds.get(kind as usize)
        && layout.made(record)
    {
        // made at the record's size: collected from a `filter_map`, it grew by
        // doubling for every shape
        let mut spans = Vec::with_capacity(record.len());
        spans.extend(
            record
                .iter()
                .zip(&layout.sorted_fields)
                .filter_map(|(entry, field)| Some(((*field)?, entry.span?))),
        );
        return spans;
    }
    record
        .iter()
        .filter_map(|entry| Some((field_name(kind, &entry.name)?, entry.span?)))
        .collect()
}

fn file_content(machine: &mut Machine, given: &Attrs, span: Span) -> EvalResult<(Value, Value)> {
    let content = given.get_attr(b"content").cloned();
    let source = given.get_attr(b"source").cloned();
    let already = given.get_attr(b"content_base64").cloned();
    match (content, source) {
        (Some(_), Some(source)) if !given.contains(b"_type") => Err(invalid(
            Kind::File,
            "give either `content` or `source`, not both".into(),
            source.span.unwrap_or(span),
            "`content` is the text itself; `source` is a file of the module to copy".into(),
        )),
        (Some(content), _) => {
            let value = machine.force(&content.value, span)?;
            match value {
                Value::String(_) => Ok((value, Value::Null)),
                Value::Null => match already {
                    Some(base64) => Ok((Value::Null, machine.force(&base64.value, span)?)),
                    None => Err(invalid(
                        Kind::File,
                        "`content` is null".into(),
                        span,
                        "give the file's text".into(),
                    )),
                },
                other => Err(invalid(
                    Kind::File,
                    format!("`content` must be a string, not {}", other.describe_type()),
                    content.span.unwrap_or(span),
                    "use `toString` or `builtins.toJSON` to turn values into text".into(),
                )),
            }
        }
        (None, Some(source)) => {
            let source_span = source.span.unwrap_or(span);
            let path = machine.force(&source.value, source_span)?;
            let Value::Path(path) = path else {
                return Err(invalid(
                    Kind::File,
                    format!(
                        "`source` must be a path such as `./nginx.conf`, not {}",
                        path.describe_type()
                    ),
                    source_span,
                    "write the path without quotes, relative to the module".into(),
                ));
            };
            let text =
                machine.coerce_to_string(&Value::Path(path.clone()), source_span, false, false)?;
            let read = read_file_value(machine, &text, source_span)?;
            let bytes = machine.force(&read, source_span)?;
            let Value::String(bytes) = bytes else {
                return Ok((Value::Null, Value::Null));
            };
            match std::str::from_utf8(&bytes) {
                Ok(_) => Ok((Value::String(bytes), Value::Null)),
                Err(_) => Ok((
                    Value::Null,
                    Value::string_from(&base64::engine::general_purpose::STANDARD.encode(&bytes)),
                )),
            }
        }
        (None, None) => Err(invalid(
            Kind::File,
            "the file needs `content` or `source`".into(),
            span,
            "add `content = \"...\";` or `source = ./file;`".into(),
        )),
    }
}

fn read_file_value(machine: &mut Machine, path: &[u8], span: Span) -> EvalResult<Value> {
    let content = machine.read_file(path, span, "a file's `source`")?;
    Ok(Value::String(lang::value::Bytes::from(content)))
}

fn check_field(
    machine: &mut Machine,
    kind: Kind,
    spec: &Field,
    value: &Value,
    span: Span,
) -> EvalResult<Value> {
    let value = machine.force(value, span)?;
    let wrong = |expected: &str, found: &Value| {
        invalid(
            kind,
            format!(
                "`{}` must be {expected}, not {}",
                spec.name,
                found.describe_type()
            ),
            span,
            format!("give `{}` {expected}", spec.name),
        )
    };
    match spec.field_type {
        FieldType::Name => match &value {
            Value::String(text) if is_valid_name(text) => Ok(value),
            Value::String(text) => Err(invalid(
                kind,
                format!("`{}` is not a valid name: {:?}", spec.name, String::from_utf8_lossy(text)),
                span,
                "names use lowercase letters, digits, `_`, `-`, `.` and `@`".into(),
            )),
            other => Err(wrong("a string", other)),
        },
        FieldType::AbsolutePath => match &value {
            Value::String(text) if is_canonical_absolute(text) => Ok(value),
            Value::String(text) => Err(invalid(
                kind,
                format!("`{}` must be an absolute path without `.`, `..` or a trailing `/`: {:?}", spec.name, String::from_utf8_lossy(text)),
                span,
                canonical_path_help(text),
            )),
            Value::Path(_) => Err(invalid(
                kind,
                format!("`{}` is a path of the repository, not of the node", spec.name),
                span,
                "write the node's path as a string, e.g. \"/etc/app.conf\"; to copy a repository file use `source = ./file;`".into(),
            )),
            other => Err(wrong("a string", other)),
        },
        FieldType::Text => match &value {
            Value::String(_) => Ok(value),
            other => Err(wrong("a string", other)),
        },
        FieldType::OptionalText => match &value {
            Value::String(_) | Value::Null => Ok(value),
            other => Err(wrong("a string or null", other)),
        },
        FieldType::Bool => match &value {
            Value::Bool(_) => Ok(value),
            other => Err(wrong("a Boolean", other)),
        },
        FieldType::Mode => match &value {
            Value::String(text) if (3..=4).contains(&text.len()) && text.iter().all(|b| (b'0'..=b'7').contains(b)) => {
                let mut normalised = vec![b'0'; 4 - text.len()];
                normalised.extend_from_slice(text);
                Ok(Value::String(lang::value::Bytes::from(normalised)))
            }
            Value::Int(_) => Err(invalid(
                kind,
                format!("`{}` must be an octal string such as \"0644\"", spec.name),
                span,
                "Nix has no octal integers: write the mode in quotes".into(),
            )),
            other => Err(wrong("an octal string such as \"0644\"", other)),
        },
        FieldType::TextList | FieldType::NonEmptyTextList => {
            let Value::List(items) = &value else {
                return Err(wrong("a list of strings", &value));
            };
            if matches!(spec.field_type, FieldType::NonEmptyTextList) && items.is_empty() {
                return Err(invalid(kind, format!("`{}` must not be empty", spec.name), span, "give the program to run first".into()));
            }
            let mut forced = Vec::with_capacity(items.len());
            for item in items.iter() {
                let item = machine.force(item, span)?;
                match &item {
                    Value::String(_) => forced.push(item),
                    other => return Err(wrong("a list of strings", other)),
                }
            }
            Ok(Value::List(lang::value::List::from(forced)))
        }
        FieldType::TextMap => {
            let Value::Attrs(attrs) = &value else {
                return Err(wrong("a set of strings", &value));
            };
            let mut entries = Vec::with_capacity(attrs.len());
            for entry in attrs.iter() {
                let item = machine.force(&entry.value, span)?;
                match &item {
                    Value::String(_) => entries.push(Attr {
                        name: entry.name,
                        value: item,
                        span: entry.span,
                    }),
                    other => return Err(wrong("a set of strings", other)),
                }
            }
            Ok(Value::Attrs(Attrs::from_sorted(entries)))
        }
        FieldType::Mounts => {
            let Value::List(items) = &value else {
                return Err(wrong("a list of mounts", &value));
            };
            let mut mounts = Vec::with_capacity(items.len());
            for item in items.iter() {
                let item = machine.force(item, span)?;
                let Value::Attrs(mount) = &item else {
                    return Err(wrong("a list of `{ source; target; read_only; }` sets", &item));
                };
                let mut entries = Vec::new();
                for (name, required) in [("source", true), ("target", true)] {
                    let Some(entry) = mount.get(name.as_bytes()) else {
                        if required {
                            return Err(invalid(kind, format!("a mount needs `{name}`"), span, "write `{ source = \"/srv/data\"; target = \"/data\"; }`".into()));
                        }
                        continue;
                    };
                    let entry = machine.force(&entry.clone(), span)?;
                    match &entry {
                        Value::String(text) if is_canonical_absolute(text) => entries.push(name_attr(name, entry, span)),
                        _ => return Err(invalid(kind, format!("a mount's `{name}` must be an absolute path"), span, "write the path as a string, e.g. \"/srv/data\"".into())),
                    }
                }
                let read_only = match mount.get(b"read_only") {
                    Some(flag) => machine.force(&flag.clone(), span)?,
                    None => Value::Bool(false),
                };
                if !matches!(read_only, Value::Bool(_)) {
                    return Err(wrong("a Boolean `read_only`", &read_only));
                }
                for entry in mount.iter() {
                    if !matches!(&*entry.name, b"source" | b"target" | b"read_only") {
                        return Err(invalid(
                            kind,
                            format!("a mount has no field `{}`", String::from_utf8_lossy(&entry.name)),
                            entry.span.unwrap_or(span),
                            "a mount is `{ source; target; read_only; }`".into(),
                        ));
                    }
                }
                entries.push(name_attr("read_only", read_only, span));
                mounts.push(Value::Attrs(Attrs::from_unsorted(entries)));
            }
            Ok(Value::List(lang::value::List::from(mounts)))
        }
        FieldType::Image => match &value {
            Value::String(text) if is_pinned_image(text) => Ok(value),
            Value::String(text) => Err(invalid(
                kind,
                format!("image {:?} is not pinned by digest", String::from_utf8_lossy(text)),
                span,
                "declare the upstream image in `mirrors` and use `images.NAME`, which is `REGISTRY/PATH@sha256:...`".into(),
            )),
            other => Err(wrong("an image reference", other)),
        },
        FieldType::Artifact => {
            let is_artifact = match &value {
                Value::Attrs(attrs) => match attrs.get(b"_type").cloned() {
                    Some(marker) => matches!(machine.force(&marker, span)?, Value::String(m) if &*m == ARTIFACT_MARKER.as_bytes()),
                    None => false,
                },
                _ => false,
            };
            if is_artifact {
                Ok(value)
            } else {
                Err(invalid(
                    kind,
                    format!("`{}` must be an artifact, not {}", spec.name, value.describe_type()),
                    span,
                    "declare the directory in `artifacts` and use `artifacts.NAME` from the `shapes` arguments".into(),
                ))
            }
        }
        FieldType::Handle(what) => match &value {
            Value::Opaque(_) => Ok(value),
            other => Err(invalid(
                kind,
                format!("`{}` must be {what}, not {}", spec.name, other.describe_type()),
                span,
                format!("take `{}` from the `shapes` function's arguments", spec.name),
            )),
        },
    }
}

/// `REGISTRY/PATH@sha256:HEX` with 64 lowercase hex digits.
pub fn is_pinned_image(text: &[u8]) -> bool {
    let text = String::from_utf8_lossy(text);
    let Some((name, digest)) = text.split_once("@sha256:") else {
        return false;
    };
    !name.is_empty()
        && name.contains('/')
        && digest.len() == 64
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Turns values a plan cannot hold as such (secret and artifact handles) into
/// what the plan carries: for a secret the sealed text, for an artifact
/// `{ artifact; artifact_digest; }`.
pub type OpaqueToJson<'a> =
    dyn FnMut(&mut Machine, &Value, Span) -> EvalResult<serde_json::Value> + 'a;

/// A language string as plan text (which is UTF-8; the checks before made sure of
/// it, and a stray byte would become U+FFFD). The common valid case copies once.
fn owned_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

struct Reader<'a> {
    attrs: &'a Attrs,
    span: Span,
    /// The layout of `attrs` if it is a record as [`construct`] makes it: its
    /// entries are then found by position.
    layout: Option<&'a KindNames>,
}

impl Reader<'_> {
    fn value(&self, machine: &mut Machine, name: &str) -> EvalResult<Value> {
        let entry = match self.layout {
            Some(layout) => layout
                .position(name)
                .and_then(|position| self.attrs.entries().get(position))
                .map(|entry| &entry.value),
            None => self.attrs.get(name.as_bytes()),
        };
        match entry {
            Some(value) => machine.force(value, self.span),
            None => Ok(Value::Null),
        }
    }

    fn text(&self, machine: &mut Machine, name: &str) -> EvalResult<String> {
        Ok(self.optional_text(machine, name)?.unwrap_or_default())
    }

    fn optional_text(&self, machine: &mut Machine, name: &str) -> EvalResult<Option<String>> {
        Ok(match self.value(machine, name)? {
            Value::String(text) => Some(owned_text(&text)),
            _ => None,
        })
    }

    fn boolean(&self, machine: &mut Machine, name: &str) -> EvalResult<bool> {
        Ok(matches!(self.value(machine, name)?, Value::Bool(true)))
    }

    fn texts(&self, machine: &mut Machine, name: &str) -> EvalResult<Vec<String>> {
        let Value::List(items) = self.value(machine, name)? else {
            return Ok(Vec::new());
        };
        let mut result = Vec::with_capacity(items.len());
        for item in items.iter() {
            if let Value::String(text) = machine.force(item, self.span)? {
                result.push(owned_text(&text));
            }
        }
        Ok(result)
    }

    fn text_map(
        &self,
        machine: &mut Machine,
        name: &str,
    ) -> EvalResult<std::collections::BTreeMap<String, String>> {
        let Value::Attrs(entries) = self.value(machine, name)? else {
            return Ok(Default::default());
        };
        let mut result = std::collections::BTreeMap::new();
        for entry in entries.iter() {
            if let Value::String(text) = machine.force(&entry.value, self.span)? {
                result.insert(owned_text(&entry.name), owned_text(&text));
            }
        }
        Ok(result)
    }
}

/// The plan resource of a validated shape record.
pub fn resource(
    machine: &mut Machine,
    kind: Kind,
    attrs: &Attrs,
    span: Span,
    opaque: &mut OpaqueToJson<'_>,
) -> EvalResult<plan::Resource> {
    let names = NAMES.with(Rc::clone);
    let layout = names
        .kinds
        .get(kind as usize)
        .filter(|layout| layout.made(attrs));
    let read = Reader {
        attrs,
        span,
        layout,
    };
    let m = machine;
    Ok(match kind {
        Kind::User => plan::Resource::User(plan::User {
            name: read.text(m, "name")?,
            system: read.boolean(m, "system")?,
            home: read.optional_text(m, "home")?,
            shell: read.optional_text(m, "shell")?,
            groups: read.texts(m, "groups")?,
        }),
        Kind::Directory => plan::Resource::Directory(plan::Directory {
            path: read.text(m, "path")?,
            owner: read.text(m, "owner")?,
            group: read.text(m, "group")?,
            mode: read.text(m, "mode")?,
        }),
        Kind::File => plan::Resource::File(plan::File {
            path: read.text(m, "path")?,
            content: read.optional_text(m, "content")?,
            content_base64: read.optional_text(m, "content_base64")?,
            owner: read.text(m, "owner")?,
            group: read.text(m, "group")?,
            mode: read.text(m, "mode")?,
        }),
        Kind::Link => plan::Resource::Link(plan::Link {
            path: read.text(m, "path")?,
            target: read.text(m, "target")?,
        }),
        Kind::Secret => {
            let handle = read.value(m, "secret")?;
            let sealed = opaque(m, &handle, span)?;
            plan::Resource::Secret(plan::Secret {
                path: read.text(m, "path")?,
                sealed: sealed.as_str().unwrap_or_default().to_string(),
                owner: read.text(m, "owner")?,
                group: read.text(m, "group")?,
                mode: read.text(m, "mode")?,
            })
        }
        Kind::Archive => {
            let (artifact, artifact_digest) = match read.value(m, "artifact")? {
                Value::Attrs(record) => {
                    let record = Reader {
                        attrs: &record,
                        span,
                        layout: None,
                    };
                    (
                        record.text(m, "artifact")?,
                        record.text(m, "artifact_digest")?,
                    )
                }
                _ => (String::new(), String::new()),
            };
            plan::Resource::Archive(plan::Archive {
                path: read.text(m, "path")?,
                artifact,
                artifact_digest,
                owner: read.text(m, "owner")?,
                group: read.text(m, "group")?,
            })
        }
        Kind::Service => plan::Resource::Service(plan::Service {
            name: read.text(m, "name")?,
            exec: read.texts(m, "exec")?,
            user: read.text(m, "user")?,
            environment: read.text_map(m, "environment")?,
            after: read.texts(m, "after")?,
            restart: read.text(m, "restart")?,
        }),
        Kind::Container => {
            let mut mounts = Vec::new();
            if let Value::List(items) = read.value(m, "mounts")? {
                for item in items.iter() {
                    if let Value::Attrs(mount) = m.force(item, span)? {
                        let mount_reader = Reader {
                            attrs: &mount,
                            span,
                            layout: None,
                        };
                        mounts.push(plan::Mount {
                            source: mount_reader.text(m, "source")?,
                            target: mount_reader.text(m, "target")?,
                            read_only: mount_reader.boolean(m, "read_only")?,
                        });
                    }
                }
            }
            plan::Resource::Container(plan::Container {
                name: read.text(m, "name")?,
                image: read.text(m, "image")?,
                command: read.texts(m, "command")?,
                environment: read.text_map(m, "environment")?,
                mounts,
                ports: read.texts(m, "ports")?,
                user: read.optional_text(m, "user")?,
            })
        }
    })
}
