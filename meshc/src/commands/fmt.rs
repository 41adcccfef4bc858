//! `meshc fmt`: formats `.nix` files in place in the community's style (see
//! `crate::format`), or with `--check` only lists those that would change, for CI.
//! It writes only the files it was given (or found), and only when they change; a file
//! is replaced whole (a temporary beside it renamed over it), never left half-written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::cli::ColorWhen;
use crate::format::{COMMAND_TIME_LIMIT, format_text, nix_files};
use crate::say;
use crate::terminal::{self, Failure};

/// Format `.nix` files in the community's style (alejandra's)
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc fmt
  meshc fmt --check
  meshc fmt modules/web/module.nix examples/

With no PATH, every `.nix` file of the repository: the nearest directory with
`mesh.nix` at or above the current one (hidden directories and `build/` left out).
With `--check`, nothing is written: the files that would change are listed on
standard output and the status is 1 if there is one.")]
pub struct FmtArgs {
    /// Files or directories to format (directories: every `.nix` file below)
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Write nothing; list the files that would change and exit with 1 if any would
    #[arg(long)]
    pub check: bool,
}

/// What happened to one file.
enum Outcome {
    Unchanged,
    Changed,
    Failed,
}

pub fn run(arguments: FmtArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let paths = if arguments.paths.is_empty() {
        let here = terminal::current_directory(color)?;
        vec![
            compiler::discover(&here)
                .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?,
        ]
    } else {
        arguments.paths
    };
    let mut files = Vec::new();
    for path in &paths {
        let found = nix_files(path).map_err(|error| {
            let diagnostic = lang::Diagnostic::error(
                lang::codes::FILE_UNREADABLE,
                format!("cannot read `{}`: {error}", path.display()),
            )
            .with_help(
                "pass files or directories that exist and can be read; nothing was formatted",
            );
            terminal::fail_alone(&diagnostic, color)
        })?;
        files.extend(found);
    }
    let (mut changed, mut failed) = (0usize, 0usize);
    for file in &files {
        match format_one(file, arguments.check, color)? {
            Outcome::Unchanged => {}
            Outcome::Changed => changed += 1,
            Outcome::Failed => failed += 1,
        }
    }
    if !arguments.check && files.len() > 1 {
        say!(
            "formatted {} files: {changed} changed, {failed} could not be formatted",
            files.len()
        );
    }
    Ok(super::status(
        failed > 0 || (arguments.check && changed > 0),
    ))
}

/// The most the formatter reads of one file: far more than any module, and a bound
/// on what a sparse file can make it hold.
const SOURCE_LIMIT: u64 = 64 << 20;

/// The bytes of `file` (through a link, as the file it leads to is the one
/// formatted): a regular file of at most [`SOURCE_LIMIT`] bytes, opened without
/// waiting for a FIFO's writer.
fn read_source(file: &Path) -> std::io::Result<Vec<u8>> {
    compiler::read_regular_following(file, SOURCE_LIMIT)?.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("it is not a regular file of at most {SOURCE_LIMIT} bytes"),
        )
    })
}

fn format_one(file: &Path, check: bool, color: ColorWhen) -> Result<Outcome, Failure> {
    let name = file.display().to_string();
    let mut sources = lang::Sources::new();
    let diagnostic_of = |message: String, code| lang::Diagnostic::error(code, message);
    let text = match read_source(file) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                let diagnostic = diagnostic_of(
                    format!("`{name}` is not UTF-8 text"),
                    lang::codes::FORMATTER_REFUSED,
                )
                .with_help("the formatter reads UTF-8 text only; convert the file");
                terminal::report(&[diagnostic], &sources, false, color);
                return Ok(Outcome::Failed);
            }
        },
        Err(error) => {
            let diagnostic = diagnostic_of(
                format!("cannot read `{name}`: {error}"),
                lang::codes::FILE_UNREADABLE,
            )
            .with_help("check that the file exists and can be read");
            terminal::report(&[diagnostic], &sources, false, color);
            return Ok(Outcome::Failed);
        }
    };
    let formatted = match format_text(&name, &text, &mut sources, COMMAND_TIME_LIMIT) {
        Ok(formatted) => formatted,
        Err(diagnostics) => {
            terminal::report(&diagnostics, &sources, false, color);
            return Ok(Outcome::Failed);
        }
    };
    if formatted == text {
        return Ok(Outcome::Unchanged);
    }
    if check {
        // a file name is the repository's to choose: it reaches the terminal escaped
        terminal::print(format!("{}\n", plan::display::escaped(&name)))?;
        return Ok(Outcome::Changed);
    }
    if let Err(error) = replace(file, formatted.as_bytes()) {
        let diagnostic = diagnostic_of(
            format!("cannot write `{name}`: {error}"),
            lang::codes::FORMATTED_FILE_UNWRITABLE,
        )
        .with_help("check that the file and its directory can be written");
        terminal::report(&[diagnostic], &sources, false, color);
        return Ok(Outcome::Failed);
    }
    Ok(Outcome::Changed)
}

/// Replaces `file` (the file a symlink there leads to) with `bytes` as a whole: they are
/// written to a temporary file beside it, which takes the file's mode and owner and is
/// synced, then renamed over it. A write that fails (a full disk, a size limit, an
/// owner that cannot be kept) leaves the file as it was and no temporary behind.
fn replace(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let target = std::fs::canonicalize(file)?;
    let metadata = std::fs::metadata(&target)?;
    let directory = target.parent().unwrap_or(Path::new("/"));
    let mut temporary = tempfile::Builder::new()
        .prefix(".mesh-fmt.")
        .tempfile_in(directory)?;
    temporary.write_all(bytes)?;
    let written = temporary.as_file();
    written.set_permissions(metadata.permissions())?;
    if (metadata.uid(), metadata.gid()) != written.metadata().map(|m| (m.uid(), m.gid()))? {
        std::os::unix::fs::fchown(written, Some(metadata.uid()), Some(metadata.gid()))?;
    }
    written.sync_all()?;
    temporary.persist(&target).map_err(|error| error.error)?;
    Ok(())
}
