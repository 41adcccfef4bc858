//! A failure that belongs to no shape (here the reload of the accounts after the users
//! phase) is reported and recorded as the step that failed, never blamed on a shape.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use plan::Plan;
use support::*;

/// A root where `app` exists without its group `web`, and a `usermod` that leaves the
/// account database unreadable behind it; the plan's apply runs in `format`.
fn failing_reload(format: &str) -> (TestRoot, std::process::Output) {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::write(
        root.host("/etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\napp:x:990:990::/var/lib/app:/usr/sbin/nologin\nweb:x:991:991::/var/lib/web:/usr/sbin/nologin\n",
    )
    .unwrap();
    std::fs::write(
        root.host("/etc/group"),
        "root:x:0:\napp:x:990:\nweb:x:991:\n",
    )
    .unwrap();
    let tools = tempfile::tempdir().unwrap();
    let usermod = tools.path().join("usermod");
    std::fs::write(
        &usermod,
        "#!/bin/sh\n# usermod --prefix ROOT ...\nrm -f \"$2/etc/passwd\" && mkdir \"$2/etc/passwd\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&usermod, std::fs::Permissions::from_mode(0o755)).unwrap();
    let plans = tempfile::tempdir().unwrap();
    let plan = Plan::new("db1", vec![user("web"), user_in_groups("app", &["web"])]);
    let path = write_plan(plans.path(), "plan.json", &plan);
    let search = format!(
        "{}:{}",
        tools.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new(BINARY)
        .arg(&path)
        .arg("--identity")
        .arg(&keys.identity)
        .arg("--root")
        .arg(root.path())
        .args(["--format", format])
        .env("PATH", &search)
        .output()
        .unwrap();
    (root, output)
}

#[test]
fn a_failed_account_reload_is_a_step_not_a_shape() {
    let (root, output) = failing_reload("json");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    let error = &report["errors"][0];
    assert_eq!(error["step"], "reload the accounts", "{report:#}");
    assert!(error["shape"].is_null(), "{report:#}");
    assert_eq!(
        summary(&report, "failed"),
        0,
        "no shape is blamed: {report:#}"
    );
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.host("/var/lib/mesh/applied.json")).unwrap())
            .unwrap();
    assert_eq!(record["state"], "failed");
    assert_eq!(record["failed_step"], "reload the accounts");
    assert!(
        record["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|entry| entry["result"] != "failed"),
        "{record:#}"
    );
    let (_root, output) = failing_reload("human");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("  --> step `reload the accounts` (no shape)"),
        "{text}"
    );
    assert!(!text.contains("failed    "), "{text}");
}
