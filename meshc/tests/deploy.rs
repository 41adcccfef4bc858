//! `meshc deploy` sends each node the plan its build made, byte for byte, and nothing
//! else: a plan file replaced between the build and the send, however
//! self-consistent, or a node the build's manifest does not list, is E408 before
//! anything is sent. `ssh` is a fake on PATH that records what it is sent and answers
//! as `mesh-apply --format json` does (`tests/tests/deploy.rs` deploys over a real
//! sshd). The moment between the build and the send is reached through the
//! inventory: `deploy` reads it again after building (for each node's `deploy`), and
//! here it imports a named pipe, whose writer makes the change when it is opened
//! after the build has written its manifest.

#[path = "support/repository.rs"]
mod support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::{MESHC, assert_built, assert_coded};

/// Age recipients of the example fleet (no secret is sealed to them here).
const KEY_APP1: &str = "age12xjejjsy5p5xj3y3hls5u4msyegj2jwdgyjaa4w6v6ylzu4lpdnsv7mdzg";
const KEY_APP2: &str = "age10z6pjstfg0ku6fywxvrn28qfxjve60w3cjzwrqfpwxxcy7fcw9eq8vzwav";

const MODULE: &str = r#"{ mesh, ... }: {
  description = "The message of the day";
  settings.text = mesh.option { type = mesh.types.str; default = "hello\n"; description = "The message"; };
  shapes = { settings, ... }: [ (mesh.file { path = "/etc/motd"; content = settings.text; }) ];
}
"#;

/// The inventory's `nodes`: `app1`, and `app2` when `with_app2`, each saying `motd`.
fn nodes(motd: &str, with_app2: bool) -> String {
    let node = |name: &str, key: &str| {
        format!(
            "  {name} = {{ key = \"{key}\"; address = \"127.0.0.1\"; modules = [ \"motd\" ]; settings.motd.text = {motd:?}; }};\n"
        )
    };
    let mut text = String::from("{\n");
    text.push_str(&node("app1", KEY_APP1));
    if with_app2 {
        text.push_str(&node("app2", KEY_APP2));
    }
    text.push_str("}\n");
    text
}

/// A repository in `directory` whose inventory takes its nodes from `nodes.nix`
/// (written as `nodes`, unless the test makes it a named pipe).
fn repository(directory: &Path, nodes: Option<&str>) -> PathBuf {
    let root = directory.to_path_buf();
    std::fs::create_dir_all(root.join("modules/motd")).expect("module directory");
    std::fs::write(root.join("modules/motd/module.nix"), MODULE).expect("module");
    std::fs::write(root.join("mesh.nix"), "{ nodes = import ./nodes.nix; }\n").expect("inventory");
    if let Some(nodes) = nodes {
        std::fs::write(root.join("nodes.nix"), nodes).expect("nodes");
    }
    root
}

/// A directory holding an `ssh` that appends its standard input to `$SENT` and
/// answers as `mesh-apply --format json` does after creating one file.
fn fake_ssh(directory: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = directory.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let ssh = bin.join("ssh");
    std::fs::write(
        &ssh,
        "#!/bin/sh\ncat >> \"$SENT\"\nprintf '%s\\n' '{\"errors\": [], \"summary\": {\"created\": 1}}'\n",
    )
    .expect("fake ssh");
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o755)).expect("mode");
    bin
}

/// The plans of another build of the same nodes (`app1` and `app2`) whose files say
/// `pwned`: each a valid plan, digest and all, and not the one deploy builds.
fn other_build(directory: &Path) -> PathBuf {
    let other = repository(&directory.join("other"), Some(&nodes("pwned\n", true)));
    let out = directory.join("other-build");
    assert_built(&support::build(&other, &out));
    out.join("nodes")
}

/// What one deploy did: its output, and the bytes `ssh` was sent (`None`: none).
struct Deployed {
    output: Output,
    sent: Option<Vec<u8>>,
    /// The build output.
    out: PathBuf,
    _temporary: tempfile::TempDir,
}

/// Runs `meshc deploy` of a repository of one node, `app1`, whose `nodes.nix` is a
/// named pipe. Each time it is opened it gives the nodes of `app1`; once the build
/// has written its manifest (so when deploy reads the inventory again, after
/// building and before sending), `change` is called with the build output first,
/// and `nodes_after` is given instead.
fn deploy_with_a_change_after_the_build(
    change: impl Fn(&Path) + Send + 'static,
    nodes_after: String,
) -> Deployed {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let root = repository(&temporary.path().join("repository"), None);
    let pipe = root.join("nodes.nix");
    let made = Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo failed");
    let out = temporary.path().join("build");
    let bin = fake_ssh(temporary.path());
    let sent = temporary.path().join("sent");
    let mut search = std::ffi::OsString::from(bin.as_os_str());
    search.push(":");
    search.push(std::env::var_os("PATH").unwrap_or_default());
    let stdout = temporary.path().join("stdout");
    let stderr = temporary.path().join("stderr");
    let mut child = Command::new(MESHC)
        .args(["deploy", "--workers", "1", "--repo"])
        .arg(&root)
        .arg("--out")
        .arg(&out)
        .env("PATH", search)
        .env("SENT", &sent)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .spawn()
        .expect("meshc runs");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (pipe, out, stop) = (pipe.clone(), out.clone(), Arc::clone(&stop));
        let before = nodes("hello\n", false);
        let meshc = child.id();
        std::thread::spawn(move || {
            loop {
                // blocks until a reader opens the pipe
                let mut writer = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&pipe)
                    .expect("the pipe opens");
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let text = if out.join("manifest.json").exists() {
                    change(&out);
                    &nodes_after
                } else {
                    &before
                };
                // a reader that went away is not this test's business
                let _ = writer.write_all(text.as_bytes());
                // the next open must wait for the next reader, not find this one
                // still reading (the two texts would run together): the reader,
                // which cannot be done before this end is closed, is seen holding
                // the pipe, then seen letting it go
                wait_until(|| holds(meshc, &pipe) != Some(false));
                drop(writer);
                wait_until(|| holds(meshc, &pipe) != Some(true));
            }
        })
    };
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("meshc is waited for") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!(
                "meshc deploy did not finish:\n{}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // a reader and writer at once opens without waiting, and lets the writer out
    stop.store(true, Ordering::SeqCst);
    let release = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&pipe)
        .expect("the pipe opens");
    writer.join().expect("the pipe's writer ends");
    drop(release);
    let output = Output {
        status,
        stdout: std::fs::read(&stdout).expect("stdout"),
        stderr: std::fs::read(&stderr).expect("stderr"),
    };
    Deployed {
        output,
        sent: std::fs::read(&sent).ok(),
        out,
        _temporary: temporary,
    }
}

/// Whether the process `pid` has the file `path` open (one of its descriptors is
/// it); `None` when the process is gone.
fn holds(pid: u32, path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let file = std::fs::metadata(path).ok()?;
    let descriptors = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(descriptors.flatten().any(|descriptor| {
        std::fs::metadata(descriptor.path())
            .is_ok_and(|open| (open.dev(), open.ino()) == (file.dev(), file.ino()))
    }))
}

/// Waits until `done` (at most a minute: a test must not hang).
fn wait_until(done: impl Fn() -> bool) {
    let started = Instant::now();
    while !done() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(1));
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

/// The control: nothing changes after the build, and `ssh` is sent exactly the plan
/// file the build wrote, which is the one its manifest records.
#[test]
fn deploy_sends_the_plan_its_build_wrote_byte_for_byte() {
    let deployed = deploy_with_a_change_after_the_build(|_| {}, nodes("hello\n", false));
    assert!(
        deployed.output.status.success(),
        "{}",
        text(&deployed.output)
    );
    let written = std::fs::read(deployed.out.join("nodes/app1.json")).expect("the plan");
    assert_eq!(deployed.sent.as_deref(), Some(written.as_slice()));
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(deployed.out.join("manifest.json")).expect("manifest"),
    )
    .expect("JSON");
    let digest = manifest["nodes"]["app1"].as_str().expect("app1's digest");
    assert!(
        String::from_utf8_lossy(&written).contains(digest),
        "the plan sent is not the one the manifest records"
    );
}

/// `nodes/app1.json` replaced after the build by another valid plan of `app1` (its
/// own digest right, not the manifest's) is E408, and `ssh` is never run. Before,
/// deploy read the file and sent it as it was.
#[test]
fn a_plan_replaced_after_the_build_is_e408_and_nothing_is_sent() {
    let scratch = tempfile::tempdir().expect("temporary directory");
    let forged = std::fs::read(other_build(scratch.path()).join("app1.json")).expect("a plan");
    let deployed = deploy_with_a_change_after_the_build(
        move |out| std::fs::write(out.join("nodes/app1.json"), &forged).expect("replaced"),
        nodes("hello\n", false),
    );
    assert_eq!(
        deployed.sent,
        None,
        "the replaced plan was sent: {}",
        text(&deployed.output)
    );
    assert_coded(&deployed.output, "E408", "a replaced plan");
    let stderr = String::from_utf8_lossy(&deployed.output.stderr);
    assert!(stderr.contains("nodes/app1.json"), "{stderr}");
    assert!(stderr.contains("nothing was sent"), "{stderr}");
}

/// A node the build's manifest does not list (the inventory gained `app2` after the
/// build, and a valid plan of `app2` lies in `nodes/`, as one left by an older build
/// would) is E408, and `ssh` is never run. Before, deploy sent whatever file it found.
#[test]
fn a_node_the_manifest_does_not_list_is_e408_and_nothing_is_sent() {
    let scratch = tempfile::tempdir().expect("temporary directory");
    let stray = std::fs::read(other_build(scratch.path()).join("app2.json")).expect("a plan");
    let deployed = deploy_with_a_change_after_the_build(
        move |out| std::fs::write(out.join("nodes/app2.json"), &stray).expect("planted"),
        nodes("hello\n", true),
    );
    assert_eq!(
        deployed.sent,
        None,
        "a plan was sent: {}",
        text(&deployed.output)
    );
    assert_coded(&deployed.output, "E408", "an unlisted node");
    let stderr = String::from_utf8_lossy(&deployed.output.stderr);
    assert!(stderr.contains("no plan for `app2`"), "{stderr}");
    assert!(stderr.contains("nothing was sent"), "{stderr}");
}
