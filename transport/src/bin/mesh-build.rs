//! The `mesh-build` binary: parses flags (clap: one definition of them), opens the
//! build record and runs the builder on the build queue until it is killed. Must not
//! contain building logic of its own, and must not default to a broker or a store:
//! both are given.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use transport::build_command::Arguments;
use transport::builder::{BuildRecord, Builder, host_name};
use transport::consume::{self, Options, Worker};
use transport::{Stop, names};

fn main() -> ExitCode {
    match run(Arguments::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "error: {message}");
            ExitCode::from(1)
        }
    }
}

fn run(arguments: Arguments) -> Result<(), String> {
    let Arguments {
        amqp: url,
        repo: repository,
        store,
        name,
    } = arguments;
    if names::password_on_command_line() {
        consume::escaping_stderr_log()(names::PASSWORD_ON_COMMAND_LINE);
    }
    // a URL no connection could ever be made with ends the builder at once, as it
    // ends `mesh-apply --listen`: retried, it was tried again for ever
    transport::connection::parse_url(&url).map_err(|error| error.to_string())?;
    if !repository.is_dir() {
        return Err(format!(
            "`--repo {}` is not a directory",
            repository.display()
        ));
    }
    let record = BuildRecord::open(&store)?;
    let name = name.unwrap_or_else(host_name);
    let log = consume::escaping_stderr_log();
    log(&format!(
        "mesh-build `{name}`: broker {}, repository {}, store {}",
        names::redact(&url),
        repository.display(),
        store.display()
    ));
    let builder = Builder {
        repository,
        store,
        name: name.clone(),
    };
    let worker = Worker {
        queue: names::BUILD_QUEUE.to_string(),
        handler: builder.handler(record, log.clone()),
    };
    let options = Options::new(&url, &format!("mesh-build {name}"), "mesh-build", log);
    consume::serve(options, vec![worker], Stop::new()).map_err(|error| error.to_string())
}
