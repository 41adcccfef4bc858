//! `meshc man --out DIR`: man pages generated from the clap definitions
//! (clap_mangen): `meshc.1` and one `meshc-COMMAND.1` per command (and
//! `meshc-artifacts-build.1`), and the pages of the other programs, `mesh-apply.1`,
//! `mesh-build.1` and `mesh-provision.1`, from their own crates' definitions. Writes
//! only into DIR.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory};

use crate::cli::{Cli, ColorWhen};
use crate::say;
use crate::terminal::{self, Failure};

/// Write the man pages of meshc, of each of its commands and of mesh-apply,
/// mesh-build and mesh-provision
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc man --out /usr/local/share/man/man1 && mandb
  cargo run --release -p meshc -- man --out target/man && man -l target/man/meshc-build.1")]
pub struct ManArgs {
    /// The directory to write the pages into (made if missing)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// E055: a man page, or the directory for them, cannot be written.
fn unwritable(message: String) -> lang::Diagnostic {
    lang::Diagnostic::error(lang::codes::MAN_PAGES_UNWRITABLE, message).with_help(
        "pass `--out` a directory you can write (it is made if missing), such as `target/man`",
    )
}

pub fn run(arguments: ManArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    std::fs::create_dir_all(&arguments.out).map_err(|error| {
        let message = format!("cannot make `{}`: {error}", arguments.out.display());
        terminal::fail_alone(&unwritable(message), color)
    })?;
    let mut written = 0;
    for (name, mut command) in [
        ("meshc", Cli::command()),
        ("mesh-apply", applier::config::command()),
        ("mesh-build", transport::build_command::Arguments::command()),
        ("mesh-provision", provisioner::config::command()),
    ] {
        command.build();
        write_pages(&command, name, &arguments.out, &mut written)
            .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    }
    say!("wrote {written} man page(s) in {}", arguments.out.display());
    Ok(ExitCode::SUCCESS)
}

/// Writes `NAME.1` for `command` and the pages of its subcommands below it.
fn write_pages(
    command: &clap::Command,
    name: &str,
    out: &Path,
    written: &mut usize,
) -> Result<(), Box<lang::Diagnostic>> {
    let page = command.clone().name(name.to_string());
    let mut bytes = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut bytes)
        .map_err(|error| unwritable(format!("cannot render the man page `{name}`: {error}")))?;
    let path = out.join(format!("{name}.1"));
    std::fs::write(&path, bytes)
        .map_err(|error| unwritable(format!("cannot write `{}`: {error}", path.display())))?;
    *written += 1;
    for subcommand in command.get_subcommands() {
        if subcommand.get_name() == "help" {
            continue;
        }
        let sub_name = format!("{name}-{}", subcommand.get_name());
        write_pages(subcommand, &sub_name, out, written)?;
    }
    Ok(())
}
