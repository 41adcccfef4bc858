//! Emit: turns each node's shape declarations into a `plan::Plan` (canonical order,
//! digests) and writes the build output: `OUT/nodes/NODE.json` and
//! `OUT/manifest.json`. Files are written atomically; node files of nodes that no
//! longer exist are removed. Nothing nondeterministic reaches the bytes.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use lang::{Diagnostic, codes};
use plan::{Plan, Shape};

use crate::shapes::ShapeDecl;

/// The manifest format: node name -> plan digest.
pub const MANIFEST_FORMAT: &str = "mesh-manifest/1";

/// A node's plan from its declarations.
pub fn plan(node: &str, declarations: Vec<ShapeDecl>) -> Result<Plan, Diagnostic> {
    let shapes = declarations
        .into_iter()
        .map(|declaration| Shape::new(declaration.resource, declaration.module, declaration.source))
        .collect();
    let plan = Plan::new(node, shapes);
    if let Err(error) = plan.validate() {
        return Err(Diagnostic::error(
            codes::INVALID_SHAPE,
            format!("the plan of node `{node}` is invalid: {error}"),
        )
        .with_help("fix the shape the message names"));
    }
    Ok(plan)
}

/// The manifest bytes: canonical JSON of `{ format, nodes: { NODE: DIGEST },
/// keys: { NODE: RECIPIENT } }`.
pub fn manifest(plans: &BTreeMap<String, Plan>, keys: &BTreeMap<String, String>) -> Vec<u8> {
    let nodes: serde_json::Map<String, serde_json::Value> = plans
        .iter()
        .map(|(name, plan)| {
            (
                name.clone(),
                serde_json::Value::String(plan.digest().to_string()),
            )
        })
        .collect();
    let keys: serde_json::Map<String, serde_json::Value> = keys
        .iter()
        .filter(|(node, _)| plans.contains_key(*node))
        .map(|(node, key)| (node.clone(), serde_json::Value::String(key.clone())))
        .collect();
    let value = serde_json::json!({ "format": MANIFEST_FORMAT, "nodes": nodes, "keys": keys });
    let mut bytes = plan::canonical_json(&value);
    bytes.push(b'\n');
    bytes
}

fn output_error(path: &Path, error: std::io::Error) -> Diagnostic {
    Diagnostic::error(
        codes::OUTPUT_UNWRITABLE,
        format!("cannot write `{}`: {error}", path.display()),
    )
    .with_help("check that the output directory is writable, or choose another with `--out DIR`")
}

/// Writes `bytes` to `path` through a temporary file in the same directory, unless
/// the file already holds exactly these bytes.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Diagnostic> {
    if std::fs::read(path).is_ok_and(|existing| existing == bytes) {
        return Ok(());
    }
    let directory = path.parent().unwrap_or(Path::new("."));
    let mut temporary =
        tempfile::NamedTempFile::new_in(directory).map_err(|e| output_error(path, e))?;
    temporary
        .write_all(bytes)
        .map_err(|e| output_error(path, e))?;
    // no fsync: the output is rebuilt from the repository at will, and readers see
    // either the old file or the new one because of the rename
    temporary
        .persist(path)
        .map_err(|e| output_error(path, e.error))?;
    Ok(())
}

/// Writes every plan and the manifest; removes plans of nodes that are gone.
pub fn write(
    out: &Path,
    plans: &BTreeMap<String, Plan>,
    keys: &BTreeMap<String, String>,
) -> Result<(), Diagnostic> {
    let nodes_directory = out.join("nodes");
    std::fs::create_dir_all(&nodes_directory).map_err(|e| output_error(&nodes_directory, e))?;
    for (name, plan) in plans {
        write_atomically(
            &nodes_directory.join(format!("{name}.json")),
            &plan.to_json_bytes(),
        )?;
    }
    if let Ok(entries) = std::fs::read_dir(&nodes_directory) {
        for entry in entries.filter_map(Result::ok) {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if let Some(node) = file_name.strip_suffix(".json")
                && !plans.contains_key(node)
            {
                std::fs::remove_file(entry.path()).map_err(|e| output_error(&entry.path(), e))?;
            }
        }
    }
    write_atomically(&out.join("manifest.json"), &manifest(plans, keys))
}
