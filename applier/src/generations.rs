//! Generations: every plan applied successfully is kept, byte for byte, as
//! `/var/lib/mesh/generations/N.json` (N counting up from 1), the last `keep` of them;
//! listed, and picked for `--rollback`. A rollback is an ordinary apply of a kept plan,
//! so it makes a new generation (as NixOS does). Goes through the confined layer only;
//! must not apply anything itself.

use std::io;

use plan::Plan;

use crate::codes::Code;
use crate::confined::absent;
use crate::host::Host;
use crate::problem::Problem;
use crate::record::{Record, RecordState};

/// The node path of the generations directory.
pub const GENERATIONS_DIRECTORY: &str = "/var/lib/mesh/generations";

/// How many generations are kept when `--keep-generations` is not given.
pub const DEFAULT_KEEP: usize = 10;

/// One kept generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generation {
    pub number: u64,
    /// The plan's digest (`sha256:...`).
    pub digest: String,
    pub node: String,
    /// When the generation was written (its file's modification time, seconds since
    /// the epoch): the plan itself carries no clock.
    pub written: i64,
    /// The generation the applied record names: the newest one whose plan is applied.
    pub current: bool,
}

fn node_path(number: u64) -> String {
    format!("{GENERATIONS_DIRECTORY}/{number}.json")
}

fn problem(doing: &str, host: &Host, error: &dyn std::fmt::Display) -> Problem {
    Problem::new(
        Code::GenerationFailed,
        format!(
            "cannot {doing} the generations in `{}`: {error}",
            host.path(GENERATIONS_DIRECTORY).display()
        ),
        "make `/var/lib/mesh/generations` a writable directory of the root holding only `N.json` plans, and try again",
    )
}

/// The numbers of the kept generations, ascending.
fn numbers(host: &Host) -> Result<Vec<u64>, Problem> {
    let directory = match host.fs().directory(GENERATIONS_DIRECTORY) {
        Ok(directory) => directory,
        Err(error) if absent(&error) => return Ok(Vec::new()),
        Err(error) => return Err(problem("read", host, &error)),
    };
    let names = directory
        .names()
        .map_err(|error| problem("read", host, &error))?;
    let mut numbers: Vec<u64> = names
        .iter()
        .filter_map(|name| name.to_str()?.strip_suffix(".json"))
        .filter(|stem| !stem.is_empty() && stem.bytes().all(|byte| byte.is_ascii_digit()))
        .filter_map(|stem| stem.parse().ok())
        .collect();
    numbers.sort_unstable();
    Ok(numbers)
}

/// The plan bytes of generation `number`.
pub fn read(host: &Host, number: u64) -> Result<Vec<u8>, Problem> {
    match host
        .fs()
        .read(&node_path(number), crate::record::STATE_LIMIT)
    {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(missing(host, number)),
        Err(error) => Err(problem("read", host, &error)),
    }
}

fn missing(host: &Host, number: u64) -> Problem {
    Problem::new(
        Code::NoSuchGeneration,
        format!(
            "there is no generation {number} in `{}`",
            host.path(GENERATIONS_DIRECTORY).display()
        ),
        "list the kept generations with `mesh-apply --list-generations` and pick one of them",
    )
}

/// Keeps `bytes` (a plan just applied) as the next generation, unless the newest one
/// is already this plan; then removes all but the newest `keep`.
pub fn remember(host: &Host, plan: &Plan, bytes: &[u8], keep: usize) -> Result<(), Problem> {
    let existing = numbers(host)?;
    if let Some(&newest) = existing.last()
        && let Ok(previous) = read(host, newest)
        && Plan::read(&previous).is_ok_and(|previous| previous.digest() == plan.digest())
    {
        return Ok(());
    }
    let next = existing.last().map_or(1, |newest| newest.saturating_add(1));
    let directory = host
        .fs()
        .create_directories(GENERATIONS_DIRECTORY, 0o700)
        .map_err(|error| problem("create", host, &error))?;
    host.fs()
        .write_now(&node_path(next), bytes, 0o600)
        .map_err(|error| problem("write", host, &error))?;
    let kept = existing.len().saturating_add(1);
    let surplus = kept.saturating_sub(keep.max(1));
    for number in existing.iter().take(surplus) {
        directory
            .remove_file(&format!("{number}.json"))
            .map_err(|error| problem("prune", host, &error))?;
    }
    if surplus > 0 {
        directory
            .sync()
            .map_err(|error| problem("prune", host, &error))?;
    }
    Ok(())
}

/// Every kept generation, oldest first, the current one marked.
pub fn list(host: &Host) -> Result<Vec<Generation>, Problem> {
    let record = Record::load(host)?;
    let applied = record
        .as_ref()
        .filter(|record| record.state == RecordState::Applied)
        .map(|record| record.plan.clone());
    let mut generations = Vec::new();
    for number in numbers(host)? {
        let bytes = read(host, number)?;
        let plan = Plan::read(&bytes).map_err(|error| {
            problem(
                "read",
                host,
                &format!("generation {number} is not a plan: {error}"),
            )
        })?;
        let written = written_at(host, number).map_err(|error| problem("read", host, &error))?;
        generations.push(Generation {
            number,
            digest: plan.digest().to_string(),
            node: plan.node().to_string(),
            written,
            current: false,
        });
    }
    if let Some(applied) = applied
        && let Some(current) = generations
            .iter_mut()
            .rev()
            .find(|generation| generation.digest == applied)
    {
        current.current = true;
    }
    Ok(generations)
}

fn written_at(host: &Host, number: u64) -> io::Result<i64> {
    let (directory, name) = host.fs().parent(&node_path(number))?;
    directory.modified_seconds(&name)
}

/// The generation `--rollback [--to N]` applies: `N`, or the one before the current.
pub fn rollback_target(host: &Host, to: Option<u64>) -> Result<u64, Problem> {
    let generations = list(host)?;
    if let Some(number) = to {
        return generations
            .iter()
            .any(|generation| generation.number == number)
            .then_some(number)
            .ok_or_else(|| missing(host, number));
    }
    let current = generations
        .iter()
        .position(|generation| generation.current)
        .unwrap_or(generations.len());
    current
        .checked_sub(1)
        .and_then(|before| generations.get(before))
        .map(|generation| generation.number)
        .ok_or_else(|| {
            Problem::new(
                Code::NoSuchGeneration,
                format!(
                    "there is no generation before the current one in `{}`",
                    host.path(GENERATIONS_DIRECTORY).display()
                ),
                "roll back once at least two plans have been applied, or name one with `--to N`",
            )
        })
}

/// The list as `mesh-apply --list-generations` prints it.
pub fn render_human(generations: &[Generation]) -> String {
    if generations.is_empty() {
        return "no generations kept yet: apply a plan first\n".to_string();
    }
    let mut out = String::from("generation  node  digest  written (unix seconds)\n");
    for generation in generations {
        out.push_str(&format!(
            "{}{:<10}  {}  {}  {}\n",
            if generation.current { "*" } else { " " },
            generation.number,
            crate::report::escaped(&generation.node),
            generation.digest,
            generation.written,
        ));
    }
    out
}

/// The list as `--format json` prints it.
pub fn render_json(generations: &[Generation]) -> String {
    let items: Vec<serde_json::Value> = generations
        .iter()
        .map(|generation| {
            serde_json::json!({
                "number": generation.number,
                "digest": generation.digest,
                "node": generation.node,
                "written": generation.written,
                "current": generation.current,
            })
        })
        .collect();
    let value = serde_json::json!({ "format": "mesh-generations/1", "generations": items });
    format!("{value:#}\n")
}
