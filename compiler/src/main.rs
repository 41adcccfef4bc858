//! The `meshc` binary: parses the command line and runs one command.
#![forbid(unsafe_code)]

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use compiler::evaluate::{EvalRequest, Input, evaluate};
use compiler::render;

const USAGE: &str = "\
usage: meshc <command> [options]

commands:
  eval [--json] [--trace] [--root DIR] FILE    evaluate a file like `nix-instantiate --eval --strict`
  eval [--json] [--trace] --expr EXPR          evaluate an expression
  check [--repo DIR] [--format human|json]     report every diagnostic of the repository
  lsp                                          language server over stdio (diagnostics, hover, definition, completion)
  build [--repo DIR] [--out DIR] [--locked]    compile the repository into one plan per node
  lock [--repo DIR] --pin REF=sha256:HEX       pin a mirrored image in mesh.lock
  diff [--repo DIR] [--against DIR]            what would change on each node, against the last build
  diff OLD NEW                                 what changes between two build outputs
       [--format human|json] [--detailed-exitcode]
  artifacts build [--repo DIR] [--store DIR]   build the declared artifacts and record them in mesh.lock
  artifacts build --remote [--repo DIR]        ask the builder (`mesh-build`) through the broker instead
       [--amqp URL] [--timeout SECS]
  publish [--out DIR] [--amqp URL] [--node N]  send each node's plan to its queue (waits for the broker's confirms)
  builds [--store DIR] [--format human|json]   the builder's record of every build result, failures included
  broker-permissions [--out DIR] [--vhost V]   print the rabbitmqctl commands that give each node, the builder
                                               and the operator their own least-privilege user

eval, check and build also take --max-steps N (default 1000000000) and --max-memory SIZE
(bytes, or with K/M/G; default 4G): the evaluation's step budget and memory bound
";

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let mut arguments = std::env::args_os().skip(1);
    let Some(command) = arguments.next() else {
        return Err("no command given".into());
    };
    let rest: Vec<std::ffi::OsString> = arguments.collect();
    match command.to_str() {
        Some("eval") => eval_command(rest),
        Some("check") => check_command(rest),
        Some("lsp") => compiler::lsp::run().map(|()| ExitCode::SUCCESS),
        Some("build") => build_command(rest),
        Some("lock") => lock_command(rest),
        Some("diff") => diff_command(rest),
        Some("artifacts") => artifacts_command(rest),
        Some("publish") => publish_command(rest),
        Some("builds") => builds_command(rest),
        Some("broker-permissions") => broker_permissions_command(rest),
        Some("help") | Some("--help") | Some("-h") => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Some(other) => Err(format!("unknown command `{other}`")),
        None => Err("the command is not valid UTF-8".into()),
    }
}

fn eval_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut json = false;
    let mut trace = false;
    let mut root = None;
    let mut expression = None;
    let mut file = None;
    let (mut max_steps, mut max_memory) = (None, None);
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("max-steps") => max_steps = Some(steps_value(&mut parser)?),
            Long("max-memory") => max_memory = Some(size_value(&mut parser)?),
            Long("json") => json = true,
            Long("trace") => trace = true,
            Long("strict") | Long("eval") => {}
            Long("root") => root = Some(path_value(&mut parser)?),
            Long("expr") | Short('E') => {
                expression = Some(
                    parser
                        .value()
                        .map_err(|e| e.to_string())?
                        .string()
                        .map_err(|e| format!("{e:?}"))?,
                )
            }
            Value(value) if file.is_none() => file = Some(PathBuf::from(value)),
            other => return Err(other.unexpected().to_string()),
        }
    }
    let input = match (file, expression) {
        (Some(path), None) => Input::File(path),
        (None, Some(text)) => Input::Expression(text),
        _ => return Err("give either a FILE or --expr EXPR".into()),
    };
    let working_directory = std::env::current_dir().map_err(|e| e.to_string())?;
    let outcome = evaluate(EvalRequest {
        input,
        json,
        root,
        working_directory,
        limits: compiler::limits::with(max_steps, max_memory),
    });
    let mut stderr = std::io::stderr();
    for message in &outcome.traces {
        let _ = writeln!(stderr, "trace: {message}");
    }
    match outcome.output {
        Ok(bytes) => {
            let mut stdout = std::io::stdout();
            stdout.write_all(&bytes).map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(diagnostics) => {
            report(&diagnostics, &outcome.sources, trace);
            Ok(ExitCode::from(1))
        }
    }
}

fn check_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut repository = PathBuf::from(".");
    let mut json = false;
    let (mut max_steps, mut max_memory) = (None, None);
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("repo") => repository = path_value(&mut parser)?,
            Long("format") => json = json_format(&mut parser)?,
            Long("max-steps") => max_steps = Some(steps_value(&mut parser)?),
            Long("max-memory") => max_memory = Some(size_value(&mut parser)?),
            other => return Err(other.unexpected().to_string()),
        }
    }
    let session = compiler::pipeline::Session {
        limits: compiler::limits::with(max_steps, max_memory),
        ..Default::default()
    };
    let options = compiler::pipeline::Options::inspect();
    let compilation = compiler::pipeline::compile_session(&repository, options, &session);
    if json {
        let items: Vec<serde_json::Value> = compilation
            .diagnostics
            .iter()
            .map(|d| render::to_json(d, &compilation.sources))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&items).map_err(|e| e.to_string())?
        );
    } else {
        report(&compilation.diagnostics, &compilation.sources, false);
        eprintln!(
            "{} node(s) checked, {} error(s)",
            compilation.plans.len(),
            error_count(&compilation)
        );
    }
    let failed = compilation.has_errors();
    // as in `build`: the exit frees the plans faster than dropping them one by one
    std::mem::forget(compilation);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to something
/// (<https://no-color.org>).
fn colour(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Writes diagnostics to standard error, rendered against their sources.
fn report(diagnostics: &[lang::Diagnostic], sources: &lang::Sources, trace: bool) {
    let mut stderr = std::io::stderr();
    let colour = colour(&stderr);
    for diagnostic in diagnostics {
        let _ = write!(
            stderr,
            "{}",
            render::render(diagnostic, sources, trace, colour)
        );
    }
}

/// Reports one diagnostic that ends the command; its exit status.
fn failed(diagnostic: &lang::Diagnostic, sources: &lang::Sources) -> ExitCode {
    report(std::slice::from_ref(diagnostic), sources, false);
    ExitCode::from(1)
}

fn error_count(compilation: &compiler::pipeline::Compilation) -> usize {
    compilation
        .diagnostics
        .iter()
        .filter(|d| d.severity == lang::Severity::Error)
        .count()
}

fn build_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut repository = PathBuf::from(".");
    let mut out = PathBuf::from("build");
    let mut locked = false;
    let (mut max_steps, mut max_memory) = (None, None);
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("repo") => repository = path_value(&mut parser)?,
            Long("out") => out = path_value(&mut parser)?,
            Long("locked") => locked = true,
            Long("max-steps") => max_steps = Some(steps_value(&mut parser)?),
            Long("max-memory") => max_memory = Some(size_value(&mut parser)?),
            other => return Err(other.unexpected().to_string()),
        }
    }
    let started = std::time::Instant::now();
    let options = compiler::pipeline::Options {
        secrets: if locked {
            compiler::link::SecretMode::Locked
        } else {
            compiler::link::SecretMode::Make
        },
        workers: None,
    };
    let session = compiler::pipeline::Session {
        limits: compiler::limits::with(max_steps, max_memory),
        ..Default::default()
    };
    let compilation = compiler::pipeline::compile_session(&repository, options, &session);
    let compiled_at = started.elapsed();
    report(&compilation.diagnostics, &compilation.sources, false);
    if compilation.has_errors() {
        eprintln!(
            "build failed: {} error(s); no plan was written",
            error_count(&compilation)
        );
        return Ok(ExitCode::from(1));
    }
    let plans = &compilation.plans;
    let shape_count: usize = plans.values().map(|plan| plan.shapes().len()).sum();
    let planned_at = started.elapsed();
    if let Err(diagnostic) = compiler::emit::write(&out, plans, &compilation.keys) {
        return Ok(failed(&diagnostic, &compilation.sources));
    }
    if std::env::var_os("MESH_TIMINGS").is_some() {
        eprintln!(
            "timings: compile {} ms, plans {} ms, write {} ms",
            compiled_at.as_millis(),
            (planned_at - compiled_at).as_millis(),
            (started.elapsed() - planned_at).as_millis()
        );
    }
    let made = compilation.made;
    if made.needs + made.grants > 0 {
        eprintln!(
            "made {} need(s) and {} grant(s) in secrets/: commit them with the repository",
            made.needs, made.grants
        );
    }
    eprintln!(
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

fn lock_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut repository = PathBuf::from(".");
    let mut pins = Vec::new();
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("repo") => repository = path_value(&mut parser)?,
            Long("pin") => {
                let pin = parser
                    .value()
                    .map_err(|e| e.to_string())?
                    .string()
                    .map_err(|e| format!("{e:?}"))?;
                let Some((reference, digest)) = pin.rsplit_once('=') else {
                    return Err(format!("--pin takes REF=sha256:HEX, not `{pin}`"));
                };
                if !compiler::lock::is_upstream_reference(reference) {
                    return Err(format!(
                        "`{reference}` is not an image reference with a tag, like docker.io/library/postgres:16"
                    ));
                }
                if !plan::is_sha256_digest(digest) {
                    return Err(format!(
                        "`{digest}` is not a digest: write sha256: and 64 lowercase hex digits"
                    ));
                }
                pins.push((reference.to_string(), digest.to_string()));
            }
            other => return Err(other.unexpected().to_string()),
        }
    }
    if pins.is_empty() {
        return Err("give at least one --pin REF=sha256:HEX".into());
    }
    let mut lock = match compiler::lock::read(&repository) {
        Ok(lock) => lock,
        Err(diagnostic) => {
            return Ok(failed(&diagnostic, &lang::Sources::new()));
        }
    };
    for (reference, digest) in pins {
        match lock.mirrors.insert(reference.clone(), digest.clone()) {
            Some(previous) if previous != digest => {
                eprintln!("pinned {reference} to {digest} (was {previous})")
            }
            Some(_) => eprintln!("{reference} was already pinned to {digest}"),
            None => eprintln!("pinned {reference} to {digest}"),
        }
    }
    if let Err(diagnostic) = compiler::lock::write(&repository, &lock) {
        return Ok(failed(&diagnostic, &lang::Sources::new()));
    }
    Ok(ExitCode::SUCCESS)
}

fn artifacts_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut repository = PathBuf::from(".");
    let mut store = None;
    let mut action = None;
    let mut remote = false;
    let mut url = None;
    let mut timeout = compiler::builds::DEFAULT_REMOTE_TIMEOUT;
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("repo") => repository = path_value(&mut parser)?,
            Long("store") => store = Some(path_value(&mut parser)?),
            Long("remote") => remote = true,
            Long("amqp") => url = Some(string_value(&mut parser)?),
            Long("timeout") => {
                let seconds = string_value(&mut parser)?;
                timeout = seconds
                    .parse::<u64>()
                    .map(std::time::Duration::from_secs)
                    .map_err(|_| format!("--timeout takes whole seconds, not `{seconds}`"))?;
            }
            Value(value) if action.is_none() => {
                action = Some(value.string().map_err(|e| format!("{e:?}"))?)
            }
            other => return Err(other.unexpected().to_string()),
        }
    }
    if action.as_deref() != Some("build") {
        return Err("usage: meshc artifacts build [--repo DIR] [--store DIR | --remote [--amqp URL] [--timeout SECS]]".into());
    }
    if remote && store.is_some() {
        return Err(
            "--store is where local builds go; with --remote the builder keeps its own store"
                .into(),
        );
    }
    let compilation = compiler::pipeline::compile(&repository);
    // a link out of an artifact's directory is refused before anything is packed
    let escaping_link =
        |diagnostic: &&lang::Diagnostic| diagnostic.code == lang::codes::ARTIFACT_LINK_ESCAPES;
    if let Some(escaping) = compilation.diagnostics.iter().find(escaping_link) {
        return Ok(failed(escaping, &compilation.sources));
    }
    let mut lock = match compiler::lock::read(&compilation.root) {
        Ok(lock) => lock,
        Err(diagnostic) => {
            return Ok(failed(&diagnostic, &compilation.sources));
        }
    };
    if compilation.artifact_directories.is_empty() {
        eprintln!("the repository declares no artifacts");
    }
    let mut all_built = true;
    if remote {
        let directories: Vec<String> = compilation.artifact_directories.keys().cloned().collect();
        if !directories.is_empty() {
            let url = transport::names::url_or_default(url);
            let (digests, all) = compiler::builds::build_remotely(&directories, &url, timeout)?;
            all_built = all;
            lock.artifacts.extend(digests);
        }
    } else {
        for (directory, absolute) in &compilation.artifact_directories {
            let built = compiler::artifacts::build(absolute)
                .map_err(|e| format!("cannot archive `{directory}`: {e}"))?;
            let path = match &store {
                Some(store) => compiler::artifacts::store(store, &built),
                None => compiler::artifacts::store_in_repository(&compilation.root, &built),
            }
            .map_err(|e| format!("cannot store `{directory}`: {e}"))?;
            eprintln!(
                "built {directory} -> {} ({} bytes)",
                path.display(),
                built.bytes.len()
            );
            lock.artifacts.insert(directory.clone(), built.digest);
        }
    }
    lock.artifacts
        .retain(|directory, _| compilation.artifact_directories.contains_key(directory));
    if let Err(diagnostic) = compiler::lock::write(&compilation.root, &lock) {
        return Ok(failed(&diagnostic, &compilation.sources));
    }
    Ok(if all_built {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Prints a command's output, or its error and exit status 1.
fn print_or_fail(result: Result<String, String>) -> Result<ExitCode, String> {
    match result {
        Ok(text) => {
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(message) => {
            eprintln!("error: {message}");
            Ok(ExitCode::from(1))
        }
    }
}

/// The next flag value as a path.
fn path_value(parser: &mut lexopt::Parser) -> Result<PathBuf, String> {
    parser.value().map(PathBuf::from).map_err(|e| e.to_string())
}

/// The value of `--format`: true for `json`, false for `human`.
fn json_format(parser: &mut lexopt::Parser) -> Result<bool, String> {
    match string_value(parser)?.as_str() {
        "json" => Ok(true),
        "human" => Ok(false),
        _ => Err("--format takes `human` or `json`".into()),
    }
}

/// The value of `--max-steps`.
fn steps_value(parser: &mut lexopt::Parser) -> Result<u64, String> {
    compiler::limits::parse_steps(&string_value(parser)?)
}

/// The value of `--max-memory`.
fn size_value(parser: &mut lexopt::Parser) -> Result<u64, String> {
    compiler::limits::parse_size(&string_value(parser)?)
}

/// The next flag value as a UTF-8 string.
fn string_value(parser: &mut lexopt::Parser) -> Result<String, String> {
    parser
        .value()
        .map_err(|e| e.to_string())?
        .into_string()
        .map_err(|value| format!("`{}` is not valid UTF-8", value.to_string_lossy()))
}

fn publish_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut out = PathBuf::from("build");
    let mut url = None;
    let mut nodes = Vec::new();
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("out") => out = path_value(&mut parser)?,
            Long("amqp") => url = Some(string_value(&mut parser)?),
            Long("node") => nodes.push(string_value(&mut parser)?),
            other => return Err(other.unexpected().to_string()),
        }
    }
    let url = transport::names::url_or_default(url);
    match compiler::publish::publish(&out, &url, &nodes) {
        Ok(true) => Ok(ExitCode::SUCCESS),
        Ok(false) => Ok(ExitCode::from(1)),
        Err(message) => {
            eprintln!("error: {message}");
            Ok(ExitCode::from(1))
        }
    }
}

fn builds_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut store = PathBuf::from(transport::builder::DEFAULT_STORE);
    let mut json = false;
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("store") => store = path_value(&mut parser)?,
            Long("format") => json = json_format(&mut parser)?,
            other => return Err(other.unexpected().to_string()),
        }
    }
    print_or_fail(compiler::builds::render(&store, json))
}

fn broker_permissions_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut out = PathBuf::from("build");
    let mut vhost = "/".to_string();
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("out") => out = path_value(&mut parser)?,
            Long("vhost") => vhost = string_value(&mut parser)?,
            other => return Err(other.unexpected().to_string()),
        }
    }
    print_or_fail(compiler::publish::broker_permissions(&out, &vhost))
}

fn diff_command(arguments: Vec<std::ffi::OsString>) -> Result<ExitCode, String> {
    use compiler::diff::{self, Snapshot};
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_args(arguments);
    let mut repository = PathBuf::from(".");
    let mut against = PathBuf::from("build");
    let mut json = false;
    let mut detailed = false;
    let mut outputs: Vec<PathBuf> = Vec::new();
    while let Some(argument) = parser.next().map_err(|e| e.to_string())? {
        match argument {
            Long("repo") => repository = path_value(&mut parser)?,
            Long("against") => against = path_value(&mut parser)?,
            Long("detailed-exitcode") => detailed = true,
            Long("format") => json = json_format(&mut parser)?,
            Value(value) => outputs.push(PathBuf::from(value)),
            other => return Err(other.unexpected().to_string()),
        }
    }
    let colour = colour(&std::io::stdout());
    let (old, new) =
        match outputs.as_slice() {
            [old, new] => {
                let old = match Snapshot::read(old) {
                    Ok(snapshot) => snapshot,
                    Err(diagnostic) => return Ok(failed(&diagnostic, &lang::Sources::new())),
                };
                let new = match Snapshot::read(new) {
                    Ok(snapshot) => snapshot,
                    Err(diagnostic) => return Ok(failed(&diagnostic, &lang::Sources::new())),
                };
                (old, new)
            }
            [] => {
                let compilation = compiler::pipeline::compile(&repository);
                if compilation.has_errors() {
                    report(&compilation.diagnostics, &compilation.sources, false);
                    return Ok(ExitCode::from(1));
                }
                let old = if against.join("manifest.json").exists() {
                    match Snapshot::read(&against) {
                        Ok(snapshot) => snapshot,
                        Err(diagnostic) => return Ok(failed(&diagnostic, &lang::Sources::new())),
                    }
                } else {
                    eprintln!(
                        "note: there is no build in `{}`: every node is new",
                        against.display()
                    );
                    Snapshot::empty()
                };
                (
                    old,
                    Snapshot::from_plans(compilation.plans, compilation.keys),
                )
            }
            _ => return Err(
                "give no build outputs (diff the repository against --against), or two: OLD NEW"
                    .into(),
            ),
        };
    let difference = match diff::diff(&old, &new) {
        Ok(difference) => difference,
        Err(diagnostic) => return Ok(failed(&diagnostic, &lang::Sources::new())),
    };
    let text = if json {
        let mut text = diff::render_json(&difference);
        text.push('\n');
        text
    } else {
        diff::render_human(&difference, colour)
    };
    std::io::stdout()
        .write_all(text.as_bytes())
        .map_err(|e| e.to_string())?;
    Ok(if detailed && !difference.is_empty() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
