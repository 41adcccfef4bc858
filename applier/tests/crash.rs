//! Crash injection: `mesh-apply` is killed (SIGKILL) at spread-out points of a large
//! apply; applying again must converge to exactly the tree of an uninterrupted apply.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use plan::Plan;
use support::*;

fn large_plan(keys: &Keys, root: &TestRoot) -> Plan {
    let mut shapes = vec![user("app"), user_in_groups("worker", &["app"])];
    for directory_number in 0..60 {
        let directory_path = format!("/srv/d{directory_number:02}");
        shapes.push(directory(
            &directory_path,
            if directory_number % 2 == 0 {
                "app"
            } else {
                "root"
            },
            "0750",
        ));
        for file_number in 0..40 {
            shapes.push(file(
                &format!("{directory_path}/f{file_number:02}.conf"),
                &format!("directory {directory_number} file {file_number}\n").repeat(8),
                if file_number % 3 == 0 {
                    "worker"
                } else {
                    "root"
                },
                if file_number % 2 == 0 { "0640" } else { "0644" },
            ));
        }
        shapes.push(link(&format!("{directory_path}/current"), "f00.conf"));
    }
    for secret_number in 0..3 {
        shapes.push(secret(
            &format!("/etc/secret{secret_number}"),
            &keys.seal(format!("secret number {secret_number}").as_bytes()),
            "app",
            "0400",
        ));
    }
    let artifact = root.add_artifact(&tar_bytes(
        &[("index.html", "site"), ("static/a.css", "css")],
        &[("latest", "index.html")],
    ));
    shapes.push(archive("/srv/site", &artifact, "app"));
    shapes.push(service(
        "app",
        &["/usr/bin/app", "--config", "/srv/d00/f00.conf"],
        "app",
    ));
    shapes.push(container("cache", &[("/srv/d01", "/data")]));
    Plan::new("db1", shapes)
}

const SKIP: &[&str] = &["var/lib/mesh/applied.json"];

#[test]
fn killed_applies_converge_to_the_uninterrupted_result() {
    let keys = Keys::new();
    let reference = TestRoot::in_memory();
    let plan = large_plan(&keys, &reference);
    let plans = tempfile::tempdir().expect("tempdir");
    let plan_path = write_plan(plans.path(), "plan.json", &plan);
    let started = Instant::now();
    let (output, _) = run_apply(&reference, &plan_path, &keys, &[]);
    let duration = started.elapsed();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let mut expected = snapshot(reference.path(), SKIP);
    for name in ACCOUNT_FILES {
        expected.remove(*name);
    }
    let expected_accounts = accounts(reference.path());

    let points = 8;
    let mut interrupted = 0;
    for point in 1..=points {
        let root = TestRoot::in_memory();
        for entry in std::fs::read_dir(&reference.artifacts).expect("artifacts") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), root.artifacts.join(entry.file_name())).expect("copy");
        }
        let delay = duration.mul_f64(point as f64 / (points + 1) as f64);
        let mut child = Command::new(BINARY)
            .arg(&plan_path)
            .arg("--identity")
            .arg(&keys.identity)
            .arg("--root")
            .arg(root.path())
            .arg("--artifacts")
            .arg(&root.artifacts)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(delay);
        child.kill().expect("kill");
        let status = child.wait().expect("wait");
        if !status.success() {
            interrupted += 1;
        }
        // let a host tool the killed apply started (useradd) finish
        std::thread::sleep(Duration::from_millis(50));
        let (output, report) = run_apply(&root, &plan_path, &keys, &[]);
        assert!(
            output.status.success(),
            "re-apply after a kill at {delay:?} failed: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert_eq!(summary(&report, "failed"), 0);
        let mut found = snapshot(root.path(), SKIP);
        for name in ACCOUNT_FILES {
            found.remove(*name);
        }
        assert_same_tree(
            &expected,
            &found,
            &format!("killed at {delay:?} of {duration:?}"),
        );
        assert_eq!(expected_accounts, accounts(root.path()));
        let record: serde_json::Value = serde_json::from_slice(
            &std::fs::read(root.host("/var/lib/mesh/applied.json")).expect("record"),
        )
        .expect("json");
        assert_eq!(record["state"], "applied");
        // and a third apply changes nothing
        let (_, report) = run_apply(&root, &plan_path, &keys, &[]);
        assert_eq!(
            summary(&report, "unchanged") as usize,
            plan.shapes().len(),
            "{report:#}"
        );
    }
    assert!(
        interrupted >= points / 2,
        "only {interrupted} of {points} kills landed mid-apply"
    );
}
