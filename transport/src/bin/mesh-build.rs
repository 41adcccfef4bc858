//! The `mesh-build` binary: parses flags, opens the build record and runs the builder
//! on the build queue until it is killed. Must not contain building logic of its own.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use transport::builder::{BuildRecord, Builder, DEFAULT_STORE, host_name};
use transport::consume::{self, Options, Worker};
use transport::{Stop, names};

const USAGE: &str = "\
usage: mesh-build [--amqp URL] [--repo DIR] [--store DIR] [--name NAME]

Builds the artifacts requested on the build queue (`mesh.builds`), one at a time,
from its own checkout of the repository; stores each archive content-addressed in
the store, keeps every result (failures included) in STORE/builds.jsonl, and answers
through the `mesh` exchange with the request's correlation id.

  --amqp URL     the broker (default $MESH_AMQP_URL, else amqp://guest:guest@127.0.0.1:5672/%2f)
  --repo DIR     the repository checkout requests name directories of (default .)
  --store DIR    where archives and the record are kept (default /var/lib/mesh/builds)
  --name NAME    the builder's name in results (default the host name)
  -h, --help     show this help
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<(), String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let mut url = None;
    let mut repository = PathBuf::from(".");
    let mut store = PathBuf::from(DEFAULT_STORE);
    let mut name = None;
    let describe = |error: lexopt::Error| error.to_string().to_lowercase();
    // a flag's value that must be UTF-8 text
    let text = |parser: &mut lexopt::Parser| -> Result<String, String> {
        parser.value().map_err(describe)?.string().map_err(describe)
    };
    while let Some(argument) = parser.next().map_err(describe)? {
        match argument {
            Long("amqp") => url = Some(text(&mut parser)?),
            Long("repo") => repository = PathBuf::from(parser.value().map_err(describe)?),
            Long("store") => store = PathBuf::from(parser.value().map_err(describe)?),
            Long("name") => name = Some(text(&mut parser)?),
            Short('h') | Long("help") => {
                print!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("{}\n\n{USAGE}", describe(other.unexpected()))),
        }
    }
    if !repository.is_dir() {
        return Err(format!(
            "`--repo {}` is not a directory",
            repository.display()
        ));
    }
    let url = names::url_or_default(url);
    let record = BuildRecord::open(&store)?;
    let name = name.unwrap_or_else(host_name);
    let log = consume::stderr_log();
    log(&format!(
        "mesh-build `{name}`: repository {}, store {}",
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
