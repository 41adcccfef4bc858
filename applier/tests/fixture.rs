//! The hand-built fixture plan `tests/data/every-kind/plan.json` (every kind, sealed to
//! the committed test identity, with its artifact) reads, applies cleanly into a
//! temporary root, and a second apply changes nothing, byte for byte.
//!
//! Regenerate the plan after a format change with:
//! `MESH_REGENERATE_FIXTURES=1 cargo test -p applier --test fixture`

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plan::{
    Archive, Container, Directory, File, Link, Mount, Plan, Resource, Secret, Service, Shape,
    Source, User,
};
use support::*;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/every-kind")
}

fn at(module: &str, line: u32) -> Source {
    Source {
        file: format!("modules/{module}/module.nix"),
        line,
        column: 5,
    }
}

/// The plan as Rust: what `plan.json` must hold.
fn fixture_plan() -> Plan {
    let sealed = std::fs::read_to_string(data().join("token.age")).expect("token.age");
    let artifact = std::fs::read_dir(data().join("artifacts"))
        .expect("artifacts")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .find(|name| name.ends_with(".tar"))
        .expect("one artifact");
    let digest = format!(
        "sha256:{}",
        artifact
            .trim_start_matches("sha256-")
            .trim_end_matches(".tar")
    );
    let shape = |module: &str, line: u32, resource: Resource| {
        Shape::new(resource, module, at(module, line))
    };
    Plan::new(
        "db1",
        vec![
            shape(
                "web",
                4,
                Resource::User(User {
                    name: "web".into(),
                    system: true,
                    home: Some("/var/lib/web".into()),
                    shell: Some("/usr/sbin/nologin".into()),
                    groups: vec![],
                }),
            ),
            shape(
                "web",
                5,
                Resource::Directory(Directory {
                    path: "/var/lib/web".into(),
                    owner: "web".into(),
                    group: "web".into(),
                    mode: "0750".into(),
                }),
            ),
            shape(
                "web",
                6,
                Resource::Directory(Directory {
                    path: "/etc/web".into(),
                    owner: "root".into(),
                    group: "web".into(),
                    mode: "0750".into(),
                }),
            ),
            shape(
                "web",
                7,
                Resource::File(File {
                    path: "/etc/web/web.conf".into(),
                    content: Some("listen = 8080\nroot = /srv/site\n".into()),
                    content_base64: None,
                    owner: "root".into(),
                    group: "web".into(),
                    mode: "0640".into(),
                }),
            ),
            shape(
                "web",
                8,
                Resource::File(File {
                    path: "/etc/web/favicon.ico".into(),
                    content: None,
                    content_base64: Some("AAABAAEAEBAAAAEAIABoBAAAFgAAAA==".into()),
                    owner: "root".into(),
                    group: "root".into(),
                    mode: "0644".into(),
                }),
            ),
            shape(
                "web",
                9,
                Resource::Link(Link {
                    path: "/etc/web/current.conf".into(),
                    target: "web.conf".into(),
                }),
            ),
            shape(
                "web",
                10,
                Resource::Secret(Secret {
                    path: "/etc/web/db-password".into(),
                    sealed,
                    owner: "web".into(),
                    group: "web".into(),
                    mode: "0400".into(),
                }),
            ),
            shape(
                "web",
                11,
                Resource::Archive(Archive {
                    path: "/srv/site".into(),
                    artifact,
                    artifact_digest: digest,
                    owner: "web".into(),
                    group: "web".into(),
                }),
            ),
            shape(
                "web",
                12,
                Resource::Service(Service {
                    name: "web".into(),
                    exec: vec![
                        "/usr/bin/web".into(),
                        "--config".into(),
                        "/etc/web/web.conf".into(),
                    ],
                    user: "web".into(),
                    environment: BTreeMap::from([("RUST_LOG".to_string(), "info".to_string())]),
                    after: vec!["cache".into(), "network-online.target".into()],
                    restart: "on-failure".into(),
                }),
            ),
            shape(
                "cache",
                3,
                Resource::Container(Container {
                    name: "cache".into(),
                    image: format!(
                        "registry.mesh.internal:5000/library/redis@sha256:{}",
                        "5".repeat(64)
                    ),
                    command: vec!["redis-server".into(), "--appendonly".into(), "yes".into()],
                    environment: BTreeMap::from([("TZ".to_string(), "UTC".to_string())]),
                    mounts: vec![Mount {
                        source: "/var/lib/web".into(),
                        target: "/data".into(),
                        read_only: false,
                    }],
                    ports: vec!["127.0.0.1:6379:6379/tcp".into()],
                    user: Some("999:999".into()),
                }),
            ),
        ],
    )
}

fn read_fixture() -> (Vec<u8>, Plan) {
    let path = data().join("plan.json");
    if std::env::var_os("MESH_REGENERATE_FIXTURES").is_some() {
        let mut pretty = serde_json::to_vec_pretty(&fixture_plan().to_json()).expect("json");
        pretty.push(b'\n');
        std::fs::write(&path, pretty).expect("write the fixture");
    }
    let bytes = std::fs::read(&path).expect("plan.json");
    let plan = Plan::read(&bytes).expect("the fixture is a valid plan");
    (bytes, plan)
}

#[test]
fn the_fixture_uses_every_kind_and_matches_its_source() {
    let (_, plan) = read_fixture();
    assert_eq!(plan, fixture_plan());
    for kind in plan::Kind::ALL {
        assert!(
            plan.shapes().iter().any(|shape| shape.kind() == kind),
            "no {kind} in the fixture"
        );
    }
}

#[test]
fn the_fixture_applies_cleanly_and_a_second_apply_changes_nothing() {
    let (_, _) = read_fixture();
    let root = TestRoot::new();
    let keys = Keys::from_file(&data().join("identity.txt"));
    let (output, report) = run_apply(
        &root,
        &data().join("plan.json"),
        &keys,
        &[
            "--artifacts",
            &data().join("artifacts").display().to_string(),
        ],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(summary(&report, "created"), 10, "{report:#}");
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/web/db-password")).expect("secret"),
        "fixture-database-password"
    );
    assert_eq!(
        std::fs::read_to_string(root.host("/srv/site/index.html")).expect("archive"),
        "<h1>mesh</h1>\n"
    );

    let before = snapshot(root.path(), &[]);
    let accounts_before = accounts(root.path());
    let (output, report) = run_apply(
        &root,
        &data().join("plan.json"),
        &keys,
        &[
            "--artifacts",
            &data().join("artifacts").display().to_string(),
        ],
    );
    assert!(output.status.success());
    assert_eq!(summary(&report, "unchanged"), 10, "{report:#}");
    for status in ["created", "changed", "withdrawn", "kept", "failed"] {
        assert_eq!(summary(&report, status), 0, "{status}");
    }
    let after = snapshot(root.path(), &[]);
    assert!(before.contains_key("etc/passwd") && before.contains_key("var/lib/mesh/applied.json"));
    assert_same_tree(
        &before,
        &after,
        "the second apply changed the tree (accounts and the record included)",
    );
    assert_eq!(accounts_before, accounts(root.path()));
}

#[test]
fn dry_run_reports_the_same_and_changes_nothing() {
    let root = TestRoot::new();
    let keys = Keys::from_file(&data().join("identity.txt"));
    let before = snapshot(root.path(), &[]);
    let artifacts = data().join("artifacts").display().to_string();
    let (output, report) = run_apply(
        &root,
        &data().join("plan.json"),
        &keys,
        &["--artifacts", &artifacts, "--dry-run"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(report["dry_run"], true);
    assert_eq!(summary(&report, "created"), 10);
    assert_same_tree(
        &before,
        &snapshot(root.path(), &[]),
        "a dry run changed the tree",
    );

    let (_, applied) = run_apply(
        &root,
        &data().join("plan.json"),
        &keys,
        &["--artifacts", &artifacts],
    );
    let statuses = |report: &serde_json::Value| -> Vec<(String, String)> {
        report["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|result| (result["identity"].to_string(), result["status"].to_string()))
            .collect()
    };
    assert_eq!(
        statuses(&report),
        statuses(&applied),
        "the dry run showed what the apply did"
    );
}

#[test]
fn human_output_lists_every_shape_and_a_summary() {
    let root = TestRoot::new();
    let keys = Keys::from_file(&data().join("identity.txt"));
    let output = std::process::Command::new(BINARY)
        .arg(data().join("plan.json"))
        .arg("--identity")
        .arg(&keys.identity)
        .arg("--root")
        .arg(root.path())
        .arg("--artifacts")
        .arg(data().join("artifacts"))
        .output()
        .expect("run");
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).expect("utf8");
    assert!(
        text.contains("created    secret `/etc/web/db-password`\n"),
        "{text}"
    );
    assert!(text.contains("created    container `cache`\n"), "{text}");
    assert!(
        text.ends_with("10 created, 0 changed, 0 unchanged, 0 withdrawn, 0 kept, 0 failed\n"),
        "{text}"
    );
    assert!(!text.contains("fixture-database-password"));
}
