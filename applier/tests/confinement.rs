//! Confinement: no plan, and no symlink already in the tree or swapped in while applying,
//! makes `mesh-apply --root` write, chown or chmod anything outside its root; archive
//! links that leave the archive once followed are refused; plan-supplied text reaches
//! the output escaped. Each test builds a sealed parent (`parent/root`, `parent/outside`)
//! and compares everything outside the root before and after.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use plan::{Plan, Resource, Source};
use support::*;

/// A sealed parent holding `root` (a test root) and `outside` (files owned by uid 12345
/// with mode 0600, so a stray chown or chmod shows).
struct Sealed {
    parent: tempfile::TempDir,
    root: TestRoot,
    outside: PathBuf,
}

impl Sealed {
    fn new() -> Sealed {
        let parent = tempfile::Builder::new()
            .prefix("mesh-sealed")
            .tempdir()
            .unwrap();
        let root = TestRoot::inside(parent.path());
        let outside = parent.path().join("outside");
        std::fs::create_dir_all(outside.join("system")).unwrap();
        for name in ["passwd", "group", "shadow", "gshadow", "victim"] {
            let path = outside.join(name);
            std::fs::write(&path, format!("{name}: not the root's\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            std::os::unix::fs::chown(&path, Some(12345), Some(12345)).unwrap();
        }
        Sealed {
            parent,
            root,
            outside,
        }
    }

    /// Everything in the parent but the root.
    fn outside_snapshot(&self) -> BTreeMap<String, Node> {
        let root_name = self.root.path().file_name().unwrap().to_str().unwrap();
        snapshot(self.parent.path(), &[root_name])
    }
}

fn plan(shapes: Vec<plan::Shape>) -> Plan {
    Plan::new("db1", shapes)
}

fn apply(
    root: &TestRoot,
    plan: &Plan,
    keys: &Keys,
    extra: &[&str],
) -> (std::process::Output, serde_json::Value) {
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", plan);
    run_apply(root, &path, keys, extra)
}

#[test]
fn a_plan_linking_the_unit_directory_out_of_the_root_writes_nothing_outside() {
    let sealed = Sealed::new();
    let keys = Keys::new();
    std::fs::remove_dir_all(sealed.root.host("/etc/systemd")).unwrap();
    let before = sealed.outside_snapshot();
    for target in [sealed.outside.to_str().unwrap(), "../../outside"] {
        let shapes = vec![
            link("/etc/systemd", target),
            service("web", &["/usr/bin/web"], "root"),
        ];
        let (_output, report) = apply(&sealed.root, &plan(shapes), &keys, &[]);
        assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
        // refused, or confined: the unit is then inside the root, wherever the link
        // leads when read as if the root were `/`
        let status = status_of(&report, "service", "web");
        assert!(status == "failed" || status == "created", "{report:#}");
        std::fs::remove_file(sealed.root.host("/etc/systemd")).unwrap();
    }
}

/// `/etc` a link out of the root (a plan may not make one, E503, but the host may
/// have one): the account tools are not run through it (E523), and the account
/// files it leads to are untouched.
#[test]
fn a_link_at_etc_out_of_the_root_leaves_the_account_files_outside_untouched() {
    let sealed = Sealed::new();
    let keys = Keys::new();
    std::fs::remove_dir_all(sealed.root.host("/etc")).unwrap();
    let before = sealed.outside_snapshot();
    for target in [sealed.outside.to_str().unwrap(), "../outside"] {
        let refused = apply_fails(&sealed.root, &plan(vec![link("/etc", target)]), &keys);
        assert!(
            error_codes(&refused).contains(&"E503".to_string()),
            "{refused:#}"
        );
        std::os::unix::fs::symlink(target, sealed.root.host("/etc")).unwrap();
        let report = apply_fails(&sealed.root, &plan(vec![user("app")]), &keys);
        assert!(
            error_codes(&report).contains(&"E523".to_string()),
            "{report:#}"
        );
        assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
        std::fs::remove_file(sealed.root.host("/etc")).unwrap();
    }
}

#[test]
fn a_symlink_at_var_keeps_the_record_and_the_lock_inside_the_root() {
    let sealed = Sealed::new();
    let keys = Keys::new();
    std::fs::remove_dir_all(sealed.root.host("/var")).unwrap();
    let before = sealed.outside_snapshot();
    let shapes = vec![file("/etc/motd", "hello\n", "root", "0644")];
    // absolute: read inside the root, where it leads nowhere: refused
    std::os::unix::fs::symlink(&sealed.outside, sealed.root.host("/var")).unwrap();
    let (output, report) = apply(&sealed.root, &plan(shapes.clone()), &keys, &[]);
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    assert!(
        error_codes(&report).contains(&"E517".to_string()),
        "{report:#}"
    );
    assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
    // relative and climbing: `..` stops at the root, so the state lands inside it
    std::fs::remove_file(sealed.root.host("/var")).unwrap();
    std::os::unix::fs::symlink("../outside", sealed.root.host("/var")).unwrap();
    let (output, report) = apply(&sealed.root, &plan(shapes.clone()), &keys, &[]);
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
    // once `ROOT/outside` exists, that is where the link leads
    std::fs::create_dir(sealed.root.host("/outside")).unwrap();
    apply_ok(&sealed.root, &plan(shapes), &keys);
    assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
    let inside = sealed.root.host("/outside/lib/mesh");
    assert!(inside.join("applied.json").is_file() && inside.join("lock").is_file());
}

#[test]
fn an_archive_link_that_leaves_once_its_links_are_followed_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let bytes = tar_bytes(
        &[("index.html", "x")],
        &[("up", "."), ("esc", "up/up/up/../../..")],
    );
    let artifact = root.add_artifact(&bytes);
    let report = apply_fails(
        &root,
        &plan(vec![archive("/srv/site", &artifact, "root")]),
        &keys,
    );
    assert!(
        error_codes(&report).contains(&"E515".to_string()),
        "{report:#}"
    );
    let message = report["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("`esc`") && message.contains("leaves the archive"),
        "{message}"
    );
    assert!(!root.host("/srv/site").exists());
    // links that stay inside once followed are still unpacked
    let bytes = tar_bytes(
        &[("a/b/index.html", "x")],
        &[
            ("up", "."),
            ("a/b/top", "../../up/a"),
            ("a/deep", "b/../b/index.html"),
        ],
    );
    let artifact = root.add_artifact(&bytes);
    apply_ok(
        &root,
        &plan(vec![archive("/srv/site", &artifact, "root")]),
        &keys,
    );
    assert_eq!(std::fs::read(root.host("/srv/site/a/deep")).unwrap(), b"x");
}

#[test]
fn an_archive_link_loop_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let bytes = tar_bytes(&[], &[("a", "b"), ("b", "a")]);
    let artifact = root.add_artifact(&bytes);
    let report = apply_fails(
        &root,
        &plan(vec![archive("/srv/site", &artifact, "root")]),
        &keys,
    );
    assert!(
        error_codes(&report).contains(&"E515".to_string()),
        "{report:#}"
    );
}

const HOSTILE: &str = "app\u{1b}[2J\u{1b}]0;owned\u{7}\r\n0 created, 0 changed, 0 unchanged, 0 withdrawn, 0 kept, 0 failed\n\u{9b}31m\u{202e}txt.exe";

fn hostile_shape(resource: Resource) -> plan::Shape {
    plan::Shape::new(
        resource,
        HOSTILE,
        Source {
            file: format!("modules/{HOSTILE}/module.nix"),
            line: 1,
            column: 1,
        },
    )
}

fn assert_no_raw_controls(text: &str, what: &str) {
    let raw: Vec<char> = text
        .chars()
        .filter(|character| {
            *character != '\n'
                && (character.is_control() || ('\u{202a}'..='\u{202e}').contains(character))
        })
        .collect();
    assert!(raw.is_empty(), "{what} has raw {raw:?}:\n{text}");
    assert!(
        !text.lines().any(|line| line.starts_with("0 created")),
        "{what} has a faked summary line:\n{text}"
    );
}

#[test]
fn hostile_module_and_source_are_printed_escaped() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let ok = hostile_shape(Resource::Directory(plan::Directory {
        path: "/srv/data".into(),
        owner: "root".into(),
        group: "root".into(),
        mode: "0755".into(),
    }));
    // an undeclared parent: an error header that names the module and the source
    let refused = hostile_shape(Resource::File(plan::File {
        path: "/nowhere/x".into(),
        content: Some("x".into()),
        content_base64: None,
        owner: "root".into(),
        group: "root".into(),
        mode: "0644".into(),
    }));
    for (shapes, expect_success) in [(vec![ok.clone()], true), (vec![ok, refused], false)] {
        let plans = tempfile::tempdir().unwrap();
        let path = write_plan(plans.path(), "plan.json", &plan(shapes));
        for format in ["human", "json"] {
            let output = Command::new(BINARY)
                .arg(&path)
                .arg("--identity")
                .arg(&keys.identity)
                .arg("--root")
                .arg(root.path())
                .args(["--format", format, "--dry-run"])
                .output()
                .unwrap();
            let stdout = String::from_utf8(output.stdout).unwrap();
            assert_no_raw_controls(&stdout, format);
            // plan validation may refuse control characters in `module` and `source`
            // (E503) before anything is printed of the shape; the output is escaped either way
            let refused_by_validation = stdout.contains("E503");
            if !refused_by_validation {
                assert_eq!(output.status.success(), expect_success, "{stdout}");
            }
            if format == "json" {
                // escaped on the wire, the same text once parsed
                let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
                let module = report["results"][0]["module"].as_str();
                let error_module = report["errors"][0]["shape"]["module"].as_str();
                assert!(
                    refused_by_validation
                        || module == Some(HOSTILE)
                        || error_module == Some(HOSTILE),
                    "{report:#}"
                );
            } else if !expect_success && !refused_by_validation {
                assert!(stdout.contains("\\u{1b}[2J"), "{stdout}");
            }
        }
    }
}

/// A plan of `directories` x `files` files under `/srv/race/dNN`, in `variant`.
fn race_plan(directories: usize, files: usize, variant: usize) -> Plan {
    let mut shapes = vec![directory("/srv/race", "root", "0755")];
    for number in 0..directories {
        let directory_path = format!("/srv/race/d{number:02}");
        shapes.push(directory(&directory_path, "root", "0755"));
        for file_number in 0..files {
            // consecutive variants differ in mode only, then in content too: both the
            // in-place chmod and the rewrite are raced
            let content = format!("variant {} of {file_number}\n", (variant / 2) % 2);
            let mode = ["0644", "0640", "0600"][variant % 3];
            shapes.push(file(
                &format!("{directory_path}/f{file_number:03}"),
                &content,
                "root",
                mode,
            ));
        }
    }
    plan(shapes)
}

#[test]
fn a_directory_swapped_for_a_symlink_while_applying_leads_nothing_outside() {
    let sealed = Sealed::new();
    let keys = Keys::new();
    const DIRECTORIES: usize = 8;
    apply_ok(&sealed.root, &race_plan(DIRECTORIES, 100, 0), &keys);
    let before = sealed.outside_snapshot();
    let race = sealed.root.host("/srv/race");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = {
        let stop = std::sync::Arc::clone(&stop);
        let race = race.clone();
        let outside = sealed.outside.clone();
        std::thread::spawn(move || {
            let mut round = 0usize;
            let mut swaps = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let name = format!("d{:02}", round % DIRECTORIES);
                let real = race.join(&name);
                let away = race.join(format!("{name}.away"));
                // relative (leads to parent/outside) and absolute (to `outside` by name)
                let target: &Path = if round.is_multiple_of(2) {
                    Path::new("../../../outside")
                } else {
                    &outside
                };
                // mostly real (so the checks before any change pass), swapped in bursts
                std::thread::sleep(std::time::Duration::from_micros(300));
                if std::fs::rename(&real, &away).is_ok() {
                    if std::os::unix::fs::symlink(target, &real).is_ok() {
                        swaps += 1;
                        std::thread::sleep(std::time::Duration::from_micros(150));
                        std::fs::remove_file(&real).unwrap();
                    }
                    std::fs::rename(&away, &real).unwrap();
                }
                round += 1;
            }
            swaps
        })
    };
    let started = std::time::Instant::now();
    let mut rounds = 0;
    while rounds < 12 && started.elapsed() < std::time::Duration::from_secs(6) {
        rounds += 1;
        let (_output, _report) = apply(
            &sealed.root,
            &race_plan(DIRECTORIES, 100, rounds),
            &keys,
            &[],
        );
        assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = racer.join().unwrap();
    assert!(swaps > 0 && rounds >= 3, "{swaps} swaps in {rounds} rounds");
    assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
}

mod random_links {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    /// Link targets that climb, stay, or name the outside absolutely and relatively.
    fn target(outside: String) -> impl Strategy<Value = String> {
        prop_oneof![
            Just("/".to_string()),
            Just("..".to_string()),
            Just("../..".to_string()),
            Just("../../..".to_string()),
            Just("../../outside".to_string()),
            Just("../../../outside".to_string()),
            Just("../../../../outside".to_string()),
            Just(outside.clone()),
            Just(format!("{outside}/system")),
            Just("/srv".to_string()),
            Just("/etc".to_string()),
            Just("a".to_string()),
            Just("../a/b".to_string()),
            Just("./b/../..".to_string()),
        ]
    }

    #[derive(Clone, Debug)]
    enum Wanted {
        Directory(String),
        File(String),
        Link(String, String),
        /// A service and a container: their units are written after the links.
        Service,
    }

    fn path() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("c")], 1..4)
                .prop_map(|parts| format!("/srv/{}", parts.join("/"))),
            1 => Just("/etc/systemd".to_string()),
            1 => Just("/etc/systemd/system".to_string()),
            1 => Just("/etc/containers".to_string()),
        ]
    }

    /// Links favour the unit directories, which units are written through later.
    fn link_path() -> impl Strategy<Value = String> {
        prop_oneof![
            2 => path(),
            1 => Just("/etc/systemd".to_string()),
            1 => Just("/etc/containers".to_string()),
        ]
    }

    fn wanted(outside: String) -> impl Strategy<Value = Wanted> {
        prop_oneof![
            1 => Just(Wanted::Service),
            1 => path().prop_map(Wanted::Directory),
            1 => path().prop_map(Wanted::File),
            2 => (link_path(), target(outside)).prop_map(|(path, target)| Wanted::Link(path, target)),
        ]
    }

    fn shapes_of(wanted: &[Wanted]) -> Vec<plan::Shape> {
        let mut seen = std::collections::HashSet::new();
        let mut shapes = Vec::new();
        for item in wanted {
            let (path, shape) = match item {
                Wanted::Directory(path) => (path, directory(path, "root", "0755")),
                Wanted::File(path) => (path, file(path, "x\n", "root", "0600")),
                Wanted::Link(path, target) => (path, link(path, target)),
                Wanted::Service => {
                    if seen.insert("units".to_string()) {
                        shapes.push(service("web", &["/usr/bin/web"], "root"));
                        shapes.push(container("cache", &[]));
                    }
                    continue;
                }
            };
            if seen.insert(path.clone()) {
                shapes.push(shape);
            }
        }
        shapes
    }

    #[test]
    fn random_plans_with_links_never_touch_anything_outside_the_root() {
        let keys = Keys::new();
        let mut runner = TestRunner::new(Config {
            cases: 40,
            failure_persistence: None,
            ..Config::default()
        });
        let probe = Sealed::new();
        let outside = probe.outside.to_str().unwrap().to_string();
        drop(probe);
        let plans = || proptest::collection::vec(wanted(outside.clone()), 1..10);
        let result = runner.run(&(plans(), plans()), |(first, second)| {
            let sealed = Sealed::new();
            // unit directories absent, so links may take their place
            std::fs::remove_dir_all(sealed.root.host("/etc/systemd")).unwrap();
            std::fs::remove_dir_all(sealed.root.host("/etc/containers")).unwrap();
            // the outside is named the same in every case, so absolute targets reach it
            std::fs::remove_dir_all(&sealed.outside).unwrap();
            let _ = std::fs::remove_dir_all(&outside);
            std::fs::create_dir_all(Path::new(&outside).join("system")).unwrap();
            std::fs::write(Path::new(&outside).join("victim"), "v").unwrap();
            std::os::unix::fs::symlink(&outside, &sealed.outside).unwrap();
            let before = snapshot(Path::new(&outside), &[]);
            let before_parent = sealed.outside_snapshot();
            for wanted in [&first, &second, &first] {
                let _ = apply(&sealed.root, &plan(shapes_of(wanted)), &keys, &[]);
                prop_assert_eq!(&snapshot(Path::new(&outside), &[]), &before);
                prop_assert_eq!(&sealed.outside_snapshot(), &before_parent);
            }
            Ok(())
        });
        if let Some(probe_parent) = Path::new(&outside).parent() {
            let _ = std::fs::remove_dir_all(probe_parent);
        }
        if let Err(error) = result {
            panic!("{error}");
        }
    }
}

#[test]
fn a_hard_link_to_a_file_outside_is_replaced_not_chowned_or_chmodded() {
    let sealed = Sealed::new();
    let keys = Keys::new();
    // a local user links a file of the outside into a directory the plan manages
    let victim = sealed.outside.join("victim");
    std::fs::hard_link(&victim, sealed.root.host("/srv/linked")).unwrap();
    let before = sealed.outside_snapshot();
    let content = std::fs::read_to_string(&victim).unwrap();
    // the same content: only owner and mode differ, which is changed in place otherwise
    let report = apply_ok(
        &sealed.root,
        &plan(vec![file("/srv/linked", &content, "root", "0644")]),
        &keys,
    );
    assert_eq!(status_of(&report, "file", "/srv/linked"), "changed");
    assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
    assert_eq!(mode_of(&sealed.root.host("/srv/linked")), 0o644);
    assert_eq!(owner_of(&sealed.root.host("/srv/linked")), (0, 0));
}

/// The tree's `login.defs` and `/etc/default/useradd` are the plan's to write, and
/// `useradd --prefix` reads them: `CREATE_MAIL_SPOOL=yes` with `MAIL_DIR` pointing out of
/// the root made it create a mail spool outside, owned by the new user. Creating a
/// user (system or not) with such defaults is refused (E540) before anything changes;
/// with the spool left off, the same `login.defs` creates nothing outside.
#[test]
fn useradd_defaults_from_the_plan_create_nothing_outside_the_root() {
    let sealed = Sealed::new();
    let keys = Keys::new();
    let before = sealed.outside_snapshot();
    let mail_dir = format!("/../../../../../../../../..{}", sealed.outside.display());
    let settings = |spool: &str| {
        vec![
            directory("/etc/default", "root", "0755"),
            file("/etc/default/useradd", spool, "root", "0644"),
            file(
                "/etc/login.defs",
                &format!("MAIL_DIR {mail_dir}\nUID_MIN 4242\nUID_MAX 4242\n"),
                "root",
                "0644",
            ),
        ]
    };
    let person = |name: &str| {
        shape(Resource::User(plan::User {
            name: name.to_string(),
            system: false,
            home: None,
            shell: None,
            groups: vec![],
        }))
    };
    for spool in [
        "CREATE_MAIL_SPOOL=yes\n",
        "SHELL=/bin/sh\ncreate=1\nCREATE_MAIL_SPOOL=Yes\n",
        &format!("# {}CREATE_MAIL_SPOOL=yes\n", "x".repeat(1100)),
    ] {
        apply_ok(&sealed.root, &plan(settings(spool)), &keys);
        for new_user in [person("evil"), user("daemonish")] {
            let mut shapes = settings(spool);
            shapes.push(new_user);
            let report = apply_fails(&sealed.root, &plan(shapes), &keys);
            assert_eq!(error_codes(&report), vec!["E540"], "{report:#}");
            assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
        }
        assert!(sealed.root.uid_of("evil").is_none());
    }
    // off (commented, or `no`): the user is made and nothing appears outside
    for spool in ["# CREATE_MAIL_SPOOL=yes\n", "CREATE_MAIL_SPOOL=no\n"] {
        // users are made before files: the defaults are in place first
        apply_ok(&sealed.root, &plan(settings(spool)), &keys);
        let mut shapes = settings(spool);
        shapes.push(person("fine"));
        apply_ok(&sealed.root, &plan(shapes), &keys);
        assert_same_tree(&before, &sealed.outside_snapshot(), "outside the root");
    }
    assert_eq!(sealed.root.uid_of("fine"), Some(4242));
}

/// The defaults must not change between mesh's check and `useradd`'s read: a file a
/// user owns, or that group or others may write, or that has a second name elsewhere,
/// could be rewritten to `CREATE_MAIL_SPOOL=yes` in between (red team, 10-e540-race.sh).
/// Each is refused with E540 before anything changes, `login.defs` as well as the
/// defaults file; root-owned, 0644 and a single name is applied.
#[test]
fn useradd_defaults_others_could_change_are_refused_before_anything_changes() {
    use std::os::unix::fs::PermissionsExt;
    let sealed = Sealed::new();
    let keys = Keys::new();
    let settings = vec![
        directory("/etc/default", "root", "0755"),
        file(
            "/etc/default/useradd",
            "CREATE_MAIL_SPOOL=no\n",
            "root",
            "0644",
        ),
        file(
            "/etc/login.defs",
            "UID_MIN 4242\nUID_MAX 4250\n",
            "root",
            "0644",
        ),
    ];
    apply_ok(&sealed.root, &plan(settings.clone()), &keys);
    let mut with_user = settings.clone();
    with_user.push(user("daemonish"));
    for path in ["/etc/default/useradd", "/etc/login.defs"] {
        let host = sealed.root.host(path);
        let other_name = sealed.root.host("/srv/second-name");
        let undo = |host: &std::path::Path| {
            let _ = std::fs::remove_file(&other_name);
            std::os::unix::fs::chown(host, Some(0), Some(0)).unwrap();
            std::fs::set_permissions(host, std::fs::Permissions::from_mode(0o644)).unwrap();
        };
        let owned = |host: &std::path::Path| {
            std::os::unix::fs::chown(host, Some(1000), Some(1000)).unwrap();
        };
        let group_writable = |host: &std::path::Path| {
            std::fs::set_permissions(host, std::fs::Permissions::from_mode(0o664)).unwrap();
        };
        let other_writable = |host: &std::path::Path| {
            std::fs::set_permissions(host, std::fs::Permissions::from_mode(0o646)).unwrap();
        };
        let linked = |host: &std::path::Path| {
            std::fs::create_dir_all(other_name.parent().unwrap()).unwrap();
            std::fs::hard_link(host, &other_name).unwrap();
        };
        let changes: [&dyn Fn(&std::path::Path); 4] =
            [&owned, &group_writable, &other_writable, &linked];
        for change in changes {
            change(&host);
            let before = std::fs::read(&host).unwrap();
            let report = apply_fails(&sealed.root, &plan(with_user.clone()), &keys);
            assert_eq!(error_codes(&report), vec!["E540"], "{path}: {report:#}");
            assert!(report.to_string().contains(path), "{report:#}");
            assert!(sealed.root.uid_of("daemonish").is_none(), "{path}");
            assert_eq!(std::fs::read(&host).unwrap(), before, "{path} unchanged");
            undo(&host);
        }
    }
    apply_ok(&sealed.root, &plan(with_user), &keys);
    assert!(sealed.root.uid_of("daemonish").is_some());
}

/// `mesh-apply` with `tools` first on its PATH (a `useradd` standing in for the real
/// one, to act at a known point of the run).
fn apply_with_tools(
    root: &TestRoot,
    plan: &Plan,
    keys: &Keys,
    tools: &Path,
) -> (std::process::Output, serde_json::Value) {
    let plans = tempfile::tempdir().unwrap();
    let path = write_plan(plans.path(), "plan.json", plan);
    let search = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = apply_command(root, &path, keys, "json")
        .env("PATH", &search)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
    (output, report)
}

/// Every error of `report` is E510 (a link not followed), and it names `link`.
fn assert_link_refused(report: &serde_json::Value, link: &str) {
    assert!(
        error_codes(report).iter().all(|code| code == "E510"),
        "{report:#}"
    );
    assert!(report.to_string().contains(link), "{report:#}");
}

/// The root's account files name root and alice (uid and gid 1000), the local user
/// of the red team's cases.
fn with_alice(root: &TestRoot) {
    std::fs::write(
        root.host("/etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n",
    )
    .unwrap();
    std::fs::write(root.host("/etc/group"), "root:x:0:\nalice:x:1000:\n").unwrap();
}

/// The directories `paths` in the root, made if absent, each alice's (uid and gid
/// 1000).
fn alices(root: &TestRoot, paths: &[&str]) {
    for path in paths {
        std::fs::create_dir_all(root.host(path)).unwrap();
        std::os::unix::fs::chown(root.host(path), Some(1000), Some(1000)).unwrap();
    }
}

/// [`with_alice`], and bob (uid and gid 1001).
fn with_alice_and_bob(root: &TestRoot) {
    std::fs::write(
        root.host("/etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:1001::/home/bob:/bin/sh\n",
    )
    .unwrap();
    std::fs::write(
        root.host("/etc/group"),
        "root:x:0:\nalice:x:1000:\nbob:x:1001:\n",
    )
    .unwrap();
}

/// Red team: under `--root`, a symlink in the tree was followed wherever it was, as in a
/// chroot. alice (uid 1000) owns `ROOT/home/alice`; after mesh's checks, while it made
/// a user, she swapped `/home/alice/data` (hers) for a link to `/usr`, and the
/// directory the plan then made for her, `/home/alice/data/share`, was
/// `ROOT/usr/share`, chowned to her. A symlink in a directory someone other than root
/// owns or may write is now refused (E510) and nothing of the root changes hands.
#[test]
fn a_users_directory_swapped_for_a_symlink_gives_her_no_other_directory_of_the_root() {
    let root = TestRoot::new();
    let keys = Keys::new();
    with_alice(&root);
    alices(&root, &["/home/alice", "/home/alice/data"]);
    std::fs::create_dir_all(root.host("/usr/share/doc")).unwrap();
    let usr_before = snapshot(&root.host("/usr"), &[]);
    // alice's swap, as alice, when mesh-apply runs `useradd` for the plan's new user:
    // after every check, before the directories are made
    let useradd = ["/usr/sbin/useradd", "/sbin/useradd"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("useradd");
    let tools = tempfile::tempdir().unwrap();
    let data = root.host("/home/alice/data");
    std::fs::write(
        tools.path().join("useradd"),
        format!(
            "#!/bin/sh\nsetpriv --reuid=1000 --regid=1000 --clear-groups sh -c 'mv {data} {data}.away && ln -s /usr {data}' || exit 1\nexec {useradd} \"$@\"\n",
            data = data.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        tools.path().join("useradd"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let shapes = vec![
        user("bob"),
        directory("/home/alice/data/share", "alice", "0755"),
        file("/home/alice/data/share/notes", "hers\n", "alice", "0644"),
    ];
    let (output, report) = apply_with_tools(&root, &plan(shapes), &keys, tools.path());
    // the swap happened, by alice, after the checks
    assert!(
        std::fs::symlink_metadata(&data).unwrap().is_symlink(),
        "{report:#}"
    );
    assert!(root.uid_of("bob").is_some(), "{report:#}");
    // the root's `/usr/share` is still root's, and nothing in `/usr` changed
    assert_eq!(owner_of(&root.host("/usr/share")), (0, 0), "{report:#}");
    assert_same_tree(&usr_before, &snapshot(&root.host("/usr"), &[]), "/usr");
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    assert_eq!(
        status_of(&report, "directory", "/home/alice/data/share"),
        "failed"
    );
    assert_link_refused(&report, "/home/alice/data` is a symlink in `/home/alice`");
}

/// Red team: under `--root`, a directory a plan makes root's (here alice's `bin`,
/// chowned to root in place) still holds the links alice made there, and the walk
/// trusted any link in a directory only root may write: her `alt -> /etc` then sent
/// the next plan's `/srv/alice/bin/alt/ssh`, made hers, to the root's `/etc/ssh`.
/// (In her home that plan is now refused sooner, E524; her `/srv/bin`, in root's
/// `/srv`, may be made root's.)
/// A link must now be root's as well (E510), and nothing of `/etc` changes.
#[test]
fn a_users_link_in_a_directory_made_roots_is_not_followed() {
    let root = TestRoot::new();
    let keys = Keys::new();
    with_alice(&root);
    alices(&root, &["/srv/bin"]);
    let link = root.host("/srv/bin/alt");
    std::os::unix::fs::symlink("/etc", &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(1000), Some(1000)).unwrap();
    // the first plan makes her `bin` root's, and keeps it
    let mut shapes = vec![directory("/srv/bin", "root", "0755")];
    let report = apply_ok(&root, &plan(shapes.clone()), &keys);
    assert_eq!(owner_of(&root.host("/srv/bin")), (0, 0), "{report:#}");
    let etc_before = snapshot(&root.host("/etc"), &[]);
    // the next one makes a directory for her through her link
    shapes.push(directory("/srv/bin/alt/ssh", "alice", "0755"));
    let report = apply_fails(&root, &plan(shapes), &keys);
    assert!(!root.host("/etc/ssh").exists(), "{report:#}");
    assert_same_tree(&etc_before, &snapshot(&root.host("/etc"), &[]), "/etc");
    assert_link_refused(&report, "`/srv/bin/alt` is a symlink in `/srv/bin`");
}

/// Plan A of the withdrawal cases, applied: alice's home, her `work` and `work/notes`.
/// Returns plan B, which keeps her home and adds a root fix.
fn work_and_notes_applied(root: &TestRoot, keys: &Keys) -> Plan {
    let home = directory("/home/alice", "alice", "0755");
    apply_ok(
        root,
        &plan(vec![
            home.clone(),
            directory("/home/alice/work", "alice", "0755"),
            file("/home/alice/work/notes", "hers\n", "alice", "0644"),
        ]),
        keys,
    );
    plan(vec![
        home,
        file("/etc/important-fix", "fixed\n", "root", "0644"),
    ])
}

/// Red team: a withdrawn file whose path a local user has since sent through her
/// own link (alice's `work`, moved away, a link to `/tmp` in its place) failed every
/// later apply at the withdrawal (E510), keeping the rest of the plan from the host
/// for good. It is kept now, found before anything changes (no longer mesh's: the
/// record forgets it), and the plan applies; nothing is removed through the link.
#[test]
fn a_withdrawn_file_behind_a_users_link_is_kept_and_the_plan_applies() {
    let root = TestRoot::new();
    let keys = Keys::new();
    with_alice(&root);
    std::fs::create_dir_all(root.host("/home")).unwrap();
    let next = work_and_notes_applied(&root, &keys);
    // alice moves her `work` away and puts her own link in its place
    std::fs::rename(
        root.host("/home/alice/work"),
        root.host("/home/alice/work.old"),
    )
    .unwrap();
    let tmp = root.host("/tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("notes"), "not mesh's\n").unwrap();
    let link = root.host("/home/alice/work");
    std::os::unix::fs::symlink("/tmp", &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(1000), Some(1000)).unwrap();
    for _ in 0..2 {
        let report = apply_ok(&root, &next, &keys);
        assert_eq!(
            std::fs::read_to_string(root.host("/etc/important-fix")).unwrap(),
            "fixed\n",
            "{report:#}"
        );
    }
    let report = apply_ok(&root, &next, &keys);
    assert_eq!(
        status_of(&report, "file", "/etc/important-fix"),
        "unchanged"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.join("notes")).unwrap(),
        "not mesh's\n",
        "removed through the link"
    );
    assert!(root.host("/home/alice/work.old/notes").exists());
    // the record's shapes are mesh's: the kept file is not among them
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.host("/var/lib/mesh/applied.json")).unwrap())
            .unwrap();
    let shapes = record["shapes"].as_array().expect("shapes");
    assert!(
        shapes
            .iter()
            .all(|shape| shape["identity"] != "/home/alice/work/notes"),
        "{record:#}"
    );
    assert_eq!(shapes.len(), 2, "{record:#}");
}

/// Runs `command` with `sh` as alice (uid and gid 1000, no other group): what she can
/// do by herself.
fn as_alice(command: &str) {
    let status = std::process::Command::new("setpriv")
        .args(["--reuid=1000", "--regid=1000", "--clear-groups", "sh", "-c"])
        .arg(command)
        .status()
        .unwrap();
    assert!(status.success(), "as alice: {command}");
}

/// alice's home (`ROOT/home/alice`, hers, `0755`) holding root's `0700` `vault` with
/// root's `0600` `notes` (left there by root, or moved in by root from elsewhere).
fn home_with_roots_vault(root: &TestRoot) -> PathBuf {
    with_alice(root);
    let vault = root.host("/home/alice/vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("notes"), "root's\n").unwrap();
    std::fs::set_permissions(vault.join("notes"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&vault, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(root.host("/home/alice"), Some(1000), Some(1000)).unwrap();
    vault
}

/// Red team: alice moved root's `0700` `vault`, in her home, onto the path of the
/// directory the plan gives her (`mv vault work` needs only her home's write bit), and
/// the apply chowned root's directory to her. A directory found in a user's directory
/// that is someone else's is not changed in place now (E524), nor is anything walked
/// beneath it.
#[test]
fn roots_directory_moved_onto_a_users_planned_directory_is_not_made_hers() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let vault = home_with_roots_vault(&root);
    let work = root.host("/home/alice/work");
    as_alice(&format!("mv {} {}", vault.display(), work.display()));
    let home = directory("/home/alice", "alice", "0755");
    let hers = directory("/home/alice/work", "alice", "0755");
    // refused before anything changes, when the directory and a path beneath it are
    // inspected (and when it is changed, should she swap it in after that: the
    // confined layer's unit tests)
    for shapes in [
        vec![home.clone(), hers.clone()],
        vec![
            home,
            hers,
            file("/home/alice/work/todo", "hers\n", "alice", "0644"),
        ],
    ] {
        let report = apply_fails(&root, &plan(shapes), &keys);
        assert_vault_refused_as_it_was(
            &report,
            &work,
            "owned by uid 0 but lies in a directory owned by uid 1000",
        );
        assert!(!work.join("todo").exists(), "{report:#}");
        assert_eq!(
            std::fs::read_to_string(work.join("notes")).unwrap(),
            "root's\n"
        );
    }
}

/// The apply of `report` was refused with E524 only, saying `why`, and root's `0700`
/// vault at `work` is still root's and `0700`.
fn assert_vault_refused_as_it_was(report: &serde_json::Value, work: &Path, why: &str) {
    assert_eq!(owner_of(work).0, 0, "{report:#}");
    let mode = std::fs::metadata(work).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o700, "{report:#}");
    let codes = error_codes(report);
    assert!(
        !codes.is_empty() && codes.iter().all(|code| code == "E524"),
        "{report:#}"
    );
    assert!(report.to_string().contains(why), "{report:#}");
}

/// Red team: after plan A made alice's `work/notes`, she swapped `work` for root's
/// `vault` holding a `notes` she cannot remove, and plan B's withdrawal of `notes`
/// deleted root's file. The withdrawal now finds, before anything changes, that the
/// path leads from her home into root's directory: the file is kept (no longer mesh's)
/// and the rest of the plan applies.
#[test]
fn a_withdrawal_through_roots_directory_swapped_into_a_users_deletes_nothing_of_roots() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let vault = home_with_roots_vault(&root);
    let next = work_and_notes_applied(&root, &keys);
    let work = root.host("/home/alice/work");
    // she cannot remove root's file herself
    let removal = std::process::Command::new("setpriv")
        .args(["--reuid=1000", "--regid=1000", "--clear-groups", "rm", "-f"])
        .arg(vault.join("notes"))
        .status()
        .unwrap();
    assert!(!removal.success());
    as_alice(&format!(
        "mv {work} {work}.old && mv {vault} {work}",
        work = work.display(),
        vault = vault.display()
    ));
    let report = apply_ok(&root, &next, &keys);
    assert_eq!(
        std::fs::read_to_string(work.join("notes")).unwrap(),
        "root's\n",
        "{report:#}"
    );
    assert_eq!(status_of(&report, "file", "/home/alice/work/notes"), "kept");
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/important-fix")).unwrap(),
        "fixed\n"
    );
    assert!(root.host("/home/alice/work.old/notes").exists());
}

/// A plan that would make a directory root's inside a user's directory is refused
/// (E524): she could swap it for anything of hers at once, and mesh could not walk
/// into it after. Her own paths there are made, and anyone's in root's directories; a
/// file of root's may be made in hers (it is only ever written anew).
#[test]
fn a_plan_making_roots_directory_in_a_users_directory_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    with_alice(&root);
    std::fs::create_dir_all(root.host("/home")).unwrap();
    let home = directory("/home/alice", "alice", "0755");
    // refused before anything changes: her home is not made either
    let report = apply_fails(
        &root,
        &plan(vec![
            home.clone(),
            directory("/home/alice/bin", "root", "0755"),
            file("/etc/motd", "hello\n", "root", "0644"),
        ]),
        &keys,
    );
    assert_eq!(error_codes(&report), vec!["E524"], "{report:#}");
    assert!(
        report
            .to_string()
            .contains("`/home/alice/bin` would be owned by uid 0 inside `/home/alice`"),
        "{report:#}"
    );
    assert!(!root.host("/home/alice").exists(), "{report:#}");
    assert!(!root.host("/etc/motd").exists(), "{report:#}");
    let shapes = vec![
        home,
        directory("/home/alice/work", "alice", "0755"),
        file("/home/alice/work/notes", "hers\n", "alice", "0644"),
        file("/home/alice/.profile", "# root's\n", "root", "0644"),
        directory("/srv/alices", "alice", "0755"),
    ];
    apply_ok(&root, &plan(shapes.clone()), &keys);
    assert_eq!(owner_of(&root.host("/home/alice/work/notes")), (1000, 1000));
    assert_eq!(owner_of(&root.host("/home/alice/.profile")), (0, 0));
    assert_eq!(owner_of(&root.host("/srv/alices")), (1000, 1000));
    // and applied again, nothing changes
    let report = apply_ok(&root, &plan(shapes), &keys);
    assert_eq!(summary(&report, "unchanged"), 5, "{report:#}");
}

/// A tree a plan gives from one user to another: its top directory is changed first,
/// and then holds the old owner's subdirectory, which the rule of E524 alone would
/// refuse; it was judged before anything changed (hers, in her directory), and that
/// same directory is given on.
#[test]
fn a_users_tree_given_to_another_user_changes_hands_whole() {
    let root = TestRoot::new();
    let keys = Keys::new();
    with_alice_and_bob(&root);
    let tree = |owner: &str| {
        plan(vec![
            directory("/srv/team", owner, "0755"),
            directory("/srv/team/docs", owner, "0755"),
            file("/srv/team/docs/plan", "the plan\n", owner, "0644"),
        ])
    };
    apply_ok(&root, &tree("alice"), &keys);
    assert_eq!(owner_of(&root.host("/srv/team/docs")), (1000, 1000));
    let report = apply_ok(&root, &tree("bob"), &keys);
    for path in ["/srv/team", "/srv/team/docs", "/srv/team/docs/plan"] {
        assert_eq!(
            owner_of(&root.host(path)),
            (1001, 1001),
            "{path}: {report:#}"
        );
    }
}

/// Red team: plans whose owners, once applied, would have the walk go from a user's
/// directory into someone else's were refused only halfway, after their first changes,
/// on every run (a service's state directory holding root's `conf.d`), or applied once
/// and refused ever after (`/srv/p` given to alice with root's `sub` left in it, or a
/// tree given to bob past a directory the plan does not declare). They are refused
/// before anything changes now.
#[test]
fn plans_that_would_leave_someone_elses_directory_in_a_users_change_nothing() {
    let root = TestRoot::new();
    let keys = Keys::new();
    with_alice_and_bob(&root);
    // root's `/srv/p/sub` and alice's `/srv/team/a/b`, `a` undeclared
    std::fs::create_dir_all(root.host("/srv/p/sub")).unwrap();
    alices(&root, &["/srv/team", "/srv/team/a", "/srv/team/a/b"]);
    let motd = file("/etc/motd", "hello\n", "root", "0644");
    for (shapes, refused) in [
        (
            vec![
                directory("/var/lib/app", "alice", "0750"),
                directory("/var/lib/app/conf.d", "root", "0750"),
            ],
            "`/var/lib/app/conf.d` would be owned by uid 0 inside `/var/lib/app`",
        ),
        (
            vec![
                directory("/srv/p", "alice", "0755"),
                directory("/srv/p/sub", "root", "0755"),
            ],
            "`/srv/p/sub` would be owned by uid 0 inside `/srv/p`",
        ),
        (
            vec![
                directory("/srv/team", "bob", "0755"),
                directory("/srv/team/a/b", "bob", "0755"),
            ],
            "`/srv/team/a` would be owned by uid 1000 inside `/srv/team`",
        ),
    ] {
        let mut shapes = shapes;
        shapes.push(motd.clone());
        let report = apply_fails(&root, &plan(shapes), &keys);
        assert_eq!(error_codes(&report), vec!["E524"], "{report:#}");
        assert!(report.to_string().contains(refused), "{report:#}");
        assert!(!root.host("/var/lib/app").exists(), "{report:#}");
        assert!(!root.host("/etc/motd").exists(), "{report:#}");
        assert_eq!(owner_of(&root.host("/srv/p")), (0, 0));
        assert_eq!(owner_of(&root.host("/srv/team")), (1000, 1000));
    }
}

/// Red team: a file whose owner changed was chowned in place, so a descriptor its
/// old owner had opened for writing kept writing into what was now root's (alice's
/// `run.sh`, made root's `0755`, ran her content until the next apply). A change of
/// owner, group or mode now writes the file anew: what is written through the old
/// descriptor goes to the old inode, not to the file at the path.
#[test]
fn a_descriptor_opened_before_an_owner_change_writes_to_the_old_file_only() {
    use std::io::{Seek, Write};
    let root = TestRoot::new();
    let keys = Keys::new();
    with_alice(&root);
    let directory = directory("/srv/x", "root", "0755");
    let script = "#!/bin/sh\necho planned\n";
    apply_ok(
        &root,
        &plan(vec![
            directory.clone(),
            file("/srv/x/run.sh", script, "alice", "0755"),
        ]),
        &keys,
    );
    // hers, opened for writing while it is
    let mut hers = std::fs::OpenOptions::new()
        .write(true)
        .open(root.host("/srv/x/run.sh"))
        .unwrap();
    let report = apply_ok(
        &root,
        &plan(vec![
            directory,
            file("/srv/x/run.sh", script, "root", "0755"),
        ]),
        &keys,
    );
    assert_eq!(status_of(&report, "file", "/srv/x/run.sh"), "changed");
    assert_eq!(owner_of(&root.host("/srv/x/run.sh")), (0, 0));
    hers.rewind().unwrap();
    hers.write_all(b"#!/bin/sh\necho hers\n").unwrap();
    hers.flush().unwrap();
    assert_eq!(
        std::fs::read_to_string(root.host("/srv/x/run.sh")).unwrap(),
        script,
        "what the old descriptor wrote reached root's file"
    );
}

/// The links a distro tree has (`/lib -> usr/lib`), and links the plan declares, lie in
/// directories only root may write, and are still followed as if the root were `/`;
/// the same link in a directory others may write is refused (E510), here before
/// anything changes.
#[test]
fn a_symlink_only_root_can_have_placed_is_still_followed() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::remove_dir_all(root.host("/etc/systemd")).unwrap();
    std::fs::create_dir_all(root.host("/usr/lib/systemd-etc/system")).unwrap();
    std::os::unix::fs::symlink("usr/lib", root.host("/lib")).unwrap();
    let shapes = vec![
        link("/etc/systemd", "/lib/systemd-etc"),
        service("web", &["/usr/bin/web"], "root"),
    ];
    let report = apply_ok(&root, &plan(shapes.clone()), &keys);
    assert_eq!(status_of(&report, "service", "web"), "created");
    let unit = root.host("/usr/lib/systemd-etc/system/web.service");
    assert!(unit.is_file(), "{report:#}");
    // `/etc` writable by a group: its link could be anyone's of that group
    std::fs::remove_file(&unit).unwrap();
    std::fs::set_permissions(root.host("/etc"), std::fs::Permissions::from_mode(0o775)).unwrap();
    let mut changed = shapes;
    changed.pop();
    changed.push(service("web", &["/usr/bin/web", "--changed"], "root"));
    // refused when the unit is inspected, before anything changes
    let report = apply_fails(&root, &plan(changed), &keys);
    assert_eq!(error_codes(&report), vec!["E510"], "{report:#}");
    assert!(
        report
            .to_string()
            .contains("`/etc/systemd` is a symlink in `/etc`"),
        "{report:#}"
    );
    assert!(!unit.exists());
}
