//! Artifacts: reproducible archives (the same directory gives the same bytes whatever
//! its files' times, modes, owners or the umask), `meshc artifacts build` recording
//! digests in `mesh.lock`, and archive shapes naming the built digest.

#[path = "support/repository.rs"]
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use support::MESHC;

fn write(path: &Path, content: &str, mode: u32) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
    std::fs::write(path, content).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn set_mtime(path: &Path, seconds: i64) {
    let status = Command::new("touch")
        .arg("-h")
        .arg("-d")
        .arg(format!("@{seconds}"))
        .arg(path)
        .status()
        .expect("touch runs");
    assert!(status.success());
}

fn chown(path: &Path, owner: &str) {
    let status = Command::new("chown")
        .arg("-h")
        .arg(owner)
        .arg(path)
        .status()
        .expect("chown runs");
    assert!(status.success());
}

#[test]
fn the_same_directory_gives_byte_identical_archives() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let first = temporary.path().join("first");
    let second = temporary.path().join("second/deeper");
    for (root, file_mode, time, owner) in [
        (&first, 0o600, 1_000_000, "0:0"),
        (&second, 0o664, 2_000_000_000, "1234:5678"),
    ] {
        write(&root.join("index.html"), "<h1>hello</h1>\n", file_mode);
        write(
            &root.join("bin/run"),
            "#!/bin/sh\necho run\n",
            file_mode | 0o111,
        );
        write(&root.join("assets/style.css"), "body {}\n", file_mode);
        std::os::unix::fs::symlink("index.html", root.join("default.html")).expect("symlink");
        for path in [
            "index.html",
            "bin/run",
            "assets/style.css",
            "default.html",
            "bin",
            "assets",
            "",
        ] {
            let path = root.join(path);
            chown(&path, owner);
            set_mtime(&path, time);
        }
    }
    let first_archive = archive::build(&first).expect("archive");
    let second_archive = archive::build(&second).expect("archive");
    assert_eq!(first_archive.bytes, second_archive.bytes);
    assert_eq!(first_archive.digest, second_archive.digest);
    assert_eq!(
        first_archive.file_name(),
        format!("sha256-{}.tar", &first_archive.digest["sha256:".len()..])
    );

    // the archive holds what it should, with numeric owner 0 and zero times
    let mut archive = tar::Archive::new(first_archive.bytes.as_slice());
    let mut listed = Vec::new();
    for entry in archive.entries().expect("entries") {
        let entry = entry.expect("entry");
        let header = entry.header();
        assert_eq!(header.uid().expect("uid"), 0);
        assert_eq!(header.gid().expect("gid"), 0);
        assert_eq!(header.mtime().expect("mtime"), 0);
        assert!(header.as_ustar().is_some(), "not a plain ustar header");
        listed.push((
            entry.path().expect("path").display().to_string(),
            header.mode().expect("mode"),
        ));
    }
    assert_eq!(
        listed,
        [
            ("assets/".to_string(), 0o755),
            ("assets/style.css".to_string(), 0o644),
            ("bin/".to_string(), 0o755),
            ("bin/run".to_string(), 0o755),
            ("default.html".to_string(), 0o777),
            ("index.html".to_string(), 0o644),
        ]
    );

    // any change of content changes the digest
    write(&second.join("index.html"), "<h1>hello!</h1>\n", 0o644);
    assert_ne!(
        archive::build(&second).expect("archive").digest,
        first_archive.digest
    );
}

#[test]
fn an_artifact_is_built_recorded_and_named_by_digest_in_the_plan() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    write(
        &repository.join("modules/site/public/index.html"),
        "<h1>site</h1>\n",
        0o644,
    );
    write(
        &repository.join("modules/site/module.nix"),
        r#"{ mesh, ... }:
{
  description = "a static site";
  artifacts.site = { directory = ./public; };
  shapes = { artifacts, ... }: [
    (mesh.directory { path = "/srv"; })
    (mesh.archive { path = "/srv/site"; artifact = artifacts.site; })
  ];
}
"#,
        0o644,
    );
    write(
        &repository.join("mesh.nix"),
        r#"{ nodes.web1 = { key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w"; modules = [ "site" ]; base.paths = [ ]; }; }
"#,
        0o644,
    );
    let out = temporary.path().join("out");
    let build = || {
        Command::new(MESHC)
            .arg("build")
            .arg("--repo")
            .arg(&repository)
            .arg("--out")
            .arg(&out)
            .output()
            .expect("meshc runs")
    };

    let unbuilt = build();
    assert!(!unbuilt.status.success());
    let stderr = String::from_utf8_lossy(&unbuilt.stderr);
    assert!(
        stderr.contains("E307") && stderr.contains("meshc artifacts build"),
        "{stderr}"
    );

    let store = temporary.path().join("store");
    let artifacts = Command::new(MESHC)
        .args(["artifacts", "build", "--repo"])
        .arg(&repository)
        .arg("--store")
        .arg(&store)
        .output()
        .expect("meshc runs");
    assert!(
        artifacts.status.success(),
        "{}",
        String::from_utf8_lossy(&artifacts.stderr)
    );
    let lock: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repository.join("mesh.lock")).expect("mesh.lock"))
            .expect("JSON");
    let digest = lock["artifacts"]["modules/site/public"]
        .as_str()
        .expect("artifact digest")
        .to_string();
    let stored = store.join(format!("sha256-{}.tar", &digest["sha256:".len()..]));
    assert_eq!(
        plan::sha256_digest(&std::fs::read(&stored).expect("stored archive")),
        digest
    );

    let built = build();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("nodes/web1.json")).expect("plan"))
            .expect("JSON");
    let archive = plan["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .find(|s| s["kind"] == "archive")
        .expect("archive shape");
    assert_eq!(archive["artifact_digest"], digest.as_str());
    assert_eq!(
        archive["artifact"],
        stored.file_name().expect("name").to_string_lossy().as_ref()
    );

    // editing the directory makes the recorded build stale
    write(
        &repository.join("modules/site/public/index.html"),
        "<h1>changed</h1>\n",
        0o644,
    );
    let stale = build();
    assert!(!stale.status.success());
    let stderr = String::from_utf8_lossy(&stale.stderr);
    assert!(stderr.contains("changed since it was built"), "{stderr}");
}

/// A repository with one module `site` whose artifact is `modules/site/public`.
fn site_repository(repository: &Path) {
    write(
        &repository.join("modules/site/public/index.html"),
        "<h1>site</h1>\n",
        0o644,
    );
    write(
        &repository.join("modules/site/module.nix"),
        r#"{ mesh, ... }:
{
  description = "a static site";
  artifacts.site = { directory = ./public; };
  shapes = { artifacts, ... }: [
    (mesh.directory { path = "/srv"; })
    (mesh.archive { path = "/srv/site"; artifact = artifacts.site; })
  ];
}
"#,
        0o644,
    );
    write(
        &repository.join("mesh.nix"),
        r#"{ nodes.web1 = { key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w"; modules = [ "site" ]; base.paths = [ ]; }; }
"#,
        0o644,
    );
}

fn artifacts_build(repository: &Path, extra: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(MESHC)
        .args(["artifacts", "build", "--repo"])
        .arg(repository)
        .args(extra)
        .output()
        .expect("meshc runs")
}

#[test]
fn archive_link_escaping_through_link_refused() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    site_repository(&repository);
    // lexically `esc` stays inside; through `up -> .` it leaves by three levels
    let public = repository.join("modules/site/public");
    std::os::unix::fs::symlink(".", public.join("up")).expect("symlink");
    std::os::unix::fs::symlink("up/up/up/../../..", public.join("esc")).expect("symlink");
    let store = temporary.path().join("store");
    let output = artifacts_build(&repository, &["--store".as_ref(), store.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E313"), "no E313:\n{stderr}");
    assert!(
        stderr.contains("`esc` -> `up/up/up/../../..`"),
        "the message names the link:\n{stderr}"
    );
    assert!(
        stderr.contains("modules/site/module.nix:4:"),
        "located at the declaration:\n{stderr}"
    );
    assert!(!store.exists(), "something was stored");
    assert!(!repository.join("mesh.lock").exists(), "mesh.lock written");
    let built = archive::build(&public);
    assert!(built.is_err(), "the archive code itself refuses it");
}

#[test]
fn repository_store_linked_out_of_the_repository_refused() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    site_repository(&repository);
    let elsewhere = temporary.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, repository.join(".mesh")).expect("symlink");
    let output = artifacts_build(&repository, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert!(
        stderr.contains("E315") && stderr.contains("help: "),
        "{stderr}"
    );
    assert!(!repository.join("mesh.lock").exists(), "mesh.lock written");
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("readable").count(),
        0,
        "an archive was written through `.mesh`"
    );
}

/// A plan names an artifact's directory as text (JSON): a directory whose name is
/// not UTF-8 is refused at its declaration, not archived under one name and
/// named in the plan by another.
#[test]
fn an_artifact_directory_whose_name_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    site_repository(&repository);
    let module = repository.join("modules/site");
    std::fs::rename(
        module.join("public"),
        module.join(std::ffi::OsStr::from_bytes(b"p\xff")),
    )
    .expect("rename");
    let source = std::fs::read_to_string(module.join("module.nix")).expect("module");
    let source = source.replace(
        "directory = ./public;",
        "directory = ./. + \"/${builtins.head (builtins.filter (n: n != \"module.nix\") (builtins.attrNames (builtins.readDir ./.)))}\";",
    );
    write(&module.join("module.nix"), &source, 0o644);
    let out = temporary.path().join("out");
    let output = Command::new(MESHC)
        .args(["build", "--repo"])
        .arg(&repository)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("whose name is not UTF-8") && stderr.contains("modules/site/module.nix:4:"),
        "the message says why, at the declaration:\n{stderr}"
    );
    assert!(!out.join("nodes").exists(), "a plan was written");
}

/// An artifact's directory is named by the repository: `meshc artifacts build`
/// prints it escaped, so that a name holding an escape sequence (here one that
/// clears the screen) or a line break is shown and not obeyed by the terminal.
/// Before, the `built DIR -> ARCHIVE` line printed it raw.
#[test]
fn an_artifact_directory_named_with_an_escape_sequence_is_printed_escaped() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    site_repository(&repository);
    let module = repository.join("modules/site");
    std::fs::rename(module.join("public"), module.join("p\u{1b}[2J\nx")).expect("rename");
    let source = std::fs::read_to_string(module.join("module.nix")).expect("module");
    let source = source.replace(
        "directory = ./public;",
        "directory = ./. + \"/${builtins.head (builtins.filter (n: n != \"module.nix\") (builtins.attrNames (builtins.readDir ./.)))}\";",
    );
    write(&module.join("module.nix"), &source, 0o644);
    let store = temporary.path().join("store");
    let output = artifacts_build(&repository, &["--store".as_ref(), store.as_os_str()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("built modules/site/p\\u{1b}[2J\\u{a}x -> "),
        "the directory is shown escaped:\n{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && stderr.lines().count() == 1,
        "the escape sequence or the line break reached the terminal:\n{stderr:?}"
    );
    let lock = std::fs::read_to_string(repository.join("mesh.lock")).expect("mesh.lock");
    assert!(
        lock.contains("modules/site/p\\u001b[2J\\nx"),
        "recorded under its real name:\n{lock}"
    );
}

/// A node that does not compile may declare artifacts the compilation does not
/// see, and `mesh.lock` keeps the digests of declared artifacts only: any error
/// but an artifact not built (or a mirror not pinned) stops the command before it
/// builds or writes anything, and says why. Before, an invalid declaration was
/// skipped in silence (exit 0) and its digest dropped from the lock.
#[test]
fn an_error_elsewhere_stops_the_build_and_keeps_the_lock() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    site_repository(&repository);
    let site =
        std::fs::read_to_string(repository.join("modules/site/module.nix")).expect("site module");
    write(
        &repository.join("modules/blog/public/index.html"),
        "<h1>blog</h1>\n",
        0o644,
    );
    write(
        &repository.join("modules/blog/module.nix"),
        &site.replace("site", "blog"),
        0o644,
    );
    let inventory = std::fs::read_to_string(repository.join("mesh.nix")).expect("inventory");
    let web2 = inventory
        .trim_end()
        .trim_end_matches('}')
        .replace("{ nodes.web1", "nodes.web2")
        .replace("\"site\"", "\"blog\"");
    write(
        &repository.join("mesh.nix"),
        &format!("{} {web2}}}\n", inventory.trim_end().trim_end_matches('}')),
        0o644,
    );
    let store = temporary.path().join("store");
    let first = artifacts_build(&repository, &["--store".as_ref(), store.as_os_str()]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let lock = std::fs::read(repository.join("mesh.lock")).expect("mesh.lock written");
    let stored = || std::fs::read_dir(&store).expect("store").count();
    assert_eq!(stored(), 2);
    assert!(
        String::from_utf8_lossy(&lock).contains("modules/blog/public"),
        "both artifacts recorded"
    );
    for broken in [
        // an invalid declaration (E303)
        "directory = 42;",
        // an evaluation error in the module
        "directory = throw \"not yet\";",
    ] {
        let module = repository.join("modules/blog/module.nix");
        write(
            &module,
            &site
                .replace("site", "blog")
                .replace("directory = ./public;", broken),
            0o644,
        );
        write(
            &repository.join("modules/site/public/index.html"),
            "<h1>new</h1>\n",
            0o644,
        );
        let output = artifacts_build(&repository, &["--store".as_ref(), store.as_os_str()]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{broken}: {stderr}");
        assert!(
            stderr.contains("modules/blog/module.nix:4:")
                && stderr.contains("`mesh.lock` not changed"),
            "{broken}: the error is reported at its place, and what was not done:\n{stderr}"
        );
        assert!(
            !stderr.contains("E307"),
            "{broken}: the unbuilt artifact is not an error here:\n{stderr}"
        );
        assert_eq!(
            std::fs::read(repository.join("mesh.lock")).expect("mesh.lock"),
            lock,
            "{broken}: mesh.lock changed"
        );
        assert_eq!(stored(), 2, "{broken}: the changed site was archived");
    }
}

/// `meshc artifacts build --remote` with a broker that does not answer is E440 with
/// a help line, and `mesh.lock` is not written. Before, a bare `error: ...` line.
#[test]
fn remote_build_without_a_broker_is_e440() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    site_repository(&repository);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    let url = format!("amqp://127.0.0.1:{port}/%2f");
    let output = artifacts_build(
        &repository,
        &["--remote".as_ref(), "--amqp".as_ref(), url.as_ref()],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E440") && stderr.contains("help: "),
        "{stderr}"
    );
    assert!(!repository.join("mesh.lock").exists(), "mesh.lock written");
}

/// `meshc artifacts build --remote` gives up connecting to a port that accepts the
/// connection and never answers the AMQP handshake at its `--timeout`, connecting
/// being part of its wait, with E440 naming the limit; `mesh.lock` is not written.
/// Before, it waited for ever, whatever `--timeout` said.
#[test]
fn remote_build_to_a_port_that_never_answers_gives_up_at_its_timeout() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repo");
    site_repository(&repository);
    let url = support::silent_broker_url("");
    let started = std::time::Instant::now();
    let output = artifacts_build(
        &repository,
        &[
            "--remote".as_ref(),
            "--amqp".as_ref(),
            url.as_ref(),
            "--timeout".as_ref(),
            "2".as_ref(),
        ],
    );
    let waited = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E440")
            && stderr.contains("no AMQP handshake within 2 s")
            && stderr.contains("help: the connection was given up after 2 s"),
        "{stderr}"
    );
    assert!(
        waited < std::time::Duration::from_secs(15),
        "gave up after {waited:?}"
    );
    assert!(!repository.join("mesh.lock").exists(), "mesh.lock written");
}
