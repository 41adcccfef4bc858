//! Helpers for the applier's tests: temporary roots with a minimal base system, age keys
//! made with the real `age-keygen`, plan builders, running the real `mesh-apply` binary,
//! and snapshots of a tree (type, mode, owner by name, content). No assertions here
//! beyond setup failing loudly.
#![allow(dead_code, clippy::new_without_default)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use plan::{
    Archive, Container, Directory, File, Link, Mount, Plan, Resource, Secret, Service, Shape,
    Source, User,
};
use serde_json::Value;

pub const BINARY: &str = env!("CARGO_BIN_EXE_mesh-apply");

/// An age identity made by `age-keygen`, with its recipient.
pub struct Keys {
    pub directory: tempfile::TempDir,
    pub identity: PathBuf,
    pub recipient: String,
}

impl Keys {
    pub fn new() -> Keys {
        let directory = tempfile::tempdir().unwrap();
        let identity = directory.path().join("identity.txt");
        let status = Command::new("age-keygen")
            .arg("-o")
            .arg(&identity)
            .stderr(Stdio::null())
            .status()
            .expect("age-keygen is installed (apt-get install age)");
        assert!(status.success());
        let output = Command::new("age-keygen")
            .arg("-y")
            .arg(&identity)
            .output()
            .unwrap();
        let recipient = String::from_utf8(output.stdout).unwrap().trim().to_string();
        Keys {
            directory,
            identity,
            recipient,
        }
    }

    /// The fixture's committed test identity, copied to a file of mode 0600 as
    /// mesh-apply requires (E541; git keeps no such mode).
    pub fn from_file(committed: &Path) -> Keys {
        let directory = tempfile::tempdir().unwrap();
        let identity = directory.path().join("identity.txt");
        std::fs::copy(committed, &identity).unwrap();
        std::fs::set_permissions(&identity, std::fs::Permissions::from_mode(0o600)).unwrap();
        let output = Command::new("age-keygen")
            .arg("-y")
            .arg(&identity)
            .output()
            .unwrap();
        Keys {
            directory,
            identity,
            recipient: String::from_utf8(output.stdout).unwrap().trim().to_string(),
        }
    }

    /// Seals `plaintext` to this identity with the real `age` CLI, ASCII-armored.
    pub fn seal(&self, plaintext: &[u8]) -> String {
        let mut child = Command::new("age")
            .args(["-a", "-r", &self.recipient])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("age is installed");
        child.stdin.take().unwrap().write_all(plaintext).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success());
        String::from_utf8(output.stdout).unwrap()
    }
}

/// A temporary root with a minimal base system: `etc/passwd`, `group`, `shadow`,
/// `gshadow` with root only, and the usual top-level directories.
pub struct TestRoot {
    pub directory: tempfile::TempDir,
    pub artifacts: PathBuf,
}

impl TestRoot {
    pub fn new() -> TestRoot {
        TestRoot::new_in(None)
    }

    /// In `/dev/shm` when there is one (fast, for tests that apply thousands of times).
    pub fn in_memory() -> TestRoot {
        let shm = Path::new("/dev/shm");
        TestRoot::new_in(if shm.is_dir() { Some(shm) } else { None })
    }

    /// In `parent` (a sealed directory the test owns, so anything written beside the
    /// root is seen).
    pub fn inside(parent: &Path) -> TestRoot {
        TestRoot::new_in(Some(parent))
    }

    fn new_in(parent: Option<&Path>) -> TestRoot {
        let directory = match parent {
            Some(parent) => tempfile::Builder::new()
                .prefix("mesh-root")
                .tempdir_in(parent)
                .unwrap(),
            None => tempfile::Builder::new()
                .prefix("mesh-root")
                .tempdir()
                .unwrap(),
        };
        let root = directory.path();
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).unwrap();
        for sub in [
            "etc",
            "srv",
            "opt",
            "var/lib",
            "usr/bin",
            "etc/systemd/system",
            "etc/containers/systemd",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").unwrap();
        std::fs::write(root.join("etc/group"), "root:x:0:\n").unwrap();
        std::fs::write(root.join("etc/shadow"), "root:*:19000:0:99999:7:::\n").unwrap();
        std::fs::write(root.join("etc/gshadow"), "root:*::\n").unwrap();
        for secret in ["etc/shadow", "etc/gshadow"] {
            std::fs::set_permissions(root.join(secret), std::fs::Permissions::from_mode(0o640))
                .unwrap();
        }
        let artifacts = directory.path().join("var/lib/mesh-artifacts");
        std::fs::create_dir_all(&artifacts).unwrap();
        TestRoot {
            directory,
            artifacts,
        }
    }

    pub fn path(&self) -> &Path {
        self.directory.path()
    }

    /// Where a node path is in this root.
    pub fn host(&self, node_path: &str) -> PathBuf {
        self.path().join(node_path.trim_start_matches('/'))
    }

    /// Stores an artifact and returns its file name and digest.
    pub fn add_artifact(&self, bytes: &[u8]) -> (String, String) {
        let digest = plan::sha256_digest(bytes);
        let name = format!("sha256-{}.tar", digest.trim_start_matches("sha256:"));
        std::fs::write(self.artifacts.join(&name), bytes).unwrap();
        (name, digest)
    }

    pub fn uid_of(&self, name: &str) -> Option<u32> {
        passwd_names(self.path())
            .into_iter()
            .find(|(_, user)| user == name)
            .map(|(uid, _)| uid)
    }
}

/// Writes a plan file beside nothing else and returns its path.
pub fn write_plan(directory: &Path, name: &str, plan: &Plan) -> PathBuf {
    let path = directory.join(name);
    std::fs::write(&path, plan.to_json_bytes()).unwrap();
    path
}

/// Runs `mesh-apply PLAN --identity KEY --root ROOT --artifacts DIR --format json EXTRA...`.
pub fn run_apply(
    root: &TestRoot,
    plan_path: &Path,
    keys: &Keys,
    extra: &[&str],
) -> (Output, Value) {
    let output = run_apply_as(root, plan_path, keys, "json", extra);
    let report = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output, report)
}

/// Runs `mesh-apply PLAN --identity KEY --root ROOT --artifacts DIR --format FORMAT EXTRA...`.
pub fn run_apply_as(
    root: &TestRoot,
    plan_path: &Path,
    keys: &Keys,
    format: &str,
    extra: &[&str],
) -> Output {
    apply_command(root, plan_path, keys, format)
        .args(extra)
        .output()
        .unwrap()
}

/// The command `mesh-apply PLAN --identity KEY --root ROOT --artifacts DIR --format
/// FORMAT`, for a test to add to (arguments, environment) and run.
pub fn apply_command(root: &TestRoot, plan_path: &Path, keys: &Keys, format: &str) -> Command {
    let mut command = Command::new(BINARY);
    command.arg(plan_path).arg("--identity").arg(&keys.identity);
    rooted(&mut command, root, format);
    command
}

/// Adds `--root ROOT --artifacts DIR --format FORMAT` to a `mesh-apply` command: the
/// test root every run of the applier here is confined to.
pub fn rooted<'c>(command: &'c mut Command, root: &TestRoot, format: &str) -> &'c mut Command {
    command
        .arg("--root")
        .arg(root.path())
        .arg("--artifacts")
        .arg(&root.artifacts)
        .args(["--format", format])
}

/// Applies and insists it succeeded; returns the report.
pub fn apply_ok(root: &TestRoot, plan: &Plan, keys: &Keys) -> Value {
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", plan);
    let (output, report) = run_apply(root, &path, keys, &[]);
    assert!(
        output.status.success(),
        "mesh-apply failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    report
}

/// Applies and insists it failed; returns the report.
pub fn apply_fails(root: &TestRoot, plan: &Plan, keys: &Keys) -> Value {
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", plan);
    let (output, report) = run_apply(root, &path, keys, &[]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    report
}

/// `status` of the result for `kind` `identity` in a JSON report.
pub fn status_of(report: &Value, kind: &str, identity: &str) -> String {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|result| result["kind"] == kind && result["identity"] == identity)
        .map(|result| result["status"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("no result for {kind} {identity} in {report:#}"))
}

pub fn summary(report: &Value, status: &str) -> u64 {
    report["summary"][status].as_u64().unwrap()
}

pub fn error_codes(report: &Value) -> Vec<String> {
    report["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|error| error["code"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

pub fn source(line: u32) -> Source {
    Source {
        file: "modules/app/module.nix".to_string(),
        line,
        column: 3,
    }
}

pub fn shape(resource: Resource) -> Shape {
    Shape::new(resource, "app", source(1))
}

pub fn user(name: &str) -> Shape {
    shape(Resource::User(User {
        name: name.to_string(),
        system: true,
        home: Some(format!("/var/lib/{name}")),
        shell: Some("/usr/sbin/nologin".to_string()),
        groups: vec![],
    }))
}

pub fn user_in_groups(name: &str, groups: &[&str]) -> Shape {
    shape(Resource::User(User {
        name: name.to_string(),
        system: true,
        home: Some(format!("/var/lib/{name}")),
        shell: Some("/usr/sbin/nologin".to_string()),
        groups: groups.iter().map(|group| group.to_string()).collect(),
    }))
}

pub fn directory(path: &str, owner: &str, mode: &str) -> Shape {
    shape(Resource::Directory(Directory {
        path: path.to_string(),
        owner: owner.to_string(),
        group: owner.to_string(),
        mode: mode.to_string(),
    }))
}

pub fn file(path: &str, content: &str, owner: &str, mode: &str) -> Shape {
    shape(Resource::File(File {
        path: path.to_string(),
        content: Some(content.to_string()),
        content_base64: None,
        owner: owner.to_string(),
        group: owner.to_string(),
        mode: mode.to_string(),
    }))
}

pub fn binary_file(path: &str, base64: &str) -> Shape {
    shape(Resource::File(File {
        path: path.to_string(),
        content: None,
        content_base64: Some(base64.to_string()),
        owner: "root".to_string(),
        group: "root".to_string(),
        mode: "0644".to_string(),
    }))
}

pub fn link(path: &str, target: &str) -> Shape {
    shape(Resource::Link(Link {
        path: path.to_string(),
        target: target.to_string(),
    }))
}

pub fn secret(path: &str, sealed: &str, owner: &str, mode: &str) -> Shape {
    shape(Resource::Secret(Secret {
        path: path.to_string(),
        sealed: sealed.to_string(),
        owner: owner.to_string(),
        group: owner.to_string(),
        mode: mode.to_string(),
    }))
}

pub fn archive(path: &str, artifact: &(String, String), owner: &str) -> Shape {
    shape(Resource::Archive(Archive {
        path: path.to_string(),
        artifact: artifact.0.clone(),
        artifact_digest: artifact.1.clone(),
        owner: owner.to_string(),
        group: owner.to_string(),
    }))
}

pub fn service(name: &str, exec: &[&str], user: &str) -> Shape {
    shape(Resource::Service(Service {
        name: name.to_string(),
        exec: exec.iter().map(|word| word.to_string()).collect(),
        user: user.to_string(),
        environment: BTreeMap::new(),
        after: vec![],
        restart: "on-failure".to_string(),
    }))
}

pub fn container(name: &str, mounts: &[(&str, &str)]) -> Shape {
    shape(Resource::Container(Container {
        name: name.to_string(),
        image: format!(
            "registry.mesh.internal:5000/library/{name}@sha256:{}",
            "b".repeat(64)
        ),
        command: vec![],
        environment: BTreeMap::new(),
        mounts: mounts
            .iter()
            .map(|(source, target)| Mount {
                source: source.to_string(),
                target: target.to_string(),
                read_only: false,
            })
            .collect(),
        ports: vec!["8080:80/tcp".to_string()],
        user: None,
    }))
}

/// An uncompressed tar of `(path, content)` files and `(path, target)` symlinks.
pub fn tar_bytes(files: &[(&str, &str)], symlinks: &[(&str, &str)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, path, content.as_bytes())
            .unwrap();
    }
    for (path, target) in symlinks {
        let mut header = tar::Header::new_ustar();
        header.set_size(0);
        header.set_mode(0o777);
        header.set_entry_type(tar::EntryType::Symlink);
        builder.append_link(&mut header, path, target).unwrap();
    }
    builder.into_inner().unwrap()
}

/// A tar whose single entry's name is written raw (so `../` can be forged).
pub fn forged_tar(name: &str, entry_type: tar::EntryType, link_target: &str) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    {
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(name.as_bytes());
        old.linkname[..link_target.len()].copy_from_slice(link_target.as_bytes());
    }
    header.set_size(if entry_type == tar::EntryType::Regular {
        4
    } else {
        0
    });
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_entry_type(entry_type);
    header.set_cksum();
    let mut bytes = header.as_bytes().to_vec();
    if entry_type == tar::EntryType::Regular {
        let mut block = [0u8; 512];
        block[..4].copy_from_slice(b"evil");
        bytes.extend_from_slice(&block);
    }
    bytes.extend_from_slice(&[0u8; 1024]);
    bytes
}

/// uid -> name pairs of a root's passwd.
fn passwd_names(root: &Path) -> Vec<(u32, String)> {
    read_table(&root.join("etc/passwd"))
}

fn group_names(root: &Path) -> Vec<(u32, String)> {
    read_table(&root.join("etc/group"))
}

fn read_table(path: &Path) -> Vec<(u32, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            Some((fields.get(2)?.parse().ok()?, fields.first()?.to_string()))
        })
        .collect()
}

/// One path of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: &'static str,
    pub mode: u32,
    pub owner: String,
    pub group: String,
    /// File content or link target.
    pub data: Vec<u8>,
}

/// Files that describe accounts; trees built in different orders compare them through
/// [`accounts`] instead (uids differ).
pub const ACCOUNT_FILES: &[&str] = &[
    "etc/passwd",
    "etc/passwd-",
    "etc/group",
    "etc/group-",
    "etc/shadow",
    "etc/shadow-",
    "etc/gshadow",
    "etc/gshadow-",
];

/// Every path under the root (relative), with owners by name in that root's own
/// passwd and group (uids may differ between roots), skipping `skip` (relative paths).
pub fn snapshot(root: &Path, skip: &[&str]) -> BTreeMap<String, Node> {
    let users: BTreeMap<u32, String> = passwd_names(root).into_iter().collect();
    let groups: BTreeMap<u32, String> = group_names(root).into_iter().collect();
    let mut nodes = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(directory) = stack.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if skip.contains(&relative.as_str()) {
                continue;
            }
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            let (kind, data) = if metadata.file_type().is_symlink() {
                (
                    "link",
                    std::fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                )
            } else if metadata.is_dir() {
                stack.push(path.clone());
                ("directory", Vec::new())
            } else {
                ("file", std::fs::read(&path).unwrap())
            };
            nodes.insert(
                relative,
                Node {
                    kind,
                    mode: metadata.mode() & 0o7777,
                    owner: users
                        .get(&metadata.uid())
                        .cloned()
                        .unwrap_or_else(|| metadata.uid().to_string()),
                    group: groups
                        .get(&metadata.gid())
                        .cloned()
                        .unwrap_or_else(|| metadata.gid().to_string()),
                    data,
                },
            );
        }
    }
    nodes
}

/// Users with their home, shell and supplementary groups, by name (not uid).
pub fn accounts(root: &Path) -> BTreeMap<String, (String, String, BTreeSet<String>)> {
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap_or_default();
    let group = std::fs::read_to_string(root.join("etc/group")).unwrap_or_default();
    let mut users = BTreeMap::new();
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        if fields.len() >= 7 {
            let name = fields[0].to_string();
            let memberships: BTreeSet<String> = group
                .lines()
                .filter_map(|line| {
                    let parts: Vec<&str> = line.split(':').collect();
                    let members = parts.get(3)?;
                    members
                        .split(',')
                        .any(|member| member == name)
                        .then(|| parts[0].to_string())
                })
                .collect();
            users.insert(
                name,
                (fields[5].to_string(), fields[6].to_string(), memberships),
            );
        }
    }
    users
}

pub fn mode_of(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

pub fn owner_of(path: &Path) -> (u32, u32) {
    let metadata = std::fs::symlink_metadata(path).unwrap();
    (metadata.uid(), metadata.gid())
}

/// Asserts two snapshots are equal, naming only the paths that differ.
pub fn assert_same_tree(left: &BTreeMap<String, Node>, right: &BTreeMap<String, Node>, what: &str) {
    let mut differences = Vec::new();
    for (path, node) in left {
        match right.get(path) {
            None => differences.push(format!("only in the first: {path}")),
            Some(other) if other != node => differences.push(format!(
                "differs: {path} ({} {:o} {}:{} {} bytes vs {} {:o} {}:{} {} bytes)",
                node.kind,
                node.mode,
                node.owner,
                node.group,
                node.data.len(),
                other.kind,
                other.mode,
                other.owner,
                other.group,
                other.data.len()
            )),
            Some(_) => {}
        }
    }
    for path in right.keys() {
        if !left.contains_key(path) {
            differences.push(format!("only in the second: {path}"));
        }
    }
    assert!(
        differences.is_empty(),
        "{what}:\n{}",
        differences.join("\n")
    );
}
