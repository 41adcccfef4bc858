//! The compiler's stages in order: repository -> inventory -> modules -> per node:
//! resolve -> settings -> contribute -> shapes. Each stage is a function of the ones
//! before; this file only wires them together and gathers every diagnostic.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::value::EvalResult;
use lang::{Diagnostic, FileId, Label, Limits, Machine, Severity, Sources, Span, codes};
use plan::Plan;

use crate::contribute;
use crate::emit;
use crate::inventory::{self, Inventory};
use crate::module::{self, Module};
use crate::prelude;
use crate::repository::{self, Origin, Repository};
use crate::resolve;
use crate::settings::{self, DefaultsCache};
use crate::shapes::{self, ShapeArguments};
use crate::stdlib::{self, MeshLoader};
use crate::types::CheckContext;

/// What compiling a repository produced.
pub struct Compilation {
    pub root: PathBuf,
    /// The plan of every node of the inventory that compiled without errors.
    pub plans: BTreeMap<String, Plan>,
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

/// Compiles the repository at `root`. Nodes are shared out between workers (one per
/// core), each with its own evaluator, each evaluating the module files once and
/// then its share of the nodes; their results are merged in node order, so the
/// output does not depend on how many workers there were.
pub fn compile(root: &Path) -> Compilation {
    let workers = std::env::var("MESH_WORKERS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|count| count.get())
                .unwrap_or(1)
        })
        .clamp(1, 8);
    compile_with_workers(root, workers)
}

/// [`compile`] with a given number of workers (tests use it to check that the
/// result does not depend on it).
pub fn compile_with_workers(root: &Path, workers: usize) -> Compilation {
    let repository = match repository::load(root) {
        Ok(repository) => repository,
        Err(diagnostic) => {
            return Compilation {
                root: root.to_path_buf(),
                plans: BTreeMap::new(),
                diagnostics: vec![diagnostic],
                sources: Sources::new(),
            };
        }
    };
    let repository = &repository;
    let workers = workers.max(1);
    let results: Vec<WorkerResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|index| {
                std::thread::Builder::new()
                    .name(format!("mesh-eval-{index}"))
                    .stack_size(lang::eval::EVAL_STACK_SIZE)
                    .spawn_scoped(scope, move || work(repository, index, workers))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| match handle {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(error) => WorkerResult::failed(error),
            })
            .collect()
    });
    merge(repository, results)
}

struct WorkerResult {
    plans: BTreeMap<String, Plan>,
    /// Diagnostics about the whole repository (only worker 0 keeps them).
    global: Vec<Diagnostic>,
    /// Diagnostics per node.
    per_node: BTreeMap<String, Vec<Diagnostic>>,
    sources: Sources,
}

impl WorkerResult {
    fn failed(error: std::io::Error) -> WorkerResult {
        WorkerResult {
            plans: BTreeMap::new(),
            global: vec![
                Diagnostic::error(
                    codes::INTERNAL,
                    format!("cannot start an evaluation worker: {error}"),
                )
                .with_help("the machine is out of threads or memory; try again"),
            ],
            per_node: BTreeMap::new(),
            sources: Sources::new(),
        }
    }
}

fn work(repository: &Repository, index: usize, workers: usize) -> WorkerResult {
    let loader = Rc::new(MeshLoader::new(repository.root.clone()));
    let mut machine = Machine::new(
        loader,
        vec![repository.root.clone(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        Limits::default(),
    );
    let mut global = Vec::new();
    let mut per_node = BTreeMap::new();
    let plans = match run(
        &mut machine,
        repository,
        index,
        workers,
        &mut global,
        &mut per_node,
    ) {
        Ok(plans) => plans,
        Err(error) => {
            global.push(*error);
            BTreeMap::new()
        }
    };
    if index != 0 {
        // every worker sees the same repository: one report is enough
        global.clear();
    }
    let sources = std::mem::take(&mut machine.sources);
    drop(machine);
    WorkerResult {
        plans,
        global,
        per_node,
        sources,
    }
}

/// Merges the workers' results: sources by path, diagnostics remapped to the merged
/// sources, global ones first, then node by node in name order, repeats removed.
fn merge(repository: &Repository, results: Vec<WorkerResult>) -> Compilation {
    let mut sources = Sources::new();
    let mut plans = BTreeMap::new();
    let mut global = Vec::new();
    let mut per_node: BTreeMap<String, Vec<Diagnostic>> = BTreeMap::new();
    for result in results {
        let mapping = merge_sources(&mut sources, &result.sources);
        let remap = |mut diagnostic: Diagnostic| {
            remap_diagnostic(&mut diagnostic, &mapping);
            diagnostic
        };
        global.extend(result.global.into_iter().map(remap));
        for (node, diagnostics) in result.per_node {
            per_node
                .entry(node)
                .or_default()
                .extend(diagnostics.into_iter().map(remap));
        }
        plans.extend(result.plans);
    }
    sources.rename(|file| match &file.path {
        Some(path) => prelude::display_path(&path.display().to_string(), &repository.root),
        None => file.name.clone(),
    });
    let mut diagnostics = global;
    diagnostics.extend(per_node.into_values().flatten());
    Compilation {
        root: repository.root.clone(),
        plans,
        diagnostics: without_repeats(diagnostics),
        sources,
    }
}

fn merge_sources(into: &mut Sources, from: &Sources) -> HashMap<FileId, FileId> {
    let mut mapping = HashMap::new();
    for (id, file) in from.iter() {
        let existing = match &file.path {
            Some(path) => into.find_path(path),
            None => into
                .iter()
                .find(|(_, other)| other.path.is_none() && other.name == file.name)
                .map(|(id, _)| id),
        };
        let target = existing
            .unwrap_or_else(|| into.add(file.name.clone(), file.path.clone(), file.text.clone()));
        mapping.insert(id, target);
    }
    mapping
}

fn remap_diagnostic(diagnostic: &mut Diagnostic, mapping: &HashMap<FileId, FileId>) {
    let remap = |label: &mut Label| {
        if let Some(file) = mapping.get(&label.span.file) {
            label.span.file = *file;
        }
    };
    if let Some(primary) = &mut diagnostic.primary {
        remap(primary);
    }
    diagnostic.secondary.iter_mut().for_each(remap);
    diagnostic.trace.iter_mut().for_each(remap);
}

fn run(
    machine: &mut Machine,
    repository: &Repository,
    worker: usize,
    workers: usize,
    diagnostics: &mut Vec<Diagnostic>,
    per_node: &mut BTreeMap<String, Vec<Diagnostic>>,
) -> EvalResult<BTreeMap<String, Plan>> {
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

    // this worker's share: a contiguous run of nodes in name order
    let count = inventory.nodes.len();
    let first = count * worker / workers;
    let last = count * (worker + 1) / workers;
    let mut defaults = DefaultsCache::default();
    let mut plans = BTreeMap::new();
    for (name, node) in inventory.nodes.iter().skip(first).take(last - first) {
        let diagnostics = per_node.entry(name.clone()).or_default();
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
            // a module that failed to load is reported already; whether it runs
            // here cannot be told
            if resolved.modules.contains(module_name)
                || (known.contains(module_name) && !modules.contains_key(module_name))
            {
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
            match emit::plan(name, &shapes) {
                Ok(plan) => {
                    plans.insert(name.clone(), plan);
                }
                Err(diagnostic) => diagnostics.push(diagnostic),
            }
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
