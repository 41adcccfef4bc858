//! Plan validation follows the host tools' rules: `useradd`'s user names, no `:` or
//! control character in a home or shell, secret modes of at most `0640`, no
//! bidirectional control in any path, none in `module` or `source.file`. Each case is
//! checked both on a plan made in memory (`Plan::validate`, what `meshc` runs before
//! it writes) and on the same plan read back from bytes (`Plan::read`, what
//! `mesh-apply` runs).

mod common;

use plan::{File, Link, Plan, PlanError, Resource, Secret, Shape, Source, User};

fn user(name: &str, home: Option<&str>, shell: Option<&str>) -> Resource {
    Resource::User(User {
        name: name.into(),
        system: true,
        home: home.map(str::to_string),
        shell: shell.map(str::to_string),
        groups: vec![],
    })
}

fn secret(mode: &str) -> Resource {
    Resource::Secret(Secret {
        path: "/etc/app/key".into(),
        sealed: common::SEALED.into(),
        owner: "root".into(),
        group: "root".into(),
        mode: mode.into(),
    })
}

fn file(path: &str) -> Resource {
    Resource::File(File {
        path: path.into(),
        content: Some("x\n".into()),
        content_base64: None,
        owner: "root".into(),
        group: "root".into(),
        mode: "0644".into(),
    })
}

/// The field refused, both in memory and when read back.
fn refused_field(resource: Resource, module: &str, source: Source) -> String {
    let plan = Plan::new("web1", vec![Shape::new(resource, module, source)]);
    let in_memory = plan.validate().expect_err("validate refuses it");
    let read = Plan::read(&plan.to_json_bytes()).expect_err("read refuses it");
    assert_eq!(in_memory, read);
    match in_memory {
        PlanError::InvalidField { field, .. } => field,
        other => panic!("not an invalid field: {other}"),
    }
}

fn refused(resource: Resource) -> String {
    refused_field(resource, "app", common::source(3))
}

fn accepted(resource: Resource) {
    let plan = Plan::new("web1", vec![Shape::new(resource, "app", common::source(3))]);
    plan.validate().expect("valid");
    Plan::read(&plan.to_json_bytes()).expect("reads back");
}

#[test]
fn user_name_all_digits_refused() {
    assert_eq!(refused(user("1000", None, None)), "name");
}

#[test]
fn user_name_useradd_refuses_is_refused() {
    for name in ["app.web", "a@b", "-app", "app$x", &"a".repeat(33)] {
        assert_eq!(refused(user(name, None, None)), "name", "{name}");
    }
    for name in ["app", "_app", "app-1", "machine$", &"a".repeat(32)] {
        accepted(user(name, None, None));
    }
}

#[test]
fn user_home_or_shell_with_colon_refused() {
    assert_eq!(refused(user("app", Some("/srv/a:0:0"), None)), "home");
    assert_eq!(refused(user("app", None, Some("/bin/sh:x"))), "shell");
    assert_eq!(refused(user("app", Some("/srv/a\u{85}b"), None)), "home");
}

#[test]
fn owner_all_digits_refused() {
    let Resource::File(mut shape) = file("/etc/app.conf") else {
        unreachable!()
    };
    shape.owner = "0".into();
    assert_eq!(refused(Resource::File(shape)), "owner");
}

#[test]
fn secret_mode_0777_refused() {
    for mode in ["0777", "0644", "0604", "0700", "0650", "1600", "4400"] {
        assert_eq!(refused(secret(mode)), "mode", "{mode}");
    }
    for mode in ["0400", "0440", "0600", "0640"] {
        accepted(secret(mode));
    }
}

#[test]
fn bidi_in_path_refused() {
    for path in [
        "/etc/app\u{202E}fnoc.txt",
        "/etc/\u{2066}x",
        "/etc/x\u{200F}",
        "/etc/x\u{061C}",
        "/etc/x\u{9b}31m",
    ] {
        assert_eq!(refused(file(path)), "path", "{path:?}");
    }
    let link = Resource::Link(Link {
        path: "/etc/current".into(),
        target: "/srv/\u{202E}x".into(),
    });
    assert_eq!(refused(link), "target");
    accepted(file("/etc/café/日本.conf"));
}

#[test]
fn control_character_in_module_or_source_file_refused() {
    let source = common::source(3);
    assert_eq!(
        refused_field(file("/etc/a"), "app\u{1b}[2J", source.clone()),
        "module"
    );
    assert_eq!(
        refused_field(file("/etc/a"), "app\u{202E}", source.clone()),
        "module"
    );
    let hostile = Source {
        file: "modules/app/module.nix\nall nodes up to date".into(),
        ..source
    };
    assert_eq!(refused_field(file("/etc/a"), "app", hostile), "source");
}

#[test]
fn refusals_print_the_refused_text_escaped() {
    let plan = Plan::new(
        "web1",
        vec![Shape::new(
            file("/etc/a\u{1b}[2Jb"),
            "app",
            common::source(3),
        )],
    );
    let message = plan.validate().expect_err("refused").to_string();
    assert!(!message.contains('\u{1b}'), "{message:?}");
    assert!(message.contains("\\u{1b}[2Jb"), "{message:?}");
}
