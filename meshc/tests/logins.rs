//! Consumer-side facts: a consumer's `shapes` gets `logins.NAME` (its login, the
//! provider's node and address, where its credential is, the provider's facts) and
//! renders its own connection settings from them; a changed fact changes the plans
//! of the provider and of its consumers and of no other node. The repositories are
//! `tests/data/logins/<case>/`; plans are compiled by the real pipeline, secrets
//! made in a temporary copy.

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use compiler::{Compilation, Options, SecretMode};
use plan::{Kind, Resource};

fn case(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/logins")
        .join(name)
}

/// Compiles `root` as `meshc build` does: secrets made (in `root`'s `secrets/`).
fn build(root: &Path) -> Compilation {
    let compilation = compiler::compile_with(
        root,
        Options {
            secrets: SecretMode::Make,
            workers: None,
        },
    );
    let errors: Vec<String> = compilation
        .diagnostics
        .iter()
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
    assert!(!compilation.has_errors(), "{errors:#?}");
    compilation
}

/// A copy of the case `name` in a temporary directory.
fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let root = temporary.path().join(name);
    support::copy_tree(&case(name), &root);
    (temporary, root)
}

fn file_content(compilation: &Compilation, node: &str, path: &str) -> String {
    let plan = &compilation.plans[node];
    match plan.shape(Kind::File, path).map(|shape| shape.resource()) {
        Some(Resource::File(file)) => file.content.clone().expect("text content"),
        other => panic!("{node} has no file {path}: {other:?}"),
    }
}

fn digests(compilation: &Compilation) -> BTreeMap<String, String> {
    compilation
        .plans
        .iter()
        .map(|(node, plan)| (node.clone(), plan.digest().to_string()))
        .collect()
}

#[test]
fn a_consumer_renders_its_login_provider_address_path_and_facts_into_a_file() {
    let (_temporary, root) = copy("consumer-renders-its-login");
    let compilation = build(&root);
    assert_eq!(
        file_content(&compilation, "app1", "/etc/client/store.conf"),
        "host=10.0.0.21 port=7000 database=main served-by=db1 user=app1_client_store \
         provider=db1 passfile=/etc/client/store-password\n"
    );
    // the credential is where `path` says
    assert!(
        compilation.plans["app1"]
            .shape(Kind::Secret, "/etc/client/store-password")
            .is_some()
    );
}

#[test]
fn facts_are_a_function_of_each_providers_node_and_settings() {
    let (_temporary, root) = copy("facts-follow-each-providers-settings");
    let compilation = build(&root);
    // db1 its address and its own port; db2 no address (null) and the default port
    assert_eq!(
        file_content(&compilation, "app1", "/etc/client/login.json"),
        r#"{"store":{"address":"10.0.0.21","facts":{"database":"main","port":7000,"served-by":"db1"},"login":"app1_client_store","path":"/etc/client/store-password","provider":"db1"}}"#
    );
    assert_eq!(
        file_content(&compilation, "app2", "/etc/client/login.json"),
        r#"{"store":{"address":null,"facts":{"database":"main","port":6379,"served-by":"db2"},"login":"app2_client_store","path":"/etc/client/store-password","provider":"db2"}}"#
    );
}

#[test]
fn a_changed_provider_fact_changes_exactly_the_providers_and_the_consumers_plans() {
    let (_temporary, root) = copy("consumer-renders-its-login");
    let before = build(&root);
    let inventory = root.join("mesh.nix");
    let text = std::fs::read_to_string(&inventory).expect("readable");
    assert!(text.contains("settings.kv.port = 7000;"));
    std::fs::write(
        &inventory,
        text.replace("settings.kv.port = 7000;", "settings.kv.port = 7001;"),
    )
    .expect("writable");
    let after = build(&root);
    let (before_digests, after_digests) = (digests(&before), digests(&after));
    assert_eq!(
        before_digests.keys().collect::<Vec<_>>(),
        ["app1", "db1", "other"]
    );
    let changed: Vec<&str> = before_digests
        .iter()
        .filter(|(node, digest)| after_digests.get(*node) != Some(digest))
        .map(|(node, _)| node.as_str())
        .collect();
    assert_eq!(changed, ["app1", "db1"]);
    assert!(file_content(&after, "app1", "/etc/client/store.conf").contains(" port=7001 "));
    // and the same inputs give the same plans again, whatever the number of workers
    let again = compiler::compile_with(
        &root,
        Options {
            secrets: SecretMode::Make,
            workers: Some(1),
        },
    );
    assert_eq!(digests(&again), after_digests);
}

#[test]
fn a_provider_of_facts_only_gives_its_consumers_address_and_facts_and_no_credential() {
    let (_temporary, root) = copy("facts-only-provider-gives-no-credential");
    let compilation = build(&root);
    assert_eq!(
        file_content(&compilation, "watch", "/etc/targets"),
        "host1 10.0.0.1:9100 path=null\nhost2 host2:9200 path=null\n"
    );
    // nothing is made or placed: no secret on any node, no grants manifest, no store
    for (node, plan) in &compilation.plans {
        assert!(
            plan.shapes()
                .iter()
                .all(|shape| shape.kind() != Kind::Secret),
            "{node} holds a secret"
        );
        assert!(
            plan.shapes()
                .iter()
                .all(|shape| shape.kind() != Kind::File || shape.identity() == "/etc/targets"),
            "{node} has a file besides the collector's"
        );
    }
    assert!(!root.join("secrets").join("grants").exists());
}
