//! The `mesh-apply` binary: parses flags into a config, runs the applier library, prints
//! the report and exits 0 or 1. Must not contain applying logic of its own.
#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;

use applier::{Command, OutputFormat, parse_arguments};

fn main() -> ExitCode {
    let config = match parse_arguments(std::env::args_os().skip(1)) {
        Ok(Command::Apply(config)) => config,
        Ok(Command::Help) => return print_and_exit(applier::config::USAGE, 0),
        Ok(Command::Version) => {
            return print_and_exit(&format!("mesh-apply {}\n", env!("CARGO_PKG_VERSION")), 0);
        }
        Err(message) => {
            let mut stderr = std::io::stderr().lock();
            let written = write!(stderr, "error: {message}\n\n{}", applier::config::USAGE);
            // a usage error exits 1 whether or not stderr took the message
            return match written {
                Ok(()) | Err(_) => ExitCode::from(1),
            };
        }
    };
    let report = applier::run(&config);
    let text = match config.format {
        OutputFormat::Human => report.render_human(),
        OutputFormat::Json => report.render_json(),
    };
    print_and_exit(&text, report.exit_code())
}

fn print_and_exit(text: &str, code: i32) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match (written, code) {
        (Ok(()), 0) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}
