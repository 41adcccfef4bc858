//! Emit: turns each node's shape declarations into a `plan::Plan` (canonical order,
//! digests) and writes the build output: `OUT/nodes/NODE.json` and
//! `OUT/manifest.json`. Files are written atomically; node files of nodes that no
//! longer exist are removed. Nothing nondeterministic reaches the bytes. Everything
//! below `OUT` goes through `crate::confined`: no symbolic link is followed there.

use std::collections::BTreeMap;
use std::path::Path;

use lang::{Diagnostic, Span, codes};
use plan::{Plan, Shape};

use crate::confined::{self, Beneath};
use crate::sealed_value::NodeValues;
use crate::shapes::ShapeDecl;

/// The manifest format: node name -> plan digest.
pub const MANIFEST_FORMAT: &str = "mesh-manifest/1";

/// A node's plan from its declarations. A plan the format refuses (a file inside
/// another file's path, a path inside an archive) is reported at the module line
/// that declared the shape it names, and at the other shape's line if there is one.
/// Every declaration was accepted on its own by `shapes::follows_plan_rules` (the
/// plan's own `Resource::validate` and `validate_origin`): only the checks across
/// shapes are left. Kept out of line, so that profiles show the plan step.
#[inline(never)]
pub fn plan(node: &str, declarations: Vec<ShapeDecl>) -> Result<Plan, Diagnostic> {
    // in the plan's own order (kind, then identity), so that the plan's shape `i`
    // was declared at `spans[i]`: no name is copied unless the plan is refused; the
    // declarations' positions are sorted, not the declarations, which are large
    let mut order: Vec<usize> = (0..declarations.len()).collect();
    order.sort_by(|&left, &right| {
        let key = |index: usize| {
            declarations
                .get(index)
                .map(|declaration| (declaration.kind(), declaration.identity().as_bytes()))
        };
        key(left).cmp(&key(right))
    });
    let mut declarations: Vec<Option<ShapeDecl>> = declarations.into_iter().map(Some).collect();
    let mut spans: Vec<(plan::Kind, Span)> = Vec::with_capacity(order.len());
    let mut shapes: Vec<Shape> = Vec::with_capacity(order.len());
    for index in order {
        if let Some(declaration) = declarations.get_mut(index).and_then(Option::take) {
            spans.push((declaration.kind(), declaration.span));
            shapes.push(Shape::new(
                declaration.resource,
                declaration.module,
                declaration.source,
            ));
        }
    }
    let plan = Plan::new(node, shapes);
    if let Err(error) = plan.validate_together() {
        let span_of = |name: &plan::ShapeName| {
            let index = plan.shapes().iter().position(|shape| {
                shape.kind().name() == name.kind && shape.identity() == name.identity
            })?;
            // the same shape if the plan kept the order it was given
            let (kind, span) = spans.get(index)?;
            (*kind == plan.shapes()[index].kind()).then_some(*span)
        };
        let mut diagnostic = Diagnostic::error(
            codes::INVALID_SHAPE,
            format!("the plan of node `{node}` is invalid: {error}"),
        )
        .with_help(match &error {
            plan::PlanError::Conflict { first, .. }
                if matches!(first.kind.as_str(), "service" | "container") =>
            {
                "mesh writes a service's unit (and the link that enables it) and a container's Quadlet file itself, from the `mesh.service` or `mesh.container`: drop the other shape, or give what it wrote as the service's fields; a drop-in (`NAME.service.d/`) is yours to write"
            }
            plan::PlanError::Conflict { .. } => "a file, link, secret or archive holds no other path: move one of the two shapes, or make the outer one a `mesh.directory`",
            _ => "fix the shape the message names",
        });
        if let Some(span) = error.shape().and_then(span_of) {
            diagnostic = diagnostic.with_primary(span, "declared here");
        }
        if let plan::PlanError::Conflict { first, .. } = &error
            && let Some(span) = span_of(first)
        {
            diagnostic = diagnostic.with_secondary(span, "the other shape, declared here");
        }
        return Err(diagnostic);
    }
    Ok(plan)
}

/// The manifest bytes: canonical JSON of `{ format, nodes: { NODE: DIGEST },
/// keys: { NODE: RECIPIENT }, secrets: { NODE: { PATH: { of, value } } } }`. `keys`
/// and `secrets` are for `meshc diff` only; nothing on a node reads them.
pub fn manifest(
    plans: &BTreeMap<String, Plan>,
    keys: &BTreeMap<String, String>,
    secrets: &NodeValues,
) -> Vec<u8> {
    manifest_of(plans, |plan| plan.digest(), keys, secrets)
}

/// [`manifest`] from what each node has (`digests`), `digest` giving its plan's
/// digest.
pub(crate) fn manifest_of<D>(
    digests: &BTreeMap<String, D>,
    digest: impl Fn(&D) -> &str,
    keys: &BTreeMap<String, String>,
    secrets: &NodeValues,
) -> Vec<u8> {
    let secrets: NodeValues = among(secrets, digests)
        .filter(|(_, values)| !values.is_empty())
        .map(|(node, values)| (node.clone(), values.clone()))
        .collect();
    // written as `canonical_json` writes the object, its keys in byte order, the
    // maps of every node straight from their sorted entries
    let mut bytes = Vec::with_capacity(digests.len() * 160);
    bytes.extend_from_slice(b"{\"format\":");
    plan::canonical::write_string(MANIFEST_FORMAT, &mut bytes);
    bytes.extend_from_slice(b",\"keys\":");
    let keys = among(keys, digests);
    plan::canonical::write_string_object(
        keys.map(|(node, key)| (node.as_str(), key.as_str())),
        &mut bytes,
    );
    bytes.extend_from_slice(b",\"nodes\":");
    plan::canonical::write_string_object(
        digests
            .iter()
            .map(|(node, planned)| (node.as_str(), digest(planned))),
        &mut bytes,
    );
    bytes.extend_from_slice(b",\"secrets\":");
    plan::canonical::write_canonical(&crate::sealed_value::to_manifest(&secrets), &mut bytes);
    bytes.extend_from_slice(b"}\n");
    bytes
}

/// The entries of `map` whose node has a plan in `digests`: both are in node
/// order, so they are walked side by side (a fleet's 10,000 nodes are not each
/// searched for among names that share long prefixes).
fn among<'m, V, D>(
    map: &'m BTreeMap<String, V>,
    digests: &'m BTreeMap<String, D>,
) -> impl Iterator<Item = (&'m String, &'m V)> {
    let mut planned = digests.keys().peekable();
    map.iter().filter(move |(node, _)| {
        while planned.next_if(|planned| planned < node).is_some() {}
        planned.peek() == Some(node)
    })
}

pub(crate) fn output_error(path: &Path, error: std::io::Error) -> Diagnostic {
    if confined::is_link_refusal(&error) {
        return output_link(format!(
            "cannot write `{}`: it is a symbolic link or passes through one",
            path.display()
        ));
    }
    Diagnostic::error(
        codes::OUTPUT_UNWRITABLE,
        format!("cannot write `{}`: {error}", path.display()),
    )
    .with_help("check that the output directory is writable, or choose another with `--out DIR`")
}

pub(crate) fn output_link(message: String) -> Diagnostic {
    Diagnostic::error(codes::OUTPUT_LINK, message).with_help(
        "`OUT/nodes` must be a real directory made by meshc: remove the link (or the directory someone else made) and build again, or choose another output with `--out DIR`",
    )
}

/// Writes `bytes` to the file `name` of `directory` through a new file and a rename
/// (never through a link planted at `name`), readable by `readers`, unless it
/// already holds these bytes.
pub fn write_atomically(
    directory: &Beneath,
    name: &str,
    bytes: &[u8],
    readers: confined::Readers,
) -> Result<(), Diagnostic> {
    let path = directory.path().join(name);
    // no fsync: the output is rebuilt from the repository at will, and readers see
    // either the old file or the new one because of the rename
    write_if_changed(directory, name, bytes, readers).map_err(|error| output_error(&path, error))
}

/// The first step of [`write_atomically`]: `bytes` written (mode 0600) to a new
/// temporary file beside `name`, whose name is returned for [`Beneath::rename`] to
/// put in place; None when `name` already holds them.
pub fn stage_if_changed(
    directory: &Beneath,
    name: &str,
    bytes: &[u8],
) -> Result<Option<String>, Diagnostic> {
    if directory
        .read(Path::new(name))
        .is_ok_and(|existing| existing.as_deref() == Some(bytes))
    {
        return Ok(None);
    }
    let path = directory.path().join(name);
    directory
        .stage(name, bytes)
        .map(Some)
        .map_err(|error| output_error(&path, error))
}

/// [`write_atomically`] with the I/O error as it is, for a caller whose file is no
/// build output (`mesh.lock`, E317) and which reports it with its own code.
pub(crate) fn write_if_changed(
    directory: &Beneath,
    name: &str,
    bytes: &[u8],
    readers: confined::Readers,
) -> std::io::Result<()> {
    if directory
        .read(Path::new(name))
        .is_ok_and(|existing| existing.as_deref() == Some(bytes))
    {
        return Ok(());
    }
    directory.write(name, bytes, false, readers)
}

/// `OUT/nodes` (made when `create`), refused when it is a link; None when it does not
/// exist and is not to be made.
pub(crate) fn open_nodes(
    output: &Beneath,
    out: &Path,
    create: bool,
) -> Result<Option<Beneath>, Diagnostic> {
    let nodes_path = out.join("nodes");
    match output.directory(Path::new("nodes"), create) {
        Ok(nodes) => Ok(nodes),
        Err(error) if confined::is_link_refusal(&error) => Err(output_link(format!(
            "`{}` is a symbolic link: meshc writes plans and removes stale ones only in a real directory",
            nodes_path.display()
        ))),
        Err(error) => Err(output_error(&nodes_path, error)),
    }
}

/// Refuses an `OUT/nodes` that is not this user's: meshc removes stale plans only
/// from a directory it owns.
pub(crate) fn check_owner(nodes: &Beneath, nodes_path: &Path) -> Result<(), Diagnostic> {
    let own = confined::own_uid().map_err(|e| output_error(nodes_path, e))?;
    let owner = nodes.owner().map_err(|e| output_error(nodes_path, e))?;
    if owner != own {
        return Err(output_link(format!(
            "`{}` belongs to uid {owner}, not to this user (uid {own}): meshc removes stale plans only from a directory it owns",
            nodes_path.display()
        )));
    }
    Ok(())
}

/// Writes every plan and the manifest; removes plans of nodes that are gone. `OUT`
/// is the user's choice; `OUT/nodes` must be a real directory (no symbolic link)
/// owned by this user, and nothing below it is followed: a link planted at
/// `nodes/NODE.json` is replaced, a stale one removed, never written through.
pub fn write(
    out: &Path,
    plans: &BTreeMap<String, Plan>,
    keys: &BTreeMap<String, String>,
    secrets: &NodeValues,
) -> Result<(), Diagnostic> {
    let output = Beneath::open(out, true).map_err(|e| output_error(out, e))?;
    let nodes_path = out.join("nodes");
    let Some(nodes) = open_nodes(&output, out, true)? else {
        return Err(output_error(
            &nodes_path,
            std::io::ErrorKind::NotFound.into(),
        ));
    };
    check_owner(&nodes, &nodes_path)?;
    for (name, plan) in plans {
        write_atomically(
            &nodes,
            &format!("{name}.json"),
            &plan.to_json_bytes(),
            confined::Readers::Owner,
        )?;
    }
    let names = nodes.names().map_err(|e| output_error(&nodes_path, e))?;
    for file_name in names {
        let file_name = file_name.to_string_lossy().into_owned();
        if let Some(node) = file_name.strip_suffix(".json")
            && !plans.contains_key(node)
        {
            nodes
                .remove(&file_name)
                .map_err(|e| output_error(&nodes_path.join(&file_name), e))?;
        }
    }
    write_atomically(
        &output,
        "manifest.json",
        &manifest(plans, keys, secrets),
        confined::Readers::Owner,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::sealed_value::{Identity, NodeValues, SealedValue};

    /// The manifest written straight from its maps is the canonical JSON of the
    /// object it stands for, escapes and filtering included.
    #[test]
    fn the_manifest_is_the_canonical_json_of_its_object() {
        let digests: BTreeMap<String, String> = (0..40)
            .map(|n| (format!("node{n:03}"), format!("sha256:{n:064x}")))
            .chain([("quote\"d\u{1}é".to_string(), "a\\b\u{7f}".to_string())])
            .collect();
        let mut keys: BTreeMap<String, String> = digests
            .keys()
            .map(|node| (node.clone(), format!("age1{node}\n")))
            .collect();
        // nodes without a plan before, among and after the built ones (the maps
        // are walked side by side)
        for unbuilt in ["a-first", "not-built", "zz-last"] {
            keys.insert(unbuilt.to_string(), "age1other".to_string());
        }
        let mut secrets = NodeValues::new();
        secrets.insert(
            "node007".to_string(),
            BTreeMap::from([(
                "/etc/a \"b\"".to_string(),
                SealedValue {
                    of: None,
                    identity: Identity::Known("0123".to_string()),
                },
            )]),
        );
        secrets.insert("node008".to_string(), BTreeMap::new());
        secrets.insert(
            "not-built".to_string(),
            BTreeMap::from([(
                "/x".to_string(),
                SealedValue {
                    of: None,
                    identity: Identity::NotYetMade,
                },
            )]),
        );
        let nodes: serde_json::Map<String, serde_json::Value> = digests
            .iter()
            .map(|(name, digest)| (name.clone(), serde_json::Value::String(digest.clone())))
            .collect();
        let built_keys: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .filter(|(node, _)| digests.contains_key(*node))
            .map(|(node, key)| (node.clone(), serde_json::Value::String(key.clone())))
            .collect();
        let built_secrets: NodeValues = secrets
            .iter()
            .filter(|(node, values)| digests.contains_key(*node) && !values.is_empty())
            .map(|(node, values)| (node.clone(), values.clone()))
            .collect();
        let object = serde_json::json!({
            "format": super::MANIFEST_FORMAT,
            "nodes": nodes,
            "keys": built_keys,
            "secrets": crate::sealed_value::to_manifest(&built_secrets),
        });
        let mut expected = plan::canonical_json(&object);
        expected.push(b'\n');
        let written = super::manifest_of(&digests, String::as_str, &keys, &secrets);
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&expected)
        );
        for unbuilt in ["a-first", "not-built", "zz-last"] {
            assert!(!String::from_utf8_lossy(&written).contains(unbuilt));
        }
    }
}
