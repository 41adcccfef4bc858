//! `meshc eval`: evaluate a file or expression deeply and print it exactly as
//! `nix-instantiate --eval --strict [--json]` would.

use std::path::{Path, PathBuf};
use std::rc::Rc;

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
    /// What to print on stdout (with its trailing newline), on success.
    pub output: Result<Vec<u8>, Vec<Diagnostic>>,
    /// `builtins.trace` and `builtins.warn` messages, in order.
    pub traces: Vec<lang::Traced>,
    pub sources: lang::Sources,
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

/// Evaluates on a thread with a stack large enough for the evaluator's limits.
pub fn evaluate(request: EvalRequest) -> EvalOutcome {
    lang::eval::run_with_stack(move || evaluate_here(request))
}

fn evaluate_here(request: EvalRequest) -> EvalOutcome {
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
    let mut machine = Machine::new(loader, vec![root], request.limits);
    let value = match &request.input {
        Input::File(path) => machine.eval_file(&absolute(path, &request.working_directory)),
        Input::Expression(text) => machine.eval_source(
            "«expression»",
            None,
            std::sync::Arc::from(text.as_bytes()),
            &request.working_directory,
        ),
    };
    let output = value.and_then(|value| {
        let printed = if request.json {
            machine
                .force_deep(&value, lang::Span::default())
                .and_then(|value| machine.to_json(&value, lang::Span::default()))
        } else {
            machine.print_strict(&value)
        };
        // the process ends after printing: the exit frees the value, which freed here
        // would be dropped recursively, one stack frame per level of nesting (a list
        // nested 40 million deep is legal and would overflow any stack)
        std::mem::forget(value);
        // nix-instantiate ends the printed value with a newline, the JSON without one
        let json = request.json;
        printed
            .map(|mut bytes| {
                if !json {
                    bytes.push(b'\n');
                }
                bytes
            })
            .map_err(|error| vec![*error])
    });
    let traces = std::mem::take(&mut machine.traces);
    let sources = std::mem::take(&mut machine.sources);
    // as the value: the thunks the machine holds may hold it too
    std::mem::forget(machine);
    EvalOutcome {
        output,
        traces,
        sources,
    }
}
