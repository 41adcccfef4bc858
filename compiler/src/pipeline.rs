//! The compiler's stages in order: repository -> inventory -> modules -> per node:
//! resolve -> settings -> contribute -> shapes. Each stage is a function of the ones
//! before; this file only wires them together and gathers every diagnostic.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::value::EvalResult;
use lang::{Diagnostic, Limits, Machine, Severity, Sources, Span, codes};

use crate::contribute;
use crate::inventory::{self, Inventory};
use crate::module::{self, Module};
use crate::prelude;
use crate::repository::{self, Origin, Repository};
use crate::resolve;
use crate::settings::{self, DefaultsCache};
use crate::shapes::{self, ShapeArguments, ShapeDecl};
use crate::stdlib::{self, MeshLoader};
use crate::types::CheckContext;

/// What compiling a repository produced.
pub struct Compilation {
    pub root: PathBuf,
    /// Every node of the inventory that compiled, with its shapes.
    pub nodes: BTreeMap<String, Vec<ShapeDecl>>,
    pub diagnostics: Vec<Diagnostic>,
    pub sources: Sources,
}

impl Compilation {
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Compiles the repository at `root` (on a thread with a large stack).
pub fn compile(root: &Path) -> Compilation {
    let root = root.to_path_buf();
    lang::eval::run_with_stack(move || compile_here(&root))
}

fn compile_here(root: &Path) -> Compilation {
    let mut diagnostics = Vec::new();
    let repository = match repository::load(root) {
        Ok(repository) => repository,
        Err(diagnostic) => {
            return Compilation {
                root: root.to_path_buf(),
                nodes: BTreeMap::new(),
                diagnostics: vec![diagnostic],
                sources: Sources::new(),
            };
        }
    };
    let loader = Rc::new(MeshLoader::new(repository.root.clone()));
    let mut machine = Machine::new(
        loader,
        vec![repository.root.clone(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        Limits::default(),
    );
    let nodes = match run(&mut machine, &repository, &mut diagnostics) {
        Ok(nodes) => nodes,
        Err(error) => {
            diagnostics.push(*error);
            BTreeMap::new()
        }
    };
    let mut sources = std::mem::take(&mut machine.sources);
    drop(machine);
    sources.rename(|file| match &file.path {
        Some(path) => prelude::display_path(&path.display().to_string(), &repository.root),
        None => file.name.clone(),
    });
    Compilation {
        root: repository.root,
        nodes,
        diagnostics: without_repeats(diagnostics),
        sources,
    }
}

fn run(
    machine: &mut Machine,
    repository: &Repository,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<BTreeMap<String, Vec<ShapeDecl>>> {
    let inventory_value = match machine.eval_file(&repository.inventory) {
        Ok(value) => value,
        Err(errors) => {
            diagnostics.extend(errors);
            return Ok(BTreeMap::new());
        }
    };
    let inventory_file = machine
        .sources
        .find_path(&repository.inventory)
        .unwrap_or_default();
    let inventory_span = Span::new(inventory_file, 0, 0);
    let inventory: Inventory =
        inventory::read(machine, &inventory_value, inventory_span, diagnostics)?;
    let node_names: Vec<String> = inventory.nodes.keys().cloned().collect();
    let context = CheckContext {
        node_names: &node_names,
    };

    let (prelude, made) = prelude::prelude(&repository.root);
    let known: Vec<String> = repository.modules.keys().cloned().collect();
    let mut modules: BTreeMap<String, Module> = BTreeMap::new();
    for (name, location) in &repository.modules {
        if let Some(module) = recover(
            module::load(machine, name, location, &prelude, &context, diagnostics),
            diagnostics,
        )
        .flatten()
        {
            modules.insert(name.clone(), module);
        }
    }
    for name in &repository.shadowed {
        if let Some(module) = modules.get(name) {
            if module.location.origin == Origin::Repository {
                diagnostics.push(
                    Diagnostic::note(
                        codes::SHADOWED_MODULE,
                        format!(
                            "module `{name}` of the repository shadows the standard module `{name}`"
                        ),
                    )
                    .with_primary(module.span, "this module is used instead")
                    .with_help(format!(
                        "rename it if you meant to use the standard `{name}` as well"
                    )),
                );
            }
        }
    }

    let mut defaults = DefaultsCache::default();
    let mut plans = BTreeMap::new();
    for (name, node) in &inventory.nodes {
        let errors_before = error_count(diagnostics);
        let mut settings_of = |machine: &mut Machine,
                               module: &Module,
                               diagnostics: &mut Vec<Diagnostic>| {
            settings::module_settings(machine, module, node, &context, &mut defaults, diagnostics)
        };
        let Some(resolved) = recover(
            resolve::resolve(
                machine,
                node,
                &modules,
                &known,
                &mut settings_of,
                diagnostics,
            ),
            diagnostics,
        )
        .flatten() else {
            continue;
        };
        for (module_name, overrides) in &node.settings {
            if resolved.modules.contains(module_name) {
                continue;
            }
            let diagnostic = if known.contains(module_name) {
                Diagnostic::error(
                    codes::SETTING_FOR_ABSENT_MODULE,
                    format!("node `{name}` sets settings of module `{module_name}`, which does not run on it"),
                )
                .with_primary(overrides.span, "settings given here")
                .with_help(format!("assign the module with `modules = [ \"{module_name}\" ];` or remove these settings"))
            } else {
                resolve::unknown_module(
                    module_name,
                    overrides.span,
                    &known,
                    &format!("in the settings of node `{name}`"),
                )
            };
            diagnostics.push(diagnostic);
        }
        let Some(collected) = recover(
            contribute::collect(
                machine,
                node,
                &resolved,
                &modules,
                &known,
                &context,
                diagnostics,
            ),
            diagnostics,
        ) else {
            continue;
        };
        let extra = |_: &str| ShapeArguments::empty();
        let mut opaque = |_: &mut Machine,
                          _: &lang::Value,
                          span: Span|
         -> lang::value::EvalResult<serde_json::Value> {
            Err(lang::eval::opaque_error(span))
        };
        let Some(shapes) = recover(
            shapes::node_shapes(
                machine,
                node,
                &resolved,
                &modules,
                &collected,
                &extra,
                &made,
                &mut opaque,
                diagnostics,
            ),
            diagnostics,
        ) else {
            continue;
        };
        if error_count(diagnostics) == errors_before {
            plans.insert(name.clone(), shapes);
        }
    }
    Ok(plans)
}

/// An evaluation error ends the module or node it happened in, not the whole
/// compilation: it is reported and the next module or node goes on.
fn recover<T>(result: EvalResult<T>, diagnostics: &mut Vec<Diagnostic>) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(error) => {
            diagnostics.push(*error);
            None
        }
    }
}

/// The diagnostics without repeats: a broken module is reported once, not once
/// for every node that runs it.
fn without_repeats(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = HashSet::new();
    diagnostics
        .into_iter()
        .filter(|d| {
            seen.insert((
                d.code,
                d.severity.as_str(),
                d.message.clone(),
                d.primary.as_ref().map(|label| label.span),
                d.help.clone(),
            ))
        })
        .collect()
}

fn error_count(diagnostics: &[Diagnostic]) -> usize {
    diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count()
}
