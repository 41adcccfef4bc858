//! `meshc check`: compile the repository without writing anything and report every
//! diagnostic, rendered or as JSON. Must not make secrets or write a file.

use std::process::ExitCode;

use clap::Args;

use crate::cli::{ColorWhen, Format, LimitsArgs, RepositoryArgs, WorkersArgs};
use crate::render;
use crate::say;
use crate::terminal::{self, Failure};

/// Report every diagnostic of the repository, writing nothing
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc check
  meshc check --repo examples/homelab --format json | jq '.[].code'

Exits 1 when there is an error; warnings alone exit 0.")]
pub struct CheckArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// `human` renders the diagnostics on standard error; `json` prints them as a
    /// JSON array on standard output
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub workers: WorkersArgs,
    #[command(flatten)]
    pub limits: LimitsArgs,
    #[command(flatten)]
    pub one_node: super::build::OneNodeHabits,
}

pub fn run(arguments: CheckArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.root(color)?;
    let options = compiler::Options {
        workers: arguments.workers.get(),
        ..compiler::Options::inspect()
    };
    // each plan is let go as it is made: only the diagnostics are reported
    let session = compiler::Session {
        sink: Some(std::sync::Arc::new(compiler::Discard)),
        ..arguments.limits.session()
    };
    let compilation = compiler::compile_session(&root, options, &session);
    terminal::traces(&compilation.traces, &compilation.sources);
    if arguments.format == Format::Json {
        let items: Vec<serde_json::Value> = compilation
            .diagnostics
            .iter()
            .map(|d| render::to_json(d, &compilation.sources))
            .collect();
        let text = terminal::pretty_json(&items, "the diagnostics", color)?;
        terminal::print(text)?;
    } else {
        terminal::report(&compilation.diagnostics, &compilation.sources, false, color);
        say!("{}", summary(&compilation));
    }
    let failed = compilation.has_errors();
    // as in `build`: the exit frees the plans faster than dropping them one by one
    std::mem::forget(compilation);
    Ok(super::status(failed))
}

/// The last line of `meshc check`: how many nodes compiled without errors (a node
/// an error was said for is not one of them, though it got a plan), how many
/// errors, which nodes they were said for, and which nodes were not compiled for
/// another's errors.
fn summary(compilation: &compiler::Compilation) -> String {
    let compiled = compilation.plans.keys().chain(&compilation.handed);
    let clean = compiled
        .filter(|node| !compilation.nodes_with_errors.contains(*node))
        .count();
    let mut line = format!(
        "{clean} node(s) compiled without errors, {} error(s)",
        super::error_count(compilation)
    );
    if !compilation.nodes_with_errors.is_empty() {
        line.push_str(&format!(
            "; errors in {}",
            lang::diagnostic::quoted_few(compilation.nodes_with_errors.iter().map(String::as_str))
        ));
    }
    if !compilation.not_compiled.is_empty() {
        line.push_str(&format!(
            "; not compiled, as they consume from a node with errors: {}",
            lang::diagnostic::quoted_few(compilation.not_compiled.iter().map(String::as_str))
        ));
    }
    line
}
