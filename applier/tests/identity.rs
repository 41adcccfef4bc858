//! The node's identity is used only when it is a private file of the user mesh-apply
//! runs as (E541, as ssh checks a private key): open to group or others, owned by
//! another user, reached through a symlink, or not a regular file, it is refused before
//! anything changes and no secret is written. One test per refusal, each in its own
//! root; the default `ROOT/var/lib/mesh/identity` is checked as `--identity` is.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plan::Plan;
use serde_json::Value;
use support::*;

/// A plan whose one secret would land at `/etc/token`.
fn secret_plan(keys: &Keys) -> Plan {
    Plan::new(
        "db1",
        vec![secret("/etc/token", &keys.seal(b"s3cret"), "root", "0600")],
    )
}

/// Runs `mesh-apply PLAN ARGUMENTS --root ROOT --format json`, killed after 60 s: an
/// identity that blocks (a FIFO: `std::fs::read` used to wait for a writer forever)
/// must not hang the applier.
fn mesh_apply(root: &TestRoot, plan: &Plan, arguments: &[&std::ffi::OsStr]) -> (i32, Value) {
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", plan);
    let mut child = rooted(
        Command::new(BINARY).arg(&path).args(arguments),
        root,
        "json",
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("mesh-apply hung on the identity");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code().unwrap_or(-1), report)
}

/// Applies with `--identity identity` and insists on one E541 whose help contains
/// `help`, nothing changed and the secret not written; returns the problem.
fn refused(root: &TestRoot, keys: &Keys, identity: &Path, help: &str) -> Value {
    let before = snapshot(root.path(), &[]);
    let (code, report) = mesh_apply(
        root,
        &secret_plan(keys),
        &["--identity".as_ref(), identity.as_os_str()],
    );
    refusal(root, &before, code, &report, help)
}

fn refusal(
    root: &TestRoot,
    before: &std::collections::BTreeMap<String, Node>,
    code: i32,
    report: &Value,
    help: &str,
) -> Value {
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(error_codes(report), vec!["E541"], "{report:#}");
    let problem = report["errors"][0].clone();
    let text = problem["help"].as_str().unwrap();
    assert!(text.contains(help), "{text}");
    assert!(!report.to_string().contains("s3cret"));
    assert!(!root.host("/etc/token").exists());
    assert_same_tree(
        before,
        &snapshot(root.path(), &[]),
        "a refused identity changed the tree",
    );
    problem
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn an_identity_group_or_others_may_read_or_write_is_refused() {
    for mode in [0o644, 0o640, 0o604, 0o660, 0o606, 0o620, 0o602] {
        let root = TestRoot::new();
        let keys = Keys::new();
        set_mode(&keys.identity, mode);
        let problem = refused(
            &root,
            &keys,
            &keys.identity,
            &format!("`chmod 600 {}`", keys.identity.display()),
        );
        let message = problem["message"].as_str().unwrap();
        assert!(message.contains(&format!("(mode {mode:04o})")), "{message}");
    }
}

#[test]
fn an_identity_owned_by_another_user_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::os::unix::fs::chown(&keys.identity, Some(4321), None).unwrap();
    let problem = refused(
        &root,
        &keys,
        &keys.identity,
        &format!("`chown root {}`", keys.identity.display()),
    );
    let message = problem["message"].as_str().unwrap();
    assert!(message.contains("owned by uid 4321"), "{message}");
}

#[test]
fn an_identity_that_is_a_symlink_or_reached_through_one_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    // the file itself a link to the (private) identity
    let link = keys.directory.path().join("link.txt");
    std::os::unix::fs::symlink(&keys.identity, &link).unwrap();
    refused(&root, &keys, &link, "readlink -f");
    // a directory on the way a link
    let linked_directory = keys.directory.path().join("linked");
    std::os::unix::fs::symlink(keys.directory.path(), &linked_directory).unwrap();
    refused(
        &root,
        &keys,
        &linked_directory.join("identity.txt"),
        "readlink -f",
    );
}

#[test]
fn an_identity_that_is_not_a_regular_file_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    // a FIFO nobody writes to: opened non-blocking, refused without waiting
    let fifo = keys.directory.path().join("fifo");
    let status = Command::new("mkfifo")
        .arg("-m")
        .arg("600")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    refused(&root, &keys, &fifo, "age-keygen -o");
    // a directory
    let directory = keys.directory.path().join("directory");
    std::fs::create_dir(&directory).unwrap();
    set_mode(&directory, 0o700);
    refused(&root, &keys, &directory, "age-keygen -o");
}

#[test]
fn a_private_identity_is_used_readable_or_read_only() {
    for mode in [0o600, 0o400] {
        let root = TestRoot::new();
        let keys = Keys::new();
        set_mode(&keys.identity, mode);
        let (code, report) = mesh_apply(
            &root,
            &secret_plan(&keys),
            &["--identity".as_ref(), keys.identity.as_os_str()],
        );
        assert_eq!(code, 0, "{report:#}");
        assert_eq!(std::fs::read(root.host("/etc/token")).unwrap(), b"s3cret");
    }
}

#[test]
fn the_default_identity_beneath_the_root_is_checked_as_well() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let default = root.host("/var/lib/mesh/identity");
    std::fs::create_dir_all(default.parent().unwrap()).unwrap();
    std::fs::copy(&keys.identity, &default).unwrap();
    set_mode(&default, 0o644);
    let before = snapshot(root.path(), &[]);
    let (code, report) = mesh_apply(&root, &secret_plan(&keys), &[]);
    refusal(
        &root,
        &before,
        code,
        &report,
        &format!("`chmod 600 {}`", default.display()),
    );

    // a link at the default path to a private identity elsewhere in the root
    std::fs::rename(&default, root.host("/etc/kept-identity")).unwrap();
    set_mode(&root.host("/etc/kept-identity"), 0o600);
    std::os::unix::fs::symlink("/etc/kept-identity", &default).unwrap();
    let before = snapshot(root.path(), &[]);
    let (code, report) = mesh_apply(&root, &secret_plan(&keys), &[]);
    refusal(&root, &before, code, &report, "readlink -f");

    // `/var/lib/mesh` a link, in a directory only root may write (a link the
    // confined layer would follow under `--root`): still refused for the identity
    std::fs::remove_file(&default).unwrap();
    std::fs::rename(root.host("/var/lib/mesh"), root.host("/var/lib/mesh-real")).unwrap();
    std::fs::rename(
        root.host("/etc/kept-identity"),
        root.host("/var/lib/mesh-real/identity"),
    )
    .unwrap();
    std::os::unix::fs::symlink("mesh-real", root.host("/var/lib/mesh")).unwrap();
    let before = snapshot(root.path(), &[]);
    let (code, report) = mesh_apply(&root, &secret_plan(&keys), &[]);
    refusal(&root, &before, code, &report, "readlink -f");

    // the same identity, private and reached without links, is used
    std::fs::remove_file(root.host("/var/lib/mesh")).unwrap();
    std::fs::rename(root.host("/var/lib/mesh-real"), root.host("/var/lib/mesh")).unwrap();
    let (code, report) = mesh_apply(&root, &secret_plan(&keys), &[]);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(std::fs::read(root.host("/etc/token")).unwrap(), b"s3cret");
}
