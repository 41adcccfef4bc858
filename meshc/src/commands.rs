//! One module per `meshc` command: its arguments (clap) and what it does with the
//! compiler's result. Each `run` returns the exit status or a [`Failure`]; none
//! writes to standard output but through `terminal::print`.

pub mod artifacts;
pub mod broker_permissions;
pub mod build;
pub mod builds;
pub mod check;
pub mod completions;
pub mod deploy;
pub mod diff;
pub mod eval;
pub mod explain;
pub mod fmt;
pub mod lock;
pub mod lsp;
pub mod man;
pub mod options;
pub mod publish;
pub mod repl;
pub mod secrets;
pub mod show;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::terminal::Failure;

/// Runs the command the command line names.
pub fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let color = cli.color;
    match cli.command {
        Command::Eval(arguments) => eval::run(arguments, color),
        Command::Check(arguments) => check::run(arguments, color),
        Command::Lsp(arguments) => lsp::run(arguments, color),
        Command::Build(arguments) => build::run(arguments, color),
        Command::Lock(arguments) => lock::run(arguments, color),
        Command::Diff(arguments) => diff::run(arguments, color),
        Command::Artifacts(arguments) => artifacts::run(arguments, color),
        Command::Publish(arguments) => publish::run(arguments, color),
        Command::Deploy(arguments) => deploy::run(arguments, color),
        Command::Builds(arguments) => builds::run(arguments, color),
        Command::BrokerPermissions(arguments) => broker_permissions::run(arguments, color),
        Command::Completions(arguments) => completions::run(arguments),
        Command::Man(arguments) => man::run(arguments, color),
        Command::Show(arguments) => show::run(arguments, color),
        Command::Options(arguments) => options::run(arguments, color),
        Command::Explain(arguments) => explain::run(arguments, color),
        Command::Repl(arguments) => repl::run(arguments, color),
        Command::Fmt(arguments) => fmt::run(arguments, color),
        Command::Secrets(arguments) => secrets::run(arguments, color),
    }
}

/// Counts the errors among a compilation's diagnostics.
fn error_count(compilation: &compiler::Compilation) -> usize {
    lang::error_count(&compilation.diagnostics)
}

/// The exit status for "failed or not".
fn status(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
