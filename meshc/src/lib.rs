//! The `meshc` command line: the clap definitions (`cli`), one module per command
//! (`commands/`), diagnostics rendered for the terminal and for tools (`render`,
//! `terminal`), and the language server (`lsp`). The only crate that knows the
//! terminal and the editor's protocol; what a command computes is the `compiler`
//! crate's. A library beside the binary so that tests read the very definitions the
//! binary parses (the book's commands chapter is checked against them).
#![forbid(unsafe_code)]
#![allow(clippy::result_large_err)]

pub mod builds;
pub mod cli;
pub mod commands;
pub mod deploy;
pub mod evaluate;
pub mod format;
pub mod lsp;
pub mod made_here;
pub mod publish;
pub mod render;
pub mod repl;
pub mod terminal;

use std::process::ExitCode;

use clap::Parser;

/// The command line, parsed: a usage error ends the program here (exit 2, with
/// clap's suggestions).
pub fn parse() -> cli::Cli {
    cli::Cli::parse()
}

/// Runs the command. Failures exit 1; a closed standard output ends the program
/// quietly.
pub fn run(cli: cli::Cli) -> ExitCode {
    let color = cli.color;
    terminal::show_full_traces(cli.trace);
    match commands::run(cli) {
        Ok(code) => code,
        Err(failure) => failure.exit_code(color),
    }
}
