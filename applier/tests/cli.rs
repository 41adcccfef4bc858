//! The command line: flags parsed raw and validated, usage errors exit 1 with a message
//! that names the flag, help and version exit 0.

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
    assert!(stdout.starts_with("usage: mesh-apply PLAN|- [--identity KEY]"));
    let (code, stdout, _) = run(&["-V"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("mesh-apply "));
}

#[test]
fn without_identity_the_default_is_used_and_dash_is_standard_input() {
    let config = match applier::parse_arguments(["-"].map(std::ffi::OsString::from)) {
        Ok(applier::Command::Apply(config)) => config,
        other => panic!("{other:?}"),
    };
    assert_eq!(config.identity_path, None);
    assert_eq!(config.plan, applier::PlanSource::Stdin);
    assert_eq!(config.keep_generations, 10);
    let config = match applier::parse_arguments(
        ["--rollback", "--to", "3", "--keep-generations", "5"].map(std::ffi::OsString::from),
    ) {
        Ok(applier::Command::Apply(config)) => config,
        other => panic!("{other:?}"),
    };
    assert_eq!(config.plan, applier::PlanSource::Generation(Some(3)));
    assert_eq!(config.keep_generations, 5);
    for bad in [
        &["--rollback", "plan.json"][..],
        &["plan.json", "--to", "2"],
        &["--rollback", "--to", "x"],
        &["plan.json", "--keep-generations", "0"],
    ] {
        let (code, _, stderr) = run(bad);
        assert_eq!(code, 1, "{bad:?}");
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
}

#[test]
fn missing_plan_is_a_usage_error() {
    let (code, _, stderr) = run(&["--identity", "key.txt"]);
    assert_eq!(code, 1);
    assert!(stderr.starts_with("error: missing the plan"), "{stderr}");
}

#[test]
fn unknown_flag_and_second_plan_are_usage_errors() {
    let (code, _, stderr) = run(&["plan.json", "--identity", "k", "--force"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("--force"), "{stderr}");
    let (code, _, stderr) = run(&["a.json", "b.json", "--identity", "k"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("`b.json`"), "{stderr}");
}

#[test]
fn unknown_format_and_bad_root_are_refused() {
    let (code, _, stderr) = run(&["p", "--identity", "k", "--format", "yaml"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("unknown format `yaml`"), "{stderr}");
    let (code, _, stderr) = run(&["p", "--identity", "k", "--root", "/nonexistent/root"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("`--root /nonexistent/root`"), "{stderr}");
    let (code, _, stderr) = run(&["p", "--identity", "k", "--node", "Bad Name"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("`--node`"), "{stderr}");
}

#[test]
fn listen_names_what_it_misses_and_has_its_own_help() {
    let (code, _, stderr) = run(&["--listen"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: missing `--node NAME`"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["--listen", "--node", "db1"]);
    assert_eq!(code, 1);
    assert!(
        stderr.starts_with("error: missing `--identity KEY`"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["--listen", "plan.json", "--node", "db1"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("not a file"), "{stderr}");
    let (code, stdout, _) = run(&["--listen", "--help"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("usage: mesh-apply --listen"), "{stdout}");
    let (_, stdout, _) = run(&["--help"]);
    assert!(stdout.contains("mesh-apply --listen"), "{stdout}");
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
