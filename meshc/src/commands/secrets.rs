//! `meshc secrets reseal NODE --identity OLD`: keep a node's secret values across a
//! change of its key. The repository is compiled (nothing made) for the node's
//! current key; the compiler opens the values with the old identity in memory and
//! seals them to that key. Prints counts and store paths, never a value.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::cli::{ColorWhen, RepositoryArgs};
use crate::say;
use crate::terminal::{self, Failure};

/// Work on the sealed store in `secrets/`
#[derive(Debug, Args)]
#[command(
    subcommand_required = true,
    arg_required_else_help = true,
    after_help = "\
Examples:
  meshc secrets reseal db1 --identity old-db1.identity"
)]
pub struct SecretsArgs {
    #[command(subcommand)]
    pub command: SecretsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Reseal a node's needs and grants, unchanged, to its new key
    #[command(after_help = "\
Examples:
  meshc secrets reseal db1 --identity old-db1.identity

First set the node's new public key as its `key` in mesh.nix. The values keep their
ids, so `meshc diff` then says `same value, resealed to a new key`, and the next
`meshc build` keeps them. A wrong identity changes nothing.")]
    Reseal(ResealArgs),
}

#[derive(Debug, Args)]
pub struct ResealArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// The node whose values to reseal to its current `key`
    #[arg(value_name = "NODE")]
    pub node: String,
    /// The node's previous age identity file (what `age-keygen` wrote for the old key)
    #[arg(long, value_name = "FILE")]
    pub identity: PathBuf,
}

pub fn run(arguments: SecretsArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    match arguments.command {
        SecretsCommand::Reseal(arguments) => reseal(arguments, color),
    }
}

fn reseal(arguments: ResealArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.root(color)?;
    let compilation = compiler::compile_with(&root, compiler::Options::inspect());
    if compilation.has_errors() {
        terminal::report(&compilation.diagnostics, &compilation.sources, false, color);
        say!("reseal refused: the repository does not compile; nothing was changed");
        return Ok(ExitCode::from(1));
    }
    let Some(key) = compilation.keys.get(&arguments.node) else {
        let known = compilation.keys.keys().map(String::as_str);
        let help = lang::diagnostic::did_you_mean(&arguments.node, known)
            .unwrap_or_else(|| "name a node of the inventory (`nodes` in mesh.nix)".to_string());
        let diagnostic = lang::Diagnostic::error(
            lang::codes::RESEAL_UNKNOWN_NODE,
            format!(
                "there is no node `{}` in the inventory",
                plan::display::escaped(&arguments.node)
            ),
        )
        .with_help(help);
        return Err(terminal::fail_alone(&diagnostic, color));
    };
    let report = compiler::reseal(&compilation.root, &arguments.node, key, &arguments.identity)
        .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    for path in &report.other_key {
        say!(
            "note: `{}` is sealed to another key than the identity's: left as it is (the next `meshc build` makes it anew)",
            // named by whoever commits to secrets/
            plan::display::escaped(path)
        );
    }
    if report.given_ids > 0 {
        say!(
            "note: {} value(s) made before ids were kept got an id now",
            report.given_ids
        );
    }
    if report.needs + report.grants == 0 {
        say!(
            "nothing to reseal: {} of node `{}`'s values are sealed to its current key{}",
            report.current,
            arguments.node,
            if report.other_key.is_empty() {
                String::new()
            } else {
                format!(
                    "; the {} noted above are sealed to keys this identity does not have (if they should open with it, it is the wrong identity)",
                    report.other_key.len()
                )
            }
        );
    } else {
        say!(
            "resealed {} need(s) and {} grant side(s) of node `{}` to its current key: the next `meshc build` keeps them; commit secrets/",
            report.needs,
            report.grants,
            arguments.node
        );
    }
    Ok(ExitCode::SUCCESS)
}
