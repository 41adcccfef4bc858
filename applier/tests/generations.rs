//! Generations, standard input and the default identity, through the real `mesh-apply`
//! binary on real temporary roots: each applied plan kept (and pruned), listed, rolled
//! back exactly as an ordinary apply (withdrawals included); `-` reads the plan from
//! stdin; without `--identity` the root's `/var/lib/mesh/identity` is used.

mod support;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use plan::Plan;
use serde_json::Value;
use support::*;

fn mesh_apply(root: &TestRoot, arguments: &[&str], stdin: Option<&[u8]>) -> (Output, Value) {
    let mut child = rooted(Command::new(BINARY).args(arguments), root, "json")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(bytes) = stdin {
        input.write_all(bytes).unwrap();
    }
    drop(input);
    let output = child.wait_with_output().unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output, report)
}

fn succeeded(output: &Output) {
    assert!(
        output.status.success(),
        "mesh-apply failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn list(root: &TestRoot) -> Vec<Value> {
    let output = Command::new(BINARY)
        .args(["--list-generations", "--format", "json", "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    succeeded(&output);
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    value["generations"].as_array().unwrap().clone()
}

fn numbers(generations: &[Value]) -> Vec<u64> {
    generations
        .iter()
        .map(|generation| generation["number"].as_u64().unwrap())
        .collect()
}

fn current(generations: &[Value]) -> Vec<u64> {
    generations
        .iter()
        .filter(|generation| generation["current"] == true)
        .map(|generation| generation["number"].as_u64().unwrap())
        .collect()
}

fn version(content: &str) -> Plan {
    Plan::new("db1", vec![file("/etc/motd", content, "root", "0644")])
}

fn apply_file(root: &TestRoot, keys: &Keys, plan: &Plan) {
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", plan);
    let (output, _) = run_apply(root, &path, keys, &[]);
    succeeded(&output);
}

#[test]
fn a_plan_on_standard_input_is_applied() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plan = version("from stdin\n");
    let identity = keys.identity.to_str().unwrap();
    let (output, report) = mesh_apply(
        &root,
        &["-", "--identity", identity],
        Some(&plan.to_json_bytes()),
    );
    succeeded(&output);
    assert_eq!(status_of(&report, "file", "/etc/motd"), "created");
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/motd")).unwrap(),
        "from stdin\n"
    );
    let (output, report) = mesh_apply(&root, &["-", "--identity", identity], Some(b"not a plan"));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(error_codes(&report), vec!["E500"]);
}

#[test]
fn without_identity_the_root_s_var_lib_mesh_identity_is_used() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plan = Plan::new(
        "db1",
        vec![secret("/etc/token", &keys.seal(b"s3cret"), "root", "0600")],
    );
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", &plan);
    let path = path.to_str().unwrap();
    // absent: refused with E512, naming the default path
    let (output, report) = mesh_apply(&root, &[path], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(error_codes(&report), vec!["E512"]);
    assert!(
        report.to_string().contains("var/lib/mesh/identity"),
        "{report}"
    );
    std::fs::create_dir_all(root.host("/var/lib/mesh")).unwrap();
    std::fs::copy(&keys.identity, root.host("/var/lib/mesh/identity")).unwrap();
    let (output, _) = mesh_apply(&root, &[path], None);
    succeeded(&output);
    assert_eq!(std::fs::read(root.host("/etc/token")).unwrap(), b"s3cret");
}

#[test]
fn each_applied_plan_is_a_generation_and_the_oldest_are_pruned() {
    let root = TestRoot::new();
    let keys = Keys::new();
    assert!(list(&root).is_empty());
    for number in 1..=4 {
        let plans = tempfile::tempdir().unwrap();
        let path = write_plan(
            plans.path(),
            "plan.json",
            &version(&format!("version {number}\n")),
        );
        let (output, _) = run_apply(&root, &path, &keys, &["--keep-generations", "3"]);
        succeeded(&output);
    }
    // re-applying the current plan makes no new generation
    apply_file(&root, &keys, &version("version 4\n"));
    let generations = list(&root);
    assert_eq!(numbers(&generations), vec![2, 3, 4]);
    assert_eq!(current(&generations), vec![4]);
    assert!(!root.host("/var/lib/mesh/generations/1.json").exists());
    // a generation is the applied plan, byte for byte
    assert_eq!(
        std::fs::read(root.host("/var/lib/mesh/generations/4.json")).unwrap(),
        version("version 4\n").to_json_bytes()
    );
    assert_eq!(
        generations[2]["digest"],
        version("version 4\n").digest().to_string()
    );
    // the human list marks the current one
    let output = Command::new(BINARY)
        .args(["--list-generations", "--root"])
        .arg(root.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.lines().any(|line| line.starts_with("*4")), "{text}");
}

#[test]
fn a_failed_or_dry_apply_makes_no_generation() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_file(&root, &keys, &version("one\n"));
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", &version("two\n"));
    let (output, _) = run_apply(&root, &path, &keys, &["--dry-run"]);
    succeeded(&output);
    let refused = Plan::new("db1", vec![file("/nowhere/x", "x", "root", "0644")]);
    let path = write_plan(plans.path(), "refused.json", &refused);
    let (output, _) = run_apply(&root, &path, &keys, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(numbers(&list(&root)), vec![1]);
}

#[test]
fn rollback_applies_the_previous_generation_as_a_new_one() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let identity = keys.identity.to_str().unwrap();
    let first = Plan::new(
        "db1",
        vec![
            directory("/srv/data", "root", "0755"),
            file("/etc/motd", "first\n", "root", "0644"),
            file("/etc/app.conf", "port = 1\n", "root", "0644"),
        ],
    );
    apply_file(&root, &keys, &first);
    std::fs::write(root.host("/srv/data/db"), "rows").unwrap();
    let before = snapshot(root.path(), &["var/lib/mesh"]);
    // the second plan withdraws app.conf and the data directory (kept: data)
    let second = Plan::new("db1", vec![file("/etc/motd", "second\n", "root", "0644")]);
    apply_file(&root, &keys, &second);
    assert!(!root.host("/etc/app.conf").exists());
    let (output, report) = mesh_apply(&root, &["--rollback", "--identity", identity], None);
    succeeded(&output);
    assert_eq!(status_of(&report, "file", "/etc/app.conf"), "created");
    assert_eq!(status_of(&report, "file", "/etc/motd"), "changed");
    assert_same_tree(
        &before,
        &snapshot(root.path(), &["var/lib/mesh"]),
        "rolled back",
    );
    assert_eq!(std::fs::read(root.host("/srv/data/db")).unwrap(), b"rows");
    let generations = list(&root);
    assert_eq!(numbers(&generations), vec![1, 2, 3]);
    assert_eq!(current(&generations), vec![3]);
    assert_eq!(generations[0]["digest"], generations[2]["digest"]);
    // the record is the rolled-back plan's
    let record: Value =
        serde_json::from_slice(&std::fs::read(root.host("/var/lib/mesh/applied.json")).unwrap())
            .unwrap();
    assert_eq!(record["plan"], first.digest().to_string());
}

#[test]
fn rollback_to_a_named_generation_and_to_a_missing_one() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let identity = keys.identity.to_str().unwrap();
    for content in ["one\n", "two\n", "three\n"] {
        apply_file(&root, &keys, &version(content));
    }
    let (output, _) = mesh_apply(
        &root,
        &["--rollback", "--to", "1", "--identity", identity],
        None,
    );
    succeeded(&output);
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/motd")).unwrap(),
        "one\n"
    );
    let (output, report) = mesh_apply(
        &root,
        &["--rollback", "--to", "9", "--identity", identity],
        None,
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(error_codes(&report), vec!["E536"]);
    // a dry rollback changes nothing and makes no generation
    let (output, report) = mesh_apply(
        &root,
        &[
            "--rollback",
            "--to",
            "2",
            "--dry-run",
            "--identity",
            identity,
        ],
        None,
    );
    succeeded(&output);
    assert_eq!(status_of(&report, "file", "/etc/motd"), "changed");
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/motd")).unwrap(),
        "one\n"
    );
    assert_eq!(numbers(&list(&root)), vec![1, 2, 3, 4]);
}

#[test]
fn rollback_without_a_previous_generation_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_file(&root, &keys, &version("only\n"));
    let identity = keys.identity.to_str().unwrap();
    let (output, report) = mesh_apply(&root, &["--rollback", "--identity", identity], None);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(error_codes(&report), vec!["E536"]);
}

#[test]
fn a_generations_path_that_is_not_a_directory_is_e535_after_the_apply() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::create_dir_all(root.host("/var/lib/mesh")).unwrap();
    std::fs::write(root.host("/var/lib/mesh/generations"), "not a directory").unwrap();
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", &version("kept?\n"));
    let (output, report) = run_apply(&root, &path, &keys, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(error_codes(&report), vec!["E535"]);
    // the plan itself was applied and recorded
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/motd")).unwrap(),
        "kept?\n"
    );
}
