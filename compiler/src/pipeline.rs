//! The compiler's stages in order: repository -> inventory -> modules -> per node:
//! resolve -> settings -> contribute -> shapes. Each stage is a function of the ones
//! before; this file only wires them together: the entry points, and the
//! coordinator that links every worker's declarations. The workers' own loop is in
//! `workers`, merging their results in `merge`, a link's arguments to `shapes` in
//! `arguments`.

mod arguments;
mod merge;
mod workers;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use lang::{Diagnostic, Limits, Severity, Sources};
use plan::Plan;

use crate::cache;
use crate::fs::Overlay;
use crate::link::{self, NodeLink, SecretMode};
use crate::lock;
use crate::node_view::{self, NodeView};
use crate::repository::{self, Repository};
use crate::sealed_value;
use crate::secrets;
use crate::staged::PlanSink;

use merge::merge;
use workers::{PhaseA, WorkerResult, work};

/// What compiling a repository produced.
pub struct Compilation {
    pub root: PathBuf,
    /// The plan of every node of the inventory that compiled without errors (none
    /// when the session hands each plan to a [`PlanSink`] instead).
    pub plans: BTreeMap<String, Plan>,
    /// The nodes whose plans went to the session's [`PlanSink`].
    pub handed: BTreeSet<String>,
    /// The secret shapes of those plans (path, sealed text), kept for `secrets`.
    pub(super) handed_sealed: BTreeMap<String, SealedTexts>,
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
    /// The nodes an error was said for.
    pub nodes_with_errors: BTreeSet<String>,
    /// The nodes not compiled because a node they consume from has errors.
    pub not_compiled: BTreeSet<String>,
}

impl Compilation {
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// Whether it reported nothing: no diagnostic of any severity, no trace.
    pub fn said_nothing(&self) -> bool {
        self.diagnostics.is_empty() && self.traces.is_empty()
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
    /// The build cache (`meshc build`): what this compilation reads is recorded in
    /// it, and a node whose inputs are unchanged takes its plan from it.
    pub cache: Option<Arc<crate::cache::BuildCache>>,
    /// An editor's compilation (`meshc lsp`): a named pipe is refused, not read.
    /// Reading one waits for its writer, and the analysis would wait with it,
    /// answering no edit after.
    pub editor: bool,
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

/// Compiles `root` as an editor does, with the record of its last compilation kept
/// in memory (`previous`; `session` gets the cache the compilation ran with, whose
/// [`cache::BuildCache::remember`] is the record for the next). When plans may be
/// reused, one worker compiles: what is left is mostly loading module files, which
/// every worker does. A compilation that took declarations from the record, or left
/// module files unloaded, is made again taking only plans from it when what it
/// reports could differ from what a compilation from nothing reports: when it
/// traced (a shared value traces at the first node that forces it), when a
/// diagnostic has a place in a declaration taken from the record (kept without
/// its file), or when a node declared other than the record had it. Any other
/// diagnostic comes from what was evaluated again, as from nothing: what was not
/// is unchanged since it said nothing (the record marks the nodes and module
/// files that said anything, and those are evaluated again).
pub fn compile_remembering(
    root: &Path,
    previous: Option<&cache::Remembered>,
    options: Options,
    session: &mut Session,
) -> (Arc<cache::BuildCache>, Compilation) {
    let mut compile = |previous: Option<&cache::Remembered>| {
        let cache = cache::open_in_memory(root, previous, session);
        session.cache = Some(cache.clone());
        let options = Options {
            workers: options.workers.or(cache.may_reuse().then_some(1)),
            ..options
        };
        let compilation = compile_session(root, options, session);
        (cache, compilation)
    };
    let (cache, compilation) = compile(previous);
    if must_compile_again(&cache, &compilation) {
        let plans_only = previous.map(cache::Remembered::for_plans_only);
        return compile(plans_only.as_ref());
    }
    (cache, compilation)
}

/// Whether `compilation`, which ran with `cache`, may report other than a
/// compilation from nothing: it took declarations from the record or left module
/// files unloaded, and it traced (a shared value traces at the first node that
/// forces it), or a diagnostic has a place in a declaration taken from the record
/// (kept without its file), or a node declared other than the record had it. Then
/// it is made again taking only plans from the record (an editor), or from nothing
/// (a build). Any other diagnostic comes from what was evaluated again, as from
/// nothing: what was not is unchanged since it said nothing.
pub fn must_compile_again(cache: &cache::BuildCache, compilation: &Compilation) -> bool {
    let placed_nowhere = |label: &lang::Label| label.span.file == link::NO_FILE;
    let unplaced = compilation.diagnostics.iter().any(|diagnostic| {
        diagnostic.primary.iter().any(placed_nowhere)
            || diagnostic.secondary.iter().any(placed_nowhere)
            || diagnostic.trace.iter().any(placed_nowhere)
    });
    cache.took_more_than_plans()
        && (!compilation.traces.is_empty() || unplaced || cache.has_disagreed())
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
    let repository = match load_repository(root, session) {
        Ok(repository) => repository,
        Err(diagnostic) => return (Compilation::failed(root, *diagnostic), None),
    };
    let repository: &Repository = &repository;
    let store = secrets::Store::new(&repository.root, options.secrets != SecretMode::Make);
    let (results, linked) = run_workers(repository, options, session, &store, inspected);
    crate::phases::mark("second halves");
    let mut view = results.iter().find_map(|result| result.view.clone());
    let mut compilation = merge(repository, results);
    if let Some(view) = &mut view {
        if let Some(fleet) = &linked.fleet {
            node_view::links(view, fleet);
        }
        if let Some(plan) = compilation.plans.get(&view.node) {
            node_view::shapes(view, plan);
        }
    }
    finish(&mut compilation, linked, &store, session);
    crate::phases::mark("merged");
    (compilation, view)
}

impl Compilation {
    /// A compilation that ended before any worker started, with why.
    fn failed(root: &Path, diagnostic: Diagnostic) -> Compilation {
        Compilation {
            root: root.to_path_buf(),
            plans: BTreeMap::new(),
            handed: BTreeSet::new(),
            handed_sealed: BTreeMap::new(),
            diagnostics: vec![diagnostic],
            sources: Sources::new(),
            made: secrets::Made::default(),
            artifact_directories: BTreeMap::new(),
            keys: BTreeMap::new(),
            secrets: BTreeMap::new(),
            traces: Vec::new(),
            nodes_with_errors: BTreeSet::new(),
            not_compiled: BTreeSet::new(),
        }
    }
}

/// The repository's layout: the one the build cache read already (the same one is
/// compiled), or read now.
fn load_repository(root: &Path, session: &Session) -> Result<Arc<Repository>, Box<Diagnostic>> {
    let cached = session
        .cache
        .as_ref()
        .and_then(|cache| cache.repository(root));
    match cached {
        Some(repository) => Ok(repository),
        None => repository::load(root).map(Arc::new),
    }
}

/// What a worker sends the coordinator after its first halves: its index, and its
/// nodes' declarations with the inventory's registry.
type Declared = (usize, PhaseA);
/// What a worker receives back: the links of its nodes.
type Links = BTreeMap<String, NodeLink>;
/// What the coordinator sends a worker: its nodes' links, or None when the fleet
/// was not linked (a worker did not deliver its nodes' declarations).
type LinksOrNone = Option<Links>;

/// What the coordinator made of every worker's declarations, for the merged
/// compilation.
struct Linked {
    /// Each node's sealing key, in node order.
    keys: BTreeMap<String, String>,
    artifact_directories: BTreeMap<String, PathBuf>,
    /// Every node's declarations, kept for the view of an inspected node.
    fleet: Option<Vec<Arc<link::Declarations>>>,
    /// What the link and `mesh.lock` said beyond the nodes' own diagnostics.
    diagnostics: Vec<Diagnostic>,
}

/// The workers (one per core, at most 8), each with its own evaluator and its share
/// of the nodes, and the coordinator between their two halves.
fn run_workers(
    repository: &Repository,
    options: Options,
    session: &Session,
    store: &secrets::Store,
    inspected: Option<&str>,
) -> (Vec<WorkerResult>, Linked) {
    let workers = options
        .workers
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|count| count.get())
                .unwrap_or(1)
        })
        .clamp(1, 8);
    let (to_coordinator, from_workers) = mpsc::channel::<Declared>();
    let mut to_workers = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..workers {
        let (sender, receiver) = mpsc::channel::<LinksOrNone>();
        to_workers.push(sender);
        receivers.push(receiver);
    }
    std::thread::scope(|scope| {
        // owned here: should the coordinator panic before the links are sent, the
        // senders are dropped as it unwinds, and the workers waiting for their
        // links go on with none and end (the scope then ends in the panic)
        // instead of waiting for ever
        let to_workers = to_workers;
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
        // a worker that could not start says so itself (E059), not as a bug here
        let started: Vec<bool> = handles.iter().map(Result::is_ok).collect();
        let linked = coordinate(
            repository,
            (options, session, store),
            (&from_workers, &to_workers, &started),
            inspected.is_some(),
        );
        let results = handles
            .into_iter()
            .map(|handle| match handle {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(error) => WorkerResult::failed(error),
            })
            .collect();
        (results, linked)
    })
}

/// The coordinator's one meeting with the workers: every worker's declarations
/// received (a worker that stopped early sends an empty list, one that panicked or
/// never started sends nothing), linked, and each worker sent the links of its
/// nodes (`started` says which workers are there to receive them).
fn coordinate(
    repository: &Repository,
    (options, session, store): (Options, &Session, &secrets::Store),
    (from_workers, to_workers, started): (
        &mpsc::Receiver<Declared>,
        &[mpsc::Sender<LinksOrNone>],
        &[bool],
    ),
    keep_fleet: bool,
) -> Linked {
    let workers = to_workers.len();
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
    // a worker that never started, panicked or stopped early has said why (E059,
    // its error): the fleet is not linked without its nodes, whose consumers would
    // each be told there is no such node (a worker that could not start under
    // `ulimit -v` gave 160,000 false E302s, and each looked for a name like it)
    let complete = phases
        .iter()
        .all(|phase| phase.as_ref().is_some_and(|phase| phase.complete));
    // every worker's declarations moved into one list, each worker's a range
    // of it (a reused node's come from the cache: 10,000 of them are not copied)
    let mut registry = None;
    let mut failed = BTreeSet::new();
    let mut declarations: Vec<Arc<link::Declarations>> = Vec::new();
    let mut ranges = Vec::with_capacity(workers);
    for phase in phases.into_iter().map(Option::unwrap_or_default) {
        registry = registry.or(phase.registry);
        failed.extend(phase.failed);
        let start = declarations.len();
        declarations.extend(phase.declarations);
        ranges.push(start..declarations.len());
    }
    crate::phases::mark("first halves");
    let mut diagnostics = Vec::new();
    let lock = match lock::read(&repository.root) {
        Ok(lock) => lock,
        Err(diagnostic) => {
            diagnostics.push(diagnostic);
            lock::Lock::default()
        }
    };
    // in node order: the map is built at once
    let keys = declarations
        .iter()
        .map(|declaration| (declaration.node.clone(), declaration.key.clone()))
        .collect();
    let mut artifact_directories = BTreeMap::new();
    for declaration in &declarations {
        for artifact in &declaration.artifacts {
            artifact_directories.insert(artifact.directory.clone(), artifact.absolute.clone());
        }
    }
    // the sink lists what the output holds while the link is made: no plan
    // is staged before the links are sent
    let mut links = std::thread::scope(|scope| {
        let preparing = session.sink.as_ref().and_then(|sink| {
            std::thread::Builder::new()
                .name("mesh-sink".to_string())
                .spawn_scoped(scope, move || sink.before_plans())
                .ok()
        });
        let links = if complete {
            link::link(
                &declarations,
                &failed,
                store,
                options.secrets,
                &lock,
                registry.as_deref(),
            )
        } else {
            BTreeMap::new()
        };
        if let Some(preparing) = preparing {
            preparing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        }
        links
    });
    crate::phases::mark("link");
    for (index, (sender, range)) in to_workers.iter().zip(ranges).enumerate() {
        // not linked: the workers make no second halves (with no links, every
        // consumer would say its credential is missing)
        if !complete {
            let _ = sender.send(None);
            continue;
        }
        // the link has only the nodes that receive something (the worker takes
        // an empty link for a node it has none for)
        let share: BTreeMap<String, NodeLink> = declarations[range]
            .iter()
            .filter_map(|d| links.remove(&d.node).map(|link| (d.node.clone(), link)))
            .collect();
        if sender.send(Some(share)).is_err() && started.get(index) == Some(&true) {
            diagnostics.push(Diagnostic::bug(format!(
                "evaluation worker {index} stopped before linking"
            )));
        }
    }
    Linked {
        keys,
        artifact_directories,
        fleet: keep_fleet.then_some(declarations),
        diagnostics,
    }
}

/// The merged compilation completed: the coordinator's diagnostics first, the
/// secrets made written (only when every node compiled: a build that fails leaves
/// `secrets/` as it was), and the keys and secret shapes of the compiled nodes.
fn finish(
    compilation: &mut Compilation,
    linked: Linked,
    store: &secrets::Store,
    session: &Session,
) {
    if let Some(cache) = &session.cache
        && !linked.diagnostics.is_empty()
    {
        cache.said_beyond_nodes();
    }
    compilation.diagnostics.splice(0..0, linked.diagnostics);
    if compilation.has_errors() {
        store.discard_made();
    } else if let Err(error) = store.write_made() {
        compilation
            .diagnostics
            .push(link::store_write_diagnostic(error));
    }
    compilation.made = store.made();
    compilation.artifact_directories = linked.artifact_directories;
    compilation.keys = linked
        .keys
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
    compilation.secrets = sealed_values(sealed, store);
}

/// A node's secret shapes as (path, sealed text): what [`sealed_values`] needs of a
/// plan, kept when the plan itself was handed to the sink and dropped.
pub(crate) type SealedTexts = Vec<(String, String)>;

pub(crate) fn sealed_texts(plan: &Plan) -> SealedTexts {
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
