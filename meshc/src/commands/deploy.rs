//! `meshc deploy`: build as `meshc build` does, then apply each selected node's plan
//! over SSH (or, with `--rollback`, its previous generation), several nodes at once,
//! with per-node progress and a summary. The work is in `crate::deploy`; this file
//! is its command line, and reads back the plans the build wrote: each must be the
//! one the build's manifest records, or nothing is sent (E408). Must not weaken
//! ssh's host key checking, nor send bytes other than those it checked.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lang::Diagnostic;

use crate::cli::{ColorWhen, LimitsArgs, RepositoryArgs, WorkersArgs};
use crate::deploy::{Job, Mode};
use crate::say;
use crate::terminal::{self, Failure};

/// Build, then apply each selected node's plan over SSH (per-node progress, a summary)
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc deploy                         build, then every node
  meshc deploy --on @web --on db1      the nodes tagged web, and db1
  meshc deploy --dry-run               what would change on each node; nothing changes
  meshc deploy --on app1 --rollback    app1 applies its previous generation again
  meshc deploy --ssh-config ./ssh_config --parallel 16

Each node is reached as `deploy.user@deploy.host` (default root@ADDRESS, port 22) with
the system's ssh: your ssh configuration, agent and known_hosts apply, and an unknown
host key is refused. The plan goes on standard input to `mesh-apply -` on the node.
Exit status: 0 every node applied, 1 a node failed (the others still ran).")]
pub struct DeployArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// Where to write the plans and the manifest; default: `build` in the repository
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Deploy to this node, or with `@TAG` to every node with that tag (repeat for
    /// more); default: every node
    #[arg(long, value_name = "NODE|@TAG")]
    pub on: Vec<String>,
    /// How many nodes to deploy to at once
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..))]
    pub parallel: u16,
    /// Run `mesh-apply --dry-run` on each node: show what would change, change nothing
    /// (the plans are built `--locked` into a scratch directory, not into `--out`)
    #[arg(long)]
    pub dry_run: bool,
    /// Apply each node's previous generation (`mesh-apply --rollback`); builds nothing
    #[arg(long)]
    pub rollback: bool,
    /// The ssh configuration file to use instead of ~/.ssh/config (`ssh -F FILE`)
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Build from nothing before deploying: read no build cache (as `meshc build --no-cache`)
    #[arg(long)]
    pub no_cache: bool,
    #[command(flatten)]
    pub workers: WorkersArgs,
    #[command(flatten)]
    pub limits: LimitsArgs,
    /// Nodes named the way colmena, deploy-rs and nixos-rebuild name them (`deploy
    /// app1`, `--node app1`, `--target app1`): refused as a usage error that says
    /// to write `--on` (never shown in the help)
    #[arg(value_name = "NODE", hide = true, value_parser = on_instead)]
    pub named: Vec<String>,
    #[arg(long = "node", aliases = ["nodes", "target", "target-host", "host"], value_name = "NODE", hide = true, value_parser = on_instead)]
    pub node_flag: Vec<String>,
}

/// A node named other than with `--on`: the usage error that says how.
fn on_instead(node: &str) -> Result<String, String> {
    Err(format!(
        "`meshc deploy` selects nodes with `--on` (as colmena does): write `meshc deploy --on {node}`"
    ))
}

pub fn run(arguments: DeployArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.root(color)?;
    // a dry run changes nothing here either: its plans go to a scratch directory
    // (the output `meshc diff` compares with stays as it was) and are built
    // `--locked` (a secret that would have to be made is an error, not made)
    let scratch = if arguments.dry_run && !arguments.rollback {
        let made = tempfile::Builder::new().prefix("meshc-dry-run-").tempdir();
        Some(made.map_err(|error| {
                let diagnostic = lang::Diagnostic::error(
                    lang::codes::OUTPUT_UNWRITABLE,
                    format!("cannot make a scratch directory for the dry run's plans: {error}"),
                )
                .with_help(
                    "the dry run writes its plans to a new directory under `$TMPDIR` (else `/tmp`): point `TMPDIR` at a directory you can write",
                );
                terminal::fail_alone(&diagnostic, color)
            })?)
    } else {
        None
    };
    let out = match &scratch {
        Some(scratch) => scratch.path().join("build"),
        None => match arguments.out.clone() {
            Some(out) => out,
            None => crate::cli::default_output(&root, color)?,
        },
    };
    if !arguments.rollback {
        let built = super::build::run(
            super::build::BuildArgs {
                repository: RepositoryArgs {
                    repo: Some(root.clone()),
                },
                out: Some(out.clone()),
                locked: scratch.is_some(),
                no_cache: arguments.no_cache || scratch.is_some(),
                timings: false,
                workers: WorkersArgs {
                    workers: arguments.workers.workers,
                },
                limits: LimitsArgs {
                    max_steps: arguments.limits.max_steps,
                    max_memory: arguments.limits.max_memory,
                },
                one_node: super::build::OneNodeHabits {
                    named: Vec::new(),
                    flag: Vec::new(),
                },
            },
            color,
        )?;
        if built != ExitCode::SUCCESS {
            if scratch.is_some() {
                crate::say!(
                    "a dry run makes no secret and writes no build: make what is missing with `meshc build` (or keep a rotated key's values with `meshc secrets reseal`) first"
                );
            }
            return Ok(built);
        }
    }
    let targets = match compiler::deployment::targets(&root) {
        Ok(targets) => targets,
        Err((diagnostics, sources)) => {
            terminal::report(&diagnostics, &sources, false, color);
            return Err(Failure::Reported);
        }
    };
    let selected = crate::deploy::select(&targets, &arguments.on)
        .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
    // every plan is read and checked before the first is sent
    let built = if arguments.rollback {
        None
    } else {
        let output = compiler::BuildOutput::open(&out, CHANGED_HELP)
            .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
        let manifest = output
            .manifest(CHANGED_HELP)
            .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?;
        Some((output, manifest))
    };
    let mut jobs = Vec::new();
    for node in selected {
        let Some(target) = targets.get(&node).cloned() else {
            continue;
        };
        let plan = match &built {
            None => None,
            Some((output, manifest)) => Some(
                read_plan(output, manifest, &node)
                    .map_err(|diagnostic| terminal::fail_alone(&diagnostic, color))?,
            ),
        };
        jobs.push(Job { node, target, plan });
    }
    let mode = if arguments.rollback {
        Mode::Rollback {
            dry_run: arguments.dry_run,
        }
    } else {
        Mode::Apply {
            dry_run: arguments.dry_run,
        }
    };
    let outcomes = crate::deploy::run_all(
        jobs,
        mode,
        arguments.ssh_config.clone(),
        usize::from(arguments.parallel),
    );
    terminal::print(crate::deploy::summary_table(&outcomes))?;
    Ok(super::status(
        outcomes.iter().any(|outcome| !outcome.succeeded),
    ))
}

/// What to do when the build deploy just made cannot be read back as it was made
/// (E408): nothing was sent.
const CHANGED_HELP: &str = "nothing was sent: the build output changed after `meshc deploy` built it (is another process writing to `--out`?); deploy again, with `--out` a directory only you can write";

/// The plan `meshc build` just wrote for `node`, checked against the digest `manifest`
/// records for it (a plan file replaced since the build, however self-consistent, is
/// E408), with a note when it unpacks archives (their artifacts must already be on
/// the node: deploy does not copy them). The bytes returned are the bytes checked.
fn read_plan(
    output: &compiler::BuildOutput,
    manifest: &compiler::Manifest,
    node: &str,
) -> Result<Vec<u8>, Diagnostic> {
    let path = output.path().join("nodes").join(format!("{node}.json"));
    let Some(recorded) = manifest.digests.get(node) else {
        return Err(compiler::build_unreadable(
            &path,
            format!("manifest.json lists no plan for `{node}`"),
            format!(
                "nothing was sent: the build has no plan for `{node}` (was it added to the inventory while `meshc deploy` built?); deploy again"
            ),
        ));
    };
    let bytes = output.plan_file(node, CHANGED_HELP)?;
    if plan::Plan::digest_of_file(&bytes) != Some(recorded.as_str()) {
        return Err(compiler::build_unreadable(
            &path,
            format!(
                "it is not the plan file `meshc build` wrote for `{node}` (its digest is not the one manifest.json records)"
            ),
            CHANGED_HELP,
        ));
    }
    if let Ok(plan) = plan::Plan::read(&bytes) {
        let archives = plan
            .shapes()
            .iter()
            .filter(|shape| shape.kind() == plan::Kind::Archive)
            .count();
        if archives > 0 {
            say!(
                "note: `{node}` unpacks {archives} archive(s): their artifacts must be in /var/lib/mesh/artifacts on the node (meshc deploy does not copy them)"
            );
        }
    }
    Ok(bytes)
}
