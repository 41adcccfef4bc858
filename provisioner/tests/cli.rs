//! The command line of `mesh-provision` on the built binary: help describes every flag
//! with an example, `-V`/`--version`, no arguments and misspelt flags are usage errors
//! that exit 2 (with clap's suggestion). Reaches no database.

use std::process::{Command, Output};

const BINARY: &str = env!("CARGO_BIN_EXE_mesh-provision");

fn run(arguments: &[&str]) -> Output {
    Command::new(BINARY)
        .args(arguments)
        .output()
        .expect("mesh-provision runs")
}

#[test]
fn help_describes_every_flag_with_an_example() {
    let output = run(&["--help"]);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--manifest",
        "--postgres",
        "--rabbitmq",
        "--password-file",
        "--root",
        "--watch",
        "--interval",
        "--repair-every",
        "--format",
        "Examples:",
    ] {
        assert!(help.contains(flag), "{flag}:\n{help}");
    }
}

#[test]
fn version_is_printed_by_both_spellings() {
    for flag in ["--version", "-V"] {
        let output = run(&[flag]);
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("mesh-provision {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn usage_errors_exit_2() {
    let output = run(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Usage: mesh-provision"));
    let output = run(&["--manifest", "m", "--postgress", "postgres://x"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("'--postgres'"));
    let output = run(&[
        "--manifest",
        "m",
        "--postgres",
        "postgres://x",
        "--interval",
        "1",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("needs `--watch`"));
}
