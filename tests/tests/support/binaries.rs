//! The binaries end-to-end tests drive (`meshc`, `mesh-apply`, `mesh-provision`),
//! built by cargo with the test's own profile, and what a consumer's plan hands it:
//! its credential, opened with the real `age` CLI. Must not hold a test of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate is inside the workspace")
        .to_path_buf()
}

pub struct Binaries {
    pub meshc: PathBuf,
    pub mesh_apply: PathBuf,
    pub mesh_provision: PathBuf,
}

/// `meshc`, `mesh-apply` and `mesh-provision`, built (or found up to date) by cargo:
/// this crate depends on none of their crates, so cargo does not hand them to us.
pub fn binaries() -> Binaries {
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(workspace_root()).args([
        "build",
        "--package",
        "meshc",
        "--bin",
        "meshc",
        "--package",
        "applier",
        "--bin",
        "mesh-apply",
        "--package",
        "provisioner",
        "--bin",
        "mesh-provision",
        "--message-format",
        "json",
    ]);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    let output = command.output().expect("cargo build runs");
    assert!(
        output.status.success(),
        "building the binaries failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let messages: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .collect();
    let executable = |name: &str| {
        messages
            .iter()
            .filter(|message| message["target"]["name"] == name)
            .find_map(|message| message["executable"].as_str().map(PathBuf::from))
            .unwrap_or_else(|| panic!("cargo reports no `{name}` executable"))
    };
    Binaries {
        meshc: executable("meshc"),
        mesh_apply: executable("mesh-apply"),
        mesh_provision: executable("mesh-provision"),
    }
}

pub fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{command:?} does not run: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The plaintext a consumer node's plan carries (sealed) at `path`, opened with the
/// standard age CLI and the node's identity.
pub fn consumer_password(plan: &Path, path: &str, identity: &Path, scratch: &Path) -> String {
    let plan: Value =
        serde_json::from_slice(&std::fs::read(plan).expect("read the plan")).expect("plan JSON");
    let sealed = plan["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .find(|shape| shape["kind"] == "secret" && shape["path"] == path)
        .unwrap_or_else(|| panic!("no secret at `{path}` in the plan"))["sealed"]
        .as_str()
        .expect("sealed text")
        .to_string();
    let sealed_file = scratch.join("credential.age");
    std::fs::write(&sealed_file, sealed).expect("write the sealed credential");
    let output = run(Command::new("age")
        .arg("-d")
        .arg("-i")
        .arg(identity)
        .arg(&sealed_file));
    String::from_utf8(output.stdout).expect("a password is text")
}
