//! End to end, from a repository to a PostgreSQL login: `meshc build` of a copy of
//! examples/homelab (db1 provides postgres, app1 and app2 run `shop`, which consumes it),
//! `mesh-apply` of db1's plan into a temporary root, `mesh-provision --root` against a
//! real PostgreSQL; each consumer logs in with the password `age -d` opens from its own
//! plan; then app2 is unassigned, and after rebuild, re-apply and reconcile its login is
//! refused while app1's still works. (The provisioner's place in the layers, that it
//! depends on no crate of ours but `problems`, is tests/tests/layers.rs's.)
//!
//! The PostgreSQL is a throwaway cluster made for this test by the provisioner's test
//! harness (`provisioner/tests/support/cluster.rs`, included by path; its header says
//! why not the shared server): TCP logins need SCRAM-SHA-256, so a wrong or withdrawn
//! password is really refused. Consumers log in with `psql`, as a person would.
//!
//! The example's secrets are committed, so `meshc build` makes nothing and the
//! passwords are the ones sealed in `secrets/`. The binaries are built by cargo with
//! this test's own profile, so `cargo test --release` reuses what it built.

#[path = "support/binaries.rs"]
mod binaries;
#[path = "../../provisioner/tests/support/cluster.rs"]
mod cluster;

use std::path::Path;
use std::process::Command;

use binaries::{binaries, consumer_password, run, workspace_root};

use serde_json::Value;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("make a directory");
    for entry in std::fs::read_dir(from).expect("read a directory") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

#[test]
fn homelab_consumers_log_in_and_an_unassigned_one_is_refused() {
    let binaries = binaries();
    let example = workspace_root().join("examples/homelab");
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let repository = scratch.path().join("homelab");
    copy_tree(&example, &repository);
    let identities = repository.join("identities");
    tests::make_identities_private(&identities);
    let out = scratch.path().join("out");
    let root = scratch.path().join("db1-root");
    // the directories a real host has, which the plan does not declare
    for directory in ["etc", "var/lib"] {
        std::fs::create_dir_all(root.join(directory)).expect("root directories");
    }
    let build = || {
        run(Command::new(&binaries.meshc)
            .arg("build")
            .arg("--repo")
            .arg(&repository)
            .arg("--out")
            .arg(&out));
    };
    let apply_db1 = || {
        run(Command::new(&binaries.mesh_apply)
            .arg(out.join("nodes/db1.json"))
            .arg("--identity")
            .arg(identities.join("db1.key"))
            .arg("--root")
            .arg(&root));
    };
    build();
    apply_db1();
    let manifest = root.join("etc/mesh/grants/postgres.json");
    let cluster = cluster::Cluster::start();
    let provision = || {
        run(Command::new(&binaries.mesh_provision)
            .arg("--root")
            .arg(&root)
            .arg("--manifest")
            .arg(&manifest)
            .arg("--postgres")
            .arg(cluster.url())
            .arg("--password-file")
            .arg(cluster.password_file()))
    };
    let stdout = String::from_utf8(provision().stdout).expect("text");
    assert!(
        stdout.contains("created   login `app1_shop_db`")
            && stdout.contains("created   login `app2_shop_db`")
            && stdout
                .contains(": 2 created, 0 updated, 0 enabled, 0 disabled, 0 unchanged, 0 failed"),
        "{stdout}"
    );

    let credential = "/var/lib/mesh/credentials/shop-db";
    let app1_password = consumer_password(
        &out.join("nodes/app1.json"),
        credential,
        &identities.join("app1.key"),
        scratch.path(),
    );
    let app2_password = consumer_password(
        &out.join("nodes/app2.json"),
        credential,
        &identities.join("app2.key"),
        scratch.path(),
    );
    assert_ne!(app1_password, app2_password);
    for (login, password) in [
        ("app1_shop_db", &app1_password),
        ("app2_shop_db", &app2_password),
    ] {
        let user = cluster
            .psql_as(login, password, "postgres", "SELECT current_user")
            .unwrap_or_else(|error| panic!("`{login}` cannot log in: {error}"));
        assert_eq!(user, login);
    }
    assert!(
        cluster
            .psql_as("app1_shop_db", &app2_password, "postgres", "SELECT 1")
            .is_err(),
        "one consumer's password does not open another's login"
    );

    // app2 no longer runs shop
    let inventory_path = repository.join("mesh.nix");
    let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
    let app2_modules = "modules = [ \"web\" \"node-exporter\" \"shop\" ];";
    assert!(
        inventory.contains(app2_modules),
        "the example changed: app2's modules are no longer {app2_modules}"
    );
    let unassigned = inventory
        .replace(app2_modules, "modules = [ \"web\" \"node-exporter\" ];")
        .replace("settings.shop.database = \"db1\";", "");
    assert_ne!(
        unassigned, inventory,
        "the example assigns shop to app2 as expected"
    );
    std::fs::write(&inventory_path, unassigned).expect("write mesh.nix");
    build();
    apply_db1();
    let grants: Value = serde_json::from_slice(&std::fs::read(&manifest).expect("manifest"))
        .expect("manifest JSON");
    let logins: Vec<&str> = grants["grants"]
        .as_array()
        .expect("grants")
        .iter()
        .filter_map(|grant| grant["login"].as_str())
        .collect();
    assert_eq!(logins, ["app1_shop_db"]);
    let stdout = String::from_utf8(provision().stdout).expect("text");
    assert!(
        stdout.contains("disabled  login `app2_shop_db`")
            && stdout
                .contains(": 0 created, 0 updated, 0 enabled, 1 disabled, 1 unchanged, 0 failed"),
        "{stdout}"
    );
    let refused = cluster
        .psql_as("app2_shop_db", &app2_password, "postgres", "SELECT 1")
        .expect_err("app2's login is refused");
    assert!(refused.contains("not permitted to log in"), "{refused}");
    assert_eq!(
        cluster
            .psql_as(
                "app1_shop_db",
                &app1_password,
                "postgres",
                "SELECT current_user"
            )
            .expect("app1 still logs in"),
        "app1_shop_db"
    );
    // kept, so that a returning consumer gets back what it had
    assert_eq!(
        cluster.psql("SELECT count(*) FROM pg_roles WHERE rolname = 'app2_shop_db'"),
        "1"
    );
}
