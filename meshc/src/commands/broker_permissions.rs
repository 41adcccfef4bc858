//! `meshc broker-permissions`: print the `rabbitmqctl` commands that give each node
//! of a build, the builder and the operator their own least-privilege user. Prints
//! only; changes nothing on the broker.

use std::process::ExitCode;

use clap::Args;

use crate::cli::ColorWhen;
use crate::commands::publish::OutputArgs;
use crate::terminal::{self, Failure};

/// Print the rabbitmqctl commands that give each node, the builder and the operator
/// their own least-privilege user
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc broker-permissions > permissions.sh && sh permissions.sh
  meshc broker-permissions --out /tmp/build --vhost mesh")]
pub struct BrokerPermissionsArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    /// The broker's virtual host
    #[arg(long, value_name = "VHOST", default_value = "/")]
    pub vhost: String,
}

pub fn run(arguments: BrokerPermissionsArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let output = arguments.output.open(color)?;
    let script = crate::publish::broker_permissions(&output, &arguments.vhost)
        .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    terminal::print(script)?;
    Ok(ExitCode::SUCCESS)
}
