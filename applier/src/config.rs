//! Command-line flags, the ripgrep way: clap parses them raw (one definition, which
//! also gives `--help`, `--version` and usage errors that exit 2 with suggestions),
//! then `validate` turns them into a plain `Config` (or a `ListenConfig` for
//! `--listen`). Must not touch the host beyond checking that named paths exist.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, ValueEnum};

use crate::listen::ListenConfig;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// for people
    Human,
    /// for tools: the report (or, with `--listen`, each status report) as JSON
    Json,
}

/// What one run of `mesh-apply` is asked to do, validated.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where the plan comes from.
    pub plan: PlanSource,
    /// The node's age identity; `None` is `ROOT/var/lib/mesh/identity`, read through
    /// the confined layer.
    pub identity_path: Option<PathBuf>,
    /// How many applied plans are kept as generations.
    pub keep_generations: usize,
    /// The tree to apply into; `None` is the live host (`/`).
    pub root: Option<PathBuf>,
    /// The node this is, if known from the command line.
    pub node: Option<String>,
    /// Where archives' artifacts are found.
    pub artifacts: PathBuf,
    pub dry_run: bool,
    pub format: OutputFormat,
    /// When the plan was published (milliseconds since the Unix epoch, the publisher's
    /// clock), for a plan the listener received stamped; `None` for a local apply
    /// (`mesh-apply PLAN`, `--rollback`, `meshc deploy`) and an unstamped message.
    /// A stamp older than the record's mark is refused (E546, `crate::order`).
    pub published_ms: Option<u64>,
}

/// Where the plan to apply comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanSource {
    /// A file the operator names.
    File(PathBuf),
    /// Standard input (`mesh-apply -`).
    Stdin,
    /// A kept generation (`--rollback`): the one named, or the one before the current.
    Generation(Option<u64>),
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    Apply(Config),
    /// `--list-generations`: the root (`None` is `/`) and the output format.
    ListGenerations(Option<PathBuf>, OutputFormat),
    Listen(ListenConfig),
}

const EXAMPLES: &str = "\
Examples:
  mesh-apply build/nodes/db1.json --identity /etc/mesh/identity.txt --dry-run
  mesh-apply db1.json --identity key.txt --root /tmp/db1-root --format json
  meshc build && mesh-apply - < build/nodes/db1.json    (identity: /var/lib/mesh/identity)
  mesh-apply --list-generations
  mesh-apply --rollback --to 3 --dry-run
  MESH_AMQP_URL=amqp://db1:secret@broker:5672/%2f mesh-apply --listen --node db1 --identity /etc/mesh/identity.txt
  mesh-apply --listen --node db1 --identity key.txt --amqp amqp://127.0.0.1:5672/%2f    (a local broker, as guest)

Exit status: 0 the plan holds, 1 a problem (reported), 2 a usage error.";

/// Makes one node's plan true on this host; with `--listen`, every plan that arrives
/// on the node's queue (`mesh.node.NAME`), one at a time, each outcome reported to the
/// `mesh` exchange (`status.NAME`) and acknowledged only once applied and recorded.
#[derive(Debug, Parser)]
#[command(
    name = "mesh-apply",
    version,
    arg_required_else_help = true,
    args_override_self = true,
    after_help = EXAMPLES
)]
pub struct RawArguments {
    /// The plan file written by `meshc build` (`nodes/NODE.json`); `-` reads it from
    /// standard input
    #[arg(value_name = "PLAN")]
    plan: Option<PathBuf>,
    /// Apply the plans that arrive on this node's queue instead of one file
    #[arg(long)]
    listen: bool,
    /// The node's age identity file (as written by age-keygen); default:
    /// ROOT/var/lib/mesh/identity (required with `--listen`)
    #[arg(long, value_name = "KEY")]
    identity: Option<PathBuf>,
    /// Apply into DIR instead of / (offline: no services are started)
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The node this is; a plan for another node is refused (required with `--listen`)
    #[arg(long, value_name = "NAME")]
    node: Option<String>,
    /// Where archive artifacts are; default: ROOT/var/lib/mesh/artifacts
    #[arg(long, value_name = "DIR")]
    artifacts: Option<PathBuf>,
    /// Show what would be done and change nothing
    #[arg(long)]
    dry_run: bool,
    /// `human`, or `json` (the report; with `--listen`, one status report per line)
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = OutputFormat::Human)]
    format: OutputFormat,
    /// How many applied plans are kept as generations in ROOT/var/lib/mesh/generations
    #[arg(long, value_name = "N", default_value_t = crate::generations::DEFAULT_KEEP, value_parser = keep_generations)]
    keep_generations: usize,
    /// Apply a kept generation instead of a plan: the one before the current, or `--to N`
    #[arg(long, conflicts_with_all = ["plan", "listen", "list_generations"])]
    rollback: bool,
    /// With `--rollback`: the generation to apply (see `--list-generations`)
    #[arg(long, value_name = "N", requires = "rollback")]
    to: Option<u64>,
    /// List the kept generations (the current one marked `*`) and apply nothing
    #[arg(long, conflicts_with_all = ["plan", "listen"])]
    list_generations: bool,
    /// The broker, with `--listen`; default: amqp://guest:guest@127.0.0.1:5672/%2f
    #[arg(long, value_name = "URL", env = transport::names::URL_VARIABLE, hide_env_values = true)]
    amqp: Option<String>,
}

/// The definition of the command line, for the help, the book's check and tests.
pub fn command() -> clap::Command {
    RawArguments::command()
}

/// Parses and validates the arguments after the program name. A usage error (clap's,
/// or a validation's) is a `clap::Error`: `exit()` prints it and exits 2, or prints
/// the help or version and exits 0.
pub fn parse_arguments(
    arguments: impl IntoIterator<Item = OsString>,
) -> Result<Command, clap::Error> {
    let raw = RawArguments::try_parse_from(
        std::iter::once(OsString::from("mesh-apply")).chain(arguments),
    )?;
    validate(raw)
        .map_err(|message| RawArguments::command().error(ErrorKind::ValueValidation, message))
}

fn validate(raw: RawArguments) -> Result<Command, String> {
    if raw.listen {
        return validate_listen(raw).map(Command::Listen);
    }
    let root = match &raw.root {
        None => None,
        Some(root) => target_root(root)?,
    };
    if raw.list_generations {
        return Ok(Command::ListGenerations(root, raw.format));
    }
    if raw.to.is_some() && !raw.rollback {
        return Err("`--to N` goes with `--rollback`".to_string());
    }
    let plan = if raw.rollback {
        PlanSource::Generation(raw.to)
    } else {
        match raw.plan {
            None => return Err(
                "missing the plan: `mesh-apply PLAN` (or `-` for standard input), or `--rollback`"
                    .to_string(),
            ),
            Some(plan) if plan.as_os_str() == "-" => PlanSource::Stdin,
            Some(plan) => PlanSource::File(plan),
        }
    };
    if let Some(node) = &raw.node {
        plan::check::name(node).map_err(|reason| format!("`--node`: {reason}"))?;
    }
    let artifacts = raw.artifacts.unwrap_or_else(|| default_artifacts(&root));
    Ok(Command::Apply(Config {
        plan,
        identity_path: raw.identity,
        keep_generations: raw.keep_generations,
        root,
        node: raw.node,
        artifacts,
        dry_run: raw.dry_run,
        format: raw.format,
        published_ms: None,
    }))
}

fn validate_listen(raw: RawArguments) -> Result<ListenConfig, String> {
    if let Some(plan) = &raw.plan {
        return Err(format!(
            "unexpected argument `{}`: `--listen` takes plans from the broker, not a file",
            plan.display()
        ));
    }
    if raw.dry_run {
        return Err("`--dry-run` applies one plan file; `--listen` always applies".into());
    }
    let node = raw.node.ok_or("missing `--node NAME`: the node this is")?;
    transport::names::check_node(&node).map_err(|reason| format!("`--node`: {reason}"))?;
    let identity_path = raw
        .identity
        .ok_or("missing `--identity KEY`: the node's age identity file")?;
    if !identity_path.is_file() {
        return Err(format!(
            "`--identity {}` is not a readable file",
            identity_path.display()
        ));
    }
    let root = match raw.root {
        None => None,
        Some(root) => target_root(&root)?,
    };
    let artifacts = raw.artifacts.unwrap_or_else(|| default_artifacts(&root));
    Ok(ListenConfig {
        node,
        identity_path,
        root,
        artifacts,
        url: transport::names::url_or_default(raw.amqp),
        format: raw.format,
        print: true,
    })
}

/// `--keep-generations N`: at least 1.
fn keep_generations(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(keep) if keep >= 1 => Ok(keep),
        _ => Err("give a number of generations, at least 1".to_string()),
    }
}

/// `ROOT/var/lib/mesh/artifacts`, where `meshc`'s archives are installed.
fn default_artifacts(root: &Option<PathBuf>) -> PathBuf {
    root.clone()
        .unwrap_or_else(|| PathBuf::from("/"))
        .join("var/lib/mesh/artifacts")
}

/// `--root DIR` as the applier uses it: canonical, a directory, and `None` for `/`
/// (applying to the real host).
pub fn target_root(root: &std::path::Path) -> Result<Option<PathBuf>, String> {
    let canonical = root
        .canonicalize()
        .map_err(|error| format!("`--root {}`: {error}", root.display()))?;
    if !canonical.is_dir() {
        return Err(format!("`--root {}` is not a directory", root.display()));
    }
    Ok((canonical != std::path::Path::new("/")).then_some(canonical))
}
