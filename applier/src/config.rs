//! Command-line flags, parsed raw with lexopt and then validated into a plain
//! `Config`. Must not touch the host beyond checking that named paths exist.

use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    Human,
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
    Help,
    Version,
}

pub const USAGE: &str = "\
usage: mesh-apply PLAN|- [--identity KEY] [--root DIR] [--node NAME] [--artifacts DIR]
                  [--dry-run] [--format human|json] [--keep-generations N]
       mesh-apply --rollback [--to N] [--identity KEY] [--root DIR] [--dry-run]
       mesh-apply --list-generations [--root DIR] [--format human|json]

Makes one node's plan true on this host.

  PLAN               the plan file written by `meshc build` (nodes/NODE.json); `-` reads stdin
  --identity KEY     the node's age identity file (default ROOT/var/lib/mesh/identity)
  --keep-generations N  how many applied plans are kept as generations (default 10)
  --rollback         apply a kept generation: the one before the current, or `--to N`
  --to N             with `--rollback`: the generation to apply
  --list-generations list the kept generations (the current one marked `*`)
  --root DIR         apply into DIR instead of / (offline: no services are started)
  --node NAME        the node this is; a plan for another node is refused
  --artifacts DIR    where archive artifacts are (default ROOT/var/lib/mesh/artifacts)
  --dry-run          show what would be done and change nothing
  --format FORMAT    `human` (default) or `json`
  -h, --help         show this help
  -V, --version      show the version
";

/// The flags as given, before validation.
#[derive(Default)]
struct RawArguments {
    plan: Option<OsString>,
    identity: Option<OsString>,
    root: Option<OsString>,
    node: Option<String>,
    artifacts: Option<OsString>,
    dry_run: bool,
    format: Option<String>,
    keep_generations: Option<String>,
    rollback: bool,
    to: Option<String>,
    list_generations: bool,
    help: bool,
    version: bool,
}

/// Parses and validates the arguments after the program name.
pub fn parse_arguments(arguments: impl IntoIterator<Item = OsString>) -> Result<Command, String> {
    let raw = parse_raw(arguments)?;
    validate(raw)
}

fn parse_raw(arguments: impl IntoIterator<Item = OsString>) -> Result<RawArguments, String> {
    use lexopt::prelude::*;
    let mut raw = RawArguments::default();
    let mut parser = lexopt::Parser::from_args(arguments);
    while let Some(argument) = parser.next().map_err(describe)? {
        match argument {
            Long("identity") => raw.identity = Some(parser.value().map_err(describe)?),
            Long("root") => raw.root = Some(parser.value().map_err(describe)?),
            Long("artifacts") => raw.artifacts = Some(parser.value().map_err(describe)?),
            Long("node") => raw.node = Some(text(&mut parser)?),
            Long("format") => raw.format = Some(text(&mut parser)?),
            Long("dry-run") => raw.dry_run = true,
            Long("keep-generations") => raw.keep_generations = Some(text(&mut parser)?),
            Long("rollback") => raw.rollback = true,
            Long("to") => raw.to = Some(text(&mut parser)?),
            Long("list-generations") => raw.list_generations = true,
            Short('h') | Long("help") => raw.help = true,
            Short('V') | Long("version") => raw.version = true,
            Long("listen") => {
                let help = "see `mesh-apply --listen --help`";
                return Err(format!(
                    "`--listen` takes the listener's own arguments; {help}"
                ));
            }
            Value(value) if raw.plan.is_none() => raw.plan = Some(value),
            Value(value) => {
                return Err(format!(
                    "unexpected argument `{}`: give one plan",
                    value.to_string_lossy()
                ));
            }
            other => return Err(describe(other.unexpected())),
        }
    }
    Ok(raw)
}

fn validate(raw: RawArguments) -> Result<Command, String> {
    if raw.help {
        return Ok(Command::Help);
    }
    if raw.version {
        return Ok(Command::Version);
    }
    let root = match &raw.root {
        None => None,
        Some(root) => target_root(&PathBuf::from(root))?,
    };
    let format = output_format(raw.format.as_deref().unwrap_or("human"))?;
    if raw.list_generations {
        return Ok(Command::ListGenerations(root, format));
    }
    let plan = plan_source(raw.plan, raw.rollback, raw.to.as_deref())?;
    let keep_generations = keep_generations(raw.keep_generations.as_deref())?;
    let identity_path = raw.identity.map(PathBuf::from);
    if let Some(node) = &raw.node {
        plan::check::name(node).map_err(|reason| format!("`--node`: {reason}"))?;
    }
    let artifacts = match raw.artifacts {
        Some(artifacts) => PathBuf::from(artifacts),
        None => root
            .clone()
            .unwrap_or_else(|| PathBuf::from("/"))
            .join("var/lib/mesh/artifacts"),
    };
    Ok(Command::Apply(Config {
        plan,
        identity_path,
        keep_generations,
        root,
        node: raw.node,
        artifacts,
        dry_run: raw.dry_run,
        format,
    }))
}

/// The plan: a file, `-` (standard input) or, with `--rollback`, a generation.
fn plan_source(
    plan: Option<OsString>,
    rollback: bool,
    to: Option<&str>,
) -> Result<PlanSource, String> {
    if rollback {
        if let Some(plan) = plan {
            return Err(format!(
                "unexpected argument `{}`: `--rollback` applies a kept generation, not a file",
                plan.to_string_lossy()
            ));
        }
        let number = match to {
            None => None,
            Some(text) => Some(text.parse::<u64>().map_err(|_| {
                format!("`--to {text}`: give a generation number from `--list-generations`")
            })?),
        };
        return Ok(PlanSource::Generation(number));
    }
    if to.is_some() {
        return Err("`--to N` goes with `--rollback`".to_string());
    }
    match plan {
        None => Err("missing the plan: `mesh-apply PLAN` (or `-` for standard input)".to_string()),
        Some(plan) if plan == "-" => Ok(PlanSource::Stdin),
        Some(plan) => Ok(PlanSource::File(PathBuf::from(plan))),
    }
}

/// `--keep-generations N`: at least 1.
fn keep_generations(text: Option<&str>) -> Result<usize, String> {
    match text {
        None => Ok(crate::generations::DEFAULT_KEEP),
        Some(text) => match text.parse::<usize>() {
            Ok(keep) if keep >= 1 => Ok(keep),
            _ => Err(format!(
                "`--keep-generations {text}`: give a number of generations, at least 1"
            )),
        },
    }
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

/// A command-line error as `mesh-apply` words it.
pub(crate) fn describe(error: lexopt::Error) -> String {
    error.to_string().to_lowercase()
}

/// A flag's value that must be UTF-8 text.
pub(crate) fn text(parser: &mut lexopt::Parser) -> Result<String, String> {
    use lexopt::ValueExt;
    parser.value().map_err(describe)?.string().map_err(describe)
}

/// `--format FORMAT`.
pub(crate) fn output_format(name: &str) -> Result<OutputFormat, String> {
    match name {
        "human" => Ok(OutputFormat::Human),
        "json" => Ok(OutputFormat::Json),
        other => Err(format!("unknown format `{other}`: use `human` or `json`")),
    }
}
