//! `meshc explain CODE`: prints the book's page of a diagnostic code, embedded in the
//! binary, as `rustc --explain` does (plain markdown on standard output). Must not
//! read the book at run time.

use std::process::ExitCode;

use clap::Args;

use crate::cli::ColorWhen;
use crate::terminal::{self, Failure};

/// Print the book's page of a diagnostic code
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc explain E101
  meshc explain e300 | less

Exits 1 (E121) when no page has that code, with the closest codes.")]
pub struct ExplainArgs {
    /// The code, as printed at the top of a diagnostic (`E101`; case does not matter)
    #[arg(value_name = "CODE")]
    pub code: String,
}

pub fn run(arguments: ExplainArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    match compiler::error_page(&arguments.code) {
        Some(page) => {
            terminal::print(page)?;
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let diagnostic = lang::Diagnostic::error(
                lang::codes::UNKNOWN_CODE,
                format!("no diagnostic code `{}`", arguments.code.trim()),
            )
            .with_help(compiler::unknown_code_help(&arguments.code));
            Err(terminal::fail_alone(&diagnostic, color))
        }
    }
}
