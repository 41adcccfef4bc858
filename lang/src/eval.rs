//! The lazy evaluator: evaluates compiled code to weak head normal form, forces
//! thunks at most once (blackholing to detect infinite recursion), and applies
//! functions. Every recursive step is counted so that no program can overflow the
//! stack; files come only through the [`Loader`], never from the filesystem directly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use crate::builtins;
use crate::compile::{self, GlobalScope, Ir};
use crate::diagnostic::Diagnostic;
use crate::loader::Loader;
use crate::name::Name;
use crate::parser;
use crate::span::{FileId, Span};
use crate::symbols::SymbolOrder;
use crate::value::{Bytes, EnvFrame, EvalResult, Value};

mod attr_path;
mod call;
mod coerce;
mod compare;
mod errors;
mod expr;
mod files;
mod force;
mod limits;
mod operators;
mod prefetch;
mod pure;
mod reclaim;
mod session;
mod span_names;
pub use attr_path::parse_attr_path;
pub(crate) use coerce::push_decimal;
pub use errors::{error, opaque_error, opaque_interpolated, type_error};
use errors::{lambda_name, overflow, unreachable_done, unreachable_logic};
use force::fresh_slot;
pub(crate) use force::holds_evaluated_secret;
pub use limits::{DEFAULT_MAX_MEMORY, DEFAULT_MAX_STEPS, Limits, describe_bytes};
pub(crate) use operators::as_float;
pub(crate) use pure::{Pure1, Pure2};
pub use reclaim::RECLAIM_BATCH;

/// A file's syntax tree, with its names in the order interning it meets them when
/// the parse cache keeps it, and whether it was skimmed (then it is compiled with
/// its text).
type ParsedFile = (Arc<crate::syntax::Expr>, Option<Arc<[Name]>>, bool);

/// Depth limit; [`EVAL_STACK_SIZE`] is sized so that this depth fits.
pub const DEFAULT_MAX_DEPTH: usize = 200_000;

/// Stack size for a thread that evaluates (see [`run_with_stack`]).
pub const EVAL_STACK_SIZE: usize = 2 << 30;

/// Runs `work` on a thread with a stack large enough for [`DEFAULT_MAX_DEPTH`].
/// Everything the evaluation built is dropped on that thread too. E059 when no such
/// thread can be started (a limit on address space below the stack's 2 GiB): `work`
/// is not run, as its depth bound assumes that stack.
pub fn run_with_stack<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Box<Diagnostic>> {
    let handle = std::thread::Builder::new()
        .name("mesh-eval".into())
        .stack_size(EVAL_STACK_SIZE)
        .spawn(work);
    match handle {
        Ok(handle) => match handle.join() {
            Ok(value) => Ok(value),
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(error) => Err(Box::new(Diagnostic::no_thread(format!(
            "cannot start the evaluation thread: {error}"
        )))),
    }
}

struct ForceFrame {
    thunk: usize,
    span: Span,
}

/// The names every file sees: `builtins`, `true`, `map`, the `__` forms.
pub struct Globals {
    names: HashMap<Bytes, Value>,
}

impl Globals {
    pub(crate) fn new(names: HashMap<Bytes, Value>) -> Globals {
        Globals { names }
    }
}

impl GlobalScope for Globals {
    fn global(&self, name: &[u8]) -> Option<Value> {
        self.names.get(name).cloned()
    }

    fn global_names(&self) -> Vec<String> {
        self.names
            .keys()
            .filter(|name| !name.starts_with(b"__"))
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect()
    }
}

/// One evaluation session: sources seen, files imported, limits, caches.
pub struct Machine {
    pub sources: crate::span::Sources,
    loader: Rc<dyn Loader>,
    /// Directories `import` and `readFile` may reach (absolute, canonical).
    allowed_roots: Vec<Vec<u8>>,
    globals: Rc<Globals>,
    file_cache: HashMap<Vec<u8>, Value>,
    depth: usize,
    limits: Limits,
    steps: u64,
    /// The step count at which [`Machine::enter`] next looks at the budget and the
    /// cancel flag (0: at the next step).
    step_check: u64,
    /// Bytes counted against [`Limits::max_memory`] so far.
    memory: u64,
    force_stack: Vec<ForceFrame>,
    binding_names: span_names::SpanNames,
    reference_names: span_names::SpanNames,
    /// Files being imported right now (an import of one of them is a cycle).
    importing: Vec<Vec<u8>>,
    pub(crate) regex_cache: HashMap<Vec<u8>, Rc<builtins::regex::Compiled>>,
    /// Nix's symbol order, which decides the order slots are filled in.
    pub(crate) symbols: SymbolOrder,
    /// Messages of `builtins.trace` and `builtins.warn` with where they were
    /// called, in order; the host decides where they go.
    pub traces: Vec<crate::builtins::Traced>,
    /// How a position's file is named to the program (`unsafeGetAttrPos`,
    /// `__curPos`): a file whose name starts with a prefix here is named with its
    /// replacement instead (a host whose values must not hold absolute paths names
    /// its files relative to its root). Empty: as the source is named, as Nix does.
    pub(crate) position_names: Vec<(String, String)>,
    /// Trees of files parsed by earlier compilations, if the host keeps them.
    parses: Option<std::sync::Arc<crate::ParseCache>>,
    /// Files named by path literals, read and parsed ahead, if the host asked.
    prefetch: Option<prefetch::Prefetch>,
    /// Set by the host to stop the evaluation early (an editor's stale compilation);
    /// looked at every [`CANCEL_CHECK_STEPS`] steps.
    cancelled: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Frames of recursive scopes, for [`Machine::reclaim`].
    reclaim: reclaim::Frames,
    /// The buffer strings are built in ([`Machine::string_buffer`]), kept between
    /// strings so that making one allocates only the string itself.
    string_buffer: Vec<u8>,
}

impl Machine {
    pub fn new(loader: Rc<dyn Loader>, allowed_roots: Vec<PathBuf>, limits: Limits) -> Machine {
        let globals = Rc::new(builtins::globals());
        Machine {
            sources: crate::span::Sources::new(),
            loader,
            allowed_roots: allowed_roots
                .iter()
                .map(|root| compile::canonical_path(&compile::path_bytes(root)))
                .collect(),
            globals,
            file_cache: HashMap::new(),
            depth: 0,
            limits,
            steps: 0,
            step_check: 0,
            memory: 0,
            force_stack: Vec::new(),
            binding_names: span_names::SpanNames::default(),
            reference_names: span_names::SpanNames::default(),
            importing: Vec::new(),
            regex_cache: HashMap::new(),
            symbols: SymbolOrder::new(),
            traces: Vec::new(),
            position_names: Vec::new(),
            parses: None,
            prefetch: None,
            cancelled: None,
            reclaim: reclaim::Frames::default(),
            string_buffer: Vec::new(),
        }
    }

    /// Reuses (and keeps) syntax trees through `cache`: a file whose bytes and file
    /// id are unchanged is not parsed again.
    pub fn with_parse_cache(mut self, cache: std::sync::Arc<crate::ParseCache>) -> Machine {
        self.parses = Some(cache);
        self
    }

    /// Reads the `.nix` files a compiled file's path literals name when it is
    /// compiled, and parses them on a thread of their own, so that importing them
    /// finds them parsed (see `prefetch`): for an evaluation that uses two cores.
    /// Not with a parse cache, which shares trees between evaluators instead (a
    /// file read ahead is added to the sources before its import, so its id would
    /// not be the one other evaluators give it).
    pub fn with_prefetch(mut self) -> Machine {
        if self.parses.is_none() {
            self.prefetch = Some(prefetch::Prefetch::new());
        }
        self
    }

    /// Names the files of positions as the field `position_names` says: a name
    /// starting with a prefix of `names` has it replaced (the first that matches).
    pub fn with_position_names(mut self, names: Vec<(String, String)>) -> Machine {
        self.position_names = names;
        self
    }

    /// Ends the evaluation (with E043, which the host throws away) soon after `flag`
    /// is set, instead of at its end.
    pub fn with_cancel_flag(
        mut self,
        flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> Machine {
        self.cancelled = Some(flag);
        self
    }

    /// A global name (`builtins`, `map`, `__add`), as every file sees it.
    pub fn global(&self, name: &str) -> Option<Value> {
        self.globals.global(name.as_bytes())
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Parses and compiles a source text, returning all syntax and scope errors.
    pub fn compile_source(
        &mut self,
        name: &str,
        path: Option<PathBuf>,
        text: std::sync::Arc<[u8]>,
        base_directory: &Path,
    ) -> Result<(FileId, Rc<Ir>), Vec<Diagnostic>> {
        let file = self.sources.add(name.to_string(), path, text.clone());
        let parsed = self.parse_cached(file, text.clone())?;
        self.compile_parsed(file, parsed, text, base_directory)
    }

    /// Compiles the tree of file `file` (of `text`).
    fn compile_parsed(
        &mut self,
        file: FileId,
        (expr, names, skimmed): ParsedFile,
        text: std::sync::Arc<[u8]>,
        base_directory: &Path,
    ) -> Result<(FileId, Rc<Ir>), Vec<Diagnostic>> {
        match names {
            Some(names) => {
                // parsed on another thread, maybe: its names are found here unlocked
                crate::name::Name::keep_all(&names);
                self.symbols.intern_names(&names)
            }
            None => self.symbols.intern_file(&expr),
        }
        let compiled = compile::compile_file(
            &expr,
            skimmed.then_some(text),
            base_directory,
            &*self.globals,
            &self.symbols,
        );
        // the syntax tree can be deep: dropped here, on the evaluation stack (a cached
        // tree lives on in the cache, which its owner sweeps on such a stack too), or
        // by the parsing thread, on a stack as large
        match self.prefetch.as_mut() {
            Some(prefetch) => prefetch.discard(expr),
            None => drop(expr),
        }
        if !compiled.errors.is_empty() {
            return Err(compiled.errors);
        }
        self.binding_names.extend(compiled.binding_names);
        self.reference_names.extend(compiled.reference_names);
        self.read_ahead(compiled.nix_paths);
        Ok((file, compiled.ir))
    }

    /// Evaluates a source text to weak head normal form.
    pub fn eval_source(
        &mut self,
        name: &str,
        path: Option<PathBuf>,
        text: std::sync::Arc<[u8]>,
        base_directory: &Path,
    ) -> Result<Value, Vec<Diagnostic>> {
        let (_, ir) = self.compile_source(name, path, text, base_directory)?;
        // the result lands in a new value slot, as in Nix
        self.eval_root(&ir)
            .map(fresh_slot)
            .map_err(|error| vec![*error])
    }

    pub fn eval_root(&mut self, ir: &Rc<Ir>) -> EvalResult<Value> {
        let env = EnvFrame::empty(None, 0);
        self.eval(ir, &env)
    }

    /// The syntax tree of the file at `path`, read as `import` reads it and added to
    /// the sources (taken from the parse cache when it has the same text as the same
    /// file), not compiled or evaluated; with the file's id. `Err` holds the syntax
    /// errors, or why the file cannot be read. A cache that skims gives a file of
    /// plain data skimmed: its sets of some size below the top two are hollow.
    pub fn parse_file(
        &mut self,
        path: &Path,
    ) -> Result<(FileId, std::sync::Arc<crate::syntax::Expr>), Vec<Diagnostic>> {
        let bytes = compile::canonical_path(&compile::path_bytes(path));
        let text = self
            .read_source(&bytes, Span::default(), "import")
            .map_err(|error| vec![*error])?;
        let file_path = compile::host_path(&bytes);
        let name = file_path.display().to_string();
        let file = self.sources.add(name, Some(file_path), text.clone());
        Ok((file, self.parse_cached(file, text)?.0))
    }

    /// The tree of `text` as file `file`: the parse cache's when it has it, else
    /// parsed (and kept there, with its names in the order interning it meets them,
    /// which come with it when it is kept); `Err` holds the syntax errors.
    fn parse_cached(
        &self,
        file: FileId,
        text: std::sync::Arc<[u8]>,
    ) -> Result<ParsedFile, Vec<Diagnostic>> {
        if let Some((expr, names, skimmed)) = self
            .parses
            .as_ref()
            .and_then(|cache| cache.get(file, &text))
        {
            return Ok((expr, Some(names), skimmed));
        }
        if let Some(cache) = self.parses.as_ref().filter(|cache| cache.skims())
            && let Some(skimmed) = crate::skim::skim(&text, file)
        {
            let expr = Arc::new(skimmed.expr);
            let names: Arc<[Name]> = skimmed.names.into();
            cache.insert(file, text, expr.clone(), names.clone(), true);
            return Ok((expr, Some(names), true));
        }
        let parsed = parser::parse(&text, file);
        if !parsed.errors.is_empty() {
            return Err(parsed.errors);
        }
        let expr = std::sync::Arc::new(parsed.expr);
        let Some(cache) = &self.parses else {
            return Ok((expr, None, false));
        };
        let names: Arc<[Name]> = crate::symbols::first_mentions(&expr).into();
        cache.insert(file, text, expr.clone(), names.clone(), false);
        Ok((expr, Some(names), false))
    }

    /// Evaluates a file as `import` does (cached per path).
    pub fn eval_file(&mut self, path: &Path) -> Result<Value, Vec<Diagnostic>> {
        self.eval_file_at(path, Span::default())
    }

    /// [`Machine::eval_file`] of a file named at `span` (an interactive session's
    /// `:l FILE`): an error reading it is reported there.
    pub fn eval_file_at(&mut self, path: &Path, span: Span) -> Result<Value, Vec<Diagnostic>> {
        let bytes = compile::canonical_path(&compile::path_bytes(path));
        // the file asked for reports all its syntax and scope errors at once
        self.import_path_all_errors(&bytes, span).map(fresh_slot)
    }
}
