//! The `mesh-provision` binary: parses flags into a config, runs the provisioner library
//! and exits 0 or 1. Must not contain reconciling logic of its own.
#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;

use provisioner::{Command, parse_arguments};

fn main() -> ExitCode {
    let config = match parse_arguments(std::env::args_os().skip(1)) {
        Ok(Command::Run(config)) => config,
        Ok(Command::Help) => return print_and_exit(provisioner::config::USAGE),
        Ok(Command::Version) => {
            return print_and_exit(&format!("mesh-provision {}\n", env!("CARGO_PKG_VERSION")));
        }
        Err(message) => {
            let mut stderr = std::io::stderr().lock();
            let written = write!(stderr, "error: {message}\n\n{}", provisioner::config::USAGE);
            // a usage error exits 1 whether or not stderr took the message
            return match written {
                Ok(()) | Err(_) => ExitCode::from(1),
            };
        }
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

fn print_and_exit(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}
