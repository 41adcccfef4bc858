//! `meshc completions SHELL`: the shell's completion script, generated from the clap
//! definitions (clap_complete), so it never lists a flag meshc does not have.

use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::cli::Cli;
use crate::terminal::{self, Failure};

/// Print the completion script for a shell
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc completions bash > /etc/bash_completion.d/meshc
  meshc completions zsh > \"${fpath[1]}/_meshc\"
  meshc completions fish > ~/.config/fish/completions/meshc.fish
  meshc completions elvish >> ~/.config/elvish/rc.elv
  meshc completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

pub fn run(arguments: CompletionsArgs) -> Result<ExitCode, Failure> {
    let mut script = Vec::new();
    clap_complete::generate(arguments.shell, &mut Cli::command(), "meshc", &mut script);
    terminal::print(script)?;
    Ok(ExitCode::SUCCESS)
}
