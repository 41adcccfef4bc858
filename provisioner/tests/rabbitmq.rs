//! `mesh-provision --rabbitmq` against the real RabbitMQ on this machine (its
//! management API at 127.0.0.1:15672, guest/guest, which scripts/services enables):
//! how a reconcile follows a grant that changes (permissions, vhost, hash), comes back
//! after withdrawal, and meets a user of the same name that mesh does not manage. The
//! provisioner is the real binary, run once with `--root` over a temporary tree
//! holding the manifest and the hashes (computed here as RabbitMQ documents them).
//! Each test makes its own vhosts and users, with names of their own, and deletes
//! them when it ends. A provisioner manages every user tagged `mesh-managed` on its
//! broker, so one test's withdrawal would disable another's users: the tests take
//! turns (`TURNS`). Logging in over AMQP is `tests/tests/provision_rabbitmq.rs`'s.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const BINARY: &str = env!("CARGO_BIN_EXE_mesh-provision");
const MANAGEMENT: &str = "http://127.0.0.1:15672";
const CREDENTIALS: &str = "/var/lib/mesh/grants/amqp";

/// Held by the test that is using the broker.
static TURNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn api(method: &str, path: &str, body: Option<Value>) -> Result<Value, String> {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build();
    let request = agent
        .request(method, &format!("{MANAGEMENT}/api/{path}"))
        .set("Authorization", "Basic Z3Vlc3Q6Z3Vlc3Q=");
    let response = match body {
        Some(body) => request.send_json(body),
        None => request.call(),
    };
    match response {
        Ok(response) => Ok(response.into_json().unwrap_or(Value::Null)),
        Err(error) => Err(error.to_string()),
    }
}

/// RabbitMQ's `rabbit_password_hashing_sha256` of `password` with `salt`.
fn hash(password: &str, salt: [u8; 4]) -> String {
    let mut bytes = salt.to_vec();
    bytes.extend(
        Sha256::new()
            .chain_update(salt)
            .chain_update(password)
            .finalize(),
    );
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One test's names on the broker, deleted when it ends.
struct Broker {
    _turn: std::sync::MutexGuard<'static, ()>,
    unique: String,
    vhosts: Vec<String>,
    users: Vec<String>,
}

impl Broker {
    fn new() -> Broker {
        // a test that failed while holding it leaves nothing to protect
        let turn = TURNS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(error) = api("GET", "overview", None) {
            panic!(
                "RabbitMQ's management API does not answer at {MANAGEMENT} with guest/guest ({error}): \
                 run `rabbitmq-plugins enable rabbitmq_management` (scripts/services does)"
            );
        }
        let unique = format!(
            "{}{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("a clock")
                .subsec_nanos()
        );
        Broker {
            _turn: turn,
            unique,
            vhosts: Vec::new(),
            users: Vec::new(),
        }
    }

    fn vhost(&mut self, name: &str) -> String {
        let vhost = format!("mesh-test-{name}-{}", self.unique);
        self.vhosts.push(vhost.clone());
        vhost
    }

    fn user(&mut self, name: &str) -> String {
        let user = format!("t{}_{name}", self.unique);
        self.users.push(user.clone());
        user
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        for vhost in &self.vhosts {
            let _ = api("DELETE", &format!("vhosts/{vhost}"), None);
        }
        for user in &self.users {
            let _ = api("DELETE", &format!("users/{user}"), None);
        }
    }
}

/// A grant as the compiler writes it.
struct Granted<'a> {
    login: &'a str,
    hash: &'a str,
    vhost: &'a str,
    configure: &'a str,
}

fn write_manifest(root: &Path, grants: &[Granted<'_>]) {
    let directory = root.join(CREDENTIALS.trim_start_matches('/'));
    std::fs::create_dir_all(&directory).expect("credentials directory");
    std::fs::create_dir_all(root.join("etc/mesh/grants")).expect("grants directory");
    let listed: Vec<Value> = grants
        .iter()
        .map(|grant| {
            std::fs::write(directory.join(grant.login), format!("{}\n", grant.hash))
                .expect("a hash");
            json!({
                "consumer": format!("app/shop/{}", grant.login),
                "login": grant.login,
                "credential": format!("{CREDENTIALS}/{}", grant.login),
                "form": "rabbit_password_hashing_sha256",
                "vhost": grant.vhost,
                "permissions": {"configure": grant.configure, "write": ".*", "read": ".*"},
            })
        })
        .collect();
    let manifest =
        json!({"format": "mesh-grants/1", "service": "amqp", "node": "mq1", "grants": listed});
    std::fs::write(
        root.join("etc/mesh/grants/amqp.json"),
        serde_json::to_string_pretty(&manifest).expect("JSON"),
    )
    .expect("manifest");
}

fn provision(root: &Path) -> Output {
    let password_file = root.join("administrator");
    std::fs::write(&password_file, "guest\n").expect("password file");
    Command::new(BINARY)
        .arg("--root")
        .arg(root)
        .arg("--manifest")
        .arg(root.join("etc/mesh/grants/amqp.json"))
        .arg("--rabbitmq")
        .arg("http://guest@127.0.0.1:15672")
        .arg("--password-file")
        .arg(&password_file)
        .output()
        .expect("mesh-provision runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn permissions(user: &str) -> Value {
    api("GET", &format!("users/{user}/permissions"), None).expect("permissions")
}

#[test]
fn a_changed_grant_is_followed_and_a_withdrawn_one_comes_back() {
    let mut broker = Broker::new();
    let shop = broker.vhost("shop");
    let moved = broker.vhost("moved");
    let login = broker.user("bus");
    let root = tempfile::tempdir().expect("a root");
    let first = hash("first password", [1, 2, 3, 4]);

    write_manifest(
        root.path(),
        &[Granted {
            login: &login,
            hash: &first,
            vhost: &shop,
            configure: ".*",
        }],
    );
    let created = provision(root.path());
    assert!(created.status.success(), "{}", stdout(&created));
    assert!(stdout(&created).contains(&format!("created   login `{login}`")));
    let user = api("GET", &format!("users/{login}"), None).expect("the user");
    assert_eq!(user["password_hash"], first.as_str());
    assert_eq!(user["hashing_algorithm"], "rabbit_password_hashing_sha256");

    // narrower permissions in the same vhost
    write_manifest(
        root.path(),
        &[Granted {
            login: &login,
            hash: &first,
            vhost: &shop,
            configure: "^shop\\.",
        }],
    );
    let narrowed = stdout(&provision(root.path()));
    assert!(
        narrowed.contains(&format!(
            "updated   login `{login}` (permissions in vhost `{shop}`)"
        )),
        "{narrowed}"
    );
    assert_eq!(permissions(&login)[0]["configure"], "^shop\\.");

    // another vhost: the old one's permissions go
    write_manifest(
        root.path(),
        &[Granted {
            login: &login,
            hash: &first,
            vhost: &moved,
            configure: ".*",
        }],
    );
    let moved_output = stdout(&provision(root.path()));
    assert!(
        moved_output.contains(&format!("created   vhost `{moved}`")),
        "{moved_output}"
    );
    let held = permissions(&login);
    assert_eq!(held.as_array().map(Vec::len), Some(1), "{held}");
    assert_eq!(held[0]["vhost"], moved.as_str());

    // a new password
    let second = hash("second password", [5, 6, 7, 8]);
    write_manifest(
        root.path(),
        &[Granted {
            login: &login,
            hash: &second,
            vhost: &moved,
            configure: ".*",
        }],
    );
    let updated = stdout(&provision(root.path()));
    assert!(
        updated.contains(&format!("updated   login `{login}` (new verifier)")),
        "{updated}"
    );
    assert_eq!(
        api("GET", &format!("users/{login}"), None).expect("the user")["password_hash"],
        second.as_str()
    );

    // withdrawn, then granted again
    write_manifest(root.path(), &[]);
    let withdrawn = stdout(&provision(root.path()));
    assert!(
        withdrawn.contains(&format!("disabled  login `{login}`")),
        "{withdrawn}"
    );
    assert_eq!(permissions(&login), json!([]));
    assert_eq!(
        api("GET", &format!("users/{login}"), None).expect("kept")["password_hash"],
        ""
    );
    let quiet = stdout(&provision(root.path()));
    assert!(
        quiet.contains(": 0 created, 0 updated, 0 enabled, 0 disabled, 0 unchanged, 0 failed"),
        "a withdrawn user is withdrawn once: {quiet}"
    );
    write_manifest(
        root.path(),
        &[Granted {
            login: &login,
            hash: &second,
            vhost: &moved,
            configure: ".*",
        }],
    );
    let enabled = stdout(&provision(root.path()));
    assert!(
        enabled.contains(&format!("enabled   login `{login}`")),
        "{enabled}"
    );
    assert_eq!(permissions(&login)[0]["vhost"], moved.as_str());
}

#[test]
fn a_user_of_the_same_name_that_mesh_does_not_manage_is_not_touched() {
    let mut broker = Broker::new();
    let shop = broker.vhost("shop");
    let taken = broker.user("taken");
    let granted = broker.user("granted");
    api(
        "PUT",
        &format!("users/{taken}"),
        Some(json!({"password": "a person's password", "tags": "administrator"})),
    )
    .expect("an unmanaged user");
    let before = api("GET", &format!("users/{taken}"), None).expect("the user");
    let root = tempfile::tempdir().expect("a root");
    let password_hash = hash("mesh's password", [9, 9, 9, 9]);
    write_manifest(
        root.path(),
        &[
            Granted {
                login: &granted,
                hash: &password_hash,
                vhost: &shop,
                configure: ".*",
            },
            Granted {
                login: &taken,
                hash: &password_hash,
                vhost: &shop,
                configure: ".*",
            },
        ],
    );
    let output = provision(root.path());
    assert_eq!(output.status.code(), Some(1));
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        errors.contains(&format!(
            "error[E611]: user `{taken}` exists and is not tagged `mesh-managed`"
        )) && errors.contains("\n  = help: if the user is the consumer's from before mesh"),
        "{errors}"
    );
    assert!(!errors.contains(&password_hash), "{errors}");
    assert!(stdout(&output).contains(&format!("created   login `{granted}`")));
    assert_eq!(
        api("GET", &format!("users/{taken}"), None).expect("the user"),
        before
    );
    assert_eq!(permissions(&taken), json!([]));

    // withdrawing everything leaves it alone too
    write_manifest(root.path(), &[]);
    let withdrawn = provision(root.path());
    assert!(withdrawn.status.success());
    assert!(!stdout(&withdrawn).contains(&taken));
    assert_eq!(
        api("GET", &format!("users/{taken}"), None).expect("the user"),
        before
    );
}

#[test]
fn an_administrator_tagged_mesh_managed_is_neither_withdrawn_nor_given_a_password() {
    let mut broker = Broker::new();
    let shop = broker.vhost("shop");
    let admin = broker.user("admin");
    // another administrator tagged it (by mistake, or to have mesh take it over)
    api(
        "PUT",
        &format!("users/{admin}"),
        Some(json!({"password": "an operator's password", "tags": "administrator,mesh-managed"})),
    )
    .expect("a tagged administrator");
    let before = api("GET", &format!("users/{admin}"), None).expect("the user");
    let root = tempfile::tempdir().expect("a root");
    let password_hash = hash("mesh's password", [7, 7, 7, 7]);
    write_manifest(
        root.path(),
        &[Granted {
            login: &admin,
            hash: &password_hash,
            vhost: &shop,
            configure: ".*",
        }],
    );
    let granted = provision(root.path());
    assert_eq!(granted.status.code(), Some(1), "{}", stdout(&granted));
    let errors = String::from_utf8_lossy(&granted.stderr);
    assert!(
        errors.contains(&format!("error[E612]: user `{admin}` is tagged"))
            && errors.contains("\n  = help: mesh never changes such a user"),
        "{errors}"
    );
    assert_eq!(
        api("GET", &format!("users/{admin}"), None).expect("the user"),
        before,
        "its password is not the manifest's"
    );
    // and withdrawing it leaves it able to log in
    write_manifest(root.path(), &[]);
    let withdrawn = provision(root.path());
    assert!(
        !stdout(&withdrawn).contains(&admin),
        "{}",
        stdout(&withdrawn)
    );
    assert_eq!(
        api("GET", &format!("users/{admin}"), None).expect("the user"),
        before,
        "it is not withdrawn"
    );
}

#[test]
fn an_unreachable_api_is_reported_and_changes_nothing() {
    let root = tempfile::tempdir().expect("a root");
    write_manifest(root.path(), &[]);
    let password_file = root.path().join("administrator");
    std::fs::write(&password_file, "guest\n").expect("password file");
    // a port nothing listens on
    let output = Command::new(BINARY)
        .arg("--manifest")
        .arg(root.path().join("etc/mesh/grants/amqp.json"))
        .arg("--rabbitmq")
        .arg("http://guest@127.0.0.1:9")
        .arg("--password-file")
        .arg(&password_file)
        .output()
        .expect("mesh-provision runs");
    assert_eq!(output.status.code(), Some(1));
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        errors.starts_with("error[E614]: cannot reach RabbitMQ's management API"),
        "{errors}"
    );
    assert!(!errors.contains("guest\n"));
}

/// The administrator's password is wrong: RabbitMQ answers 401 to the first request,
/// which is E615 with a help line that names `--password-file`, and nothing changes.
#[test]
fn a_refused_administrator_is_e615() {
    let root = tempfile::tempdir().expect("a root");
    write_manifest(root.path(), &[]);
    let password_file = root.path().join("administrator");
    std::fs::write(&password_file, "not guest's password\n").expect("password file");
    let output = Command::new(BINARY)
        .arg("--manifest")
        .arg(root.path().join("etc/mesh/grants/amqp.json"))
        .arg("--rabbitmq")
        .arg("http://guest@127.0.0.1:15672")
        .arg("--password-file")
        .arg(&password_file)
        .output()
        .expect("mesh-provision runs");
    let errors = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{errors}");
    assert!(
        errors.starts_with("error[E615]: GET /api/users: RabbitMQ answered 401")
            && errors.contains("\n  = help: RabbitMQ did not let the administrator in")
            && errors.contains("`--password-file`"),
        "{errors}"
    );
    assert!(!errors.contains("not guest's password"), "{errors}");
}

/// RabbitMQ checks a permission's regular expression only when it is set: a manifest
/// with one that does not parse used to be acted on up to that grant (the users before
/// it made), then the failed request stopped the reconcile, and every withdrawal after
/// it waited. The compiler refuses such a pattern (E213); so does the provisioner, for
/// the whole manifest, before anything changes.
#[test]
fn a_permission_that_is_not_a_regular_expression_is_a_malformed_manifest() {
    let mut broker = Broker::new();
    let shop = broker.vhost("shop");
    let first = broker.user("a_first");
    let second = broker.user("b_second");
    let withdrawn = broker.user("c_withdrawn");
    let root = tempfile::tempdir().expect("a root");
    let password_hash = hash("a password", [3, 1, 4, 1]);
    write_manifest(
        root.path(),
        &[Granted {
            login: &withdrawn,
            hash: &password_hash,
            vhost: &shop,
            configure: ".*",
        }],
    );
    let output = provision(root.path());
    assert!(output.status.success(), "{}", stdout(&output));

    write_manifest(
        root.path(),
        &[
            Granted {
                login: &first,
                hash: &password_hash,
                vhost: &shop,
                configure: ".*",
            },
            Granted {
                login: &second,
                hash: &password_hash,
                vhost: &shop,
                configure: "^shop(",
            },
        ],
    );
    let output = provision(root.path());
    let errors = String::from_utf8_lossy(&output.stderr);
    assert!(
        api("GET", &format!("users/{first}"), None).is_err(),
        "a user was made from a manifest the broker then refused: {errors}"
    );
    assert_eq!(output.status.code(), Some(1), "{errors}");
    assert!(
        errors.contains(&format!(
            "grant of `app/shop/{second}`: permission `configure` is not a regular expression: \"^shop(\""
        )) && errors.contains("nothing changed")
            && errors.starts_with("error[E603]: "),
        "{errors}"
    );
    assert_eq!(
        api("GET", &format!("users/{withdrawn}"), None).expect("the user")["password_hash"],
        password_hash.as_str(),
        "the last good state is kept"
    );
}

/// `max-connections` of a user's limits, if it has one.
fn connection_limit(user: &str) -> Option<i64> {
    let limits = api("GET", "user-limits", None).expect("user limits");
    limits
        .as_array()
        .into_iter()
        .flatten()
        .find(|entry| entry["user"] == user)
        .and_then(|entry| entry["value"]["max-connections"].as_i64())
}

/// A hash of `""` stops every password, but not a mechanism that needs none: with
/// EXTERNAL (x509 certificates, `rabbitmq_auth_mechanism_ssl`) a user without a password
/// still authenticates. Withdrawal, like PostgreSQL's NOLOGIN, must stop the login
/// itself: the user's `max-connections` limit is 0, which RabbitMQ checks for every
/// connection after authentication, whatever the mechanism, so no withdrawn user opens
/// one, whatever permissions it may be given. Granted again, the limit goes; and
/// drift is repaired like a role set NOLOGIN by hand: a granted user someone limited
/// to 0 is enabled again.
#[test]
fn a_withdrawn_user_may_open_no_connection_whatever_its_mechanism() {
    let mut broker = Broker::new();
    let shop = broker.vhost("shop");
    let login = broker.user("bus");
    let root = tempfile::tempdir().expect("a root");
    let password_hash = hash("a password", [2, 7, 1, 8]);
    let granted = [Granted {
        login: &login,
        hash: &password_hash,
        vhost: &shop,
        configure: ".*",
    }];
    write_manifest(root.path(), &granted);
    let created = provision(root.path());
    assert!(created.status.success(), "{}", stdout(&created));
    assert_eq!(connection_limit(&login), None);

    write_manifest(root.path(), &[]);
    let withdrawn = provision(root.path());
    assert!(
        stdout(&withdrawn).contains(&format!("disabled  login `{login}`")),
        "{}",
        stdout(&withdrawn)
    );
    assert_eq!(
        connection_limit(&login),
        Some(0),
        "a withdrawn user may still open connections by a mechanism without a password"
    );
    let user = api("GET", &format!("users/{login}"), None).expect("kept");
    assert_eq!(user["password_hash"], "");
    assert_eq!(permissions(&login), json!([]));
    let again = stdout(&provision(root.path()));
    assert!(
        again.contains(": 0 created, 0 updated, 0 enabled, 0 disabled, 0 unchanged, 0 failed"),
        "withdrawn once: {again}"
    );

    write_manifest(root.path(), &granted);
    let enabled = stdout(&provision(root.path()));
    assert!(
        enabled.contains(&format!("enabled   login `{login}`")),
        "{enabled}"
    );
    assert_eq!(
        connection_limit(&login),
        None,
        "granted again, it may log in"
    );

    // someone limits a granted user to no connection: the next reconcile repairs it
    api(
        "PUT",
        &format!("user-limits/{login}/max-connections"),
        Some(json!({"value": 0})),
    )
    .expect("a limit set by hand");
    let repaired = stdout(&provision(root.path()));
    assert!(
        repaired.contains(&format!("enabled   login `{login}`"))
            && repaired.contains(": 0 created, 0 updated, 1 enabled, 0 disabled"),
        "{repaired}"
    );
    assert_eq!(connection_limit(&login), None);
    // any other limit is the operator's
    api(
        "PUT",
        &format!("user-limits/{login}/max-connections"),
        Some(json!({"value": 5})),
    )
    .expect("a limit set by hand");
    let unchanged = stdout(&provision(root.path()));
    assert!(unchanged.contains(": 0 created, 0 updated, 0 enabled, 0 disabled, 1 unchanged"));
    assert_eq!(connection_limit(&login), Some(5));
}

/// PostgreSQL's reservations are not RabbitMQ's: a user named `pg_...` (what a consumer
/// on a node named `pg` gets) or longer than PostgreSQL's 63 bytes is granted like any
/// other. The compiler refuses such a login only for a PostgreSQL provider (E318), by
/// the rule `manifest::check_login` repeats; a manifest holding one was refused whole.
#[test]
fn a_login_postgresql_would_refuse_is_a_rabbitmq_user() {
    let mut broker = Broker::new();
    let shop = broker.vhost("shop");
    let reserved = format!("pg_t{}_bus", broker.unique);
    let long = format!("t{}_{}", broker.unique, "a".repeat(200));
    broker.users.extend([reserved.clone(), long.clone()]);
    let root = tempfile::tempdir().expect("a root");
    let password_hash = hash("a password", [1, 4, 1, 4]);
    write_manifest(
        root.path(),
        &[
            Granted {
                login: &reserved,
                hash: &password_hash,
                vhost: &shop,
                configure: ".*",
            },
            Granted {
                login: &long,
                hash: &password_hash,
                vhost: &shop,
                configure: ".*",
            },
        ],
    );
    let output = provision(root.path());
    assert!(
        output.status.success(),
        "{}{}",
        stdout(&output),
        String::from_utf8_lossy(&output.stderr)
    );
    for login in [&reserved, &long] {
        assert!(
            stdout(&output).contains(&format!("created   login `{login}`")),
            "{}",
            stdout(&output)
        );
        let user = api("GET", &format!("users/{login}"), None).expect("the user");
        assert_eq!(user["password_hash"], password_hash.as_str());
        assert_eq!(permissions(login)[0]["vhost"], shop.as_str());
    }
}
