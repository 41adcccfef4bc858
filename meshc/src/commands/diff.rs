//! `meshc diff`: what would change on each node, either between the repository and
//! its last build (refused when that build was made from another repository) or
//! between two build outputs. Writes nothing.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use compiler::Snapshot;

use crate::cli::{ColorWhen, Format, RepositoryArgs, WorkersArgs};
use crate::say;
use crate::terminal::{self, Failure};

/// Show what would change on each node, against the last build or between two builds
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc diff                           the repository against REPO/build
  meshc diff --against /srv/mesh/deployed
  meshc diff old-build new-build --format json
  meshc diff --detailed-exitcode       in CI: exit 2 when something would change

Exit status: 0 no difference (or no --detailed-exitcode), 1 an error, 2 a difference
with --detailed-exitcode.")]
pub struct DiffArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// The build to compare the repository with; default: `build` in the repository
    #[arg(long, value_name = "DIR", conflicts_with = "outputs")]
    pub against: Option<PathBuf>,
    /// `human` is a readable diff; `json` one object for tools
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Human)]
    pub format: Format,
    /// Exit 2 when there is a difference (0 when there is none)
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Two build outputs to compare (OLD NEW) instead of the repository
    #[arg(value_names = ["OLD", "NEW"], num_args = 2, conflicts_with = "repo")]
    pub outputs: Vec<PathBuf>,
    #[command(flatten)]
    pub workers: WorkersArgs,
}

fn read(directory: &std::path::Path, color: ColorWhen) -> Result<Snapshot, Failure> {
    Snapshot::read(directory).map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))
}

/// The repository compiled, and its last build (checked to be of this repository).
/// The last build is read first (its manifest only): a plan whose digest it already
/// has is let go as soon as it is made, so only what changed is kept to be compared.
fn repository_and_build(
    arguments: &DiffArgs,
    color: ColorWhen,
) -> Result<(Snapshot, Snapshot), Failure> {
    let root = arguments.repository.root(color)?;
    // the default output is judged by its manifest, and read as it was judged
    let (against, judged) = match arguments.against.clone() {
        // a build named that is not there is a mistake (a path mistyped, a build
        // not copied yet), not a fleet with every node new: only the default
        // output may not have been built yet
        Some(against) if !std::fs::metadata(&against).is_ok_and(|found| found.is_dir()) => {
            let reason = if std::fs::symlink_metadata(&against).is_err() {
                "there is no such directory"
            } else {
                "it is not a directory"
            };
            let diagnostic = compiler::build_unreadable(
                &against,
                reason,
                "name the directory a `meshc build` wrote (`--against DIR`), or leave `--against` out to compare with the repository's own last build",
            );
            return Err(terminal::fail_alone(&diagnostic, color));
        }
        Some(against) => (against, None),
        None => {
            let out = crate::cli::default_output(&root, color)?;
            // a build the repository brought would be the baseline of the diff
            let judged = crate::made_here::open(&out, compiler::Snapshot::UNREADABLE_HELP, color)?;
            (out, Some(judged))
        }
    };
    let built = match &judged {
        // a missing directory holds no build
        Some(judged) => judged
            .as_ref()
            .is_ok_and(compiler::BuildOutput::has_manifest),
        None => against.join("manifest.json").exists(),
    };
    // its errors are said after the repository's, as before it was read first
    let old = if built {
        // the repository as the compilation names it (a canonical path)
        let compiled = root.canonicalize().unwrap_or_else(|_| root.clone());
        compiler::check_built_from(&against, &compiled)
            .map_err(|diagnostic| *diagnostic)
            .and_then(|()| match judged {
                Some(Ok(output)) => Snapshot::of_output(output),
                Some(Err(missing)) => Err(missing),
                None => Snapshot::read(&against),
            })
    } else {
        Ok(Snapshot::empty())
    };
    let changed = std::sync::Arc::new(compiler::Changed::against(
        old.as_ref().unwrap_or(&Snapshot::empty()),
    ));
    let options = compiler::Options {
        workers: arguments.workers.get(),
        ..compiler::Options::inspect()
    };
    let session = compiler::Session {
        sink: Some(changed.clone()),
        ..compiler::Session::default()
    };
    let compilation = compiler::compile_session(&root, options, &session);
    if compilation.has_errors() {
        terminal::report(&compilation.diagnostics, &compilation.sources, false, color);
        return Err(Failure::Reported);
    }
    let old = old.map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    if built && compiler::built_from(&against).is_none() {
        // made before builds recorded their repository, or the record was lost: it
        // cannot be told from a build of another repository (E420)
        say!(
            "warning: the build in `{}` does not record the repository it was made from: it is compared as a build of this one",
            against.display()
        );
    }
    if !built {
        say!(
            "note: there is no build in `{}`: every node is new",
            against.display()
        );
    }
    let new = Snapshot::from_sink(&changed, compilation.keys, compilation.secrets);
    Ok((old, new))
}

pub fn run(arguments: DiffArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let (old, new) = match arguments.outputs.as_slice() {
        [old, new] => (read(old, color)?, read(new, color)?),
        _ => repository_and_build(&arguments, color)?,
    };
    let difference = compiler::diff(&old, &new)
        .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    let text = match arguments.format {
        Format::Json => {
            let mut text = compiler::render_diff_json(&difference);
            text.push('\n');
            text
        }
        Format::Human => compiler::render_diff(&difference, color.colour(&std::io::stdout())),
    };
    terminal::print(text)?;
    Ok(if arguments.detailed_exitcode && !difference.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
