//! The language corpus: every `tests/data/eval/ok/<case>.nix` must print exactly its
//! `.out` (produced by the real `nix-instantiate`, see `GENERATED.md`), every
//! `fail/<case>.nix` must end in the diagnostic code its first line names, and every
//! `notyetpassing/<case>.nix` must still fail. With `MESH_NIX_ORACLE=1` the checked-in
//! outputs are also compared with a locally installed `nix-instantiate` (drift).
//! The runner reads files only under `tests/data/eval/`; it must not rewrite them
//! (`scripts/regen-lang-expected` does that).

use std::io;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use lang::{Diagnostic, FileKind, Limits, Loader, Machine, Span};

/// The real filesystem, for the corpus only (the crate itself does no I/O).
struct CorpusFiles;

fn kind_of(metadata: &std::fs::Metadata) -> FileKind {
    let file_type = metadata.file_type();
    if file_type.is_symlink() {
        FileKind::Symlink
    } else if file_type.is_dir() {
        FileKind::Directory
    } else if file_type.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    }
}

impl Loader for CorpusFiles {
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
        lang::within(std::fs::read(path)?, max_len)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        std::fs::symlink_metadata(path)
            .ok()
            .map(|metadata| kind_of(&metadata))
    }

    fn list(&self, path: &Path) -> io::Result<lang::Entries> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            let metadata = std::fs::symlink_metadata(entry.path())?;
            entries.push((
                std::os::unix::ffi::OsStringExt::into_vec(entry.file_name()),
                kind_of(&metadata),
            ));
        }
        Ok(entries)
    }
}

fn data_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/eval");
    root.canonicalize().unwrap_or(root)
}

/// The cases of one directory: `<case>.nix` files, sorted (subdirectories such as
/// `ok/lib/` hold helpers and are not cases).
fn cases(directory: &str) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(data_root().join(directory)) {
        Ok(entries) => entries,
        // git keeps no empty directory: an empty notyetpassing/ is absent
        Err(error) if error.kind() == io::ErrorKind::NotFound && directory == "notyetpassing" => {
            return Vec::new();
        }
        Err(error) => panic!("cannot list `{directory}`: {error}"),
    };
    let mut found: Vec<PathBuf> = entries
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "nix"))
        .collect();
    found.sort();
    found
}

fn case_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let directory = path
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{directory}/{name}")
}

fn is_json(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".json.nix")
}

/// `<case>.nix` -> `<case>.out`, `<case>.json.nix` -> `<case>.json.out`.
fn expected_path(path: &Path) -> PathBuf {
    path.with_extension("out")
}

/// The `# key: value` lines at the top of a case.
fn header(source: &str, key: &str) -> Vec<String> {
    let prefix = format!("# {key}:");
    source
        .lines()
        .take_while(|line| line.starts_with('#'))
        .filter_map(|line| line.strip_prefix(&prefix))
        .map(|value| value.trim().to_string())
        .collect()
}

enum Outcome {
    Printed(Vec<u8>),
    Failed(Vec<Diagnostic>),
    Panicked(String),
}

/// Evaluates a file the way `meshc eval [--json]` does (without the trailing newline
/// handling, which is `nix-instantiate`'s: a newline after the plain form only).
/// A `# max-steps: N` header sets the step budget an editor would set, and
/// `# max-memory: BYTES` the memory bound; without them, `meshc`'s defaults.
fn evaluate(path: &Path, json: bool) -> Outcome {
    let source = std::fs::read_to_string(path).unwrap_or_default();
    let limit = |name: &str| -> Option<u64> {
        header(&source, name)
            .first()
            .and_then(|value| value.parse().ok())
    };
    let limits = Limits {
        max_steps: limit("max-steps").or(Limits::default().max_steps),
        max_memory: limit("max-memory").or(Limits::default().max_memory),
        ..Limits::default()
    };
    let path = path.to_path_buf();
    let root = data_root();
    let result = std::panic::catch_unwind(AssertUnwindSafe(move || {
        lang::eval::run_with_stack(move || {
            let mut machine = Machine::new(Rc::new(CorpusFiles), vec![root], limits);
            let value = match machine.eval_file(&path) {
                Ok(value) => value,
                Err(errors) => return Err(errors),
            };
            let printed = if json {
                machine
                    .force_deep(&value, Span::default())
                    .and_then(|value| machine.to_json(&value, Span::default()))
            } else {
                machine.print_strict(&value).map(|mut bytes| {
                    bytes.push(b'\n');
                    bytes
                })
            };
            printed.map_err(|error| vec![*error])
        })
        .expect("an evaluation thread")
    }));
    match result {
        Ok(Ok(bytes)) => Outcome::Printed(bytes),
        Ok(Err(errors)) => Outcome::Failed(errors),
        Err(panic) => Outcome::Panicked(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".to_string()),
        ),
    }
}

fn describe_errors(errors: &[Diagnostic]) -> String {
    errors
        .iter()
        .map(|error| {
            let mut text = format!("{}: {}", error.code, error.message);
            if let Some(primary) = &error.primary {
                text.push_str(&format!(" [{}]", primary.message));
            }
            for secondary in &error.secondary {
                text.push_str(&format!(" [{}]", secondary.message));
            }
            if let Some(help) = &error.help {
                text.push_str(&format!(" (help: {help})"));
            }
            for frame in &error.trace {
                text.push_str(&format!(" [trace: {}]", frame.message));
            }
            text
        })
        .collect::<Vec<_>>()
        .join("\n    ")
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Printed(bytes) => format!("output {:?}", String::from_utf8_lossy(bytes)),
        Outcome::Failed(errors) => format!("error {}", describe_errors(errors)),
        Outcome::Panicked(message) => format!("PANIC {message}"),
    }
}

/// Checks one ok case; None if it passes, else what went wrong.
fn check_ok(path: &Path) -> Option<String> {
    let expected = match std::fs::read(expected_path(path)) {
        Ok(expected) => expected,
        Err(error) => return Some(format!("no expected output: {error}")),
    };
    let root = data_root();
    if String::from_utf8_lossy(&expected).contains(&*root.to_string_lossy()) {
        return Some("the expected output holds this machine's absolute path; scrub it".into());
    }
    let outcome = evaluate(path, is_json(path));
    match &outcome {
        Outcome::Printed(bytes) if *bytes == expected => None,
        other => Some(format!(
            "expected output {:?}\n    actual {}",
            String::from_utf8_lossy(&expected),
            describe(other)
        )),
    }
}

/// Checks one fail case; None if it passes.
fn check_fail(path: &Path) -> Option<String> {
    let source = std::fs::read_to_string(path).unwrap_or_default();
    let Some(expected_code) = source
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("# expect:"))
        .map(|code| code.trim().to_string())
    else {
        return Some("the first line must be `# expect: E0NN`".into());
    };
    let contains = header(&source, "message-contains");
    let count = header(&source, "error-count");
    let outcome = evaluate(path, is_json(path));
    let errors = match &outcome {
        Outcome::Failed(errors) => errors,
        other => return Some(format!("expected {expected_code}, got {}", describe(other))),
    };
    let mut problems = Vec::new();
    match errors.first() {
        Some(first) if first.code.as_str() == expected_code => {}
        _ => problems.push(format!("expected {expected_code}")),
    }
    for error in errors {
        if error.primary.is_none() {
            problems.push(format!("{} has no primary span", error.code));
        }
        if error.help.as_deref().is_none_or(str::is_empty) {
            problems.push(format!("{} has no help line", error.code));
        }
    }
    if let Some(count) = count.first()
        && count.parse::<usize>().ok() != Some(errors.len())
    {
        problems.push(format!("expected {count} errors, got {}", errors.len()));
    }
    let text = describe_errors(errors);
    for needle in &contains {
        if !text.contains(needle.as_str()) {
            problems.push(format!("the diagnostic does not contain {needle:?}"));
        }
    }
    if problems.is_empty() {
        None
    } else {
        Some(format!(
            "{}\n    actual {}",
            problems.join("; "),
            describe(&outcome)
        ))
    }
}

fn is_hand_written(path: &Path) -> bool {
    let source = std::fs::read_to_string(path).unwrap_or_default();
    !header(&source, "hand-written").is_empty()
}

fn report(kind: &str, total: usize, failures: &[(String, String)]) {
    for (name, problem) in failures {
        eprintln!("FAIL {name}\n    {problem}");
    }
    eprintln!("{kind}: {} of {total} cases pass", total - failures.len());
}

#[test]
fn ok_cases_print_what_nix_prints() {
    let all = cases("ok");
    let failures: Vec<(String, String)> = all
        .iter()
        .filter_map(|path| check_ok(path).map(|problem| (case_name(path), problem)))
        .collect();
    report("ok", all.len(), &failures);
    assert!(failures.is_empty(), "{} ok cases fail", failures.len());
}

#[test]
fn fail_cases_end_in_their_diagnostic() {
    let all = cases("fail");
    let failures: Vec<(String, String)> = all
        .iter()
        .filter_map(|path| check_fail(path).map(|problem| (case_name(path), problem)))
        .collect();
    report("fail", all.len(), &failures);
    assert!(failures.is_empty(), "{} fail cases fail", failures.len());
}

/// A known-wrong case must say why and must still fail: fixing one forces moving it
/// to `ok/` or `fail/`.
#[test]
fn notyetpassing_cases_still_fail() {
    let all = cases("notyetpassing");
    let mut failures = Vec::new();
    for path in &all {
        let source = std::fs::read_to_string(path).unwrap_or_default();
        if header(&source, "notyetpassing").is_empty() {
            failures.push((
                case_name(path),
                "a `# notyetpassing: why` line must say what is wrong".to_string(),
            ));
            continue;
        }
        let passes = if source.starts_with("# expect:") {
            check_fail(path).is_none()
        } else {
            check_ok(path).is_none()
        };
        if passes {
            failures.push((
                case_name(path),
                "passes now: move it to ok/ or fail/".to_string(),
            ));
        }
    }
    report("notyetpassing", all.len(), &failures);
    assert!(
        failures.is_empty(),
        "{} notyetpassing cases",
        failures.len()
    );
}

/// With `MESH_NIX_ORACLE=1`: the checked-in outputs still are what the local
/// `nix-instantiate` prints (and hand-written exceptions still differ from it).
#[test]
fn expected_outputs_match_nix_instantiate() {
    if std::env::var("MESH_NIX_ORACLE").as_deref() != Ok("1") {
        return;
    }
    let mut all = cases("ok");
    all.extend(cases("notyetpassing").into_iter().filter(|path| {
        !std::fs::read_to_string(path)
            .unwrap_or_default()
            .starts_with("# expect:")
    }));
    let mut failures = Vec::new();
    for path in &all {
        let mut command = Command::new("nix-instantiate");
        command.args(["--eval", "--strict"]);
        if is_json(path) {
            command.arg("--json");
        }
        command.arg(path);
        if let Some(directory) = path.parent() {
            command.current_dir(directory);
        }
        let output = match command.output() {
            Ok(output) => output,
            Err(error) => panic!("cannot run nix-instantiate: {error}"),
        };
        let expected = std::fs::read(expected_path(path)).unwrap_or_default();
        let hand_written = is_hand_written(path);
        if hand_written {
            if output.status.success() && output.stdout == expected {
                failures.push((
                    case_name(path),
                    "hand-written, but nix-instantiate now agrees: regenerate it".to_string(),
                ));
            }
            continue;
        }
        if !output.status.success() {
            failures.push((
                case_name(path),
                format!(
                    "nix-instantiate rejects it: {}",
                    String::from_utf8_lossy(&output.stderr)
                ),
            ));
        } else if output.stdout != expected {
            failures.push((
                case_name(path),
                format!(
                    "checked in {:?}\n    nix-instantiate {:?}",
                    String::from_utf8_lossy(&expected),
                    String::from_utf8_lossy(&output.stdout)
                ),
            ));
        }
    }
    report("oracle", all.len(), &failures);
    assert!(failures.is_empty(), "{} cases drifted", failures.len());
}
