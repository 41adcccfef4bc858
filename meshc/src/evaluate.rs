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
    /// `-A` paths: each one's value is printed, on its own line; none prints the
    /// whole value.
    pub attr_paths: Vec<AttrPath>,
    /// `--arg` and `--argstr` in their order on the command line: the arguments a
    /// function met is called with (a name given twice: the last given).
    pub arguments: Vec<(String, Argument)>,
    pub json: bool,
    /// Where `import` and `readFile` may reach; found from `mesh.nix` if not given.
    pub root: Option<PathBuf>,
    /// The working directory, for relative paths in expressions.
    pub working_directory: PathBuf,
    /// The step budget and memory bound (`--max-steps`, `--max-memory`).
    pub limits: Limits,
}

/// An `-A` path: as written (for its errors), and its names.
#[derive(Clone, Debug)]
pub struct AttrPath {
    pub written: String,
    pub names: Vec<String>,
}

/// The value of an `--arg` or `--argstr`.
pub enum Argument {
    /// An expression, evaluated when a function uses it.
    Expression(String),
    /// A string, as it is.
    Text(String),
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
    // the arguments' sources come after the file's, which is the first source: what
    // is said without a place of its own is said at the file, not in an argument
    let value = value.and_then(|value| match arguments(&mut machine, &request) {
        Ok(arguments) => Ok((value, arguments)),
        Err(diagnostics) => {
            // kept, as a printed value is (see `print_one`)
            std::mem::forget(value);
            Err(diagnostics)
        }
    });
    let printed = match value {
        Ok((value, arguments)) => {
            let printed = print_each(&mut machine, &value, &arguments, &request, &mut output);
            // kept, as the printed values are (see `print_one`)
            std::mem::forget(value);
            printed
        }
        Err(diagnostics) => {
            say_traces(&mut machine);
            Err(EvalFailure::Diagnostics(diagnostics))
        }
    };
    // what was printed before an error, too
    let flushed = output.flush().map_err(EvalFailure::Write);
    let output = printed.and(flushed);
    let sources = std::mem::take(&mut machine.sources);
    // as the value: the thunks the machine holds may hold it too
    std::mem::forget(machine);
    EvalOutcome { output, sources }
}

/// The `--arg` and `--argstr` of `request` as one set (the expressions compiled,
/// not evaluated); a name given twice keeps the last given, as in Nix.
fn arguments(
    machine: &mut Machine,
    request: &EvalRequest,
) -> Result<lang::value::Attrs, Vec<Diagnostic>> {
    let mut given = Vec::with_capacity(request.arguments.len());
    // the last given first: of equal names, the first is kept
    for (name, argument) in request.arguments.iter().rev() {
        let value = match argument {
            Argument::Expression(text) => machine.delay_source(
                &format!("«--arg {name}»"),
                std::sync::Arc::from(text.as_bytes()),
                &request.working_directory,
            )?,
            Argument::Text(text) => lang::Value::string_from(text),
        };
        given.push(lang::value::Attr {
            name: lang::Name::new(name.as_bytes()),
            value,
            span: None,
        });
    }
    Ok(lang::value::Attrs::from_unsorted(given))
}

/// The value at each `-A` path of `request` (the whole value when there is none),
/// forced deeply and printed, a line each; the first that fails ends it. With
/// `arguments`, a function met is called with them (see
/// [`Machine::select_attr_path`]).
fn print_each(
    machine: &mut Machine,
    value: &lang::Value,
    arguments: &lang::value::Attrs,
    request: &EvalRequest,
    output: &mut impl Write,
) -> Result<(), EvalFailure> {
    let whole = AttrPath {
        written: String::new(),
        names: Vec::new(),
    };
    let paths = match request.attr_paths.as_slice() {
        [] => std::slice::from_ref(&whole),
        paths => paths,
    };
    for path in paths {
        let selected = machine
            .select_attr_path(value.clone(), &path.names, &path.written, arguments)
            .map_err(|error| vec![*error]);
        print_one(machine, selected, request.json, output)?;
    }
    Ok(())
}

/// Forces `value` deeply, says the traces it made, and prints it.
fn print_one(
    machine: &mut Machine,
    value: Result<lang::Value, Vec<Diagnostic>>,
    json: bool,
    output: &mut impl Write,
) -> Result<(), EvalFailure> {
    let forced = value.and_then(|value| {
        let forced = machine
            .force_deep(&value, lang::Span::default())
            .map_err(|error| vec![*error]);
        // kept, as the printed value is below
        std::mem::forget(value);
        forced
    });
    say_traces(machine);
    forced.map_err(EvalFailure::Diagnostics).and_then(|value| {
        let printed = if json {
            // nix-instantiate writes JSON without a newline
            match machine.to_json(&value, lang::Span::default()) {
                Ok(json) => output.write_all(&json).map_err(EvalFailure::Write),
                Err(error) => Err(EvalFailure::Diagnostics(vec![*error])),
            }
        } else {
            match machine.print_strict_to(&value, output) {
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
    })
}

/// Writes the `builtins.trace` and `builtins.warn` messages made so far on
/// standard error.
fn say_traces(machine: &mut Machine) {
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    for traced in std::mem::take(&mut machine.traces) {
        crate::say!("{}", crate::render::traced_bare(&traced, terminal));
    }
}
