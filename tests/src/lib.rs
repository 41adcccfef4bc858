//! Helpers the end-to-end tests in `tests/tests/` share: the workspace's binaries
//! (built by cargo in the profile the tests run in), temporary roots with a minimal
//! base system, and copies of the example repository.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root directory.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is inside the workspace")
        .to_path_buf()
}

/// `cargo` in the workspace.
pub fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

/// Is this test binary a release build? Then the binaries it runs are built in the
/// release profile too, so a release test run compiles nothing twice.
fn release() -> bool {
    std::env::current_exe()
        .map(|path| path.components().any(|c| c.as_os_str() == "release"))
        .unwrap_or(false)
}

/// The executable `name` of workspace package `package`, built (or found up to date)
/// by cargo: this crate does not depend on the others, so cargo does not hand their
/// binaries to its tests.
pub fn binary(package: &str, name: &str) -> PathBuf {
    let mut command = cargo();
    command.args([
        "build",
        "--package",
        package,
        "--bin",
        name,
        "--message-format",
        "json",
    ]);
    if release() {
        command.arg("--release");
    }
    let output = command.output().expect("cargo build runs");
    assert!(
        output.status.success(),
        "building {name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == name)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| panic!("cargo reports no executable `{name}`"))
}

/// Copies the directory tree `from` to `to` (which must not exist yet).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let mut entries: Vec<PathBuf> = std::fs::read_dir(from)
        .unwrap_or_else(|e| panic!("{}: {e}", from.display()))
        .map(|entry| entry.expect("readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let target = to.join(path.file_name().expect("entries have names"));
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

/// Makes the node identity `path` mode 0600, as `mesh-apply` requires of an identity
/// (E541, like ssh of a private key): the example's committed keys are checked out
/// 0644, since git keeps no other mode.
pub fn make_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// [`make_private`] for every file of the directory `identities` (a copy of the
/// example's `identities/`).
pub fn make_identities_private(identities: &Path) {
    for entry in
        std::fs::read_dir(identities).unwrap_or_else(|e| panic!("{}: {e}", identities.display()))
    {
        let path = entry.expect("readable entry").path();
        if path.extension().is_some_and(|extension| extension == "key") {
            make_private(&path);
        }
    }
}

/// A root with the default base system of the inventory (see the book, "The base
/// system"): its directories, and `etc/passwd`, `group`, `shadow`, `gshadow` with its
/// users and groups.
pub fn base_root(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for directory in [
        "etc",
        "etc/systemd",
        "etc/systemd/system",
        "home",
        "opt",
        "root",
        "run",
        "srv",
        "tmp",
        "usr",
        "usr/bin",
        "usr/lib",
        "usr/local",
        "usr/local/bin",
        "usr/share",
        "var",
        "var/cache",
        "var/lib",
        "var/log",
        "var/tmp",
    ] {
        std::fs::create_dir_all(root.join(directory)).expect("create base directory");
    }
    std::fs::write(
        root.join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    )
    .expect("passwd");
    std::fs::write(
        root.join("etc/group"),
        "root:x:0:\nadm:x:4:\nusers:x:100:\nnogroup:x:65534:\n",
    )
    .expect("group");
    std::fs::write(
        root.join("etc/shadow"),
        "root:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\n",
    )
    .expect("shadow");
    std::fs::write(
        root.join("etc/gshadow"),
        "root:*::\nadm:*::\nusers:*::\nnogroup:*::\n",
    )
    .expect("gshadow");
    for secret in ["etc/shadow", "etc/gshadow"] {
        std::fs::set_permissions(root.join(secret), std::fs::Permissions::from_mode(0o640))
            .expect("chmod");
    }
}
