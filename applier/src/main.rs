//! The `mesh-apply` binary: parses flags into a config, runs the applier library, prints
//! the report and exits 0 or 1. Must not contain applying logic of its own.
#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;

use applier::{Command, OutputFormat, parse_arguments};

fn main() -> ExitCode {
    let arguments: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if applier::listen::is_listen(&arguments) {
        return listen(arguments);
    }
    let config = match parse_arguments(arguments) {
        Ok(Command::Apply(config)) => config,
        Ok(Command::ListGenerations(root, format)) => return list_generations(root, format),
        Ok(Command::Help) => {
            let usage = format!("{}\n{}", applier::config::USAGE, applier::listen::USAGE);
            return print_and_exit(&usage, 0);
        }
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

/// `mesh-apply --list-generations`: the kept generations, or the problem (exit 1).
fn list_generations(root: Option<std::path::PathBuf>, format: OutputFormat) -> ExitCode {
    let listed = applier::host::Host::new(root.as_deref())
        .and_then(|host| applier::generations::list(&host));
    match listed {
        Ok(generations) => {
            let text = match format {
                OutputFormat::Human => applier::generations::render_human(&generations),
                OutputFormat::Json => applier::generations::render_json(&generations),
            };
            print_and_exit(&text, 0)
        }
        Err(problem) => {
            let report = applier::Report {
                problems: vec![problem],
                ..applier::Report::default()
            };
            let text = match format {
                OutputFormat::Human => report.render_human(),
                OutputFormat::Json => report.render_json(),
            };
            print_and_exit(&text, 1)
        }
    }
}

/// `mesh-apply --listen`: runs until stopped; a configuration error exits 1.
fn listen(arguments: Vec<std::ffi::OsString>) -> ExitCode {
    let failure = match applier::listen::parse_arguments(arguments) {
        Ok(None) => return print_and_exit(applier::listen::USAGE, 0),
        Ok(Some(config)) => match applier::listen::listen(config) {
            Ok(()) => return ExitCode::SUCCESS,
            Err(message) => format!("error: {message}\n"),
        },
        Err(message) => format!("error: {message}\n\n{}", applier::listen::USAGE),
    };
    let mut stderr = std::io::stderr().lock();
    match stderr.write_all(failure.as_bytes()) {
        Ok(()) | Err(_) => ExitCode::from(1),
    }
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
