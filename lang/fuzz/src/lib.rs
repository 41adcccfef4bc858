//! What the fuzz targets do with one input. `lang/tests/fuzz_corpus.rs` includes this
//! file too, so every corpus input runs through exactly these functions on every
//! `cargo test`. Uses only the public API of `lang`; must not touch the filesystem.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use lang::eval::{DEFAULT_MAX_DEPTH, EVAL_STACK_SIZE};
use lang::{FileId, Limits, Machine, MemoryLoader};

/// The evaluator's limits under fuzzing: shallow enough that every input runs fast,
/// with a step budget so that no input can run forever.
pub fn limits() -> Limits {
    Limits {
        max_depth: 10_000,
        max_steps: Some(1_000_000),
        max_memory: Some(1 << 30),
    }
}

/// The stack an evaluation with [`limits`] gets: the same stack per level of depth
/// that `meshc` gives [`DEFAULT_MAX_DEPTH`] levels, so an input that overflows here
/// would overflow `meshc` at its own limit too.
pub fn eval_stack_size() -> usize {
    EVAL_STACK_SIZE / (DEFAULT_MAX_DEPTH / limits().max_depth)
}

/// The directory the fuzzed program lives in.
const DIRECTORY: &str = "/fuzz";

/// Runs `work` on a thread with [`eval_stack_size`] of stack, as `meshc` runs the
/// parser and the evaluator on a thread of its own (`lang::eval::run_with_stack`).
fn on_eval_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let handle = std::thread::Builder::new()
        .name("fuzz-eval".into())
        .stack_size(eval_stack_size())
        .spawn(work)
        .expect("cannot start the evaluation thread");
    match handle.join() {
        Ok(outcome) => outcome,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Parses `data`; the parser must return (with a tree and maybe errors) whatever the
/// bytes are. Returns the number of syntax errors.
pub fn parse(data: &[u8]) -> usize {
    let text = data.to_vec();
    on_eval_stack(move || lang::parser::parse(&text, FileId(0)).errors.len())
}

/// What evaluating one input gave: the printed value or the diagnostics' codes.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Printed(Vec<u8>),
    Failed(Vec<String>),
}

/// Parses, compiles, evaluates and prints `data` as `meshc eval` would, on a thread
/// with [`eval_stack_size`] of stack. It must end in a value or diagnostics: a panic,
/// a stack overflow or a hang is a bug.
pub fn eval(data: &[u8]) -> Outcome {
    let text: Arc<[u8]> = Arc::from(data);
    on_eval_stack(move || eval_here(text))
}

fn eval_here(text: Arc<[u8]>) -> Outcome {
    let directory = Path::new(DIRECTORY);
    let mut loader = MemoryLoader::new();
    // something for `import`, `readFile` and `pathExists` to find
    loader.insert(
        directory.join("lib.nix"),
        "{ id = x: x; add = a: b: a + b; list = [ 1 2 3 ]; set = { a = 1; b = \"two\"; }; }",
    );
    loader.insert(directory.join("data.txt"), "some text\n");
    let mut machine = Machine::new(Rc::new(loader), vec![PathBuf::from(DIRECTORY)], limits());
    let value = machine.eval_source(
        "fuzz.nix",
        Some(directory.join("fuzz.nix")),
        text,
        directory,
    );
    let printed = value.and_then(|value| machine.print_strict(&value).map_err(|e| vec![*e]));
    match printed {
        Ok(bytes) => Outcome::Printed(bytes),
        Err(diagnostics) => {
            // an internal error is a bug in the evaluator, as a panic would be
            if let Some(internal) = diagnostics
                .iter()
                .find(|diagnostic| diagnostic.code == lang::codes::INTERNAL)
            {
                panic!("internal error: {}", internal.message);
            }
            Outcome::Failed(
                diagnostics
                    .iter()
                    .map(|diagnostic| diagnostic.code.as_str().to_string())
                    .collect(),
            )
        }
    }
}
