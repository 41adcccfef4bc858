//! The analysis worker of `meshc lsp`: compiles a repository with the open buffers
//! in place of their files, on its own thread, so that the main loop keeps
//! answering. Only the newest request per repository is compiled; a compilation a
//! newer edit made stale is abandoned. After publishing diagnostics it refreshes the
//! index hover and completion read (modules, their settings), re-evaluating only the
//! module files whose text changed. It must not talk to the client itself.
//! Each repository's last complete compilation is remembered (the build cache's
//! records, kept in memory: `compiler::cache::open_in_memory`), so an edit makes
//! again only the plans of the nodes whose inputs it changed; what is published is
//! what a compilation from nothing reports.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crossbeam_channel::Sender;
use lang::{Limits, Loader, Machine, Severity, Sources, codes};
use lsp_types::{
    DiagnosticRelatedInformation, DiagnosticSeverity, Location, NumberOrString, Position, Range,
    Url,
};

use crate::lsp::documents::{Encoding, LineIndex};
use compiler::Overlay;
use compiler::analysis::{CheckContext, MeshLoader, VIRTUAL_ROOT, load_module, prelude};
use compiler::{Compilation, ModuleLocation, Options, Origin, Session};

/// Evaluation steps one compilation may take (each evaluation worker counts its
/// own). A repository of 300 modules and 100 nodes takes less than 2 million; a
/// file that does not terminate stops with E043 after about a second and a half.
/// A compilation a newer edit made stale is abandoned sooner: the evaluator looks at
/// the session's cancel flag every few thousand steps.
pub const MAX_STEPS: u64 = 50_000_000;

/// What the main loop asks for: compile `root` with these buffers.
pub struct Request {
    pub root: PathBuf,
    pub overlay: Overlay,
    pub generation: u64,
}

/// What the worker reports.
pub enum Outcome {
    Diagnostics {
        root: PathBuf,
        generation: u64,
        /// Every file with diagnostics (absolute path) and its diagnostics.
        files: BTreeMap<PathBuf, Vec<lsp_types::Diagnostic>>,
        /// What `builtins.trace` and `builtins.warn` said, as `meshc check` prints
        /// it; the server logs it (`window/logMessage`).
        traces: Vec<String>,
        /// Which nodes' shapes were made again and how many were reused, for the
        /// log (None when the compilation failed).
        reuse: Option<String>,
    },
    Index {
        root: PathBuf,
        generation: u64,
        index: Arc<Index>,
    },
    /// From the syntax worker (`lsp/syntax.rs`): a buffer's errors as of an edit.
    Syntax {
        uri: Url,
        in_repository: bool,
        generation: u64,
        diagnostics: Vec<lsp_types::Diagnostic>,
    },
}

/// What hover, completion and go-to-definition know about a repository.
#[derive(Default, Debug)]
pub struct Index {
    pub modules: BTreeMap<String, ModuleInfo>,
}

#[derive(Clone, Debug)]
pub struct ModuleInfo {
    pub name: String,
    /// `module.nix` on disk; None for a standard module (it is embedded in `meshc`).
    pub file: Option<PathBuf>,
    pub description: Option<String>,
    pub options: BTreeMap<String, OptionInfo>,
}

#[derive(Clone, Debug)]
pub struct OptionInfo {
    /// `listOf (port)`, as the book writes types.
    pub type_name: String,
    /// "a list of ports".
    pub type_description: String,
    /// The default as the language prints it (shortened), if there is one.
    pub default: Option<String>,
    pub description: String,
    pub declared: Option<Location>,
}

#[derive(Default)]
struct Queue {
    /// The newest request per repository not yet started.
    waiting: BTreeMap<PathBuf, Request>,
    /// The compilation running now and its cancel flag.
    running: Option<(PathBuf, Arc<AtomicBool>)>,
    stopped: bool,
}

/// The handle the main loop keeps.
pub struct Analyzer {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Analyzer {
    /// Starts the analysis thread (an error when it cannot be started).
    pub fn start(encoding: Encoding, results: Sender<Outcome>) -> std::io::Result<Analyzer> {
        let queue: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let worker_queue = queue.clone();
        let thread = std::thread::Builder::new()
            .name("mesh-lsp-analysis".into())
            .stack_size(lang::eval::EVAL_STACK_SIZE)
            .spawn(move || work(&worker_queue, encoding, &results))?;
        Ok(Analyzer {
            queue,
            thread: Some(thread),
        })
    }

    /// Queues `request`, replacing an older one for the same repository and
    /// abandoning a compilation of it that is running.
    pub fn submit(&self, request: Request) {
        let (lock, wake) = &*self.queue;
        let mut queue = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((root, cancelled)) = &queue.running
            && *root == request.root
        {
            cancelled.store(true, Ordering::Relaxed);
        }
        queue.waiting.insert(request.root.clone(), request);
        wake.notify_one();
    }

    pub fn stop(mut self) {
        {
            let (lock, wake) = &*self.queue;
            let mut queue = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            queue.stopped = true;
            if let Some((_, cancelled)) = &queue.running {
                cancelled.store(true, Ordering::Relaxed);
            }
            wake.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn work(queue: &(Mutex<Queue>, Condvar), encoding: Encoding, results: &Sender<Outcome>) {
    let (lock, wake) = queue;
    let mut indexes: HashMap<PathBuf, IndexCache> = HashMap::new();
    // per repository: the files an edit did not touch are not parsed again
    let mut parses: HashMap<PathBuf, Arc<lang::ParseCache>> = HashMap::new();
    // per repository: what its last complete compilation read, node by node
    let mut memories: HashMap<PathBuf, compiler::cache::Remembered> = HashMap::new();
    loop {
        let (request, cancelled) = {
            let mut queue = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            loop {
                if queue.stopped {
                    return;
                }
                if let Some(root) = queue.waiting.keys().next().cloned()
                    && let Some(request) = queue.waiting.remove(&root)
                {
                    let cancelled = Arc::new(AtomicBool::new(false));
                    queue.running = Some((root, cancelled.clone()));
                    break (request, cancelled);
                }
                queue = wake
                    .wait(queue)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        };
        let mut session = Session {
            overlay: request.overlay.clone(),
            limits: Limits {
                max_steps: Some(MAX_STEPS),
                ..Limits::default()
            },
            cancelled: Some(cancelled.clone()),
            parses: Some(parses.entry(request.root.clone()).or_default().clone()),
            editor: true,
            ..Session::default()
        };
        let stale = || cancelled.load(Ordering::Relaxed);
        let previous = memories.remove(&request.root);
        // a bug in the compiler must not end the worker: it is reported instead
        let (files, traces, reuse, remembered, repository) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let (cache, compilation) = compiler::compile_remembering(
                    &request.root,
                    previous.as_ref(),
                    Options::inspect(),
                    &mut session,
                );
                let traces = compilation
                    .traces
                    .iter()
                    .map(|traced| crate::render::traced(traced, &compilation.sources))
                    .collect();
                // a compilation that was abandoned or ran out of its budget did not
                // record everything: the next starts from nothing
                let exhausted = compilation.diagnostics.iter().any(|diagnostic| {
                    diagnostic.code == codes::BUDGET_EXCEEDED
                        || diagnostic.code == codes::MEMORY_EXCEEDED
                });
                let remembered = (!stale() && !exhausted)
                    .then(|| cache.remember(&compilation))
                    .flatten();
                (
                    diagnostics_by_file(&compilation, &request.root, encoding),
                    traces,
                    Some(reuse_line(&cache)),
                    remembered,
                    cache.repository(&request.root),
                )
            }))
            .unwrap_or_else(|panic| {
                (
                    internal_error(&request.root, panic.as_ref()),
                    Vec::new(),
                    None,
                    None,
                    None,
                )
            });
        match (remembered, previous) {
            (Some(remembered), _) => {
                memories.insert(request.root.clone(), remembered);
            }
            // what an abandoned compilation did not finish leaves the last record
            // as true as it was: compared with the next edit's files as well
            (None, Some(previous)) if stale() => {
                memories.insert(request.root.clone(), previous);
            }
            (None, _) => {}
        }
        if !stale()
            && let Some(cache) = parses.get(&request.root)
        {
            // a whole compilation visited every file it needs: forget the others (an
            // abandoned one did not, and keeps them for the next)
            cache.sweep();
        }
        if !stale() {
            let _ = results.send(Outcome::Diagnostics {
                root: request.root.clone(),
                generation: request.generation,
                files,
                traces,
                reuse,
            });
        }
        if !stale() {
            let cache = indexes.entry(request.root.clone()).or_default();
            let parses = parses.get(&request.root).cloned();
            let index = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                cache.refresh(
                    &request.root,
                    (&request.overlay, repository, parses),
                    encoding,
                )
            }))
            .unwrap_or_default();
            let _ = results.send(Outcome::Index {
                root: request.root.clone(),
                generation: request.generation,
                index,
            });
        }
        let mut queue = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        queue.running = None;
    }
}

/// How many nodes' shapes were made again and how many reused, as the log says it:
/// `analysis: 2 nodes compiled again (app1, db1), 98 reused`.
fn reuse_line(cache: &compiler::cache::BuildCache) -> String {
    /// Names listed before the rest are only counted.
    const LISTED: usize = 10;
    let again = cache.compiled_again();
    let mut names = again
        .iter()
        .take(LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if again.len() > LISTED {
        names.push_str(", …");
    }
    let names = if again.is_empty() {
        String::new()
    } else {
        format!(" ({names})")
    };
    format!(
        "analysis: {} compiled again{names}, {} reused",
        nodes(again.len()),
        cache.reused()
    )
}

fn nodes(count: usize) -> String {
    if count == 1 {
        "1 node".to_string()
    } else {
        format!("{count} nodes")
    }
}

/// The diagnostics of a compilation that panicked: one E900 on the inventory.
fn internal_error(
    root: &Path,
    panic: &(dyn std::any::Any + Send),
) -> BTreeMap<PathBuf, Vec<lsp_types::Diagnostic>> {
    let reason = panic
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let diagnostic = lsp_types::Diagnostic {
        severity: Some(DiagnosticSeverity::ERROR),
        code: Some(NumberOrString::String(codes::INTERNAL.as_str().to_string())),
        source: Some("meshc".into()),
        message: format!(
            "meshc failed while compiling the repository: {reason}\nhelp: this is a bug in meshc; please report it with the repository that shows it"
        ),
        ..lsp_types::Diagnostic::default()
    };
    BTreeMap::from([(root.join("mesh.nix"), vec![diagnostic])])
}

/// Where a file of the compilation lives, if it is a real file.
fn real_path(sources: &Sources, file: lang::FileId) -> Option<&Path> {
    sources
        .get(file)
        .and_then(|file| file.path.as_deref())
        .filter(|path| !path.starts_with(VIRTUAL_ROOT))
}

/// The compilation's diagnostics as the editor shows them, by file. A diagnostic
/// without a place in a real file (no repository, or in a standard module) goes to
/// the inventory's first line. When the evaluation budget ran out, only the first
/// E043 is kept: the ones after it are the same exhaustion seen again.
pub fn diagnostics_by_file(
    compilation: &Compilation,
    root: &Path,
    encoding: Encoding,
) -> BTreeMap<PathBuf, Vec<lsp_types::Diagnostic>> {
    let sources = &compilation.sources;
    let inventory = root.join("mesh.nix");
    let mut indexes: HashMap<lang::FileId, LineIndex<'_>> = HashMap::new();
    let mut range_of = |span: lang::Span| -> Range {
        match sources.get(span.file) {
            Some(file) => indexes
                .entry(span.file)
                .or_insert_with(|| LineIndex::new(&file.text))
                .range(span.start as usize, span.end as usize, encoding),
            None => Range::default(),
        }
    };
    let mut files: BTreeMap<PathBuf, Vec<lsp_types::Diagnostic>> = BTreeMap::new();
    let mut budget_reported = false;
    for diagnostic in &compilation.diagnostics {
        if diagnostic.code == codes::BUDGET_EXCEEDED {
            if budget_reported {
                continue;
            }
            budget_reported = true;
        }
        let mut message = diagnostic.message.clone();
        let (path, range) = match &diagnostic.primary {
            Some(label) => match real_path(sources, label.span.file) {
                Some(path) => (path.to_path_buf(), range_of(label.span)),
                None => {
                    message = format!(
                        "{}: {message}",
                        crate::render::location(sources, label.span)
                    );
                    (inventory.clone(), Range::default())
                }
            },
            None => (inventory.clone(), Range::default()),
        };
        if let Some(help) = &diagnostic.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        let mut related = Vec::new();
        for label in diagnostic.secondary.iter().chain(&diagnostic.trace) {
            if let Some(path) = real_path(sources, label.span.file)
                && let Ok(uri) = Url::from_file_path(path)
            {
                related.push(DiagnosticRelatedInformation {
                    location: Location::new(uri, range_of(label.span)),
                    // a trace frame's text is the module's (`addErrorContext`)
                    message: compiler::redact_private_keys(&label.message).into_owned(),
                });
            }
        }
        files.entry(path).or_default().push(lsp_types::Diagnostic {
            range,
            severity: Some(match diagnostic.severity {
                Severity::Error => DiagnosticSeverity::ERROR,
                Severity::Warning => DiagnosticSeverity::WARNING,
                Severity::Note => DiagnosticSeverity::INFORMATION,
            }),
            code: Some(NumberOrString::String(diagnostic.code.as_str().to_string())),
            source: Some("meshc".into()),
            // no private key reaches the editor's problem list either
            message: compiler::redact_private_keys(&message).into_owned(),
            related_information: (!related.is_empty()).then_some(related),
            ..lsp_types::Diagnostic::default()
        });
    }
    files
}

/// Diagnostics of a parse, for publishing before the compilation is done.
pub fn syntax_diagnostics(
    text: &[u8],
    errors: &[lang::Diagnostic],
    encoding: Encoding,
) -> Vec<lsp_types::Diagnostic> {
    let index = LineIndex::new(text);
    errors
        .iter()
        .map(|error| {
            let range = error
                .span()
                .map(|span| index.range(span.start as usize, span.end as usize, encoding))
                .unwrap_or_default();
            let mut message = error.message.clone();
            if let Some(help) = &error.help {
                message.push_str("\nhelp: ");
                message.push_str(help);
            }
            lsp_types::Diagnostic {
                range,
                severity: Some(DiagnosticSeverity::ERROR),
                code: Some(NumberOrString::String(error.code.as_str().to_string())),
                source: Some("meshc".into()),
                message,
                ..lsp_types::Diagnostic::default()
            }
        })
        .collect()
}

/// The index of one repository and the text each module's entry was made from.
#[derive(Default)]
struct IndexCache {
    modules: BTreeMap<String, (u64, ModuleInfo)>,
}

/// How long a default may be in a hover before it is cut.
const DEFAULT_LENGTH: usize = 200;

impl IndexCache {
    /// The index as of `overlay`, in the repository's layout as the compilation
    /// read it (read again if it did not), its module files parsed through
    /// `parses`.
    fn refresh(
        &mut self,
        root: &Path,
        (overlay, repository, parses): (
            &Overlay,
            Option<Arc<compiler::Repository>>,
            Option<Arc<lang::ParseCache>>,
        ),
        encoding: Encoding,
    ) -> Arc<Index> {
        let repository = match repository {
            Some(repository) => repository,
            None => match compiler::load_repository(root) {
                Ok(repository) => Arc::new(repository),
                Err(_) => return Arc::default(),
            },
        };
        let loader = Rc::new(
            MeshLoader::with_overlay(repository.root.clone(), overlay.clone()).refusing_pipes(true),
        );
        let mut kept = BTreeMap::new();
        for (name, location) in &repository.modules {
            let text = loader
                .read(&location.path, compiler::limits::DEFAULT_MAX_MEMORY)
                .unwrap_or_default();
            let mut hasher = DefaultHasher::new();
            location.path.hash(&mut hasher);
            text.hash(&mut hasher);
            let hash = hasher.finish();
            let previous = self.modules.remove(name);
            let entry = match previous {
                Some((old, info)) if old == hash => (old, info),
                previous => {
                    match read_module(
                        &repository.root,
                        (&loader, parses.as_ref()),
                        name,
                        location,
                        encoding,
                    ) {
                        Some(info) => (hash, info),
                        // a module that does not load keeps what was known of it, and is
                        // read again next time
                        None => match previous {
                            Some((_, info)) => (0, info),
                            None => (
                                0,
                                ModuleInfo {
                                    name: name.clone(),
                                    file: (location.origin == Origin::Repository)
                                        .then(|| location.path.clone()),
                                    description: None,
                                    options: BTreeMap::new(),
                                },
                            ),
                        },
                    }
                }
            };
            kept.insert(name.clone(), entry);
        }
        self.modules = kept;
        Arc::new(Index {
            modules: self
                .modules
                .iter()
                .map(|(name, (_, info))| (name.clone(), info.clone()))
                .collect(),
        })
    }
}

/// Evaluates one module file alone (with its own budget) and reads what the index
/// keeps of it.
fn read_module(
    root: &Path,
    (loader, parses): (&Rc<MeshLoader>, Option<&Arc<lang::ParseCache>>),
    name: &str,
    location: &ModuleLocation,
    encoding: Encoding,
) -> Option<ModuleInfo> {
    let mut machine = Machine::new(
        loader.clone(),
        vec![root.to_path_buf(), PathBuf::from(VIRTUAL_ROOT)],
        Limits {
            max_steps: Some(MAX_STEPS / 10),
            ..Limits::default()
        },
    );
    if let Some(parses) = parses {
        machine = machine.with_parse_cache(parses.clone());
    }
    let (prelude, _) = prelude(root, &mut machine);
    let no_nodes = std::collections::BTreeSet::new();
    let context = CheckContext {
        node_names: &[],
        failed_nodes: &no_nodes,
    };
    let mut diagnostics = Vec::new();
    let module = load_module(
        &mut machine,
        name,
        location,
        &prelude,
        &context,
        &mut diagnostics,
    )
    .ok()
    .flatten()?;
    let mut options = BTreeMap::new();
    for (option_name, option) in &module.options {
        let default = option.default.as_ref().and_then(|value| {
            let printed = machine.print_strict(value).ok()?;
            let mut text = String::from_utf8_lossy(&printed).into_owned();
            if text.len() > DEFAULT_LENGTH {
                let mut cut = DEFAULT_LENGTH;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push_str(" …");
            }
            Some(text)
        });
        let declared = real_path(&machine.sources, option.span.file).and_then(|path| {
            let file = machine.sources.get(option.span.file)?;
            let index = LineIndex::new(&file.text);
            let range = index.range(
                option.span.start as usize,
                option.span.end as usize,
                encoding,
            );
            Some(Location::new(Url::from_file_path(path).ok()?, range))
        });
        options.insert(
            option_name.clone(),
            OptionInfo {
                type_name: option.option_type.name(),
                type_description: option.option_type.describe(),
                default,
                description: option.description.clone(),
                declared,
            },
        );
    }
    Some(ModuleInfo {
        name: name.to_string(),
        file: (location.origin == Origin::Repository).then(|| location.path.clone()),
        description: module.description.clone(),
        options,
    })
}

/// The start of a file, for going to a module.
pub fn file_start(path: &Path) -> Option<Location> {
    Some(Location::new(
        Url::from_file_path(path).ok()?,
        Range::new(Position::new(0, 0), Position::new(0, 0)),
    ))
}
