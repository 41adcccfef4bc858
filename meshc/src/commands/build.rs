//! `meshc build`: compile the repository into one plan per node and write them with
//! the manifest to the output (`REPO/build` unless `--out` names another), recording
//! which repository the output was made from. Writes nothing when there is an error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::cli::{ColorWhen, LimitsArgs, RepositoryArgs, WorkersArgs};
use crate::say;
use crate::terminal::{self, Failure};

/// Compile the repository into one plan per node
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc build                          writes REPO/build/manifest.json and REPO/build/nodes/*.json
  meshc build --repo examples/homelab --out /tmp/homelab-build
  meshc build --locked                 in CI: fail instead of making a secret

Plans are byte-identical whatever the directory, the environment or the number of
workers; `OUT/.mesh-repository` records which repository the output was made from.")]
pub struct BuildArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// Where to write the plans and the manifest; default: `build` in the repository
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Make no secret: a need or grant without its sealed file is an error (for CI)
    #[arg(long)]
    pub locked: bool,
    /// Print how long compiling, planning and writing took
    #[arg(long, env = "MESH_TIMINGS")]
    pub timings: bool,
    #[command(flatten)]
    pub workers: WorkersArgs,
    #[command(flatten)]
    pub limits: LimitsArgs,
}

pub fn run(arguments: BuildArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.root(color)?;
    let out = arguments
        .out
        .unwrap_or_else(|| crate::cli::default_output(&root));
    let started = std::time::Instant::now();
    let options = compiler::Options {
        secrets: if arguments.locked {
            compiler::SecretMode::Locked
        } else {
            compiler::SecretMode::Make
        },
        workers: arguments.workers.get(),
    };
    // each node's plan is written (staged) as soon as it is made and then dropped,
    // so the build's memory does not grow with the fleet; nothing is visible in
    // OUT until the whole build succeeded
    let staged = match compiler::StagedBuild::open(&out) {
        Ok(staged) => std::sync::Arc::new(staged),
        Err(diagnostic) => return Err(terminal::fail(&diagnostic, &lang::Sources::new(), color)),
    };
    let mut session = arguments.limits.session();
    session.sink = Some(staged.clone());
    let compilation = compiler::compile_session(&root, options, &session);
    let compiled_at = started.elapsed();
    terminal::traces(&compilation.traces, &compilation.sources);
    terminal::report(&compilation.diagnostics, &compilation.sources, false, color);
    if compilation.has_errors() {
        staged.abort();
        say!(
            "build failed: {} error(s); no plan was written",
            super::error_count(&compilation)
        );
        return Ok(ExitCode::from(1));
    }
    let planned_at = started.elapsed();
    let written = match staged.commit(&compilation.keys, &compilation.secrets) {
        Ok(written) => written,
        Err(diagnostic) => {
            staged.abort();
            return Err(terminal::fail(&diagnostic, &compilation.sources, color));
        }
    };
    let shape_count = written.shapes;
    if let Err(diagnostic) = compiler::record_repository(&out, &compilation.root) {
        return Err(terminal::fail(&diagnostic, &compilation.sources, color));
    }
    if arguments.timings {
        say!(
            "timings: compile {} ms, plans {} ms, write {} ms",
            compiled_at.as_millis(),
            (planned_at - compiled_at).as_millis(),
            (started.elapsed() - planned_at).as_millis()
        );
    }
    let made = compilation.made;
    if made.needs + made.grants > 0 {
        say!(
            "made {} need(s) and {} grant(s) in secrets/: commit them with the repository",
            made.needs,
            made.grants
        );
    }
    say!(
        "built {} node(s), {shape_count} shape(s) in {} ms -> {}",
        written.nodes,
        started.elapsed().as_millis(),
        out.display()
    );
    // the process ends here: nothing to free for memory the exit returns anyway
    std::mem::forget(compilation);
    Ok(ExitCode::SUCCESS)
}
