//! `meshc options` on the example repository: its markdown and JSON must equal the
//! golden files in `tests/golden/options/`; the book's standard-module reference
//! (`book/src/stdlib-options.md`) must be this command's markdown of the standard
//! modules; an unknown module is E101 with the closest name, exit 1. Regenerate the
//! golden files and the book page with
//! `MESH_REGENERATE=1 cargo test --release -p meshc --test options` and review the diff.

#[path = "support/repository.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{MESHC, homelab, workspace};

const HEADER: &str = "<!-- meshc options on examples/homelab; regenerate with\n     \
     MESH_REGENERATE=1 cargo test --release -p meshc --test options -->\n";

fn options(arguments: &[&str]) -> Output {
    Command::new(MESHC)
        .arg("options")
        .args(arguments)
        .arg("--repo")
        .arg(homelab())
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs")
}

fn stdout_of(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("utf-8")
}

/// Compares `expected` with the file at `path`, or writes it when regenerating.
fn check(path: &PathBuf, expected: &str) {
    if std::env::var_os("MESH_REGENERATE").is_some() {
        std::fs::write(path, expected).expect("file written");
        return;
    }
    let found = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}; regenerate it (see its header)", path.display()));
    assert_eq!(
        found,
        expected,
        "{} differs from `meshc options`; if the change is meant, regenerate (see its header)",
        path.display()
    );
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/options")
        .join(name)
}

#[test]
fn the_examples_options_match_the_golden_markdown_and_json() {
    let markdown = stdout_of(&options(&[]));
    check(&golden("homelab.md"), &format!("{HEADER}\n{markdown}"));
    let json = stdout_of(&options(&["--format", "json"]));
    let value: serde_json::Value = serde_json::from_str(&json).expect("a JSON array");
    let names: Vec<&str> = value
        .as_array()
        .expect("an array")
        .iter()
        .filter_map(|module| module["name"].as_str())
        .collect();
    // the repository's modules and the standard library's
    for name in ["web", "shop", "networking", "postgres", "users"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    check(&golden("homelab.json"), &json);
}

#[test]
fn the_books_standard_module_reference_is_generated_from_meshc_options() {
    let markdown = stdout_of(&options(&["--standard"]));
    assert!(markdown.contains("## `postgres`"), "{markdown}");
    assert!(
        !markdown.contains("## `web`"),
        "a repository module in the standard list"
    );
    let expected = format!("{}{markdown}", meshc::commands::options::BOOK_HEADER);
    check(&workspace().join("book/src/stdlib-options.md"), &expected);
}

#[test]
fn one_module_lists_its_settings_with_type_default_and_where_declared() {
    let json = stdout_of(&options(&["shop", "--format", "json"]));
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let modules = value.as_array().expect("an array");
    assert_eq!(modules.len(), 1, "{json}");
    let port = modules[0]["settings"]
        .as_array()
        .expect("settings")
        .iter()
        .find(|setting| setting["name"] == "port")
        .expect("the shop's port");
    assert_eq!(port["type"], "port");
    assert_eq!(port["default"], "8000");
    assert!(
        port["declared"]
            .as_str()
            .is_some_and(|at| at.starts_with("modules/shop/module.nix:")),
        "{port}"
    );
}

#[test]
fn an_unknown_module_is_e101_with_the_closest_name() {
    let output = options(&["postgress"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("E101"), "{stderr}");
    assert!(stderr.contains("did you mean `postgres`?"), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn collections_and_links_are_listed_when_the_field_is_a_plain_set() {
    let json = stdout_of(&options(&["--format", "json"]));
    let value: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    let module = |name: &str| {
        value
            .as_array()
            .expect("an array")
            .iter()
            .find(|module| module["name"] == name)
            .unwrap_or_else(|| panic!("no module `{name}`"))
            .clone()
    };
    let declares = |name: &str, field: &str| {
        module(name)["declares"]
            .as_array()
            .expect("declares")
            .iter()
            .find(|declared| declared["field"] == field)
            .unwrap_or_else(|| panic!("`{name}` declares no `{field}`"))["entries"]
            .clone()
    };
    assert_eq!(
        declares("monitoring", "collects"),
        serde_json::json!([
            "jobs: attrsOf (listOf (strMatching \"([a-zA-Z0-9]([a-zA-Z0-9.-]{0,251}[a-zA-Z0-9])?|\\\\[[0-9a-fA-F:.]+]):[0-9]{1,5}\"))"
        ])
    );
    assert_eq!(
        declares("postgres", "provides"),
        serde_json::json!(["postgres"])
    );
    assert_eq!(
        declares("postgres", "needs"),
        serde_json::json!(["superuser"])
    );
    // the shop's `consumes` is a function of the node: its entries are not known
    assert_eq!(declares("shop", "consumes"), serde_json::Value::Null);
}
