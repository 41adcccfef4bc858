//! The fuzz corpora as ordinary tests: every file in `lang/fuzz/corpus/parse/` goes
//! through the `parse` target's function and every file in `lang/fuzz/corpus/eval/`
//! through the `eval` target's (the same code, included from `lang/fuzz/src/lib.rs`).
//! Inputs the fuzzer once crashed on live there, so each stays fixed. Reads the
//! corpus directories only; never writes to them.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

#[path = "../fuzz/src/lib.rs"]
mod harness;

fn corpus(target: &str) -> Vec<PathBuf> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", directory.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "the corpus {} is empty",
        directory.display()
    );
    files
}

/// Runs `run` on every input of `target`'s corpus and names every input it panicked on.
fn run_corpus(target: &str, run: impl Fn(&[u8])) {
    let mut failed = Vec::new();
    let files = corpus(target);
    for path in &files {
        let data = std::fs::read(path).expect("a corpus file");
        if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} `{target}` corpus inputs panicked:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
}

#[test]
fn parse_corpus_never_panics() {
    run_corpus("parse", |data| {
        harness::parse(data);
    });
}

#[test]
fn eval_corpus_never_panics() {
    run_corpus("eval", |data| {
        harness::eval(data);
    });
}

/// The parser also sees every program of the evaluator's corpus.
#[test]
fn eval_corpus_parses() {
    run_corpus("eval", |data| {
        harness::parse(data);
    });
}

/// Builtins and operators that make big values in one step count what they make
/// against the step budget and the memory bound; without that, these ran out of
/// memory (or took hours) under the fuzzing limits, where each is a handful of calls.
/// A list too big for the memory bound is refused before it is made (E046), one that
/// grows by doubling runs out of steps first (E043).
#[test]
fn step_budget_bounds_what_builtins_make() {
    for (name, code) in [
        ("huge-genlist-under-step-budget.nix", "E046"),
        ("doubling-concat-under-step-budget.nix", "E043"),
        ("doubling-concat-lists-under-step-budget.nix", "E043"),
        ("doubling-string-under-step-budget.nix", "E043"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/corpus/eval")
            .join(name);
        let program = std::fs::read(&path).expect("a corpus file");
        assert_eq!(
            harness::eval(&program),
            harness::Outcome::Failed(vec![code.to_string()]),
            "{name}"
        );
    }
}
