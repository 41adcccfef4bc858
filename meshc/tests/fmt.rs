//! `meshc fmt` on the built binary: formatting twice changes nothing, over every
//! `.nix` file of the repository's examples, standard library and test data; every
//! formatted program of the language corpus (`lang/tests/data/eval/ok`) evaluates to
//! what it did before; `--check` lists what would change and exits 1, 0 when nothing
//! would; the repository is found by walking up to `mesh.nix`. Every file formatted
//! is a copy in a temporary directory; the checkout is never written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MESHC: &str = env!("CARGO_BIN_EXE_meshc");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace holds meshc")
        .to_path_buf()
}

fn meshc(arguments: &[&str], directory: &Path) -> Output {
    Command::new(MESHC)
        .args(arguments)
        .current_dir(directory)
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Copies the `.nix` files (and everything beside them the corpus reads) of
/// `relative` into `into`.
fn copy(relative: &str, into: &Path) -> PathBuf {
    let from = workspace().join(relative);
    let to = into.join(relative);
    let status = Command::new("cp")
        .args(["-a"])
        .arg(&from)
        .arg(
            to.parent()
                .map(|parent| {
                    std::fs::create_dir_all(parent).expect("make the copy's directory");
                    parent.to_path_buf()
                })
                .expect("a parent"),
        )
        .status()
        .expect("cp runs");
    assert!(status.success(), "cannot copy {}", from.display());
    to
}

fn nix_files(directory: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).expect("readable") {
        let path = entry.expect("readable").path();
        if path.is_dir() {
            nix_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "nix") {
            files.push(path);
        }
    }
}

fn contents(files: &[PathBuf]) -> Vec<Vec<u8>> {
    files
        .iter()
        .map(|file| std::fs::read(file).expect("readable"))
        .collect()
}

const CORPUS: &[&str] = &[
    "examples",
    "stdlib-modules",
    "compiler/tests/data",
    "meshc/tests/data",
    "lang/tests/data",
];

#[test]
fn formatting_twice_changes_nothing_over_every_nix_file_of_the_repository() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let mut paths = Vec::new();
    for relative in CORPUS {
        if workspace().join(relative).exists() {
            paths.push(copy(relative, scratch.path()));
        }
    }
    let mut files = Vec::new();
    for path in &paths {
        nix_files(path, &mut files);
    }
    assert!(
        files.len() > 500,
        "the corpus is there: {} files",
        files.len()
    );
    let arguments: Vec<String> = paths
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    let mut first: Vec<&str> = vec!["fmt"];
    first.extend(arguments.iter().map(String::as_str));
    // files the formatter refuses (the corpus' syntax errors, forms only Nix 2.8
    // reads) are reported and left alone: the status is 1, the rest is formatted
    let once = meshc(&first, scratch.path());
    let after_once = contents(&files);
    let changed = files
        .iter()
        .zip(&after_once)
        .filter(|(file, bytes)| {
            let original =
                workspace().join(file.strip_prefix(scratch.path()).expect("in the copy"));
            std::fs::read(original).expect("readable") != **bytes
        })
        .count();
    assert!(
        changed > 100,
        "the first pass formats most files: {changed} changed; {}",
        text(&once.stderr)
    );
    let twice = meshc(&first, scratch.path());
    assert_eq!(
        once.status.code(),
        twice.status.code(),
        "the same files are refused: {}",
        text(&twice.stderr)
    );
    let after_twice = contents(&files);
    let unstable: Vec<String> = files
        .iter()
        .zip(after_once.iter().zip(&after_twice))
        .filter(|(_, (once, twice))| once != twice)
        .map(|(file, _)| file.display().to_string())
        .collect();
    assert!(unstable.is_empty(), "the second pass changed: {unstable:?}");
    let mut check = vec!["fmt", "--check"];
    check.extend(arguments.iter().map(String::as_str));
    let checked = meshc(&check, scratch.path());
    assert!(
        checked.stdout.is_empty(),
        "nothing would change: {}",
        text(&checked.stdout)
    );
}

/// `meshc eval` of a file: its status and standard output.
fn evaluate(file: &Path) -> (Option<i32>, Vec<u8>) {
    let output = meshc(
        &["eval", &file.display().to_string()],
        file.parent().expect("a parent"),
    );
    (output.status.code(), output.stdout)
}

#[test]
fn every_formatted_program_of_the_corpus_evaluates_to_the_same_value() {
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let ok = copy("lang/tests/data/eval/ok", scratch.path());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&ok)
        .expect("readable")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "nix"))
        .collect();
    files.sort();
    // positions are values in these (`unsafeGetAttrPos`, `__curPos`): formatting moves them
    files.retain(|file| {
        let source = std::fs::read_to_string(file).unwrap_or_default();
        !source.contains("unsafeGetAttrPos") && !source.contains("__curPos")
    });
    let before: Vec<_> = files.iter().map(|file| evaluate(file)).collect();
    let mut arguments = vec!["fmt".to_string()];
    arguments.extend(files.iter().map(|file| file.display().to_string()));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    meshc(&arguments, scratch.path());
    let mut compared = 0;
    let mut different = Vec::new();
    for (file, before) in files.iter().zip(before) {
        let after = evaluate(file);
        compared += 1;
        if after != before {
            different.push(format!(
                "{}: {} became {}",
                file.display(),
                text(&before.1),
                text(&after.1)
            ));
        }
    }
    assert!(compared > 500, "the corpus is there: {compared} programs");
    assert!(
        different.is_empty(),
        "formatting changed values: {different:#?}"
    );
}

fn repository_with(file: &str, content: &str) -> tempfile::TempDir {
    let repository = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(repository.path().join("mesh.nix"), "{ nodes = { }; }\n").expect("writable");
    let path = repository.path().join(file);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("writable");
    std::fs::write(path, content).expect("writable");
    repository
}

#[test]
fn check_exits_1_listing_the_files_that_would_change_and_writes_nothing() {
    let repository = repository_with(
        "modules/web/module.nix",
        "{ mesh, ... }: {   settings = {}; }\n",
    );
    let module = repository.path().join("modules/web/module.nix");
    let inside = repository.path().join("modules/web");
    // no PATH: the repository found by walking up from a directory inside it
    let checked = meshc(&["fmt", "--check"], &inside);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked.stderr));
    let listed = text(&checked.stdout);
    assert!(listed.contains("modules/web/module.nix"), "{listed}");
    assert!(
        !listed.contains("mesh.nix\n") || listed.contains("module.nix"),
        "{listed}"
    );
    assert_eq!(
        std::fs::read_to_string(&module).expect("readable"),
        "{ mesh, ... }: {   settings = {}; }\n",
        "--check writes nothing"
    );
    let formatted = meshc(&["fmt"], &inside);
    assert_eq!(
        formatted.status.code(),
        Some(0),
        "{}",
        text(&formatted.stderr)
    );
    assert_ne!(
        std::fs::read_to_string(&module).expect("readable"),
        "{ mesh, ... }: {   settings = {}; }\n"
    );
    let clean = meshc(&["fmt", "--check"], &inside);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stdout));
    assert!(clean.stdout.is_empty());
}

#[test]
fn a_file_with_a_syntax_error_is_reported_with_the_parsers_diagnostic() {
    let repository = repository_with("broken.nix", "{ a = ; }\n");
    let output = meshc(&["fmt", "--check", "broken.nix"], repository.path());
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("E001"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(repository.path().join("broken.nix")).expect("readable"),
        "{ a = ; }\n"
    );
}

#[test]
fn a_form_only_nix_2_8_reads_is_refused_with_e052() {
    // `1.e5`-style float forms parse in Nix 2.8 (and mesh) but not in the formatter
    let source =
        std::fs::read_to_string(workspace().join("lang/tests/data/eval/ok/syntax-float-forms.nix"))
            .expect("the corpus case");
    let repository = repository_with("floats.nix", &source);
    let output = meshc(&["fmt", "floats.nix"], repository.path());
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("E052"),
        "{}",
        text(&output.stderr)
    );
}

/// A formatting that would change what the file means is refused with E052 at the
/// expression it would change, and the file is left as it was. Before, `.5e1` (the
/// number 5) was written back as `.5 e1` (`.5` applied to a variable `e1`), and
/// `meshc fmt` said nothing.
#[test]
fn a_formatting_that_would_change_the_meaning_is_refused_with_e052() {
    let source = "{\n  ratio = .5e1;\n  name = \"web\";\n}\n";
    let repository = repository_with("ratio.nix", source);
    let output = meshc(&["fmt", "ratio.nix"], repository.path());
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E052") && stderr.contains("would mean something else"),
        "{stderr}"
    );
    // the label is on the number, line 2
    assert!(stderr.contains("ratio.nix:2:11"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(repository.path().join("ratio.nix")).expect("readable"),
        source
    );
    // `--check` lists nothing it would write, and says the same
    let checked = meshc(&["fmt", "--check", "ratio.nix"], repository.path());
    assert_eq!(checked.status.code(), Some(1));
    assert!(text(&checked.stderr).contains("E052"));
    // written another way, the file is formatted
    std::fs::write(repository.path().join("ratio.nix"), "{ ratio = 5.0; }\n").expect("writable");
    let output = meshc(&["fmt", "ratio.nix"], repository.path());
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}

#[test]
fn a_formatted_file_that_cannot_be_written_is_e053_and_left_as_it_was() {
    // root ignores permissions, so the write is made to fail by a file size limit of
    // zero (with SIGXFSZ ignored, writing then fails with EFBIG)
    let source = "{ mesh, ... }: {   settings = {}; }\n";
    let repository = repository_with("modules/web/module.nix", source);
    let output = Command::new("sh")
        .args([
            "-c",
            "trap '' XFSZ && ulimit -f 0 && exec \"$0\" fmt modules/web/module.nix",
            MESHC,
        ])
        .current_dir(repository.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs");
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E053"), "{stderr}");
    assert!(stderr.contains("help: "), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(repository.path().join("modules/web/module.nix"))
            .expect("readable"),
        source,
        "the file is left as it was"
    );
    // nothing half-written beside it
    let names: Vec<_> = std::fs::read_dir(repository.path().join("modules/web"))
        .expect("readable")
        .map(|entry| entry.expect("readable").file_name())
        .collect();
    assert_eq!(names, ["module.nix"], "{names:?}");
}

/// `fmt-deep-overflow`: a file nested as deep as the parser takes (lists 9,000 deep;
/// evaluation takes it too) is formatted, not a stack overflow: `meshc fmt` parsed
/// it on its main thread, whose 8 MB ran out from about 7,000 levels (exit 134,
/// "has overflowed its stack"). Sets nested as deep are E006 as in evaluation.
#[test]
fn a_file_nested_as_deep_as_the_parser_takes_is_formatted_without_overflowing() {
    let source = format!("{}{}\n", "[ ".repeat(9_000), "] ".repeat(9_000).trim_end());
    let repository = repository_with("deep.nix", &source);
    let output = meshc(&["fmt", "deep.nix"], repository.path());
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("overflow"), "{stderr}");
    let formatted = std::fs::read_to_string(repository.path().join("deep.nix")).expect("readable");
    assert_eq!(formatted.matches('[').count(), 9_000);
    let sets = format!("{}1{}\n", "{ a = ".repeat(9_000), "; }".repeat(9_000));
    let repository = repository_with("sets.nix", &sets);
    let output = meshc(&["fmt", "sets.nix"], repository.path());
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E006"), "{stderr}");
}

#[test]
fn a_chain_too_long_for_the_formatter_is_refused_quickly_with_e054() {
    // alejandra takes minutes on these (a path of 16,000 names, an application of
    // 16,000 arguments); both are refused before it starts, and the file is left alone
    for (file, source, chain) in [
        (
            "path.nix",
            format!("{{ }}.{} or 1\n", vec!["a"; 16_000].join(".")),
            "a chain of 16000 ",
        ),
        (
            "apply.nix",
            format!("f {}\n", vec!["a.b"; 16_000].join(" ")),
            "a chain of 16001 ",
        ),
    ] {
        let repository = repository_with(file, &source);
        let started = std::time::Instant::now();
        let output = meshc(&["fmt", file], repository.path());
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("E054"), "{stderr}");
        assert!(stderr.contains(chain), "{stderr}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "refusing took {:?}",
            started.elapsed()
        );
        assert_eq!(
            std::fs::read_to_string(repository.path().join(file)).expect("readable"),
            source
        );
    }
}

/// Whitespace other than the space in an indented string (trailing, or used as
/// indentation) is refused with E052 and the file is left as it was: alejandra
/// strips or re-indents it, which changes the string's value. Before, only tabs,
/// carriage returns and trailing spaces were refused; a trailing no-break space,
/// a vertical tab or an ideographic space was removed in silence (exit 0).
#[test]
fn other_whitespace_in_an_indented_string_is_refused_with_e052() {
    for (case, line) in [
        ("a trailing no-break space", "    Welcome\u{a0}"),
        ("a no-break space as indentation", "  \u{a0} b"),
        ("a trailing vertical tab", "    x\u{b}"),
        ("a trailing form feed", "    x\u{c}"),
        ("a trailing ideographic space", "    x\u{3000}"),
        ("a trailing next line", "    x\u{85}"),
    ] {
        let source = format!("{{\n  motd = ''\n    a\n{line}\n  '';\n}}\n");
        let repository = repository_with("motd.nix", &source);
        let output = meshc(&["fmt", "motd.nix"], repository.path());
        assert_eq!(
            output.status.code(),
            Some(1),
            "{case}: {}",
            text(&output.stderr)
        );
        assert!(
            text(&output.stderr).contains("E052") && text(&output.stderr).contains("line 4"),
            "{case}: {}",
            text(&output.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(repository.path().join("motd.nix")).expect("readable"),
            source,
            "{case}: the file changed"
        );
    }
}

/// A module may be called `target` or `build`: only the build beside `mesh.nix` and
/// cargo's `target` beside a `Cargo.toml` are left out. Before, every directory
/// named `target` was skipped, so `modules/target/module.nix` was never formatted
/// nor listed by `--check`.
#[test]
fn a_module_called_target_or_build_is_formatted_and_outputs_are_not() {
    let unformatted = "{ mesh, ... }: {   settings = {}; }\n";
    let repository = repository_with("modules/target/module.nix", unformatted);
    for (file, content) in [
        ("modules/build/module.nix", unformatted),
        ("build/nodes/x.nix", unformatted),
        ("tools/Cargo.toml", "[package]\n"),
        ("tools/target/x.nix", unformatted),
    ] {
        let path = repository.path().join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("writable");
        std::fs::write(path, content).expect("writable");
    }
    let checked = meshc(&["fmt", "--check"], repository.path());
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked.stderr));
    let listed = text(&checked.stdout);
    assert!(listed.contains("modules/target/module.nix"), "{listed}");
    assert!(listed.contains("modules/build/module.nix"), "{listed}");
    assert!(!listed.contains("build/nodes/x.nix"), "{listed}");
    assert!(!listed.contains("tools/target/x.nix"), "{listed}");
}

/// A PATH that does not exist is E035 with a help line, and nothing is formatted,
/// not even the paths given beside it. Before, it was a bare `error: ...` line.
#[test]
fn a_missing_path_is_e035_and_nothing_is_formatted() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let file = temporary.path().join("a.nix");
    std::fs::write(&file, "{a=1;}\n").expect("write");
    let output = meshc(&["fmt", "a.nix", "missing.nix"], temporary.path());
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E035") && stderr.contains("missing.nix"),
        "{stderr}"
    );
    assert!(stderr.contains("help: "), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "{a=1;}\n");
}

/// A file named to `meshc fmt` is read as a regular file of bounded size: a FIFO is
/// refused at once rather than waited on for a writer, and a sparse file larger
/// than any module is refused before it is read (red team: 20 GB read whole).
#[test]
fn a_fifo_or_an_oversized_file_is_refused_at_once() {
    let directory = tempfile::tempdir().expect("tempdir");
    let fifo = directory.path().join("pipe.nix");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    let huge = directory.path().join("huge.nix");
    std::fs::File::create(&huge)
        .and_then(|file| file.set_len((64 << 20) + 1))
        .expect("a sparse file");
    for (name, refusal) in [
        ("pipe.nix", "cannot read `pipe.nix`"),
        ("huge.nix", "not a regular file of at most"),
    ] {
        let output = Command::new("timeout")
            .args(["30", MESHC, "fmt", "--check", name])
            .current_dir(directory.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        let said = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "waited on {name}? {said}");
        assert!(said.contains(refusal), "{said}");
    }
}
