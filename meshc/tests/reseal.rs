//! A node's key rotation end to end, with the real `meshc`, `age` and `age-keygen`:
//! `meshc diff` names a value made anew and what reads it; `meshc secrets reseal`
//! keeps the values (decrypted with `age -d` before and after: equal) so that the
//! diff says "same value" and the next build keeps them; a wrong identity changes no
//! byte of `secrets/`; a store made before value ids were kept is said to be of
//! unknown identity, never the same.

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{MESHC, assert_built, files_under};

const SUPERUSER: &str = "secrets/needs/db1/postgres/superuser.age";
const APP1_CHECK: &str = "secrets/grants/db1/postgres/app1/shop/db/provider.age";

struct Rotation {
    temporary: tempfile::TempDir,
    repository: PathBuf,
    /// The build made before the key changed.
    old: PathBuf,
    /// db1's identity before the change (outside the repository).
    old_identity: PathBuf,
    /// db1's identity after it.
    new_identity: PathBuf,
}

fn meshc(arguments: &[&std::ffi::OsStr]) -> Output {
    Command::new(MESHC)
        .args(arguments)
        .output()
        .expect("meshc runs")
}

/// `age -d -i IDENTITY FILE`: the plaintext, or None when it does not open.
fn age_decrypt(identity: &Path, file: &Path) -> Option<Vec<u8>> {
    let output = Command::new("age")
        .arg("-d")
        .arg("-i")
        .arg(identity)
        .arg(file)
        .output()
        .expect("the `age` CLI runs (apt-get install age)");
    output.status.success().then_some(output.stdout)
}

impl Rotation {
    /// The example built, then db1 given a new key (the inventory changed, the old
    /// identity kept aside). `strip_ids` removes the value ids first, as a store made
    /// before they were kept has none.
    fn new(strip_ids: bool) -> Rotation {
        let (temporary, repository) = support::homelab_copy();
        if strip_ids {
            for (path, _) in files_under(&repository.join("secrets")) {
                if path.ends_with(".value") || path.ends_with("/value") {
                    std::fs::remove_file(repository.join("secrets").join(path)).expect("remove");
                }
            }
        }
        let old = temporary.path().join("old");
        assert_built(&support::build(&repository, &old));
        let old_identity = temporary.path().join("db1-old.key");
        std::fs::copy(repository.join("identities/db1.key"), &old_identity).expect("copy");
        let generated = Command::new("age-keygen")
            .output()
            .expect("age-keygen runs");
        let identity = String::from_utf8(generated.stdout).expect("text");
        let public = identity
            .lines()
            .find_map(|line| line.strip_prefix("# public key: "))
            .expect("public key line")
            .to_string();
        let new_identity = repository.join("identities/db1.key");
        std::fs::write(&new_identity, &identity).expect("write identity");
        let inventory_path = repository.join("mesh.nix");
        let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
        let db1 = inventory.find("    db1 = {").expect("db1");
        let start = db1 + inventory[db1..].find("key = \"").expect("key") + "key = \"".len();
        let end = start + inventory[start..].find('"').expect("end of key");
        let changed = format!("{}{public}{}", &inventory[..start], &inventory[end..]);
        std::fs::write(&inventory_path, changed).expect("write mesh.nix");
        Rotation {
            temporary,
            repository,
            old,
            old_identity,
            new_identity,
        }
    }

    fn store(&self) -> BTreeMap<String, Vec<u8>> {
        files_under(&self.repository.join("secrets"))
    }

    fn reseal(&self, identity: &Path) -> Output {
        meshc(&[
            "secrets".as_ref(),
            "reseal".as_ref(),
            "db1".as_ref(),
            "--identity".as_ref(),
            identity.as_os_str(),
            "--repo".as_ref(),
            self.repository.as_os_str(),
        ])
    }

    /// `meshc diff` of the repository (compiled in memory) against the old build.
    fn diff(&self, format: &str) -> Output {
        meshc(&[
            "diff".as_ref(),
            "--repo".as_ref(),
            self.repository.as_os_str(),
            "--against".as_ref(),
            self.old.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ])
    }

    /// `meshc diff OLD NEW` of two build outputs.
    fn diff_builds(&self, new: &Path, format: &str) -> Output {
        meshc(&[
            "diff".as_ref(),
            self.old.as_os_str(),
            new.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ])
    }

    fn build(&self, name: &str) -> (PathBuf, Output) {
        let out = self.temporary.path().join(name);
        let output = support::build(&self.repository, &out);
        assert_built(&output);
        (out, output)
    }
}

fn text(output: &Output) -> String {
    assert!(
        output.status.success(),
        "meshc failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("UTF-8")
}

/// The `sealed` field change of the secret at `path` on `node` in a JSON diff.
fn sealed_field(json: &str, node: &str, path: &str) -> serde_json::Value {
    let diff: serde_json::Value = serde_json::from_str(json).expect("the diff is JSON");
    let node = diff["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["node"] == node)
        .unwrap_or_else(|| panic!("no node {node} in {json}"));
    let change = node["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["kind"] == "secret" && c["identity"] == path)
        .unwrap_or_else(|| panic!("no secret {path} in {json}"));
    change["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .find(|f| f["kind"] == "sealed")
        .cloned()
        .unwrap_or_else(|| panic!("no sealed field in {change}"))
}

fn consumer_names(field: &serde_json::Value) -> Vec<String> {
    field["consumers"]
        .as_array()
        .expect("consumers")
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["kind"].as_str().unwrap_or("?"),
                c["name"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

#[test]
fn a_key_change_is_a_new_value_named_with_what_reads_it() {
    let rotation = Rotation::new(false);
    // before building: the diff compiled in memory says the next build makes it
    let human = text(&rotation.diff("human"));
    assert!(
        human.contains("sealed: new value, made by the next `meshc build` (need)"),
        "{human}"
    );
    assert!(!human.contains("resealed"), "{human}");
    // after building: two builds, each with its value ids
    let (new, _) = rotation.build("new");
    let human = text(&rotation.diff_builds(&new, "human"));
    let superuser = human
        .split("~ secret /var/lib/mesh/postgres/superuser")
        .nth(1)
        .unwrap_or_else(|| panic!("the superuser is not in the diff: {human}"));
    let superuser = &superuser[..superuser.find("\n  ~").unwrap_or(superuser.len())];
    assert!(superuser.contains("sealed: new value (need)"), "{human}");
    assert!(
        superuser.contains("read by: container postgres, container postgres-provisioner"),
        "{human}"
    );
    assert!(
        superuser.contains("will not pick up the new one"),
        "{human}"
    );
    assert!(!human.contains("resealed"), "{human}");
    let json = text(&rotation.diff_builds(&new, "json"));
    let field = sealed_field(&json, "db1", "/var/lib/mesh/postgres/superuser");
    assert_eq!(field["resealed"], false, "{field}");
    assert_eq!(field["value"], "new", "{field}");
    assert_eq!(field["of"], "need", "{field}");
    assert_eq!(
        consumer_names(&field),
        ["container postgres", "container postgres-provisioner"]
    );
    assert!(
        field["warning"]
            .as_str()
            .is_some_and(|w| w.contains("old value"))
    );
    // the provider's checks of both logins were made anew too (db1 is their provider)
    let check = sealed_field(&json, "db1", "/var/lib/mesh/grants/postgres/app1_shop_db");
    assert_eq!(check["value"], "new", "{check}");
    assert_eq!(check["of"], "grant", "{check}");
    assert_eq!(consumer_names(&check), ["container postgres-provisioner"]);
}

/// Whether a path of the store holds one of db1's values (its need and the grants
/// it provides); the example's other nodes have values of their own.
fn of_db1(path: &str) -> bool {
    path.starts_with("needs/db1/") || path.starts_with("grants/db1/")
}

#[test]
fn a_reseal_keeps_every_value_and_the_diff_says_so() {
    let rotation = Rotation::new(false);
    let repository = &rotation.repository;
    let before_superuser = age_decrypt(&rotation.old_identity, &repository.join(SUPERUSER))
        .expect("the superuser opens with the old identity");
    let before_check = age_decrypt(&rotation.old_identity, &repository.join(APP1_CHECK))
        .expect("app1's check opens with the old identity");
    let ids_before: Vec<(String, Vec<u8>)> = rotation
        .store()
        .into_iter()
        .filter(|(path, _)| path.ends_with("value"))
        .collect();
    assert_eq!(
        ids_before.iter().filter(|(path, _)| of_db1(path)).count(),
        3,
        "{ids_before:?}"
    );

    let output = rotation.reseal(&rotation.old_identity);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("resealed 1 need(s) and 2 grant side(s) of node `db1`"),
        "{said}"
    );
    // the same plaintext, now opened by the new identity only
    assert_eq!(
        age_decrypt(&rotation.new_identity, &repository.join(SUPERUSER)).as_deref(),
        Some(before_superuser.as_slice())
    );
    assert_eq!(
        age_decrypt(&rotation.new_identity, &repository.join(APP1_CHECK)).as_deref(),
        Some(before_check.as_slice())
    );
    assert!(age_decrypt(&rotation.old_identity, &repository.join(SUPERUSER)).is_none());
    // and the same ids
    let ids_after: Vec<(String, Vec<u8>)> = rotation
        .store()
        .into_iter()
        .filter(|(path, _)| path.ends_with("value"))
        .collect();
    assert_eq!(ids_after, ids_before);

    let human = text(&rotation.diff("human"));
    assert!(
        human.contains("sealed: same value, resealed to a new key (need)"),
        "{human}"
    );
    assert!(!human.contains("new value"), "{human}");
    let json = text(&rotation.diff("json"));
    let field = sealed_field(&json, "db1", "/var/lib/mesh/postgres/superuser");
    assert_eq!(field["resealed"], true, "{field}");
    assert_eq!(field["value"], "same", "{field}");
    // the same value rewrites nothing on the node (the applier compares plaintexts), so
    // nothing that reads it restarts
    assert!(!human.contains("restarts"), "{human}");
    let diff: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(diff["summary"]["restart"], 0, "{json}");

    // the next build keeps them: nothing made, nothing in secrets/ changed
    let store = rotation.store();
    let (new, built) = rotation.build("new");
    assert!(
        !String::from_utf8_lossy(&built.stderr).contains("made "),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    assert_eq!(
        rotation.store(),
        store,
        "the build after a reseal changed secrets/"
    );
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(new.join("nodes/db1.json")).expect("plan"))
            .expect("JSON");
    let sealed = plan["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .find(|s| s["path"] == "/var/lib/mesh/postgres/superuser")
        .and_then(|s| s["sealed"].as_str())
        .expect("the superuser's shape")
        .to_string();
    let placed = rotation.temporary.path().join("placed.age");
    std::fs::write(&placed, sealed).expect("write");
    assert_eq!(
        age_decrypt(&rotation.new_identity, &placed).as_deref(),
        Some(before_superuser.as_slice()),
        "the plan's superuser is not the kept value"
    );
    let builds = text(&rotation.diff_builds(&new, "human"));
    assert!(
        builds.contains("sealed: same value, resealed to a new key (need)"),
        "{builds}"
    );
    // a second reseal has nothing left to do
    let again = rotation.reseal(&rotation.old_identity);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to reseal"));
}

#[test]
fn a_wrong_identity_changes_nothing() {
    let rotation = Rotation::new(false);
    let store = rotation.store();
    // another node's identity: a real key, not db1's
    let output = rotation.reseal(&rotation.repository.join("identities/app1.key"));
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("E322"), "{said}");
    assert!(said.contains("opens none of node `db1`'s values"), "{said}");
    assert_eq!(rotation.store(), store, "a wrong identity changed secrets/");
    // not an identity at all (a public key); its text is not echoed
    let public = rotation.temporary.path().join("db1.pub");
    std::fs::write(
        &public,
        "age1nzfw236mhh7rad302jmpqt63z6aekq7ujljapf0vauy597plp3eqj2q3re\n",
    )
    .expect("write");
    let output = rotation.reseal(&public);
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("E321"), "{said}");
    assert!(
        said.contains("line 1 is not an age X25519 identity"),
        "{said}"
    );
    // the help says what an identity looks like, and the blotting out of private
    // keys leaves it readable (it blotted out its `AGE-SECRET-KEY-1...`)
    assert!(
        said.contains("a line that starts `AGE-SECRET-KEY-`") && !said.contains("****"),
        "{said}"
    );
    assert_eq!(rotation.store(), store);
    // not a file at all: refused at once, not read for ever
    let output = rotation.reseal(Path::new("/dev/zero"));
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("E321") && said.contains("not a regular file"),
        "{said}"
    );
    assert_eq!(rotation.store(), store);
    // a FIFO: refused at once, not waited on for a writer (given 30 s, then killed)
    let fifo = rotation.temporary.path().join("identity.fifo");
    support::fifo_in_place_of(&fifo);
    let output = Command::new("timeout")
        .arg("30")
        .arg(MESHC)
        .args(["secrets", "reseal", "db1", "--identity"])
        .arg(&fifo)
        .arg("--repo")
        .arg(&rotation.repository)
        .output()
        .expect("meshc runs");
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "waited on the FIFO? {said}");
    assert!(
        said.contains("E321") && said.contains("not a regular file"),
        "{said}"
    );
    assert_eq!(rotation.store(), store);
    // a node that is not there
    let output = meshc(&[
        "secrets".as_ref(),
        "reseal".as_ref(),
        "db".as_ref(),
        "--identity".as_ref(),
        rotation.old_identity.as_os_str(),
        "--repo".as_ref(),
        rotation.repository.as_os_str(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("E323") && said.contains("db1"), "{said}");
    assert_eq!(rotation.store(), store);
}

#[test]
fn values_made_before_ids_were_kept_are_of_unknown_identity() {
    let rotation = Rotation::new(true);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(rotation.old.join("manifest.json")).expect("read"))
            .expect("JSON");
    assert_eq!(
        manifest["secrets"]["db1"]["/var/lib/mesh/postgres/superuser"]["value"],
        serde_json::Value::Null
    );
    let before =
        age_decrypt(&rotation.old_identity, &rotation.repository.join(SUPERUSER)).expect("opens");
    let output = rotation.reseal(&rotation.old_identity);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("got an id now"));
    assert_eq!(
        age_decrypt(&rotation.new_identity, &rotation.repository.join(SUPERUSER)),
        Some(before)
    );
    // the old build recorded no id: the diff cannot know, and says so
    let human = text(&rotation.diff("human"));
    assert!(
        human.contains("sealed: value identity unknown: made before ids were kept (need)"),
        "{human}"
    );
    assert!(!human.contains("same value"), "{human}");
    let field = sealed_field(
        &text(&rotation.diff("json")),
        "db1",
        "/var/lib/mesh/postgres/superuser",
    );
    assert_eq!(field["resealed"], false, "{field}");
    assert_eq!(field["value"], "unknown", "{field}");
}

/// A build that fails changes nothing in `secrets/`: with db1's key changed and an
/// unrelated mistake in the same edit, the failed build must not replace db1's
/// values (which only the old identity can still keep). Before, it wrote the new
/// values at once, said nothing of them, and the reseal found nothing to do.
#[test]
fn a_failed_build_makes_no_secret_and_the_reseal_still_keeps_them() {
    let rotation = Rotation::new(false);
    let repository = &rotation.repository;
    let store = rotation.store();
    let before_superuser = age_decrypt(&rotation.old_identity, &repository.join(SUPERUSER))
        .expect("the superuser opens with the old identity");
    let inventory_path = repository.join("mesh.nix");
    let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
    let broken = inventory.replace("port = 8080;", "port = \"8080\";");
    assert_ne!(broken, inventory, "the example has app2's port");
    std::fs::write(&inventory_path, &broken).expect("write mesh.nix");
    let out = rotation.temporary.path().join("failed");
    let output = support::build(repository, &out);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        !said.contains("made "),
        "a failed build says it made secrets:\n{said}"
    );
    assert_eq!(rotation.store(), store, "a failed build changed secrets/");

    std::fs::write(&inventory_path, &inventory).expect("write mesh.nix");
    let output = rotation.reseal(&rotation.old_identity);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("resealed 1 need(s)"), "{said}");
    assert_eq!(
        age_decrypt(&rotation.new_identity, &repository.join(SUPERUSER)).as_deref(),
        Some(before_superuser.as_slice()),
        "the value db1's database was made with is kept"
    );
}

/// A copy of db1's superuser in `secrets/needs/db1/DIRECTORY/`, sealed to another
/// node's key as far as its recipient says.
fn sealed_to_a_third_key(rotation: &Rotation, directory: &str) {
    let needs = rotation.repository.join("secrets/needs/db1");
    let copy = needs.join(directory);
    std::fs::create_dir_all(&copy).expect("mkdir");
    for suffix in ["age", "value"] {
        std::fs::copy(
            needs.join(format!("postgres/superuser.{suffix}")),
            copy.join(format!("superuser.{suffix}")),
        )
        .expect("copy");
    }
    std::fs::write(
        copy.join("superuser.recipient"),
        "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg\n",
    )
    .expect("write");
}

/// A path in `secrets/` is named by whoever commits there: the note that one is
/// sealed to another key shows it escaped, so a directory name cannot clear the
/// operator's screen or print a fake summary line. Before, it was printed raw.
#[test]
fn a_path_sealed_to_another_key_is_noted_escaped() {
    let rotation = Rotation::new(false);
    sealed_to_a_third_key(&rotation, "x\u{1b}[2J\nresealed 0 need(s): all fine.age");
    let output = rotation.reseal(&rotation.old_identity);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("is sealed to another key"), "{said}");
    assert!(!said.contains('\u{1b}'), "printed an escape raw: {said:?}");
    assert!(
        said.contains(r"x\u{1b}[2J\u{a}resealed 0 need(s): all fine.age"),
        "{said}"
    );
}

/// Running the reseal twice is harmless, as the book says, also when one of the
/// node's values is sealed to a third key: the second run finds the rest already
/// sealed to the current key, reseals nothing and names the third. Before, it
/// said E322 (the identity "opens none of the node's values") and exited 1.
#[test]
fn a_second_reseal_beside_a_value_of_a_third_key_changes_nothing_and_succeeds() {
    let rotation = Rotation::new(false);
    sealed_to_a_third_key(&rotation, "third");
    let first = rotation.reseal(&rotation.old_identity);
    let said = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{said}");
    assert!(said.contains("resealed 1 need(s)"), "{said}");
    let store = rotation.store();
    let again = rotation.reseal(&rotation.old_identity);
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{said}");
    assert!(!said.contains("E322"), "{said}");
    assert!(said.contains("nothing to reseal"), "{said}");
    assert!(said.contains("is sealed to another key"), "{said}");
    assert_eq!(
        rotation.store(),
        store,
        "the second reseal changed secrets/"
    );
}
