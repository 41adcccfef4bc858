//! The `mesh-provision` binary: parses flags into a config (usage errors exit 2, help
//! and version exit 0), runs the provisioner library and exits 0 or 1. Must not
//! contain reconciling logic of its own.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use provisioner::{Command, parse_arguments};

fn main() -> ExitCode {
    let config = match parse_arguments(std::env::args_os().skip(1)) {
        Ok(Command::Run(config)) => config,
        Err(error) => error.exit(),
    };
    let mut stdout = std::io::stdout();
    let mut stderr = std::io::stderr();
    let code = provisioner::run(&config, &mut stdout, &mut stderr);
    if code == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
