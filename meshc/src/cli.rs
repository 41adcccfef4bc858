//! The command line of `meshc`, defined once with clap: the global options, the
//! commands, and the arguments several commands share. Each command's own arguments
//! are defined beside the code that runs it (`commands/NAME.rs`). The help, the
//! completions, the man pages and the book's check (`meshc/tests/book.rs`) all read
//! these definitions. Must not run anything.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands;

const EXAMPLES: &str = "\
Examples:
  meshc build                          compile the repository around the current directory
  meshc check --format json            every diagnostic, for tools
  meshc diff                           what the next build would change on each node
  meshc deploy --on @web               build, then apply the plans of the nodes tagged web over SSH
  meshc eval --expr '1 + 2'            evaluate an expression as nix-instantiate would
  meshc completions bash > /etc/bash_completion.d/meshc

Commands that read a repository find it as cargo finds a workspace: the nearest
directory with `mesh.nix` at or above the current one, unless `--repo DIR` names it.

Exit status: 0 success, 1 an error was reported, 2 a usage error (and, with
`meshc diff --detailed-exitcode`, a difference was found).";

/// The fleet configuration compiler: a repository of modules in (a subset of) the Nix
/// language, compiled into one digest-addressed plan per node.
#[derive(Debug, Parser)]
#[command(
    name = "meshc",
    version,
    propagate_version = true,
    subcommand_required = true,
    arg_required_else_help = true,
    args_override_self = true,
    after_help = EXAMPLES
)]
pub struct Cli {
    /// When to colour diagnostics and diffs: `auto` colours a terminal unless
    /// `NO_COLOR` is set to something
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
    /// Show every frame of an error's trace, not only the first three
    #[arg(long, global = true)]
    pub trace: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Eval(commands::eval::EvalArgs),
    Check(commands::check::CheckArgs),
    Lsp(commands::lsp::LspArgs),
    Build(commands::build::BuildArgs),
    Lock(commands::lock::LockArgs),
    Diff(commands::diff::DiffArgs),
    Artifacts(commands::artifacts::ArtifactsArgs),
    Publish(commands::publish::PublishArgs),
    Deploy(commands::deploy::DeployArgs),
    Builds(commands::builds::BuildsArgs),
    BrokerPermissions(commands::broker_permissions::BrokerPermissionsArgs),
    Completions(commands::completions::CompletionsArgs),
    Man(commands::man::ManArgs),
    Show(commands::show::ShowArgs),
    Options(commands::options::OptionsArgs),
    Explain(commands::explain::ExplainArgs),
    Repl(commands::repl::ReplArgs),
    Fmt(commands::fmt::FmtArgs),
    Secrets(commands::secrets::SecretsArgs),
}

impl Command {
    /// Whether the command runs one evaluation at length that frees memory and
    /// reuses it (`eval`, `repl`, the editor's session), for which the binary keeps
    /// freed memory rather than have the kernel zero it again (see `main.rs`). A
    /// build compiles node by node: it took the same time either way (bench/fleet
    /// RESULTS), and running itself again was 2 ms of a 16 ms one-node rebuild.
    pub fn keeps_freed_memory(&self) -> bool {
        matches!(self, Command::Eval(_) | Command::Repl(_) | Command::Lsp(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorWhen {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    // each command's `--format` says what the two mean for it
    Human,
    Json,
}

/// Which repository: `--repo`, else the nearest `mesh.nix` above the working
/// directory.
#[derive(Debug, Args)]
pub struct RepositoryArgs {
    /// The repository (the directory with `mesh.nix`); default: the nearest
    /// directory with `mesh.nix` at or above the current one
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
}

impl RepositoryArgs {
    /// The repository's directory: as given, or found by walking up. A command
    /// that compiles reports a directory without `mesh.nix` as the compilation's
    /// E100 (in its `--format`); one that does not calls [`RepositoryArgs::checked_root`].
    pub fn root(&self, color: ColorWhen) -> Result<PathBuf, crate::terminal::Failure> {
        match &self.repo {
            Some(path) => Ok(path.clone()),
            None => {
                let here = crate::terminal::current_directory(color)?;
                compiler::discover(&here)
                    .map_err(|diagnostic| crate::terminal::fail_alone(&diagnostic, color))
            }
        }
    }
}

impl RepositoryArgs {
    /// [`RepositoryArgs::root`], E100 unless it holds `mesh.nix`: for a command that
    /// reads or writes the repository without compiling it (`meshc lock`).
    pub fn checked_root(&self, color: ColorWhen) -> Result<PathBuf, crate::terminal::Failure> {
        let root = self.root(color)?;
        compiler::check_root(&root)
            .map_err(|diagnostic| crate::terminal::fail_alone(&diagnostic, color))?;
        Ok(root)
    }
}

/// How many evaluation workers compile nodes.
#[derive(Debug, Args)]
pub struct WorkersArgs {
    /// Evaluation workers; default: one per core, at most 8 are used. The output
    /// does not depend on it
    #[arg(long, value_name = "N", env = "MESH_WORKERS", value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: Option<u16>,
}

impl WorkersArgs {
    pub fn get(&self) -> Option<usize> {
        self.workers.map(usize::from)
    }
}

/// The evaluation's bounds.
#[derive(Debug, Args)]
pub struct LimitsArgs {
    /// The evaluation's step budget (default 1000000000)
    #[arg(long, value_name = "N", value_parser = compiler::limits::parse_steps)]
    pub max_steps: Option<u64>,
    /// The evaluation's memory bound: bytes, or with K, M or G (default 4G)
    #[arg(long, value_name = "SIZE", value_parser = compiler::limits::parse_size)]
    pub max_memory: Option<u64>,
}

impl LimitsArgs {
    /// The limits, with the defaults for those not given.
    pub fn get(&self) -> lang::Limits {
        compiler::limits::with(self.max_steps, self.max_memory)
    }

    /// A compilation session with these limits.
    pub fn session(&self) -> compiler::Session {
        compiler::Session {
            limits: self.get(),
            ..Default::default()
        }
    }
}

/// The user's state directory: `$XDG_STATE_HOME`, else `~/.local/state`. A
/// relative value is ignored, as the XDG specification says (it would put state in
/// the working directory, which may be a repository); None when neither is set.
pub fn state_directory() -> Option<PathBuf> {
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|value| value.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute())
                .map(|home| home.join(".local/state"))
        })
}

/// The build output of a repository when none is named: `REPO/build`, refused
/// (E409) when it is a symbolic link. Whoever commits to the repository chooses
/// what `build` is, and a link there would have `meshc build` write plans (and
/// remove stale ones) wherever it points, and `meshc diff` read its old plans from
/// there. A link the operator names with `--out` is followed.
pub fn default_output(
    repository: &Path,
    color: ColorWhen,
) -> Result<PathBuf, crate::terminal::Failure> {
    let out = repository.join("build");
    let is_link = std::fs::symlink_metadata(&out).is_ok_and(|metadata| metadata.is_symlink());
    if !is_link {
        return Ok(out);
    }
    let diagnostic = lang::Diagnostic::error(
        lang::codes::OUTPUT_LINK,
        format!(
            "`{}` is a symbolic link: the repository does not choose where meshc writes or reads its build",
            out.display()
        ),
    )
    .with_help(
        "remove the link (`rm build`) and build again, or name the output yourself with `--out DIR` (`--against DIR` for `meshc diff`): a link you name is followed",
    );
    Err(crate::terminal::fail_alone(&diagnostic, color))
}
