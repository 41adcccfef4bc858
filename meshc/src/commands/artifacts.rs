//! `meshc artifacts build`: build the repository's declared artifacts into
//! reproducible archives, here or on the builder through the broker, and record their
//! digests in `mesh.lock`. The archive format is the `archive` crate's.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::cli::{ColorWhen, RepositoryArgs};
use crate::say;
use crate::terminal::{self, Failure};

/// Build the artifacts the repository declares
#[derive(Debug, Args)]
#[command(
    subcommand_required = true,
    arg_required_else_help = true,
    after_help = "\
Examples:
  meshc artifacts build
  MESH_AMQP_URL=amqp://operator:secret@broker:5672/%2f meshc artifacts build --remote"
)]
pub struct ArtifactsArgs {
    #[command(subcommand)]
    pub command: ArtifactsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ArtifactsCommand {
    /// Build every declared artifact and record its digest in `mesh.lock`
    #[command(after_help = "\
Examples:
  meshc artifacts build                      archives in REPO/.mesh/artifacts
  meshc artifacts build --store /var/cache/mesh
  meshc artifacts build --remote --timeout 600

A digest in `mesh.lock` for a directory no module declares any more is removed.")]
    Build(BuildArtifactsArgs),
}

#[derive(Debug, Args)]
pub struct BuildArtifactsArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// Where local builds keep their archives; default: `.mesh/artifacts` in the repository
    #[arg(long, value_name = "DIR", conflicts_with = "remote")]
    pub store: Option<PathBuf>,
    /// Ask the builder (`mesh-build`) through the broker instead of building here
    #[arg(long)]
    pub remote: bool,
    /// The broker, with `--remote`
    #[command(flatten)]
    pub broker: super::publish::BrokerArgs,
    /// How long to wait for the builder's answers, in seconds, with `--remote`
    #[arg(long, value_name = "SECONDS", default_value_t = crate::builds::DEFAULT_REMOTE_TIMEOUT.as_secs(), requires = "remote")]
    pub timeout: u64,
}

pub fn run(arguments: ArtifactsArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    match arguments.command {
        ArtifactsCommand::Build(arguments) => build(arguments, color),
    }
}

/// Whether a compilation's diagnostic stops `meshc artifacts build`: every error but
/// the two that only say `mesh.lock` lacks an entry (an artifact not built or changed
/// since, the very thing this command records; a mirror not pinned, `meshc lock`'s).
/// Any other error may hide artifact declarations (a node whose module failed
/// declares none), and the lock keeps only the declared ones.
fn blocks_artifacts(diagnostic: &lang::Diagnostic) -> bool {
    diagnostic.severity == lang::Severity::Error
        && diagnostic.code != lang::codes::UNBUILT_ARTIFACT
        && diagnostic.code != lang::codes::UNPINNED_MIRROR
}

/// E315: an artifact could not be archived or stored; `mesh.lock` is left as it was.
fn not_stored(message: String) -> lang::Diagnostic {
    lang::Diagnostic::error(lang::codes::ARTIFACT_NOT_STORED, message).with_help(
        "check that the artifact's directory can be read (regular files, directories and links only) and the store can be written (`--store DIR`, default `.mesh/artifacts`, a real directory of the repository); `mesh.lock` was not changed",
    )
}

fn build(arguments: BuildArtifactsArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.root(color)?;
    let compilation = compiler::compile(&root);
    let blocking: Vec<lang::Diagnostic> = compilation
        .diagnostics
        .iter()
        .filter(|diagnostic| blocks_artifacts(diagnostic))
        .cloned()
        .collect();
    if !blocking.is_empty() {
        terminal::traces(&compilation.traces, &compilation.sources);
        terminal::report(&blocking, &compilation.sources, false, color);
        say!(
            "{} error(s): no artifact built and `mesh.lock` not changed (a node that does not compile may declare artifacts this build would not see, and their digests would be dropped)",
            blocking.len()
        );
        return Err(Failure::Reported);
    }
    let mut lock = compiler::read_lock(&compilation.root)
        .map_err(|diagnostic| terminal::fail(&diagnostic, &compilation.sources, color))?;
    if compilation.artifact_directories.is_empty() {
        say!("the repository declares no artifacts");
    }
    let mut all_built = true;
    if arguments.remote {
        let directories: Vec<String> = compilation.artifact_directories.keys().cloned().collect();
        if !directories.is_empty() {
            let timeout = Duration::from_secs(arguments.timeout);
            let (digests, all) =
                crate::builds::build_remotely(&directories, &arguments.broker.amqp, timeout)
                    .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
            all_built = all;
            lock.artifacts.extend(digests);
        }
    } else {
        for (directory, absolute) in &compilation.artifact_directories {
            let built = archive::build_checked(absolute).map_err(|error| {
                let diagnostic = match error {
                    // made between the compilation's check and this build
                    archive::BuildError::EscapingLink(link) => lang::Diagnostic::error(
                        lang::codes::ARTIFACT_LINK_ESCAPES,
                        format!("cannot archive `{directory}`: {link}"),
                    )
                    .with_help("make the link point inside the artifact's directory, or replace it with what it points to"),
                    archive::BuildError::Other(reason) => not_stored(
                        format!("cannot archive `{directory}`: {reason}"),
                    ),
                };
                terminal::fail(&diagnostic, &compilation.sources, color)
            })?;
            let path = match &arguments.store {
                Some(store) => archive::store(store, &built),
                None => compiler::store_in_repository(&compilation.root, &built),
            }
            .map_err(|error| {
                let diagnostic = not_stored(format!("cannot store `{directory}`: {error}"));
                terminal::fail(&diagnostic, &compilation.sources, color)
            })?;
            // the directory is the repository's, shown and never obeyed
            say!(
                "built {} -> {} ({} bytes)",
                plan::display::escaped(directory),
                path.display(),
                built.bytes.len()
            );
            lock.artifacts.insert(directory.clone(), built.digest);
        }
    }
    lock.artifacts
        .retain(|directory, _| compilation.artifact_directories.contains_key(directory));
    compiler::write_lock(&compilation.root, &lock)
        .map_err(|diagnostic| terminal::fail(&diagnostic, &compilation.sources, color))?;
    Ok(super::status(!all_built))
}
