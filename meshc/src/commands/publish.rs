//! `meshc publish`: send each node's plan of a build output to the node's queue and
//! wait for the broker's confirms. What is sent is exactly what `meshc build` wrote
//! (`crate::publish` checks it); nothing is compiled.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::ColorWhen;
use crate::terminal::{self, Failure};

/// Send each node's plan to its queue (waits for the broker's confirms)
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc publish                        the build in REPO/build, every node
  meshc publish --out /tmp/build --node db1 --node app1
  MESH_AMQP_URL=amqps://operator:secret@broker/%2f meshc publish")]
pub struct PublishArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// The broker's URL
    #[arg(
        long,
        value_name = "URL",
        env = transport::names::URL_VARIABLE,
        hide_env_values = true,
        default_value = transport::names::DEFAULT_URL,
        hide_default_value = true
    )]
    pub amqp: String,
    /// Publish only this node's plan (repeat for more); default: every node
    #[arg(long, value_name = "NODE")]
    pub node: Vec<String>,
}

/// Which build output a command reads.
#[derive(Debug, clap::Args)]
pub struct OutputArgs {
    /// The build output (what `meshc build --out` wrote); default: `build` in the
    /// repository around the current directory
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl OutputArgs {
    /// The output as given, else `REPO/build` of the repository found by walking up.
    pub fn directory(&self, color: ColorWhen) -> Result<PathBuf, Failure> {
        match &self.out {
            Some(out) => Ok(out.clone()),
            None => {
                let repository = crate::cli::RepositoryArgs { repo: None };
                Ok(crate::cli::default_output(&repository.root(color)?))
            }
        }
    }
}

pub fn run(arguments: PublishArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let out = arguments.output.directory(color)?;
    let (table, all) = crate::publish::publish(&out, &arguments.amqp, &arguments.node)?;
    terminal::print(table)?;
    Ok(super::status(!all))
}
