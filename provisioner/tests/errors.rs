//! Every refusal `mesh-provision` can reach without a server, on the built binary: each
//! is `error[E6NN]: ` with what is wrong and which file or server, then
//! `  = help: ` with what to do (the format of `mesh-apply`'s problems), exit 1, and the
//! same code, title, message and help in `--format json`. Text that names a file is
//! escaped. The codes a server must answer for (E609, E611, E612, E615) are tested
//! against real servers in `postgres.rs` and `rabbitmq.rs`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_mesh-provision");

/// A SCRAM-SHA-256 verifier as PostgreSQL stores it.
const VERIFIER: &str = "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=";

/// RabbitMQ's documented hash of "test12".
const RABBIT_HASH: &str = "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR";

/// A port of 127.0.0.1 that nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

struct Node {
    directory: tempfile::TempDir,
}

struct Run {
    status: Option<i32>,
    stderr: String,
    stdout: String,
}

impl Node {
    fn new() -> Node {
        Node {
            directory: tempfile::tempdir().expect("a directory"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.directory.path().join(name)
    }

    fn manifest(&self) -> PathBuf {
        self.path("grants.json")
    }

    fn write_manifest(&self, text: &str) {
        std::fs::write(self.manifest(), text).expect("the manifest");
    }

    /// A PostgreSQL manifest granting each login its credential file under `--root`.
    fn grant(&self, grants: &[(&str, &str)]) {
        let grants: Vec<Value> = grants
            .iter()
            .map(|(login, credential)| {
                json!({"consumer": format!("app1/shop/{login}"), "login": login,
                       "credential": credential, "form": "scram-sha-256"})
            })
            .collect();
        self.write_manifest(
            &json!({"format": "mesh-grants/1", "service": "postgres", "node": "db1",
                    "grants": grants})
            .to_string(),
        );
    }

    /// Writes a credential file at the manifest's absolute `path`, under the root.
    fn credential(&self, path: &str, content: &str) {
        let file = self.path("root").join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("its directory");
        std::fs::write(file, content).expect("the credential");
    }

    fn postgres(&self, url: &str, extra: &[&str]) -> Run {
        self.run(&["--postgres", url], extra)
    }

    fn run(&self, server: &[&str], extra: &[&str]) -> Run {
        let output = Command::new(BINARY)
            .arg("--manifest")
            .arg(self.manifest())
            .arg("--root")
            .arg(self.path("root"))
            .args(server)
            .args(extra)
            .output()
            .expect("mesh-provision runs");
        Run {
            status: output.status.code(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        }
    }
}

/// A server nothing reaches: every refusal of the inputs comes before connecting.
fn nowhere() -> String {
    format!("postgres://postgres@127.0.0.1:{}/postgres", closed_port())
}

/// One problem on stderr: `error[CODE]: MESSAGE` whose message starts with `message`,
/// then a help line holding `help`; exit 1.
fn assert_refused(run: &Run, code: &str, message: &str, help: &str) {
    assert_eq!(run.status, Some(1), "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "one problem, two lines:\n{}", run.stderr);
    let first = format!("error[{code}]: {message}");
    assert!(
        lines[0].starts_with(&first),
        "not `{first}`:\n{}",
        run.stderr
    );
    assert!(
        lines[1].starts_with("  = help: ") && lines[1].contains(help),
        "no help with `{help}`:\n{}",
        run.stderr
    );
}

#[test]
fn an_unreadable_manifest_is_e600() {
    let node = Node::new();
    let run = node.postgres(&nowhere(), &[]);
    assert_refused(
        &run,
        "E600",
        &format!("manifest `{}`: cannot read it: ", node.manifest().display()),
        "check that `--manifest` names the file",
    );
    assert!(
        run.stderr
            .lines()
            .next()
            .unwrap()
            .ends_with("keeping the last good state")
    );
}

#[test]
fn a_manifest_that_is_not_json_is_e601_with_where() {
    let node = Node::new();
    node.write_manifest("{\"format\": \"mesh-grants/1\", \"grants\": [");
    let run = node.postgres(&nowhere(), &[]);
    assert_refused(
        &run,
        "E601",
        &format!(
            "manifest `{}`: EOF while parsing",
            node.manifest().display()
        ),
        "apply the node's plan again",
    );
    assert!(run.stderr.contains("at line 1 column"), "{}", run.stderr);
    // the summary still names the manifest's digest, and says nothing was done
    assert!(
        run.stdout
            .contains("(nothing changed: keeping the last good state)"),
        "{}",
        run.stdout
    );
}

#[test]
fn another_manifest_format_is_e602() {
    let node = Node::new();
    node.write_manifest(
        r#"{"format": "mesh-grants/2", "service": "postgres", "node": "db1", "grants": []}"#,
    );
    assert_refused(
        &node.postgres(&nowhere(), &[]),
        "E602",
        &format!(
            "manifest `{}`: format is `mesh-grants/2`, this provisioner reads `mesh-grants/1`",
            node.manifest().display()
        ),
        "same release",
    );
}

#[test]
fn a_grant_the_server_would_refuse_is_e603() {
    let node = Node::new();
    node.grant(&[("public", "/c/public")]);
    assert_refused(
        &node.postgres(&nowhere(), &[]),
        "E603",
        &format!(
            "manifest `{}`: grant of `app1/shop/public`: login `public` is a name PostgreSQL \
             reserves for roles",
            node.manifest().display()
        ),
        "E318",
    );
    // another server's manifest: the help names the flags
    node.grant(&[("app1_shop_db", "/c/a")]);
    let password = node.path("administrator");
    std::fs::write(&password, "guest\n").expect("a password file");
    let run = node.run(
        &[
            "--rabbitmq",
            &format!("http://guest@127.0.0.1:{}", closed_port()),
        ],
        &["--password-file", password.to_str().expect("a UTF-8 path")],
    );
    assert_refused(
        &run,
        "E603",
        &format!(
            "manifest `{}`: grant of `app1/shop/app1_shop_db`: form `scram-sha-256` is not \
             `rabbit_password_hashing_sha256`",
            node.manifest().display()
        ),
        "takes `--postgres`",
    );
}

#[test]
fn two_grants_reading_one_credential_file_are_e604() {
    let node = Node::new();
    // one file by two spellings of its path: refused as the manifest is read
    node.grant(&[("app1_shop_db", "/c/a"), ("app2_shop_db", "/c//a/")]);
    node.credential("/c/a", VERIFIER);
    assert_refused(
        &node.postgres(&nowhere(), &[]),
        "E604",
        &format!(
            "manifest `{}`: grant of `app1/shop/app2_shop_db`: credential `/c//a/` is also \
             the credential of login `app1_shop_db`",
            node.manifest().display()
        ),
        "a credential file of its own",
    );
    // two paths a link leads to one file: refused as the files are read
    node.grant(&[("app1_shop_db", "/c/a"), ("app2_shop_db", "/c/b")]);
    std::os::unix::fs::symlink(node.path("root/c/a"), node.path("root/c/b")).expect("a link");
    assert_refused(
        &node.postgres(&nowhere(), &[]),
        "E604",
        &format!(
            "credential `{}` of login `app2_shop_db`: the same file as the credential of login \
             `app1_shop_db`",
            node.path("root/c/b").display()
        ),
        "a credential file of its own",
    );
}

#[test]
fn a_missing_credential_file_is_e605() {
    let node = Node::new();
    node.grant(&[("app1_shop_db", "/c/a")]);
    assert_refused(
        &node.postgres(&nowhere(), &[]),
        "E605",
        &format!(
            "credential `{}` of login `app1_shop_db`: no such file; nothing changed, keeping \
             the last good state",
            node.path("root/c/a").display()
        ),
        "same `--root`",
    );
}

#[test]
fn a_credential_that_is_not_a_verifier_is_e606_and_never_quoted() {
    let node = Node::new();
    node.grant(&[("app1_shop_db", "/c/a")]);
    node.credential("/c/a", "hunter2\n");
    let run = node.postgres(&nowhere(), &[]);
    assert_refused(
        &run,
        "E606",
        &format!(
            "credential `{}` of login `app1_shop_db`: not a SCRAM-SHA-256 verifier",
            node.path("root/c/a").display()
        ),
        "never a password",
    );
    assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
}

#[test]
fn a_password_file_that_cannot_be_used_is_e607() {
    let node = Node::new();
    node.grant(&[("app1_shop_db", "/c/a")]);
    node.credential("/c/a", VERIFIER);
    let missing = node.path("superuser");
    let missing = missing.to_str().expect("a UTF-8 path");
    assert_refused(
        &node.postgres(&nowhere(), &["--password-file", missing]),
        "E607",
        &format!("password file `{missing}`: "),
        "first line",
    );
    // the administrator's, for RabbitMQ: read before any request
    let hashes = Node::new();
    hashes.write_manifest(
        &json!({"format": "mesh-grants/1", "service": "amqp", "node": "mq1", "grants": [
            {"consumer": "app1/shop/bus", "login": "app1_shop_bus", "credential": "/c/a",
             "form": "rabbit_password_hashing_sha256", "vhost": "shop",
             "permissions": {"configure": ".*", "write": ".*", "read": ".*"}}]})
        .to_string(),
    );
    hashes.credential("/c/a", RABBIT_HASH);
    let empty = hashes.path("administrator");
    std::fs::write(&empty, "").expect("an empty file");
    let empty = empty.to_str().expect("a UTF-8 path");
    assert_refused(
        &hashes.run(
            &[
                "--rabbitmq",
                &format!("http://guest@127.0.0.1:{}", closed_port()),
            ],
            &["--password-file", empty],
        ),
        "E607",
        &format!("password file `{empty}` is empty; nothing changed"),
        "`--password-file`",
    );
}

#[test]
fn a_server_nothing_answers_for_is_e608_or_e614() {
    let node = Node::new();
    node.grant(&[]);
    let port = closed_port();
    assert_refused(
        &node.postgres(
            &format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            &[],
        ),
        "E608",
        &format!("cannot connect to PostgreSQL at `127.0.0.1:{port}`: "),
        "PostgreSQL runs at the address `--postgres` names",
    );
    let password = node.path("administrator");
    std::fs::write(&password, "guest\n").expect("a password file");
    let rabbitmq = Node::new();
    rabbitmq.write_manifest(
        r#"{"format": "mesh-grants/1", "service": "amqp", "node": "mq1", "grants": []}"#,
    );
    let run = rabbitmq.run(
        &["--rabbitmq", &format!("http://guest@127.0.0.1:{port}")],
        &["--password-file", password.to_str().expect("a UTF-8 path")],
    );
    assert_refused(
        &run,
        "E614",
        "cannot reach RabbitMQ's management API for GET /api/users: ",
        "rabbitmq_management",
    );
    assert!(!run.stderr.contains("guest\n"), "{}", run.stderr);
}

/// `--format json` carries the problem's fields, as `mesh-apply`'s JSON report does, and
/// stderr still says it to a person.
#[test]
fn json_errors_carry_the_code_title_message_and_help() {
    let node = Node::new();
    node.grant(&[("app1_shop_db", "/c/a")]);
    let run = node.postgres(&nowhere(), &["--format", "json"]);
    assert_eq!(run.status, Some(1), "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).expect("one JSON object");
    let error = &report["errors"][0];
    assert_eq!(error["code"], "E605", "{report}");
    assert_eq!(
        error["title"], "a credential file cannot be read",
        "{report}"
    );
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|message| message.contains("of login `app1_shop_db`: no such file")),
        "{report}"
    );
    assert!(
        error["help"]
            .as_str()
            .is_some_and(|help| help.contains("same `--root`")),
        "{report}"
    );
    assert_eq!(report["counts"]["failed"], 1, "{report}");
    assert!(run.stderr.starts_with("error[E605]: "), "{}", run.stderr);
}

/// A file name can hold anything; the problem naming it must not drive the terminal.
#[test]
fn a_hostile_file_name_is_escaped_in_both_formats() {
    let node = Node::new();
    let hostile = node.path("m\u{1b}[2J\u{7}\u{202e}\u{9b}31m.json");
    let run = |format: &str| {
        Command::new(BINARY)
            .arg("--manifest")
            .arg(&hostile)
            .args(["--postgres", &nowhere(), "--format", format])
            .output()
            .expect("mesh-provision runs")
    };
    let human = run("human");
    let json = run("json");
    let stderr = String::from_utf8_lossy(&human.stderr);
    let summary = String::from_utf8_lossy(&human.stdout);
    let stdout = String::from_utf8_lossy(&json.stdout);
    assert!(stderr.starts_with("error[E600]: "), "{stderr}");
    let raw = |text: &str| {
        text.chars()
            .filter(|character| {
                *character != '\n'
                    && (character.is_control() || ('\u{202a}'..='\u{202e}').contains(character))
            })
            .count()
    };
    assert_eq!(raw(&stderr), 0, "{stderr:?}");
    assert_eq!(raw(&summary), 0, "{summary:?}");
    assert!(
        stderr.contains("m\\u{1b}[2J\\u{7}\\u{202e}\\u{9b}31m.json"),
        "{stderr}"
    );
    // serde_json escapes C0 controls itself; the others are written as \uXXXX
    let json_errors = stdout.lines().next().unwrap_or_default();
    assert!(
        !json_errors.contains('\u{202e}') && !json_errors.contains('\u{9b}'),
        "{json_errors:?}"
    );
    let report: Value = serde_json::from_str(json_errors).expect("JSON");
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .is_some_and(|message| message.contains(hostile.to_str().expect("UTF-8"))),
        "the JSON means the same: {report}"
    );
}
