//! The lazy evaluator: evaluates compiled code to weak head normal form, forces
//! thunks at most once (blackholing to detect infinite recursion), and applies
//! functions. Every recursive step is counted so that no program can overflow the
//! stack; files come only through the [`Loader`], never from the filesystem directly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::builtins;
use crate::codes;
use crate::compile::{
    self, AttrsIr, GlobalScope, Ir, IrAttrName, IrKind, LambdaIr, Operator, ParamIr,
};
use crate::diagnostic::{Diagnostic, Label, did_you_mean};
use crate::loader::{FileKind, Loader};
use crate::parser;
use crate::span::{FileId, Span};
use crate::symbols::SymbolOrder;
use crate::value::{
    Attr, Attrs, Bytes, Closure, Env, EnvFrame, EvalResult, PrimFunction, PrimOp, PrimOpApp, Thunk,
    ThunkState, Value, same_object,
};

mod limits;
mod reclaim;
mod session;
pub use limits::{DEFAULT_MAX_MEMORY, DEFAULT_MAX_STEPS, Limits, describe_bytes};
pub use reclaim::RECLAIM_BATCH;

/// Depth limit; [`EVAL_STACK_SIZE`] is sized so that this depth fits.
pub const DEFAULT_MAX_DEPTH: usize = 200_000;

/// Stack size for a thread that evaluates (see [`run_with_stack`]).
pub const EVAL_STACK_SIZE: usize = 2 << 30;

/// Runs `work` on a thread with a stack large enough for [`DEFAULT_MAX_DEPTH`].
/// Everything the evaluation built is dropped on that thread too.
pub fn run_with_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = std::thread::Builder::new()
        .name("mesh-eval".into())
        .stack_size(EVAL_STACK_SIZE)
        .spawn(work);
    match handle {
        Ok(handle) => match handle.join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(error) => panic!("cannot start the evaluation thread: {error}"),
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
    /// Bytes counted against [`Limits::max_memory`] so far.
    memory: u64,
    force_stack: Vec<ForceFrame>,
    binding_names: HashMap<Span, Bytes>,
    reference_names: HashMap<Span, Bytes>,
    /// Files being imported right now (an import of one of them is a cycle).
    importing: Vec<Vec<u8>>,
    pub(crate) regex_cache: HashMap<Vec<u8>, Rc<builtins::regex::Compiled>>,
    /// Nix's symbol order, which decides the order slots are filled in.
    symbols: SymbolOrder,
    /// Messages of `builtins.trace`, in order; the host decides where they go.
    pub traces: Vec<String>,
    /// Messages of `builtins.warn`, in the order they were given.
    pub warnings: Vec<String>,
    /// Trees of files parsed by earlier compilations, if the host keeps them.
    parses: Option<std::sync::Arc<crate::ParseCache>>,
    /// Set by the host to stop the evaluation early (an editor's stale compilation);
    /// looked at every [`CANCEL_CHECK_STEPS`] steps.
    cancelled: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Frames of recursive scopes, for [`Machine::reclaim`].
    reclaim: reclaim::Frames,
}

pub fn error(
    code: codes::Code,
    message: impl Into<String>,
    span: Span,
    label: &str,
    help: impl Into<String>,
) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(code, message)
            .with_primary(span, label)
            .with_help(help),
    )
}

pub fn type_error(expected: &str, found: &Value, span: Span, context: &str) -> Box<Diagnostic> {
    let message = if context.is_empty() {
        format!("expected {expected}, found {}", found.describe_type())
    } else {
        format!(
            "{context}: expected {expected}, found {}",
            found.describe_type()
        )
    };
    if let Value::Opaque(_) = found {
        return opaque_error(span);
    }
    error(
        codes::TYPE_MISMATCH,
        message,
        span,
        &format!("this is {}", found.describe_type()),
        format!("give {expected} here"),
    )
}

pub fn opaque_error(span: Span) -> Box<Diagnostic> {
    error(
        codes::OPAQUE_MISUSE,
        "a secret can only be given to a shape",
        span,
        "a secret is used here",
        "pass the secret to a shape constructor such as `mesh.secret`; it cannot be printed, compared, interpolated or converted",
    )
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
            memory: 0,
            force_stack: Vec::new(),
            binding_names: HashMap::new(),
            reference_names: HashMap::new(),
            importing: Vec::new(),
            regex_cache: HashMap::new(),
            symbols: SymbolOrder::new(),
            traces: Vec::new(),
            warnings: Vec::new(),
            parses: None,
            cancelled: None,
            reclaim: reclaim::Frames::default(),
        }
    }

    /// Reuses (and keeps) syntax trees through `cache`: a file whose bytes and file
    /// id are unchanged is not parsed again.
    pub fn with_parse_cache(mut self, cache: std::sync::Arc<crate::ParseCache>) -> Machine {
        self.parses = Some(cache);
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
        let cached = self
            .parses
            .as_ref()
            .and_then(|cache| cache.get(file, &text));
        let expr = match cached {
            Some(expr) => expr,
            None => {
                let parsed = parser::parse(&text, file);
                if !parsed.errors.is_empty() {
                    return Err(parsed.errors);
                }
                let expr = std::sync::Arc::new(parsed.expr);
                if let Some(cache) = &self.parses {
                    cache.insert(file, text.clone(), expr.clone());
                }
                expr
            }
        };
        self.symbols.intern_file(&expr);
        let compiled = compile::compile(&expr, base_directory, &*self.globals, &self.symbols);
        // the syntax tree can be deep: drop it here, on the evaluation stack (a cached
        // tree lives on in the cache, which its owner sweeps on such a stack too)
        drop(expr);
        if !compiled.errors.is_empty() {
            return Err(compiled.errors);
        }
        self.binding_names.extend(compiled.binding_names);
        self.reference_names.extend(compiled.reference_names);
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

    /// Evaluates a file as `import` does (cached per path).
    pub fn eval_file(&mut self, path: &Path) -> Result<Value, Vec<Diagnostic>> {
        let bytes = compile::canonical_path(&compile::path_bytes(path));
        // the file asked for reports all its syntax and scope errors at once
        self.import_path_all_errors(&bytes, Span::default())
            .map(fresh_slot)
    }

    // ---- files ----------------------------------------------------------------

    pub fn check_allowed(&self, path: &[u8], span: Span, what: &str) -> EvalResult<PathBuf> {
        let allowed = self.allowed_roots.iter().any(|root| {
            path == root.as_slice()
                || (path.starts_with(root)
                    && (root.ends_with(b"/") || path.get(root.len()) == Some(&b'/')))
        });
        let text = String::from_utf8_lossy(path).into_owned();
        if !allowed {
            return Err(error(
                codes::OUTSIDE_REPOSITORY,
                format!("{what} of `{text}`, which is outside the repository"),
                span,
                "reaches outside the repository",
                "evaluation may only read files inside the repository (and the standard module library); copy the file into the repository",
            ));
        }
        Ok(PathBuf::from(text))
    }

    pub(crate) fn is_allowed(&self, path: &[u8]) -> bool {
        self.allowed_roots.iter().any(|root| {
            path == root.as_slice()
                || (path.starts_with(root)
                    && (root.ends_with(b"/") || path.get(root.len()) == Some(&b'/')))
        })
    }

    /// Whether a path written as a string reaches a file the way the operating
    /// system resolves it (Nix 2.8 hands such strings to the system as they are):
    /// `.`, `..` and a trailing `/` need a directory before them, so `"file/"` and
    /// `"missing/.."` lead nowhere even though their canonical forms exist.
    /// Directories outside the repository are not probed.
    pub(crate) fn raw_path_resolves(&self, raw: &[u8]) -> bool {
        let is_directory = |path: &[u8]| {
            let path = if path.is_empty() { &b"/"[..] } else { path };
            if !self.is_allowed(path) {
                return true;
            }
            let path = PathBuf::from(String::from_utf8_lossy(path).into_owned());
            self.loader.kind(&path) == Some(FileKind::Directory)
        };
        let mut prefix: Vec<u8> = Vec::new();
        for component in raw.split(|byte| *byte == b'/') {
            match component {
                b"" => {}
                b"." => {
                    if !is_directory(&prefix) {
                        return false;
                    }
                }
                b".." => {
                    if !is_directory(&prefix) {
                        return false;
                    }
                    let cut = prefix.iter().rposition(|byte| *byte == b'/').unwrap_or(0);
                    prefix.truncate(cut);
                }
                name => {
                    prefix.push(b'/');
                    prefix.extend_from_slice(name);
                }
            }
        }
        !(raw.len() > 1 && raw.ends_with(b"/")) || is_directory(&prefix)
    }

    pub(crate) fn loader(&self) -> Rc<dyn Loader> {
        self.loader.clone()
    }

    pub fn read_file(&mut self, path: &[u8], span: Span, what: &str) -> EvalResult<Vec<u8>> {
        let file_path = self.check_allowed(path, span, what)?;
        self.loader.read(&file_path).map_err(|io_error| {
            error(
                codes::FILE_UNREADABLE,
                format!("cannot read `{}`: {io_error}", file_path.display()),
                span,
                "read here",
                "check that the file exists and is readable",
            )
        })
    }

    pub(crate) fn import_path(&mut self, path: &[u8], span: Span) -> EvalResult<Value> {
        self.import_path_all_errors(path, span)
            .map_err(|mut errors| {
                let count = errors.len();
                let mut first = Box::new(errors.remove(0));
                if count > 1 {
                    first.message = format!(
                        "{} (and {} more errors in this file)",
                        first.message,
                        count - 1
                    );
                }
                first
            })
    }

    fn import_path_all_errors(
        &mut self,
        path: &[u8],
        span: Span,
    ) -> Result<Value, Vec<Diagnostic>> {
        let mut path = path.to_vec();
        let file_path = self
            .check_allowed(&path, span, "import")
            .map_err(|error| vec![*error])?;
        if self.loader.kind(&file_path) == Some(FileKind::Directory) {
            path.extend_from_slice(b"/default.nix");
        }
        if let Some(value) = self.file_cache.get(&path) {
            return Ok(value.clone());
        }
        if self.importing.contains(&path) {
            return Err(vec![self.import_cycle(&path, span)]);
        }
        let text = self
            .read_file(&path, span, "import")
            .map_err(|error| vec![*error])?;
        let file_path = PathBuf::from(String::from_utf8_lossy(&path).into_owned());
        let base = file_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        let name = file_path.display().to_string();
        let (_, ir) =
            match self.compile_source(&name, Some(file_path), std::sync::Arc::from(text), &base) {
                Ok(compiled) => compiled,
                Err(mut errors) => {
                    if span != Span::default() {
                        for error in &mut errors {
                            error.trace.push(Label::new(span, "imported here"));
                        }
                    }
                    return Err(errors);
                }
            };
        self.importing.push(path.clone());
        let value = self.eval_root(&ir);
        self.importing.pop();
        let value = value.map_err(|error| vec![*error])?;
        self.file_cache.insert(path, value.clone());
        Ok(value)
    }

    fn import_cycle(&self, path: &[u8], span: Span) -> Diagnostic {
        let start = self
            .importing
            .iter()
            .position(|file| file == path)
            .unwrap_or(0);
        let names: Vec<String> = self.importing[start..]
            .iter()
            .map(|file| {
                let text = String::from_utf8_lossy(file).into_owned();
                let name = text.rsplit('/').next().unwrap_or(&text).to_string();
                format!("`{name}`")
            })
            .collect();
        let message = match names.as_slice() {
            [one] => format!("infinite recursion: {one} imports itself"),
            many => format!(
                "infinite recursion: imports form a cycle: {} -> {}",
                many.join(" -> "),
                many[0]
            ),
        };
        Diagnostic::error(codes::INFINITE_RECURSION, message)
            .with_primary(span, "this import is already being evaluated")
            .with_help("a file's value cannot depend on importing itself; move the shared part into a third file")
    }

    // ---- forcing --------------------------------------------------------------

    /// Forces a value to weak head normal form.
    #[inline]
    pub fn force(&mut self, value: &Value, span: Span) -> EvalResult<Value> {
        match value {
            Value::Thunk(thunk) => self.force_thunk(thunk, span),
            other => Ok(other.clone()),
        }
    }

    pub fn force_thunk(&mut self, thunk: &Rc<Thunk>, span: Span) -> EvalResult<Value> {
        if let ThunkState::Done(value) = &*thunk.state.borrow() {
            return Ok(value.clone());
        }
        let state = thunk.state.replace(ThunkState::Blackhole);
        let address = Rc::as_ptr(thunk) as *const u8 as usize;
        let frame_span = match &state {
            ThunkState::Done(_) => return unreachable_done(),
            ThunkState::Blackhole => return Err(self.infinite_recursion(address, span)),
            ThunkState::Suspended { code, .. } => code.span,
            ThunkState::Apply1 { span, .. } | ThunkState::Apply { span, .. } => *span,
        };
        self.force_stack.push(ForceFrame {
            thunk: address,
            span: frame_span,
        });
        let result = match &state {
            ThunkState::Suspended { code, env } => self.eval(code, env),
            ThunkState::Apply1 {
                function,
                argument,
                span,
            } => self.call(function.clone(), argument.clone(), *span),
            ThunkState::Apply {
                function,
                arguments,
                span,
            } => self.apply_all(function.clone(), arguments, *span),
            ThunkState::Done(_) | ThunkState::Blackhole => unreachable_done(),
        };
        self.force_stack.pop();
        match result {
            Ok(value) => {
                let value = fresh_slot(value);
                *thunk.state.borrow_mut() = ThunkState::Done(value.clone());
                Ok(value)
            }
            Err(error) => {
                // left as it was: forcing it again evaluates it again
                *thunk.state.borrow_mut() = state;
                Err(error)
            }
        }
    }

    fn apply_all(&mut self, function: Value, arguments: &[Value], span: Span) -> EvalResult<Value> {
        if arguments.is_empty() {
            // a refused constant: a primop of no arguments
            if let Value::PrimOp(primop) = &function {
                return self.call_primop(primop, &[], span);
            }
            return self.force(&function, span);
        }
        if let [first, second] = arguments {
            return self.call_curried(&function, first.clone(), second.clone(), span);
        }
        let mut result = function;
        for argument in arguments {
            result = self.call(result, argument.clone(), span)?;
        }
        Ok(result)
    }

    fn infinite_recursion(&self, address: usize, span: Span) -> Box<Diagnostic> {
        let start = self
            .force_stack
            .iter()
            .rposition(|frame| frame.thunk == address);
        let cycle: Vec<&ForceFrame> = match start {
            Some(index) => self.force_stack[index..].iter().collect(),
            None => Vec::new(),
        };
        let names: Vec<String> = cycle
            .iter()
            .filter_map(|frame| self.binding_names.get(&frame.span))
            .map(|name| format!("`{}`", String::from_utf8_lossy(name)))
            .collect();
        let mut names = names;
        // the reference that closed the cycle, when it reached the first binding
        // through another name (`let a = b; b = a;`)
        if let Some(name) = self.reference_names.get(&span) {
            names.push(format!("`{}`", String::from_utf8_lossy(name)));
        }
        let mut deduplicated: Vec<String> = Vec::new();
        for name in names {
            if deduplicated.last() != Some(&name) {
                deduplicated.push(name);
            }
        }
        if deduplicated.len() > 1 && deduplicated.first() == deduplicated.last() {
            deduplicated.pop();
        }
        let message = match deduplicated.as_slice() {
            [] => "infinite recursion: a value depends on itself".to_string(),
            [one] => format!("infinite recursion: {one} depends on itself"),
            many => format!("infinite recursion: {} -> {}", many.join(" -> "), many[0]),
        };
        let primary = cycle.first().map(|frame| frame.span).unwrap_or(span);
        let mut diagnostic = Diagnostic::error(codes::INFINITE_RECURSION, message)
            .with_primary(primary, "evaluating this needs its own value")
            .with_help(
                "break the cycle: one of these bindings must be computable without the others",
            );
        for frame in cycle.iter().skip(1) {
            let label = match self.binding_names.get(&frame.span) {
                Some(name) => format!("`{}` is part of the cycle", String::from_utf8_lossy(name)),
                None => "part of the cycle".to_string(),
            };
            diagnostic = diagnostic.with_secondary(frame.span, label);
        }
        if span != primary {
            diagnostic = diagnostic.with_secondary(span, "and is needed again here");
        }
        Box::new(diagnostic)
    }

    // ---- evaluation -----------------------------------------------------------

    /// A value to store without evaluating it (Nix's `maybeThunk`): constants and
    /// variables are shared, everything else is suspended.
    pub(crate) fn delay(&mut self, ir: &Rc<Ir>, env: &Env) -> Value {
        match &ir.kind {
            IrKind::Const(value) => value.clone(),
            IrKind::Var { up, slot } => match lookup(env, *up, *slot) {
                Some(value) => value,
                None => Thunk::suspended(ir.clone(), env.clone()),
            },
            IrKind::Lambda(lambda) => Value::Lambda(Rc::new(Closure {
                lambda: lambda.clone(),
                env: env.clone(),
            })),
            IrKind::WithVar { name, withs } => {
                for up in withs.iter() {
                    let Some(namespace) = lookup(env, *up, 0) else {
                        break;
                    };
                    let namespace = match namespace {
                        Value::Thunk(thunk) => match thunk.value() {
                            Some(value) => value,
                            None => break,
                        },
                        other => other,
                    };
                    match namespace {
                        Value::Attrs(attrs) => {
                            if let Some(value) = attrs.get(name) {
                                return value.clone();
                            }
                        }
                        _ => break,
                    }
                }
                Thunk::suspended(ir.clone(), env.clone())
            }
            _ => Thunk::suspended(ir.clone(), env.clone()),
        }
    }

    pub fn eval(&mut self, ir: &Ir, env: &Env) -> EvalResult<Value> {
        self.enter(ir.span)?;
        let result = self.eval_inner(ir, env);
        self.leave();
        result
    }

    fn eval_inner(&mut self, ir: &Ir, env: &Env) -> EvalResult<Value> {
        match &ir.kind {
            IrKind::Const(value) => Ok(value.clone()),
            // borrowed, not cloned: a thunk is forced in place, without a reference
            // count up and down per variable
            IrKind::Var { up, slot } => match lookup_ref(env, *up, *slot).as_deref() {
                Some(Value::Thunk(thunk)) => self.force_thunk(thunk, ir.span),
                Some(value) => Ok(value.clone()),
                None => Err(self.infinite_recursion(usize::MAX, ir.span)),
            },
            IrKind::WithVar { name, withs } => self.with_lookup(name, withs, env, ir.span),
            IrKind::Select {
                expr,
                path,
                default,
            } => self.select(expr, path, default.as_ref(), env, ir.span),
            IrKind::HasAttr { expr, path } => {
                // as Nix: each set on the path is forced, the attribute found last is not
                let mut current = self.eval(expr, env)?;
                for (index, name) in path.iter().enumerate() {
                    if index > 0 {
                        current = self.force(&current, ir.span)?;
                    }
                    let name = self.attr_name(name, env)?;
                    let Value::Attrs(attrs) = &current else {
                        return Ok(Value::Bool(false));
                    };
                    match attrs.get(&name) {
                        Some(value) => current = value.clone(),
                        None => return Ok(Value::Bool(false)),
                    }
                }
                Ok(Value::Bool(true))
            }
            IrKind::Attrs(attrs) => self.attrs(attrs, env),
            IrKind::List(items) => {
                let values: Vec<Value> = items.iter().map(|item| self.delay(item, env)).collect();
                Ok(Value::List(Rc::from(values)))
            }
            IrKind::Let {
                bindings,
                order,
                body,
            } => {
                let frame = EnvFrame::empty(Some(env.clone()), bindings.len());
                self.reclaim.record(&frame);
                for &slot in order.iter() {
                    let binding = &bindings[slot as usize];
                    let scope = if binding.outer { env } else { &frame };
                    let value = self.delay(&binding.value, scope);
                    frame.slots.set(slot as usize, value);
                }
                self.eval(body, &frame)
            }
            IrKind::With { namespace, body } => {
                let namespace = self.delay(namespace, env);
                let frame = EnvFrame::one(Some(env.clone()), namespace);
                self.eval(body, &frame)
            }
            IrKind::If {
                condition,
                then,
                otherwise,
            } => {
                let condition_value = self.eval(condition, env)?;
                match condition_value {
                    Value::Bool(true) => self.eval(then, env),
                    Value::Bool(false) => self.eval(otherwise, env),
                    other => Err(type_error(
                        "a Boolean",
                        &other,
                        condition.span,
                        "the condition of `if`",
                    )),
                }
            }
            IrKind::Assert { condition, body } => {
                let condition_value = self.eval(condition, env)?;
                match condition_value {
                    Value::Bool(true) => self.eval(body, env),
                    Value::Bool(false) => Err(error(
                        codes::ASSERTION_FAILED,
                        "assertion failed",
                        condition.span,
                        "this is false",
                        "the assertion states a condition the inputs must meet; fix the inputs or the condition",
                    )),
                    other => Err(type_error(
                        "a Boolean",
                        &other,
                        condition.span,
                        "the condition of `assert`",
                    )),
                }
            }
            IrKind::Lambda(lambda) => Ok(Value::Lambda(Rc::new(Closure {
                lambda: lambda.clone(),
                env: env.clone(),
            }))),
            IrKind::Call {
                function,
                arguments,
            } => {
                let mut result = self.eval(function, env)?;
                for argument in arguments.iter() {
                    let argument = self.delay(argument, env);
                    result = self.call(result, argument, ir.span)?;
                }
                Ok(result)
            }
            IrKind::Not(inner) => match self.eval(inner, env)? {
                Value::Bool(value) => Ok(Value::Bool(!value)),
                other => Err(type_error(
                    "a Boolean",
                    &other,
                    inner.span,
                    "the operand of `!`",
                )),
            },
            IrKind::Binary { op, left, right } => self.binary(*op, left, right, env, ir.span),
            IrKind::Interpolate(parts) => {
                let mut result = Vec::new();
                for part in parts.iter() {
                    let value = self.eval(part, env)?;
                    self.coerce_to_string_into(&value, part.span, false, true, &mut result)?;
                }
                self.make_string(result.len(), ir.span)?;
                Ok(Value::String(Rc::from(result)))
            }
            IrKind::CurrentPosition => Ok(self.position_value(ir.span)),
            IrKind::PathConcat(parts) => {
                let mut result = Vec::new();
                for part in parts.iter() {
                    let value = self.eval(part, env)?;
                    self.coerce_to_string_into(&value, part.span, false, false, &mut result)?;
                }
                Ok(Value::Path(Rc::from(compile::canonical_path(&result))))
            }
        }
    }

    fn with_lookup(
        &mut self,
        name: &Bytes,
        withs: &[u32],
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        let mut searched = Vec::new();
        for up in withs {
            let Some(namespace) = lookup_ref(env, *up, 0) else {
                continue;
            };
            let namespace = self.force(&namespace, span)?;
            let Value::Attrs(attrs) = namespace else {
                return Err(type_error(
                    "a set",
                    &namespace,
                    span,
                    "the namespace of `with`",
                ));
            };
            if let Some(value) = attrs.get(name) {
                return self.force(value, span);
            }
            searched.push(attrs);
        }
        let text = String::from_utf8_lossy(name).into_owned();
        let candidates: Vec<String> = searched
            .iter()
            .flat_map(|attrs| {
                attrs
                    .iter()
                    .map(|a| String::from_utf8_lossy(&a.name).into_owned())
            })
            .collect();
        let help =
            did_you_mean(&text, candidates.iter().map(String::as_str)).unwrap_or_else(|| {
                format!("`{text}` is neither bound here nor an attribute of the `with` namespaces")
            });
        Err(error(
            codes::UNDEFINED_VARIABLE,
            format!("undefined variable `{text}`"),
            span,
            "not bound here nor in any `with` namespace",
            help,
        ))
    }

    pub(crate) fn attr_name(&mut self, name: &IrAttrName, env: &Env) -> EvalResult<Bytes> {
        match name {
            IrAttrName::Static(name) => Ok(name.clone()),
            IrAttrName::Dynamic(expr) => {
                let value = self.eval(expr, env)?;
                match value {
                    Value::String(bytes) => Ok(bytes),
                    other => Err(type_error(
                        "a string",
                        &other,
                        expr.span,
                        "an attribute name",
                    )),
                }
            }
        }
    }

    fn select(
        &mut self,
        expr: &Rc<Ir>,
        path: &[IrAttrName],
        default: Option<&Rc<Ir>>,
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        let mut current = self.eval(expr, env)?;
        let mut current_span = expr.span;
        for (index, name) in path.iter().enumerate() {
            let name = self.attr_name(name, env)?;
            let attrs = match &current {
                Value::Attrs(attrs) => attrs.clone(),
                other => {
                    if let Some(default) = default {
                        return self.eval(default, env);
                    }
                    let text = String::from_utf8_lossy(&name);
                    return Err(type_error(
                        "a set",
                        other,
                        current_span,
                        &format!("cannot select attribute `{text}`"),
                    ));
                }
            };
            match attrs.get(&name) {
                Some(value) => {
                    current = self.force(value, span)?;
                    current_span = span;
                }
                None => {
                    if let Some(default) = default {
                        return self.eval(default, env);
                    }
                    return Err(self.missing_attribute(&attrs, &name, path, index, span));
                }
            }
        }
        Ok(current)
    }

    fn missing_attribute(
        &self,
        attrs: &Attrs,
        name: &[u8],
        path: &[IrAttrName],
        index: usize,
        span: Span,
    ) -> Box<Diagnostic> {
        let text = String::from_utf8_lossy(name).into_owned();
        let shown_path: Vec<String> = path[..=index]
            .iter()
            .map(|name| match name {
                IrAttrName::Static(name) => String::from_utf8_lossy(name).into_owned(),
                IrAttrName::Dynamic(_) => "${...}".to_string(),
            })
            .collect();
        let names: Vec<String> = attrs
            .iter()
            .map(|attr| String::from_utf8_lossy(&attr.name).into_owned())
            .collect();
        let help = did_you_mean(&text, names.iter().map(String::as_str)).unwrap_or_else(|| {
            if names.is_empty() {
                "the set is empty; use `or` to give a default".to_string()
            } else if names.len() <= 8 {
                format!(
                    "the set has {}; use `or` to give a default",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                "use `or` to give a default, or `?` to test for the attribute".to_string()
            }
        });
        let mut diagnostic = Diagnostic::error(
            codes::MISSING_ATTRIBUTE,
            format!("attribute `{}` missing", shown_path.join(".")),
        )
        .with_primary(span, format!("the set has no `{text}`"))
        .with_help(help);
        if let Some(defined) = attrs.iter().find_map(|attr| attr.span) {
            diagnostic = diagnostic.with_secondary(defined, "the set is defined here");
        }
        Box::new(diagnostic)
    }

    fn attrs(&mut self, ir: &AttrsIr, env: &Env) -> EvalResult<Value> {
        let scope = if ir.recursive {
            let frame = EnvFrame::empty(Some(env.clone()), ir.statics.len());
            self.reclaim.record(&frame);
            frame
        } else {
            env.clone()
        };
        let mut entries = Vec::with_capacity(ir.statics.len() + ir.dynamics.len());
        if ir.recursive {
            // the frame is filled in symbol order, as Nix fills it
            let mut values: Vec<Option<Value>> = vec![None; ir.statics.len()];
            for &slot in ir.order.iter() {
                let attr = &ir.statics[slot as usize];
                let value_env = if attr.outer { env } else { &scope };
                let value = self.delay(&attr.value, value_env);
                scope.slots.set(slot as usize, value.clone());
                values[slot as usize] = Some(value);
            }
            for (attr, value) in ir.statics.iter().zip(values) {
                entries.push(Attr {
                    name: attr.name.clone(),
                    value: value.unwrap_or(Value::Null),
                    span: Some(attr.span),
                });
            }
        } else {
            for attr in ir.statics.iter() {
                entries.push(Attr {
                    name: attr.name.clone(),
                    value: self.delay(&attr.value, env),
                    span: Some(attr.span),
                });
            }
        }
        let mut attrs = Attrs::from_sorted(entries);
        for dynamic in ir.dynamics.iter() {
            let name = self.eval(&dynamic.name, &scope)?;
            let name = match name {
                Value::Null => continue,
                Value::String(bytes) => bytes,
                other => {
                    return Err(type_error(
                        "a string",
                        &other,
                        dynamic.name.span,
                        "an attribute name",
                    ));
                }
            };
            if let Some(existing) = attrs.get_attr(&name) {
                let text = String::from_utf8_lossy(&name);
                let mut diagnostic = Diagnostic::error(
                    codes::DUPLICATE_ATTRIBUTE,
                    format!("attribute `{text}` is defined twice"),
                )
                .with_primary(dynamic.name.span, "defined again here")
                .with_help("remove one of the definitions");
                if let Some(first) = existing.span {
                    diagnostic = diagnostic.with_secondary(first, "first defined here");
                }
                return Err(Box::new(diagnostic));
            }
            let value = self.delay(&dynamic.value, &scope);
            attrs.insert(Attr {
                name,
                value,
                span: Some(dynamic.span),
            });
        }
        Ok(Value::Attrs(Rc::new(attrs)))
    }

    // ---- application ----------------------------------------------------------

    /// Applies a function value to one argument.
    pub fn call(&mut self, function: Value, argument: Value, span: Span) -> EvalResult<Value> {
        let function = self.force(&function, span)?;
        match function {
            Value::Lambda(closure) => self.call_lambda(&closure, argument, span),
            Value::PrimOp(primop) => {
                if primop.arity <= 1 {
                    self.call_primop(&primop, &[argument], span)
                } else {
                    Ok(Value::PrimOpApp(Rc::new(PrimOpApp {
                        primop,
                        arguments: vec![argument],
                    })))
                }
            }
            Value::PrimOpApp(partial) => {
                let mut arguments = Vec::with_capacity(partial.arguments.len() + 1);
                arguments.extend(partial.arguments.iter().cloned());
                arguments.push(argument);
                if arguments.len() >= partial.primop.arity {
                    self.call_primop(&partial.primop, &arguments, span)
                } else {
                    Ok(Value::PrimOpApp(Rc::new(PrimOpApp {
                        primop: partial.primop.clone(),
                        arguments,
                    })))
                }
            }
            Value::Attrs(attrs) if attrs.contains(b"__functor") => {
                let functor = attrs.get(b"__functor").cloned().unwrap_or(Value::Null);
                let bound = self.call(functor, Value::Attrs(attrs.clone()), span)?;
                self.call(bound, argument, span)
            }
            other => Err(error(
                codes::NOT_A_FUNCTION,
                format!(
                    "attempt to call {}, which is not a function",
                    other.describe_type()
                ),
                span,
                &format!("this calls {}", other.describe_type()),
                "only functions can be applied to arguments; check the parentheses around the call",
            )),
        }
    }

    pub(crate) fn call_primop(
        &mut self,
        primop: &Rc<PrimOp>,
        arguments: &[Value],
        span: Span,
    ) -> EvalResult<Value> {
        self.enter(span)?;
        let result = match &primop.function {
            PrimFunction::Builtin(function) => function(self, arguments, span),
            PrimFunction::Host(function) => {
                let function = function.clone();
                function(self, arguments, span)
            }
        };
        self.leave();
        result
    }

    fn call_lambda(
        &mut self,
        closure: &Rc<Closure>,
        argument: Value,
        span: Span,
    ) -> EvalResult<Value> {
        self.call_lambda_in(&closure.lambda, &closure.env, argument, span)
    }

    /// Applies `a: b: body` to two arguments (what `foldl'`, `sort` and `mapAttrs`
    /// do for every element) without making the closure `b: body` in between; it
    /// gives what two calls give, as the outer call cannot fail.
    pub(crate) fn call_curried(
        &mut self,
        function: &Value,
        first: Value,
        second: Value,
        span: Span,
    ) -> EvalResult<Value> {
        let function = self.force(function, span)?;
        if let Value::Lambda(closure) = &function
            && let ParamIr::Identifier = closure.lambda.param
            && let IrKind::Lambda(inner) = &closure.lambda.body.kind
        {
            let frame = EnvFrame::one(Some(closure.env.clone()), first);
            return self.call_lambda_in(inner, &frame, second, span);
        }
        let partial = self.call(function, first, span)?;
        self.call(partial, second, span)
    }

    /// Applies the function `lambda` closing over `env` to one argument.
    fn call_lambda_in(
        &mut self,
        lambda: &Rc<LambdaIr>,
        env: &Env,
        argument: Value,
        span: Span,
    ) -> EvalResult<Value> {
        let frame = match &lambda.param {
            ParamIr::Identifier => EnvFrame::one(Some(env.clone()), argument),
            ParamIr::Formals {
                formals,
                ellipsis,
                at,
                order,
            } => {
                let forced = self.force(&argument, span)?;
                let Value::Attrs(attrs) = forced else {
                    return Err(type_error(
                        "a set",
                        &forced,
                        span,
                        &format!("{} takes a set of named arguments", lambda_name(lambda)),
                    ));
                };
                let frame = EnvFrame::empty(Some(env.clone()), lambda.frame_size);
                self.reclaim.record(&frame);
                // as Nix: the `@` name first, then the formals in symbol order
                if *at {
                    frame.slots.set(formals.len(), argument.clone());
                }
                for &slot in order.iter() {
                    let slot = slot as usize;
                    let formal = &formals[slot];
                    match attrs.get(&formal.name) {
                        Some(value) => frame.slots.set(slot, value.clone()),
                        None => match &formal.default {
                            Some(default) => {
                                let value = self.delay(default, &frame);
                                frame.slots.set(slot, value);
                            }
                            None => {
                                let name = String::from_utf8_lossy(&formal.name);
                                return Err(Box::new(
                                    Diagnostic::error(
                                        codes::MISSING_ARGUMENT,
                                        format!("{} called without required argument `{name}`", lambda_name(lambda)),
                                    )
                                    .with_primary(span, "called here")
                                    .with_secondary(formal.span, "the argument is declared here")
                                    .with_help(format!("pass `{name}` in the argument set, or give it a default with `{name} ? value`")),
                                ));
                            }
                        },
                    }
                }
                if !*ellipsis {
                    for attr in attrs.iter() {
                        if !formals.iter().any(|formal| formal.name == attr.name) {
                            let name = String::from_utf8_lossy(&attr.name).into_owned();
                            let names: Vec<String> = formals
                                .iter()
                                .map(|f| String::from_utf8_lossy(&f.name).into_owned())
                                .collect();
                            let help = did_you_mean(&name, names.iter().map(String::as_str))
                                .unwrap_or_else(|| {
                                    format!(
                                        "it takes {}; add `...` to its arguments to accept others",
                                        if names.is_empty() {
                                            "no arguments".to_string()
                                        } else {
                                            names
                                                .iter()
                                                .map(|n| format!("`{n}`"))
                                                .collect::<Vec<_>>()
                                                .join(", ")
                                        }
                                    )
                                });
                            let mut diagnostic = Diagnostic::error(
                                codes::UNEXPECTED_ARGUMENT,
                                format!(
                                    "{} called with unexpected argument `{name}`",
                                    lambda_name(lambda)
                                ),
                            )
                            .with_primary(span, "called here")
                            .with_help(help);
                            if let Some(given) = attr.span {
                                diagnostic =
                                    diagnostic.with_secondary(given, "the argument is given here");
                            }
                            diagnostic = diagnostic
                                .with_secondary(lambda.span, "the function is defined here");
                            return Err(Box::new(diagnostic));
                        }
                    }
                }
                frame
            }
        };
        self.enter(span)?;
        let result = self.eval(&lambda.body, &frame);
        self.leave();
        result.map_err(|mut error| {
            if error.trace.len() < 64 {
                error.trace.push(Label::new(
                    span,
                    format!("while calling {}", lambda_name(lambda)),
                ));
            }
            error
        })
    }

    // ---- operators ------------------------------------------------------------

    fn binary(
        &mut self,
        op: Operator,
        left: &Rc<Ir>,
        right: &Rc<Ir>,
        env: &Env,
        span: Span,
    ) -> EvalResult<Value> {
        match op {
            Operator::And => {
                if !self.eval_bool(left, env, "the left side of `&&`")? {
                    return Ok(Value::Bool(false));
                }
                Ok(Value::Bool(self.eval_bool(
                    right,
                    env,
                    "the right side of `&&`",
                )?))
            }
            Operator::Or => {
                if self.eval_bool(left, env, "the left side of `||`")? {
                    return Ok(Value::Bool(true));
                }
                Ok(Value::Bool(self.eval_bool(
                    right,
                    env,
                    "the right side of `||`",
                )?))
            }
            Operator::Implies => {
                if !self.eval_bool(left, env, "the left side of `->`")? {
                    return Ok(Value::Bool(true));
                }
                Ok(Value::Bool(self.eval_bool(
                    right,
                    env,
                    "the right side of `->`",
                )?))
            }
            _ => {
                let left_value = self.eval(left, env)?;
                let right_value = self.eval(right, env)?;
                self.binary_values(op, left_value, right_value, left.span, right.span, span)
            }
        }
    }

    fn eval_bool(&mut self, ir: &Rc<Ir>, env: &Env, context: &str) -> EvalResult<bool> {
        match self.eval(ir, env)? {
            Value::Bool(value) => Ok(value),
            other => Err(type_error("a Boolean", &other, ir.span, context)),
        }
    }

    pub(crate) fn binary_values(
        &mut self,
        op: Operator,
        left: Value,
        right: Value,
        left_span: Span,
        right_span: Span,
        span: Span,
    ) -> EvalResult<Value> {
        match op {
            Operator::Equal => Ok(Value::Bool(self.equal(&left, &right, span, true)?)),
            Operator::NotEqual => Ok(Value::Bool(!self.equal(&left, &right, span, true)?)),
            Operator::Less => Ok(Value::Bool(self.less_than(&left, &right, span)?)),
            Operator::Update => {
                let Value::Attrs(left_attrs) = &left else {
                    return Err(type_error(
                        "a set",
                        &left,
                        left_span,
                        "the left side of `//`",
                    ));
                };
                let Value::Attrs(right_attrs) = &right else {
                    return Err(type_error(
                        "a set",
                        &right,
                        right_span,
                        "the right side of `//`",
                    ));
                };
                if left_attrs.is_empty() {
                    return Ok(right);
                }
                if right_attrs.is_empty() {
                    return Ok(left);
                }
                self.make_attrs(left_attrs.len() + right_attrs.len(), span)?;
                Ok(Value::Attrs(Rc::new(left_attrs.update(right_attrs))))
            }
            Operator::Concat => {
                let Value::List(left_list) = &left else {
                    return Err(type_error(
                        "a list",
                        &left,
                        left_span,
                        "the left side of `++`",
                    ));
                };
                let Value::List(right_list) = &right else {
                    return Err(type_error(
                        "a list",
                        &right,
                        right_span,
                        "the right side of `++`",
                    ));
                };
                if left_list.is_empty() {
                    return Ok(right);
                }
                if right_list.is_empty() {
                    return Ok(left);
                }
                self.make_list(left_list.len() + right_list.len(), span)?;
                let mut items = self.list_buffer(left_list.len() + right_list.len(), span)?;
                items.extend(left_list.iter().cloned());
                items.extend(right_list.iter().cloned());
                Ok(Value::List(Rc::from(items)))
            }
            Operator::Add => self.add(left, right, left_span, right_span),
            Operator::Subtract | Operator::Multiply | Operator::Divide => {
                arithmetic(op, &left, &right, left_span, right_span, span)
            }
            Operator::And | Operator::Or | Operator::Implies => unreachable_logic(),
        }
    }

    fn add(
        &mut self,
        left: Value,
        right: Value,
        left_span: Span,
        right_span: Span,
    ) -> EvalResult<Value> {
        match (&left, &right) {
            (Value::Int(a), Value::Int(b)) => a
                .checked_add(*b)
                .map(Value::Int)
                .ok_or_else(|| overflow(left_span.to(right_span), "+")),
            (Value::Int(a), Value::Float(b)) => Ok(Value::Float(*a as f64 + b)),
            (Value::Float(a), Value::Int(b)) => Ok(Value::Float(a + *b as f64)),
            (Value::Float(a), Value::Float(b)) => Ok(Value::Float(a + b)),
            (Value::Int(_), other) => Err(type_error(
                "a number",
                other,
                right_span,
                "cannot add to an integer",
            )),
            (Value::Float(_), other) => Err(type_error(
                "a number",
                other,
                right_span,
                "cannot add to a float",
            )),
            (Value::Path(path), _) => {
                let mut result = path.to_vec();
                self.coerce_to_string_into(&right, right_span, false, false, &mut result)?;
                Ok(Value::Path(Rc::from(compile::canonical_path(&result))))
            }
            (Value::String(string), _) => {
                // counted before it is made when both sizes are known (a string
                // doubled in a loop), after when the right side is coerced
                let right_length = match &right {
                    Value::String(right) => right.len(),
                    _ => 0,
                };
                self.make_string(string.len() + right_length, right_span)?;
                let mut result = Vec::with_capacity(string.len() + right_length.max(16));
                result.extend_from_slice(string);
                self.coerce_to_string_into(&right, right_span, false, true, &mut result)?;
                if right_length == 0 {
                    self.make_string(result.len() - string.len(), right_span)?;
                }
                Ok(Value::String(Rc::from(result)))
            }
            _ => {
                let mut result = Vec::new();
                self.coerce_to_string_into(&left, left_span, false, true, &mut result)?;
                self.coerce_to_string_into(&right, right_span, false, true, &mut result)?;
                Ok(Value::String(Rc::from(result)))
            }
        }
    }

    /// Nix's `coerceToString`. `more` also turns numbers, Booleans, null and lists
    /// into text (`toString`); `to_store` is where Nix would copy a path into the
    /// store, which the mesh language refuses.
    /// `toString` of a list: its elements, separated by spaces. What each element
    /// that is no list writes counts against the memory bound (a list written out
    /// again and again, shared, grows without end).
    fn coerce_list_into(
        &mut self,
        items: &[Value],
        span: Span,
        to_store: bool,
        out: &mut Vec<u8>,
    ) -> EvalResult<()> {
        let count = items.len();
        for (index, item) in items.iter().enumerate() {
            let before = out.len();
            self.coerce_to_string_into(item, span, true, to_store, out)?;
            let item = self.force(item, span)?;
            let is_list = matches!(&item, Value::List(_));
            if !is_list {
                self.make_string(out.len() - before + 1, span)?;
            }
            if index + 1 < count {
                let empty_list = matches!(&item, Value::List(list) if list.is_empty());
                if !empty_list {
                    out.push(b' ');
                }
            }
        }
        Ok(())
    }

    pub fn coerce_to_string_into(
        &mut self,
        value: &Value,
        span: Span,
        more: bool,
        to_store: bool,
        out: &mut Vec<u8>,
    ) -> EvalResult<()> {
        let value = self.force(value, span)?;
        match &value {
            Value::String(bytes) => {
                out.extend_from_slice(bytes);
                Ok(())
            }
            Value::Path(path) => {
                if to_store {
                    let text = String::from_utf8_lossy(path);
                    return Err(error(
                        codes::PATH_IN_STRING,
                        format!("path `{text}` interpolated into a string"),
                        span,
                        "Nix would copy this path into the store here",
                        "there is no store in mesh; use `toString path` for the path's text, or `builtins.readFile path` for its content",
                    ));
                }
                out.extend_from_slice(path);
                Ok(())
            }
            Value::Attrs(attrs) => {
                if let Some(to_string) = attrs.get(b"__toString").cloned() {
                    let result = self.call(to_string, value.clone(), span)?;
                    return self.coerce_to_string_into(&result, span, more, to_store, out);
                }
                if let Some(out_path) = attrs.get(b"outPath").cloned() {
                    return self.coerce_to_string_into(&out_path, span, more, to_store, out);
                }
                Err(error(
                    codes::NOT_COERCIBLE,
                    "cannot turn a set into a string",
                    span,
                    "this is a set",
                    "select the attribute you mean, or give the set a `__toString` function",
                ))
            }
            Value::Opaque(_) => Err(opaque_error(span)),
            Value::Bool(true) if more => {
                out.push(b'1');
                Ok(())
            }
            Value::Bool(false) | Value::Null if more => Ok(()),
            Value::Int(number) if more => {
                out.extend_from_slice(number.to_string().as_bytes());
                Ok(())
            }
            Value::Float(number) if more => {
                out.extend_from_slice(crate::print::format_fixed(*number).as_bytes());
                Ok(())
            }
            Value::List(items) if more => {
                self.enter(span)?;
                let result = self.coerce_list_into(items, span, to_store, out);
                self.leave();
                result
            }
            other => {
                let help = match other {
                    Value::Int(_)
                    | Value::Float(_)
                    | Value::Bool(_)
                    | Value::Null
                    | Value::List(_) => "convert it explicitly with `toString`",
                    _ => {
                        "only strings, paths and sets with `__toString` or `outPath` become strings"
                    }
                };
                Err(error(
                    codes::NOT_COERCIBLE,
                    format!("cannot turn {} into a string", other.describe_type()),
                    span,
                    &format!("this is {}", other.describe_type()),
                    help,
                ))
            }
        }
    }

    pub fn coerce_to_string(
        &mut self,
        value: &Value,
        span: Span,
        more: bool,
        to_store: bool,
    ) -> EvalResult<Vec<u8>> {
        let mut out = Vec::new();
        self.coerce_to_string_into(value, span, more, to_store, &mut out)?;
        Ok(out)
    }

    /// Nix's `eqValues`. `top` is false for elements of lists and sets, where the
    /// same object is equal to itself even if it is a function.
    pub fn equal(
        &mut self,
        left: &Value,
        right: &Value,
        span: Span,
        top: bool,
    ) -> EvalResult<bool> {
        let left_forced = self.force(left, span)?;
        let right_forced = self.force(right, span)?;
        // a secret is compared with nothing, not even itself (`[ s ] == [ s ]`)
        if matches!(left_forced, Value::Opaque(_)) || matches!(right_forced, Value::Opaque(_)) {
            return Err(opaque_error(span));
        }
        if !top && (same_object(left, right) || same_object(&left_forced, &right_forced)) {
            // the same object is equal to itself without a look inside, but a secret
            // already evaluated inside it is compared all the same
            if holds_evaluated_secret(&left_forced) {
                return Err(opaque_error(span));
            }
            return Ok(true);
        }
        self.enter(span)?;
        let result = self.equal_forced(&left_forced, &right_forced, span);
        self.leave();
        result
    }

    fn equal_forced(&mut self, left: &Value, right: &Value, span: Span) -> EvalResult<bool> {
        Ok(match (left, right) {
            (Value::Int(a), Value::Float(b)) => (*a as f64) == *b,
            (Value::Float(a), Value::Int(b)) => *a == (*b as f64),
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Path(a), Value::Path(b)) => a == b,
            (Value::Null, Value::Null) => true,
            (Value::List(a), Value::List(b)) => {
                if a.len() != b.len() {
                    return Ok(false);
                }
                let (a, b) = (a.clone(), b.clone());
                for (x, y) in a.iter().zip(b.iter()) {
                    if !self.equal(x, y, span, false)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Attrs(a), Value::Attrs(b)) => {
                if self.is_derivation(a, span)?
                    && self.is_derivation(b, span)?
                    && let (Some(x), Some(y)) =
                        (a.get(b"outPath").cloned(), b.get(b"outPath").cloned())
                {
                    return self.equal(&x, &y, span, false);
                }
                if a.len() != b.len() {
                    return Ok(false);
                }
                let (a, b) = (a.clone(), b.clone());
                for (x, y) in a.iter().zip(b.iter()) {
                    if x.name != y.name || !self.equal(&x.value, &y.value, span, false)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Opaque(_), _) | (_, Value::Opaque(_)) => return Err(opaque_error(span)),
            _ => false,
        })
    }

    fn is_derivation(&mut self, attrs: &Attrs, span: Span) -> EvalResult<bool> {
        match attrs.get(b"type").cloned() {
            Some(kind) => {
                let kind = self.force(&kind, span)?;
                Ok(matches!(kind, Value::String(s) if &*s == b"derivation"))
            }
            None => Ok(false),
        }
    }

    /// Nix's `lessThan`: numbers, strings, paths, and lists lexicographically.
    pub fn less_than(&mut self, left: &Value, right: &Value, span: Span) -> EvalResult<bool> {
        let left = self.force(left, span)?;
        let right = self.force(right, span)?;
        Ok(match (&left, &right) {
            (Value::Int(a), Value::Int(b)) => a < b,
            (Value::Int(a), Value::Float(b)) => (*a as f64) < *b,
            (Value::Float(a), Value::Int(b)) => *a < (*b as f64),
            (Value::Float(a), Value::Float(b)) => a < b,
            (Value::String(a), Value::String(b)) => a < b,
            (Value::Path(a), Value::Path(b)) => a < b,
            (Value::List(a), Value::List(b)) => {
                let (a, b) = (a.clone(), b.clone());
                self.enter(span)?;
                let mut index = 0;
                let result = loop {
                    if index == b.len() {
                        break Ok(false);
                    }
                    if index == a.len() {
                        break Ok(true);
                    }
                    match self.equal(&a[index], &b[index], span, false) {
                        Ok(true) => index += 1,
                        Ok(false) => break self.less_than(&a[index], &b[index], span),
                        Err(error) => break Err(error),
                    }
                };
                self.leave();
                return result;
            }
            (Value::Opaque(_), _) | (_, Value::Opaque(_)) => return Err(opaque_error(span)),
            _ => {
                return Err(error(
                    codes::NOT_COMPARABLE,
                    format!(
                        "cannot compare {} with {}",
                        left.describe_type(),
                        right.describe_type()
                    ),
                    span,
                    "compared here",
                    "`<` compares two numbers, two strings, two paths or two lists",
                ));
            }
        })
    }

    /// Forces a value and everything inside it (`--strict`, `deepSeq`).
    pub fn force_deep(&mut self, value: &Value, span: Span) -> EvalResult<Value> {
        let mut seen = std::collections::HashSet::new();
        let forced = self.force(value, span)?;
        self.force_deep_inner(&forced, span, &mut seen)?;
        Ok(forced)
    }

    fn force_deep_inner(
        &mut self,
        value: &Value,
        span: Span,
        seen: &mut std::collections::HashSet<usize>,
    ) -> EvalResult<()> {
        match value {
            Value::Attrs(attrs) => {
                if !seen.insert(Rc::as_ptr(attrs) as *const u8 as usize) {
                    return Ok(());
                }
                self.enter(span)?;
                for attr in attrs.iter() {
                    let span = attr.span.unwrap_or(span);
                    let forced = match self.force(&attr.value, span) {
                        Ok(forced) => forced,
                        Err(error) => {
                            self.leave();
                            return Err(error);
                        }
                    };
                    if let Err(mut error) = self.force_deep_inner(&forced, span, seen) {
                        self.leave();
                        if error.trace.len() < 64 {
                            error.trace.push(Label::new(
                                span,
                                format!(
                                    "while evaluating the attribute `{}`",
                                    String::from_utf8_lossy(&attr.name)
                                ),
                            ));
                        }
                        return Err(error);
                    }
                }
                self.leave();
                Ok(())
            }
            Value::List(items) => {
                if items.is_empty() || !seen.insert(items.as_ptr() as *const u8 as usize) {
                    return Ok(());
                }
                self.enter(span)?;
                for item in items.iter() {
                    let forced = match self.force(item, span) {
                        Ok(forced) => forced,
                        Err(error) => {
                            self.leave();
                            return Err(error);
                        }
                    };
                    if let Err(error) = self.force_deep_inner(&forced, span, seen) {
                        self.leave();
                        return Err(error);
                    }
                }
                self.leave();
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Reads slot `slot` of the frame `up` levels out.
#[inline]
pub(crate) fn lookup(env: &Env, up: u32, slot: u32) -> Option<Value> {
    lookup_ref(env, up, slot).map(|value| value.clone())
}

/// The value in `slot` of the frame `up` levels out; frames are filled once, so
/// the reference lives as long as `env`.
#[inline]
fn lookup_ref(env: &Env, up: u32, slot: u32) -> Option<std::cell::Ref<'_, Value>> {
    let mut frame = env;
    for _ in 0..up {
        frame = frame.parent.as_ref()?;
    }
    frame.slots.get(slot as usize)
}

/// A list of one or two elements lives inside its value slot in Nix, so a copy into
/// a new slot is a new list (this decides `«repeated»`).
fn fresh_slot(value: Value) -> Value {
    match value {
        Value::List(list) if !list.is_empty() && list.len() <= 2 => {
            Value::List(Rc::from(&list[..]))
        }
        other => other,
    }
}

/// Does `value` hold a secret among its parts evaluated so far? Nothing is forced (the
/// same object compares equal to itself in Nix without its parts being evaluated).
pub(crate) fn holds_evaluated_secret(value: &Value) -> bool {
    let mut pending: Vec<Value> = match value {
        Value::List(_) | Value::Attrs(_) => vec![value.clone()],
        _ => return false,
    };
    let mut seen = std::collections::HashSet::new();
    while let Some(value) = pending.pop() {
        let value = match value {
            Value::Thunk(thunk) => match thunk.value() {
                Some(value) => value,
                None => continue,
            },
            other => other,
        };
        match &value {
            Value::Opaque(_) => return true,
            Value::List(items) if seen.insert(items.as_ptr() as *const u8 as usize) => {
                pending.extend(items.iter().cloned());
            }
            Value::Attrs(attrs) if seen.insert(Rc::as_ptr(attrs) as *const u8 as usize) => {
                pending.extend(attrs.iter().map(|attr| attr.value.clone()));
            }
            _ => {}
        }
    }
    false
}

fn lambda_name(lambda: &LambdaIr) -> String {
    match &lambda.name {
        Some(name) => format!("function `{}`", String::from_utf8_lossy(name)),
        None => "anonymous function".to_string(),
    }
}

fn overflow(span: Span, op: &str) -> Box<Diagnostic> {
    error(
        codes::INTEGER_OVERFLOW,
        format!("integer overflow in `{op}`"),
        span,
        "the result does not fit in 64 bits",
        "integers are 64-bit signed; use floats for larger magnitudes",
    )
}

fn arithmetic(
    op: Operator,
    left: &Value,
    right: &Value,
    left_span: Span,
    right_span: Span,
    span: Span,
) -> EvalResult<Value> {
    let symbol = match op {
        Operator::Subtract => "-",
        Operator::Multiply => "*",
        _ => "/",
    };
    let check = |value: &Value, side_span: Span| -> EvalResult<()> {
        match value {
            Value::Int(_) | Value::Float(_) => Ok(()),
            other => Err(type_error(
                "a number",
                other,
                side_span,
                &format!("the operands of `{symbol}`"),
            )),
        }
    };
    check(left, left_span)?;
    check(right, right_span)?;
    if op == Operator::Divide {
        let zero = match right {
            Value::Int(b) => *b == 0,
            Value::Float(b) => *b == 0.0,
            _ => false,
        };
        if zero {
            return Err(error(
                codes::DIVISION_BY_ZERO,
                "division by zero",
                right_span,
                "this is zero",
                "check the divisor before dividing",
            ));
        }
    }
    match (left, right) {
        (Value::Int(a), Value::Int(b)) => {
            let result = match op {
                Operator::Subtract => a.checked_sub(*b),
                Operator::Multiply => a.checked_mul(*b),
                _ => a.checked_div(*b),
            };
            result.map(Value::Int).ok_or_else(|| overflow(span, symbol))
        }
        _ => {
            let a = as_float(left);
            let b = as_float(right);
            Ok(Value::Float(match op {
                Operator::Subtract => a - b,
                Operator::Multiply => a * b,
                _ => a / b,
            }))
        }
    }
}

pub(crate) fn as_float(value: &Value) -> f64 {
    match value {
        Value::Int(number) => *number as f64,
        Value::Float(number) => *number,
        _ => 0.0,
    }
}

#[cold]
fn unreachable_done() -> EvalResult<Value> {
    Err(Box::new(Diagnostic::error(
        codes::INTERNAL,
        "a finished thunk was forced again",
    )))
}

#[cold]
fn unreachable_logic() -> EvalResult<Value> {
    Err(Box::new(Diagnostic::error(
        codes::INTERNAL,
        "logical operator evaluated strictly",
    )))
}
