//! `builtins.trace` and `builtins.warn` in `meshc build` and `meshc check`: each
//! message on standard error as `trace: MESSAGE (FILE:LINE:COLUMN)`, before the
//! summary, each distinct message of a call site once, in the same order for any
//! number of workers (the book's chapter on the language says how).

#[path = "support/repository.rs"]
mod support;

use std::path::Path;
use std::process::Command;

use support::MESHC;

const KEY: &str = "age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";

/// Three nodes running one module that traces when its file is evaluated, in a
/// thunk every node shares, and once per node in `shapes`.
const MODULE: &str = r#"{ mesh, ... }:
let shared = builtins.trace "shared by every node" 1; in
builtins.trace "module file read" {
  description = "an app";
  shapes = { node, ... }:
    builtins.warn "shapes of ${node.name}" (builtins.seq shared [
      (mesh.file { path = "/etc/app.conf"; content = "x"; })
    ]);
}
"#;

fn repository() -> tempfile::TempDir {
    let directory = tempfile::tempdir().expect("temporary directory");
    let nodes: String = ["a1", "b1", "c1"]
        .iter()
        .map(|node| format!("  nodes.{node} = {{ key = \"{KEY}\"; modules = [ \"app\" ]; }};\n"))
        .collect();
    std::fs::write(
        directory.path().join("mesh.nix"),
        format!("{{\n{nodes}}}\n"),
    )
    .expect("write mesh.nix");
    std::fs::create_dir_all(directory.path().join("modules/app")).expect("mkdir");
    std::fs::write(directory.path().join("modules/app/module.nix"), MODULE).expect("write");
    directory
}

fn stderr_of(repository: &Path, arguments: &[&str]) -> String {
    let output = Command::new(MESHC)
        .args(arguments)
        .arg("--repo")
        .arg(repository)
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    stderr
}

/// The lines the traces printed.
fn traced_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with("trace: ") || line.starts_with("evaluation warning: "))
        .collect()
}

const EXPECTED: &[&str] = &[
    "trace: module file read (modules/app/module.nix:3:1)",
    "evaluation warning: shapes of a1 (modules/app/module.nix:6:5)",
    "trace: shared by every node (modules/app/module.nix:2:14)",
    "evaluation warning: shapes of b1 (modules/app/module.nix:6:5)",
    "evaluation warning: shapes of c1 (modules/app/module.nix:6:5)",
];

#[test]
fn build_prints_each_trace_with_its_location() {
    let repository = repository();
    let out = repository.path().join("build");
    let stderr = stderr_of(
        repository.path(),
        &[
            "build",
            "--workers",
            "1",
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(traced_lines(&stderr), EXPECTED, "{stderr}");
    // before the summary, as Nix prints traces while it evaluates
    let summary = stderr.find("built 3 node(s)").expect("summary");
    assert!(
        stderr.find("trace: ").expect("a trace") < summary,
        "{stderr}"
    );
}

#[test]
fn traces_do_not_depend_on_the_number_of_workers() {
    let repository = repository();
    for workers in ["1", "2", "3"] {
        let stderr = stderr_of(repository.path(), &["check", "--workers", workers]);
        assert_eq!(
            traced_lines(&stderr),
            EXPECTED,
            "{workers} worker(s):\n{stderr}"
        );
    }
}

/// An error's trace is cut after three frames, with how many more there are and
/// `--trace` to see them; `build` and `check` take `--trace` and then show every
/// frame (a review found the hint a dead end: only `eval` took the flag).
#[test]
fn a_cut_trace_names_a_flag_build_and_check_take() {
    let directory = tempfile::tempdir().expect("temporary directory");
    std::fs::write(
        directory.path().join("mesh.nix"),
        format!("{{\n  nodes.a1 = {{ key = \"{KEY}\"; modules = [ \"app\" ]; }};\n}}\n"),
    )
    .expect("write mesh.nix");
    std::fs::create_dir_all(directory.path().join("modules/app")).expect("mkdir");
    std::fs::write(
        directory.path().join("modules/app/module.nix"),
        r#"{ mesh, ... }:
let down = n: if n == 0 then throw "at the bottom" else down (n - 1); in
{
  description = "an app";
  shapes = [ (mesh.file { path = "/etc/app.conf"; content = down 20; }) ];
}
"#,
    )
    .expect("write");
    for command in ["build", "check"] {
        let run = |extra: &[&str]| {
            let output = Command::new(MESHC)
                .arg(command)
                .args(extra)
                .arg("--repo")
                .arg(directory.path())
                .output()
                .expect("meshc runs");
            assert_eq!(output.status.code(), Some(1), "{output:?}");
            String::from_utf8_lossy(&output.stderr).into_owned()
        };
        let frames = |stderr: &str| stderr.lines().filter(|line| line.contains("  … ")).count();
        let cut = run(&[]);
        assert!(
            cut.contains("more frames (run with --trace to see them)"),
            "{cut}"
        );
        let whole = run(&["--trace"]);
        assert!(!whole.contains("more frames"), "{whole}");
        assert!(frames(&whole) >= 20, "{command}: {whole}");
        assert!(frames(&cut) < frames(&whole), "{command}: {cut}");
    }
}
