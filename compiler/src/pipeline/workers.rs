//! One evaluation worker: its own evaluator, the module files evaluated once, then
//! its share of the nodes in two halves (declarations, then shapes), meeting the
//! coordinator once in between to receive its nodes' links. It shares no value with
//! another worker; what it returns is merged by `merge`. In a cached build a node
//! whose first half's inputs are unchanged brings its declarations from the cache
//! and is evaluated (both halves, after the link) only if its plan is not reused;
//! the module files are then loaded as the nodes evaluated need them (those that
//! changed since the record before any node).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::{Arc, mpsc};

use lang::value::EvalResult;
use lang::{Diagnostic, Machine, Sources, Span, error_count};
use plan::Plan;

use super::arguments::arguments;
use super::{SealedTexts, Session, sealed_texts};
use crate::cache::{self, Doing, ModulesToLoad};
use crate::contribute;
use crate::emit;
use crate::inventory::{self, Inventory};
use crate::link::{self, NodeLink};
use crate::module::{self, Module, ModuleSet};
use crate::node_view::{self, NodeView};
use crate::prelude;
use crate::repository::{ModuleLocation, Repository};
use crate::resolve;
use crate::retained::Kept;
use crate::settings::{self, DefaultsCache};
use crate::shapes;
use crate::staged::KeptPlan;
use crate::stdlib::{self, MeshLoader};
use crate::traces::{Gathered, Place};
use crate::types::CheckContext;

/// What a worker sends the coordinator after the first half of its work.
#[derive(Default)]
pub(super) struct PhaseA {
    pub(super) registry: Option<String>,
    pub(super) declarations: Vec<Arc<link::Declarations>>,
    /// The worker made its first halves to the end (false: it stopped early, and
    /// its nodes' declarations are missing).
    pub(super) complete: bool,
    /// The nodes whose first halves failed, or that were declared without a module
    /// that failed (reported): what others consume from them by name is not
    /// linked, and not refused either.
    pub(super) failed: Vec<String>,
}

pub(super) struct WorkerResult {
    pub(super) plans: BTreeMap<String, Plan>,
    /// Nodes whose plans went to the sink, with their secret shapes.
    pub(super) handed: Vec<(String, SealedTexts)>,
    /// Diagnostics about the whole repository (only worker 0 keeps them).
    pub(super) global: Vec<Diagnostic>,
    /// Diagnostics per node.
    pub(super) per_node: BTreeMap<String, Vec<Diagnostic>>,
    /// Nodes not compiled because a node they consume from failed.
    pub(super) skipped: Vec<String>,
    pub(super) sources: Sources,
    /// What `builtins.trace` and `builtins.warn` said in this worker.
    pub(super) traces: Gathered,
    /// The inspected node's view, from the worker that compiled it.
    pub(super) view: Option<NodeView>,
}

impl WorkerResult {
    pub(super) fn failed(error: std::io::Error) -> WorkerResult {
        WorkerResult {
            plans: BTreeMap::new(),
            handed: Vec::new(),
            global: vec![Diagnostic::no_thread(format!(
                "cannot start an evaluation worker: {error}"
            ))],
            per_node: BTreeMap::new(),
            skipped: Vec::new(),
            sources: Sources::new(),
            traces: Gathered::default(),
            view: None,
        }
    }
}

pub(super) fn work(
    repository: &Repository,
    session: &Session,
    index: usize,
    workers: usize,
    to_coordinator: mpsc::Sender<(usize, PhaseA)>,
    from_coordinator: mpsc::Receiver<Option<BTreeMap<String, NodeLink>>>,
    inspected: Option<&str>,
) -> WorkerResult {
    let loader: Rc<dyn lang::Loader> = Rc::new(
        MeshLoader::with_overlay(repository.root.clone(), session.overlay.clone())
            .refusing_pipes(session.editor),
    );
    let (loader, doing) = match &session.cache {
        Some(cache) => {
            let (loader, doing) = cache::recording_loader(loader, cache);
            (loader, Some(doing))
        }
        None => (loader, None),
    };
    let charge = Charge { doing };
    // positions (`unsafeGetAttrPos`, `__curPos`) name files as plans do: no
    // absolute path reaches a plan
    let mut machine = Machine::new(
        loader,
        vec![repository.root.clone(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        session.limits,
    )
    .with_position_names(vec![
        (format!("{}/", repository.root.display()), String::new()),
        (
            stdlib::VIRTUAL_ROOT.to_string(),
            stdlib::DISPLAY_PREFIX.to_string(),
        ),
    ]);
    if let Some(parses) = &session.parses {
        machine = machine.with_parse_cache(parses.clone());
    }
    if let Some(cancelled) = &session.cancelled {
        machine = machine.with_cancel_flag(cancelled.clone());
    }
    let mut barrier = Barrier {
        index,
        to_coordinator: Some(to_coordinator),
        from_coordinator,
    };
    let mut report = Report {
        global: Vec::new(),
        per_node: BTreeMap::new(),
        skipped: Vec::new(),
        traced: Gathered::default(),
        handed: Handed::default(),
        inspected: Inspected {
            node: inspected,
            view: None,
        },
    };
    let said_again = std::cell::Cell::new(0);
    let plans = match run(
        &mut machine,
        repository,
        session,
        (index, workers),
        &mut barrier,
        &mut report,
        (&charge, &said_again),
    ) {
        Ok(plans) => plans,
        Err(error) => {
            report.global.push(*error);
            BTreeMap::new()
        }
    };
    let Report {
        mut global,
        mut per_node,
        skipped,
        traced: mut gathered,
        mut handed,
        inspected: view,
    } = report;
    // a worker that stopped early still takes part in the link
    barrier.meet(PhaseA::default());
    if let Some(sink) = &session.sink
        && let Some(first) = handed.kept.first().map(|plan| plan.node.clone())
        && let Err(diagnostic) = sink.keep_all(std::mem::take(&mut handed.kept))
    {
        per_node.entry(first).or_default().push(diagnostic);
    }
    if let Some(cache) = &session.cache {
        cache.finish(std::mem::take(&mut handed.finishing));
        // what a memory may take back next time: the declarations of the nodes
        // that said nothing, if nothing was said beyond nodes and module files
        if global.len() > said_again.get() {
            cache.said_beyond_nodes();
        }
        for (node, diagnostics) in &per_node {
            if !diagnostics.is_empty() {
                cache.said_something(node);
            }
        }
    }
    if index != 0 {
        // every worker sees the same repository: one report is enough
        global.clear();
    }
    gathered.finish(&mut machine);
    let sources = std::mem::take(&mut machine.sources);
    drop(machine);
    WorkerResult {
        plans,
        handed: handed.sealed,
        global,
        per_node,
        skipped,
        sources,
        traces: gathered,
        view: view.view,
    }
}

/// Where a cached build charges what the worker reads (nothing when not cached).
struct Charge {
    doing: Option<Rc<std::cell::RefCell<Doing>>>,
}

impl Charge {
    fn to(&self, doing: Doing) {
        if let Some(cell) = &self.doing {
            *cell.borrow_mut() = doing;
        }
    }
}

/// The node `meshc show` asks for, and its view once made.
struct Inspected<'a> {
    node: Option<&'a str>,
    view: Option<NodeView>,
}

/// The worker's side of the link: it sends its declarations once and waits for the
/// links of its nodes.
struct Barrier {
    index: usize,
    to_coordinator: Option<mpsc::Sender<(usize, PhaseA)>>,
    from_coordinator: mpsc::Receiver<Option<BTreeMap<String, NodeLink>>>,
}

impl Barrier {
    /// Sends `phase` (the first time only) and returns the links (empty if the
    /// coordinator has none for this worker), or None when the fleet was not
    /// linked (a worker did not deliver its nodes' declarations): then there are
    /// no second halves to make.
    fn meet(&mut self, phase: PhaseA) -> Option<BTreeMap<String, NodeLink>> {
        match self.to_coordinator.take() {
            Some(sender) => {
                let _ = sender.send((self.index, phase));
                drop(sender);
                self.from_coordinator.recv().ok().flatten()
            }
            None => Some(BTreeMap::new()),
        }
    }
}

/// A node between the two halves of its compilation.
struct Pending<'a> {
    name: &'a String,
    node: NodeOf<'a>,
    resolved: resolve::Resolved,
    collected: BTreeMap<String, lang::Value>,
    /// What it gave the link (recorded in the build cache).
    declared: Arc<link::Declarations>,
    /// Its link was made from the declarations the cache had, not from these.
    declared_from_cache: bool,
}

/// The inventory's node, or the one read for it when the inventory left its entry
/// unread.
enum NodeOf<'a> {
    Inventory(&'a inventory::Node),
    Read(Box<inventory::Node>),
}

impl std::ops::Deref for NodeOf<'_> {
    type Target = inventory::Node;

    fn deref(&self) -> &inventory::Node {
        match self {
            NodeOf::Inventory(node) => node,
            NodeOf::Read(node) => node,
        }
    }
}

/// A node of the worker's share after the first half: evaluated, or taken from the
/// build cache unevaluated (with the modules it ran), to be evaluated only if its
/// plan cannot be reused either.
enum Step<'a> {
    Evaluated(Pending<'a>),
    Cached {
        name: &'a String,
        /// None when the inventory left its entry unread.
        node: Option<&'a inventory::Node>,
        declared: Arc<link::Declarations>,
        modules: cache::RecordedModules,
    },
}

impl Step<'_> {
    fn name(&self) -> &String {
        match self {
            Step::Evaluated(pending) => pending.name,
            Step::Cached { name, .. } => name,
        }
    }
}

/// The values the evaluated nodes among `steps` keep for their second half.
fn kept_values<'s>(
    steps: impl Iterator<Item = &'s Step<'s>>,
) -> impl Iterator<Item = (&'s resolve::Resolved, &'s BTreeMap<String, lang::Value>)> {
    steps.filter_map(|step| match step {
        Step::Evaluated(pending) => Some((&pending.resolved, &pending.collected)),
        Step::Cached { .. } => None,
    })
}

/// What a worker has loaded before its nodes, for their evaluation.
struct Repo<'r> {
    repository: &'r Repository,
    session: &'r Session,
    prelude: lang::Value,
    context: CheckContext<'r>,
    charge: &'r Charge,
    /// Whether what a node leaves behind is reclaimed between nodes (not for
    /// `meshc show`, whose view keeps values of its node).
    reclaims: bool,
    /// How many of the worker's repository diagnostics were said by the module
    /// files loaded before the nodes and by the layout, which every compilation
    /// says again (the rest are said beyond nodes and module files: a memory
    /// then takes no declaration back).
    said_again: &'r std::cell::Cell<usize>,
}

/// The worker's module files and the ones it loads before any node: all of them,
/// or (a build whose cache allows it) those that changed since the record, the
/// others when a node asks for them.
struct WorkerModules {
    set: ModuleSet,
    /// Nodes declared without a module they asked for, which failed (reported):
    /// they count as failed for the link, so that what they would have provided
    /// is not refused to their consumers as missing.
    met_failed: Vec<String>,
    /// None: all of them.
    first: Option<BTreeSet<String>>,
    started: bool,
}

impl WorkerModules {
    fn new(session: &Session, repository: &Repository) -> WorkerModules {
        let to_load = session
            .cache
            .as_ref()
            .map_or(ModulesToLoad::All, |cache| cache.modules_to_load());
        match to_load {
            ModulesToLoad::All => WorkerModules {
                set: ModuleSet::complete(),
                met_failed: Vec::new(),
                first: None,
                started: false,
            },
            ModulesToLoad::Changed(mut first) => {
                if let Some(cache) = &session.cache {
                    cache.deferred_modules();
                }
                // a module that shadows a standard one is noted by the layout's
                // diagnostics, at its place: loaded first, so the note is said
                first.extend(repository.shadowed.iter().cloned());
                WorkerModules {
                    set: ModuleSet::partial(),
                    met_failed: Vec::new(),
                    first: Some(first),
                    started: false,
                }
            }
        }
    }

    /// Whether the worker loads them before its first node (all, or some changed).
    fn load_before_nodes(&self) -> bool {
        self.first
            .as_ref()
            .is_none_or(|changed| !changed.is_empty())
    }
}

/// Loads the worker's first module files if not yet (false when the compilation
/// was cancelled meanwhile). Reclaiming starts once they are loaded: the frames
/// they make are never emptied (a module loaded later is kept as a root).
fn ensure_modules(
    modules: &mut WorkerModules,
    machine: &mut Machine,
    repo: &Repo<'_>,
    traced: &mut Gathered,
    global: &mut Vec<Diagnostic>,
) -> bool {
    if modules.started {
        return true;
    }
    traced.enter(machine, Place::Repository);
    let before = global.len();
    let loaded = match &modules.first {
        None => load_modules(&mut modules.set, machine, repo, global),
        Some(first) => {
            let loaded = load_named(
                &mut modules.set,
                first.iter().map(String::as_str),
                machine,
                repo,
                global,
            );
            // as a compilation that loads every module says them, after the files'
            module::layout_diagnostics(repo.repository, &modules.set.loaded, global);
            loaded
        }
    };
    if !loaded {
        return false;
    }
    repo.said_again
        .set(repo.said_again.get() + global.len() - before);
    modules.started = true;
    if repo.reclaims {
        machine.reclaim_start(
            repo.session
                .reclaim_batch
                .unwrap_or(lang::eval::RECLAIM_BATCH),
        );
    }
    true
}

/// Loads the named modules a partial set has not tried (false when cancelled).
/// What a file says goes to `diagnostics`.
fn load_named<'n>(
    set: &mut ModuleSet,
    names: impl Iterator<Item = &'n str>,
    machine: &mut Machine,
    repo: &Repo<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> bool {
    for name in names {
        if set.is_complete() || set.tried(name) {
            continue;
        }
        let Some(location) = repo.repository.modules.get(name) else {
            // not a module of the repository: never asked for again
            set.add(name, None);
            continue;
        };
        if repo.session.is_cancelled() {
            return false;
        }
        let module = load_module(machine, repo, name, location, diagnostics);
        set.add(name, module);
    }
    true
}

/// A node's first half with the modules it runs loaded. In a partial set, the
/// modules it ran in the last build and the ones it is assigned are loaded first;
/// one that resolution asks for beyond those is loaded and the node resolved
/// again. None when the compilation was cancelled.
#[allow(clippy::too_many_arguments)]
fn declare_loading<'a>(
    machine: &mut Machine,
    (name, node): (&'a String, NodeOf<'a>),
    modules: &mut WorkerModules,
    repo: &Repo<'_>,
    known: &[String],
    defaults: &mut DefaultsCache,
    inspected: &mut Inspected<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Option<Pending<'a>>> {
    if !modules.set.is_complete() {
        let before = repo
            .session
            .cache
            .as_ref()
            .and_then(|cache| cache.modules_before(name))
            .unwrap_or_default();
        let assigned = node.modules.iter().map(|(module, _)| module.as_str());
        let names = before.iter().map(String::as_str).chain(assigned);
        if !load_named(&mut modules.set, names, machine, repo, diagnostics) {
            return None;
        }
    }
    let said_before = diagnostics.len();
    modules.set.take_met_failed();
    // a module it asked for failed: reported once for all, but this node's
    // outcome depends on that file (a memory evaluates it again), and it counts
    // as failed for the link: without the module it declares less than it would
    // (a service it provides, refused to its consumers as no provider)
    let depends_on_a_failure = |set: &ModuleSet| {
        let met = set.take_met_failed();
        if met && let Some(cache) = &repo.session.cache {
            cache.said_something(name);
        }
        met
    };
    let mut node = Some(node);
    loop {
        let loaded = Loaded {
            modules: &modules.set,
            known,
            context: &repo.context,
        };
        let declared = declare_node(
            machine,
            repo.repository,
            (name, node.take()?),
            &loaded,
            defaults,
            inspected,
            diagnostics,
        );
        let wanted = modules.set.take_wanted();
        match declared {
            Ok(pending) => {
                if depends_on_a_failure(&modules.set) {
                    modules.met_failed.push(name.clone());
                }
                return Some(pending);
            }
            Err(again) if !wanted.is_empty() => {
                // what resolution said without them is said again
                diagnostics.truncate(said_before);
                node = Some(again);
                if !load_named(
                    &mut modules.set,
                    wanted.iter().map(String::as_str),
                    machine,
                    repo,
                    diagnostics,
                ) {
                    return None;
                }
            }
            Err(_) => {
                let _ = depends_on_a_failure(&modules.set);
                return Some(None);
            }
        }
    }
}

/// The worker's share of the nodes (a contiguous run of them in name order): the
/// inventory read and the first module files loaded, every node's first half, the
/// links received from the coordinator, every node's second half. What is said is
/// in `report`, but for an error reading the inventory's value or an entry it left
/// unread, which is returned (and ends the worker's nodes).
fn run(
    machine: &mut Machine,
    repository: &Repository,
    session: &Session,
    (worker, workers): (usize, usize),
    barrier: &mut Barrier,
    report: &mut Report<'_>,
    (charge, said_again): (&Charge, &std::cell::Cell<usize>),
) -> EvalResult<BTreeMap<String, Plan>> {
    // an entry whose declarations will come from the cache read without a
    // diagnostic in the last build and is unchanged: it is read only if its node
    // is evaluated after all
    let cached = |name: &str| {
        session
            .cache
            .as_ref()
            .is_some_and(|cache| cache.has_declarations(name))
    };
    let Some((inventory_value, inventory)) = load_inventory(
        machine,
        repository,
        charge,
        &|name| !cached(name),
        &mut report.global,
    )?
    else {
        return Ok(BTreeMap::new());
    };
    let names = inventory.names();
    let node_names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    if let Some(wanted) = report.inspected.node
        && !node_names.iter().any(|name| name == wanted)
    {
        report
            .global
            .push(node_view::unknown_node(wanted, &node_names));
    }
    let (prelude, made) = prelude::prelude(&repository.root, machine);
    let repo = Repo {
        repository,
        session,
        prelude,
        context: CheckContext {
            node_names: &node_names,
            failed_nodes: &inventory.failed,
        },
        charge,
        reclaims: report.inspected.node.is_none(),
        said_again,
    };
    let known: Vec<String> = repository.modules.keys().cloned().collect();
    // the module files are loaded before any node, unless the build cache allows
    // loading only the changed ones (then none, if none changed) and the others
    // as nodes ask for them
    let mut modules = WorkerModules::new(session, repository);
    if modules.load_before_nodes()
        && !ensure_modules(
            &mut modules,
            machine,
            &repo,
            &mut report.traced,
            &mut report.global,
        )
    {
        return Ok(BTreeMap::new());
    }
    let count = names.len();
    let share = &names[count * worker / workers..count * (worker + 1) / workers];
    let mut work = Work {
        machine,
        repo: &repo,
        inventory_value: &inventory_value,
        inventory: &inventory,
        modules,
        defaults: DefaultsCache::default(),
        known: &known,
        made: &made,
        report,
    };
    let FirstHalves {
        steps,
        declarations,
        mut failed,
    } = work.first_halves(share)?;
    // an entry read with errors is a node that failed, for its consumers too
    failed.extend(inventory.failed.iter().cloned());
    let Some(links) = barrier.meet(PhaseA {
        registry: inventory.registry.clone(),
        declarations,
        complete: true,
        failed,
    }) else {
        return Ok(BTreeMap::new());
    };
    work.second_halves(steps, links)
}

/// A worker's first halves: a step per node to finish, the declarations the link
/// reads, and the nodes that failed (or met a module that did).
struct FirstHalves<'w> {
    steps: Vec<Step<'w>>,
    declarations: Vec<Arc<link::Declarations>>,
    failed: Vec<String>,
}

/// What a worker's diagnostics, traces and plans handed on are gathered in, and the
/// node `meshc show` inspects.
struct Report<'i> {
    /// Diagnostics about the whole repository.
    global: Vec<Diagnostic>,
    per_node: BTreeMap<String, Vec<Diagnostic>>,
    /// Nodes not compiled because a node they consume from failed.
    skipped: Vec<String>,
    traced: Gathered,
    handed: Handed,
    inspected: Inspected<'i>,
}

/// A worker's nodes once the inventory is read: what they are compiled with (the
/// module files are loaded before the first node evaluated, or all before any when
/// the build cache does not defer them), and where what they say goes.
struct Work<'w, 'i> {
    machine: &'w mut Machine,
    repo: &'w Repo<'w>,
    inventory_value: &'w lang::Value,
    inventory: &'w Inventory,
    modules: WorkerModules,
    defaults: DefaultsCache,
    known: &'w [String],
    made: &'w crate::shape::Made,
    report: &'w mut Report<'i>,
}

/// What a node's first half came to.
enum FirstHalf<'a> {
    Declared(Pending<'a>),
    /// It has no declarations: an evaluation error ended it, resolution failed,
    /// or its inventory entry has errors (the diagnostics say which); the next
    /// node goes on.
    Failed,
    /// The compilation was cancelled: the worker stops.
    Cancelled,
}

impl<'w> Work<'w, '_> {
    /// The first half of each node of `share`, in order: its declarations taken
    /// from the build cache when the inputs of its first half are unchanged, else
    /// evaluated. Ends early, with what it has, when the compilation is cancelled.
    fn first_halves(&mut self, share: &[&'w String]) -> EvalResult<FirstHalves<'w>> {
        let session = self.repo.session;
        // one step and one declaration a node, most of them handed on kept
        let mut steps: Vec<Step<'w>> = Vec::with_capacity(share.len());
        let mut declarations = Vec::with_capacity(share.len());
        let mut failed = Vec::new();
        self.report.handed.sealed.reserve(share.len());
        self.report.handed.kept.reserve(share.len());
        for &name in share {
            let node = self.inventory.nodes.get(name);
            self.reclaim_if_due(kept_values(steps.iter()));
            if session.is_cancelled() {
                break;
            }
            if let Some(cache) = &session.cache
                && let Some((declared, recorded)) = cache.declarations(name)
            {
                declarations.push(declared.clone());
                steps.push(Step::Cached {
                    name,
                    node,
                    declared,
                    modules: recorded,
                });
                continue;
            }
            match self.declare(name, node)? {
                FirstHalf::Declared(pending) => {
                    declarations.push(pending.declared.clone());
                    steps.push(Step::Evaluated(pending));
                }
                FirstHalf::Failed => failed.push(name.clone()),
                FirstHalf::Cancelled => break,
            }
        }
        failed.append(&mut self.modules.met_failed);
        Ok(FirstHalves {
            steps,
            declarations,
            failed,
        })
    }

    /// A node's first half, evaluated: its entry read if the inventory left it
    /// unread, the first module files loaded if they are not yet, then resolution,
    /// settings, contributions and declarations (`declare_loading`).
    fn declare(
        &mut self,
        name: &'w String,
        node: Option<&'w inventory::Node>,
    ) -> EvalResult<FirstHalf<'w>> {
        let session = self.repo.session;
        let report = &mut *self.report;
        let Some(node) = node_to_evaluate(
            self.machine,
            self.inventory,
            name,
            node,
            self.repo.charge,
            &mut report.global,
        )?
        else {
            return Ok(FirstHalf::Failed);
        };
        if !ensure_modules(
            &mut self.modules,
            self.machine,
            self.repo,
            &mut report.traced,
            &mut report.global,
        ) {
            return Ok(FirstHalf::Cancelled);
        }
        if let Some(cache) = &session.cache {
            cache.evaluating(name);
        }
        report
            .traced
            .enter(self.machine, Place::Declarations(name.clone()));
        let diagnostics = report.per_node.entry(name.clone()).or_default();
        Ok(
            match declare_loading(
                self.machine,
                (name, node),
                &mut self.modules,
                self.repo,
                self.known,
                &mut self.defaults,
                &mut report.inspected,
                diagnostics,
            ) {
                None => FirstHalf::Cancelled,
                Some(None) => FirstHalf::Failed,
                Some(Some(pending)) => FirstHalf::Declared(pending),
            },
        )
    }

    /// Empties the frames nothing kept reaches, when a reclaim is due. Kept: the
    /// inventory, the prelude, the loaded module files, the defaults, and the
    /// settings and contributions of `unfinished` (nodes between their halves).
    fn reclaim_if_due<'s>(
        &mut self,
        unfinished: impl Iterator<Item = (&'s resolve::Resolved, &'s BTreeMap<String, lang::Value>)>,
    ) {
        if !self.machine.reclaim_due() {
            return;
        }
        let kept = Kept {
            inventory_value: self.inventory_value,
            inventory: self.inventory,
            prelude: &self.repo.prelude,
            modules: &self.modules.set.loaded,
            defaults: &self.defaults,
        };
        let roots = kept.roots(unfinished);
        self.machine.reclaim(&roots);
    }

    /// The second half of each node of `steps` with the link the coordinator sent
    /// it; ends early, with the plans it has, when the compilation is cancelled (an
    /// error reading an entry is returned).
    fn second_halves(
        &mut self,
        steps: Vec<Step<'w>>,
        mut links: BTreeMap<String, NodeLink>,
    ) -> EvalResult<BTreeMap<String, Plan>> {
        let mut plans = BTreeMap::new();
        let mut steps = steps.into_iter();
        while let Some(step) = steps.next() {
            if self.repo.session.is_cancelled() {
                break;
            }
            let name = step.name().clone();
            self.report
                .traced
                .enter(self.machine, Place::Shapes(name.clone()));
            // the nodes after it, and this one, keep what their first half made
            let unfinished = steps.as_slice().iter().chain(std::iter::once(&step));
            self.reclaim_if_due(kept_values(unfinished));
            let link = links.remove(&name).unwrap_or_default();
            // a consumer of a node that failed: not compiled (what the link said of
            // it, if anything, is said by `second_half`, which then stops)
            if link.provider_failed && link.diagnostics.is_empty() {
                self.report.skipped.push(name);
                continue;
            }
            if !self.second_half(step, &name, &link, &mut plans)? {
                break;
            }
        }
        Ok(plans)
    }

    /// A node's second half: its plan taken from the build cache when nothing it
    /// reads changed, else its shapes made into its plan (a node whose declarations
    /// came from the cache is evaluated now), handed to the sink or kept in
    /// `plans`. False when the compilation was cancelled.
    fn second_half(
        &mut self,
        mut step: Step<'w>,
        name: &str,
        link: &NodeLink,
        plans: &mut BTreeMap<String, Plan>,
    ) -> EvalResult<bool> {
        let session = self.repo.session;
        let report = &mut *self.report;
        let diagnostics = report.per_node.entry(name.to_string()).or_default();
        let errors_before = error_count(diagnostics);
        if let Some(cache) = &session.cache
            && !link.diagnostics.is_empty()
        {
            // placed in other nodes' declarations too (taken back, they have no
            // file): a memory takes no declaration back while the link says any
            cache.said_beyond_nodes();
        }
        diagnostics.extend(link.diagnostics.iter().cloned());
        if error_count(diagnostics) > errors_before {
            return Ok(true);
        }
        let link_digest = session.cache.as_ref().map(|_| cache::link_digest(link));
        let (recorded, declared) = match &mut step {
            Step::Evaluated(pending) => (
                Modules::Made(&mut pending.resolved.modules),
                cache::Declared::Made(&pending.declared),
            ),
            Step::Cached { modules, .. } => (Modules::Recorded(modules), cache::Declared::Cached),
        };
        if let Some(link_digest) = &link_digest
            && kept_from_cache(
                session,
                name,
                (recorded, declared),
                link_digest,
                (plans, &mut report.handed),
                diagnostics,
            )
        {
            return Ok(true);
        }
        let pending = match step {
            Step::Evaluated(pending) => pending,
            // its declarations were unchanged but its link is not: evaluated now,
            // its link made from the declarations the cache had (the same but for
            // the numbering of files in their spans)
            Step::Cached {
                name: cached,
                node,
                declared,
                ..
            } => match self.declare(cached, node)? {
                FirstHalf::Declared(mut pending) => {
                    self.report
                        .traced
                        .enter(self.machine, Place::Shapes(cached.clone()));
                    if let Some(cache) = &session.cache
                        && !pending.declared.same_but_spans(&declared)
                    {
                        cache.disagreed();
                    }
                    pending.declared = declared;
                    pending.declared_from_cache = true;
                    pending
                }
                FirstHalf::Failed => return Ok(true),
                FirstHalf::Cancelled => return Ok(false),
            },
        };
        let report = &mut *self.report;
        let diagnostics = report.per_node.entry(name.to_string()).or_default();
        let said_before = diagnostics.len();
        let Some(plan) = node_plan(
            self.machine,
            name,
            &pending.node,
            &pending.resolved,
            &self.modules.set.loaded,
            &pending.collected,
            link,
            self.made,
            diagnostics,
        ) else {
            return Ok(true);
        };
        if error_count(diagnostics) == errors_before {
            if let (Some(cache), Some(link_digest)) = (&session.cache, link_digest) {
                // the shapes said nothing: a memory may keep the plan for reuse
                let silent = diagnostics.len() == said_before && self.machine.traces.is_empty();
                let declared = if pending.declared_from_cache {
                    cache::Declared::Cached
                } else {
                    cache::Declared::Made(&pending.declared)
                };
                cache.finished(
                    &mut report.handed.finishing,
                    name,
                    (pending.resolved.modules.clone(), declared),
                    link_digest,
                    cache::Reused::of(&plan),
                    silent.then_some(&plan),
                );
            }
            let last = session
                .cache
                .as_ref()
                .and_then(|cache| cache.last_plan(name));
            deliver(
                session,
                name,
                (plan, last),
                plans,
                &mut report.handed.sealed,
                diagnostics,
            );
        }
        Ok(true)
    }
}

/// What every node's first half reads of the worker's loaded modules.
struct Loaded<'a> {
    modules: &'a ModuleSet,
    known: &'a [String],
    context: &'a CheckContext<'a>,
}

/// A node's first half: resolution, settings, contributions and the declarations
/// the link needs (None when an evaluation error ended the node). The node comes
/// back (`Err`) when resolution asked for a module the worker has not loaded.
fn declare_node<'a>(
    machine: &mut Machine,
    repository: &Repository,
    (name, node): (&'a String, NodeOf<'a>),
    loaded: &Loaded<'_>,
    defaults: &mut DefaultsCache,
    inspected: &mut Inspected<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Option<Pending<'a>>, NodeOf<'a>> {
    let Loaded {
        modules: set,
        known,
        context,
    } = *loaded;
    let entry: &inventory::Node = &node;
    let mut settings_of =
        |machine: &mut Machine, module: &Module, diagnostics: &mut Vec<Diagnostic>| {
            settings::module_settings(machine, module, entry, context, defaults, diagnostics)
        };
    let resolved = recover(
        resolve::resolve(machine, entry, set, known, &mut settings_of, diagnostics),
        diagnostics,
    )
    .flatten();
    if set.has_wanted() {
        return Err(node);
    }
    Ok(declare_resolved(
        machine,
        repository,
        (name, node),
        resolved,
        loaded,
        inspected,
        diagnostics,
    ))
}

/// The rest of a node's first half, after its resolution.
fn declare_resolved<'a>(
    machine: &mut Machine,
    repository: &Repository,
    (name, node): (&'a String, NodeOf<'a>),
    resolved: Option<resolve::Resolved>,
    loaded: &Loaded<'_>,
    inspected: &mut Inspected<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Pending<'a>> {
    let Loaded {
        modules: set,
        known,
        context,
    } = *loaded;
    let modules = &set.loaded;
    let entry: &inventory::Node = &node;
    let resolved = resolved?;
    resolve::settings_for_absent_modules(name, entry, &resolved, set, known, diagnostics);
    let collected = recover(
        contribute::collect(
            machine,
            entry,
            &resolved,
            modules,
            known,
            context,
            diagnostics,
        ),
        diagnostics,
    )?;
    let declared = recover(
        link::declarations(
            machine,
            entry,
            &resolved,
            modules,
            &repository.root,
            diagnostics,
        ),
        diagnostics,
    )?;
    if inspected.node == Some(name.as_str()) {
        let mut view = node_view::node_part(
            machine,
            entry,
            &resolved,
            &collected,
            modules,
            &repository.root,
        );
        view.needs = node_view::needs(&declared);
        inspected.view = Some(view);
    }
    Some(Pending {
        name,
        node,
        resolved,
        collected,
        declared: Arc::new(declared),
        declared_from_cache: false,
    })
}

/// What a worker hands on besides its plans: the sealed texts of the plans it
/// handed to the sink, the plans the output already holds (told to the sink at
/// once when the worker ends), and what the cache records of its finished nodes
/// (added to the cache's at once too).
#[derive(Default)]
struct Handed {
    sealed: Vec<(String, SealedTexts)>,
    kept: Vec<KeptPlan>,
    finishing: cache::Finishing,
}

/// The modules a node ran, as [`kept_from_cache`] is given them: evaluated now
/// (moved into the node's new record), or the last record's own.
enum Modules<'a> {
    Made(&'a mut Vec<String>),
    Recorded(&'a cache::RecordedModules),
}

/// Keeps the plan the last build wrote for `name` when the build cache says nothing
/// it read has changed (true: the node is done). A cache in memory has the plan
/// itself, delivered as a plan made now would be. The node's modules are moved
/// into the cache's record when its plan is kept.
fn kept_from_cache(
    session: &Session,
    name: &str,
    (mut modules, declared): (Modules<'_>, cache::Declared<'_>),
    link_digest: &str,
    (plans, handed): (&mut BTreeMap<String, Plan>, &mut Handed),
    diagnostics: &mut Vec<Diagnostic>,
) -> bool {
    let Some(cache) = &session.cache else {
        return false;
    };
    if session.sink.is_none() && !cache.in_memory() {
        return false;
    }
    let ran: &[String] = match &modules {
        Modules::Made(made) => made,
        Modules::Recorded(recorded) => recorded,
    };
    let Some(reused) = cache.reuse(name, ran, link_digest) else {
        return false;
    };
    let finished =
        |reused: cache::Reused, modules: &mut Modules<'_>, finishing: &mut cache::Finishing| {
            let modules = match modules {
                Modules::Made(made) => std::mem::take(*made),
                // a record taken whole keeps its own (this copy is dropped)
                Modules::Recorded(_) if reused.is_recorded() => Vec::new(),
                Modules::Recorded(recorded) => recorded.to_vec(),
            };
            cache.finished(
                finishing,
                name,
                (modules, declared),
                link_digest.to_string(),
                reused,
                None,
            );
        };
    if let Some(plan) = reused.plan().cloned() {
        finished(reused, &mut modules, &mut handed.finishing);
        deliver(
            session,
            name,
            ((*plan).clone(), None),
            plans,
            &mut handed.sealed,
            diagnostics,
        );
        return true;
    }
    if session.sink.is_none() {
        return false;
    }
    // the plan file is the bytes the cache recorded: kept as it is, told to the
    // sink with the worker's other kept plans when it ends
    handed.kept.push(KeptPlan {
        node: name.to_string(),
        digest: reused.digest().to_string(),
        shapes: reused.shapes(),
    });
    handed
        .sealed
        .push((name.to_string(), reused.sealed().to_vec()));
    finished(reused, &mut modules, &mut handed.finishing);
    true
}

/// The inventory node `name` is evaluated from: the one the inventory read, or its
/// entry read now when the inventory left it unread (None: it has errors, which
/// are reported with the inventory's).
fn node_to_evaluate<'a>(
    machine: &mut Machine,
    inventory: &Inventory,
    name: &str,
    read: Option<&'a inventory::Node>,
    charge: &Charge,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<NodeOf<'a>>> {
    if let Some(node) = read {
        return Ok(Some(NodeOf::Inventory(node)));
    }
    charge.to(Doing::Inventory);
    let node = inventory.read_later(machine, name, diagnostics);
    charge.to(Doing::Other);
    Ok(node?.map(|node| NodeOf::Read(Box::new(node))))
}

/// The inventory, evaluated and read (None when `mesh.nix` does not evaluate; the
/// diagnostics say why); an entry for which `read_now` is false is left unread.
fn load_inventory(
    machine: &mut Machine,
    repository: &Repository,
    charge: &Charge,
    read_now: &dyn Fn(&str) -> bool,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<(lang::Value, Inventory)>> {
    charge.to(Doing::Inventory);
    let inventory_value = match machine.eval_file(&repository.inventory) {
        Ok(value) => value,
        Err(errors) => {
            charge.to(Doing::Other);
            diagnostics.extend(errors);
            return Ok(None);
        }
    };
    let inventory_file = machine
        .sources
        .find_path(&repository.inventory)
        .unwrap_or_default();
    let inventory_span = Span::new(inventory_file, 0, 0);
    let inventory = inventory::read_some(
        machine,
        &inventory_value,
        inventory_span,
        diagnostics,
        read_now,
    );
    charge.to(Doing::Other);
    Ok(Some((inventory_value, inventory?)))
}

/// Every module of the repository, each file evaluated once (false when the
/// compilation was cancelled meanwhile); a module that fails is reported and left out.
/// The layout's diagnostics come after the files'.
fn load_modules(
    set: &mut ModuleSet,
    machine: &mut Machine,
    repo: &Repo<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> bool {
    for (name, location) in &repo.repository.modules {
        if repo.session.is_cancelled() {
            return false;
        }
        let module = load_module(machine, repo, name, location, diagnostics);
        set.add(name, module);
    }
    module::layout_diagnostics(repo.repository, &set.loaded, diagnostics);
    true
}

/// One module file evaluated, what it reads charged to it (None: it failed, and
/// the diagnostics say why).
fn load_module(
    machine: &mut Machine,
    repo: &Repo<'_>,
    name: &str,
    location: &ModuleLocation,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Module> {
    if let Some(cache) = &repo.session.cache {
        cache.loading_module(name);
    }
    let directory = location.path.parent().unwrap_or(&location.path);
    repo.charge
        .to(Doing::Module(name.to_string(), directory.to_path_buf()));
    let said_before = diagnostics.len();
    let loaded = module::load(
        machine,
        name,
        location,
        &repo.prelude,
        &repo.context,
        diagnostics,
    );
    repo.charge.to(Doing::Other);
    let module = recover(loaded, diagnostics).flatten();
    if let Some(cache) = &repo.session.cache
        && diagnostics.len() > said_before
    {
        cache.module_said_something(name);
    }
    module
}

/// One node's shapes, made into its plan (None when an evaluation error ended the
/// node; the diagnostics say why).
#[allow(clippy::too_many_arguments)]
fn node_plan(
    machine: &mut Machine,
    name: &str,
    node: &inventory::Node,
    resolved: &resolve::Resolved,
    modules: &BTreeMap<String, Module>,
    collected: &BTreeMap<String, lang::Value>,
    link: &NodeLink,
    made: &crate::shape::Made,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Plan> {
    let extra = |module: &str| arguments(link, module);
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
            field_spans: Vec::new(),
        })
        .collect();
    let shapes = recover(
        shapes::node_shapes(
            machine,
            node,
            resolved,
            modules,
            collected,
            &extra,
            placed,
            made,
            &mut opaque,
            diagnostics,
        ),
        diagnostics,
    )?;
    match emit::plan(name, shapes) {
        Ok(plan) => Some(plan),
        Err(diagnostic) => {
            diagnostics.push(diagnostic);
            None
        }
    }
}

/// Hands a finished plan to the session's sink (written now and dropped: no plan is
/// kept to the end), or keeps it when there is none; with the digest of the plan
/// the output held for the node, when the build cache knows it.
fn deliver(
    session: &Session,
    name: &str,
    (plan, last): (Plan, Option<&str>),
    plans: &mut BTreeMap<String, Plan>,
    handed: &mut Vec<(String, SealedTexts)>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    match &session.sink {
        Some(sink) => {
            let sealed = sealed_texts(&plan);
            match sink.accept(name, plan, last) {
                Ok(()) => handed.push((name.to_string(), sealed)),
                Err(diagnostic) => diagnostics.push(diagnostic),
            }
        }
        None => {
            plans.insert(name.to_string(), plan);
        }
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
