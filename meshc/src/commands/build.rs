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
  meshc build --no-cache               compile every node again, keep no cache

Plans are byte-identical whatever the directory, the environment or the number of
workers; `OUT/.mesh-repository` records which repository the output was made from.
`OUT/.mesh-cache` records what each node's compilation read: the next build into OUT
compiles only the nodes an edit reaches, and writes the same bytes a build from
nothing writes.")]
pub struct BuildArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// Where to write the plans and the manifest; default: `build` in the repository
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Make no secret: a need or grant without its sealed file is an error (for CI)
    #[arg(long)]
    pub locked: bool,
    /// Build from nothing: read no build cache and remove the one in OUT
    #[arg(long)]
    pub no_cache: bool,
    /// Print how long compiling, planning and writing took, and when each phase ended
    /// with the memory resident then
    #[arg(long, env = "MESH_TIMINGS")]
    pub timings: bool,
    #[command(flatten)]
    pub workers: WorkersArgs,
    #[command(flatten)]
    pub limits: LimitsArgs,
    #[command(flatten)]
    pub one_node: OneNodeHabits,
}

/// A node named to `build` or `check` the way colmena, deploy-rs and flakes name
/// one (`build app1`, `.#app1`, `--on app1`, `--node app1`, `--target app1`):
/// refused as a usage error that says every node is compiled, and what shows or
/// deploys one (never shown in the help).
#[derive(Debug, Args)]
pub struct OneNodeHabits {
    #[arg(value_name = "NODE", hide = true, value_parser = every_node)]
    pub named: Vec<String>,
    #[arg(long = "on", aliases = ["node", "nodes", "target", "target-host", "host"], value_name = "NODE", hide = true, value_parser = every_node)]
    pub flag: Vec<String>,
}

/// The usage error for one node named to `build` or `check`.
fn every_node(node: &str) -> Result<String, String> {
    let node = node.strip_prefix(".#").unwrap_or(node);
    Err(format!(
        "meshc compiles every node at once (their plans depend on each other through links): `meshc show {node}` shows one node's plan, `meshc deploy --on {node}` deploys it"
    ))
}

pub fn run(arguments: BuildArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.root(color)?;
    let out = match arguments.out {
        Some(out) => out,
        None => crate::cli::default_output(&root, color)?,
    };
    let started = std::time::Instant::now();
    if arguments.timings {
        compiler::phases::record();
    }
    // before the cache is opened or removed: the output may be another's
    let canonical = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
    compiler::check_output_for(&out, &canonical)
        .map_err(|diagnostic| terminal::fail(&diagnostic, &lang::Sources::new(), color))?;
    let secrets = if arguments.locked {
        compiler::SecretMode::Locked
    } else {
        compiler::SecretMode::Make
    };
    let options = compiler::Options {
        secrets,
        workers: arguments.workers.get(),
    };
    // one build at a time into an output, from before its cache is read: a build
    // that read the record and then waited would reuse plans the other replaced
    let lock = compiler::OutputLock::take(&out)
        .map_err(|diagnostic| terminal::fail(&diagnostic, &lang::Sources::new(), color))?;
    // a default output this user's builds did not write (one that came with the
    // repository) is built from nothing: its cache could claim its plans are the
    // ones the repository makes, and a build that reused them would record them
    let default_output = crate::made_here::is_default_output(&root, &out);
    // the cache file a default output's record names, and only it, is opened
    let recorded = if default_output {
        crate::made_here::recorded_with_cache(&out)
            .map(|accept| Box::new(accept) as Box<dyn Fn(&compiler::Stamp) -> bool>)
    } else {
        Some(Box::new(|_: &compiler::Stamp| true) as Box<dyn Fn(&compiler::Stamp) -> bool>)
    };
    let brought = recorded.is_none();
    if brought {
        if crate::cli::state_directory().is_none() {
            say!(
                "note: neither `XDG_STATE_HOME` nor `HOME` is set, so the build in `{}` cannot be known as one your `meshc build` made: building from nothing",
                out.display()
            );
        } else {
            say!(
                "note: the build in `{}` was not made by your `meshc build`: building from nothing",
                out.display()
            );
        }
    }
    let cache = if arguments.no_cache || brought {
        if let Err(diagnostic) = compiler::cache::remove(&out) {
            lock.give_up();
            return Err(terminal::fail(&diagnostic, &lang::Sources::new(), color));
        }
        if default_output && !brought {
            crate::made_here::cache_removed(&out);
        }
        None
    } else {
        let accept = recorded.as_deref().unwrap_or(&|_: &compiler::Stamp| false);
        let (start, notes) = compiler::cache::open(&root, &out, accept);
        terminal::report(&notes, &lang::Sources::new(), false, color);
        match start {
            compiler::cache::Start::Unchanged {
                nodes,
                shapes,
                read,
            } => {
                // nothing to record: the record names these very files already
                // (else the output was taken for one brought, and built)
                if arguments.timings {
                    say!("cache: evaluated: none");
                    say!("cache: compiled again: none");
                    say!("cache: output files read back: {read}");
                }
                say!(
                    "built {nodes} node(s), {shapes} shape(s) in {} ms -> {} ({nodes} of {nodes} reused: nothing changed)",
                    started.elapsed().as_millis(),
                    out.display()
                );
                return Ok(ExitCode::SUCCESS);
            }
            compiler::cache::Start::Build(cache) => Some(cache),
        }
    };
    // each node's plan is written (staged) as soon as it is made and then dropped,
    // so the build's memory does not grow with the fleet; nothing is visible in
    // OUT until the whole build succeeded
    let session = arguments.limits.session();
    let (mut staged, mut compilation) = staged_compilation(&lock, &root, options, &session, &cache)
        .map_err(|diagnostic| {
            lock.give_up();
            terminal::fail(&diagnostic, &lang::Sources::new(), color)
        })?;
    let mut from_nothing = false;
    if let Some(cache) = &cache
        && compiler::must_compile_again(cache, &compilation)
    {
        // what it says must be what a build from nothing says, in its order and at
        // its places, and a node that declared other than the cache had it makes
        // the cache untrustworthy: made again without the cache, keeping none (the
        // secrets the first made are in the store now, and counted). An error
        // found in what was evaluated again is what a build from nothing finds,
        // and is reported as it is
        staged.abort();
        let made = compilation.made;
        (staged, compilation) = staged_compilation(&lock, &root, options, &session, &None)
            .map_err(|diagnostic| {
                lock.give_up();
                terminal::fail(&diagnostic, &lang::Sources::new(), color)
            })?;
        compilation.made.needs += made.needs;
        compilation.made.grants += made.grants;
        from_nothing = true;
    }
    let compiled_at = started.elapsed();
    terminal::traces(&compilation.traces, &compilation.sources);
    if let Some(cache) = &cache {
        terminal::report(&cache.notes(), &lang::Sources::new(), false, color);
    }
    terminal::report(&compilation.diagnostics, &compilation.sources, false, color);
    if compilation.has_errors() {
        staged.abort();
        lock.give_up();
        if let Some(cache) = &cache
            && arguments.timings
        {
            cache_timings(cache, from_nothing);
        }
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
            lock.give_up();
            return Err(terminal::fail(&diagnostic, &compilation.sources, color));
        }
    };
    compiler::phases::mark("plans committed");
    let shape_count = written.shapes;
    if let Err(diagnostic) = compiler::record_repository(&out, &compilation.root) {
        return Err(terminal::fail(&diagnostic, &compilation.sources, color));
    }
    if let Some(cache) = &cache
        && arguments.timings
    {
        cache_timings(cache, from_nothing);
        say!(
            "cache: plans compared with the output's: {}",
            written.compared
        );
    }
    if let Some(cache) = &cache {
        // a node whose diagnostics or traces would not be printed again is never
        // reused: a build that had any keeps no cache, but for what every build
        // says again of the repository's layout (a module shadowing a standard one)
        let said = !compilation.diagnostics.is_empty();
        let saved = if !from_nothing
            && compilation.traces.is_empty()
            && (!said || cache.said_only_of_the_layout())
        {
            cache.save(&written, !compilation.artifact_directories.is_empty(), said)
        } else {
            compiler::cache::remove(&out)
        };
        compiler::phases::mark("cache saved");
        if let Err(diagnostic) = saved {
            return Err(terminal::fail(&diagnostic, &compilation.sources, color));
        }
    }
    // the manifest and the cache are what they stay: recorded as this user's
    if default_output {
        unrecorded(crate::made_here::remember(&out, &written.manifest));
    }
    let reused = match &cache {
        Some(_) if from_nothing => format!(" (0 of {} reused)", written.nodes),
        Some(cache) => format!(" ({} of {} reused)", cache.reused(), written.nodes),
        None => String::new(),
    };
    if arguments.timings {
        say!(
            "timings: compile {} ms, plans {} ms, write {} ms",
            compiled_at.as_millis(),
            (planned_at - compiled_at).as_millis(),
            (started.elapsed() - planned_at).as_millis()
        );
    }
    if arguments.timings {
        say!("timings: phases (ms from the start): {}", phases_line());
        say!(
            "timings: resident memory (MiB at the end of each phase): {}",
            resident_line()
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
        "built {} node(s), {shape_count} shape(s) in {} ms -> {}{reused}",
        written.nodes,
        started.elapsed().as_millis(),
        out.display()
    );
    // the process ends here: nothing to free for memory the exit returns anyway (the
    // cache's last record and the syntax trees took 35 ms to free at 10,000 nodes)
    std::mem::forget(compilation);
    std::mem::forget(cache);
    std::mem::forget(staged);
    Ok(ExitCode::SUCCESS)
}

/// Warns when a build into the default output could not be recorded as this
/// user's (`remembered` false): `meshc diff` and `publish` will refuse it (E422).
fn unrecorded(remembered: bool) {
    if !remembered {
        say!(
            "warning: this build could not be recorded as yours (`$XDG_STATE_HOME/mesh/builds`, else `~/.local/state/mesh/builds`, is not writable, or neither `XDG_STATE_HOME` nor `HOME` is set): `meshc diff` and `meshc publish` will refuse it (E422) until it can"
        );
    }
}

/// A compilation whose plans are staged as they are made in the output `lock`
/// holds, with the build cache `cache` if any.
fn staged_compilation(
    lock: &compiler::OutputLock,
    root: &std::path::Path,
    options: compiler::Options,
    session: &compiler::Session,
    cache: &Option<std::sync::Arc<compiler::cache::BuildCache>>,
) -> Result<(std::sync::Arc<compiler::StagedBuild>, compiler::Compilation), lang::Diagnostic> {
    let staged = std::sync::Arc::new(compiler::StagedBuild::open(lock)?);
    let mut session = session.clone();
    session.sink = Some(staged.clone());
    session.cache = cache.clone();
    if let Some(cache) = cache
        && session.parses.is_none()
    {
        session.parses = Some(cache.parses.clone());
    }
    let compilation = compiler::compile_session(root, options, &session);
    Ok((staged, compilation))
}

/// What `--timings` says of the cache: what was evaluated, compiled and read again.
fn cache_timings(cache: &compiler::cache::BuildCache, from_nothing: bool) {
    if from_nothing {
        say!("cache: evaluated: every node (made again from nothing)");
        say!("cache: compiled again: every node");
        say!("cache: module files evaluated: every module");
        return;
    }
    say!("cache: evaluated: {}", compiled_again(&cache.evaluated()));
    say!(
        "cache: compiled again: {}",
        compiled_again(&cache.compiled_again())
    );
    say!(
        "cache: module files evaluated: {}",
        compiled_again(&cache.loaded_modules())
    );
    say!("cache: plans read back: {}", cache.read_back());
    use compiler::cache::Digested;
    say!(
        "cache: inventory digested: {}",
        match cache.inventory_digested() {
            Some(Digested::Plain) => "from its text (plain data)".to_string(),
            Some(Digested::Reached {
                evaluated,
                of,
                fleet_evaluated,
            }) => {
                let mut how = "from the text each entry reaches".to_string();
                if evaluated > 0 {
                    how.push_str(&format!(", {evaluated} of {of} entries evaluated"));
                }
                if fleet_evaluated {
                    how.push_str(", the fields beside the nodes evaluated");
                }
                how
            }
            Some(Digested::Evaluated) => "evaluated".to_string(),
            None => "no (unchanged)".to_string(),
        }
    );
}

/// The phases the build marked, each with when it ended (`--timings`).
fn phases_line() -> String {
    compiler::phases::marks()
        .iter()
        .map(|(phase, elapsed, _)| format!("{phase} {:.1}", elapsed.as_secs_f64() * 1000.0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The process's resident memory at the end of each phase (`--timings`), where
/// the system says.
fn resident_line() -> String {
    compiler::phases::marks()
        .iter()
        .filter_map(|(phase, _, resident)| {
            resident.map(|bytes| format!("{phase} {}", bytes / (1024 * 1024)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Nodes as `--timings` names them (the first ten).
fn compiled_again(nodes: &[String]) -> String {
    match nodes.len() {
        0 => "none".to_string(),
        1..=10 => nodes.join(", "),
        count => format!("{} and {} more", nodes[..10].join(", "), count - 10),
    }
}
