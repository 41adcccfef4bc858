//! The host vocabulary: the eight shape kinds, the plan format and its canonical digest.
//! Must not depend on any other crate of the workspace but `problems` (the escaping
//! of `display`), and does no I/O.
#![forbid(unsafe_code)]

pub mod archive;
pub mod canonical;
pub mod check;
pub mod container;
pub mod directory;
pub mod display;
pub mod error;
pub mod file;
pub mod link;
pub mod restart;
pub mod secret;
pub mod service;
pub mod shape;
pub mod unit;
pub mod user;

use serde_json::{Map, Value};

pub use archive::Archive;
pub use canonical::{canonical_json, is_sha256_digest, sha256_digest};
pub use container::{Container, Mount};
pub use directory::Directory;
pub use error::{PlanError, ShapeName};
pub use file::File;
pub use link::Link;
pub use secret::Secret;
pub use service::Service;
pub use shape::{Kind, Resource, Shape, Source};
pub use user::User;

/// The plan format this crate reads and writes.
pub const FORMAT: &str = "mesh-plan/1";

/// One node's plan: its shapes in canonical order and the digest over all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    node: String,
    shapes: Vec<Shape>,
    digest: String,
    /// The canonical JSON of the plan without its digest (what the digest covers).
    body: Vec<u8>,
}

impl Plan {
    /// A plan for `node`: sorts the shapes canonically (kind in [`Kind::ALL`] order,
    /// then identity by bytes), recomputes every shape digest and the plan digest.
    /// Does not check the shapes; call [`Plan::validate`] for that.
    pub fn new(node: impl Into<String>, mut shapes: Vec<Shape>) -> Plan {
        shapes.sort_by(|left, right| sort_key(left).cmp(&sort_key(right)));
        Plan::assemble(node.into(), shapes)
    }

    /// The plan of shapes already in canonical order; the digest and the body are
    /// made from each shape's canonical JSON, computed when the shape was made.
    fn assemble(node: String, shapes: Vec<Shape>) -> Plan {
        let length: usize = shapes.iter().map(|s| s.canonical_bytes().len() + 1).sum();
        let mut body = Vec::with_capacity(length + node.len() + 64);
        // keys in canonical order: format, node, shapes
        body.extend_from_slice(b"{\"format\":");
        body.extend_from_slice(&canonical_json(&Value::String(FORMAT.to_string())));
        body.extend_from_slice(b",\"node\":");
        body.extend_from_slice(&canonical_json(&Value::String(node.clone())));
        body.extend_from_slice(b",\"shapes\":[");
        for (position, shape) in shapes.iter().enumerate() {
            if position > 0 {
                body.push(b',');
            }
            body.extend_from_slice(shape.canonical_bytes());
        }
        body.extend_from_slice(b"]}");
        let digest = sha256_digest(&body);
        Plan {
            node,
            shapes,
            digest,
            body,
        }
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    pub fn shapes(&self) -> &[Shape] {
        &self.shapes
    }

    /// `sha256:HEX` of the canonical JSON of the plan without its `digest` field.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The shape of `kind` with `identity`, if the plan has one.
    pub fn shape(&self, kind: Kind, identity: &str) -> Option<&Shape> {
        self.shapes
            .binary_search_by(|shape| sort_key(shape).cmp(&(kind, identity.as_bytes())))
            .ok()
            .and_then(|position| self.shapes.get(position))
    }

    fn json_without_digest(node: &str, shapes: &[Shape]) -> Value {
        let mut object = Map::new();
        object.insert("format".to_string(), Value::String(FORMAT.to_string()));
        object.insert("node".to_string(), Value::String(node.to_string()));
        object.insert(
            "shapes".to_string(),
            Value::Array(shapes.iter().map(Shape::to_json).collect()),
        );
        Value::Object(object)
    }

    /// The plan as a JSON value, digest included.
    pub fn to_json(&self) -> Value {
        let mut value = Self::json_without_digest(&self.node, &self.shapes);
        if let Value::Object(object) = &mut value {
            object.insert("digest".to_string(), Value::String(self.digest.clone()));
        }
        value
    }

    /// The canonical bytes of the plan followed by one newline: what `meshc build`
    /// writes to `nodes/NODE.json`.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        self.file_parts().concat()
    }

    /// [`Plan::to_json_bytes`] in parts, to be written one after the other: the
    /// plan's body is not copied for its file. `digest` sorts before the body's
    /// keys, so it comes first; it is `sha256:` and hex digits, which need no escape.
    pub fn file_parts(&self) -> [&[u8]; 5] {
        debug_assert!(is_sha256_digest(&self.digest) && self.body.first() == Some(&b'{'));
        [
            b"{\"digest\":\"",
            self.digest.as_bytes(),
            b"\",",
            self.body.get(1..).unwrap_or_default(),
            b"\n",
        ]
    }

    /// `D` when `bytes` have the form of a plan's file ([`Plan::to_json_bytes`]):
    /// `{"digest":"D",`, then JSON fields, then one newline, where `D` is the
    /// sha256 of `{` and those fields (the file without its `digest` member and
    /// its newline). One sha256 over the bytes decides it; nothing is parsed, so
    /// bytes of that form that are no plan give their `D` too. What it promises:
    /// the file of the plan whose digest is `D` is the only plan file that gives
    /// `D`, so who knows a plan's digest knows its file's bytes without keeping or
    /// hashing them (the build cache names the plan files it wrote this way).
    pub fn digest_of_file(bytes: &[u8]) -> Option<&str> {
        const PREFIX: &[u8] = b"{\"digest\":\"";
        const DIGEST_LENGTH: usize = "sha256:".len() + 64;
        let rest = bytes.strip_prefix(PREFIX)?;
        let digest = std::str::from_utf8(rest.get(..DIGEST_LENGTH)?).ok()?;
        let fields = rest
            .get(DIGEST_LENGTH..)?
            .strip_prefix(b"\",")?
            .strip_suffix(b"\n")?;
        (is_sha256_digest(digest) && canonical::sha256_digest_of_parts(&[b"{", fields]) == digest)
            .then_some(digest)
    }

    /// Reads a plan, refusing: anything that is not JSON, an unknown format version, a
    /// digest that does not match the content, unknown kinds or fields, missing fields,
    /// invalid values, a shape whose digest does not match its content, duplicate
    /// identities, shapes out of canonical order and shapes that conflict.
    pub fn read(bytes: &[u8]) -> Result<Plan, PlanError> {
        // parsed whole, each JSON value takes some 50 bytes however short its text:
        // 255 MiB of `"a",` took 4.7 GB before its digest was found wrong
        if !json_values_at_most(bytes, MAX_PLAN_VALUES) {
            return Err(malformed(&format!(
                "it holds more than {MAX_PLAN_VALUES} JSON values, more than any plan does"
            )));
        }
        let value: Value = serde_json::from_slice(bytes).map_err(|error| PlanError::NotJson {
            reason: error.to_string(),
        })?;
        let Value::Object(mut object) = value else {
            return Err(PlanError::Malformed {
                reason: "the plan is not a JSON object".to_string(),
            });
        };
        match object.get("format") {
            Some(Value::String(format)) if format == FORMAT => {}
            Some(Value::String(format)) => {
                return Err(PlanError::UnknownFormat {
                    found: format.clone(),
                });
            }
            Some(_) => return Err(malformed("`format` is not a string")),
            None => return Err(malformed("there is no `format`")),
        }
        if let Some(unknown) = object
            .keys()
            .find(|key| !matches!(key.as_str(), "format" | "node" | "shapes" | "digest"))
        {
            return Err(malformed(&format!("unknown field `{unknown}`")));
        }
        let recorded_digest = match object.remove("digest") {
            Some(Value::String(digest)) => digest,
            Some(_) => return Err(malformed("`digest` is not a string")),
            None => return Err(malformed("there is no `digest`")),
        };
        let whole = Value::Object(object);
        let computed_digest = sha256_digest(&canonical_json(&whole));
        let Value::Object(mut object) = whole else {
            return Err(malformed("the plan is not a JSON object"));
        };
        if computed_digest != recorded_digest {
            return Err(PlanError::DigestMismatch {
                recorded: recorded_digest,
                computed: computed_digest,
            });
        }
        let node = match object.remove("node") {
            Some(Value::String(node)) => node,
            Some(_) => return Err(malformed("`node` is not a string")),
            None => return Err(malformed("there is no `node`")),
        };
        check::name(&node).map_err(|reason| malformed(&format!("`node`: {reason}")))?;
        let shape_values = match object.remove("shapes") {
            Some(Value::Array(shapes)) => shapes,
            Some(_) => return Err(malformed("`shapes` is not a list")),
            None => return Err(malformed("there is no `shapes`")),
        };
        let mut shapes = Vec::with_capacity(shape_values.len());
        for (position, shape_value) in shape_values.into_iter().enumerate() {
            shapes.push(Shape::from_json(position, shape_value)?);
        }
        let plan = Plan::assemble(node, shapes);
        if plan.digest != recorded_digest {
            return Err(PlanError::DigestMismatch {
                recorded: recorded_digest,
                computed: plan.digest,
            });
        }
        plan.check_order()?;
        plan.check_whole(true)?;
        Ok(plan)
    }

    fn check_order(&self) -> Result<(), PlanError> {
        for pair in self.shapes.windows(2) {
            if let [earlier, later] = pair {
                match sort_key(earlier).cmp(&sort_key(later)) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => {
                        return Err(PlanError::Duplicate {
                            shape: later.shape_name(),
                        });
                    }
                    std::cmp::Ordering::Greater => {
                        return Err(PlanError::NotCanonicalOrder {
                            shape: later.shape_name(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks every shape's values and the plan as a whole: no two shapes of one kind
    /// with one identity; no two path shapes on one path; no service and container
    /// with one name (both would be `NAME.service`); nothing under a file, link or
    /// secret; nothing under an archive (unpacking replaces the whole directory).
    pub fn validate(&self) -> Result<(), PlanError> {
        self.check_whole(true)
    }

    /// The checks of [`Plan::validate`] that look at more than one shape, for a plan
    /// whose shapes were each accepted already by [`Resource::validate`] and
    /// [`shape::validate_origin`] (the compiler checks every declaration so): on
    /// such a plan it refuses exactly what [`Plan::validate`] refuses.
    pub fn validate_together(&self) -> Result<(), PlanError> {
        self.check_whole(false)
    }

    /// The checks of [`Plan::validate`]: each shape's own values, then what looks at
    /// more than one shape. The shapes are in canonical order (every plan is made
    /// so), so a duplicate follows the shape it repeats; the first refusal is the
    /// one a walk over the shapes in order meets first. Each shape's own values are
    /// checked only when `each_shape`.
    fn check_whole(&self, each_shape: bool) -> Result<(), PlanError> {
        // every path and unit owner, sorted by namespace, then by path with `/`
        // before every other byte (a directory's descendants follow it), then by
        // position: equal owners are neighbours, the first of them first
        let mut owners: Vec<Owner<'_>> = self
            .shapes
            .iter()
            .enumerate()
            .filter(|(_, shape)| shape.kind() != Kind::User)
            .map(|(position, shape)| Owner {
                is_path: shape.kind().is_path_kind(),
                identity: shape.identity().as_bytes(),
                position,
            })
            .collect();
        owners.sort_unstable_by(|left, right| {
            right
                .is_path
                .cmp(&left.is_path)
                .then_with(|| path_order(left.identity, right.identity))
                .then(left.position.cmp(&right.position))
        });
        // the walk in order meets a conflict at the second owner of a name, and
        // names the first
        let conflict = owners
            .windows(2)
            .filter_map(|pair| match pair {
                [first, second]
                    if first.is_path == second.is_path && first.identity == second.identity =>
                {
                    Some((second.position, first.position))
                }
                _ => None,
            })
            .min();
        for (position, shape) in self.shapes.iter().enumerate() {
            if each_shape {
                shape.resource().validate()?;
                shape.validate_origin()?;
            }
            if let Some(earlier) = position.checked_sub(1).and_then(|p| self.shapes.get(p))
                && sort_key(earlier) == sort_key(shape)
            {
                return Err(PlanError::Duplicate {
                    shape: shape.shape_name(),
                });
            }
            if let Some((second, first)) = conflict
                && second == position
                && let Some(first) = self.shapes.get(first)
            {
                let reason = if shape.kind().is_path_kind() {
                    "both own the same path"
                } else {
                    "both would be the unit `NAME.service`"
                };
                return Err(PlanError::Conflict {
                    first: first.shape_name(),
                    second: shape.shape_name(),
                    reason: reason.to_string(),
                });
            }
        }
        // each path's nearest holder that is not a directory, if any; the paths are
        // distinct now, and a path's ancestors among them are the ones open above it
        let mut open: Vec<&Owner<'_>> = Vec::new();
        let mut refused: Option<(usize, usize)> = None;
        for owner in owners.iter().filter(|owner| owner.is_path) {
            while let Some(top) = open.last()
                && !is_ancestor(top.identity, owner.identity)
            {
                open.pop();
            }
            let holder = open.iter().rev().find(|ancestor| {
                self.shapes
                    .get(ancestor.position)
                    .is_some_and(|holder| holder.kind() != Kind::Directory)
            });
            if let Some(holder) = holder
                && refused.is_none_or(|(position, _)| owner.position < position)
            {
                refused = Some((owner.position, holder.position));
            }
            open.push(owner);
        }
        if let Some((position, holder)) = refused
            && let (Some(shape), Some(holder)) =
                (self.shapes.get(position), self.shapes.get(holder))
        {
            let reason = match holder.kind() {
                Kind::Archive => {
                    "it lies inside the archive's directory, which unpacking replaces whole"
                }
                _ => "its parent is not a directory",
            };
            return Err(PlanError::Conflict {
                first: holder.shape_name(),
                second: shape.shape_name(),
                reason: reason.to_string(),
            });
        }
        // the files mesh-apply writes for a service or container are its own: a
        // path shape there (or beneath) would be written twice, by its shape and
        // by its unit, on every run, which would never settle
        let unit_files: Vec<(String, usize)> = self
            .shapes
            .iter()
            .enumerate()
            .flat_map(|(position, shape)| {
                unit_files(shape.kind(), shape.identity())
                    .into_iter()
                    .map(move |path| (path, position))
            })
            .collect();
        if !unit_files.is_empty() {
            // a path that is a unit file or lies beneath one lies in the directory
            // of one: the few such directories sort out every other path at once
            let mut directories: Vec<&str> = unit_files
                .iter()
                .filter_map(|(file, _)| file.rsplit_once('/').map(|(directory, _)| directory))
                .collect();
            directories.sort_unstable();
            directories.dedup();
            for shape in self
                .shapes
                .iter()
                .filter(|shape| shape.kind().is_path_kind())
            {
                let path = shape.identity().as_bytes();
                if !directories
                    .iter()
                    .any(|directory| is_ancestor(directory.as_bytes(), path))
                {
                    continue;
                }
                let owner = unit_files.iter().find(|(file, _)| {
                    path == file.as_bytes() || is_ancestor(file.as_bytes(), path)
                });
                if let Some((file, position)) = owner
                    && let Some(unit) = self.shapes.get(*position)
                {
                    return Err(PlanError::Conflict {
                        first: unit.shape_name(),
                        second: shape.shape_name(),
                        reason: format!(
                            "mesh-apply writes `{file}` for the {}",
                            unit.kind().name()
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The files `mesh-apply` writes on a node for a shape of `kind` named `name`: a
/// service's unit and the link that enables it, a container's Quadlet file (none
/// for the other kinds). No path shape may own them.
pub fn unit_files(kind: Kind, name: &str) -> Vec<String> {
    match kind {
        Kind::Service => vec![
            format!("/etc/systemd/system/{name}.service"),
            format!("/etc/systemd/system/multi-user.target.wants/{name}.service"),
        ],
        Kind::Container => vec![format!("/etc/containers/systemd/{name}.container")],
        _ => Vec::new(),
    }
}

/// A shape that owns a path or a unit name, for [`Plan::check_whole`].
struct Owner<'a> {
    is_path: bool,
    identity: &'a [u8],
    position: usize,
}

/// Byte order, except that `/` comes before every other byte: a path is followed
/// by the paths below it, then by its siblings (`/a`, `/a/b`, `/a-b`).
fn path_order(left: &[u8], right: &[u8]) -> std::cmp::Ordering {
    let rank = |byte: u8| match byte {
        b'/' => 0,
        below if below < b'/' => u16::from(below) + 1,
        other => u16::from(other),
    };
    // paths share long prefixes (`/var/lib/NAME/...`): equal words are skipped
    // eight bytes at a time, then the first differing byte is found
    let mut at = 0;
    while let (Some(l), Some(r)) = (left.get(at..at + 8), right.get(at..at + 8))
        && l == r
    {
        at += 8;
    }
    let (left_rest, right_rest) = (
        left.get(at..).unwrap_or_default(),
        right.get(at..).unwrap_or_default(),
    );
    match left_rest.iter().zip(right_rest).find(|(l, r)| l != r) {
        Some((l, r)) => rank(*l).cmp(&rank(*r)),
        None => left.len().cmp(&right.len()),
    }
}

/// Is `ancestor` a proper ancestor of the path `path` (`/a` of `/a/b`)?
fn is_ancestor(ancestor: &[u8], path: &[u8]) -> bool {
    path.len() > ancestor.len()
        && path.starts_with(ancestor)
        && path.get(ancestor.len()) == Some(&b'/')
}

fn malformed(reason: &str) -> PlanError {
    PlanError::Malformed {
        reason: reason.to_string(),
    }
}

fn sort_key(shape: &Shape) -> (Kind, &[u8]) {
    (shape.kind(), shape.identity().as_bytes())
}

/// The proper ancestors of an absolute path, nearest first: `/a/b/c` gives `/a/b`, `/a`.
pub fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut rest = path;
    std::iter::from_fn(move || {
        let cut = rest.rfind('/')?;
        if cut == 0 {
            return None;
        }
        rest = rest.get(..cut)?;
        Some(rest)
    })
}

/// The most JSON values a plan read may hold (objects, arrays, strings, numbers and
/// the rest): a node's plan of 10,000 shapes holds about 150,000. Bounds what parsing
/// a hostile or broken plan takes to some 100 MB beyond its bytes.
pub const MAX_PLAN_VALUES: usize = 2_000_000;

/// Whether the JSON text `bytes` holds at most `limit` values (keys counted too),
/// counted from above without parsing: a value follows a `,`, a `:`, the `[` or `{`
/// of its container, or is the whole text, so these outside strings, plus one, are
/// at least as many as the values.
fn json_values_at_most(bytes: &[u8], limit: usize) -> bool {
    let mut count: usize = 1;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b',' | b':' | b'[' | b'{' => {
                    count += 1;
                    if count > limit {
                        return false;
                    }
                }
                _ => {}
            }
        }
    }
    true
}

#[cfg(test)]
mod assembled_bytes {
    use super::*;

    #[test]
    fn assembled_bytes_equal_the_canonical_json_of_the_plan() {
        let shapes = vec![
            directory("/srv/web"),
            Shape::new(
                Resource::Link(Link {
                    path: "/srv/current".into(),
                    target: "/srv/web \"1\"".into(),
                }),
                "web",
                Source {
                    file: "modules/web/module.nix".into(),
                    line: 9,
                    column: 5,
                },
            ),
        ];
        let plan = Plan::new("app1", shapes);
        let mut expected = canonical_json(&plan.to_json());
        expected.push(b'\n');
        assert_eq!(plan.to_json_bytes(), expected);
        assert_eq!(plan.file_parts().concat(), expected);
        assert_eq!(
            plan.digest(),
            sha256_digest(&canonical_json(&Plan::json_without_digest(
                plan.node(),
                plan.shapes()
            )))
        );
        for shape in plan.shapes() {
            assert_eq!(
                shape.canonical_bytes(),
                canonical_json(&shape.to_json()).as_slice()
            );
        }
        assert_eq!(Plan::read(&plan.to_json_bytes()).unwrap(), plan);
    }

    /// A directory shape of the module `web` at `path`.
    fn directory(path: &str) -> Shape {
        Shape::new(
            Resource::Directory(Directory {
                path: path.into(),
                owner: "root".into(),
                group: "root".into(),
                mode: "0755".into(),
            }),
            "web",
            Source {
                file: "modules/web/module.nix".into(),
                line: 3,
                column: 5,
            },
        )
    }

    fn two_plans() -> (Plan, Plan) {
        (
            Plan::new("app1", vec![directory("/srv/web")]),
            Plan::new("app1", vec![directory("/srv/www")]),
        )
    }

    #[test]
    fn a_plan_file_gives_its_digest_and_changed_bytes_do_not() {
        let (plan, other) = two_plans();
        let file = plan.to_json_bytes();
        assert_eq!(Plan::digest_of_file(&file), Some(plan.digest()));
        assert_eq!(
            Plan::digest_of_file(&other.to_json_bytes()),
            Some(other.digest())
        );
        // the digest of another plan put in front of this plan's fields
        let mut swapped = file.clone();
        let at = b"{\"digest\":\"".len();
        swapped[at..at + 71].copy_from_slice(other.digest().as_bytes());
        assert_eq!(Plan::digest_of_file(&swapped), None);
        // every byte changed, cut off or added
        for position in 0..file.len() {
            let mut changed = file.clone();
            changed[position] ^= 0x01;
            assert_eq!(Plan::digest_of_file(&changed), None, "byte {position}");
            assert_eq!(Plan::digest_of_file(&file[..position]), None);
        }
        let mut longer = file.clone();
        longer.push(b'\n');
        assert_eq!(Plan::digest_of_file(&longer), None);
        let mut spaced = vec![b' '];
        spaced.extend_from_slice(&file);
        assert_eq!(Plan::digest_of_file(&spaced), None);
        // the same JSON with a space after the digest's member: its prefix and
        // newline are a plan file's, but the rest does not hash to the digest
        let mut spaced_inside = file.clone();
        spaced_inside.insert(at + 73, b' ');
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&spaced_inside).unwrap(),
            plan.to_json()
        );
        assert_eq!(Plan::digest_of_file(&spaced_inside), None);
        assert_eq!(Plan::digest_of_file(b""), None);
    }
}

#[cfg(test)]
mod value_bound {
    use super::{MAX_PLAN_VALUES, Plan, PlanError, json_values_at_most};

    /// Values are counted from above, and what is in a string is no value: a plan
    /// of short values past the bound is refused before it is parsed.
    #[test]
    fn json_values_are_counted_from_above_outside_strings() {
        assert!(json_values_at_most(b"1", 1));
        assert!(!json_values_at_most(b"[1,2]", 2));
        assert!(json_values_at_most(b"[1,2]", 3));
        // `,`, `:`, `[` and `{` in strings (escaped quotes too) are text
        assert!(json_values_at_most(br#"["a,b:[{", "c\",d"]"#, 3));
        assert!(json_values_at_most(br#"{"k":[]}"#, 4));
        let many = format!("[{}\"a\"]", "\"a\",".repeat(MAX_PLAN_VALUES));
        assert!(matches!(
            Plan::read(many.as_bytes()),
            Err(PlanError::Malformed { reason }) if reason.contains("JSON values")
        ));
    }
}
