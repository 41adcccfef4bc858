//! Repository -> plans -> diff -> apply, with the real binaries: every node of the
//! example fleet applies cleanly into a temporary root with its identity, a second
//! apply changes nothing, secrets land decrypted with their modes, and for a node
//! whose applied record equals the old build, `mesh-apply --dry-run` and
//! `meshc diff` agree on what changes.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tests::{base_root, binary, copy_tree, make_identities_private, workspace_root};

struct Binaries {
    meshc: PathBuf,
    apply: PathBuf,
}

fn binaries() -> Binaries {
    Binaries {
        meshc: binary("meshc", "meshc"),
        apply: binary("applier", "mesh-apply"),
    }
}

fn succeeded(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn build(binaries: &Binaries, repository: &Path, out: &Path) {
    let output = Command::new(&binaries.meshc)
        .arg("build")
        .arg("--repo")
        .arg(repository)
        .arg("--out")
        .arg(out)
        .output()
        .expect("meshc runs");
    succeeded(&output, "meshc build");
}

fn apply(binaries: &Binaries, plan: &Path, identity: &Path, root: &Path, extra: &[&str]) -> Output {
    Command::new(&binaries.apply)
        .arg(plan)
        .arg("--identity")
        .arg(identity)
        .arg("--root")
        .arg(root)
        .arg("--format")
        .arg("json")
        .args(extra)
        .output()
        .expect("mesh-apply runs")
}

fn report(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "mesh-apply printed no JSON report ({e}):\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn nodes() -> [&'static str; 4] {
    ["app1", "app2", "db1", "gateway"]
}

#[test]
fn every_node_of_the_example_applies_cleanly_and_idempotently() {
    let binaries = binaries();
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("homelab");
    copy_tree(&workspace_root().join("examples/homelab"), &repository);
    make_identities_private(&repository.join("identities"));
    let out = temporary.path().join("build");
    build(&binaries, &repository, &out);
    for node in nodes() {
        let root = temporary.path().join(format!("root-{node}"));
        base_root(&root);
        let plan = out.join(format!("nodes/{node}.json"));
        let identity = repository.join(format!("identities/{node}.key"));
        let first = apply(&binaries, &plan, &identity, &root, &[]);
        succeeded(&first, &format!("mesh-apply of {node}"));
        let first = report(&first);
        assert!(
            first["summary"]["created"].as_u64().unwrap_or(0) > 0,
            "{node}: {first:#}"
        );
        assert_eq!(first["summary"]["failed"], 0, "{node}: {first:#}");

        let second = apply(&binaries, &plan, &identity, &root, &[]);
        succeeded(&second, &format!("the second mesh-apply of {node}"));
        let second = report(&second);
        for status in ["created", "changed", "withdrawn", "failed"] {
            assert_eq!(
                second["summary"][status], 0,
                "{node}: a second apply did something: {second:#}"
            );
        }
    }

    // db1's secrets are decrypted in place, owned and moded as declared
    let root = temporary.path().join("root-db1");
    let superuser = root.join("var/lib/mesh/postgres/superuser");
    let metadata = std::fs::metadata(&superuser).expect("the superuser secret is placed");
    assert_eq!(metadata.mode() & 0o777, 0o400);
    let password = std::fs::read(&superuser).expect("readable");
    let opened = Command::new("age")
        .arg("-d")
        .arg("-i")
        .arg(repository.join("identities/db1.key"))
        .arg(repository.join("secrets/needs/db1/postgres/superuser.age"))
        .output()
        .expect("age runs");
    succeeded(&opened, "age -d");
    assert_eq!(
        password, opened.stdout,
        "the applied secret is not the sealed need"
    );
    let verifier = std::fs::read_to_string(root.join("var/lib/mesh/grants/postgres/app1_shop_db"))
        .expect("grant check");
    assert!(
        verifier.starts_with("SCRAM-SHA-256$4096:"),
        "the provider holds {verifier:?}"
    );
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.join("etc/mesh/grants/postgres.json")).expect("manifest"),
    )
    .expect("JSON");
    assert_eq!(manifest["grants"].as_array().map(Vec::len), Some(2));

    // app1's credential belongs to the shop user
    let root = temporary.path().join("root-app1");
    let credential = std::fs::metadata(root.join("var/lib/mesh/credentials/shop-db"))
        .expect("credential placed");
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).expect("passwd");
    let shop_uid: u32 = passwd
        .lines()
        .find(|line| line.starts_with("shop:"))
        .and_then(|line| line.split(':').nth(2))
        .and_then(|uid| uid.parse().ok())
        .expect("the shop user was created");
    assert_eq!(credential.uid(), shop_uid);
    assert_eq!(credential.mode() & 0o777, 0o400);

    // a system user declared without a shell cannot log in; an operator keeps hers
    let shell_of = |name: &str| {
        passwd
            .lines()
            .find(|line| line.starts_with(&format!("{name}:")))
            .and_then(|line| line.split(':').nth(6))
            .map(str::to_string)
    };
    assert_eq!(
        shell_of("shop").as_deref(),
        Some("/usr/sbin/nologin"),
        "{passwd}"
    );
    assert_eq!(
        shell_of("web").as_deref(),
        Some("/usr/sbin/nologin"),
        "{passwd}"
    );
    assert_eq!(shell_of("alice").as_deref(), Some("/bin/bash"), "{passwd}");

    // a service after `network-online.target` also wants it, so something pulls the
    // target in; one after a mesh unit only orders
    let unit = std::fs::read_to_string(root.join("etc/systemd/system/web.service")).expect("unit");
    let lines: Vec<&str> = unit.lines().collect();
    assert!(lines.contains(&"After=network-online.target"), "{unit}");
    assert!(lines.contains(&"Wants=network-online.target"), "{unit}");
}

/// (kind, identity) of every result of a dry run that is not `unchanged`.
fn dry_run_changes(report: &serde_json::Value) -> BTreeSet<(String, String, String)> {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["status"] != "unchanged")
        .map(|r| {
            let action = match r["status"].as_str().unwrap_or_default() {
                "created" => "add",
                "changed" => "change",
                "withdrawn" | "kept" => "withdraw",
                other => other,
            };
            (
                action.to_string(),
                r["kind"].as_str().unwrap_or_default().to_string(),
                r["identity"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The changes of `node` in a diff. Restarts of services whose own unit did not
/// change (they name a changed path) are left out: under `--root` the applier works
/// offline and restarts nothing, so its dry run cannot show them.
fn diff_changes(diff: &serde_json::Value, node: &str) -> BTreeSet<(String, String, String)> {
    let Some(node_diff) = diff["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["node"] == node)
    else {
        return BTreeSet::new();
    };
    node_diff["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| {
            let restart_only = c["fields"].as_array().is_some_and(Vec::is_empty)
                && c["restart"]
                    .as_str()
                    .is_some_and(|reason| reason.ends_with("changes") && reason.starts_with('`'));
            !restart_only
        })
        .map(|c| {
            (
                c["action"].as_str().unwrap_or_default().to_string(),
                c["kind"].as_str().unwrap_or_default().to_string(),
                c["identity"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn dry_run_and_diff_agree_on_what_changes() {
    let binaries = binaries();
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("homelab");
    copy_tree(&workspace_root().join("examples/homelab"), &repository);
    make_identities_private(&repository.join("identities"));
    let old = temporary.path().join("old");
    build(&binaries, &repository, &old);
    for node in nodes() {
        let root = temporary.path().join(format!("root-{node}"));
        base_root(&root);
        let output = apply(
            &binaries,
            &old.join(format!("nodes/{node}.json")),
            &repository.join(format!("identities/{node}.key")),
            &root,
            &[],
        );
        succeeded(&output, "mesh-apply");
    }

    // change: app2 leaves the shop, app1 gets a new title and port, monitoring scrapes faster
    let edit = |file: &str, from: &str, to: &str| {
        let path = repository.join(file);
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(text.contains(from), "{file}: {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("writable");
    };
    edit(
        "mesh.nix",
        "modules = [ \"web\" \"node-exporter\" \"shop\" ];",
        "modules = [ \"web\" \"node-exporter\" ];",
    );
    edit("mesh.nix", "      settings.shop.database = \"db1\";\n", "");
    edit(
        "mesh.nix",
        "settings.web.title = \"app1\";",
        "settings.web = { title = \"front\"; port = 8088; };",
    );
    edit(
        "mesh.nix",
        "settings.monitoring.nodes = [ \"app1\" \"app2\" \"db1\" \"gateway\" \"mq1\" ];",
        "settings.monitoring = { nodes = [ \"app1\" \"app2\" \"db1\" \"gateway\" \"mq1\" ]; scrapeInterval = \"10s\"; };",
    );
    let new = temporary.path().join("new");
    build(&binaries, &repository, &new);

    let diff = Command::new(&binaries.meshc)
        .arg("diff")
        .arg(&old)
        .arg(&new)
        .arg("--format")
        .arg("json")
        .output()
        .expect("meshc runs");
    succeeded(&diff, "meshc diff");
    let diff: serde_json::Value = serde_json::from_slice(&diff.stdout).expect("diff JSON");

    let mut compared = 0;
    for node in nodes() {
        let root = temporary.path().join(format!("root-{node}"));
        let dry = apply(
            &binaries,
            &new.join(format!("nodes/{node}.json")),
            &repository.join(format!("identities/{node}.key")),
            &root,
            &["--dry-run"],
        );
        succeeded(&dry, "mesh-apply --dry-run");
        let from_applier = dry_run_changes(&report(&dry));
        let from_diff = diff_changes(&diff, node);
        assert_eq!(
            from_applier, from_diff,
            "node {node}: the dry run and the diff disagree"
        );
        compared += from_diff.len();
    }
    assert!(
        compared >= 8,
        "the scenario changed too little to compare: {compared}"
    );
}
