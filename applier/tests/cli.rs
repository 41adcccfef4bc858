//! The command line: flags parsed raw (clap) and validated, usage errors exit 2 with
//! a message that names the flag (and clap's suggestion for a misspelt one), help and
//! version exit 0.

mod support;

use std::process::Command;

use support::BINARY;

fn run(arguments: &[&str]) -> (i32, String, String) {
    let output = Command::new(BINARY).args(arguments).output().expect("run");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn help_and_version_exit_zero() {
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("Usage: mesh-apply [OPTIONS] [PLAN]"),
        "{stdout}"
    );
    for flag in [
        "--listen",
        "--identity",
        "--root",
        "--node",
        "--artifacts",
        "--dry-run",
        "--format",
        "--amqp",
        "[env: MESH_AMQP_URL",
        "Examples:",
    ] {
        assert!(stdout.contains(flag), "{flag}:\n{stdout}");
    }
    no_example_puts_a_password_in_amqp(&stdout);
    for flag in ["-V", "--version"] {
        let (code, stdout, _) = run(&[flag]);
        assert_eq!(code, 0);
        assert_eq!(
            stdout,
            format!("mesh-apply {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn no_arguments_print_usage_and_exit_2() {
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, 2);
    assert!(stderr.contains("Usage: mesh-apply"), "{stderr}");
}

#[test]
fn a_misspelt_flag_gets_a_suggestion() {
    let (code, _, stderr) = run(&["plan.json", "--identiy", "k"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("'--identity'"), "{stderr}");
}

#[test]
fn without_identity_the_default_is_used_and_dash_is_standard_input() {
    let parse = |arguments: &[&str]| match applier::parse_arguments(
        arguments.iter().map(std::ffi::OsString::from),
    ) {
        Ok(applier::Command::Apply(config)) => config,
        other => panic!("{other:?}"),
    };
    let config = parse(&["-"]);
    assert_eq!(config.identity_path, None);
    assert_eq!(config.plan, applier::PlanSource::Stdin);
    assert_eq!(config.keep_generations, 10);
    let config = parse(&["--rollback", "--to", "3", "--keep-generations", "5"]);
    assert_eq!(config.plan, applier::PlanSource::Generation(Some(3)));
    assert_eq!(config.keep_generations, 5);
    assert_eq!(
        parse(&["--rollback"]).plan,
        applier::PlanSource::Generation(None)
    );
    for bad in [
        &["--rollback", "plan.json"][..],
        &["plan.json", "--to", "2"],
        &["--rollback", "--to", "x"],
        &["plan.json", "--keep-generations", "0"],
        &["--list-generations", "plan.json"],
    ] {
        let (code, _, stderr) = run(bad);
        assert_eq!(code, 2, "{bad:?}");
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
}

#[test]
fn missing_plan_is_a_usage_error() {
    let (code, _, stderr) = run(&["--identity", "key.txt"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: missing the plan"), "{stderr}");
}

#[test]
fn unknown_flag_and_second_plan_are_usage_errors() {
    let (code, _, stderr) = run(&["plan.json", "--identity", "k", "--force"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--force"), "{stderr}");
    let (code, _, stderr) = run(&["a.json", "b.json", "--identity", "k"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("'b.json'"), "{stderr}");
}

#[test]
fn unknown_format_and_bad_root_are_refused() {
    let (code, _, stderr) = run(&["p", "--identity", "k", "--format", "yaml"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("invalid value 'yaml' for '--format <FORMAT>'"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["p", "--identity", "k", "--root", "/nonexistent/root"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("`--root /nonexistent/root`"), "{stderr}");
    let (code, _, stderr) = run(&["p", "--identity", "k", "--node", "Bad Name"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("`--node`"), "{stderr}");
}

#[test]
fn listen_names_what_it_misses_and_has_its_own_help() {
    let (code, _, stderr) = run(&["--listen"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: missing `--node NAME`"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["--listen", "--node", "db1"]);
    assert_eq!(code, 2);
    assert!(
        stderr.starts_with("error: missing `--identity KEY`: the node's age identity file"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["--listen", "plan.json", "--node", "db1"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not a file"), "{stderr}");
    let (code, _, stderr) = run(&["--listen", "--node", "db1", "--identity", "k", "--dry-run"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("`--dry-run`"), "{stderr}");
    let (code, stdout, _) = run(&["--listen", "--help"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("mesh-apply --listen --node"), "{stdout}");
}

#[test]
fn flags_take_equals_signs() {
    let config = match applier::parse_arguments(
        [
            "plan.json",
            "--identity=key.txt",
            "--format=json",
            "--dry-run",
            "--node=db1",
        ]
        .map(std::ffi::OsString::from),
    ) {
        Ok(applier::Command::Apply(config)) => config,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        config.identity_path,
        Some(std::path::PathBuf::from("key.txt"))
    );
    assert_eq!(config.format, applier::OutputFormat::Json);
    assert!(config.dry_run);
    assert_eq!(config.node.as_deref(), Some("db1"));
    assert_eq!(
        config.artifacts,
        std::path::PathBuf::from("/var/lib/mesh/artifacts")
    );
}

/// Nothing listens on port 1: each attempt fails at once, and each is reported.
#[test]
fn listen_reports_an_unreachable_broker_on_every_retry() {
    use std::io::Read;
    let directory = tempfile::tempdir().unwrap();
    let identity = directory.path().join("identity.txt");
    std::fs::write(&identity, "AGE-SECRET-KEY-1").unwrap();
    let mut child = Command::new(BINARY)
        .args([
            "--listen",
            "--node",
            "db1",
            "--amqp",
            "amqp://db1:hunter2@127.0.0.1:1/%2f",
        ])
        .arg("--identity")
        .arg(&identity)
        .arg("--root")
        .arg(directory.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    child.kill().unwrap();
    child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let retries = stderr
        .lines()
        .filter(|line| {
            line.contains("cannot connect to the broker at") && line.contains("trying again")
        })
        .count();
    assert!(retries >= 3, "one line per retry:\n{stderr}");
    assert!(
        !stderr.contains("hunter2"),
        "the password is redacted:\n{stderr}"
    );
}

/// The URL each example gives `--amqp` holds no password: every local user reads a
/// command line (the program warns when one does), so the help shows it in
/// `MESH_AMQP_URL` instead.
fn no_example_puts_a_password_in_amqp(help: &str) {
    let mut words = help.split_whitespace();
    let mut seen = 0;
    while let Some(word) = words.next() {
        if word == "--amqp"
            && let Some(url) = words.next().filter(|url| url.starts_with("amqp://"))
        {
            seen += 1;
            // the programs' own test of a password in a URL
            assert_eq!(transport::names::redact(url), url, "in:\n{help}");
        }
    }
    assert!(seen > 0, "no example of --amqp in:\n{help}");
}
