//! `meshc diff`: what will change on which node, before anything is applied. Two
//! snapshots of the fleet (a build output, or a repository compiled in memory) are
//! compared node by node; a node whose plan digest did not change costs one string
//! comparison. For changed nodes: shapes added, withdrawn and changed, the fields
//! that changed (text as a unified diff, JSON by key), services and containers that
//! will restart, and grants added and withdrawn at each provider. Secrets are shown
//! as changed, never their ciphertext or anything derived from their plaintext: a
//! changed secret is "the same value, resealed" only when both builds record the same
//! value id for it (`crate::sealed_value`) and the node's key changed (the same id
//! sealed anew to the same key was replaced by hand), and a new value names what
//! reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

use lang::Diagnostic;
use plan::{Kind, Plan, Resource, Shape};

use crate::build_output::BuildOutput;
use crate::sealed_value::{self, Identity, NodeValues, Of, SealedValue};
use crate::staged::PlanSink;

/// One side of a diff: plan digests (and node keys and secret values) by node, and
/// where the plans are.
pub struct Snapshot {
    pub digests: BTreeMap<String, String>,
    pub keys: BTreeMap<String, String>,
    secrets: NodeValues,
    plans: Source,
}

enum Source {
    Directory(BuildOutput),
    Memory(BTreeMap<String, Plan>),
}

/// What to do about a build `meshc diff` cannot read (E408).
const UNREADABLE_HELP: &str = "point at the output of a `meshc build` (a directory with manifest.json and nodes/), or build first";

fn unreadable(path: &Path, reason: impl std::fmt::Display) -> Diagnostic {
    crate::build_output::unreadable(path, reason, UNREADABLE_HELP)
}

impl Snapshot {
    /// What E408 says to do when a build output cannot be read as a snapshot.
    pub const UNREADABLE_HELP: &str = UNREADABLE_HELP;

    /// A build output directory (its manifest now, plans when they are needed).
    pub fn read(directory: &Path) -> Result<Snapshot, Diagnostic> {
        Snapshot::of_output(BuildOutput::open(directory, UNREADABLE_HELP)?)
    }

    /// A build output already open (its manifest as kept, if it was kept: see
    /// [`BuildOutput::keep_manifest`]).
    pub fn of_output(output: BuildOutput) -> Result<Snapshot, Diagnostic> {
        let manifest = output.manifest(UNREADABLE_HELP)?;
        Ok(Snapshot {
            keys: manifest.strings_of("keys"),
            secrets: sealed_value::from_manifest(manifest.field("secrets")),
            digests: manifest.digests,
            plans: Source::Directory(output),
        })
    }

    /// Plans compiled in memory, with their nodes' keys and secret values.
    pub fn from_plans(
        plans: BTreeMap<String, Plan>,
        keys: BTreeMap<String, String>,
        secrets: NodeValues,
    ) -> Snapshot {
        Snapshot {
            digests: plans
                .iter()
                .map(|(node, plan)| (node.clone(), plan.digest().to_string()))
                .collect(),
            keys,
            secrets,
            plans: Source::Memory(plans),
        }
    }

    /// What this snapshot records of the secret at `path` on `node`.
    fn value(&self, node: &str, path: &str) -> Option<&SealedValue> {
        self.secrets.get(node).and_then(|values| values.get(path))
    }

    /// An empty fleet (diffing against a build that does not exist yet).
    pub fn empty() -> Snapshot {
        Snapshot {
            digests: BTreeMap::new(),
            keys: BTreeMap::new(),
            secrets: NodeValues::new(),
            plans: Source::Memory(BTreeMap::new()),
        }
    }

    /// The plans a [`Changed`] sink was handed, with their nodes' keys and secret
    /// values: the nodes whose plans it let go have their digests only.
    pub fn from_sink(
        sink: &Changed,
        keys: BTreeMap<String, String>,
        secrets: NodeValues,
    ) -> Snapshot {
        Snapshot {
            digests: std::mem::take(&mut *lock(&sink.digests)),
            keys,
            secrets,
            plans: Source::Memory(std::mem::take(&mut *lock(&sink.kept))),
        }
    }

    /// Checks that the plan of `node` read from a build output verifies and is the one
    /// its manifest names (a plan compiled in memory is by construction). A plan as
    /// `meshc build` writes it is checked by one hash of its bytes; any other form is
    /// read in full.
    fn verify(&self, node: &str) -> Result<(), Diagnostic> {
        let Source::Directory(output) = &self.plans else {
            return Ok(());
        };
        let bytes = output.plan_file(node, UNREADABLE_HELP)?;
        match self.digests.get(node) {
            Some(digest) if plan::Plan::digest_of_file(&bytes) == Some(digest.as_str()) => Ok(()),
            _ => self.plan(node).map(drop),
        }
    }

    fn plan(&self, node: &str) -> Result<Plan, Diagnostic> {
        match &self.plans {
            Source::Memory(plans) => plans
                .get(node)
                .cloned()
                .ok_or_else(|| unreadable(Path::new(node), "no such node")),
            Source::Directory(output) => {
                let path = output.path().join("nodes").join(format!("{node}.json"));
                let bytes = output.plan_file(node, UNREADABLE_HELP)?;
                let plan = Plan::read(&bytes).map_err(|e| unreadable(&path, e))?;
                if plan.node() != node {
                    return Err(unreadable(
                        &path,
                        format!(
                            "it is the plan of `{}`",
                            plan::display::escaped(plan.node())
                        ),
                    ));
                }
                if self.digests.get(node).map(String::as_str) != Some(plan.digest()) {
                    return Err(unreadable(
                        &path,
                        "its digest is not the one manifest.json names",
                    ));
                }
                Ok(plan)
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Add,
    Change,
    Withdraw,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FieldChange {
    /// A plain value: both sides as JSON text.
    Value {
        field: String,
        old: String,
        new: String,
    },
    /// Text content, as a unified diff.
    Text { field: String, unified: String },
    /// Binary content (`content_base64`): each side's size and sha256, never its
    /// bytes (`null` on the side where it is absent).
    Binary {
        field: String,
        old: Option<Blob>,
        new: Option<Blob>,
    },
    /// JSON content, by key path.
    Json {
        field: String,
        changes: Vec<JsonChange>,
    },
    /// A secret's sealed value. `resealed` only when both builds hold the same value
    /// (by its id) sealed anew; otherwise `value` says whether it is new or unknown,
    /// and `consumers` what on the node reads it.
    Sealed {
        field: String,
        resealed: bool,
        value: ValueChange,
        /// A need, a grant's credential (at the consumer) or its check (at the provider).
        of: Option<Of>,
        /// The services and containers on the node that read the secret's path.
        consumers: Vec<Consumer>,
        /// What the operator must know about a new value, when there is something.
        warning: Option<String>,
    },
}

/// What became of a secret's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueChange {
    /// The same value (the same id on both sides), sealed anew to the node's new key.
    Same,
    /// The same id on both sides, sealed anew to the same key. No `meshc` command
    /// does that (a value is sealed anew only to a new key, by a rebuild or a
    /// reseal), so the sealed file was replaced outside `meshc`, its id kept: the id
    /// proves nothing, and it may hold a value whoever replaced it knows.
    Replaced,
    /// Another value.
    New,
    /// Another value, which the next `meshc build` makes (a diff compiled in memory
    /// makes nothing).
    Unmade,
    /// A side records no id: made before ids were kept.
    Unknown,
    /// The last build recorded an id and this one finds none. No `meshc` command
    /// removes an id, so the value beside it was changed outside `meshc` (an id
    /// deleted, not only a value replaced, to pass as one made before ids).
    #[serde(rename = "id-removed")]
    IdRemoved,
}

impl ValueChange {
    /// What became of the value of the secret at `path` on `node`, whose sealed text
    /// differs between the snapshots: the same value only when both record the same
    /// id and the node's key changed (what a reseal, or a rebuild that keeps a value,
    /// does); the same id with the same key is [`ValueChange::Replaced`].
    fn of(node: &str, path: &str, (old, new): (&Snapshot, &Snapshot)) -> ValueChange {
        let identity = |snapshot: &Snapshot| {
            snapshot
                .value(node, path)
                .map_or(Identity::Unknown, |value| value.identity.clone())
        };
        let key_changed = old.keys.get(node) != new.keys.get(node);
        match (identity(old), identity(new)) {
            (_, Identity::NotYetMade) => ValueChange::Unmade,
            (Identity::Known(before), Identity::Known(after)) if before == after => {
                if key_changed {
                    ValueChange::Same
                } else {
                    ValueChange::Replaced
                }
            }
            (Identity::Known(_), Identity::Known(_)) => ValueChange::New,
            (Identity::Known(_), Identity::Unknown) => ValueChange::IdRemoved,
            _ => ValueChange::Unknown,
        }
    }
}

/// A service or container that reads a secret.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Consumer {
    pub kind: &'static str,
    pub name: String,
}

/// Binary content as the diff shows it: how many bytes, and their sha256.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Blob {
    pub bytes: usize,
    pub sha256: String,
}

impl Blob {
    /// `encoded` is standard base64 (a plan's `content_base64`); were it not, its
    /// text is what is measured.
    fn of(encoded: &str) -> Blob {
        use base64::Engine as _;
        match base64::engine::general_purpose::STANDARD.decode(encoded) {
            Ok(bytes) => Blob::of_bytes(&bytes),
            Err(_) => Blob::of_bytes(encoded.as_bytes()),
        }
    }

    fn of_bytes(bytes: &[u8]) -> Blob {
        use sha2::Digest as _;
        Blob {
            bytes: bytes.len(),
            sha256: format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes))),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct JsonChange {
    pub path: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    pub action: Action,
    pub kind: &'static str,
    pub identity: String,
    pub module: String,
    pub source: String,
    pub fields: Vec<FieldChange>,
    /// For a withdrawal that leaves data on the node (directories, archives, users).
    pub kept: bool,
    /// Why a service or container restarts, when it does.
    pub restart: Option<String>,
}

impl Change {
    /// A change of `shape` with nothing more to say: no fields, nothing kept, no
    /// restart.
    fn of(action: Action, shape: &Shape) -> Change {
        Change {
            action,
            kind: shape.kind().name(),
            identity: shape.identity().to_string(),
            module: shape.module().to_string(),
            source: source_of(shape),
            fields: Vec::new(),
            kept: false,
            restart: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GrantChanges {
    pub service: String,
    pub added: Vec<String>,
    pub withdrawn: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeStatus {
    Added,
    Removed,
    Changed,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NodeDiff {
    pub node: String,
    pub status: NodeStatus,
    pub changes: Vec<Change>,
    pub grants: Vec<GrantChanges>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub nodes_added: usize,
    pub nodes_removed: usize,
    pub nodes_changed: usize,
    pub add: usize,
    pub change: usize,
    pub withdraw: usize,
    pub restart: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FleetDiff {
    pub nodes: Vec<NodeDiff>,
    pub summary: Summary,
}

impl FleetDiff {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Where a compilation for `meshc diff` hands each node's plan: one whose digest is
/// the one the old build has for the node is let go (the diff skips such a node), any
/// other is kept to be compared. The diff's memory then grows with what changed, not
/// with the fleet.
#[derive(Debug)]
pub struct Changed {
    old: BTreeMap<String, String>,
    digests: Mutex<BTreeMap<String, String>>,
    kept: Mutex<BTreeMap<String, Plan>>,
}

impl Changed {
    /// A sink for a compilation to be compared with `old`.
    pub fn against(old: &Snapshot) -> Changed {
        Changed {
            old: old.digests.clone(),
            digests: Mutex::new(BTreeMap::new()),
            kept: Mutex::new(BTreeMap::new()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl PlanSink for Changed {
    fn accept(&self, node: &str, plan: Plan, _last: Option<&str>) -> Result<(), Diagnostic> {
        let digest = plan.digest().to_string();
        if self.old.get(node) != Some(&digest) {
            lock(&self.kept).insert(node.to_string(), plan);
        }
        lock(&self.digests).insert(node.to_string(), digest);
        Ok(())
    }

    /// Only a build cache keeps a plan without making it, and a diff has none.
    fn keep_all(&self, kept: Vec<crate::staged::KeptPlan>) -> Result<(), Diagnostic> {
        match kept.first() {
            Some(first) => Err(Diagnostic::bug(format!(
                "the diff was handed no plan for node `{}`",
                first.node
            ))),
            None => Ok(()),
        }
    }
}

fn source_of(shape: &Shape) -> String {
    shape.source().to_string()
}

/// Compares two snapshots of the fleet.
pub fn diff(old: &Snapshot, new: &Snapshot) -> Result<FleetDiff, Diagnostic> {
    let mut result = FleetDiff::default();
    let nodes: BTreeSet<&String> = old.digests.keys().chain(new.digests.keys()).collect();
    for node in nodes {
        let node_diff = match (old.digests.get(node), new.digests.get(node)) {
            (Some(before), Some(after)) if before == after => {
                // what would be applied must be what the manifest says, even where
                // nothing changed: a plan file rewritten behind its manifest's back
                // is refused, not passed over as "no changes"
                new.verify(node)?;
                continue;
            }
            (Some(_), Some(_)) => compare(
                node,
                Some(&old.plan(node)?),
                Some(&new.plan(node)?),
                (old, new),
            ),
            (None, Some(_)) => compare(node, None, Some(&new.plan(node)?), (old, new)),
            (Some(_), None) => NodeDiff {
                node: node.clone(),
                status: NodeStatus::Removed,
                changes: Vec::new(),
                grants: Vec::new(),
            },
            (None, None) => continue,
        };
        match node_diff.status {
            NodeStatus::Added => result.summary.nodes_added += 1,
            NodeStatus::Removed => result.summary.nodes_removed += 1,
            NodeStatus::Changed => result.summary.nodes_changed += 1,
        }
        for change in &node_diff.changes {
            match change.action {
                Action::Add => result.summary.add += 1,
                Action::Change => result.summary.change += 1,
                Action::Withdraw => result.summary.withdraw += 1,
            }
            if change.restart.is_some() {
                result.summary.restart += 1;
            }
        }
        result.nodes.push(node_diff);
    }
    Ok(result)
}

fn key(shape: &Shape) -> (Kind, &str) {
    (shape.kind(), shape.identity())
}

fn compare(
    node: &str,
    old: Option<&Plan>,
    new: Option<&Plan>,
    snapshots: (&Snapshot, &Snapshot),
) -> NodeDiff {
    let empty: Vec<Shape> = Vec::new();
    let old_shapes = old.map(Plan::shapes).unwrap_or(&empty);
    let new_shapes = new.map(Plan::shapes).unwrap_or(&empty);
    let old_by_key: BTreeMap<(Kind, &str), &Shape> =
        old_shapes.iter().map(|s| (key(s), s)).collect();
    let new_by_key: BTreeMap<(Kind, &str), &Shape> =
        new_shapes.iter().map(|s| (key(s), s)).collect();
    let mut changes = Vec::new();
    // paths created or changed on the node: services and containers naming them restart
    // (a secret only resealed, same value and fields, leaves its file as it is)
    let mut changed_paths: Vec<&str> = Vec::new();
    for shape in new_shapes {
        let before = old_by_key.get(&key(shape));
        if before.is_none_or(|before| {
            before.digest() != shape.digest() && !only_resealed(node, before, shape, snapshots)
        }) && shape.kind().is_path_kind()
        {
            changed_paths.push(shape.identity());
        }
    }
    for shape in new_shapes {
        match old_by_key.get(&key(shape)) {
            None => changes.push(Change::of(Action::Add, shape)),
            Some(before) if before.digest() != shape.digest() => changes.push(Change {
                fields: field_changes(before, shape, &|path| {
                    sealed_change(node, path, snapshots, new_shapes)
                }),
                restart: restart_of_changed(before, shape, &changed_paths),
                ..Change::of(Action::Change, shape)
            }),
            Some(_) => {
                if let Some(path) = plan::restart::named_change(shape, &changed_paths) {
                    changes.push(Change {
                        restart: Some(format!("`{path}` changes")),
                        ..Change::of(Action::Change, shape)
                    });
                }
            }
        }
    }
    for shape in old_shapes {
        if !new_by_key.contains_key(&key(shape)) {
            changes.push(Change {
                kept: matches!(shape.kind(), Kind::Directory | Kind::Archive | Kind::User),
                ..Change::of(Action::Withdraw, shape)
            });
        }
    }
    let grants = grant_changes(old_shapes, new_shapes);
    NodeDiff {
        node: node.to_string(),
        status: if old.is_none() {
            NodeStatus::Added
        } else {
            NodeStatus::Changed
        },
        changes,
        grants,
    }
}

/// Why a changed service or container restarts: its unit file's text changes (the
/// applier rewrites and restarts it), or a path it names changes. A plan can change
/// where the unit does not (`after = [ "db" ]` against `[ "db.service" ]`): the
/// applier finds the unit as it wants it and restarts nothing, and neither does the
/// diff say so.
fn restart_of_changed(before: &Shape, after: &Shape, changed_paths: &[&str]) -> Option<String> {
    let unit_changes = match (before.resource(), after.resource()) {
        (Resource::Service(before), Resource::Service(after)) => {
            plan::unit::service_unit(before) != plan::unit::service_unit(after)
        }
        (Resource::Container(before), Resource::Container(after)) => {
            plan::unit::container_unit(before) != plan::unit::container_unit(after)
        }
        _ => return None,
    };
    if unit_changes {
        return Some("its unit changes".to_string());
    }
    plan::restart::named_change(after, changed_paths).map(|path| format!("`{path}` changes"))
}

/// Is `after` the secret `before` sealed anew to the same value, nothing else changed?
/// The applier compares plaintexts, so its file on the node stays as it is.
fn only_resealed(
    node: &str,
    before: &Shape,
    after: &Shape,
    (old, new): (&Snapshot, &Snapshot),
) -> bool {
    if after.kind() != Kind::Secret {
        return false;
    }
    let same_value = ValueChange::of(node, after.identity(), (old, new)) == ValueChange::Same;
    let mut before_fields = fields_of(before);
    let mut after_fields = fields_of(after);
    before_fields.remove("sealed");
    after_fields.remove("sealed");
    same_value && before_fields == after_fields
}

fn fields_of(shape: &Shape) -> serde_json::Map<String, serde_json::Value> {
    match shape.resource().to_json() {
        serde_json::Value::Object(object) => object,
        _ => serde_json::Map::new(),
    }
}

/// What became of the value of the secret at `path` on `node`, what reads it, and
/// what to know about it.
fn sealed_change(
    node: &str,
    path: &str,
    (old, new): (&Snapshot, &Snapshot),
    shapes: &[Shape],
) -> FieldChange {
    let before = old.value(node, path);
    let after = new.value(node, path);
    let value = ValueChange::of(node, path, (old, new));
    let of = after
        .and_then(|v| v.of)
        .or_else(|| before.and_then(|v| v.of));
    let consumers = if value == ValueChange::Same {
        Vec::new()
    } else {
        consumers(path, shapes)
    };
    let warning = match (value, of) {
        (ValueChange::Same, _) => None,
        (ValueChange::Replaced, _) => Some(
            "no meshc command seals a value anew to the same key: the sealed file was replaced outside meshc and may hold a value whoever replaced it knows; check who changed `secrets/`"
                .to_string(),
        ),
        (ValueChange::IdRemoved, _) => Some(
            "the last build recorded an id for this value and this one finds none; no meshc command removes an id: the sealed file was changed outside meshc and may hold a value whoever changed it knows; check who changed `secrets/`"
                .to_string(),
        ),
        (ValueChange::Unknown, _) => Some(
            "it may be a new value: a service initialised with the old one keeps using it"
                .to_string(),
        ),
        (_, Some(Of::Need) | None) => Some(
            "a service initialised with the old value (a database's superuser password, say) will not pick up the new one"
                .to_string(),
        ),
        (_, Some(Of::Credential | Of::Grant)) => None,
    };
    FieldChange::Sealed {
        field: "sealed".to_string(),
        resealed: value == ValueChange::Same,
        value,
        of,
        consumers,
        warning,
    }
}

/// The services and containers among `shapes` that read `path`: their command,
/// environment or mounts name it, or a container mounts a directory holding it.
fn consumers(path: &str, shapes: &[Shape]) -> Vec<Consumer> {
    shapes
        .iter()
        .filter(|shape| {
            plan::restart::named_change(shape, &[path]).is_some()
                || matches!(shape.resource(), Resource::Container(container)
                    if container.mounts.iter().any(|mount| plan::restart::mentions(path, &mount.source)))
        })
        .map(|shape| Consumer {
            kind: shape.kind().name(),
            name: shape.identity().to_string(),
        })
        .collect()
}

fn field_changes(
    old: &Shape,
    new: &Shape,
    sealed: &dyn Fn(&str) -> FieldChange,
) -> Vec<FieldChange> {
    let before = fields_of(old);
    let after = fields_of(new);
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut changes = Vec::new();
    for name in names {
        let (left, right) = (before.get(name), after.get(name));
        if left == right {
            continue;
        }
        if name == "sealed" {
            changes.push(sealed(new.identity()));
            continue;
        }
        if name == "content"
            && let (Some(serde_json::Value::String(left)), Some(serde_json::Value::String(right))) =
                (left, right)
        {
            let parsed = (
                serde_json::from_str::<serde_json::Value>(left),
                serde_json::from_str::<serde_json::Value>(right),
            );
            if let (
                Ok(left_json @ (serde_json::Value::Object(_) | serde_json::Value::Array(_))),
                Ok(right_json),
            ) = parsed
            {
                let mut json_changes = Vec::new();
                json_diff("", &left_json, &right_json, &mut json_changes);
                // the bytes differ although the parsed values do not (a duplicate key,
                // a number beyond what f64 holds, the layout): show the text instead
                // of an empty list, since the file on the node changes
                if json_changes.is_empty() {
                    changes.push(FieldChange::Text {
                        field: name.clone(),
                        unified: text_diff(left, right),
                    });
                } else {
                    changes.push(FieldChange::Json {
                        field: name.clone(),
                        changes: json_changes,
                    });
                }
            } else {
                changes.push(FieldChange::Text {
                    field: name.clone(),
                    unified: text_diff(left, right),
                });
            }
            continue;
        }
        // text content on one side only: the file turned binary (or back), and its
        // `content_base64` changes beside it; the text is summarised as binary content
        // is, not printed whole as one JSON string
        let is_text =
            |side: Option<&serde_json::Value>| side.is_some_and(serde_json::Value::is_string);
        let absent = |side: Option<&serde_json::Value>| side.is_none_or(serde_json::Value::is_null);
        if name == "content"
            && ((absent(left) && is_text(right)) || (is_text(left) && absent(right)))
        {
            let blob = |side: Option<&serde_json::Value>| {
                side.and_then(serde_json::Value::as_str)
                    .map(|text| Blob::of_bytes(text.as_bytes()))
            };
            changes.push(FieldChange::Binary {
                field: name.clone(),
                old: blob(left),
                new: blob(right),
            });
            continue;
        }
        if name == "content_base64" {
            changes.push(FieldChange::Binary {
                field: name.clone(),
                old: left.and_then(serde_json::Value::as_str).map(Blob::of),
                new: right.and_then(serde_json::Value::as_str).map(Blob::of),
            });
            continue;
        }
        let show = |value: Option<&serde_json::Value>| {
            value
                .map(|v| v.to_string())
                .unwrap_or_else(|| "null".into())
        };
        changes.push(FieldChange::Value {
            field: name.clone(),
            old: show(left),
            new: show(right),
        });
    }
    changes
}

fn json_diff(
    path: &str,
    old: &serde_json::Value,
    new: &serde_json::Value,
    out: &mut Vec<JsonChange>,
) {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(left), Value::Object(right)) => {
            let keys: BTreeSet<&String> = left.keys().chain(right.keys()).collect();
            for key in keys {
                let child = json_key_path(path, key);
                match (left.get(key), right.get(key)) {
                    (Some(a), Some(b)) if a == b => {}
                    (Some(a), Some(b)) => json_diff(&child, a, b, out),
                    (a, b) => out.push(JsonChange {
                        path: child,
                        old: a.map(Value::to_string),
                        new: b.map(Value::to_string),
                    }),
                }
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            for index in 0..left.len().max(right.len()) {
                let child = format!("{path}[{index}]");
                match (left.get(index), right.get(index)) {
                    (Some(a), Some(b)) if a == b => {}
                    (Some(a), Some(b)) => json_diff(&child, a, b, out),
                    (a, b) => out.push(JsonChange {
                        path: child,
                        old: a.map(Value::to_string),
                        new: b.map(Value::to_string),
                    }),
                }
            }
        }
        (a, b) => out.push(JsonChange {
            path: path.to_string(),
            old: Some(a.to_string()),
            new: Some(b.to_string()),
        }),
    }
}

/// The path of `key` under `path`: `path.key` for a plain key, `path["key"]` (the
/// key as a JSON string) for one with a dot, a bracket, a quote or anything else that
/// would make `a.b` of one object read as `b` in `a`.
fn json_key_path(path: &str, key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (plain, path.is_empty()) {
        (true, true) => key.to_string(),
        (true, false) => format!("{path}.{key}"),
        (false, _) => format!("{path}[{}]", serde_json::Value::from(key)),
    }
}

/// Lines longer than this are shown cut, with their length and sha256.
const LONG_LINE: usize = 4096;

/// `line` as a unified diff shows it: whole, or, when longer than [`LONG_LINE`]
/// (minified code, an inlined blob), its first 160 bytes, then its length and sha256,
/// so that two long lines that differ past the cut still read as different.
fn shortened(line: &str) -> std::borrow::Cow<'_, str> {
    use sha2::Digest as _;
    if line.len() <= LONG_LINE {
        return std::borrow::Cow::Borrowed(line);
    }
    let (body, newline) = match line.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (line, ""),
    };
    let mut cut = 160;
    while !body.is_char_boundary(cut) {
        cut -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}… [a line of {} bytes, sha256:{}]{newline}",
        &body[..cut],
        body.len(),
        hex::encode(sha2::Sha256::digest(body.as_bytes()))
    ))
}

/// The unified diff of a file's text, every private key blotted out of each side
/// before the two are compared: in the diff's lines, each after its `-`, `+` or
/// space, a PEM block's lines no longer read as one block (a `-` ends it), and its
/// body was printed. Two texts that differ only inside a private key say so.
fn text_diff(old: &str, new: &str) -> String {
    let (old, new) = (
        crate::private_key::redact_private_keys(old),
        crate::private_key::redact_private_keys(new),
    );
    if old == new {
        return "@@ a private key changed (not shown) @@\n".to_string();
    }
    unified_diff(&old, &new, 3)
}

/// A unified diff of two texts by line, with `context` lines around each change.
pub fn unified_diff(old: &str, new: &str, context: usize) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    // too large for the quadratic table: say what changed in size instead
    if a.len().saturating_mul(b.len()) > 4_000_000 {
        return format!(
            "@@ {} lines -> {} lines (too large to show line by line) @@\n",
            a.len(),
            b.len()
        );
    }
    // each distinct line as a number: the table compares numbers, not lines (two
    // texts of long lines that differ at their ends cost a comparison of every
    // pair's whole length otherwise: 15 s for 2,000 lines of 10 KB)
    let mut numbers: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut a_numbers = Vec::with_capacity(a.len());
    let mut b_numbers = Vec::with_capacity(b.len());
    for (lines, numbered) in [(&a, &mut a_numbers), (&b, &mut b_numbers)] {
        for line in lines.iter() {
            // at most 4,000,000 lines get here, far from u32::MAX
            let next = u32::try_from(numbers.len()).unwrap_or(u32::MAX);
            numbered.push(*numbers.entry(*line).or_insert(next));
        }
    }
    // longest common subsequence, from the end
    let mut table = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i][j] = if a_numbers[i] == b_numbers[j] {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    // the edit script: (tag, old line index, new line index)
    let mut script: Vec<(char, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a_numbers[i] == b_numbers[j] {
            script.push((' ', i, j));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || table[i + 1][j] >= table[i][j + 1]) {
            // removals before additions, as diff(1) shows them
            script.push(('-', i, j));
            i += 1;
        } else {
            script.push(('+', i, j));
            j += 1;
        }
    }
    // group changes into hunks with context
    let mut out = String::new();
    let changed: Vec<usize> = script
        .iter()
        .enumerate()
        .filter(|(_, (tag, _, _))| *tag != ' ')
        .map(|(k, _)| k)
        .collect();
    let mut k = 0;
    while k < changed.len() {
        let start = changed[k].saturating_sub(context);
        let mut end = changed[k] + context + 1;
        while k + 1 < changed.len() && changed[k + 1] <= end + context {
            k += 1;
            end = changed[k] + context + 1;
        }
        let end = end.min(script.len());
        let old_start = script[start..end]
            .iter()
            .find(|(t, _, _)| *t != '+')
            .map(|(_, i, _)| *i)
            .unwrap_or(script[start].1);
        let new_start = script[start..end]
            .iter()
            .find(|(t, _, _)| *t != '-')
            .map(|(_, _, j)| *j)
            .unwrap_or(script[start].2);
        let old_count = script[start..end]
            .iter()
            .filter(|(t, _, _)| *t != '+')
            .count();
        let new_count = script[start..end]
            .iter()
            .filter(|(t, _, _)| *t != '-')
            .count();
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            old_start + 1,
            old_count,
            new_start + 1,
            new_count
        ));
        for (tag, i, j) in &script[start..end] {
            let line = match tag {
                '+' => b[*j],
                _ => a[*i],
            };
            out.push(*tag);
            out.push_str(&shortened(line));
            if !line.ends_with('\n') {
                out.push_str("\n\\ no newline at end of file\n");
            }
        }
        k += 1;
    }
    out
}

fn grants_of(shapes: &[Shape]) -> BTreeMap<String, BTreeSet<String>> {
    let mut found = BTreeMap::new();
    for shape in shapes {
        let Resource::File(file) = shape.resource() else {
            continue;
        };
        let Some(content) = &file.content else {
            continue;
        };
        if !content.contains("mesh-grants/1") {
            continue;
        }
        let Ok(manifest) = serde_json::from_str::<serde_json::Value>(content) else {
            continue;
        };
        if manifest["format"] != "mesh-grants/1" {
            continue;
        }
        let service = manifest["service"].as_str().unwrap_or_default().to_string();
        let logins: BTreeSet<String> = manifest["grants"]
            .as_array()
            .map(|grants| {
                grants
                    .iter()
                    .filter_map(|g| g["login"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        found.insert(service, logins);
    }
    found
}

fn grant_changes(old: &[Shape], new: &[Shape]) -> Vec<GrantChanges> {
    let before = grants_of(old);
    let after = grants_of(new);
    let services: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let empty = BTreeSet::new();
    services
        .into_iter()
        .filter_map(|service| {
            let left = before.get(service).unwrap_or(&empty);
            let right = after.get(service).unwrap_or(&empty);
            let added: Vec<String> = right.difference(left).cloned().collect();
            let withdrawn: Vec<String> = left.difference(right).cloned().collect();
            (!added.is_empty() || !withdrawn.is_empty()).then(|| GrantChanges {
                service: service.clone(),
                added,
                withdrawn,
            })
        })
        .collect()
}

// ---- rendering ----------------------------------------------------------------

struct Paint {
    color: bool,
}

impl Paint {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }
    fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }
    fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }
    fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }
}

/// Plan-supplied text as it may reach a terminal: every control, escape,
/// bidirectional and invisible character written out (`\u{1b}`, `\u{200b}`), so a
/// hostile build cannot move the cursor, recolour the output, fake a line or make
/// two names that differ look alike (as `mesh-apply` prints plans).
fn esc(text: &str) -> std::borrow::Cow<'_, str> {
    plan::display::Escape::ControlsAndInvisible.text(text)
}

/// The diff for people: stable order, colour only when asked. Everything taken from
/// a plan is printed escaped ([`esc`]), and any age private key in it blotted out.
pub fn render_human(diff: &FleetDiff, color: bool) -> String {
    let out = render_human_unredacted(diff, color);
    crate::private_key::redact_private_keys(&out).into_owned()
}

fn render_human_unredacted(diff: &FleetDiff, color: bool) -> String {
    let paint = Paint { color };
    let mut out = String::new();
    for node in &diff.nodes {
        match node.status {
            NodeStatus::Added => {
                out.push_str(&paint.green(&format!("+ node {} (new)\n", esc(&node.node))))
            }
            NodeStatus::Removed => {
                out.push_str(&paint.red(&format!(
                    "- node {} (removed from the fleet; nothing is applied to it)\n",
                    esc(&node.node)
                )));
                continue;
            }
            NodeStatus::Changed => {
                out.push_str(&paint.yellow(&format!("~ node {}\n", esc(&node.node))))
            }
        }
        for change in &node.changes {
            let origin = paint.dim(&format!(
                "{} ({})",
                esc(&change.module),
                esc(&change.source)
            ));
            let line = match change.action {
                Action::Add => paint.green(&format!(
                    "  + {} {}",
                    esc(change.kind),
                    esc(&change.identity)
                )),
                Action::Change => paint.yellow(&format!(
                    "  ~ {} {}",
                    esc(change.kind),
                    esc(&change.identity)
                )),
                Action::Withdraw => paint.red(&format!(
                    "  - {} {}",
                    esc(change.kind),
                    esc(&change.identity)
                )),
            };
            out.push_str(&format!("{line}  {origin}\n"));
            if change.kept {
                out.push_str("      withdrawn from the plan; its data stays on the node\n");
            }
            if let Some(reason) = &change.restart {
                out.push_str(&format!(
                    "      {}: {}\n",
                    paint.yellow("restarts"),
                    esc(reason)
                ));
            }
            for field in &change.fields {
                match field {
                    FieldChange::Value { field, old, new } => {
                        out.push_str(&format!(
                            "      {}: {} -> {}\n",
                            esc(field),
                            paint.red(&esc(old)),
                            paint.green(&esc(new))
                        ));
                    }
                    FieldChange::Sealed {
                        field,
                        value,
                        of,
                        consumers,
                        warning,
                        ..
                    } => {
                        let what = match value {
                            ValueChange::Same => "same value, resealed to a new key",
                            ValueChange::Replaced => {
                                "value id kept, but sealed anew to the same key"
                            }
                            ValueChange::New => "new value",
                            ValueChange::Unmade => "new value, made by the next `meshc build`",
                            ValueChange::Unknown => {
                                "value identity unknown: made before ids were kept"
                            }
                            ValueChange::IdRemoved => "value id removed since the last build",
                        };
                        let of = of.map(|of| format!(" ({})", of.name())).unwrap_or_default();
                        out.push_str(&format!("      {}: {what}{of}\n", esc(field)));
                        if !consumers.is_empty() {
                            let names: Vec<String> = consumers
                                .iter()
                                .map(|c| format!("{} {}", c.kind, esc(&c.name)))
                                .collect();
                            out.push_str(&format!("      read by: {}\n", names.join(", ")));
                        }
                        if let Some(warning) = warning {
                            out.push_str(&format!(
                                "      {}: {warning}\n",
                                paint.yellow("warning")
                            ));
                        }
                    }
                    FieldChange::Binary { field, old, new } => {
                        let show = |blob: &Option<Blob>| match blob {
                            Some(blob) => format!("{} bytes ({})", blob.bytes, blob.sha256),
                            None => "none".to_string(),
                        };
                        out.push_str(&format!(
                            "      {} (binary): {} -> {}\n",
                            esc(field),
                            paint.red(&show(old)),
                            paint.green(&show(new))
                        ));
                    }
                    FieldChange::Text { field, unified } => {
                        out.push_str(&format!("      {}:\n", esc(field)));
                        for line in unified.lines() {
                            let line = &*esc(line);
                            let painted = match line.chars().next() {
                                Some('+') => paint.green(line),
                                Some('-') => paint.red(line),
                                Some('@') => paint.dim(line),
                                _ => line.to_string(),
                            };
                            out.push_str(&format!("        {painted}\n"));
                        }
                    }
                    FieldChange::Json { field, changes } => {
                        out.push_str(&format!("      {} (JSON):\n", esc(field)));
                        for change in changes {
                            match (&change.old, &change.new) {
                                (Some(old), Some(new)) => out.push_str(&format!(
                                    "        ~ {}: {} -> {}\n",
                                    esc(&change.path),
                                    paint.red(&esc(old)),
                                    paint.green(&esc(new))
                                )),
                                (None, Some(new)) => out.push_str(&paint.green(&format!(
                                    "        + {}: {}\n",
                                    esc(&change.path),
                                    esc(new)
                                ))),
                                (Some(old), None) => out.push_str(&paint.red(&format!(
                                    "        - {}: {}\n",
                                    esc(&change.path),
                                    esc(old)
                                ))),
                                (None, None) => {}
                            }
                        }
                    }
                }
            }
        }
        for grants in &node.grants {
            for login in &grants.added {
                out.push_str(&paint.green(&format!(
                    "  + grant {} on {}\n",
                    esc(login),
                    esc(&grants.service)
                )));
            }
            for login in &grants.withdrawn {
                out.push_str(&paint.red(&format!(
                    "  - grant {} on {} (login disabled by the provisioner)\n",
                    esc(login),
                    esc(&grants.service)
                )));
            }
        }
    }
    let summary = &diff.summary;
    if diff.is_empty() {
        out.push_str("No changes: every node's plan is the one already built.\n");
    } else {
        out.push_str(&format!(
            "{} to add, {} to change, {} to withdraw, {} to restart, on {} changed node(s); {} node(s) added, {} removed.\n",
            summary.add,
            summary.change,
            summary.withdraw,
            summary.restart,
            summary.nodes_changed,
            summary.nodes_added,
            summary.nodes_removed
        ));
    }
    out
}

/// The diff for tools, with any age private key in it blotted out.
pub fn render_json(diff: &FleetDiff) -> String {
    let json = serde_json::to_string_pretty(diff).unwrap_or_else(|_| "{}".into());
    // serde_json escapes C0 controls; DEL, C1, bidirectional and invisible ones too
    let json = plan::display::Escape::ControlsAndInvisible.json(&json);
    crate::private_key::redact_private_keys(&json).into_owned()
}

#[cfg(test)]
mod tests {
    use super::unified_diff;

    #[test]
    fn long_lines_are_cut_with_their_length_and_digest() {
        let old = format!("{}\n", "x".repeat(100_000));
        let new = format!("{}y\n", "x".repeat(100_000));
        let shown = unified_diff(&old, &new, 3);
        assert!(shown.len() < 1_000, "{} bytes", shown.len());
        assert!(
            shown.contains("[a line of 100000 bytes, sha256:"),
            "{shown}"
        );
        assert!(
            shown.contains("[a line of 100001 bytes, sha256:"),
            "{shown}"
        );
        assert_eq!(shown.lines().count(), 3, "{shown}");
    }

    #[test]
    fn unified_diff_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\n";
        let new = "a\nb\nc\nD\ne\nf\ng\n";
        assert_eq!(
            unified_diff(old, new, 1),
            "@@ -3,3 +3,3 @@\n c\n-d\n+D\n e\n"
        );
        assert_eq!(
            unified_diff("x", "y", 3),
            "@@ -1,1 +1,1 @@\n-x\n\\ no newline at end of file\n+y\n\\ no newline at end of file\n"
        );
        assert_eq!(
            unified_diff("a\nb\n", "c\nd\n", 3),
            "@@ -1,2 +1,2 @@\n-a\n-b\n+c\n+d\n"
        );
    }
}
