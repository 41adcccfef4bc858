//! The shapes stage: calls each module's `shapes` with everything known about the
//! node, reads the shapes back (validated again, so a hand-made set cannot slip
//! past the constructors), finds conflicts between modules, and checks that every
//! need of every shape (parent directory, owner, group, mount source) is declared
//! or part of the base system.

use std::collections::{BTreeMap, BTreeSet};

use lang::codes;
use lang::value::{Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value};
use plan::{Kind, Resource};

use crate::inventory::{Base, Node};
use crate::module::{self, Module};
use crate::resolve::Resolved;
use crate::shape::{self, Made, OpaqueToJson, SHAPE_MARKER};

/// One resource of a node's plan, before it is written.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeDecl {
    pub resource: Resource,
    pub module: String,
    /// Repository-relative file, line and column of the constructor call.
    pub source: plan::Source,
    pub span: Span,
    /// Where each field was given (the attribute the module wrote), for
    /// diagnostics about one field; a field left to its default has the call's span.
    /// Sorted by name; the names are the constructor's own (no copy per shape).
    pub field_spans: Vec<(&'static str, Span)>,
}

impl ShapeDecl {
    pub fn kind(&self) -> Kind {
        self.resource.kind()
    }

    pub fn identity(&self) -> &str {
        self.resource.identity()
    }

    pub fn describe(&self) -> String {
        format!("{} `{}`", self.kind().name(), self.identity())
    }
}

/// Where a set written in the source stands: its first attribute as written (a
/// set has no span of its own, and one made by `//` has attributes from sets far
/// apart, so no span from first to last).
fn set_span(attrs: &Attrs) -> Option<Span> {
    attrs
        .iter()
        .filter_map(|attr| attr.span)
        .min_by_key(|span| (span.file, span.start))
}

/// The element of `shapes` said: the set itself where it was written in the
/// source, else the `shapes` field (`returned here`).
fn element_place(element: &Value, field_span: Span, label: &str) -> (Span, String) {
    match element {
        Value::Attrs(attrs) => match set_span(attrs) {
            Some(span) => (span, label.to_string()),
            None => (field_span, "returned here".to_string()),
        },
        _ => (field_span, "returned here".to_string()),
    }
}

/// A constructor and its set side by side in `shapes`, where one call was meant;
/// `set` is the set, said where it is written.
fn unparenthesised_call(module: &str, set: &Value, span: Span) -> Diagnostic {
    let (place, label) = element_place(
        set,
        span,
        "this set is an element of its own, not the call's argument",
    );
    Diagnostic::error(
        codes::NOT_A_SHAPE_LIST,
        format!(
            "`shapes` of module `{module}` holds a function and then a set where a shape was meant: in a list, `mesh.user {{ ... }}` without parentheses is two elements"
        ),
    )
    .with_primary(place, label)
    .with_help("list elements are separated by spaces, so a call in a list needs parentheses: write `[ (mesh.user { name = \"alice\"; }) (mesh.file { ... }) ]`")
}

fn not_a_shape(module: &str, found: &Value, span: Span) -> Diagnostic {
    let (place, label) = element_place(found, span, "this set is not a shape");
    Diagnostic::error(
        codes::NOT_A_SHAPE_LIST,
        format!("`shapes` of module `{module}` must return a list of shapes; it contains {}", found.describe_type()),
    )
    .with_primary(place, label)
    .with_help("build each element with a constructor such as `mesh.file { ... }` or `mesh.service { ... }`")
}

/// Reads one shape value back into a declaration.
fn read_shape(
    machine: &mut Machine,
    module: &str,
    value: &Value,
    span: Span,
    made: &Made,
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
            Value::String(name) => std::str::from_utf8(&name).ok().and_then(Kind::from_name),
            _ => None,
        },
        None => None,
    };
    let Some(kind) = kind else {
        diagnostics.push(not_a_shape(module, &value, span));
        return Ok(None);
    };
    let source_value = match attrs.get(b"source").cloned() {
        Some(source) => machine.force(&source, span)?,
        None => Value::Null,
    };
    let source = read_source(machine, &source_value, span)?;
    // a record made by a constructor was checked then; anything else is checked now
    let record: Attrs = if made.contains(attrs) {
        attrs.clone()
    } else {
        match shape::construct(machine, kind, &value, call_span, source_value, None) {
            Ok(Value::Attrs(record)) => record,
            Ok(_) => return Ok(None),
            Err(error) => {
                diagnostics.push(*error);
                return Ok(None);
            }
        }
    };
    let resource = shape::resource(machine, kind, &record, call_span, opaque)?;
    let field_spans = shape::field_spans(kind, &record);
    Ok(Some(ShapeDecl {
        resource,
        module: module.to_string(),
        source,
        span: call_span,
        field_spans,
    }))
}

fn read_source(machine: &mut Machine, source: &Value, span: Span) -> EvalResult<plan::Source> {
    let mut result = plan::Source {
        file: String::new(),
        line: 0,
        column: 0,
    };
    let Value::Attrs(source) = source else {
        return Ok(result);
    };
    for entry in source.iter() {
        let value = machine.force(&entry.value, span)?;
        match (&*entry.name, value) {
            (b"file", Value::String(file)) => {
                result.file = String::from_utf8_lossy(&file).into_owned()
            }
            (b"line", Value::Int(line)) => result.line = line.clamp(0, u32::MAX as i64) as u32,
            (b"column", Value::Int(column)) => {
                result.column = column.clamp(0, u32::MAX as i64) as u32
            }
            _ => {}
        }
    }
    Ok(result)
}

/// Everything a module's `shapes` function may receive besides node and settings.
pub struct ShapeArguments {
    pub credentials: Value,
    pub logins: Value,
    pub grants: Value,
    pub secrets: Value,
    pub images: Value,
    pub artifacts: Value,
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
    placed: Vec<ShapeDecl>,
    made: &Made,
    opaque: &mut OpaqueToJson<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Vec<ShapeDecl>> {
    let empty = Value::Attrs(Attrs::new());
    let mut by_identity = Declared::default();
    let errors_before = lang::error_count(diagnostics);
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
            ("logins", extra.logins),
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
            diagnostics.push(
                Diagnostic::error(
                    codes::NOT_A_SHAPE_LIST,
                    format!(
                        "`shapes` of module `{name}` must return a list of shapes, not {}",
                        shapes.describe_type()
                    ),
                )
                .with_primary(field_span, "returned here")
                .with_help("return a list: `shapes = { ... }: [ (mesh.file { ... }) (mesh.service { ... }) ];`"),
            );
            continue;
        };
        let mut elements = items.iter();
        while let Some(item) = elements.next() {
            let item = machine.force(item, field_span)?;
            // `[ mesh.user { ... } ]`: Nix's lists are separated by spaces, so the
            // call without parentheses is the constructor and then its argument
            if item.is_function()
                && let Some(next) = elements.as_slice().first()
                && let set @ Value::Attrs(_) = machine.force(next, field_span)?
            {
                diagnostics.push(unparenthesised_call(name, &set, field_span));
                elements.next();
                continue;
            }
            let Some(declaration) =
                read_shape(machine, name, &item, field_span, made, opaque, diagnostics)?
            else {
                continue;
            };
            if let Some(declaration) = follows_plan_rules(declaration, diagnostics) {
                add(&mut by_identity, declaration, diagnostics);
            }
        }
    }
    made.clear();
    // what the compiler places (credentials, grants manifests, needs) joins last
    for declaration in placed {
        if let Some(declaration) = follows_plan_rules(declaration, diagnostics) {
            add(&mut by_identity, declaration, diagnostics);
        }
    }
    let shapes = by_identity.into_shapes();
    // a shape refused or in conflict is not among these: what needs it would be
    // told to declare what was declared, so needs wait until every shape is taken
    if lang::error_count(diagnostics) == errors_before {
        check_needs(node, &shapes, diagnostics);
        crate::after::check(&node.name, &shapes, diagnostics);
    }
    Ok(shapes)
}

/// The declaration if the plan's own validation (the host tools' rules) accepts it;
/// otherwise a diagnostic at the declaration, so that no plan the compiler writes
/// is refused later by `Plan::validate` or by the applier.
fn follows_plan_rules(
    declaration: ShapeDecl,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ShapeDecl> {
    let checked = declaration.resource.validate().and_then(|()| {
        plan::shape::validate_origin(
            || declaration.resource.shape_name(),
            &declaration.module,
            &declaration.source,
        )
    });
    let Err(error) = checked else {
        return match private_key_field(&declaration.resource) {
            None => Some(declaration),
            Some(field) => {
                holds_a_private_key(&declaration, field, diagnostics);
                None
            }
        };
    };
    let field = match &error {
        plan::PlanError::InvalidField { field, .. } => field.as_str(),
        _ => "",
    };
    let help = match specific_help(&declaration.resource, field) {
        Some(help) => help,
        None => general_help(&declaration, field).to_string(),
    };
    let mut diagnostic = Diagnostic::error(
        codes::INVALID_SHAPE,
        format!(
            "`mesh.{}` of module `{}` breaks the plan's rules: {error}",
            declaration.kind().name(),
            plan::display::escaped(&declaration.module)
        ),
    );
    diagnostic = match declaration.field_span(field) {
        Some(field_span) if field_span != declaration.span => {
            diagnostic.with_primary(field_span, format!("this `{}`", language_field(field)))
        }
        _ => diagnostic.with_primary(declaration.span, "declared here"),
    };
    diagnostics.push(diagnostic.with_help(help));
    None
}

/// The field of `resource` that holds a private key (an age identity's
/// `AGE-SECRET-KEY-1...`, a PEM or OpenSSH private key with its body), if one
/// does: in its text, or in a file's content given as base64 (a `source` file).
/// Plans are not secret: they are written to `OUT`, sent through the
/// broker and kept on the node, and `meshc diff` shows a file's content only as
/// changed, so a key read into one (`readFile` of an identity) would leak unseen.
fn private_key_field(resource: &plan::Resource) -> Option<&'static str> {
    use base64::Engine;
    let mut found = None;
    resource.each_text(|field, text| {
        if found.is_some() {
            return;
        }
        let holds = if field == "content_base64" {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .is_ok_and(|bytes| crate::private_key::holds_private_key(&bytes))
        } else {
            crate::private_key::holds_private_key(text.as_bytes())
        };
        if holds {
            found = Some(field);
        }
    });
    found
}

/// E400 at the field of `declaration` that holds a private key; nothing of the
/// key is quoted.
fn holds_a_private_key(declaration: &ShapeDecl, field: &str, diagnostics: &mut Vec<Diagnostic>) {
    let diagnostic = Diagnostic::error(
        codes::INVALID_SHAPE,
        format!(
            "`mesh.{}` of module `{}` would put a private key into the plan, in its `{}`",
            declaration.kind().name(),
            plan::display::escaped(&declaration.module),
            language_field(field)
        ),
    );
    let diagnostic = match declaration.field_span(field) {
        Some(field_span) if field_span != declaration.span => {
            diagnostic.with_primary(field_span, format!("this `{}`", language_field(field)))
        }
        _ => diagnostic.with_primary(declaration.span, "declared here"),
    };
    diagnostics.push(diagnostic.with_help(
        "a plan is not secret (it is written to the output, sent through the broker and kept on the node): \
         give a private key to a node as a secret, sealed to it (`mesh.secret` with a need of the module), \
         and keep identities out of what modules read",
    ));
}

/// The name a module writes for a field of the plan (a secret's `sealed` is its
/// `secret`, an archive's digest comes with its `artifact`, a file's base64
/// content is its `content` or `source`).
fn language_field(plan_field: &str) -> &str {
    match plan_field {
        "sealed" => "secret",
        "artifact_digest" => "artifact",
        "content_base64" => "content",
        other => other,
    }
}

impl ShapeDecl {
    /// Where the module gave the plan field `field`, if it did.
    pub fn field_span(&self, field: &str) -> Option<Span> {
        let field = language_field(field);
        self.field_spans
            .iter()
            .find(|(name, _)| *name == field)
            .map(|(_, span)| *span)
    }
}

/// A node's declarations so far, one per resource: each found by its namespace
/// ([`namespace_rank`]) and identity.
#[derive(Default)]
pub struct Declared {
    /// The position in `declarations` of each, hashed by namespace and identity:
    /// no key of its own is made for a declaration (a `String` and a tree insert
    /// per shape cost more than a fleet's checks of them).
    positions: hashbrown::HashTable<usize>,
    /// In the order they were added.
    declarations: Vec<ShapeDecl>,
}

impl Declared {
    /// The declaration with `declaration`'s namespace and identity, if there is one.
    fn find(&self, hash: u64, declaration: &ShapeDecl) -> Option<&ShapeDecl> {
        let key = declaration_key(declaration);
        let position = self.positions.find(hash, |&position| {
            self.declarations
                .get(position)
                .is_some_and(|other| declaration_key(other) == key)
        })?;
        self.declarations.get(*position)
    }

    fn insert(&mut self, hash: u64, declaration: ShapeDecl) {
        self.declarations.push(declaration);
        let declarations = &self.declarations;
        // growing the table hashes the declarations already in it again
        self.positions
            .insert_unique(hash, declarations.len() - 1, |&position| {
                declarations
                    .get(position)
                    .map_or(0, |other| key_hash(declaration_key(other)))
            });
    }

    /// The declarations sorted by namespace and identity.
    pub fn into_shapes(self) -> Vec<ShapeDecl> {
        let mut declarations = self.declarations;
        // the keys are distinct, so the order is total; the keys are sorted with
        // their positions, then each declaration (which is large) is moved once
        let mut keys: Vec<((u8, &str), usize)> = declarations
            .iter()
            .enumerate()
            .map(|(position, declaration)| (declaration_key(declaration), position))
            .collect();
        keys.sort_unstable();
        let order: Vec<usize> = keys.into_iter().map(|(_, position)| position).collect();
        let mut slots: Vec<Option<ShapeDecl>> = declarations.drain(..).map(Some).collect();
        let mut shapes = Vec::with_capacity(slots.len());
        shapes.extend(
            order
                .into_iter()
                .filter_map(|position| slots.get_mut(position).and_then(Option::take)),
        );
        shapes
    }
}

/// What makes two declarations one resource: its namespace and identity.
fn declaration_key(declaration: &ShapeDecl) -> (u8, &str) {
    (namespace_rank(declaration), declaration.identity())
}

fn key_hash(key: (u8, &str)) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(key)
}

/// Resources share a namespace by path (0); units, services and containers, by
/// name (1); users by name (2).
fn namespace_rank(declaration: &ShapeDecl) -> u8 {
    match declaration.kind() {
        Kind::User => 2,
        Kind::Service | Kind::Container => 1,
        _ => 0,
    }
}

/// Adds a declaration; the same resource declared twice must be declared the same.
pub fn add(by_identity: &mut Declared, declaration: ShapeDecl, diagnostics: &mut Vec<Diagnostic>) {
    let hash = key_hash(declaration_key(&declaration));
    match by_identity.find(hash, &declaration) {
        None => by_identity.insert(hash, declaration),
        Some(existing) => {
            if existing.resource != declaration.resource {
                diagnostics.push(conflict(existing, &declaration));
            }
        }
    }
}

/// Two different declarations of one resource, by two modules or by one.
fn conflict(existing: &ShapeDecl, declaration: &ShapeDecl) -> Diagnostic {
    let same_module = existing.module == declaration.module;
    let what = if existing.kind() != declaration.kind() {
        format!(
            "`{}` as {} {} and as {} {}",
            declaration.identity(),
            article(existing.kind().name()),
            existing.kind().name(),
            article(declaration.kind().name()),
            declaration.kind().name()
        )
    } else {
        let left = existing.resource.to_json();
        let right = declaration.resource.to_json();
        let differing: Vec<String> = match (left, right) {
            (serde_json::Value::Object(left), serde_json::Value::Object(right)) => left
                .iter()
                .filter(|(name, value)| right.get(*name) != Some(*value))
                .map(|(name, _)| format!("`{name}`"))
                .collect(),
            _ => Vec::new(),
        };
        let verb = if differing.len() == 1 {
            "differs"
        } else {
            "differ"
        };
        format!(
            "{}{} differently ({} {verb})",
            declaration.describe(),
            if same_module { " twice," } else { "" },
            differing.join(", ")
        )
    };
    let (message, primary, secondary, help) = if same_module {
        (
            format!("module `{}` declares {what}", declaration.module),
            "declared again here".to_string(),
            "first declared here".to_string(),
            "a resource has one declaration per node: keep one of the two",
        )
    } else {
        (
            format!(
                "modules `{}` and `{}` declare {what}",
                existing.module, declaration.module
            ),
            format!("declared by `{}` here", declaration.module),
            format!("and by `{}` here", existing.module),
            "a resource has one declaration per node: let one module own it, or make both declarations identical",
        )
    };
    Diagnostic::error(codes::SHAPE_CONFLICT, message)
        .with_primary(declaration.span, primary)
        .with_secondary(existing.span, secondary)
        .with_help(help)
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
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
    let declared = OnNode::new(&node.base, shapes);
    let mut missing = Missing::default();
    for shape in shapes {
        if shape.kind().is_path_kind()
            && let Some(directory) = parent(shape.identity())
            && !declared.directory(directory)
        {
            missing.add(
                codes::UNDECLARED_DIRECTORY,
                directory,
                shape,
                Use {
                    alone: format!("the parent directory `{directory}` of {} is not declared on the node", shape.describe()),
                    part: shape.describe(),
                },
                || Said {
                    head: format!("the directory `{directory}` is not declared on the node, and"),
                    need: "are in it",
                    help: format!(
                        "declare it with `mesh.directory {{ path = \"{directory}\"; }}` in this module or one it requires, or add it to the inventory's `base.paths` if the node already has it"
                    ),
                },
            );
        }
        let (owner, group) = match &shape.resource {
            Resource::Directory(d) => (Some(d.owner.as_str()), Some(d.group.as_str())),
            Resource::File(f) => (Some(f.owner.as_str()), Some(f.group.as_str())),
            Resource::Secret(s) => (Some(s.owner.as_str()), Some(s.group.as_str())),
            Resource::Archive(a) => (Some(a.owner.as_str()), Some(a.group.as_str())),
            Resource::Service(s) => (Some(s.user.as_str()), None),
            _ => (None, None),
        };
        if let Some(user) = owner.filter(|user| !declared.user(user)) {
            let role = if shape.kind() == Kind::Service {
                "the user"
            } else {
                "the owner"
            };
            missing.add(
                codes::UNDECLARED_USER,
                user,
                shape,
                Use {
                    alone: format!("{role} of {} is `{user}`, which is not declared on the node", shape.describe()),
                    part: format!("{role} of {}", shape.describe()),
                },
                || {
                    // a user renamed in one place: the name declared that is like it
                    let similar = declared_like(user, &declared.users());
                    Said {
                        head: format!("user `{user}` is not declared on the node, and"),
                        need: "need it",
                        help: format!(
                            "{similar}declare it with `mesh.user {{ name = \"{user}\"; }}`, or add it to the inventory's `base.users` if the node already has it"
                        ),
                    }
                },
            );
        }
        let supplementary: &[String] = match &shape.resource {
            Resource::User(user) => &user.groups,
            _ => &[],
        };
        let needed_groups = group
            .into_iter()
            .chain(supplementary.iter().map(String::as_str));
        for group in needed_groups.filter(|group| !declared.group(group)) {
            missing.add(
                codes::UNDECLARED_GROUP,
                group,
                shape,
                Use {
                    alone: format!("group `{group}` of {} is not declared on the node", shape.describe()),
                    part: shape.describe(),
                },
                || {
                    let similar = declared_like(group, &declared.groups());
                    Said {
                        head: format!("group `{group}` is not declared on the node, and"),
                        need: "need it",
                        help: format!(
                            "{similar}a `mesh.user` declares the group of its name; declare `mesh.user {{ name = \"{group}\"; }}` or add it to the inventory's `base.groups`"
                        ),
                    }
                },
            );
        }
        if let Resource::Container(container) = &shape.resource {
            for mount in container
                .mounts
                .iter()
                .filter(|mount| !declared.path(&mount.source))
            {
                let source = mount.source.as_str();
                missing.add(
                    codes::UNDECLARED_MOUNT_SOURCE,
                    source,
                    shape,
                    Use {
                        alone: format!("{} mounts `{source}`, which is not declared on the node", shape.describe()),
                        part: shape.describe(),
                    },
                    || Said {
                        head: format!("`{source}` is not declared on the node, and"),
                        need: "mount it",
                        help: format!(
                            "declare it with `mesh.directory {{ path = \"{source}\"; }}` (or a file or secret), or add it to the inventory's `base.paths`"
                        ),
                    },
                );
            }
        }
    }
    missing.report(diagnostics);
}

/// What a node has, for what its shapes need: its base system, and the paths and
/// users its shapes declare, each sorted once and searched (no set is built for
/// every node, which cost a tenth of a fleet's checks).
struct OnNode<'a> {
    base: &'a Base,
    /// The identity of every file, directory, link, secret and archive, sorted,
    /// and whether it is a directory.
    paths: Vec<(&'a str, bool)>,
    /// The name of every user (and so of its group), sorted.
    users: Vec<&'a str>,
}

impl<'a> OnNode<'a> {
    fn new(base: &'a Base, shapes: &'a [ShapeDecl]) -> OnNode<'a> {
        let mut paths = Vec::with_capacity(shapes.len());
        let mut users = Vec::new();
        for shape in shapes {
            match shape.kind() {
                Kind::Directory => paths.push((shape.identity(), true)),
                Kind::File | Kind::Link | Kind::Secret | Kind::Archive => {
                    paths.push((shape.identity(), false))
                }
                Kind::User => users.push(shape.identity()),
                Kind::Service | Kind::Container => {}
            }
        }
        // the shapes come sorted by namespace and identity: usually nothing to sort
        if !paths.is_sorted() {
            paths.sort_unstable();
        }
        if !users.is_sorted() {
            users.sort_unstable();
        }
        OnNode { base, paths, users }
    }

    /// The kinds of path shapes with identity `path`: whether any is a directory.
    fn declared_path(&self, path: &str) -> Option<bool> {
        let first = self.paths.partition_point(|(other, _)| *other < path);
        let same = self.paths.get(first..).unwrap_or_default();
        let same = &same[..same.partition_point(|(other, _)| *other == path)];
        (!same.is_empty()).then(|| same.iter().any(|(_, directory)| *directory))
    }

    fn directory(&self, path: &str) -> bool {
        self.base.paths.contains(path) || self.declared_path(path) == Some(true)
    }

    fn path(&self, path: &str) -> bool {
        self.base.paths.contains(path) || self.declared_path(path).is_some()
    }

    fn user(&self, name: &str) -> bool {
        self.base.users.contains(name) || self.users.binary_search(&name).is_ok()
    }

    /// A user's group is named as the user is.
    fn group(&self, name: &str) -> bool {
        self.base.groups.contains(name) || self.users.binary_search(&name).is_ok()
    }

    /// Every user name, for a help naming one like a missing one.
    fn users(&self) -> BTreeSet<&'a str> {
        let base = self.base.users.iter().map(String::as_str);
        base.chain(self.users.iter().copied()).collect()
    }

    /// Every group name, for a help naming one like a missing one.
    fn groups(&self) -> BTreeSet<&'a str> {
        let base = self.base.groups.iter().map(String::as_str);
        base.chain(self.users.iter().copied()).collect()
    }
}

/// The start of a help for `name`, which the node lacks: the name `declared` on
/// it that is like it (a name changed in one place), or nothing.
fn declared_like(name: &str, declared: &BTreeSet<&str>) -> String {
    lang::diagnostic::did_you_mean(name, declared.iter().copied())
        .map(|similar| format!("{similar} (declared on the node) Otherwise, "))
        .unwrap_or_default()
}

/// What the node lacks, each thing once with every shape that needs it: a user
/// renamed in one place is one error, not one per file it owns.
#[derive(Default)]
struct Missing<'a> {
    /// In the order first met: what is said, and the uses.
    found: Vec<(lang::codes::Code, Said, Uses<'a>)>,
    /// Where each code and name is in `found`.
    index: std::collections::HashMap<(lang::codes::Code, &'a str), usize>,
}

/// The shapes that need one missing thing, each with its need.
type Uses<'a> = Vec<(&'a ShapeDecl, Use)>;

/// How one missing thing is said when several shapes need it.
struct Said {
    /// `user `www` is not declared on the node, and`
    head: String,
    /// What the shapes do with it: `need it`, `are in it`, `mount it`.
    need: &'static str,
    help: String,
}

/// One shape's need: the message when it is the only one, and the part naming it
/// in a list of several.
struct Use {
    alone: String,
    part: String,
}

impl<'a> Missing<'a> {
    fn add(
        &mut self,
        code: lang::codes::Code,
        name: &'a str,
        shape: &'a ShapeDecl,
        need: Use,
        said: impl FnOnce() -> Said,
    ) {
        match self.index.get(&(code, name)) {
            // one shape needing it twice (two mounts of one source) is one use
            Some(&at)
                if self.found[at]
                    .2
                    .last()
                    .is_some_and(|(last, _)| std::ptr::eq(*last, shape)) => {}
            Some(&at) => self.found[at].2.push((shape, need)),
            None => {
                self.index.insert((code, name), self.found.len());
                self.found.push((code, said(), vec![(shape, need)]));
            }
        }
    }

    fn report(self, diagnostics: &mut Vec<Diagnostic>) {
        for (code, said, uses) in self.found {
            let Some(((first, _), rest)) = uses.split_first() else {
                continue;
            };
            let label = |shape: &ShapeDecl| format!("a shape of module `{}`", shape.module);
            let message = match uses.as_slice() {
                [(_, alone)] => alone.alone.clone(),
                _ => {
                    const LISTED: usize = 3;
                    let mut parts: Vec<&str> = uses
                        .iter()
                        .take(LISTED)
                        .map(|(_, need)| need.part.as_str())
                        .collect();
                    let more = uses.len().saturating_sub(LISTED);
                    let more = format!("{more} more");
                    if uses.len() > LISTED {
                        parts.push(&more);
                    }
                    format!(
                        "{} {} shapes {}: {}",
                        said.head,
                        uses.len(),
                        said.need,
                        parts.join(", ")
                    )
                }
            };
            let mut diagnostic = Diagnostic::error(code, message)
                .with_primary(first.span, label(first))
                .with_help(said.help);
            // shapes made by one call (a `map` over paths) stand at one place; a
            // few places are shown, the message counts the rest
            const SHOWN: usize = 8;
            let mut places = vec![first.span];
            for (shape, _) in rest {
                if places.len() < SHOWN && !places.contains(&shape.span) {
                    places.push(shape.span);
                    diagnostic = diagnostic.with_secondary(shape.span, label(shape));
                }
            }
            diagnostics.push(diagnostic);
        }
    }
}

/// The help for a shape whose `field` breaks a rule, from what was written there
/// (the program's name in `command -v`).
fn specific_help(resource: &plan::Resource, field: &str) -> Option<String> {
    match (resource, field) {
        (plan::Resource::Service(service), "exec") => {
            let program = service.exec.first()?;
            if program.starts_with('/')
                || program.is_empty()
                || program.contains(char::is_whitespace)
            {
                return None;
            }
            Some(format!(
                "a program is named by its absolute path on the node: `command -v {program}` there prints it (such as `/usr/bin/{program}`); write that as the first word of `exec`"
            ))
        }
        _ => None,
    }
}

/// The help for a shape whose `field` breaks a rule, by its kind and field.
fn general_help(declaration: &ShapeDecl, field: &str) -> &'static str {
    match (declaration.kind(), field) {
        (Kind::Service, "exec") => {
            "the program is an absolute path on the node, e.g. `exec = [ \"/usr/sbin/nginx\" \"-g\" \"daemon off;\" ];` (`command -v nginx` on the node finds it); its arguments hold no control characters"
        }
        (Kind::Service, "after") => {
            "name a mesh service or container (`postgres`) or a systemd unit (`network-online.target`)"
        }
        (Kind::Service, "restart") => "write `always`, `on-failure` or `no`",
        (Kind::User, "name" | "groups") => {
            "user and group names are what `useradd` accepts: lowercase letters, digits, `_` and `-`, starting with a letter or `_`, at most 32 bytes, not all digits"
        }
        (Kind::User, "home" | "shell") => {
            "a home or shell is an absolute path without `:` (the field separator of `/etc/passwd`) or control characters"
        }
        (Kind::Secret, "mode") => {
            "a secret's mode is at most \"0640\": readable by its owner, at most by its group, never by others, never executable"
        }
        (Kind::Directory, "owner") if declaration.identity() == plan::check::STATE_DIRECTORY => {
            "mesh-apply keeps its state there: declare it as root's and writable by root only (the defaults: owner and group `root`, mode \"0755\"), and give the module's data a directory beneath it"
        }
        (Kind::Directory, "owner") if plan::check::on_state_way(declaration.identity()) => {
            "mesh-apply keeps its state in `/var/lib/mesh` and takes artifacts from `/var/lib/mesh/artifacts`, and reaches them only through root's directories: declare this one as root's and writable by root only (the defaults: owner and group `root`, mode \"0755\"), and give the module's data a directory beneath it"
        }
        (_, "path") if plan::check::on_state_way(declaration.identity()) => {
            "mesh-apply keeps its state in `/var/lib/mesh` and takes artifacts from `/var/lib/mesh/artifacts`: only directories, root's, may be declared there and on the way to them (`/var/lib`, `/var`); give this shape a path of its own, such as one beneath `/var/lib/mesh` or `/srv`"
        }
        (_, "path")
            if plan::check::account_file(declaration.identity()).is_some()
                || declaration.identity() == plan::check::ACCOUNT_DIRECTORY =>
        {
            "users and their groups are declared with `mesh.user`, which mesh-apply makes with `useradd` and `usermod`: the account files are theirs, and `/etc` may only be declared as a directory"
        }
        (Kind::Directory, "owner") if declaration.identity() == plan::check::ACCOUNT_DIRECTORY => {
            "`/etc` holds the account files every owner is looked up in: declare it as root's and writable by root only (the defaults: owner and group `root`, mode \"0755\")"
        }
        (_, "owner" | "group") => {
            "owners and groups are names, not numeric ids: declare the user with `mesh.user` and name it"
        }
        (_, "source") => {
            "rename the file: its name holds a character that cannot be shown faithfully"
        }
        (_, "path" | "target") => {
            "a path on the node is absolute and canonical (no `.`, `..`, `//` or trailing `/`) without control or bidirectional control characters, and leaves mesh-apply its own files (`/var/lib/mesh/applied.json`, `lock`, `identity`, `received.json`, `generations`), the directories that hold them (only a directory may be declared at `/var/lib/mesh/artifacts`, `/var/lib/mesh`, `/var/lib` or `/var`) and the names it gives its scratch (`.NAME.mesh-new`, `.NAME.mesh-unpack`, `.NAME.mesh-old`)"
        }
        _ => "fix the field the message names (the rules are in the book's chapter on shapes)",
    }
}
