//! Exact withdrawal, as a property over random pairs of plans A and B: applying A then B
//! leaves the same tree as applying B to a fresh root, except what is documented as
//! kept (directories and archives A had and B has not, with what they hold, and users).

mod support;

use std::collections::BTreeMap;

use plan::{Plan, Shape};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use support::*;

/// What one random plan holds, as small choices; turned into shapes by `build`.
#[derive(Clone, Debug)]
struct Choices {
    users: [bool; 2],
    /// per directory: absent, or (owner choice, mode choice)
    directories: [Option<(u8, u8)>; 3],
    /// per path slot: 0 absent, 1 file, 2 link, 3 secret; and a content choice
    slots: [(u8, u8); 4],
    archive: Option<u8>,
    services: [Option<(u8, u8)>; 2],
    container: Option<bool>,
}

fn choices() -> impl Strategy<Value = Choices> {
    (
        any::<[bool; 2]>(),
        proptest::array::uniform3(proptest::option::of((0u8..3, 0u8..2))),
        proptest::array::uniform4((0u8..4, 0u8..2)),
        proptest::option::of(0u8..2),
        proptest::array::uniform2(proptest::option::of((0u8..3, 0u8..2))),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(users, directories, slots, archive, services, container)| Choices {
                users,
                directories,
                slots,
                archive,
                services,
                container,
            },
        )
}

const DIRECTORIES: [&str; 3] = ["/srv/d1", "/srv/d2", "/srv/d1/sub"];
const SLOTS: [(&str, Option<usize>); 4] = [
    ("/etc/p1", None),
    ("/etc/p2", None),
    ("/srv/d1/p3", Some(0)),
    ("/srv/d2/p4", Some(1)),
];

struct Fixed {
    keys: Keys,
    sealed: [String; 2],
    artifacts: [Vec<u8>; 2],
}

fn build(choices: &Choices, fixed: &Fixed, root: &TestRoot) -> (Plan, Vec<String>) {
    let mut shapes: Vec<Shape> = Vec::new();
    let user_names = ["u1", "u2"];
    let present_users: Vec<&str> = user_names
        .iter()
        .zip(choices.users)
        .filter(|(_, present)| *present)
        .map(|(name, _)| *name)
        .collect();
    let owner = |choice: u8| -> &str {
        match choice {
            1 if present_users.contains(&"u1") => "u1",
            2 if present_users.contains(&"u2") => "u2",
            _ => "root",
        }
    };
    if choices.users[0] {
        let groups: Vec<&str> = if choices.users[1] { vec!["u2"] } else { vec![] };
        shapes.push(user_in_groups("u1", &groups));
    }
    if choices.users[1] {
        shapes.push(user("u2"));
    }
    let mut present_directories = [false; 3];
    let mut owners = ["root"; 3];
    for (number, choice) in choices.directories.iter().enumerate() {
        let parent_ok = number != 2 || present_directories[0];
        if let (Some((owner_choice, mode_choice)), true) = (choice, parent_ok) {
            present_directories[number] = true;
            // in a user's directory only hers (E524): `sub` is `d1`'s owner's then
            owners[number] = match number {
                2 if owners[0] != "root" => owners[0],
                _ => owner(*owner_choice),
            };
            shapes.push(directory(
                DIRECTORIES[number],
                owners[number],
                if *mode_choice == 0 { "0755" } else { "0700" },
            ));
        }
    }
    for (number, (kind, content)) in choices.slots.iter().enumerate() {
        let (path, needs_directory) = SLOTS[number];
        if needs_directory.is_some_and(|directory| !present_directories[directory]) {
            continue;
        }
        match kind {
            1 => shapes.push(file(
                path,
                &format!("content {content}\n"),
                owner(*content),
                "0644",
            )),
            2 => shapes.push(link(path, &format!("/target/{content}"))),
            3 => shapes.push(secret(
                path,
                &fixed.sealed[usize::from(*content)],
                "root",
                "0400",
            )),
            _ => {}
        }
    }
    if let Some(which) = choices.archive {
        let artifact = root.add_artifact(&fixed.artifacts[usize::from(which)]);
        shapes.push(archive("/srv/site", &artifact, "root"));
    }
    for (number, choice) in choices.services.iter().enumerate() {
        if let Some((user_choice, argument)) = choice {
            shapes.push(service(
                &format!("s{number}"),
                &["/usr/bin/s", &format!("--n={argument}")],
                owner(*user_choice),
            ));
        }
    }
    if let Some(with_mount) = choices.container {
        let mounts: Vec<(&str, &str)> = if with_mount && present_directories[1] {
            vec![("/srv/d2", "/data")]
        } else {
            vec![]
        };
        shapes.push(container("c", &mounts));
    }
    // what withdrawing this plan keeps: its directories and archives
    let mut keeps: Vec<String> = DIRECTORIES
        .iter()
        .zip(present_directories)
        .filter(|(_, present)| *present)
        .map(|(path, _)| path.trim_start_matches('/').to_string())
        .collect();
    if choices.archive.is_some() {
        keeps.push("srv/site".to_string());
    }
    (Plan::new("db1", shapes), keeps)
}

/// The applier's own state: the record, and the generations (the history of what was
/// applied, which differs between A-then-B and B by design).
const SKIP: &[&str] = &["var/lib/mesh/applied.json", "var/lib/mesh/generations"];

fn tree(root: &TestRoot) -> BTreeMap<String, Node> {
    let mut nodes = snapshot(root.path(), SKIP);
    for name in ACCOUNT_FILES {
        nodes.remove(*name);
    }
    // the artifact store is the test's input, not the applier's output
    nodes.retain(|path, _| !path.starts_with("var/lib/mesh-artifacts/"));
    nodes
}

fn check_pair(a: &Choices, b: &Choices, fixed: &Fixed) -> Result<(), TestCaseError> {
    let stepped = TestRoot::in_memory();
    let fresh = TestRoot::in_memory();
    let (plan_a, kept_by_a) = build(a, fixed, &stepped);
    let (plan_b, kept_by_b) = build(b, fixed, &stepped);
    let (plan_b_fresh, _) = build(b, fixed, &fresh);
    prop_assert_eq!(plan_b.digest(), plan_b_fresh.digest());
    apply_ok(&stepped, &plan_a, &fixed.keys);
    let report = apply_ok(&stepped, &plan_b, &fixed.keys);
    apply_ok(&fresh, &plan_b, &fixed.keys);

    let kept: Vec<&String> = kept_by_a
        .iter()
        .filter(|path| !kept_by_b.contains(path))
        .collect();
    let mut stepped_tree = tree(&stepped);
    let fresh_tree = tree(&fresh);
    stepped_tree.retain(|path, _| {
        let under_kept = kept
            .iter()
            .any(|keep| path == *keep || path.starts_with(&format!("{keep}/")));
        !under_kept || fresh_tree.contains_key(path)
    });
    for keep in &kept {
        prop_assert!(
            stepped.path().join(keep).is_dir(),
            "kept `{}` is gone",
            keep
        );
        prop_assert!(
            report["results"].as_array().is_some_and(|results| results
                .iter()
                .any(
                    |result| result["status"] == "kept" && result["identity"] == format!("/{keep}")
                )),
            "kept `{}` is not reported as kept",
            keep
        );
    }
    let differences: Vec<String> = stepped_tree
        .iter()
        .filter(|(path, node)| fresh_tree.get(*path) != Some(node))
        .map(|(path, _)| format!("differs or only after A then B: {path}"))
        .chain(
            fresh_tree
                .keys()
                .filter(|path| !stepped_tree.contains_key(*path))
                .map(|path| format!("only fresh: {path}")),
        )
        .collect();
    prop_assert!(differences.is_empty(), "{}", differences.join("\n"));

    // users: B's users alike (by name); A's other users kept
    let stepped_accounts = accounts(stepped.path());
    let fresh_accounts = accounts(fresh.path());
    for (name, account) in &fresh_accounts {
        prop_assert_eq!(stepped_accounts.get(name), Some(account), "user {}", name);
    }
    for (name, present) in ["u1", "u2"].iter().zip(a.users) {
        if present {
            prop_assert!(
                stepped_accounts.contains_key(*name),
                "user {} was removed",
                name
            );
        }
    }
    Ok(())
}

#[test]
fn apply_a_then_b_equals_apply_b_except_what_is_kept() {
    let keys = Keys::new();
    let sealed = [keys.seal(b"first secret"), keys.seal(b"second secret")];
    let fixed = Fixed {
        keys,
        sealed,
        artifacts: [
            tar_bytes(&[("index.html", "one"), ("a/b.txt", "b")], &[]),
            tar_bytes(&[("index.html", "two")], &[("link", "index.html")]),
        ],
    };
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&(choices(), choices()), |(a, b)| check_pair(&a, &b, &fixed));
    if let Err(error) = result {
        panic!("{error}");
    }
}
