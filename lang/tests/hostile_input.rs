//! Input written to make the lexer, parser and compiler slow: each case must end
//! (in a value or in diagnostics) well within a timeout that the quadratic code they
//! once met could not meet (it took minutes). Speed itself is measured in benchmarks,
//! never asserted: the timeouts are ten to a hundred times what the cases take.
//! An evaluation its host cancels must end the same way.
//! Uses only memory; must not touch the filesystem.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use lang::{FileId, Limits, Machine, MemoryLoader};

/// Generous: each case takes well under a second in release, and about a second in
/// a debug build; the quadratic code took more than 30 seconds on each.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Runs `work` on an evaluation-sized stack, failing the test if it has not finished
/// within [`TIMEOUT`] (the thread is left behind: the test process ends anyway).
fn within_timeout<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new()
        .name("hostile-input".into())
        .stack_size(lang::eval::EVAL_STACK_SIZE)
        .spawn(move || {
            let _ = sender.send(work());
        })
        .expect("cannot start a thread");
    match receiver.recv_timeout(TIMEOUT) {
        Ok(value) => value,
        Err(_) => panic!("{what} did not finish within {TIMEOUT:?}"),
    }
}

/// Evaluates `program` and prints it as `meshc eval` does, or gives the codes of its
/// diagnostics.
fn evaluate(program: String) -> Result<String, Vec<String>> {
    let mut machine = Machine::new(
        Rc::new(MemoryLoader::new()),
        vec![PathBuf::from("/hostile")],
        Limits::default(),
    );
    let text: Arc<[u8]> = Arc::from(program.into_bytes());
    let value = machine.eval_source("hostile.nix", None, text, Path::new("/hostile"));
    let printed = value.and_then(|value| {
        let printed = machine.print_strict(&value).map_err(|error| vec![*error]);
        std::mem::forget(value);
        printed
    });
    let result = printed
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|diagnostics| {
            diagnostics
                .iter()
                .map(|d| d.code.as_str().to_string())
                .collect()
        });
    std::mem::forget(machine);
    result
}

fn terms(term: &str, separator: &str, count: usize) -> String {
    vec![term; count].join(separator)
}

#[test]
fn sum_of_200000_terms_lexes_parses_and_evaluates() {
    let program = terms("1", "+", 200_000);
    let result = within_timeout("the 200,000-term sum", move || evaluate(program));
    assert_eq!(result, Ok("200000".to_string()));
}

#[test]
fn sum_of_200000_variables_lexes_in_linear_time() {
    // `x+x+x`: one run of URI scheme characters as well as of path characters
    let program = format!("let x = 1; in {}", terms("x", "+", 150_000));
    let result = within_timeout("the sum of variables", move || evaluate(program));
    assert_eq!(result, Ok("150000".to_string()));
}

#[test]
fn select_chain_of_200000_names_parses() {
    let program = format!("let a = {{ }}; in a.{} or 7", terms("b", ".", 200_000));
    let result = within_timeout("the long select", move || evaluate(program));
    assert_eq!(result, Ok("7".to_string()));
}

#[test]
fn difference_of_200000_terms_lexes_in_linear_time() {
    let program = terms("1", "-", 200_000);
    let result = within_timeout("the long difference", move || evaluate(program));
    assert_eq!(result, Ok("-199998".to_string()));
}

#[test]
fn a_file_reports_at_most_max_errors_syntax_errors() {
    let program = format!("[ {} ]", terms("1<a", " ", 200_000));
    let errors = within_timeout("the file with an error per term", move || {
        lang::parser::parse(program.as_bytes(), FileId(0))
            .errors
            .len()
    });
    assert_eq!(errors, lang::parser::MAX_ERRORS);
}

#[test]
fn a_file_reports_at_most_max_errors_lexer_errors() {
    // each `./a${x}/ ` is a path with a trailing slash, an error of the lexer's
    let program = format!("let x = \"a\"; in [ {} ]", terms("./a${x}/", " ", 200_000));
    let errors = within_timeout("the file with a lexer error per term", move || {
        lang::parser::parse(program.as_bytes(), FileId(0))
            .errors
            .len()
    });
    assert_eq!(errors, lang::parser::MAX_ERRORS);
}

#[test]
fn a_file_reports_at_most_max_errors_scope_errors() {
    let program = format!("[ {} ]", terms("undefined", " ", 200_000));
    let result = within_timeout("the file with an undefined name per term", move || {
        evaluate(program)
    });
    let codes = result.expect_err("undefined variables");
    assert_eq!(codes.len(), lang::parser::MAX_ERRORS);
    assert!(codes.iter().all(|code| code == "E010"), "{codes:?}");
}

#[test]
fn undefined_long_name_gets_no_quadratic_suggestion() {
    // "did you mean" by edit distance would fill a 200,000 x 200,000 table
    let name = "a".repeat(200_000);
    let program = format!("let {name} = 1; in {name}b");
    let result = within_timeout("the long undefined name", move || evaluate(program));
    assert_eq!(result, Err(vec!["E010".to_string()]));
}

/// An editor abandons a compilation a newer edit made stale: the evaluation notices
/// its cancel flag within a few thousand steps, even without a step budget.
#[test]
fn a_cancelled_evaluation_ends_without_a_budget() {
    let codes = within_timeout("the cancelled evaluation", || {
        let cancelled = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let limits = Limits {
            max_steps: None,
            max_memory: None,
            ..Limits::default()
        };
        let mut machine = Machine::new(
            Rc::new(MemoryLoader::new()),
            vec![PathBuf::from("/hostile")],
            limits,
        )
        .with_cancel_flag(cancelled);
        let program = "let fib = n: if n < 2 then n else fib (n - 1) + fib (n - 2); in fib 90";
        let result = machine.eval_source(
            "hostile.nix",
            None,
            Arc::from(program.as_bytes()),
            Path::new("/hostile"),
        );
        let codes: Vec<String> = match result {
            Ok(_) => Vec::new(),
            Err(diagnostics) => diagnostics.iter().map(|d| d.code.to_string()).collect(),
        };
        std::mem::forget(machine);
        codes
    });
    assert_eq!(codes, ["E043"]);
}
