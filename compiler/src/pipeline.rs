//! The compiler's stages in order: repository -> inventory -> modules -> per node:
//! resolve -> settings -> contribute -> shapes. Each stage is a function of the ones
//! before; this file only wires them together and gathers every diagnostic.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use lang::value::EvalResult;
use lang::{Diagnostic, FileId, Label, Limits, Machine, Severity, Sources, Span, codes};
use plan::Plan;

use crate::contribute;
use crate::emit;
use crate::fs::Overlay;
use crate::inventory::{self, Inventory};
use crate::link::{self, NodeLink, SecretMode};
use crate::lock;
use crate::module::{self, Module};
use crate::node_view::{self, NodeView};
use crate::prelude;
use crate::repository::{self, Origin, Repository};
use crate::resolve;
use crate::retained::Kept;
use crate::sealed_value;
use crate::secrets;
use crate::settings::{self, DefaultsCache};
use crate::shape;
use crate::shapes::{self, ShapeArguments};
use crate::staged::PlanSink;
use crate::stdlib::{self, MeshLoader};
use crate::traces::{self, Gathered, Place};
use crate::types::CheckContext;

/// What compiling a repository produced.
pub struct Compilation {
    pub root: PathBuf,
    /// The plan of every node of the inventory that compiled without errors (none
    /// when the session hands each plan to a [`PlanSink`] instead).
    pub plans: BTreeMap<String, Plan>,
    /// The nodes whose plans went to the session's [`PlanSink`].
    pub handed: BTreeSet<String>,
    /// The secret shapes of those plans (path, sealed text), kept for `secrets`.
    handed_sealed: BTreeMap<String, SealedTexts>,
    pub diagnostics: Vec<Diagnostic>,
    pub sources: Sources,
    /// Secrets this compilation made.
    pub made: secrets::Made,
    /// Every artifact directory the fleet declares: repository-relative -> absolute.
    pub artifact_directories: BTreeMap<String, PathBuf>,
    /// Each compiled node's sealing key (recorded in the manifest, so a diff can say
    /// "resealed to a new key").
    pub keys: BTreeMap<String, String>,
    /// What each compiled node's secret shapes hold, by path: a need or a grant's
    /// material, and the value's id (recorded in the manifest, so a diff can tell a
    /// reseal of the same value from a new value).
    pub secrets: sealed_value::NodeValues,
    /// What `builtins.trace` and `builtins.warn` said, in the order and with the
    /// repeats removed as `traces` describes: the same for any number of workers.
    pub traces: Vec<lang::Traced>,
}

impl Compilation {
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// How a compilation treats the sealed store.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    pub secrets: SecretMode,
    /// Evaluation workers; None is one per core (`meshc --workers`, `MESH_WORKERS`).
    pub workers: Option<usize>,
}

impl Options {
    /// What `meshc check` and the tests use: nothing is made or written.
    pub fn inspect() -> Options {
        Options {
            secrets: SecretMode::Inspect,
            workers: None,
        }
    }
}

/// What an editor adds to a compilation (`meshc lsp`): unsaved buffers read in place
/// of the files on disk, an evaluation budget so that a file whose evaluation does
/// not terminate still ends, and a flag that abandons a compilation a newer edit made
/// stale (what it returns then is incomplete and is thrown away).
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub overlay: Overlay,
    pub limits: Limits,
    pub cancelled: Option<Arc<AtomicBool>>,
    /// Syntax trees kept from earlier compilations (see [`lang::ParseCache`]).
    pub parses: Option<Arc<lang::ParseCache>>,
    /// Where each node's plan goes as soon as it is made (`meshc build`), so that
    /// no plan is kept to the end; None keeps them in [`Compilation::plans`].
    pub sink: Option<Arc<dyn PlanSink>>,
    /// Frames made between two reclaim passes ([`lang::eval::RECLAIM_BATCH`] if
    /// None; see [`lang::Machine::reclaim`]).
    pub reclaim_batch: Option<usize>,
}

impl Session {
    fn is_cancelled(&self) -> bool {
        self.cancelled
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}

/// Compiles the repository at `root` without making secrets (`meshc check`).
pub fn compile(root: &Path) -> Compilation {
    compile_with(root, Options::inspect())
}

/// Compiles the repository at `root`. Nodes are shared out between workers (one per
/// core), each with its own evaluator, each evaluating the module files once and
/// then its share of the nodes. Between the two halves of the per-node work the
/// workers meet once: linking consumers to providers needs every node's
/// declarations. Results are merged in node order, so the output does not depend on
/// how many workers there were.
pub fn compile_with(root: &Path, options: Options) -> Compilation {
    compile_session(root, options, &Session::default())
}

/// [`compile_with`] as an editor asks for it (see [`Session`]).
pub fn compile_session(root: &Path, options: Options, session: &Session) -> Compilation {
    compile_inspecting(root, options, session, None).0
}

/// Compiles the repository at `root` as `meshc check` does and returns, beside the
/// compilation, the view of `node` (`meshc show`): None when the inventory has no
/// such node (the compilation's diagnostics then say so, with E120).
pub fn inspect_node(root: &Path, node: &str) -> (Compilation, Option<NodeView>) {
    compile_inspecting(root, Options::inspect(), &Session::default(), Some(node))
}

fn compile_inspecting(
    root: &Path,
    options: Options,
    session: &Session,
    inspected: Option<&str>,
) -> (Compilation, Option<NodeView>) {
    let repository = match repository::load(root) {
        Ok(repository) => repository,
        Err(diagnostic) => {
            let compilation = Compilation {
                root: root.to_path_buf(),
                plans: BTreeMap::new(),
                handed: BTreeSet::new(),
                handed_sealed: BTreeMap::new(),
                diagnostics: vec![*diagnostic],
                sources: Sources::new(),
                made: secrets::Made::default(),
                artifact_directories: BTreeMap::new(),
                keys: BTreeMap::new(),
                secrets: BTreeMap::new(),
                traces: Vec::new(),
            };
            return (compilation, None);
        }
    };
    let repository = &repository;
    let workers = options
        .workers
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|count| count.get())
                .unwrap_or(1)
        })
        .clamp(1, 8);
    let store = secrets::Store::new(&repository.root, options.secrets != SecretMode::Make);
    let (to_coordinator, from_workers) = mpsc::channel::<(usize, PhaseA)>();
    let mut to_workers = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..workers {
        let (sender, receiver) = mpsc::channel::<BTreeMap<String, NodeLink>>();
        to_workers.push(sender);
        receivers.push(receiver);
    }
    let mut coordinator_diagnostics = Vec::new();
    let mut artifact_directories = BTreeMap::new();
    let mut keys = BTreeMap::new();
    let mut fleet: Option<Vec<link::Declarations>> = None;
    let results: Vec<WorkerResult> = std::thread::scope(|scope| {
        let handles: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(index, receiver)| {
                let sender = to_coordinator.clone();
                std::thread::Builder::new()
                    .name(format!("mesh-eval-{index}"))
                    .stack_size(lang::eval::EVAL_STACK_SIZE)
                    .spawn_scoped(scope, move || {
                        work(
                            repository, session, index, workers, sender, receiver, inspected,
                        )
                    })
            })
            .collect();
        drop(to_coordinator);
        // the link: every worker's declarations, then each worker its nodes' links
        let mut phases: Vec<Option<PhaseA>> = (0..workers).map(|_| None).collect();
        for _ in 0..workers {
            match from_workers.recv() {
                Ok((index, phase)) => {
                    if let Some(slot) = phases.get_mut(index) {
                        *slot = Some(phase);
                    }
                }
                Err(_) => break,
            }
        }
        let phases: Vec<PhaseA> = phases.into_iter().map(Option::unwrap_or_default).collect();
        let registry = phases.iter().find_map(|p| p.registry.clone());
        let declarations: Vec<link::Declarations> = phases
            .iter()
            .flat_map(|p| p.declarations.iter().cloned())
            .collect();
        let lock = match lock::read(&repository.root) {
            Ok(lock) => lock,
            Err(diagnostic) => {
                coordinator_diagnostics.push(diagnostic);
                lock::Lock::default()
            }
        };
        for declaration in &declarations {
            keys.insert(declaration.node.clone(), declaration.key.clone());
            for artifact in &declaration.artifacts {
                artifact_directories.insert(artifact.directory.clone(), artifact.absolute.clone());
            }
        }
        if inspected.is_some() {
            fleet = Some(declarations.clone());
        }
        let mut links = link::link(
            &declarations,
            &store,
            options.secrets,
            &lock,
            registry.as_deref(),
        );
        for (index, (sender, phase)) in to_workers.iter().zip(&phases).enumerate() {
            let share: BTreeMap<String, NodeLink> = phase
                .declarations
                .iter()
                .filter_map(|d| links.remove(&d.node).map(|link| (d.node.clone(), link)))
                .collect();
            if sender.send(share).is_err() {
                coordinator_diagnostics.push(
                    Diagnostic::error(
                        codes::INTERNAL,
                        format!("evaluation worker {index} stopped before linking"),
                    )
                    .with_help("this is a bug in meshc; please report it"),
                );
            }
        }
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
    let mut view = results.iter().find_map(|result| result.view.clone());
    let mut compilation = merge(repository, results);
    if let Some(view) = &mut view {
        if let Some(fleet) = &fleet {
            node_view::links(view, fleet);
        }
        if let Some(plan) = compilation.plans.get(&view.node) {
            node_view::shapes(view, plan);
        }
    }
    compilation
        .diagnostics
        .splice(0..0, coordinator_diagnostics);
    compilation.made = store.made();
    compilation.artifact_directories = artifact_directories;
    compilation.keys = keys
        .into_iter()
        .filter(|(node, _)| {
            compilation.plans.contains_key(node) || compilation.handed.contains(node)
        })
        .collect();
    let handed_sealed = std::mem::take(&mut compilation.handed_sealed);
    let sealed = compilation
        .plans
        .iter()
        .map(|(node, plan)| (node.clone(), sealed_texts(plan)))
        .chain(handed_sealed);
    compilation.secrets = sealed_values(sealed, &store);
    (compilation, view)
}

/// A node's secret shapes as (path, sealed text): what [`sealed_values`] needs of a
/// plan, kept when the plan itself was handed to the sink and dropped.
type SealedTexts = Vec<(String, String)>;

fn sealed_texts(plan: &Plan) -> SealedTexts {
    plan.shapes()
        .iter()
        .filter_map(|shape| match shape.resource() {
            plan::Resource::Secret(secret) => Some((secret.path.clone(), secret.sealed.clone())),
            _ => None,
        })
        .collect()
}

/// Each plan's secret shapes with what the store says their sealed values are. A
/// value the store did not give (none can be, but a lookup is no proof) is of
/// unknown identity.
fn sealed_values(
    nodes: impl Iterator<Item = (String, SealedTexts)>,
    store: &secrets::Store,
) -> sealed_value::NodeValues {
    nodes
        .map(|(node, secrets)| {
            let values = secrets
                .into_iter()
                .map(|(path, sealed)| {
                    let value = if sealed == link::NOT_YET_MADE {
                        sealed_value::SealedValue {
                            of: None,
                            identity: sealed_value::Identity::NotYetMade,
                        }
                    } else {
                        store
                            .value_of(&sealed)
                            .unwrap_or(sealed_value::SealedValue {
                                of: None,
                                identity: sealed_value::Identity::Unknown,
                            })
                    };
                    (path, value)
                })
                .collect();
            (node, values)
        })
        .collect()
}

/// What a worker sends the coordinator after the first half of its work.
#[derive(Default)]
struct PhaseA {
    registry: Option<String>,
    declarations: Vec<link::Declarations>,
}

struct WorkerResult {
    plans: BTreeMap<String, Plan>,
    /// Nodes whose plans went to the sink, with their secret shapes.
    handed: Vec<(String, SealedTexts)>,
    /// Diagnostics about the whole repository (only worker 0 keeps them).
    global: Vec<Diagnostic>,
    /// Diagnostics per node.
    per_node: BTreeMap<String, Vec<Diagnostic>>,
    sources: Sources,
    /// What `builtins.trace` and `builtins.warn` said in this worker.
    traces: Gathered,
    /// The inspected node's view, from the worker that compiled it.
    view: Option<NodeView>,
}

impl WorkerResult {
    fn failed(error: std::io::Error) -> WorkerResult {
        WorkerResult {
            plans: BTreeMap::new(),
            handed: Vec::new(),
            global: vec![
                Diagnostic::error(
                    codes::INTERNAL,
                    format!("cannot start an evaluation worker: {error}"),
                )
                .with_help("the machine is out of threads or memory; try again"),
            ],
            per_node: BTreeMap::new(),
            sources: Sources::new(),
            traces: Gathered::default(),
            view: None,
        }
    }
}

fn work(
    repository: &Repository,
    session: &Session,
    index: usize,
    workers: usize,
    to_coordinator: mpsc::Sender<(usize, PhaseA)>,
    from_coordinator: mpsc::Receiver<BTreeMap<String, NodeLink>>,
    inspected: Option<&str>,
) -> WorkerResult {
    let loader = Rc::new(MeshLoader::with_overlay(
        repository.root.clone(),
        session.overlay.clone(),
    ));
    let mut machine = Machine::new(
        loader,
        vec![repository.root.clone(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        session.limits,
    );
    if let Some(parses) = &session.parses {
        machine = machine.with_parse_cache(parses.clone());
    }
    if let Some(cancelled) = &session.cancelled {
        machine = machine.with_cancel_flag(cancelled.clone());
    }
    let mut global = Vec::new();
    let mut per_node = BTreeMap::new();
    let mut barrier = Barrier {
        index,
        to_coordinator: Some(to_coordinator),
        from_coordinator,
    };
    let mut view = Inspected {
        node: inspected,
        view: None,
    };
    let mut gathered = Gathered::default();
    let mut handed = Vec::new();
    let plans = match run(
        &mut machine,
        repository,
        session,
        (index, workers),
        &mut barrier,
        &mut global,
        &mut per_node,
        &mut gathered,
        &mut handed,
        &mut view,
    ) {
        Ok(plans) => plans,
        Err(error) => {
            global.push(*error);
            BTreeMap::new()
        }
    };
    // a worker that stopped early still takes part in the link
    barrier.meet(PhaseA::default());
    if index != 0 {
        // every worker sees the same repository: one report is enough
        global.clear();
    }
    gathered.finish(&mut machine);
    let sources = std::mem::take(&mut machine.sources);
    drop(machine);
    WorkerResult {
        plans,
        handed,
        global,
        per_node,
        sources,
        traces: gathered,
        view: view.view,
    }
}

/// The node `meshc show` asks for, and its view once made.
struct Inspected<'a> {
    node: Option<&'a str>,
    view: Option<NodeView>,
}

/// Merges the workers' results: sources by path, diagnostics remapped to the merged
/// sources, global ones first, then node by node in name order, repeats removed.
fn merge(repository: &Repository, results: Vec<WorkerResult>) -> Compilation {
    let mut sources = Sources::new();
    let mut plans = BTreeMap::new();
    let mut handed = BTreeSet::new();
    let mut handed_sealed = BTreeMap::new();
    let mut global = Vec::new();
    let mut per_node: BTreeMap<String, Vec<Diagnostic>> = BTreeMap::new();
    let mut traced = Vec::new();
    for result in results {
        for (node, sealed) in result.handed {
            handed.insert(node.clone());
            handed_sealed.insert(node, sealed);
        }
        let mapping = merge_sources(&mut sources, &result.sources);
        traced.extend(result.traces.remapped(&mapping));
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
    // by stage (E1xx resolution before E3xx links before E4xx shapes), then node by
    // node: a misspelt module on a provider (E101) comes before the consumer's E300
    // it causes, whichever node sorts first
    let mut by_node: Vec<Diagnostic> = per_node.into_values().flatten().collect();
    by_node.sort_by_key(|diagnostic| diagnostic.code.as_str().as_bytes().get(1).copied());
    diagnostics.extend(by_node);
    Compilation {
        root: repository.root.clone(),
        plans,
        handed,
        handed_sealed,
        diagnostics: without_repeats(diagnostics),
        sources,
        made: secrets::Made::default(),
        artifact_directories: BTreeMap::new(),
        keys: BTreeMap::new(),
        secrets: BTreeMap::new(),
        traces: traces::merge(traced),
    }
}

fn merge_sources(into: &mut Sources, from: &Sources) -> HashMap<FileId, FileId> {
    // the first file of each path, as `Sources::find_path` finds it, without
    // scanning every file for every file
    let mut by_path: HashMap<PathBuf, FileId> = HashMap::new();
    for (id, file) in into.iter() {
        if let Some(path) = &file.path {
            by_path.entry(path.clone()).or_insert(id);
        }
    }
    let mut mapping = HashMap::new();
    for (id, file) in from.iter() {
        let existing = match &file.path {
            Some(path) => by_path.get(path).copied(),
            None => into
                .iter()
                .find(|(_, other)| other.path.is_none() && other.name == file.name)
                .map(|(id, _)| id),
        };
        let target = existing.unwrap_or_else(|| {
            let added = into.add(file.name.clone(), file.path.clone(), file.text.clone());
            if let Some(path) = &file.path {
                by_path.insert(path.clone(), added);
            }
            added
        });
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

/// The worker's side of the link: it sends its declarations once and waits for the
/// links of its nodes.
struct Barrier {
    index: usize,
    to_coordinator: Option<mpsc::Sender<(usize, PhaseA)>>,
    from_coordinator: mpsc::Receiver<BTreeMap<String, NodeLink>>,
}

impl Barrier {
    /// Sends `phase` (the first time only) and returns the links (empty if the
    /// coordinator has none for this worker).
    fn meet(&mut self, phase: PhaseA) -> BTreeMap<String, NodeLink> {
        match self.to_coordinator.take() {
            Some(sender) => {
                let _ = sender.send((self.index, phase));
                drop(sender);
                self.from_coordinator.recv().unwrap_or_default()
            }
            None => BTreeMap::new(),
        }
    }
}

/// A node between the two halves of its compilation.
struct Pending<'a> {
    name: &'a String,
    node: &'a inventory::Node,
    resolved: resolve::Resolved,
    collected: BTreeMap<String, lang::Value>,
}

#[allow(clippy::too_many_arguments)]
fn run(
    machine: &mut Machine,
    repository: &Repository,
    session: &Session,
    (worker, workers): (usize, usize),
    barrier: &mut Barrier,
    diagnostics: &mut Vec<Diagnostic>,
    per_node: &mut BTreeMap<String, Vec<Diagnostic>>,
    traced: &mut Gathered,
    handed: &mut Vec<(String, SealedTexts)>,
    inspected: &mut Inspected<'_>,
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
    if let Some(wanted) = inspected.node
        && !inventory.nodes.contains_key(wanted)
    {
        diagnostics.push(node_view::unknown_node(wanted, &node_names));
    }
    let context = CheckContext {
        node_names: &node_names,
    };

    let (prelude, made) = prelude::prelude(&repository.root, machine);
    let known: Vec<String> = repository.modules.keys().cloned().collect();
    let mut modules: BTreeMap<String, Module> = BTreeMap::new();
    for (name, location) in &repository.modules {
        if session.is_cancelled() {
            return Ok(BTreeMap::new());
        }
        if let Some(module) = recover(
            module::load(machine, name, location, &prelude, &context, diagnostics),
            diagnostics,
        )
        .flatten()
        {
            modules.insert(name.clone(), module);
        }
    }
    for name in &repository.refused {
        diagnostics.push(
            Diagnostic::error(
                codes::MODULE_NAME_NOT_IDENTIFIER,
                format!(
                    "the module directory `modules/{}` is not an identifier: {}; it is left out",
                    plan::display::escaped(name),
                    crate::names::why_not_identifier(name)
                ),
            )
            .with_help("rename the directory: module names use ASCII letters, digits, `_` and `-`, starting with a letter or `_`, because they become parts of paths under `secrets/`"),
        );
    }
    for name in &repository.shadowed {
        if let Some(module) = modules.get(name)
            && module.location.origin == Origin::Repository
        {
            {
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
    let mut pending: Vec<Pending<'_>> = Vec::new();
    let mut declarations = Vec::new();
    // from here on, what a node leaves behind is reclaimed between nodes (not for
    // `meshc show`, whose view keeps values of its node)
    if inspected.node.is_none() {
        machine.reclaim_start(session.reclaim_batch.unwrap_or(lang::eval::RECLAIM_BATCH));
    }
    for (name, node) in inventory.nodes.iter().skip(first).take(last - first) {
        if machine.reclaim_due() {
            let kept = Kept {
                inventory_value: &inventory_value,
                inventory: &inventory,
                prelude: &prelude,
                modules: &modules,
                defaults: &defaults,
            };
            let roots = kept.roots(pending.iter().map(|p| (&p.resolved, &p.collected)));
            machine.reclaim(&roots);
        }
        if session.is_cancelled() {
            break;
        }
        traced.enter(machine, Place::Declarations(name.clone()));
        let diagnostics = per_node.entry(name.clone()).or_default();
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
        let Some(declared) = recover(
            link::declarations(
                machine,
                node,
                &resolved,
                &modules,
                &repository.root,
                diagnostics,
            ),
            diagnostics,
        ) else {
            continue;
        };
        if inspected.node == Some(name.as_str()) {
            let mut view = node_view::node_part(
                machine,
                node,
                &resolved,
                &collected,
                &modules,
                &repository.root,
            );
            view.needs = node_view::needs(&declared);
            inspected.view = Some(view);
        }
        declarations.push(declared);
        pending.push(Pending {
            name,
            node,
            resolved,
            collected,
        });
    }

    let mut links = barrier.meet(PhaseA {
        registry: inventory.registry.clone(),
        declarations,
    });

    let mut plans = BTreeMap::new();
    let mut pending = pending.into_iter();
    while let Some(Pending {
        name,
        node,
        resolved,
        collected,
    }) = pending.next()
    {
        if session.is_cancelled() {
            break;
        }
        traced.enter(machine, Place::Shapes(name.clone()));
        if machine.reclaim_due() {
            let kept = Kept {
                inventory_value: &inventory_value,
                inventory: &inventory,
                prelude: &prelude,
                modules: &modules,
                defaults: &defaults,
            };
            let unfinished = pending.as_slice().iter();
            let mut roots = kept.roots(unfinished.map(|p| (&p.resolved, &p.collected)));
            // the node about to be compiled
            roots.extend(resolved.settings.values().cloned());
            roots.extend(collected.values().cloned());
            machine.reclaim(&roots);
        }
        let diagnostics = per_node.entry(name.clone()).or_default();
        let link = links.remove(name).unwrap_or_default();
        let errors_before = error_count(diagnostics);
        diagnostics.extend(link.diagnostics.iter().cloned());
        if error_count(diagnostics) > errors_before {
            continue;
        }
        let extra = |module: &str| arguments(&link, module);
        let mut opaque = |_: &mut Machine,
                          value: &lang::Value,
                          span: Span|
         -> lang::value::EvalResult<serde_json::Value> {
            match value {
                lang::Value::Opaque(handle) => {
                    match handle.as_any().downcast_ref::<link::SecretHandle>() {
                        Some(secret) => Ok(serde_json::Value::String(secret.sealed.clone())),
                        None => Err(lang::eval::opaque_error(span)),
                    }
                }
                _ => Err(lang::eval::opaque_error(span)),
            }
        };
        let placed: Vec<shapes::ShapeDecl> = link
            .placed
            .iter()
            .map(|placed| shapes::ShapeDecl {
                resource: placed.resource.clone(),
                module: placed.module.clone(),
                source: placed.source.clone(),
                span: placed.span,
                field_spans: BTreeMap::new(),
            })
            .collect();
        let Some(shapes) = recover(
            shapes::node_shapes(
                machine,
                node,
                &resolved,
                &modules,
                &collected,
                &extra,
                placed,
                &made,
                &mut opaque,
                diagnostics,
            ),
            diagnostics,
        ) else {
            continue;
        };
        if error_count(diagnostics) == errors_before {
            match emit::plan(name, shapes) {
                Ok(plan) => match &session.sink {
                    // written now and dropped: no plan is kept to the end
                    Some(sink) => {
                        let sealed = sealed_texts(&plan);
                        match sink.accept(name, plan) {
                            Ok(()) => handed.push((name.clone(), sealed)),
                            Err(diagnostic) => diagnostics.push(diagnostic),
                        }
                    }
                    None => {
                        plans.insert(name.clone(), plan);
                    }
                },
                Err(diagnostic) => diagnostics.push(diagnostic),
            }
        }
    }
    Ok(plans)
}

fn attr(name: &'static str, value: lang::Value) -> lang::value::Attr {
    lang::value::Attr {
        name: lang::value::name(name),
        value,
        span: None,
    }
}

fn set(entries: Vec<lang::value::Attr>) -> lang::Value {
    lang::Value::Attrs(Rc::new(lang::value::Attrs::from_unsorted(entries)))
}

/// The link-dependent arguments of one module's `shapes`.
fn arguments(link: &NodeLink, module: &str) -> ShapeArguments {
    let named = |name: &str, value: lang::Value| lang::value::Attr {
        name: Rc::from(name.as_bytes()),
        value,
        span: None,
    };
    let secret = |sealed: &String| {
        lang::Value::Opaque(Rc::new(link::SecretHandle {
            sealed: sealed.clone(),
        }))
    };
    let secrets = link
        .secrets
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), sealed)| named(name, secret(sealed)))
        .collect();
    let credentials = link
        .credentials
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), sealed)| named(name, secret(sealed)))
        .collect();
    let logins = link
        .logins
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), login)| {
            let address = match &login.address {
                Some(address) => lang::Value::string_from(address),
                None => lang::Value::Null,
            };
            named(
                name,
                set(vec![
                    attr("address", address),
                    attr("facts", link::facts_value(&login.facts)),
                    attr("login", lang::Value::string_from(&login.login)),
                    attr(
                        "path",
                        login
                            .path
                            .as_deref()
                            .map_or(lang::Value::Null, lang::Value::string_from),
                    ),
                    attr("provider", lang::Value::string_from(&login.provider)),
                ]),
            )
        })
        .collect();
    let grants = link
        .grants
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, service), grants)| {
            let list: Vec<lang::Value> = grants
                .iter()
                .map(|grant| {
                    set(vec![
                        attr("consumer", lang::Value::string_from(&grant.consumer)),
                        attr("credential", lang::Value::string_from(&grant.credential)),
                        attr("form", lang::Value::string_from(grant.form.name())),
                        attr("login", lang::Value::string_from(&grant.login)),
                    ])
                })
                .collect();
            named(service, lang::Value::List(Rc::from(list)))
        })
        .collect();
    let images = link
        .images
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), image)| named(name, lang::Value::string_from(image)))
        .collect();
    let artifacts = link
        .artifacts
        .iter()
        .filter(|((owner, _), _)| owner == module)
        .map(|((_, name), (file, digest))| {
            named(
                name,
                set(vec![
                    attr("_type", lang::Value::string_from(shape::ARTIFACT_MARKER)),
                    attr("artifact", lang::Value::string_from(file)),
                    attr("artifact_digest", lang::Value::string_from(digest)),
                ]),
            )
        })
        .collect();
    ShapeArguments {
        credentials: set(credentials),
        logins: set(logins),
        grants: set(grants),
        secrets: set(secrets),
        images: set(images),
        artifacts: set(artifacts),
    }
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
/// for every node that runs it; a budget that ran out once, not once for every
/// node evaluated after.
fn without_repeats(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = HashSet::new();
    let mut exhausted = HashSet::new();
    diagnostics
        .into_iter()
        .filter(|d| {
            let exhaustion = d.code == codes::BUDGET_EXCEEDED || d.code == codes::MEMORY_EXCEEDED;
            if exhaustion && !exhausted.insert(d.code) {
                return false;
            }
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
