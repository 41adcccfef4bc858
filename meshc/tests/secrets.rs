//! Credentials and secrets end to end, with the real `meshc` and the real `age` CLI:
//! made once and kept, resealed only for a changed key, grants built only from
//! active consumers, `--locked`, interoperability with `age -d`, and no plaintext in
//! anything a build writes or prints.

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{MESHC, assert_built, files_under};

fn age_available() {
    let found = Command::new("age").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "the `age` CLI is needed for these tests: apt-get install age (scripts/test installs it)"
    );
}

struct Fleet {
    _temporary: tempfile::TempDir,
    repository: PathBuf,
    out: PathBuf,
}

impl Fleet {
    fn new() -> Fleet {
        let (temporary, repository) = support::homelab_copy();
        let out = temporary.path().join("out");
        Fleet {
            _temporary: temporary,
            repository,
            out,
        }
    }

    fn build(&self, extra: &[&str]) -> Output {
        support::build_with(&self.repository, &self.out, extra)
    }

    fn plans(&self) -> BTreeMap<String, Vec<u8>> {
        files_under(&self.out.join("nodes"))
    }

    fn secrets(&self) -> BTreeMap<String, Vec<u8>> {
        files_under(&self.repository.join("secrets"))
    }

    fn edit_inventory(&self, from: &str, to: &str) {
        let path = self.repository.join("mesh.nix");
        let text = std::fs::read_to_string(&path).expect("mesh.nix");
        assert!(text.contains(from), "mesh.nix has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("write mesh.nix");
    }

    fn identity(&self, node: &str) -> PathBuf {
        self.repository
            .join("identities")
            .join(format!("{node}.key"))
    }
}

fn decrypt(identity: &Path, sealed: &[u8]) -> Option<Vec<u8>> {
    let directory = tempfile::tempdir().expect("temporary directory");
    let input = directory.path().join("sealed.age");
    std::fs::write(&input, sealed).expect("write sealed");
    let output = Command::new("age")
        .arg("-d")
        .arg("-i")
        .arg(identity)
        .arg(&input)
        .output()
        .expect("age runs");
    output.status.success().then_some(output.stdout)
}

/// Every secret shape of every plan: (node, path, sealed).
fn sealed_values(plans: &BTreeMap<String, Vec<u8>>) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for (file, bytes) in plans {
        let plan: serde_json::Value = serde_json::from_slice(bytes).expect("plan is JSON");
        let node = file.trim_end_matches(".json").to_string();
        for shape in plan["shapes"].as_array().expect("shapes") {
            if shape["kind"] == "secret" {
                found.push((
                    node.clone(),
                    shape["path"].as_str().expect("path").to_string(),
                    shape["sealed"].as_str().expect("sealed").to_string(),
                ));
            }
        }
    }
    found
}

fn shape_paths(plans: &BTreeMap<String, Vec<u8>>, node: &str) -> Vec<String> {
    let plan: serde_json::Value =
        serde_json::from_slice(&plans[&format!("{node}.json")]).expect("plan is JSON");
    plan["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .filter_map(|shape| shape["path"].as_str().map(str::to_string))
        .collect()
}

fn grants_manifest(plans: &BTreeMap<String, Vec<u8>>) -> serde_json::Value {
    let plan: serde_json::Value = serde_json::from_slice(&plans["db1.json"]).expect("plan is JSON");
    let manifest = plan["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .find(|shape| shape["path"] == "/etc/mesh/grants/postgres.json")
        .expect("db1 has the grants manifest");
    serde_json::from_str(manifest["content"].as_str().expect("content")).expect("manifest is JSON")
}

#[test]
fn rebuilding_changes_no_secret_and_no_plan_byte() {
    let fleet = Fleet::new();
    assert_built(&fleet.build(&[]));
    let secrets = fleet.secrets();
    let plans = fleet.plans();
    assert!(!secrets.is_empty());
    assert_built(&fleet.build(&[]));
    assert_eq!(
        fleet.secrets(),
        secrets,
        "a rebuild changed the sealed store"
    );
    assert_eq!(fleet.plans(), plans, "a rebuild changed a plan");
}

#[test]
fn every_sealed_value_opens_with_its_node_identity_only() {
    age_available();
    let fleet = Fleet::new();
    assert_built(&fleet.build(&[]));
    let sealed = sealed_values(&fleet.plans());
    assert!(
        sealed.len() >= 5,
        "expected needs, credentials and grants: {sealed:?}"
    );
    let nodes = ["app1", "app2", "db1", "gateway"];
    for (node, path, value) in &sealed {
        for other in nodes {
            let opened = decrypt(&fleet.identity(other), value.as_bytes());
            if other == node {
                assert!(
                    opened.is_some_and(|p| !p.is_empty()),
                    "{node}:{path} does not open with {node}'s identity"
                );
            } else {
                assert!(
                    opened.is_none(),
                    "{node}:{path} opens with {other}'s identity"
                );
            }
        }
    }
}

#[test]
fn the_provider_gets_a_scram_verifier_of_the_consumers_password() {
    age_available();
    let fleet = Fleet::new();
    assert_built(&fleet.build(&[]));
    let plans = fleet.plans();
    let sealed = sealed_values(&plans);
    let consumer = sealed
        .iter()
        .find(|(node, path, _)| node == "app1" && path == "/var/lib/mesh/credentials/shop-db")
        .expect("app1 has its credential");
    let provider = sealed
        .iter()
        .find(|(node, path, _)| {
            node == "db1" && path == "/var/lib/mesh/grants/postgres/app1_shop_db"
        })
        .expect("db1 has the grant's check");
    let password = decrypt(&fleet.identity("app1"), consumer.2.as_bytes()).expect("app1 opens");
    let verifier = String::from_utf8(
        decrypt(&fleet.identity("db1"), provider.2.as_bytes()).expect("db1 opens"),
    )
    .expect("text");
    // SCRAM-SHA-256$4096:SALT$STORED:SERVER; recompute it from the password and salt
    let salt_text = verifier
        .strip_prefix("SCRAM-SHA-256$4096:")
        .and_then(|rest| rest.split('$').next())
        .expect("verifier format");
    use base64::Engine;
    let salt = base64::engine::general_purpose::STANDARD
        .decode(salt_text)
        .expect("salt");
    assert_eq!(compiler::verifier_with_salt(&password, &salt), verifier);
    assert!(!verifier.contains(&String::from_utf8_lossy(&password).into_owned()));
    let manifest = grants_manifest(&plans);
    assert_eq!(manifest["format"], "mesh-grants/1");
    assert_eq!(manifest["service"], "postgres");
    assert_eq!(manifest["node"], "db1");
    let logins: Vec<&str> = manifest["grants"]
        .as_array()
        .expect("grants")
        .iter()
        .map(|g| g["login"].as_str().expect("login"))
        .collect();
    assert_eq!(logins, ["app1_shop_db", "app2_shop_db"]);
    assert_eq!(manifest["grants"][0]["consumer"], "app1/shop/db");
    assert_eq!(
        manifest["grants"][0]["credential"],
        "/var/lib/mesh/grants/postgres/app1_shop_db"
    );
    assert_eq!(manifest["grants"][0]["form"], "scram-sha-256");
}

#[test]
fn withdrawn_consumer_keeps_no_grant() {
    let fleet = Fleet::new();
    assert_built(&fleet.build(&[]));
    let before = fleet.plans();
    let secrets_before = fleet.secrets();

    // unassign the shop from app2
    fleet.edit_inventory(
        "modules = [ \"web\" \"node-exporter\" \"shop\" ];",
        "modules = [ \"web\" \"node-exporter\" ];",
    );
    fleet.edit_inventory("      settings.shop.database = \"db1\";\n", "");
    assert_built(&fleet.build(&[]));
    let withdrawn = fleet.plans();
    let manifest = grants_manifest(&withdrawn);
    let logins: Vec<&str> = manifest["grants"]
        .as_array()
        .expect("grants")
        .iter()
        .map(|g| g["login"].as_str().expect("login"))
        .collect();
    assert_eq!(
        logins,
        ["app1_shop_db"],
        "the withdrawn consumer is still granted"
    );
    assert!(
        !shape_paths(&withdrawn, "db1")
            .contains(&"/var/lib/mesh/grants/postgres/app2_shop_db".to_string())
    );
    assert!(
        !shape_paths(&withdrawn, "app2").contains(&"/var/lib/mesh/credentials/shop-db".to_string())
    );
    assert_eq!(
        withdrawn["app1.json"], before["app1.json"],
        "app1 is untouched"
    );
    // the sealed material is kept
    assert_eq!(
        fleet.secrets(),
        secrets_before,
        "withdrawal changed the sealed store"
    );

    // and when the consumer comes back it gets what it had
    fleet.edit_inventory(
        "modules = [ \"web\" \"node-exporter\" ];",
        "modules = [ \"web\" \"node-exporter\" \"shop\" ];\n      settings.shop.database = \"db1\";",
    );
    assert_built(&fleet.build(&[]));
    assert_eq!(
        fleet.plans(),
        before,
        "a returning consumer's plans differ from before"
    );
}

#[test]
fn a_changed_node_key_reseals_only_what_was_sealed_to_it() {
    age_available();
    let fleet = Fleet::new();
    assert_built(&fleet.build(&[]));
    let before = fleet.plans();
    let secrets_before = fleet.secrets();

    // app2 gets a new identity
    let generated = Command::new("age-keygen")
        .output()
        .expect("age-keygen runs");
    let identity = String::from_utf8(generated.stdout).expect("text");
    let public = identity
        .lines()
        .find_map(|line| line.strip_prefix("# public key: "))
        .expect("public key line")
        .to_string();
    let inventory = std::fs::read_to_string(fleet.repository.join("mesh.nix")).expect("mesh.nix");
    let app2 = inventory.find("    app2 = {").expect("app2");
    let key_start = app2 + inventory[app2..].find("key = \"").expect("key") + "key = \"".len();
    let key_end = key_start + inventory[key_start..].find('"').expect("end of key");
    let old_key = inventory[key_start..key_end].to_string();
    fleet.edit_inventory(&old_key, &public);
    std::fs::write(fleet.identity("app2"), &identity).expect("write identity");

    assert_built(&fleet.build(&[]));
    let after = fleet.plans();
    assert_eq!(
        after["gateway.json"], before["gateway.json"],
        "gateway shares no secret with app2"
    );
    assert_eq!(
        after["app1.json"], before["app1.json"],
        "app1 shares no secret with app2"
    );
    assert_ne!(
        after["app2.json"], before["app2.json"],
        "app2's credential was not resealed"
    );
    assert_ne!(
        after["db1.json"], before["db1.json"],
        "db1's check of app2's login was not remade"
    );
    // only app2's grant changed in the store
    let secrets_after = fleet.secrets();
    let changed: Vec<&String> = secrets_after
        .iter()
        .filter(|(path, bytes)| secrets_before.get(*path) != Some(bytes))
        .map(|(path, _)| path)
        .collect();
    assert!(!changed.is_empty());
    assert!(
        changed.iter().all(|path| path.contains("/app2/")),
        "changed: {changed:?}"
    );
    // the new credential opens with the new identity
    let sealed = sealed_values(&after);
    let credential = sealed
        .iter()
        .find(|(node, _, _)| node == "app2")
        .expect("app2 credential");
    assert!(decrypt(&fleet.identity("app2"), credential.2.as_bytes()).is_some());
}

#[test]
fn locked_build_refuses_an_unmade_need_and_makes_nothing() {
    let fleet = Fleet::new();
    std::fs::remove_dir_all(fleet.repository.join("secrets/needs")).expect("remove needs");
    let secrets_before = fleet.secrets();
    let output = fleet.build(&["--locked"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("E304"), "{stderr}");
    assert!(
        stderr.contains("need `superuser` of module `postgres` on node `db1`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("run `meshc build` without `--locked`"),
        "{stderr}"
    );
    assert_eq!(fleet.secrets(), secrets_before, "--locked made something");
    assert!(
        !fleet.out.join("nodes").exists(),
        "--locked wrote plans despite the error"
    );
    // without --locked the need is made
    assert_built(&fleet.build(&[]));
    assert!(
        fleet
            .repository
            .join("secrets/needs/db1/postgres/superuser.age")
            .is_file()
    );
}

#[test]
fn no_plaintext_reaches_plans_the_repository_or_the_output() {
    age_available();
    let fleet = Fleet::new();
    // make everything fresh, so this build is the one that handled the plaintexts
    std::fs::remove_dir_all(fleet.repository.join("secrets")).expect("remove secrets");
    let output = fleet.build(&[]);
    assert_built(&output);
    let mut plaintexts = Vec::new();
    for (node, path, sealed) in sealed_values(&fleet.plans()) {
        let plaintext = decrypt(&fleet.identity(&node), sealed.as_bytes()).expect("opens");
        if !plaintext.starts_with(b"SCRAM-SHA-256$") {
            plaintexts.push((format!("{node}:{path}"), plaintext));
        }
    }
    assert!(plaintexts.len() >= 3, "expected a need and two credentials");
    let mut haystacks: Vec<(String, Vec<u8>)> = Vec::new();
    haystacks.push(("stdout".into(), output.stdout.clone()));
    haystacks.push(("stderr".into(), output.stderr.clone()));
    for (path, bytes) in files_under(&fleet.out) {
        haystacks.push((format!("out/{path}"), bytes));
    }
    for (path, bytes) in files_under(&fleet.repository) {
        if path.starts_with("identities/") {
            continue;
        }
        haystacks.push((format!("repository/{path}"), bytes));
    }
    let check = Command::new(MESHC)
        .arg("check")
        .arg("--repo")
        .arg(&fleet.repository)
        .output()
        .expect("meshc runs");
    haystacks.push(("check".into(), [check.stdout, check.stderr].concat()));
    for (what, plaintext) in &plaintexts {
        for (place, bytes) in &haystacks {
            assert!(
                !bytes
                    .windows(plaintext.len())
                    .any(|window| window == plaintext.as_slice()),
                "the plaintext of {what} is in {place}"
            );
        }
    }
}

#[test]
fn an_unwritable_store_is_reported_as_e305() {
    let fleet = Fleet::new();
    let secrets = fleet.repository.join("secrets");
    std::fs::remove_dir_all(&secrets).expect("remove secrets");
    // a file where the store's directory should be
    std::fs::write(&secrets, "not a directory").expect("write");
    let output = fleet.build(&[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("E305"), "{stderr}");
    assert!(stderr.contains("secrets/"), "{stderr}");
    assert!(!fleet.out.join("nodes").exists());
}

/// A build that was refused with E312 and wrote no plan.
fn assert_refused_as_link(fleet: &Fleet, output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(stderr.contains("E312"), "no E312 in stderr:\n{stderr}");
    assert!(
        stderr.contains("symbolic link"),
        "the message says why:\n{stderr}"
    );
    assert!(!fleet.out.join("nodes").exists(), "a plan was written");
}

/// Moves `relative` (below the repository) to `outside` and leaves a link to it.
fn replace_with_link(fleet: &Fleet, relative: &str, outside: &Path) {
    let inside = fleet.repository.join(relative);
    std::fs::rename(&inside, outside).expect("move out");
    std::os::unix::fs::symlink(outside, &inside).expect("link");
}

#[test]
fn symlinked_secrets_dir_refused() {
    let fleet = Fleet::new();
    let elsewhere = fleet._temporary.path().join("elsewhere");
    replace_with_link(&fleet, "secrets", &elsewhere);
    // a new need would be written through the link: remove one so that it is made
    std::fs::remove_dir_all(elsewhere.join("needs")).expect("remove needs");
    let before = files_under(&elsewhere);
    let output = fleet.build(&[]);
    assert_refused_as_link(&fleet, &output);
    assert_eq!(files_under(&elsewhere), before, "written through the link");
}

#[test]
fn symlinked_node_dir_in_secrets_refused() {
    let fleet = Fleet::new();
    let elsewhere = fleet._temporary.path().join("db1-needs");
    replace_with_link(&fleet, "secrets/needs/db1", &elsewhere);
    let output = fleet.build(&["--locked"]);
    assert_refused_as_link(&fleet, &output);
}

#[test]
fn symlinked_sealed_file_neither_read_nor_written_through() {
    let fleet = Fleet::new();
    let sealed = "secrets/needs/db1/postgres/superuser.age";
    let outside = fleet._temporary.path().join("superuser.age");
    replace_with_link(&fleet, sealed, &outside);
    let before = std::fs::read(&outside).expect("outside file");
    // read: the plan would carry what the link points at
    assert_refused_as_link(&fleet, &fleet.build(&["--locked"]));
    // written: without its recorded key the need is made again, next to the link
    std::fs::remove_file(
        fleet
            .repository
            .join("secrets/needs/db1/postgres/superuser.recipient"),
    )
    .expect("remove the recipient");
    let output = fleet.build(&[]);
    assert!(!output.status.success());
    assert_eq!(std::fs::read(&outside).expect("outside file"), before);
    assert!(
        std::fs::symlink_metadata(fleet.repository.join(sealed))
            .expect("still there")
            .file_type()
            .is_symlink()
    );
}
