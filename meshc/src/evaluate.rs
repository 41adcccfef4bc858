//! `meshc eval`: evaluate a file or expression deeply and print it exactly as
//! `nix-instantiate --eval --strict [--json]` would.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::print::PrintFailure;
use lang::{Diagnostic, Limits, Machine};

use compiler::{RealFs, find_root};

pub enum Input {
    File(PathBuf),
    Expression(String),
}

pub struct EvalRequest {
    pub input: Input,
    pub json: bool,
    /// Where `import` and `readFile` may reach; found from `mesh.nix` if not given.
    pub root: Option<PathBuf>,
    /// The working directory, for relative paths in expressions.
    pub working_directory: PathBuf,
    /// The step budget and memory bound (`--max-steps`, `--max-memory`).
    pub limits: Limits,
}

pub struct EvalOutcome {
    /// Ok once the value is printed (with its trailing newline, without `--json`).
    pub output: Result<(), EvalFailure>,
    pub sources: lang::Sources,
}

/// Why `meshc eval` printed no value, or not all of it.
pub enum EvalFailure {
    /// Evaluation failed: nothing printed, or (when printing itself failed) part.
    Diagnostics(Vec<Diagnostic>),
    /// The output refused the text (a closed pipe, a full disk).
    Write(std::io::Error),
}

fn absolute(path: &Path, working_directory: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        working_directory.join(path)
    };
    let bytes = lang::compile::canonical_path(&lang::compile::path_bytes(&joined));
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

/// Evaluates on a thread with a stack large enough for the evaluator's limits,
/// writes the `builtins.trace` and `builtins.warn` messages on standard error (in
/// order, without a location, as `nix-instantiate` does, an age private key in
/// them blotted out as everywhere `meshc` reports) and then the value on
/// `output` as it is printed: a long value is never held whole (as in Nix), so
/// printing it needs no more memory than evaluating it. `--json` is made whole
/// and counted against the memory bound, as `toJSON` is.
pub fn evaluate(request: EvalRequest, output: impl Write + Send + 'static) -> EvalOutcome {
    lang::eval::run_with_stack(move || evaluate_here(request, output)).unwrap_or_else(
        |diagnostic| EvalOutcome {
            output: Err(EvalFailure::Diagnostics(vec![*diagnostic])),
            sources: lang::Sources::new(),
        },
    )
}

fn evaluate_here(request: EvalRequest, mut output: impl Write) -> EvalOutcome {
    let base = match &request.input {
        Input::File(path) => absolute(path, &request.working_directory)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/")),
        Input::Expression(_) => request.working_directory.clone(),
    };
    let root = request
        .root
        .as_ref()
        .map(|root| absolute(root, &request.working_directory))
        .or_else(|| find_root(&base))
        .unwrap_or_else(|| base.clone());
    let loader = Rc::new(RealFs::new(vec![root.clone()]));
    let mut machine = Machine::new(loader, vec![root], request.limits).with_prefetch();
    let value = match &request.input {
        Input::File(path) => machine.eval_file(&absolute(path, &request.working_directory)),
        Input::Expression(text) => machine.eval_source(
            "«expression»",
            None,
            std::sync::Arc::from(text.as_bytes()),
            &request.working_directory,
        ),
    };
    let forced = value.and_then(|value| {
        let forced = machine
            .force_deep(&value, lang::Span::default())
            .map_err(|error| vec![*error]);
        // kept, as the printed value is below
        std::mem::forget(value);
        forced
    });
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    for traced in std::mem::take(&mut machine.traces) {
        crate::say!("{}", crate::render::traced_bare(&traced, terminal));
    }
    let printed = forced.map_err(EvalFailure::Diagnostics).and_then(|value| {
        let printed = if request.json {
            // nix-instantiate writes JSON without a newline
            match machine.to_json(&value, lang::Span::default()) {
                Ok(json) => output.write_all(&json).map_err(EvalFailure::Write),
                Err(error) => Err(EvalFailure::Diagnostics(vec![*error])),
            }
        } else {
            match machine.print_strict_to(&value, &mut output) {
                Ok(()) => output.write_all(b"\n").map_err(EvalFailure::Write),
                Err(PrintFailure::Eval(error)) => Err(EvalFailure::Diagnostics(vec![*error])),
                Err(PrintFailure::Write(error)) => Err(EvalFailure::Write(error)),
            }
        };
        // the process ends after printing: the exit frees the value, which freed here
        // would be dropped recursively, one stack frame per level of nesting (a list
        // nested 40 million deep is legal and would overflow any stack)
        std::mem::forget(value);
        printed
    });
    // what was printed before an error, too
    let flushed = output.flush().map_err(EvalFailure::Write);
    let output = printed.and(flushed);
    let sources = std::mem::take(&mut machine.sources);
    // as the value: the thunks the machine holds may hold it too
    std::mem::forget(machine);
    EvalOutcome { output, sources }
}
