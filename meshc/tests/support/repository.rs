//! Helpers the `meshc build` tests share: copying a repository, reading a build
//! output back as bytes by relative path, and running the real binary. Included
//! with `#[path]` by each test file; it is not a test target of its own.

#![allow(dead_code)] // each test file uses a part of it

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `meshc` binary cargo built for these tests.
pub const MESHC: &str = env!("CARGO_BIN_EXE_meshc");

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the compiler crate is inside the workspace")
        .to_path_buf()
}

/// The example repository `examples/homelab`.
pub fn homelab() -> PathBuf {
    workspace().join("examples/homelab")
}

/// Copies the directory tree `from` to `to` (which must not exist yet).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let mut entries: Vec<_> = std::fs::read_dir(from)
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

/// Every file under `root`, by path relative to it (with `/`), with its bytes.
pub fn files_under(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    collect(root, root, &mut files);
    files
}

fn collect(root: &Path, directory: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("readable entry").path();
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            let relative = path
                .strip_prefix(root)
                .expect("under the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            files.insert(relative, bytes);
        }
    }
}

/// A copy of the example repository at `homelab` in a new temporary directory,
/// which lives as long as the returned handle; and the copy's path.
pub fn homelab_copy() -> (tempfile::TempDir, PathBuf) {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("homelab");
    copy_tree(&homelab(), &repository);
    (temporary, repository)
}

/// Runs `meshc build --repo REPO --out OUT` with the test's own environment.
pub fn build(repository: &Path, out: &Path) -> Output {
    build_with(repository, out, &[])
}

/// [`build`] with more arguments (`--locked`).
pub fn build_with(repository: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(MESHC)
        .arg("build")
        .arg("--repo")
        .arg(repository)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("meshc runs")
}

/// Panics with meshc's stderr unless the build succeeded.
pub fn assert_built(output: &Output) {
    assert!(
        output.status.success(),
        "meshc build failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Asserts that `output` failed with status 1, the diagnostic `code` and a help line
/// (not a bare `error:` message).
pub fn assert_coded(output: &Output, code: &str, what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
    assert!(stderr.contains(code), "{what}: no {code} in:\n{stderr}");
    assert!(
        stderr.contains("help: "),
        "{what}: no help line in:\n{stderr}"
    );
    assert!(
        !stderr.starts_with("error: "),
        "{what}: a bare message:\n{stderr}"
    );
}

/// The file of a build output that names its repository (`compiler::REPOSITORY_FILE`).
pub const REPOSITORY_FILE: &str = ".mesh-repository";

/// The build cache in an output (`compiler::cache::CACHE_FILE`): a record of what the
/// build read, with absolute paths; not part of what a build makes
/// (`tests/cache.rs` checks what it does).
pub const CACHE_FILE: &str = ".mesh-cache";

/// The files of the build output `out` that must be the same bytes wherever the
/// repository is (the manifest and the plans), after checking that the one file that
/// may not, `.mesh-repository`, names `repository`. The build cache is left out.
pub fn build_files(out: &Path, repository: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = files_under(out);
    files.remove(CACHE_FILE);
    let identity = files
        .remove(REPOSITORY_FILE)
        .unwrap_or_else(|| panic!("the build in {} has no {REPOSITORY_FILE}", out.display()));
    let identity: serde_json::Value =
        serde_json::from_slice(&identity).expect("the repository file is JSON");
    let canonical = repository.canonicalize().expect("the repository exists");
    assert_eq!(
        identity["root"].as_str(),
        Some(canonical.to_str().expect("a UTF-8 path")),
        "{REPOSITORY_FILE} names the repository the build was made from"
    );
    files
}

/// A URL of this machine where something accepts connections and never answers,
/// as a port another program took over after the broker stopped: a thread that
/// accepts each connection and holds it open, saying nothing, until the test ends.
/// `query` is appended to the URL (`?connection_timeout=...`, or empty).
pub fn silent_broker_url(query: &str) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for socket in listener.incoming().flatten() {
            held.push(socket);
        }
    });
    format!("amqp://guest:guest@127.0.0.1:{port}/%2f{query}")
}

/// A FIFO at `path` in place of what is there (if anything): what a hostile user
/// puts where meshc reads a file, to have a read by name wait for ever.
pub fn fifo_in_place_of(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => panic!("cannot remove `{}`: {error}", path.display()),
    }
    let made = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo `{}` failed", path.display());
}
