//! The order of plans on a node: a plan received from the node's queue that was
//! published before the newest plan the node applied is refused with E546 and changes
//! nothing, whatever applied the newer plan (`mesh-apply PLAN`, `--rollback`, an apply
//! that failed half-way). The local applies are the real `mesh-apply` binary on real
//! temporary roots; the received plans go through the listener's own handler
//! (`listen::handle`, what `mesh-apply --listen` runs for each message), given the
//! stamp a message carries, without a broker (tests/tests/transport.rs does the same
//! over the real RabbitMQ).

mod support;

use std::process::Command;

use applier::OutputFormat;
use applier::listen::{ListenConfig, handle};
use plan::Plan;
use serde_json::Value;
use support::*;
use transport::message::{Incoming, Outcome, StatusReport, now_ms};

const NODE: &str = "db1";

fn version_plan(content: &str) -> Plan {
    Plan::new(
        NODE,
        vec![
            directory("/srv/app", "root", "0755"),
            file("/srv/app/version", content, "root", "0644"),
        ],
    )
}

fn listen_config(root: &TestRoot, keys: &Keys) -> ListenConfig {
    ListenConfig {
        node: NODE.to_string(),
        identity_path: keys.identity.clone(),
        root: Some(root.path().to_path_buf()),
        artifacts: root.artifacts.clone(),
        url: "amqp://127.0.0.1:1/%2f".to_string(),
        format: OutputFormat::Json,
        print: false,
    }
}

/// What the listener answers to `plan` received with the stamp `published_ms`.
fn receive(root: &TestRoot, keys: &Keys, plan: &Plan, published_ms: Option<u64>) -> StatusReport {
    let incoming = Incoming {
        body: plan.to_json_bytes(),
        message_id: Some(plan.digest().to_string()),
        published_ms,
        ..Incoming::default()
    };
    let (report, locked) = handle(&listen_config(root, keys), &incoming);
    assert!(!locked, "{report:#?}");
    report
}

fn record(root: &TestRoot) -> Value {
    serde_json::from_slice(&std::fs::read(root.host("/var/lib/mesh/applied.json")).unwrap())
        .unwrap()
}

fn version(root: &TestRoot) -> String {
    std::fs::read_to_string(root.host("/srv/app/version")).unwrap()
}

fn assert_refused_older(report: &StatusReport) {
    assert_eq!(report.outcome, Outcome::Failed, "{report:#?}");
    let [error] = report.errors.as_slice() else {
        panic!("{report:#?}")
    };
    assert_eq!(error.code, "E546", "{report:#?}");
    assert!(
        error
            .message
            .contains("before the plan this node applied last"),
        "{}",
        error.message
    );
    assert!(
        report.counts.values().all(|count| *count == 0),
        "{report:#?}"
    );
}

#[test]
fn a_plan_published_before_a_local_apply_is_refused_with_e546_and_changes_nothing() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let older = version_plan("A\n");
    let newer = version_plan("B\n");
    let published = now_ms();
    std::thread::sleep(std::time::Duration::from_millis(5));
    apply_ok(&root, &newer, &keys);
    let mark = record(&root)["newest_ms"]
        .as_u64()
        .expect("a local apply marks");
    assert!(mark > published, "{mark} {published}");
    // the listener keeps each plan it receives there, for the operator to read
    let received = ["var/lib/mesh/received.json"];
    let before = snapshot(root.path(), &received);

    assert_refused_older(&receive(&root, &keys, &older, Some(published)));
    assert_same_tree(&before, &snapshot(root.path(), &received), "a refused plan");
    assert_eq!(record(&root)["plan"], newer.digest());
    assert_eq!(version(&root), "B\n");

    // the plan applied last, received again however old: acknowledged without work
    let again = receive(&root, &keys, &newer, Some(published));
    assert_eq!(again.outcome, Outcome::AlreadyApplied, "{again:#?}");

    // published after: applied, and the mark is its stamp
    let later = version_plan("C\n");
    let stamp = now_ms();
    let applied = receive(&root, &keys, &later, Some(stamp));
    assert_eq!(applied.outcome, Outcome::Applied, "{applied:#?}");
    assert_eq!(version(&root), "C\n");
    assert_eq!(record(&root)["newest_ms"].as_u64(), Some(stamp));
    // the old plan is still refused
    assert_refused_older(&receive(&root, &keys, &older, Some(published)));
}

#[test]
fn a_rollback_and_a_failed_apply_each_refuse_what_was_published_before_them() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let first = version_plan("1\n");
    apply_ok(&root, &first, &keys);
    apply_ok(&root, &version_plan("2\n"), &keys);
    let published_before_rollback = now_ms();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let output = rooted(
        Command::new(BINARY)
            .arg("--rollback")
            .arg("--identity")
            .arg(&keys.identity),
        &root,
        "json",
    )
    .output()
    .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(version(&root), "1\n");
    assert_refused_older(&receive(
        &root,
        &keys,
        &version_plan("3\n"),
        Some(published_before_rollback),
    ));
    assert_eq!(version(&root), "1\n");

    // an apply that stops half-way marks the node from its first write on
    let published_before_failure = now_ms();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let long = format!("/srv/app/{}", "n".repeat(250));
    let failing = Plan::new(
        NODE,
        vec![
            directory("/srv/app", "root", "0755"),
            file(&long, "x", "root", "0644"),
            file("/srv/app/version", "4\n", "root", "0644"),
        ],
    );
    let report = apply_fails(&root, &failing, &keys);
    assert!(
        error_codes(&report).contains(&"E517".to_string()),
        "{report:#}"
    );
    assert_eq!(record(&root)["state"], "failed");
    assert_refused_older(&receive(
        &root,
        &keys,
        &version_plan("5\n"),
        Some(published_before_failure),
    ));
    assert_eq!(record(&root)["plan"], failing.digest());
}

#[test]
fn a_stamp_ahead_of_the_node_marks_its_now_and_an_unstamped_plan_is_applied() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_ok(&root, &version_plan("local\n"), &keys);

    // a publisher an hour ahead: applied, but the mark is the node's now, so a plan a
    // correct clock publishes next is not locked out
    let ahead = now_ms() + 3_600_000;
    let report = receive(&root, &keys, &version_plan("ahead\n"), Some(ahead));
    assert_eq!(report.outcome, Outcome::Applied, "{report:#?}");
    let mark = record(&root)["newest_ms"].as_u64().expect("marked");
    assert!(mark < ahead && mark <= now_ms(), "{mark} {ahead}");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let report = receive(&root, &keys, &version_plan("next\n"), Some(now_ms()));
    assert_eq!(report.outcome, Outcome::Applied, "{report:#?}");
    assert_eq!(version(&root), "next\n");

    // an older publisher's message, without the stamp: applied as before, marked now
    let before = record(&root)["newest_ms"].as_u64().expect("marked");
    std::thread::sleep(std::time::Duration::from_millis(5));
    let report = receive(&root, &keys, &version_plan("unstamped\n"), None);
    assert_eq!(report.outcome, Outcome::Applied, "{report:#?}");
    assert_eq!(version(&root), "unstamped\n");
    assert!(record(&root)["newest_ms"].as_u64().expect("marked") > before);
}

#[test]
fn a_dry_run_changes_nothing_the_mark_included() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_ok(&root, &version_plan("applied\n"), &keys);
    let before = std::fs::read(root.host("/var/lib/mesh/applied.json")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", &version_plan("dry\n"));
    let (output, _) = run_apply(&root, &path, &keys, &["--dry-run"]);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        std::fs::read(root.host("/var/lib/mesh/applied.json")).unwrap(),
        before
    );
}
