//! A shape: one resource of one of the eight kinds, plus the module and source
//! location that declared it and its digest. Converts to and from plan JSON strictly;
//! must not add a ninth kind without a format version bump.

use std::fmt;

use serde_json::{Map, Value};

use crate::canonical::{Field, Members, sha256_digest, write_object};
use crate::error::{PlanError, ShapeName};
use crate::{Archive, Container, Directory, File, Link, Secret, Service, User};

/// The eight kinds, in the plan's canonical order (also the order of the design's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    User,
    Directory,
    File,
    Link,
    Secret,
    Archive,
    Service,
    Container,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::User,
        Kind::Directory,
        Kind::File,
        Kind::Link,
        Kind::Secret,
        Kind::Archive,
        Kind::Service,
        Kind::Container,
    ];

    /// The name used in plan JSON (`"kind": "file"`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Directory => "directory",
            Kind::File => "file",
            Kind::Link => "link",
            Kind::Secret => "secret",
            Kind::Archive => "archive",
            Kind::Service => "service",
            Kind::Container => "container",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The field that names the resource: `name` for users, services and containers,
    /// `path` for the others.
    pub fn identity_field(self) -> &'static str {
        match self {
            Kind::User | Kind::Service | Kind::Container => "name",
            Kind::Directory | Kind::File | Kind::Link | Kind::Secret | Kind::Archive => "path",
        }
    }

    /// Does this kind own a path on the node's filesystem?
    pub fn is_path_kind(self) -> bool {
        self.identity_field() == "path"
    }

    /// The kind's fields, without `kind`, `module`, `source` and `digest`.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::User => User::FIELDS,
            Kind::Directory => Directory::FIELDS,
            Kind::File => File::FIELDS,
            Kind::Link => Link::FIELDS,
            Kind::Secret => Secret::FIELDS,
            Kind::Archive => Archive::FIELDS,
            Kind::Service => Service::FIELDS,
            Kind::Container => Container::FIELDS,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Where a shape was declared: a repository-relative file and 1-based line and column.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub file: String,
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for Source {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// What a shape asks for: one of the eight kinds with its fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    User(User),
    Directory(Directory),
    File(File),
    Link(Link),
    Secret(Secret),
    Archive(Archive),
    Service(Service),
    Container(Container),
}

impl Resource {
    pub fn kind(&self) -> Kind {
        match self {
            Resource::User(_) => Kind::User,
            Resource::Directory(_) => Kind::Directory,
            Resource::File(_) => Kind::File,
            Resource::Link(_) => Kind::Link,
            Resource::Secret(_) => Kind::Secret,
            Resource::Archive(_) => Kind::Archive,
            Resource::Service(_) => Kind::Service,
            Resource::Container(_) => Kind::Container,
        }
    }

    /// The name or path that identifies it within its kind.
    pub fn identity(&self) -> &str {
        match self {
            Resource::User(user) => user.identity(),
            Resource::Directory(directory) => directory.identity(),
            Resource::File(file) => file.identity(),
            Resource::Link(link) => link.identity(),
            Resource::Secret(secret) => secret.identity(),
            Resource::Archive(archive) => archive.identity(),
            Resource::Service(service) => service.identity(),
            Resource::Container(container) => container.identity(),
        }
    }

    /// Checks the field values (paths canonical, modes octal, images pinned, ...).
    pub fn validate(&self) -> Result<(), PlanError> {
        let result = match self {
            Resource::User(user) => user.validate(),
            Resource::Directory(directory) => directory.validate(),
            Resource::File(file) => file.validate(),
            Resource::Link(link) => link.validate(),
            Resource::Secret(secret) => secret.validate(),
            Resource::Archive(archive) => archive.validate(),
            Resource::Service(service) => service.validate(),
            Resource::Container(container) => container.validate(),
        };
        result.map_err(|(field, reason)| PlanError::InvalidField {
            shape: self.shape_name(),
            field: field.to_string(),
            reason,
        })
    }

    pub fn shape_name(&self) -> ShapeName {
        ShapeName {
            kind: self.kind().name().to_string(),
            identity: self.identity().to_string(),
        }
    }

    /// The JSON object of the fields plus `kind`: exactly what the shape digest covers.
    pub fn to_json(&self) -> Value {
        let fields = match self {
            Resource::User(user) => serde_json::to_value(user),
            Resource::Directory(directory) => serde_json::to_value(directory),
            Resource::File(file) => serde_json::to_value(file),
            Resource::Link(link) => serde_json::to_value(link),
            Resource::Secret(secret) => serde_json::to_value(secret),
            Resource::Archive(archive) => serde_json::to_value(archive),
            Resource::Service(service) => serde_json::to_value(service),
            Resource::Container(container) => serde_json::to_value(container),
        };
        // plain structs of strings, bools, lists and string maps always serialize
        let mut object = match fields {
            Ok(Value::Object(object)) => object,
            _ => Map::new(),
        };
        object.insert(
            "kind".to_string(),
            Value::String(self.kind().name().to_string()),
        );
        Value::Object(object)
    }

    /// Calls `each` with every text the shape holds (a list's items, a map's keys
    /// and values, a mount's paths) and the field it is in: what a check of the
    /// whole shape's text looks at.
    pub fn each_text(&self, mut each: impl FnMut(&'static str, &str)) {
        for (name, field) in self.fields() {
            match field {
                Field::Text(text) | Field::OptionalText(Some(text)) => each(name, text),
                Field::Texts(texts) => texts.iter().for_each(|text| each(name, text)),
                Field::Map(map) => map.iter().for_each(|(key, value)| {
                    each(name, key);
                    each(name, value);
                }),
                Field::Mounts(mounts) => mounts.iter().for_each(|mount| {
                    each(name, &mount.source);
                    each(name, &mount.target);
                }),
                Field::OptionalText(None) | Field::Bool(_) | Field::Source(_) => {}
            }
        }
    }

    /// The fields and `kind`, borrowed, for the canonical writer, in canonical
    /// (sorted) order so that the writer need not sort them.
    fn fields(&self) -> Vec<(&'static str, Field<'_>)> {
        use Field::{Bool, Map, Mounts, OptionalText, Text, Texts};
        let kind = Text(self.kind().name());
        match self {
            Resource::User(user) => vec![
                ("groups", Texts(&user.groups)),
                ("home", OptionalText(user.home.as_deref())),
                ("kind", kind),
                ("name", Text(&user.name)),
                ("shell", OptionalText(user.shell.as_deref())),
                ("system", Bool(user.system)),
            ],
            Resource::Directory(directory) => vec![
                ("group", Text(&directory.group)),
                ("kind", kind),
                ("mode", Text(&directory.mode)),
                ("owner", Text(&directory.owner)),
                ("path", Text(&directory.path)),
            ],
            Resource::File(file) => vec![
                ("content", OptionalText(file.content.as_deref())),
                (
                    "content_base64",
                    OptionalText(file.content_base64.as_deref()),
                ),
                ("group", Text(&file.group)),
                ("kind", kind),
                ("mode", Text(&file.mode)),
                ("owner", Text(&file.owner)),
                ("path", Text(&file.path)),
            ],
            Resource::Link(link) => vec![
                ("kind", kind),
                ("path", Text(&link.path)),
                ("target", Text(&link.target)),
            ],
            Resource::Secret(secret) => vec![
                ("group", Text(&secret.group)),
                ("kind", kind),
                ("mode", Text(&secret.mode)),
                ("owner", Text(&secret.owner)),
                ("path", Text(&secret.path)),
                ("sealed", Text(&secret.sealed)),
            ],
            Resource::Archive(archive) => vec![
                ("artifact", Text(&archive.artifact)),
                ("artifact_digest", Text(&archive.artifact_digest)),
                ("group", Text(&archive.group)),
                ("kind", kind),
                ("owner", Text(&archive.owner)),
                ("path", Text(&archive.path)),
            ],
            Resource::Service(service) => vec![
                ("after", Texts(&service.after)),
                ("environment", Map(&service.environment)),
                ("exec", Texts(&service.exec)),
                ("kind", kind),
                ("name", Text(&service.name)),
                ("restart", Text(&service.restart)),
                ("user", Text(&service.user)),
            ],
            Resource::Container(container) => vec![
                ("command", Texts(&container.command)),
                ("environment", Map(&container.environment)),
                ("image", Text(&container.image)),
                ("kind", kind),
                ("mounts", Mounts(&container.mounts)),
                ("name", Text(&container.name)),
                ("ports", Texts(&container.ports)),
                ("user", OptionalText(container.user.as_deref())),
            ],
        }
    }

    /// The shape digest: sha256 of the canonical JSON of `kind` and the fields,
    /// without `module`, `source` and `digest`, so moving a declaration changes nothing
    /// on the node.
    pub fn digest(&self) -> String {
        let mut bytes = Vec::with_capacity(256);
        write_object(&mut self.fields(), &mut bytes);
        sha256_digest(&bytes)
    }

    /// Reads a kind's fields from a JSON object that holds exactly them.
    fn from_fields(
        kind: Kind,
        fields: Map<String, Value>,
        shape: &ShapeName,
    ) -> Result<Resource, PlanError> {
        let value = Value::Object(fields);
        Ok(match kind {
            Kind::User => Resource::User(read_fields(value, shape)?),
            Kind::Directory => Resource::Directory(read_fields(value, shape)?),
            Kind::File => Resource::File(read_fields(value, shape)?),
            Kind::Link => Resource::Link(read_fields(value, shape)?),
            Kind::Secret => Resource::Secret(read_fields(value, shape)?),
            Kind::Archive => Resource::Archive(read_fields(value, shape)?),
            Kind::Service => Resource::Service(read_fields(value, shape)?),
            Kind::Container => Resource::Container(read_fields(value, shape)?),
        })
    }
}

fn read_fields<T: serde::de::DeserializeOwned>(
    value: Value,
    shape: &ShapeName,
) -> Result<T, PlanError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let field = path.split(['.', '[']).next().unwrap_or("?").to_string();
        PlanError::InvalidField {
            shape: shape.clone(),
            field,
            reason: error.into_inner().to_string(),
        }
    })
}

/// One resource as it appears in a plan: what, who declared it, where, and its digest.
/// Its canonical JSON is computed once, when it is made, and reused by the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    resource: Resource,
    module: String,
    source: Source,
    digest: String,
    /// Held as the vector it was written in (an `Arc<[u8]>` copied it once more).
    canonical: std::sync::Arc<Vec<u8>>,
}

impl Shape {
    /// A shape declared by `module` at `source`; computes its digest.
    pub fn new(resource: Resource, module: impl Into<String>, source: Source) -> Shape {
        let module = module.into();
        // each field is escaped once: the digest's object and the plan's share them
        let members = Members::new(&mut resource.fields());
        let digest = members.digest();
        // in byte order, and no field of a kind is named so
        let canonical = std::sync::Arc::new(members.object_with(&[
            ("digest", Field::Text(&digest)),
            ("module", Field::Text(&module)),
            ("source", Field::Source(&source)),
        ]));
        drop(members);
        Shape {
            resource,
            module,
            source,
            digest,
            canonical,
        }
    }

    /// The shape's canonical JSON, exactly as it appears in a plan.
    pub fn canonical_bytes(&self) -> &[u8] {
        &self.canonical
    }

    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    pub fn module(&self) -> &str {
        &self.module
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// `sha256:HEX` over `kind` and the fields (see [`Resource::digest`]).
    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn kind(&self) -> Kind {
        self.resource.kind()
    }

    pub fn identity(&self) -> &str {
        self.resource.identity()
    }

    pub fn shape_name(&self) -> ShapeName {
        self.resource.shape_name()
    }

    /// Checks who declared the shape and where: `module` and `source.file` are shown
    /// to people (`meshc diff`, the applier's report), so neither may hold a control
    /// or bidirectional control character.
    pub fn validate_origin(&self) -> Result<(), PlanError> {
        validate_origin(|| self.shape_name(), &self.module, &self.source)
    }

    /// The shape's JSON object as written in a plan.
    pub fn to_json(&self) -> Value {
        let mut value = self.resource.to_json();
        if let Value::Object(object) = &mut value {
            object.insert("module".to_string(), Value::String(self.module.clone()));
            object.insert(
                "source".to_string(),
                serde_json::json!({
                    "file": self.source.file,
                    "line": self.source.line,
                    "column": self.source.column,
                }),
            );
            object.insert("digest".to_string(), Value::String(self.digest.clone()));
        }
        value
    }

    /// Reads one shape of a plan, refusing unknown kinds and fields, missing fields,
    /// invalid values and a digest that does not match the content.
    pub fn from_json(position: usize, value: Value) -> Result<Shape, PlanError> {
        let Value::Object(mut object) = value else {
            return Err(PlanError::Malformed {
                reason: format!("shape {position} is not a JSON object"),
            });
        };
        let kind_name = match object.remove("kind") {
            Some(Value::String(kind_name)) => kind_name,
            Some(_) => {
                return Err(PlanError::Malformed {
                    reason: format!("shape {position} has a `kind` that is not a string"),
                });
            }
            None => {
                return Err(PlanError::Malformed {
                    reason: format!("shape {position} has no `kind`"),
                });
            }
        };
        let Some(kind) = Kind::from_name(&kind_name) else {
            return Err(PlanError::UnknownKind {
                position,
                kind: kind_name,
            });
        };
        let identity = match object.get(kind.identity_field()) {
            Some(Value::String(identity)) => identity.clone(),
            _ => format!("#{position}"),
        };
        let shape_name = ShapeName {
            kind: kind.name().to_string(),
            identity,
        };
        let module = match object.remove("module") {
            Some(Value::String(module)) => module,
            Some(_) => return Err(invalid_field(&shape_name, "module", "not a string")),
            None => return Err(missing(&shape_name, "module")),
        };
        let source: Source = match object.remove("source") {
            Some(value) => serde_json::from_value(value)
                .map_err(|error| invalid_field(&shape_name, "source", &error.to_string()))?,
            None => return Err(missing(&shape_name, "source")),
        };
        let recorded_digest = match object.remove("digest") {
            Some(Value::String(digest)) => digest,
            Some(_) => return Err(invalid_field(&shape_name, "digest", "not a string")),
            None => return Err(missing(&shape_name, "digest")),
        };
        let allowed = kind.fields();
        if let Some(unknown) = object.keys().find(|key| !allowed.contains(&key.as_str())) {
            return Err(PlanError::UnknownField {
                shape: shape_name,
                field: unknown.clone(),
            });
        }
        if let Some(absent) = allowed.iter().find(|field| !object.contains_key(**field)) {
            return Err(missing(&shape_name, absent));
        }
        validate_origin(|| shape_name.clone(), &module, &source)?;
        let resource = Resource::from_fields(kind, object, &shape_name)?;
        resource.validate()?;
        let shape = Shape::new(resource, module, source);
        if shape.digest != recorded_digest {
            return Err(PlanError::ShapeDigestMismatch {
                shape: shape_name,
                recorded: recorded_digest,
                computed: shape.digest,
            });
        }
        Ok(shape)
    }
}

/// The rules of [`Shape::validate_origin`], for a shape not made yet; `shape`
/// names it in the refusal (and is called only then).
pub fn validate_origin(
    shape: impl FnOnce() -> ShapeName,
    module: &str,
    source: &Source,
) -> Result<(), PlanError> {
    let (field, reason) = match crate::check::display_text(module) {
        Err(reason) => ("module", reason),
        Ok(()) => match crate::check::display_text(&source.file) {
            Err(reason) => ("source", reason),
            Ok(()) => return Ok(()),
        },
    };
    Err(invalid_field(&shape(), field, &reason))
}

fn missing(shape: &ShapeName, field: &str) -> PlanError {
    PlanError::MissingField {
        shape: shape.clone(),
        field: field.to_string(),
    }
}

fn invalid_field(shape: &ShapeName, field: &str, reason: &str) -> PlanError {
    PlanError::InvalidField {
        shape: shape.clone(),
        field: field.to_string(),
        reason: reason.to_string(),
    }
}
