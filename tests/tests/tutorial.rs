//! The tutorial (`book/src/tutorial.md`) is this test's script: every file it shows
//! is written and every command it shows is run, in order, in an empty directory,
//! with the workspace's release binaries on `PATH` and the real `age` and `git`.
//! A command must exit as the tutorial says (0 unless its block says `exit=N`) and
//! print every output line the tutorial shows under it, in that order. The
//! tutorial's conventions, which this file enforces:
//!
//! - A fenced block whose first line is `# file: PATH` is a file: it is written, that
//!   line included, to `PATH` relative to the directory the commands are in by then.
//! - A ```` ```console ```` block holds commands, each a line `$ COMMAND` (a line
//!   ending in `\` continues on the next), and after each the output it prints.
//!   An output line matches a printed line when they are equal after trimming, `...`
//!   standing for any text; shown lines must be printed in the order shown, and
//!   printed lines the tutorial leaves out are allowed (a line `...` marks them).
//!   `console,exit=N` says the block's commands exit with status N.
//! - Each command runs in `bash` in the directory the previous one left (so `cd`
//!   carries over; variables do not), standard output and error together, no colour.
//! - There are no ```` ```sh ```` or ```` ```bash ```` blocks: a command the reader
//!   is told to run is in a `console` block, so this test runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use tests::{binary, workspace_root};

/// One thing the tutorial makes happen.
#[derive(Debug)]
enum Step {
    /// A file block: its path and its whole text.
    File {
        line: usize,
        path: String,
        text: String,
    },
    /// A command, with the output lines shown under it and its exit status.
    Command {
        line: usize,
        command: String,
        shown: Vec<String>,
        status: i32,
    },
}

/// The steps of a tutorial in Markdown, in order.
fn steps(markdown: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut lines = markdown
        .lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line));
    while let Some((line, text)) = lines.next() {
        let Some(info) = text.trim_start().strip_prefix("```") else {
            continue;
        };
        let mut attributes = info.split(|c: char| c == ',' || c.is_whitespace());
        let language = attributes.next().unwrap_or_default();
        let status = attributes
            .find_map(|attribute| attribute.strip_prefix("exit="))
            .map(|status| status.parse().expect("`exit=N` takes a number"))
            .unwrap_or(0);
        let mut body = Vec::new();
        for (_, text) in lines.by_ref() {
            if text.trim_start().starts_with("```") {
                break;
            }
            body.push(text);
        }
        assert!(
            !["sh", "bash", "shell"].contains(&language),
            "tutorial.md:{line}: a ```{language} block: write commands as a ```console block, so that they are run"
        );
        if let Some(path) = body
            .first()
            .and_then(|first| first.strip_prefix("# file: "))
        {
            let mut text = body.join("\n");
            text.push('\n');
            steps.push(Step::File {
                line,
                path: path.trim().to_string(),
                text,
            });
        } else if language == "console" {
            console(line, &body, status, &mut steps);
        }
    }
    steps
}

/// The commands of a console block that starts at `line`.
fn console(line: usize, body: &[&str], status: i32, steps: &mut Vec<Step>) {
    let mut index = 0;
    while index < body.len() {
        let text = body[index];
        let Some(first) = text.strip_prefix("$ ") else {
            assert!(
                text.trim().is_empty(),
                "tutorial.md:{}: output before any command: {text:?}",
                line + 1 + index
            );
            index += 1;
            continue;
        };
        let command_line = line + 1 + index;
        let mut command = first.to_string();
        while command.ends_with('\\') && index + 1 < body.len() {
            index += 1;
            command.push('\n');
            command.push_str(body[index]);
        }
        index += 1;
        let mut shown = Vec::new();
        while index < body.len() && !body[index].starts_with("$ ") {
            let output = body[index].trim();
            if !output.is_empty() && output != "..." {
                shown.push(output.to_string());
            }
            index += 1;
        }
        steps.push(Step::Command {
            line: command_line,
            command,
            shown,
            status,
        });
    }
}

/// Does a printed line match a shown one (`...` standing for any text)?
fn line_matches(shown: &str, printed: &str) -> bool {
    let printed = printed.trim();
    let pieces: Vec<&str> = shown.split("...").collect();
    let (first, rest) = pieces.split_first().expect("split yields a piece");
    let Some(mut remaining) = printed.strip_prefix(first) else {
        return false;
    };
    match rest.split_last() {
        None => remaining.is_empty(),
        Some((last, middle)) => {
            for piece in middle {
                match remaining.find(piece) {
                    Some(at) => remaining = &remaining[at + piece.len()..],
                    None => return false,
                }
            }
            remaining.ends_with(last)
        }
    }
}

/// The first shown line that the printed output does not contain in order.
fn missing<'a>(shown: &'a [String], printed: &str) -> Option<&'a str> {
    let mut printed = printed.lines();
    shown
        .iter()
        .find(|line| !printed.any(|candidate| line_matches(line, candidate)))
        .map(String::as_str)
}

/// A directory holding `meshc` and `mesh-apply` as the workspace builds them.
fn binaries(directory: &Path) -> PathBuf {
    let bin = directory.join("bin");
    std::fs::create_dir(&bin).expect("bin directory");
    for (package, name) in [("meshc", "meshc"), ("applier", "mesh-apply")] {
        std::os::unix::fs::symlink(binary(package, name), bin.join(name)).expect("symlink");
    }
    bin
}

/// Runs one command in `directory`; returns its exit status, what it printed and the
/// directory it left.
fn run(command: &str, directory: &Path, path: &str, home: &Path) -> (i32, String, PathBuf) {
    let left = home.join(".tutorial-directory");
    let script = format!(
        "cd {directory:?} || exit 99\n{{\n{command}\n}} 2>&1\nstatus=$?\npwd > {left:?}\nexit $status\n"
    );
    let output = Command::new("bash")
        .arg("-c")
        .arg(script)
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::null())
        .output()
        .expect("bash runs");
    let printed = String::from_utf8_lossy(&output.stdout).into_owned();
    let directory = std::fs::read_to_string(&left)
        .map(|text| PathBuf::from(text.trim_end()))
        .unwrap_or_else(|_| directory.to_path_buf());
    (output.status.code().unwrap_or(-1), printed, directory)
}

#[test]
fn every_command_of_the_tutorial_runs_as_shown() {
    let tutorial = workspace_root().join("book/src/tutorial.md");
    let markdown = std::fs::read_to_string(&tutorial).expect("the tutorial is readable");
    let steps = steps(&markdown);
    let commands = steps
        .iter()
        .filter(|step| matches!(step, Step::Command { .. }))
        .count();
    assert!(commands >= 20, "the tutorial runs only {commands} commands");

    let temporary = tempfile::tempdir().expect("temporary directory");
    let home = temporary.path().join("home");
    std::fs::create_dir(&home).expect("home");
    let bin = binaries(temporary.path());
    // `MESH_TUTORIAL_KEEP=1` keeps the directory, to look at what a failing run left
    let _removed_at_the_end = if std::env::var_os("MESH_TUTORIAL_KEEP").is_some() {
        eprintln!("the tutorial runs in {}", temporary.keep().display());
        None
    } else {
        Some(temporary)
    };
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into())
    );
    let mut directory = home.clone();
    for step in &steps {
        match step {
            Step::File { line, path, text } => {
                let target = directory.join(path);
                assert!(
                    target.starts_with(&home) && !path.contains(".."),
                    "tutorial.md:{line}: `{path}` is outside the tutorial's directory"
                );
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).expect("the file's directory");
                }
                std::fs::write(&target, text)
                    .unwrap_or_else(|e| panic!("tutorial.md:{line}: {path}: {e}"));
            }
            Step::Command {
                line,
                command,
                shown,
                status,
            } => {
                let (code, printed, left) = run(command, &directory, &path, &home);
                assert_eq!(
                    code, *status,
                    "tutorial.md:{line}: `{command}` exited with {code}, the tutorial says {status}; it printed:\n{printed}"
                );
                if let Some(line_shown) = missing(shown, &printed) {
                    panic!(
                        "tutorial.md:{line}: `{command}` did not print, in the order shown:\n  {line_shown}\nit printed:\n{printed}"
                    );
                }
                directory = left;
            }
        }
    }
}

#[test]
fn the_tutorial_reader_finds_files_commands_and_output() {
    let markdown = "text\n\n```nix\n# file: modules/a/module.nix\n{ }\n```\n\n```console\n$ meshc check\n1 node(s) checked\n...\n$ echo a \\\n  b\n```\n\n```console,exit=1\n$ false\n```\n\n```nix\n{ not = \"a file\"; }\n```\n";
    let steps = steps(markdown);
    assert_eq!(steps.len(), 4, "{steps:?}");
    assert!(
        matches!(&steps[0], Step::File { path, text, .. } if path == "modules/a/module.nix" && text == "# file: modules/a/module.nix\n{ }\n")
    );
    assert!(
        matches!(&steps[1], Step::Command { command, shown, status: 0, line: 9 } if command == "meshc check" && shown == &["1 node(s) checked"])
    );
    assert!(matches!(&steps[2], Step::Command { command, .. } if command == "echo a \\\n  b"));
    assert!(matches!(&steps[3], Step::Command { status: 1, .. }));
}

#[test]
fn shown_output_matches_with_elisions_and_in_order() {
    assert!(line_matches(
        "built 1 node(s) in ... ms -> .../build",
        "built 1 node(s) in 52 ms -> /tmp/x/build"
    ));
    assert!(!line_matches("built 1 node(s)", "built 1 node(s) in 52 ms"));
    assert!(line_matches("Public key: age1...", "Public key: age1qqq"));
    assert!(!line_matches("a...c", "ab"));
    let shown = ["one".to_string(), "three".to_string()];
    assert_eq!(missing(&shown, "one\ntwo\nthree\n"), None);
    assert_eq!(missing(&shown, "three\none\n"), Some("three"));
}
