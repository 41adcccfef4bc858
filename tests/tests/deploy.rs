//! `meshc deploy` over real OpenSSH: each test starts its own `sshd` on 127.0.0.1 on a
//! free port, with a host key and a client key it generates, and deploys to nodes that
//! are separate roots on this machine (`deploy.root`), with the real `mesh-apply` as
//! `deploy.applier` and each node's identity at its `/var/lib/mesh/identity`. Fails
//! loudly when `sshd` is missing (`scripts/test` installs openssh-server).

use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tests::{base_root, binary};

fn meshc() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| binary("meshc", "meshc"))
}

fn mesh_apply() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| binary("applier", "mesh-apply"))
}

fn sshd_program() -> PathBuf {
    for candidate in ["/usr/sbin/sshd", "/usr/bin/sshd"] {
        if Path::new(candidate).is_file() {
            return PathBuf::from(candidate);
        }
    }
    panic!("sshd is not installed: run scripts/test, or apt-get install openssh-server");
}

fn run(program: &str, arguments: &[&str]) {
    let status = Command::new(program)
        .args(arguments)
        .stdout(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(status.success(), "{program} {arguments:?} failed");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `sshd` of the test's own, and a client configuration that trusts its host key.
struct Sshd {
    directory: tempfile::TempDir,
    child: Child,
    port: u16,
}

impl Sshd {
    fn start() -> Sshd {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path();
        let text = |name: &str| path.join(name).to_str().unwrap().to_string();
        run(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", &text("host_key")],
        );
        run(
            "ssh-keygen",
            &["-q", "-t", "ed25519", "-N", "", "-f", &text("client_key")],
        );
        std::fs::copy(path.join("client_key.pub"), path.join("authorized_keys")).unwrap();
        // sshd run by root insists on its privilege separation directory
        if nix_is_root() {
            std::fs::create_dir_all("/run/sshd").unwrap();
        }
        let port = free_port();
        std::fs::write(
            path.join("sshd_config"),
            format!(
                "ListenAddress 127.0.0.1\nPort {port}\nHostKey {}\nAuthorizedKeysFile {}\n\
                 StrictModes no\nPidFile {}\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin prohibit-password\n",
                text("host_key"),
                text("authorized_keys"),
                text("sshd.pid"),
            ),
        )
        .unwrap();
        let host_key = std::fs::read_to_string(path.join("host_key.pub")).unwrap();
        std::fs::write(
            path.join("known_hosts"),
            format!("[127.0.0.1]:{port} {host_key}"),
        )
        .unwrap();
        std::fs::write(path.join("empty_known_hosts"), "").unwrap();
        for (name, known_hosts) in [
            ("ssh_config", "known_hosts"),
            ("ssh_config_unknown_host", "empty_known_hosts"),
        ] {
            std::fs::write(
                path.join(name),
                format!(
                    "Host *\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  \
                     StrictHostKeyChecking yes\n  ConnectTimeout 5\n",
                    text("client_key"),
                    text(known_hosts),
                ),
            )
            .unwrap();
        }
        let log = std::fs::File::create(path.join("sshd.log")).unwrap();
        let child = Command::new(sshd_program())
            .args(["-D", "-e", "-f"])
            .arg(path.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sshd starts");
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "sshd did not listen: {}",
                std::fs::read_to_string(path.join("sshd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Sshd {
            directory,
            child,
            port,
        }
    }

    fn config(&self) -> PathBuf {
        self.directory.path().join("ssh_config")
    }

    fn config_with_unknown_host(&self) -> PathBuf {
        self.directory.path().join("ssh_config_unknown_host")
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|output| output.stdout.starts_with(b"0\n"))
        .unwrap_or(false)
}

/// A node's key pair, made with `age-keygen`.
fn age_key(directory: &Path) -> (PathBuf, String) {
    let identity = directory.join("identity");
    let status = Command::new("age-keygen")
        .arg("-o")
        .arg(&identity)
        .stderr(Stdio::null())
        .status()
        .expect("age-keygen is installed");
    assert!(status.success());
    let output = Command::new("age-keygen")
        .arg("-y")
        .arg(&identity)
        .output()
        .unwrap();
    (
        identity,
        String::from_utf8(output.stdout).unwrap().trim().to_string(),
    )
}

/// A node of the test fleet: its root on this machine, and what the inventory says.
struct Node {
    name: &'static str,
    root: tempfile::TempDir,
    recipient: String,
    tags: &'static [&'static str],
    port: u16,
    modules: &'static [&'static str],
    motd: String,
}

/// A repository and the nodes it deploys to.
struct Fleet {
    repository: tempfile::TempDir,
    nodes: Vec<Node>,
}

impl Fleet {
    fn new(sshd: &Sshd, nodes: &[(&'static str, &'static [&'static str])]) -> Fleet {
        let repository = tempfile::tempdir().unwrap();
        let modules = repository.path().join("modules");
        std::fs::create_dir_all(modules.join("motd")).unwrap();
        std::fs::create_dir_all(modules.join("app")).unwrap();
        std::fs::write(
            modules.join("motd/module.nix"),
            r#"{ mesh, ... }: {
  description = "The message of the day";
  settings.text = mesh.option { type = mesh.types.str; default = "hello\n"; description = "The message"; };
  shapes = { settings, ... }: [ (mesh.file { path = "/etc/motd"; content = settings.text; }) ];
}
"#,
        )
        .unwrap();
        std::fs::write(
            modules.join("app/module.nix"),
            r#"{ mesh, ... }: {
  description = "An application with a configuration file and a data directory";
  shapes = { ... }: [
    (mesh.file { path = "/etc/app.conf"; content = "port = 8080\n"; })
    (mesh.directory { path = "/srv/app-data"; })
  ];
}
"#,
        )
        .unwrap();
        let nodes = nodes
            .iter()
            .map(|(name, tags)| {
                let root = tempfile::tempdir().unwrap();
                base_root(root.path());
                std::fs::create_dir_all(root.path().join("var/lib/mesh")).unwrap();
                let (identity, recipient) = age_key(root.path().join("var/lib/mesh").as_path());
                assert!(identity.is_file());
                Node {
                    name,
                    root,
                    recipient,
                    tags,
                    port: sshd.port,
                    modules: &["motd", "app"],
                    motd: format!("hello from {name}\n"),
                }
            })
            .collect();
        let fleet = Fleet { repository, nodes };
        fleet.write_inventory();
        fleet
    }

    fn node(&mut self, name: &str) -> &mut Node {
        self.nodes
            .iter_mut()
            .find(|node| node.name == name)
            .unwrap()
    }

    fn root(&self, name: &str) -> &Path {
        self.nodes
            .iter()
            .find(|node| node.name == name)
            .unwrap()
            .root
            .path()
    }

    fn write_inventory(&self) {
        let mut text = String::from("{\n  nodes = {\n");
        for node in &self.nodes {
            let tags: Vec<String> = node.tags.iter().map(|tag| format!("{tag:?}")).collect();
            let modules: Vec<String> = node.modules.iter().map(|m| format!("{m:?}")).collect();
            text.push_str(&format!(
                "    {} = {{\n      key = {:?};\n      address = \"127.0.0.1\";\n      tags = [ {} ];\n      modules = [ {} ];\n      settings.motd.text = {:?};\n      deploy = {{ port = {}; user = \"root\"; root = {:?}; applier = {:?}; }};\n    }};\n",
                node.name,
                node.recipient,
                tags.join(" "),
                modules.join(" "),
                node.motd,
                node.port,
                node.root.path().to_str().unwrap(),
                mesh_apply().to_str().unwrap(),
            ));
        }
        text.push_str("  };\n}\n");
        std::fs::write(self.repository.path().join("mesh.nix"), text).unwrap();
    }

    fn deploy(&self, ssh_config: &Path, extra: &[&str]) -> Output {
        Command::new(meshc())
            .arg("deploy")
            .arg("--repo")
            .arg(self.repository.path())
            .arg("--ssh-config")
            .arg(ssh_config)
            .args(extra)
            .output()
            .unwrap()
    }
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn succeeded(output: &Output) {
    assert!(output.status.success(), "{}", text(output));
}

fn motd(root: &Path) -> Option<String> {
    std::fs::read_to_string(root.join("etc/motd")).ok()
}

/// Every path of a root (but the applier's state) with its type, mode and content.
fn tree(root: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
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
            if relative.starts_with("var/lib/mesh") {
                continue;
            }
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            let content = if metadata.is_dir() {
                stack.push(path.clone());
                Vec::new()
            } else {
                std::fs::read(&path).unwrap()
            };
            nodes.insert(relative, (metadata.mode(), content));
        }
    }
    nodes
}

/// The summary line of the node in the table on standard output.
fn summary_row(output: &Output, node: &str) -> String {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find(|line| line.split_whitespace().next() == Some(node))
        .unwrap_or_else(|| panic!("no row for {node}:\n{}", text(output)))
        .to_string()
}

#[test]
fn deploy_to_all_to_a_tag_and_to_one_node() {
    let sshd = Sshd::start();
    let mut fleet = Fleet::new(
        &sshd,
        &[
            ("web1", &["web", "eu"]),
            ("web2", &["web"]),
            ("db1", &["db"]),
        ],
    );
    let output = fleet.deploy(&sshd.config(), &[]);
    succeeded(&output);
    for name in ["web1", "web2", "db1"] {
        assert_eq!(
            motd(fleet.root(name)).as_deref(),
            Some(format!("hello from {name}\n").as_str())
        );
        assert!(
            summary_row(&output, name).contains(" ok "),
            "{}",
            text(&output)
        );
    }
    // piped, progress is plain lines on standard error
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("web1: deploying"), "{}", text(&output));
    assert!(stderr.contains("web1: ok"), "{}", text(&output));
    // the plan's generation is kept on the node
    assert!(
        fleet
            .root("db1")
            .join("var/lib/mesh/generations/1.json")
            .is_file()
    );

    for name in ["web1", "web2", "db1"] {
        fleet.node(name).motd = format!("second for {name}\n");
    }
    fleet.write_inventory();
    let output = fleet.deploy(&sshd.config(), &["--on", "@web"]);
    succeeded(&output);
    assert_eq!(
        motd(fleet.root("web1")).as_deref(),
        Some("second for web1\n")
    );
    assert_eq!(
        motd(fleet.root("web2")).as_deref(),
        Some("second for web2\n")
    );
    assert_eq!(motd(fleet.root("db1")).as_deref(), Some("hello from db1\n"));
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("db1"),
        "{}",
        text(&output)
    );

    let output = fleet.deploy(&sshd.config(), &["--on", "db1", "--parallel", "1"]);
    succeeded(&output);
    assert_eq!(motd(fleet.root("db1")).as_deref(), Some("second for db1\n"));
    assert!(
        summary_row(&output, "db1").contains("1 changed"),
        "{}",
        text(&output)
    );

    // a tag no node has is refused before anything is sent
    let output = fleet.deploy(&sshd.config(), &["--on", "@nowhere"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("E430"),
        "{}",
        text(&output)
    );
}

#[test]
fn an_unreachable_node_fails_while_the_others_apply() {
    let sshd = Sshd::start();
    let mut fleet = Fleet::new(&sshd, &[("app1", &[]), ("app2", &[]), ("lost", &[])]);
    fleet.node("lost").port = free_port();
    fleet.write_inventory();
    let output = fleet.deploy(&sshd.config(), &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        summary_row(&output, "lost").contains("failed"),
        "{}",
        text(&output)
    );
    assert!(
        summary_row(&output, "lost").contains("ssh failed"),
        "{}",
        text(&output)
    );
    for name in ["app1", "app2"] {
        assert!(
            summary_row(&output, name).contains(" ok "),
            "{}",
            text(&output)
        );
        assert!(motd(fleet.root(name)).is_some());
    }
    assert!(motd(fleet.root("lost")).is_none());
}

#[test]
fn an_unknown_host_key_is_refused() {
    let sshd = Sshd::start();
    let fleet = Fleet::new(&sshd, &[("app1", &[])]);
    let output = fleet.deploy(&sshd.config_with_unknown_host(), &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        summary_row(&output, "app1").contains("Host key verification failed"),
        "{}",
        text(&output)
    );
    assert!(motd(fleet.root("app1")).is_none());
}

#[test]
fn dry_run_changes_nothing() {
    let sshd = Sshd::start();
    let mut fleet = Fleet::new(&sshd, &[("app1", &[])]);
    succeeded(&fleet.deploy(&sshd.config(), &[]));
    let before = tree(fleet.root("app1"));
    let generations = std::fs::read_dir(fleet.root("app1").join("var/lib/mesh/generations"))
        .unwrap()
        .count();
    fleet.node("app1").motd = "changed\n".to_string();
    fleet.write_inventory();
    // nor here: the build `meshc diff` compares with stays as it was (the dry
    // run's plans are built into a scratch directory), and no secret is made
    let repository = fleet.repository.path().to_path_buf();
    let build_before = tree(&repository.join("build"));
    let secrets_before = repository
        .join("secrets")
        .exists()
        .then(|| tree(&repository.join("secrets")));
    let output = fleet.deploy(&sshd.config(), &["--dry-run"]);
    succeeded(&output);
    assert_eq!(
        tree(&repository.join("build")),
        build_before,
        "the dry run wrote build/"
    );
    assert_eq!(
        repository
            .join("secrets")
            .exists()
            .then(|| tree(&repository.join("secrets"))),
        secrets_before
    );
    assert!(
        summary_row(&output, "app1").contains("would: 1 changed"),
        "{}",
        text(&output)
    );
    assert_eq!(tree(fleet.root("app1")), before);
    let after = std::fs::read_dir(fleet.root("app1").join("var/lib/mesh/generations"))
        .unwrap()
        .count();
    assert_eq!(after, generations);
}

#[test]
fn two_generations_rolled_back_give_the_first_tree_byte_for_byte() {
    let sshd = Sshd::start();
    let mut fleet = Fleet::new(&sshd, &[("app1", &[]), ("app2", &[])]);
    succeeded(&fleet.deploy(&sshd.config(), &[]));
    let first: Vec<_> = ["app1", "app2"]
        .iter()
        .map(|name| tree(fleet.root(name)))
        .collect();
    for name in ["app1", "app2"] {
        fleet.node(name).motd = "the second generation\n".to_string();
    }
    fleet.write_inventory();
    succeeded(&fleet.deploy(&sshd.config(), &[]));
    assert_eq!(
        motd(fleet.root("app1")).as_deref(),
        Some("the second generation\n")
    );
    // a dry rollback shows what the rollback would change, and changes nothing
    let output = fleet.deploy(&sshd.config(), &["--rollback", "--dry-run", "--on", "app1"]);
    succeeded(&output);
    assert!(
        summary_row(&output, "app1").contains("would: 1 changed"),
        "{}",
        text(&output)
    );
    assert_eq!(
        motd(fleet.root("app1")).as_deref(),
        Some("the second generation\n")
    );
    let output = fleet.deploy(&sshd.config(), &["--rollback"]);
    succeeded(&output);
    for (name, first) in ["app1", "app2"].iter().zip(&first) {
        assert_eq!(&tree(fleet.root(name)), first, "{name}");
        assert!(
            fleet
                .root(name)
                .join("var/lib/mesh/generations/3.json")
                .is_file()
        );
    }
}

#[test]
fn a_rollback_of_a_withdrawal_restores_files_and_keeps_data() {
    let sshd = Sshd::start();
    let mut fleet = Fleet::new(&sshd, &[("app1", &[])]);
    succeeded(&fleet.deploy(&sshd.config(), &[]));
    let root = fleet.root("app1").to_path_buf();
    std::fs::write(root.join("srv/app-data/rows"), "precious").unwrap();
    fleet.node("app1").modules = &["motd"];
    fleet.write_inventory();
    let output = fleet.deploy(&sshd.config(), &[]);
    succeeded(&output);
    assert!(
        summary_row(&output, "app1").contains("1 withdrawn"),
        "{}",
        text(&output)
    );
    assert!(!root.join("etc/app.conf").exists());
    assert_eq!(
        std::fs::read(root.join("srv/app-data/rows")).unwrap(),
        b"precious"
    );
    let output = fleet.deploy(&sshd.config(), &["--rollback"]);
    succeeded(&output);
    assert_eq!(
        std::fs::read_to_string(root.join("etc/app.conf")).unwrap(),
        "port = 8080\n"
    );
    assert_eq!(
        std::fs::read(root.join("srv/app-data/rows")).unwrap(),
        b"precious"
    );
}

#[test]
fn a_hostile_deploy_root_runs_no_command_on_the_node() {
    let sshd = Sshd::start();
    let fleet = Fleet::new(&sshd, &[("app1", &[])]);
    let witness = fleet.repository.path().join("pwned");
    let inventory = std::fs::read_to_string(fleet.repository.path().join("mesh.nix")).unwrap();
    let hostile = format!("/nonexistent; touch {}", witness.display());
    let inventory = inventory.replace(
        &format!("root = {:?};", fleet.root("app1").to_str().unwrap()),
        &format!("root = {hostile:?};"),
    );
    assert!(inventory.contains("touch"));
    std::fs::write(fleet.repository.path().join("mesh.nix"), inventory).unwrap();
    let output = fleet.deploy(&sshd.config(), &[]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        summary_row(&output, "app1").contains("failed"),
        "{}",
        text(&output)
    );
    assert!(
        !witness.exists(),
        "the hostile root ran a command: {}",
        text(&output)
    );
}
