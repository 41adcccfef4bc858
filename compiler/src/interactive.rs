//! The names an interactive session (`meshc repl`) starts with: the prelude `mesh`
//! (with `mesh.lib`) and, for a node of the inventory, that node's `node` and
//! `settings` (every module's effective settings on it, as the pipeline makes them).
//! It evaluates on the machine it returns, which the session goes on using; it reads
//! only the repository and the standard library, and builds no plan.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::codes;
use lang::value::{Attr, Attrs};
use lang::{Diagnostic, Limits, Machine, Span, Value};

use crate::module::{self, Module, ModuleSet};
use crate::repository;
use crate::settings::{self, DefaultsCache};
use crate::stdlib::{self, MeshLoader};
use crate::types::CheckContext;
use crate::{inventory, prelude, resolve};

/// A session's machine and its first names.
pub struct InteractiveScope {
    pub machine: Machine,
    /// The repository (or, outside one, the directory the session reads from).
    pub root: PathBuf,
    /// `mesh`, and `node` and `settings` when a node was asked for, in that order.
    pub names: Vec<(String, Value)>,
}

/// Why a session could not start: its diagnostics and the machine whose sources
/// they point into.
pub struct ScopeFailure {
    pub diagnostics: Vec<Diagnostic>,
    pub machine: Option<Machine>,
}

fn set(entries: BTreeMap<String, Value>) -> Value {
    Value::Attrs(Attrs::from_unsorted(
        entries
            .into_iter()
            .map(|(name, value)| Attr {
                name: lang::Name::new(name.as_bytes()),
                value,
                span: None,
            })
            .collect(),
    ))
}

/// Starts a session reading from `root` (a repository, or any directory when no
/// node is asked for). Must run on an evaluation stack (`lang::eval::run_with_stack`).
pub fn interactive_scope(
    root: &Path,
    node: Option<&str>,
    limits: Limits,
) -> Result<InteractiveScope, ScopeFailure> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let loader = Rc::new(MeshLoader::new(root.clone()));
    let mut machine = Machine::new(
        loader,
        vec![root.clone(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        limits,
    );
    let (mesh, _made) = prelude::prelude(&root, &mut machine);
    let mut names = vec![("mesh".to_string(), mesh.clone())];
    if let Some(node) = node {
        let mut diagnostics = Vec::new();
        match node_names(&mut machine, &root, node, &mesh, &mut diagnostics) {
            Ok(Some((node_value, settings_value))) if !has_errors(&diagnostics) => {
                names.push(("node".to_string(), node_value));
                names.push(("settings".to_string(), settings_value));
            }
            Ok(_) => {
                return Err(ScopeFailure {
                    diagnostics,
                    machine: Some(machine),
                });
            }
            Err(error) => {
                diagnostics.push(*error);
                return Err(ScopeFailure {
                    diagnostics,
                    machine: Some(machine),
                });
            }
        }
    }
    Ok(InteractiveScope {
        machine,
        root,
        names,
    })
}

fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == lang::Severity::Error)
}

/// `node` and `settings` of one node: the inventory read, every module loaded, the
/// node resolved, as the pipeline does before its later stages.
fn node_names(
    machine: &mut Machine,
    root: &Path,
    wanted: &str,
    mesh: &Value,
    diagnostics: &mut Vec<Diagnostic>,
) -> lang::value::EvalResult<Option<(Value, Value)>> {
    let repository = repository::load(root)?;
    let inventory_value = match machine.eval_file(&repository.inventory) {
        Ok(value) => value,
        Err(errors) => {
            diagnostics.extend(errors);
            return Ok(None);
        }
    };
    let inventory_file = machine
        .sources
        .find_path(&repository.inventory)
        .unwrap_or_default();
    let inventory_span = Span::new(inventory_file, 0, 0);
    let inventory = inventory::read(machine, &inventory_value, inventory_span, diagnostics)?;
    let node_names: Vec<String> = inventory.nodes.keys().cloned().collect();
    let Some(node) = inventory.nodes.get(wanted) else {
        let help = lang::diagnostic::did_you_mean(wanted, node_names.iter().map(String::as_str))
            .unwrap_or_else(|| {
                format!(
                    "the inventory's nodes are {}",
                    lang::diagnostic::quoted_few(&node_names)
                )
            });
        diagnostics.push(
            Diagnostic::error(
                codes::UNKNOWN_REPL_NODE,
                format!("`--node {wanted}`: the inventory has no node `{wanted}`"),
            )
            .with_help(help),
        );
        return Ok(None);
    };
    let context = CheckContext {
        node_names: &node_names,
        failed_nodes: &inventory.failed,
    };
    let known: Vec<String> = repository.modules.keys().cloned().collect();
    let mut modules = ModuleSet::complete();
    for (name, location) in &repository.modules {
        let module = module::load(machine, name, location, mesh, &context, diagnostics)?;
        modules.add(name, module);
    }
    let mut defaults = DefaultsCache::default();
    let mut settings_of =
        |machine: &mut Machine, module: &Module, diagnostics: &mut Vec<Diagnostic>| {
            settings::module_settings(machine, module, node, &context, &mut defaults, diagnostics)
        };
    let Some(resolved) = resolve::resolve(
        machine,
        node,
        &modules,
        &known,
        &mut settings_of,
        diagnostics,
    )?
    else {
        return Ok(None);
    };
    Ok(Some((node.value.clone(), set(resolved.settings))))
}
