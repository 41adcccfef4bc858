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
  MESH_AMQP_URL=amqp://operator:secret@broker:5672/%2f meshc publish")]
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
    /// The output as given, else `REPO/build` of the repository found by walking up
    /// (E100 when there is none), opened for reading (E408 when it cannot be). The
    /// default output is read as it was judged to be this user's build (E422).
    pub fn open(&self, color: ColorWhen) -> Result<compiler::BuildOutput, Failure> {
        let fail = |diagnostic: Box<lang::Diagnostic>| terminal::fail_alone(&diagnostic, color);
        match &self.out {
            Some(out) => crate::publish::open(out).map_err(fail),
            None => {
                let here = terminal::current_directory(color)?;
                match compiler::find_root(&here) {
                    Some(root) => {
                        let out = crate::cli::default_output(&root, color)?;
                        // a build the repository brought is not published
                        crate::made_here::open(&out, &crate::publish::help(&out), color)?
                            .map_err(|missing| fail(Box::new(missing)))
                    }
                    None => Err(terminal::fail_alone(
                        &lang::Diagnostic::error(
                            lang::codes::NOT_A_REPOSITORY,
                            format!(
                                "`{}` is not in a mesh repository, so there is no default build",
                                here.display()
                            ),
                        )
                        .with_help(
                            "pass `--out DIR` (the output of a `meshc build`), or run meshc inside the repository that was built",
                        ),
                        color,
                    )),
                }
            }
        }
    }
}

pub fn run(arguments: PublishArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let output = arguments.output.open(color)?;
    let (table, all) = crate::publish::publish(&output, &arguments.broker.amqp, &arguments.node)
        .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    terminal::print(table)?;
    Ok(super::status(!all))
}
