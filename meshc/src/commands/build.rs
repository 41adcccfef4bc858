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
    let compilation = compiler::compile_session(&root, options, &arguments.limits.session());
    let compiled_at = started.elapsed();
    terminal::traces(&compilation.traces, &compilation.sources);
    terminal::report(&compilation.diagnostics, &compilation.sources, false, color);
    if compilation.has_errors() {
        say!(
            "build failed: {} error(s); no plan was written",
            super::error_count(&compilation)
        );
        return Ok(ExitCode::from(1));
    }
    let plans = &compilation.plans;
    let shape_count: usize = plans.values().map(|plan| plan.shapes().len()).sum();
    let planned_at = started.elapsed();
    if let Err(diagnostic) =
        compiler::write_build(&out, plans, &compilation.keys, &compilation.secrets)
    {
        return Err(terminal::fail(&diagnostic, &compilation.sources, color));
    }
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
        plans.len(),
        started.elapsed().as_millis(),
        out.display()
    );
    // the process ends here: freeing every plan shape by shape would cost a tenth
    // of the build (1,000 nodes), for memory the exit returns anyway
    std::mem::forget(compilation);
    Ok(ExitCode::SUCCESS)
}
