//! `meshc lsp`: the language server on standard input and output. The server is
//! `crate::lsp`'s; this file only declares the command.

use std::process::ExitCode;

use clap::Args;

use crate::cli::ColorWhen;
use crate::terminal::{self, Failure};

/// Run the language server over standard input and output (diagnostics, hover,
/// definition, completion)
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc lsp                            started by an editor, never by hand

The server finds each file's repository as the other commands do (the nearest
`mesh.nix` above it) and publishes exactly `meshc check`'s diagnostics. See the
book's chapter on editors for the settings of VS Code, Neovim, Helix and Emacs.")]
pub struct LspArgs {}

pub fn run(_arguments: LspArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    crate::lsp::run().map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    Ok(ExitCode::SUCCESS)
}
