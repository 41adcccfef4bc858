//! The `mesh-build` binary: parses flags (clap: one definition of them), opens the
//! build record and runs the builder on the build queue until it is killed. Must not
//! contain building logic of its own, and must not default to a broker or a store:
//! both are given.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use transport::builder::{BuildRecord, Builder, host_name};
use transport::consume::{self, Options, Worker};
use transport::{Stop, names};

/// The builder: builds the artifacts requested on the build queue (`mesh.builds`),
/// one at a time, from its own checkout of the repository; stores each archive
/// content-addressed in the store, keeps every result (failures included) in
/// STORE/builds.jsonl, and answers through the `mesh` exchange with the request's
/// correlation id. While the broker cannot be reached it says so on standard error at
/// every retry.
#[derive(Debug, Parser)]
#[command(
    name = "mesh-build",
    version,
    arg_required_else_help = true,
    args_override_self = true,
    after_help = "\
Examples:
  mesh-build --amqp amqps://builder:secret@broker/%2f --repo /srv/mesh --store /var/lib/mesh/builds
  MESH_AMQP_URL=amqp://builder:secret@127.0.0.1/%2f mesh-build --repo . --store /tmp/builds

Exit status: 0 when stopped, 1 on an error, 2 on a usage error."
)]
struct Arguments {
    /// The broker to take requests from
    #[arg(long, value_name = "URL", env = names::URL_VARIABLE, hide_env_values = true)]
    amqp: String,
    /// The repository checkout that requests name directories of
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// Where archives and the record of every build are kept (for example
    /// /var/lib/mesh/builds)
    #[arg(long, value_name = "DIR")]
    store: PathBuf,
    /// The builder's name in results; default: the host name
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
}

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
    if !repository.is_dir() {
        return Err(format!(
            "`--repo {}` is not a directory",
            repository.display()
        ));
    }
    let record = BuildRecord::open(&store)?;
    let name = name.unwrap_or_else(host_name);
    let log = consume::stderr_log();
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
