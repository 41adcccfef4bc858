//! `meshc publish`: send each node's plan of a build output to the node's queue and
//! wait for the broker's confirms. What is sent is exactly what `meshc build` wrote
//! (`crate::publish` checks it); nothing is compiled.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

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
    #[command(flatten)]
    pub broker: BrokerArgs,
    /// Publish only this node's plan (repeat for more); default: every node
    #[arg(long, value_name = "NODE")]
    pub node: Vec<String>,
}

/// Which broker a command talks to.
#[derive(Debug, clap::Args)]
pub struct BrokerArgs {
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
    pub fn directory(&self) -> Result<PathBuf, Failure> {
        match &self.out {
            Some(out) => Ok(out.clone()),
            None => {
                let here = std::env::current_dir()
                    .map_err(|error| format!("cannot read the current directory: {error}"))?;
                match compiler::find_root(&here) {
                    Some(root) => Ok(crate::cli::default_output(&root)),
                    None => Err(Failure::Message(format!(
                        "`{}` is not in a mesh repository, so there is no default build: pass `--out DIR`",
                        here.display()
                    ))),
                }
            }
        }
    }
}

pub fn run(arguments: PublishArgs) -> Result<ExitCode, Failure> {
    let out = arguments.output.directory()?;
    let (table, all) = crate::publish::publish(&out, &arguments.broker.amqp, &arguments.node)?;
    terminal::print(table)?;
    Ok(super::status(!all))
}
