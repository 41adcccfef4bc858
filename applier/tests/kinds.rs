//! Each of the eight kinds in a real temporary root: created, changed, unchanged and
//! withdrawn (or kept), with modes and owners read back from the filesystem.

mod support;

use plan::Plan;
use support::*;

fn plan(shapes: Vec<plan::Shape>) -> Plan {
    Plan::new("db1", shapes)
}

#[test]
fn user_is_created_changed_unchanged_and_kept() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let report = apply_ok(
        &root,
        &plan(vec![user("web"), user_in_groups("app", &["web"])]),
        &keys,
    );
    assert_eq!(status_of(&report, "user", "app"), "created");
    let all = accounts(root.path());
    let app = all.get("app").expect("app exists");
    assert_eq!(app.0, "/var/lib/app");
    assert_eq!(app.1, "/usr/sbin/nologin");
    assert!(app.2.contains("web"), "{app:?}");
    assert!(
        root.uid_of("app").is_some_and(|uid| uid < 1000),
        "a system uid"
    );

    let report = apply_ok(
        &root,
        &plan(vec![user("web"), user_in_groups("app", &["web"])]),
        &keys,
    );
    assert_eq!(status_of(&report, "user", "app"), "unchanged");

    let changed = shape(plan::Resource::User(plan::User {
        name: "app".into(),
        system: true,
        home: Some("/srv/app".into()),
        shell: Some("/bin/sh".into()),
        groups: vec![],
    }));
    let report = apply_ok(&root, &plan(vec![user("web"), changed]), &keys);
    assert_eq!(status_of(&report, "user", "app"), "changed");
    let app = accounts_of(&root, "app");
    assert_eq!((app.0.as_str(), app.1.as_str()), ("/srv/app", "/bin/sh"));
    assert!(app.2.is_empty());

    let report = apply_ok(&root, &plan(vec![user("web")]), &keys);
    assert_eq!(status_of(&report, "user", "app"), "kept");
    assert!(
        accounts(root.path()).contains_key("app"),
        "withdrawn users are kept"
    );
}

fn accounts_of(
    root: &TestRoot,
    name: &str,
) -> (String, String, std::collections::BTreeSet<String>) {
    accounts(root.path())
        .get(name)
        .cloned()
        .expect("user exists")
}

#[test]
fn directory_is_created_changed_unchanged_and_kept_with_its_data() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let report = apply_ok(
        &root,
        &plan(vec![user("app"), directory("/srv/data", "app", "0750")]),
        &keys,
    );
    assert_eq!(status_of(&report, "directory", "/srv/data"), "created");
    let path = root.host("/srv/data");
    assert_eq!(mode_of(&path), 0o750);
    let uid = root.uid_of("app").expect("uid");
    assert_eq!(owner_of(&path).0, uid);

    let report = apply_ok(
        &root,
        &plan(vec![user("app"), directory("/srv/data", "app", "0750")]),
        &keys,
    );
    assert_eq!(status_of(&report, "directory", "/srv/data"), "unchanged");

    let report = apply_ok(
        &root,
        &plan(vec![user("app"), directory("/srv/data", "root", "0700")]),
        &keys,
    );
    assert_eq!(status_of(&report, "directory", "/srv/data"), "changed");
    assert_eq!(mode_of(&path), 0o700);
    assert_eq!(owner_of(&path), (0, 0));

    std::fs::write(path.join("precious"), "data").expect("write");
    let report = apply_ok(&root, &plan(vec![user("app")]), &keys);
    assert_eq!(status_of(&report, "directory", "/srv/data"), "kept");
    assert_eq!(
        std::fs::read_to_string(path.join("precious")).expect("kept"),
        "data"
    );
}

#[test]
fn file_is_created_changed_unchanged_and_withdrawn() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let base = || vec![user("app"), directory("/etc/app", "root", "0755")];
    let with = |shape: plan::Shape| {
        let mut shapes = base();
        shapes.push(shape);
        plan(shapes)
    };
    let report = apply_ok(
        &root,
        &with(file("/etc/app/app.conf", "port = 1\n", "app", "0640")),
        &keys,
    );
    assert_eq!(status_of(&report, "file", "/etc/app/app.conf"), "created");
    let path = root.host("/etc/app/app.conf");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "port = 1\n");
    assert_eq!(mode_of(&path), 0o640);
    let uid = root.uid_of("app").expect("uid");
    assert_eq!(owner_of(&path).0, uid);

    let report = apply_ok(
        &root,
        &with(file("/etc/app/app.conf", "port = 1\n", "app", "0640")),
        &keys,
    );
    assert_eq!(status_of(&report, "file", "/etc/app/app.conf"), "unchanged");
    assert_eq!(summary(&report, "unchanged"), 3);

    let report = apply_ok(
        &root,
        &with(file("/etc/app/app.conf", "port = 2\n", "app", "0640")),
        &keys,
    );
    assert_eq!(status_of(&report, "file", "/etc/app/app.conf"), "changed");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "port = 2\n");

    // a mode-only change fixes the mode in place
    let report = apply_ok(
        &root,
        &with(file("/etc/app/app.conf", "port = 2\n", "root", "0600")),
        &keys,
    );
    assert_eq!(status_of(&report, "file", "/etc/app/app.conf"), "changed");
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(owner_of(&path), (0, 0));

    // drift is repaired
    std::fs::write(&path, "edited by hand").expect("write");
    let report = apply_ok(
        &root,
        &with(file("/etc/app/app.conf", "port = 2\n", "root", "0600")),
        &keys,
    );
    assert_eq!(status_of(&report, "file", "/etc/app/app.conf"), "changed");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "port = 2\n");

    let report = apply_ok(&root, &plan(base()), &keys);
    assert_eq!(status_of(&report, "file", "/etc/app/app.conf"), "withdrawn");
    assert!(!path.exists());
    assert!(root.host("/etc/app").is_dir());
}

#[test]
fn binary_file_content_is_written_from_base64() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_ok(&root, &plan(vec![binary_file("/etc/blob", "AAH/")]), &keys);
    assert_eq!(
        std::fs::read(root.host("/etc/blob")).expect("read"),
        vec![0u8, 1, 255]
    );
}

#[test]
fn link_is_created_changed_unchanged_and_withdrawn() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let report = apply_ok(&root, &plan(vec![link("/etc/current", "/srv/v1")]), &keys);
    assert_eq!(status_of(&report, "link", "/etc/current"), "created");
    let path = root.host("/etc/current");
    assert_eq!(
        std::fs::read_link(&path).expect("link"),
        std::path::Path::new("/srv/v1")
    );
    let report = apply_ok(&root, &plan(vec![link("/etc/current", "/srv/v1")]), &keys);
    assert_eq!(status_of(&report, "link", "/etc/current"), "unchanged");
    let report = apply_ok(&root, &plan(vec![link("/etc/current", "v2")]), &keys);
    assert_eq!(status_of(&report, "link", "/etc/current"), "changed");
    assert_eq!(
        std::fs::read_link(&path).expect("link"),
        std::path::Path::new("v2")
    );
    let report = apply_ok(&root, &plan(vec![]), &keys);
    assert_eq!(status_of(&report, "link", "/etc/current"), "withdrawn");
    assert!(std::fs::symlink_metadata(&path).is_err());
}

#[test]
fn secret_is_decrypted_created_changed_unchanged_and_withdrawn() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let first = keys.seal(b"hunter2");
    let second = keys.seal(b"correct horse");
    let report = apply_ok(
        &root,
        &plan(vec![
            user("app"),
            secret("/etc/token", &first, "app", "0400"),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "secret", "/etc/token"), "created");
    let path = root.host("/etc/token");
    assert_eq!(std::fs::read(&path).expect("read"), b"hunter2");
    assert_eq!(mode_of(&path), 0o400);
    assert_eq!(owner_of(&path).0, root.uid_of("app").expect("uid"));

    // a reseal of the same plaintext changes the plan, not the file
    let resealed = keys.seal(b"hunter2");
    let report = apply_ok(
        &root,
        &plan(vec![
            user("app"),
            secret("/etc/token", &resealed, "app", "0400"),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "secret", "/etc/token"), "unchanged");

    let report = apply_ok(
        &root,
        &plan(vec![
            user("app"),
            secret("/etc/token", &second, "app", "0600"),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "secret", "/etc/token"), "changed");
    assert_eq!(std::fs::read(&path).expect("read"), b"correct horse");
    assert_eq!(mode_of(&path), 0o600);
    let text = serde_json::to_string(&report).expect("json");
    assert!(
        !text.contains("correct horse") && !text.contains("hunter2"),
        "no plaintext in the report"
    );
    let record = std::fs::read_to_string(root.host("/var/lib/mesh/applied.json")).expect("record");
    assert!(!record.contains("correct horse"));

    let report = apply_ok(&root, &plan(vec![user("app")]), &keys);
    assert_eq!(status_of(&report, "secret", "/etc/token"), "withdrawn");
    assert!(!path.exists());
}

#[test]
fn archive_is_unpacked_swapped_unchanged_and_kept() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let first = root.add_artifact(&tar_bytes(
        &[("index.html", "v1"), ("static/app.js", "js")],
        &[("latest", "index.html")],
    ));
    let second = root.add_artifact(&tar_bytes(&[("index.html", "v2")], &[]));
    let report = apply_ok(
        &root,
        &plan(vec![user("app"), archive("/srv/site", &first, "app")]),
        &keys,
    );
    assert_eq!(status_of(&report, "archive", "/srv/site"), "created");
    let path = root.host("/srv/site");
    assert_eq!(
        std::fs::read_to_string(path.join("index.html")).expect("read"),
        "v1"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("static/app.js")).expect("read"),
        "js"
    );
    assert_eq!(
        std::fs::read_link(path.join("latest")).expect("link"),
        std::path::Path::new("index.html")
    );
    let uid = root.uid_of("app").expect("uid");
    assert_eq!(owner_of(&path.join("static/app.js")).0, uid);
    assert_eq!(owner_of(&path).0, uid);
    assert_eq!(mode_of(&path.join("index.html")), 0o644);

    let report = apply_ok(
        &root,
        &plan(vec![user("app"), archive("/srv/site", &first, "app")]),
        &keys,
    );
    assert_eq!(status_of(&report, "archive", "/srv/site"), "unchanged");

    let report = apply_ok(
        &root,
        &plan(vec![user("app"), archive("/srv/site", &second, "app")]),
        &keys,
    );
    assert_eq!(status_of(&report, "archive", "/srv/site"), "changed");
    assert_eq!(
        std::fs::read_to_string(path.join("index.html")).expect("read"),
        "v2"
    );
    assert!(!path.join("static").exists(), "the old tree is swapped out");
    let leftovers: Vec<_> = std::fs::read_dir(root.host("/srv"))
        .expect("read")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(
        leftovers,
        vec![std::ffi::OsString::from("site")],
        "no staging left behind"
    );

    let report = apply_ok(&root, &plan(vec![user("app")]), &keys);
    assert_eq!(status_of(&report, "archive", "/srv/site"), "kept");
    assert_eq!(
        std::fs::read_to_string(path.join("index.html")).expect("kept"),
        "v2"
    );
}

#[test]
fn a_service_after_a_target_wants_it_and_only_orders_after_a_service() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let mut web = service("web", &["/usr/bin/web"], "app");
    if let plan::Resource::Service(mut fields) = web.resource().clone() {
        fields.after = vec![
            "postgres".to_string(),
            "network-online.target".to_string(),
            "time-sync.target".to_string(),
        ];
        web = shape(plan::Resource::Service(fields));
    }
    apply_ok(
        &root,
        &plan(vec![
            user("app"),
            service("postgres", &["/usr/bin/postgres"], "app"),
            web,
        ]),
        &keys,
    );
    let text = std::fs::read_to_string(root.host("/etc/systemd/system/web.service")).expect("unit");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&"After=postgres.service network-online.target time-sync.target"),
        "{text}"
    );
    assert!(
        lines.contains(&"Wants=network-online.target time-sync.target"),
        "{text}"
    );
    let text =
        std::fs::read_to_string(root.host("/etc/systemd/system/postgres.service")).expect("unit");
    assert!(!text.contains("Wants="), "nothing to want:\n{text}");
}

/// A service declared under the name of a unit the system had enabled already (the
/// distribution's `ssh.service`, its wants link to `/lib/systemd/system`): mesh's
/// unit file is withdrawn with the service, the distribution's link stays, and its
/// unit starts at boot again. Before, withdrawal removed the link (and the wants
/// directory it left empty): `ssh` was never started again.
#[test]
fn withdrawing_a_service_keeps_the_wants_link_mesh_did_not_make() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let wants = root.host("/etc/systemd/system/multi-user.target.wants/ssh.service");
    std::fs::create_dir_all(wants.parent().expect("a parent")).expect("mkdir");
    std::os::unix::fs::symlink("/lib/systemd/system/ssh.service", &wants).expect("a link");
    apply_ok(
        &root,
        &plan(vec![
            user("app"),
            service("ssh", &["/usr/sbin/sshd", "-D"], "app"),
        ]),
        &keys,
    );
    let report = apply_ok(&root, &plan(vec![user("app")]), &keys);
    assert_eq!(
        status_of(&report, "service", "ssh"),
        "withdrawn",
        "{report:#}"
    );
    assert!(!root.host("/etc/systemd/system/ssh.service").exists());
    assert_eq!(
        std::fs::read_link(&wants).expect("the distribution's link stays"),
        std::path::Path::new("/lib/systemd/system/ssh.service")
    );
}

#[test]
fn service_unit_is_written_enabled_unchanged_and_withdrawn() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let unit = root.host("/etc/systemd/system/app.service");
    let wants = root.host("/etc/systemd/system/multi-user.target.wants/app.service");
    let report = apply_ok(
        &root,
        &plan(vec![
            user("app"),
            service("app", &["/usr/bin/app", "--port", "80%"], "app"),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "service", "app"), "created");
    let text = std::fs::read_to_string(&unit).expect("unit");
    assert!(
        text.contains("ExecStart=/usr/bin/app \"--port\" \"80%%\"\n"),
        "{text}"
    );
    assert!(text.contains("User=app\n"));
    assert!(text.contains("WantedBy=multi-user.target\n"));
    assert_eq!(mode_of(&unit), 0o644);
    assert_eq!(
        std::fs::read_link(&wants).expect("enabled"),
        std::path::Path::new("/etc/systemd/system/app.service")
    );

    let report = apply_ok(
        &root,
        &plan(vec![
            user("app"),
            service("app", &["/usr/bin/app", "--port", "80%"], "app"),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "service", "app"), "unchanged");

    let report = apply_ok(
        &root,
        &plan(vec![
            user("app"),
            service("app", &["/usr/bin/app", "--port", "81"], "app"),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "service", "app"), "changed");
    assert!(
        std::fs::read_to_string(&unit)
            .expect("unit")
            .contains("\"81\"")
    );

    let report = apply_ok(&root, &plan(vec![user("app")]), &keys);
    assert_eq!(status_of(&report, "service", "app"), "withdrawn");
    assert!(!unit.exists());
    assert!(std::fs::symlink_metadata(&wants).is_err());
}

#[test]
fn container_quadlet_is_written_unchanged_and_withdrawn() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let quadlet = root.host("/etc/containers/systemd/cache.container");
    let shapes = vec![
        directory("/srv/cache", "root", "0755"),
        container("cache", &[("/srv/cache", "/data")]),
    ];
    let report = apply_ok(&root, &plan(shapes.clone()), &keys);
    assert_eq!(status_of(&report, "container", "cache"), "created");
    let text = std::fs::read_to_string(&quadlet).expect("quadlet");
    assert!(text.contains(&format!(
        "Image=registry.mesh.internal:5000/library/cache@sha256:{}\n",
        "b".repeat(64)
    )));
    assert!(text.contains("Volume=/srv/cache:/data\n"));
    assert!(text.contains("PublishPort=8080:80/tcp\n"));
    applier::container::check_quadlet("cache", &text).expect("our checker accepts what we write");

    let report = apply_ok(&root, &plan(shapes), &keys);
    assert_eq!(status_of(&report, "container", "cache"), "unchanged");

    let report = apply_ok(
        &root,
        &plan(vec![
            directory("/srv/cache", "root", "0755"),
            container("cache", &[]),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "container", "cache"), "changed");
    assert!(
        !std::fs::read_to_string(&quadlet)
            .expect("quadlet")
            .contains("Volume=")
    );

    let report = apply_ok(
        &root,
        &plan(vec![directory("/srv/cache", "root", "0755")]),
        &keys,
    );
    assert_eq!(status_of(&report, "container", "cache"), "withdrawn");
    assert!(!quadlet.exists());
}

#[test]
fn without_quadlet_a_root_apply_warns_that_only_our_checker_saw_the_units() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let with_container = plan(vec![
        directory("/srv/cache", "root", "0755"),
        container("cache", &[("/srv/cache", "/data")]),
    ]);
    let report = apply_ok(&root, &with_container, &keys);
    let warnings = report["warnings"]
        .as_array()
        .expect("warnings in the report");
    if applier::container::quadlet_installed() {
        assert!(warnings.is_empty(), "{report}");
    } else {
        assert_eq!(warnings.len(), 1, "{report}");
        assert_eq!(warnings[0]["code"], "E538");
        let message = warnings[0]["message"].as_str().unwrap();
        assert!(
            message.contains("`quadlet -dryrun` did not check"),
            "{message}"
        );
        // a warning, not a problem: the run succeeded and says nothing else went wrong
        assert_eq!(report["errors"].as_array().map(Vec::len), Some(0));
        assert_eq!(report["notes"].as_array().map(Vec::len), Some(0));
        // the human report says it too, as a warning
        let plans = tempfile::tempdir().unwrap();
        let path = write_plan(plans.path(), "plan.json", &with_container);
        let output = run_apply_as(&root, &path, &keys, "human", &[]);
        assert!(output.status.success());
        let human = String::from_utf8_lossy(&output.stdout);
        assert!(
            human.contains("warning[E538]: `quadlet -dryrun` did not check"),
            "{human}"
        );
    }
    // a plan without containers has nothing to warn about
    let report = apply_ok(
        &root,
        &plan(vec![directory("/srv/cache", "root", "0755")]),
        &keys,
    );
    assert_eq!(
        report["warnings"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
}

#[test]
fn quadlet_checker_refuses_what_quadlet_would_skip() {
    let good =
        "[Container]\nContainerName=x\nImage=r.io/a/b@sha256:".to_string() + &"c".repeat(64) + "\n";
    assert!(applier::container::check_quadlet("x", &good).is_ok());
    for bad in [
        good.replace("@sha256:", ":latest@"),
        good.clone() + "Bogus=1\n",
        good.clone() + "[Mystery]\n",
        good.clone() + "Volume=relative:/data\n",
        good.clone() + "PublishPort=http\n",
        good.clone() + "Exec=unquoted words\n",
        good.replace("ContainerName=x", "ContainerName=y"),
        good.clone() + "Environment=\"A=1\" \\\n",
    ] {
        assert!(
            applier::container::check_quadlet("x", &bad).is_err(),
            "accepted: {bad}"
        );
    }
}

#[test]
fn a_file_replaces_a_withdrawn_link_at_the_same_path() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_ok(&root, &plan(vec![link("/etc/motd", "/dev/null")]), &keys);
    let report = apply_ok(
        &root,
        &plan(vec![file("/etc/motd", "hello\n", "root", "0644")]),
        &keys,
    );
    assert_eq!(status_of(&report, "link", "/etc/motd"), "withdrawn");
    assert_eq!(status_of(&report, "file", "/etc/motd"), "changed");
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/motd")).expect("read"),
        "hello\n"
    );
}

/// An archive of 20,000 directories (200 declared 0750 with 99 declared 0700 children
/// each, and 100 more reached only through a file's path) unpacks with every directory
/// there, once, with its own mode and the shape's owner. Finishing the directories
/// searched a list for each one (quadratic: 14 s for this many with the old binary).
#[test]
fn an_archive_of_20000_directories_gets_every_mode_and_owner() {
    let root = TestRoot::in_memory();
    let keys = Keys::new();
    let mut builder = tar::Builder::new(Vec::new());
    let mut append = |path: String, kind: tar::EntryType, mode: u32, data: &[u8]| {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_entry_type(kind);
        builder.append_data(&mut header, path, data).unwrap();
    };
    for top in 0..200 {
        append(format!("d{top:03}"), tar::EntryType::Directory, 0o750, b"");
        for child in 0..99 {
            let path = format!("d{top:03}/c{child:02}");
            append(path, tar::EntryType::Directory, 0o700, b"");
        }
    }
    for implicit in 0..100 {
        let path = format!("i{implicit:03}/f");
        append(path, tar::EntryType::Regular, 0o640, b"x");
    }
    let artifact = root.add_artifact(&builder.into_inner().unwrap());
    let report = apply_ok(
        &root,
        &plan(vec![user("app"), archive("/srv/big", &artifact, "app")]),
        &keys,
    );
    assert_eq!(status_of(&report, "archive", "/srv/big"), "created");
    let uid = root.uid_of("app").expect("uid");
    let base = root.host("/srv/big");
    assert_eq!(mode_of(&base), 0o755);
    let mut directories = 0;
    for top in std::fs::read_dir(&base).unwrap() {
        let top = top.unwrap().path();
        let name = top.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(owner_of(&top).0, uid, "{name}");
        directories += 1;
        if name.starts_with('i') {
            assert_eq!(mode_of(&top), 0o755, "{name} is implicit");
            assert_eq!(mode_of(&top.join("f")), 0o640);
            continue;
        }
        assert_eq!(mode_of(&top), 0o750, "{name}");
        for child in std::fs::read_dir(&top).unwrap() {
            let child = child.unwrap().path();
            assert_eq!(mode_of(&child), 0o700, "{}", child.display());
            assert_eq!(owner_of(&child).0, uid, "{}", child.display());
            directories += 1;
        }
    }
    assert_eq!(directories, 20_100);
}
