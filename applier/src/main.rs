//! The `mesh-apply` binary: parses flags into a config (`applier::config`: usage
//! errors exit 2, help and version exit 0), runs the applier library or the listener,
//! prints the report and exits 0 or 1. Must not contain applying logic of its own.
#![forbid(unsafe_code)]

use std::io::Write;
use std::process::ExitCode;

use applier::{Command, OutputFormat, parse_arguments};

fn main() -> ExitCode {
    survive_file_size_limit();
    let config = match parse_arguments(std::env::args_os().skip(1)) {
        Ok(Command::Apply(config)) => config,
        Ok(Command::ListGenerations(root, format)) => return list_generations(root, format),
        Ok(Command::Listen(config)) => return listen(config),
        Err(error) => error.exit(),
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

/// `mesh-apply --listen`: runs until stopped; what keeps it from starting is a problem
/// on stderr (stdout has one line per message), and exits 1.
fn listen(config: applier::listen::ListenConfig) -> ExitCode {
    let Err(problem) = applier::listen::listen(config) else {
        return ExitCode::SUCCESS;
    };
    let text = applier::report::render_problem(&problem);
    let mut stderr = std::io::stderr().lock();
    match stderr.write_all(text.as_bytes()) {
        Ok(()) | Err(_) => ExitCode::from(1),
    }
}

/// Prints the report; its exit status, also when the reader closed standard output
/// (the plan was applied whether or not the report was read).
fn print_and_exit(text: &str, code: i32) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    match (written, code) {
        (Err(error), _) if error.kind() != std::io::ErrorKind::BrokenPipe => ExitCode::from(1),
        (_, 0) => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

/// A write past the file size limit (`LimitFSIZE=` in a unit, `ulimit -f`) raises
/// SIGXFSZ, whose default action ends the process in the middle of the write, with
/// no report and a temporary file left. With a handler installed (it only sets a
/// flag nobody reads) the write fails with `EFBIG` instead, and its step reports it
/// as it reports any failed write. A child process starts with the default again.
fn survive_file_size_limit() {
    let raised = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    if signal_hook::flag::register(signal_hook::consts::SIGXFSZ, raised).is_err() {
        // the default stays, as before
    }
}
