//! The shapes stage: calls each module's `shapes` with everything known about the
//! node, reads the shapes back (validated again, so a hand-made set cannot slip
//! past the constructors), finds conflicts between modules, and checks that every
//! need of every shape (parent directory, owner, group, mount source) is declared
//! or part of the base system.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use lang::codes;
use lang::value::{Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value};

use crate::inventory::Node;
use crate::module::{self, Module};
use crate::resolve::Resolved;
use crate::shape::{self, Kind, SHAPE_MARKER};

/// One resource of a node's plan, before it is written.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeDecl {
    pub kind: Kind,
    pub identity: String,
    /// The kind's fields (everything but `kind`, `module`, `source`, `digest`).
    pub fields: serde_json::Map<String, serde_json::Value>,
    pub module: String,
    /// Repository-relative file, line and column of the constructor call.
    pub source: (String, usize, usize),
    pub span: Span,
}

impl ShapeDecl {
    /// Resources share a namespace by path; users, and units (services and
    /// containers), by name.
    pub fn namespace(&self) -> &'static str {
        match self.kind {
            Kind::User => "user",
            Kind::Service | Kind::Container => "unit",
            _ => "path",
        }
    }

    fn text(&self, field: &str) -> Option<&str> {
        self.fields.get(field).and_then(serde_json::Value::as_str)
    }

    pub fn describe(&self) -> String {
        format!("{} `{}`", self.kind.name(), self.identity)
    }
}

/// Host values a shape may hold that are not plain data (secrets, artifacts): the
/// credentials stage turns them into JSON.
pub type OpaqueToJson<'a> =
    dyn FnMut(&mut Machine, &Value, Span) -> EvalResult<serde_json::Value> + 'a;

fn to_json(
    machine: &mut Machine,
    value: &Value,
    span: Span,
    opaque: &mut OpaqueToJson<'_>,
) -> EvalResult<serde_json::Value> {
    let value = machine.force(value, span)?;
    Ok(match &value {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Float(f) => serde_json::Value::from(*f),
        Value::String(s) => serde_json::Value::String(String::from_utf8_lossy(s).into_owned()),
        Value::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items.iter() {
                out.push(to_json(machine, item, span, opaque)?);
            }
            serde_json::Value::Array(out)
        }
        Value::Attrs(attrs) => {
            let mut map = serde_json::Map::new();
            for entry in attrs.iter() {
                map.insert(
                    String::from_utf8_lossy(&entry.name).into_owned(),
                    to_json(machine, &entry.value, span, opaque)?,
                );
            }
            serde_json::Value::Object(map)
        }
        Value::Opaque(_) => opaque(machine, &value, span)?,
        other => {
            return Err(Box::new(
                Diagnostic::error(
                    codes::INVALID_SHAPE,
                    format!(
                        "a shape holds {}, which a plan cannot",
                        other.describe_type()
                    ),
                )
                .with_primary(span, "in this shape")
                .with_help("shape fields are strings, numbers, Booleans, lists and sets"),
            ));
        }
    })
}

fn not_a_shape(module: &str, found: &Value, span: Span) -> Diagnostic {
    Diagnostic::error(
        codes::NOT_A_SHAPE_LIST,
        format!("`shapes` of module `{module}` must return a list of shapes; it contains {}", found.describe_type()),
    )
    .with_primary(span, "returned here")
    .with_help("build each element with a constructor such as `mesh.file { ... }` or `mesh.service { ... }`")
}

/// Reads one shape value back into a declaration.
fn read_shape(
    machine: &mut Machine,
    module: &str,
    value: &Value,
    span: Span,
    opaque: &mut OpaqueToJson<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<ShapeDecl>> {
    let value = machine.force(value, span)?;
    let Value::Attrs(attrs) = &value else {
        diagnostics.push(not_a_shape(module, &value, span));
        return Ok(None);
    };
    let marker = match attrs.get(b"_type").cloned() {
        Some(marker) => machine.force(&marker, span)?,
        None => Value::Null,
    };
    if !matches!(&marker, Value::String(m) if &**m == SHAPE_MARKER.as_bytes()) {
        diagnostics.push(not_a_shape(module, &value, span));
        return Ok(None);
    }
    let kind_entry = attrs.get_attr(b"kind").cloned();
    let call_span = kind_entry.as_ref().and_then(|k| k.span).unwrap_or(span);
    let kind = match &kind_entry {
        Some(entry) => match machine.force(&entry.value, span)? {
            Value::String(name) => Kind::from_name(&name),
            _ => None,
        },
        None => None,
    };
    let Some(kind) = kind else {
        diagnostics.push(not_a_shape(module, &value, span));
        return Ok(None);
    };
    let source = read_source(machine, attrs, span)?;
    let normalised = match shape::construct(machine, kind, &value, call_span, source.clone()) {
        Ok(normalised) => normalised,
        Err(error) => {
            diagnostics.push(*error);
            return Ok(None);
        }
    };
    let Value::Attrs(normalised) = normalised else {
        return Ok(None);
    };
    let mut fields = serde_json::Map::new();
    for entry in normalised.iter() {
        let name = String::from_utf8_lossy(&entry.name).into_owned();
        if matches!(name.as_str(), "_type" | "kind" | "source") {
            continue;
        }
        fields.insert(name, to_json(machine, &entry.value, call_span, opaque)?);
    }
    let identity = fields
        .get(kind.identity_field())
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(Some(ShapeDecl {
        kind,
        identity,
        fields,
        module: module.to_string(),
        source,
        span: call_span,
    }))
}

fn read_source(
    machine: &mut Machine,
    attrs: &Attrs,
    span: Span,
) -> EvalResult<(String, usize, usize)> {
    let Some(source) = attrs.get(b"source").cloned() else {
        return Ok((String::new(), 0, 0));
    };
    let Value::Attrs(source) = machine.force(&source, span)? else {
        return Ok((String::new(), 0, 0));
    };
    let mut text = |name: &[u8]| -> EvalResult<Value> {
        match source.get(name).cloned() {
            Some(value) => machine.force(&value, span),
            None => Ok(Value::Null),
        }
    };
    let file = match text(b"file")? {
        Value::String(s) => String::from_utf8_lossy(&s).into_owned(),
        _ => String::new(),
    };
    let line = match text(b"line")? {
        Value::Int(n) => n.max(0) as usize,
        _ => 0,
    };
    let column = match text(b"column")? {
        Value::Int(n) => n.max(0) as usize,
        _ => 0,
    };
    Ok((file, line, column))
}

/// Everything a module's `shapes` function may receive besides node and settings.
pub struct ShapeArguments {
    pub credentials: Value,
    pub grants: Value,
    pub secrets: Value,
    pub images: Value,
    pub artifacts: Value,
}

impl ShapeArguments {
    pub fn empty() -> ShapeArguments {
        let empty = Value::Attrs(Rc::new(Attrs::new()));
        ShapeArguments {
            credentials: empty.clone(),
            grants: empty.clone(),
            secrets: empty.clone(),
            images: empty.clone(),
            artifacts: empty,
        }
    }
}

/// All shapes of one node, conflicts removed (and reported), sorted by namespace
/// and identity.
#[allow(clippy::too_many_arguments)]
pub fn node_shapes(
    machine: &mut Machine,
    node: &Node,
    resolved: &Resolved,
    modules: &BTreeMap<String, Module>,
    collected: &BTreeMap<String, Value>,
    extra: &dyn Fn(&str) -> ShapeArguments,
    opaque: &mut OpaqueToJson<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Vec<ShapeDecl>> {
    let empty = Value::Attrs(Rc::new(Attrs::new()));
    let mut by_identity: BTreeMap<(&'static str, String), ShapeDecl> = BTreeMap::new();
    for name in &resolved.modules {
        let Some(module) = modules.get(name) else {
            continue;
        };
        let extra = extra(name);
        let arguments = [
            ("node", node.value.clone()),
            (
                "settings",
                resolved
                    .settings
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| empty.clone()),
            ),
            (
                "collected",
                collected
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| empty.clone()),
            ),
            ("credentials", extra.credentials),
            ("grants", extra.grants),
            ("secrets", extra.secrets),
            ("images", extra.images),
            ("artifacts", extra.artifacts),
        ];
        let Some(shapes) = module::field_value(machine, module, "shapes", &arguments)? else {
            continue;
        };
        let field_span = module.field_span("shapes");
        let Value::List(items) = &shapes else {
            diagnostics.push(not_a_shape(name, &shapes, field_span));
            continue;
        };
        for item in items.iter() {
            let Some(declaration) =
                read_shape(machine, name, item, field_span, opaque, diagnostics)?
            else {
                continue;
            };
            add(&mut by_identity, declaration, diagnostics);
        }
    }
    let shapes: Vec<ShapeDecl> = by_identity.into_values().collect();
    check_needs(node, &shapes, diagnostics);
    Ok(shapes)
}

/// Adds a declaration; the same resource declared twice must be declared the same.
pub fn add(
    by_identity: &mut BTreeMap<(&'static str, String), ShapeDecl>,
    declaration: ShapeDecl,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let key = (declaration.namespace(), declaration.identity.clone());
    match by_identity.get(&key) {
        None => {
            by_identity.insert(key, declaration);
        }
        Some(existing)
            if existing.kind == declaration.kind && existing.fields == declaration.fields => {}
        Some(existing) => {
            let differing: Vec<String> = if existing.kind != declaration.kind {
                vec!["kind".to_string()]
            } else {
                existing
                    .fields
                    .iter()
                    .filter(|(name, value)| declaration.fields.get(*name) != Some(*value))
                    .map(|(name, _)| format!("`{name}`"))
                    .collect()
            };
            diagnostics.push(
                Diagnostic::error(
                    codes::SHAPE_CONFLICT,
                    format!(
                        "modules `{}` and `{}` declare {} differently ({} differ)",
                        existing.module,
                        declaration.module,
                        declaration.describe(),
                        differing.join(", ")
                    ),
                )
                .with_primary(declaration.span, format!("declared by `{}` here", declaration.module))
                .with_secondary(existing.span, format!("and by `{}` here", existing.module))
                .with_help("a resource has one declaration per node: let one module own it, or make both declarations identical"),
            );
        }
    }
}

fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(position) => Some(&path[..position]),
        None => None,
    }
}

/// Every parent directory, owner, group and mount source must be declared on the
/// node or be part of its base system.
pub fn check_needs(node: &Node, shapes: &[ShapeDecl], diagnostics: &mut Vec<Diagnostic>) {
    let mut directories: BTreeSet<&str> = node.base.paths.iter().map(String::as_str).collect();
    let mut paths: BTreeSet<&str> = node.base.paths.iter().map(String::as_str).collect();
    let mut users: BTreeSet<&str> = node.base.users.iter().map(String::as_str).collect();
    let mut groups: BTreeSet<&str> = node.base.groups.iter().map(String::as_str).collect();
    for shape in shapes {
        match shape.kind {
            Kind::Directory => {
                directories.insert(&shape.identity);
                paths.insert(&shape.identity);
            }
            Kind::User => {
                users.insert(&shape.identity);
                groups.insert(&shape.identity);
            }
            Kind::File | Kind::Link | Kind::Secret | Kind::Archive => {
                paths.insert(&shape.identity);
            }
            _ => {}
        }
    }
    let directory_help = |directory: &str| {
        format!(
            "declare it with `mesh.directory {{ path = \"{directory}\"; }}` in this module or one it requires, or add it to the inventory's `base.paths` if the node already has it"
        )
    };
    for shape in shapes {
        if matches!(
            shape.kind,
            Kind::Directory | Kind::File | Kind::Link | Kind::Secret | Kind::Archive
        ) {
            if let Some(directory) = parent(&shape.identity) {
                if !directories.contains(directory) {
                    diagnostics.push(
                        Diagnostic::error(
                            codes::UNDECLARED_DIRECTORY,
                            format!("the parent directory `{directory}` of {} is not declared on node `{}`", shape.describe(), node.name),
                        )
                        .with_primary(shape.span, format!("declared by `{}` here", shape.module))
                        .with_help(directory_help(directory)),
                    );
                }
            }
        }
        let mut need_user = |user: &str, role: &str| {
            if !users.contains(user) {
                diagnostics.push(
                    Diagnostic::error(
                        codes::UNDECLARED_USER,
                        format!("{} of {} is `{user}`, which is not declared on node `{}`", role, shape.describe(), node.name),
                    )
                    .with_primary(shape.span, format!("declared by `{}` here", shape.module))
                    .with_help(format!(
                        "declare it with `mesh.user {{ name = \"{user}\"; }}`, or add it to the inventory's `base.users` if the node already has it"
                    )),
                );
            }
        };
        match shape.kind {
            Kind::Directory | Kind::File | Kind::Secret | Kind::Archive => {
                if let Some(owner) = shape.text("owner") {
                    need_user(owner, "the owner");
                }
            }
            Kind::Service => {
                if let Some(user) = shape.text("user") {
                    need_user(user, "the user");
                }
            }
            _ => {}
        }
        let mut need_group = |group: &str| {
            if !groups.contains(group) {
                diagnostics.push(
                    Diagnostic::error(
                        codes::UNDECLARED_GROUP,
                        format!("group `{group}` of {} is not declared on node `{}`", shape.describe(), node.name),
                    )
                    .with_primary(shape.span, format!("declared by `{}` here", shape.module))
                    .with_help(format!(
                        "a `mesh.user` declares the group of its name; declare `mesh.user {{ name = \"{group}\"; }}` or add it to the inventory's `base.groups`"
                    )),
                );
            }
        };
        match shape.kind {
            Kind::Directory | Kind::File | Kind::Secret | Kind::Archive => {
                if let Some(group) = shape.text("group") {
                    need_group(group);
                }
            }
            Kind::User => {
                if let Some(list) = shape
                    .fields
                    .get("groups")
                    .and_then(serde_json::Value::as_array)
                {
                    for group in list.iter().filter_map(serde_json::Value::as_str) {
                        need_group(group);
                    }
                }
            }
            _ => {}
        }
        if shape.kind == Kind::Container {
            if let Some(mounts) = shape
                .fields
                .get("mounts")
                .and_then(serde_json::Value::as_array)
            {
                for mount in mounts {
                    let Some(source) = mount.get("source").and_then(serde_json::Value::as_str)
                    else {
                        continue;
                    };
                    if !paths.contains(source) {
                        diagnostics.push(
                            Diagnostic::error(
                                codes::UNDECLARED_MOUNT_SOURCE,
                                format!("{} mounts `{source}`, which is not declared on node `{}`", shape.describe(), node.name),
                            )
                            .with_primary(shape.span, format!("declared by `{}` here", shape.module))
                            .with_help(format!(
                                "declare it with `mesh.directory {{ path = \"{source}\"; }}` (or a file or secret), or add it to the inventory's `base.paths`"
                            )),
                        );
                    }
                }
            }
        }
    }
}
