//! Golden plans for the example repository: the real `meshc build` compiles
//! `examples/homelab` into a temporary directory, and every file it writes
//! (`manifest.json`, `nodes/*.json`) must equal `tests/golden/homelab/` byte for
//! byte, with no file missing or extra; but `.mesh-repository`, which must name the
//! repository the build was made from (and so differs between copies of it).
//!
//! Regenerate the golden files with `MESH_BLESS=1 cargo test -p meshc --test golden`
//! and review the diff like code: it is what every node of the example will apply.
//!
//! Also here: the same repository gives the same bytes from any directory, under
//! any absolute path, in any environment and with any number of workers
//! (DESIGN.md: nothing nondeterministic reaches a plan).

#[path = "support/repository.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use support::{MESHC, REPOSITORY_FILE, assert_built, build_files, copy_tree, files_under, homelab};

fn golden_directory() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/homelab")
}

fn show(files: &BTreeMap<String, Vec<u8>>) -> Vec<&str> {
    files.keys().map(String::as_str).collect()
}

/// Compares two builds file by file, naming the first file that differs.
fn assert_same_files(
    actual: &BTreeMap<String, Vec<u8>>,
    expected: &BTreeMap<String, Vec<u8>>,
    what: &str,
) {
    assert_eq!(show(actual), show(expected), "{what}: different files");
    for (name, bytes) in actual {
        assert!(
            expected[name] == *bytes,
            "{what}: `{name}` differs\n--- expected\n{}\n--- actual\n{}",
            String::from_utf8_lossy(&expected[name]),
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn homelab_plans_match_the_golden_files() {
    let out = tempfile::tempdir().expect("temporary directory");
    assert_built(&support::build(&homelab(), out.path()));
    let built = build_files(out.path(), &homelab());
    assert!(built.contains_key("manifest.json"), "{:?}", show(&built));
    assert!(built.keys().any(|name| name.starts_with("nodes/")));

    let golden = golden_directory();
    if std::env::var_os("MESH_BLESS").is_some() {
        if golden.exists() {
            std::fs::remove_dir_all(&golden).expect("old golden files removed");
        }
        copy_tree(out.path(), &golden);
        std::fs::remove_file(golden.join(REPOSITORY_FILE)).expect("no repository file in golden");
    }
    assert_same_files(&built, &files_under(&golden), "golden plans");
}

/// Builds a copy of the example at `repository` from `working_directory`, with
/// nothing in the environment but the variables given.
fn build_in_environment(
    repository: &Path,
    out: &Path,
    working_directory: &Path,
    environment: &[(&str, &str)],
) -> BTreeMap<String, Vec<u8>> {
    let output = Command::new(MESHC)
        .arg("build")
        .arg("--repo")
        .arg(repository)
        .arg("--out")
        .arg(out)
        .current_dir(working_directory)
        .env_clear()
        .envs(environment.iter().copied())
        .output()
        .expect("meshc runs");
    assert_built(&output);
    // `out` and the repository may be relative to the working directory
    build_files(
        &working_directory.join(out),
        &working_directory.join(repository),
    )
}

#[test]
fn homelab_builds_byte_identical_from_different_directories_and_environments() {
    let short = tempfile::tempdir().expect("temporary directory");
    let long = tempfile::tempdir().expect("temporary directory");
    let first_repository = short.path().join("r");
    let second_repository = long
        .path()
        .join("a-much-longer-directory-name/with/several/levels/homelab");
    copy_tree(&homelab(), &first_repository);
    copy_tree(&homelab(), &second_repository);
    assert_ne!(
        first_repository.as_os_str().len(),
        second_repository.as_os_str().len()
    );

    // from inside the repository, with absolute paths and one environment...
    let first = build_in_environment(
        &first_repository,
        &short.path().join("out"),
        &first_repository,
        &[
            ("HOME", "/root"),
            ("TZ", "UTC"),
            ("LANG", "C"),
            ("USER", "root"),
            ("MESH_WORKERS", "1"),
        ],
    );
    // ...and from an unrelated directory, with relative paths and another
    let second = build_in_environment(
        second_repository
            .strip_prefix(long.path())
            .expect("inside the temporary directory"),
        Path::new("out"),
        long.path(),
        &[
            ("HOME", "/home/somebody-else"),
            ("TZ", "Pacific/Kiritimati"),
            ("LANG", "de_DE.UTF-8"),
            ("LC_ALL", "tr_TR.UTF-8"),
            ("USER", "somebody-else"),
            ("MESH_WORKERS", "3"),
        ],
    );
    assert_same_files(&second, &first, "second build against the first");
    assert_same_files(&first, &files_under(&golden_directory()), "golden plans");
}

/// The example after one consumer is unassigned (app2 no longer runs `shop`): the
/// golden plans of `tests/golden/homelab-consumer-withdrawn/`. Its grant is gone from
/// db1's manifest and its credential from both nodes.
#[test]
fn homelab_with_a_withdrawn_consumer_matches_its_golden_files() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("homelab");
    copy_tree(&homelab(), &repository);
    let inventory_path = repository.join("mesh.nix");
    let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
    let app2_modules = "modules = [ \"web\" \"node-exporter\" \"shop\" ];";
    assert!(
        inventory.contains(app2_modules),
        "the example changed: app2's modules are no longer {app2_modules}"
    );
    let edited = inventory
        .replacen(app2_modules, "modules = [ \"web\" \"node-exporter\" ];", 1)
        .replacen("      settings.shop.database = \"db1\";\n", "", 1);
    assert_ne!(
        edited, inventory,
        "the example changed: app2 no longer runs `shop`"
    );
    std::fs::write(&inventory_path, edited).expect("write mesh.nix");
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    let built = build_files(&out, &repository);
    let golden =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/homelab-consumer-withdrawn");
    if std::env::var_os("MESH_BLESS").is_some() {
        if golden.exists() {
            std::fs::remove_dir_all(&golden).expect("old golden files removed");
        }
        copy_tree(&out, &golden);
        std::fs::remove_file(golden.join(REPOSITORY_FILE)).expect("no repository file in golden");
        return;
    }
    assert_same_files(
        &built,
        &files_under(&golden),
        "the example with app2's shop withdrawn",
    );
    let db1 = String::from_utf8(built["nodes/db1.json"].clone()).expect("UTF-8");
    assert!(!db1.contains("app2_shop_db"), "db1 still grants app2");
    assert!(db1.contains("app1_shop_db"));
}
