//! `meshc show` on the example repository: for every node of `examples/homelab`, the
//! human output (and one node's JSON) must equal the golden file in
//! `tests/golden/show/`; an unknown node is E120 with the closest name, exit 1; no
//! output holds sealed content. Regenerate the golden files with
//! `MESH_REGENERATE=1 cargo test --release -p meshc --test show` and review the diff.

#[path = "support/repository.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{MESHC, homelab, homelab_copy};

const NODES: &[&str] = &["app1", "app2", "db1", "gateway"];

fn header() -> String {
    "# meshc show on examples/homelab; regenerate with\n\
     # MESH_REGENERATE=1 cargo test --release -p meshc --test show\n"
        .to_string()
}

fn show(arguments: &[&str]) -> Output {
    Command::new(MESHC)
        .arg("show")
        .args(arguments)
        .arg("--repo")
        .arg(homelab())
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs")
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/show")
        .join(name)
}

/// Compares `actual` with the golden file (header, then the output), or writes it.
fn check_golden(name: &str, actual: &str) {
    let path = golden(name);
    let expected_text = format!("{}{actual}", header());
    if std::env::var_os("MESH_REGENERATE").is_some() {
        std::fs::write(&path, &expected_text).expect("golden file written");
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; regenerate it (see this file's header)",
            path.display()
        )
    });
    assert_eq!(
        golden, expected_text,
        "{name} differs from `meshc show`'s output; if the change is meant, regenerate \
         (see the golden file's header)"
    );
}

fn stdout_of(output: &Output, what: &str) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("utf-8")
}

#[test]
fn every_node_of_the_example_matches_its_golden_view() {
    for node in NODES {
        let text = stdout_of(&show(&[node]), node);
        check_golden(&format!("{node}.txt"), &text);
    }
}

#[test]
fn the_json_view_matches_its_golden_file_and_names_every_part() {
    let text = stdout_of(&show(&["app1", "--format", "json"]), "app1 json");
    let value: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
    for part in [
        "node",
        "modules",
        "settings",
        "collections",
        "consumes",
        "provides",
        "needs",
        "shapes",
    ] {
        assert!(value.get(part).is_some(), "no `{part}` in {text}");
    }
    check_golden("app1.json", &text);
}

#[test]
fn settings_say_whether_the_value_is_the_default_or_the_inventorys() {
    let text = stdout_of(&show(&["app2"]), "app2");
    assert!(
        text.contains("web.port = 8080\n    (inventory at mesh.nix:"),
        "{text}"
    );
    assert!(
        text.contains("shop.port = 8000\n    (default at modules/shop/module.nix:"),
        "{text}"
    );
}

#[test]
fn links_name_the_provider_and_the_consumers_and_secrets_stay_opaque() {
    let database = stdout_of(&show(&["db1"]), "db1");
    assert!(
        database.contains("`postgres` to app1/shop, app2/shop"),
        "{database}"
    );
    let application = stdout_of(&show(&["app1"]), "app1");
    // the provider's address from the inventory and the login the grant is made for
    // (`NODE_MODULE_NAME`, as `logins.db.login` says)
    assert!(
        application
            .contains("shop.db: `postgres` from db1 (10.0.0.21), login app1_shop_db, <secret> at "),
        "{application}"
    );
    // what the consumer receives as `logins.db.facts` is what the provider publishes,
    // made from the provider's own settings
    let facts_line = |text: &str, after: &str| {
        let at = text
            .find(after)
            .unwrap_or_else(|| panic!("{after} in {text}"));
        text[at..]
            .lines()
            .find_map(|line| line.trim().strip_prefix("facts = "))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no facts after {after}: {text}"))
    };
    let published = facts_line(&database, "`postgres` to ");
    assert_eq!(facts_line(&application, "shop.db: "), published);
    let port = database
        .lines()
        .find_map(|line| line.trim().strip_prefix("postgres.port = "))
        .expect("db1's postgres.port");
    assert!(
        published.contains(&format!("port = {port};")),
        "{published}"
    );
    // nothing sealed reaches the output: no age armour, no sealed store content
    for text in [&database, &application] {
        assert!(!text.contains("age-encryption.org"), "{text}");
        assert!(!text.contains("-----BEGIN"), "{text}");
    }
}

#[test]
fn an_unknown_node_is_e120_with_the_closest_name() {
    let output = show(&["gatway"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("E120"), "{stderr}");
    assert!(stderr.contains("did you mean `gateway`?"), "{stderr}");
    assert!(output.stdout.is_empty());
}

/// Text the repository wrote (a setting's value, a module's description) reaches
/// the terminal without the characters that would drive it: escape sequences,
/// bell, bidirectional overrides. `show` and `options`, as text and as JSON, write
/// them as escapes; before, they printed them raw (an inventory could set the
/// operator's window title and clear the screen).
#[test]
fn text_from_the_repository_cannot_drive_the_terminal() {
    let (_temporary, repository) = homelab_copy();
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}";
    let inventory = repository.join("mesh.nix");
    let text = std::fs::read_to_string(&inventory).expect("mesh.nix");
    let text = text.replacen(
        r#"settings.web.title = "app1";"#,
        &format!(r#"settings.web.title = "app1{hostile}";"#),
        1,
    );
    std::fs::write(&inventory, text).expect("mesh.nix written");
    let module = repository.join("modules/web/module.nix");
    let text = std::fs::read_to_string(&module).expect("module");
    let text = text.replacen(
        r#"description = ""#,
        &format!(r#"description = "{hostile}"#),
        1,
    );
    std::fs::write(&module, text).expect("module written");
    for arguments in [
        &["show", "app1"][..],
        &["show", "app1", "--format", "json"][..],
        &["options", "web"][..],
        &["options", "web", "--format", "json"][..],
    ] {
        let output = Command::new(MESHC)
            .args(arguments)
            .arg("--repo")
            .arg(&repository)
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        let stdout = stdout_of(&output, &format!("{arguments:?}"));
        for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
            assert!(
                !stdout.contains(raw),
                "{arguments:?} printed {raw:?} raw: {stdout:?}"
            );
        }
        let escaped = if arguments.contains(&"json") {
            r"\u001b]0;owned\u0007\u001b[2J\u202e"
        } else {
            r"\u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}"
        };
        assert!(stdout.contains(escaped), "{arguments:?}: {stdout}");
    }
}

/// A diagnostic's message holds what the repository wrote (a `throw`'s text, a
/// file's name): `check --format json` writes its bidirectional controls as
/// `\uXXXX`, as `show` and `diff` do. Before, they were printed raw (JSON writers
/// escape only C0 controls), so a terminal reading the JSON showed reordered text.
#[test]
fn check_json_escapes_what_the_repository_wrote() {
    let (_temporary, repository) = homelab_copy();
    let inventory = repository.join("mesh.nix");
    let text = std::fs::read_to_string(&inventory).expect("mesh.nix");
    let text = text.replacen(
        r#"settings.web.title = "app1";"#,
        "settings.web.title = throw \"boom \u{202e}evil\u{2066}\";",
        1,
    );
    std::fs::write(&inventory, text).expect("mesh.nix written");
    let output = Command::new(MESHC)
        .args(["check", "--format", "json", "--repo"])
        .arg(&repository)
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for raw in ['\u{202e}', '\u{2066}'] {
        assert!(!stdout.contains(raw), "printed {raw:?} raw: {stdout}");
    }
    assert!(stdout.contains(r"boom \u202eevil\u2066"), "{stdout}");
    let diagnostics: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert!(
        diagnostics
            .to_string()
            .contains("boom \u{202e}evil\u{2066}"),
        "the JSON still means the text: {diagnostics}"
    );
}
