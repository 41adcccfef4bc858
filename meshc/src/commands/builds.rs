//! `meshc builds`: the builder's record of every build result, failures included, as
//! a table or JSON lines. Reads the record only (`crate::builds`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::{ColorWhen, Format};
use crate::terminal::{self, Failure};

/// Show the builder's record of every build result, failures included
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc builds                         on the builder's machine
  meshc builds --store /srv/builds --format json | jq 'select(.outcome == \"failed\")'")]
pub struct BuildsArgs {
    /// The builder's store (where `mesh-build --store` keeps archives and its record)
    #[arg(long, value_name = "DIR", default_value = transport::builder::DEFAULT_STORE)]
    pub store: PathBuf,
    /// `human` is a table; `json` one JSON object per line
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Human)]
    pub format: Format,
}

pub fn run(arguments: BuildsArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let text = crate::builds::render(&arguments.store, arguments.format == Format::Json)
        .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    terminal::print(text)?;
    Ok(ExitCode::SUCCESS)
}
