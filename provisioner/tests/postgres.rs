//! `mesh-provision` against a real PostgreSQL: the list of issue 9, one test each, plus
//! drift repair and a server that is down when the provisioner starts.
//!
//! How: each test starts its own throwaway cluster with this machine's PostgreSQL
//! binaries (`support/cluster.rs` says how and why not the shared server at
//! 127.0.0.1:5432), where every TCP login, the superuser's included, needs
//! SCRAM-SHA-256 and `log_statement = all` is on. The provisioner is the real binary,
//! run with `--root` over a temporary tree holding the manifest and the credential
//! files, `--postgres` the superuser over TCP and `--password-file` its password, as the
//! standard postgres module runs it. Consumers log in with their plaintext passwords
//! through the `postgres` client crate, whose SCRAM exchange is the one applications
//! use; the verifiers the tests write are computed by `support/scram.rs`, the compiler's
//! algorithm reimplemented. A test that cannot start PostgreSQL fails with the reason.
//!
//! Timing: the machine has two cores shared with builds, so every wait is long
//! (`ALLOWANCE` beyond a poll interval for the reconcile itself to run) and a test
//! fails only when the provisioner is slower than that. Measured latencies are printed
//! (`cargo test -p provisioner --test postgres -- --nocapture`).

#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/scram.rs"]
mod scram;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use cluster::Cluster;
use serde_json::Value;
use sha2::{Digest, Sha256};

const BINARY: &str = env!("CARGO_BIN_EXE_mesh-provision");

/// Beyond one poll interval: how long a reconcile may itself take on a loaded machine.
const ALLOWANCE: Duration = Duration::from_secs(5);

/// For things that have no interval: a provisioner run, a first reconcile.
const PATIENCE: Duration = Duration::from_secs(120);

const CREDENTIALS: &str = "/var/lib/mesh/grants/postgres";

/// A node's tree as `mesh-apply --root` leaves it: the manifest and credential files.
struct Node {
    root: tempfile::TempDir,
}

impl Node {
    fn new() -> Node {
        let root = tempfile::Builder::new()
            .prefix("mesh-provision-root-")
            .tempdir()
            .expect("temporary root");
        std::fs::create_dir_all(root.path().join(CREDENTIALS.trim_start_matches('/')))
            .expect("credentials directory");
        std::fs::create_dir_all(root.path().join("etc/mesh/grants")).expect("grants directory");
        Node { root }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn manifest(&self) -> PathBuf {
        self.root.path().join("etc/mesh/grants/postgres.json")
    }

    fn credential_path(&self, login: &str) -> PathBuf {
        self.root
            .path()
            .join(CREDENTIALS.trim_start_matches('/'))
            .join(login)
    }

    /// Writes a login's verifier (atomically, as mesh-apply does); returns it.
    fn set_password(&self, login: &str, password: &str) -> String {
        let salt: [u8; 16] = Sha256::digest(format!("{login}/{password}").as_bytes())[..16]
            .try_into()
            .expect("16 bytes");
        let verifier = scram::verifier(password, &salt);
        self.write_credential(login, verifier.as_bytes());
        verifier
    }

    fn write_credential(&self, login: &str, bytes: &[u8]) {
        replace(&self.credential_path(login), bytes);
    }

    /// The manifest granting `logins` (each with an optional database), replaced by
    /// rename; returns its `sha256:` digest. `padding` spaces make equal grants differ.
    fn grant(&self, logins: &[(&str, Option<&str>)], padding: usize) -> String {
        let grants: Vec<Value> = logins
            .iter()
            .map(|(login, database)| {
                let mut grant = serde_json::json!({
                    "consumer": format!("{login}/shop/db"),
                    "login": login,
                    "credential": format!("{CREDENTIALS}/{login}"),
                    "form": "scram-sha-256",
                });
                if let Some(database) = database {
                    grant["database"] = Value::from(*database);
                }
                grant
            })
            .collect();
        let manifest = serde_json::json!({
            "format": "mesh-grants/1", "service": "postgres", "node": "db1", "grants": grants,
        });
        let text = format!("{manifest:#}{}\n", " ".repeat(padding));
        self.write_manifest(text.as_bytes())
    }

    fn write_manifest(&self, bytes: &[u8]) -> String {
        replace(&self.manifest(), bytes);
        format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
    }

    fn arguments(&self, cluster: &Cluster) -> Vec<String> {
        vec![
            "--manifest".into(),
            self.manifest().display().to_string(),
            "--root".into(),
            self.root().display().to_string(),
            "--postgres".into(),
            cluster.url(),
            "--password-file".into(),
            cluster.password_file().display().to_string(),
        ]
    }

    /// `mesh-provision` once.
    fn provision_once(&self, cluster: &Cluster) -> Output {
        Command::new(BINARY)
            .args(self.arguments(cluster))
            .output()
            .expect("mesh-provision runs")
    }

    /// `mesh-provision --watch --format json` in the background.
    fn watch(&self, cluster: &Cluster, interval: &str, repair_every: u32) -> Watcher {
        let mut child = Command::new(BINARY)
            .args(self.arguments(cluster))
            .args(["--watch", "--interval", interval, "--format", "json"])
            .args(["--repair-every", &repair_every.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("mesh-provision starts");
        let (sender, lines) = channel();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        for (stream, reader) in [
            (
                Stream::Out,
                Box::new(stdout) as Box<dyn std::io::Read + Send>,
            ),
            (Stream::Err, Box::new(stderr)),
        ] {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(reader).lines() {
                    let Ok(line) = line else { break };
                    if sender.send((stream, line)).is_err() {
                        break;
                    }
                }
            });
        }
        Watcher {
            child,
            lines,
            transcript: Vec::new(),
            unread: Vec::new(),
        }
    }
}

/// Replaces a file the way the host does: a temporary file, then rename.
fn replace(path: &Path, bytes: &[u8]) {
    let temporary = path.with_extension("mesh-tmp");
    std::fs::write(&temporary, bytes).expect("write the temporary file");
    std::fs::rename(&temporary, path).expect("rename over the file");
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    Out,
    Err,
}

/// A watching provisioner; killed when dropped.
struct Watcher {
    child: Child,
    lines: Receiver<(Stream, String)>,
    /// Every line read so far, for failure messages and secrecy checks.
    transcript: Vec<(Stream, String)>,
    /// Lines read and not yet matched by a wait: stdout and stderr arrive through two
    /// threads, so their lines may come in either order.
    unread: Vec<(Stream, String)>,
}

impl Watcher {
    /// The first line of `stream` not matched before that `matches`, within `timeout`.
    fn wait_for(
        &mut self,
        stream: Stream,
        timeout: Duration,
        what: &str,
        mut matches: impl FnMut(&str) -> bool,
    ) -> String {
        if let Some(position) = self
            .unread
            .iter()
            .position(|(from, line)| *from == stream && matches(line))
        {
            return self.unread.remove(position).1;
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((from, line)) => {
                    self.transcript.push((from, line.clone()));
                    if from == stream && matches(&line) {
                        return line;
                    }
                    self.unread.push((from, line));
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "no {what} within {timeout:?}; the provisioner said:\n{}",
                    self.said()
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "the provisioner ended ({:?}) before {what}; it said:\n{}",
                    self.child.try_wait(),
                    self.said()
                ),
            }
        }
    }

    /// The next JSON report that `matches`.
    fn wait_for_report(
        &mut self,
        timeout: Duration,
        what: &str,
        mut matches: impl FnMut(&Value) -> bool,
    ) -> Value {
        let line = self.wait_for(Stream::Out, timeout, what, |line| {
            serde_json::from_str::<Value>(line).is_ok_and(|report| matches(&report))
        });
        serde_json::from_str(&line).expect("a JSON report")
    }

    /// The report of the manifest with `digest`.
    fn wait_for_digest(&mut self, digest: &str, timeout: Duration) -> Value {
        self.wait_for_report(timeout, &format!("report of {digest}"), |report| {
            report["digest"] == digest
        })
    }

    fn said(&self) -> String {
        self.transcript
            .iter()
            .map(|(stream, line)| format!("{stream:?}: {line}\n"))
            .collect()
    }

    fn assert_running(&mut self) {
        assert!(
            matches!(self.child.try_wait(), Ok(None)),
            "the provisioner exited; it said:\n{}",
            self.said()
        );
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // cleanup of a child this test started; it may already be gone
        match self.child.kill().and_then(|()| self.child.wait().map(drop)) {
            Ok(()) | Err(_) => {}
        }
    }
}

/// A consumer's connection, through the `postgres` client crate.
fn log_in(
    cluster: &Cluster,
    login: &str,
    password: &str,
    database: &str,
) -> Result<postgres::Client, postgres::Error> {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(cluster.port)
        .user(login)
        .password(password)
        .dbname(database)
        .connect_timeout(Duration::from_secs(60))
        .connect(postgres::NoTls)
}

fn can_log_in(cluster: &Cluster, login: &str, password: &str) -> bool {
    log_in(cluster, login, password, "postgres").is_ok()
}

/// Polls `condition` every 50 ms; returns how long it took to hold, or panics.
fn eventually(timeout: Duration, what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    loop {
        if condition() {
            return started.elapsed();
        }
        if started.elapsed() > timeout {
            panic!("{what}: not within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A password no other test uses, so finding it anywhere means this test leaked it.
fn unique_password(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_nanos();
    format!("plain-{name}-{}-{nanos}", std::process::id())
}

/// `rolname|rolcanlogin|member of mesh_managed|rolpassword` as the catalog has it.
fn role_row(cluster: &Cluster, login: &str) -> String {
    cluster.psql(&format!(
        "SELECT rolname || '|' || rolcanlogin || '|' || \
           EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid \
                    WHERE m.member = a.oid AND g.rolname = 'mesh_managed') || '|' || \
           coalesce(rolpassword, '') \
         FROM pg_authid a WHERE rolname = '{login}'"
    ))
}

#[test]
fn consumer_logs_in_with_its_password_after_one_reconcile() {
    let cluster = Cluster::start();
    let node = Node::new();
    let password = unique_password("app1");
    let verifier = node.set_password("app1_shop_db", &password);
    node.grant(&[("app1_shop_db", None)], 0);
    assert!(
        !can_log_in(&cluster, "app1_shop_db", &password),
        "no login before the provisioner runs"
    );

    let output = node.provision_once(&cluster);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(
        stdout.contains("created   login `app1_shop_db`\n"),
        "{stdout}"
    );
    assert!(stdout.contains("created   role `mesh_managed`"), "{stdout}");
    assert!(
        stdout.contains(": 1 created, 0 updated, 0 enabled, 0 disabled, 0 unchanged, 0 failed\n"),
        "{stdout}"
    );

    let mut consumer = log_in(&cluster, "app1_shop_db", &password, "postgres")
        .expect("the consumer logs in with its plaintext password");
    let user: String = consumer
        .query_one("SELECT current_user::text", &[])
        .expect("a query")
        .get(0);
    assert_eq!(user, "app1_shop_db");
    assert!(!can_log_in(&cluster, "app1_shop_db", "not-the-password"));
    assert_eq!(
        role_row(&cluster, "app1_shop_db"),
        format!("app1_shop_db|true|true|{verifier}"),
        "a managed login holding the verifier as given"
    );
    assert_eq!(
        cluster.psql("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'mesh_managed'"),
        "f",
        "the marker role never logs in"
    );

    // a second run finds nothing to do
    let output = node.provision_once(&cluster);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.ends_with(": 0 created, 0 updated, 0 enabled, 0 disabled, 1 unchanged, 0 failed\n"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
}

#[test]
fn withdrawn_login_is_refused_within_one_interval_its_session_ends_and_its_rows_stay() {
    let cluster = Cluster::start();
    let node = Node::new();
    let password = unique_password("app1");
    node.set_password("app1_shop_db", &password);
    node.set_password("app2_shop_db", &unique_password("app2"));
    let both = [("app1_shop_db", Some("shop")), ("app2_shop_db", None)];
    let first = node.grant(&both, 0);
    let interval = Duration::from_secs(1);
    let mut watcher = node.watch(&cluster, "1", 1000);
    let report = watcher.wait_for_digest(&first, PATIENCE);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["counts"]["databases_created"], 1, "{report}");

    // the consumer makes a table in the database its grant asked for, and stays
    let mut session = log_in(&cluster, "app1_shop_db", &password, "shop").expect("logs in");
    session
        .batch_execute(
            "CREATE TABLE orders (id integer PRIMARY KEY); INSERT INTO orders VALUES (1), (2), (3)",
        )
        .expect("the owner of `shop` makes a table");

    let withdrawn = node.grant(&[("app2_shop_db", None)], 0);
    let refused_after = eventually(interval + ALLOWANCE, "login refused", || {
        !can_log_in(&cluster, "app1_shop_db", &password)
    });
    println!(
        "withdrawn: login refused {refused_after:?} after the manifest was replaced (interval {interval:?})"
    );
    let report = watcher.wait_for_digest(&withdrawn, interval + ALLOWANCE);
    let actions = report["actions"].as_array().expect("actions");
    assert!(
        actions.contains(&serde_json::json!({"action": "disabled", "login": "app1_shop_db"})),
        "{report}"
    );
    // the open session, and any of the test's own login attempts still closing
    assert!(
        actions
            .iter()
            .any(|action| action["action"] == "sessions-ended"
                && action["login"] == "app1_shop_db"
                && action["sessions"].as_u64() >= Some(1)),
        "{report}"
    );
    let error = session
        .simple_query("SELECT count(*) FROM orders")
        .expect_err("the open session was ended");
    assert!(
        error.is_closed()
            || error.code() == Some(&postgres::error::SqlState::ADMIN_SHUTDOWN)
            || error.to_string().contains("terminating connection"),
        "{error}"
    );
    assert_eq!(
        cluster.psql("SELECT count(*) FROM pg_stat_activity WHERE usename = 'app1_shop_db'"),
        "0"
    );
    // role, database and rows are kept
    assert_eq!(cluster.psql_in("shop", "SELECT count(*) FROM orders"), "3");
    assert_eq!(
        cluster.psql("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'app1_shop_db'"),
        "f"
    );

    // granted again: it logs in and finds what it had
    let again = node.grant(&both, 0);
    let back_after = eventually(interval + ALLOWANCE, "login accepted again", || {
        can_log_in(&cluster, "app1_shop_db", &password)
    });
    println!("granted again: login accepted {back_after:?} after the manifest was replaced");
    let report = watcher.wait_for_digest(&again, interval + ALLOWANCE);
    assert!(
        report["actions"]
            .as_array()
            .expect("actions")
            .contains(&serde_json::json!({"action": "enabled", "login": "app1_shop_db", "verifier_changed": false})),
        "{report}"
    );
    let mut session = log_in(&cluster, "app1_shop_db", &password, "shop").expect("logs in");
    let rows: i64 = session
        .query_one("SELECT count(*) FROM orders", &[])
        .expect("its table")
        .get(0);
    assert_eq!(rows, 3);
    watcher.assert_running();
}

#[test]
fn no_plaintext_password_reaches_the_server_log_activity_or_catalog() {
    let cluster = Cluster::start();
    let node = Node::new();
    let first_password = unique_password("first");
    let second_password = unique_password("second");
    let changed_password = unique_password("changed");
    let mut verifiers = vec![
        node.set_password("app1_shop_db", &first_password),
        node.set_password("app2_shop_db", &second_password),
    ];
    let both = [("app1_shop_db", None), ("app2_shop_db", None)];
    node.grant(&both, 0);
    let mut said = String::new();
    let mut run = |node: &Node| {
        let output = node.provision_once(&cluster);
        said.push_str(&text(&output.stdout));
        said.push_str(&text(&output.stderr));
        assert!(output.status.success(), "{said}");
    };
    run(&node);
    // every path that sets a verifier: create, update, disable, enable
    let mut first = log_in(&cluster, "app1_shop_db", &first_password, "postgres").expect("logs in");
    first.batch_execute("SELECT 1").expect("a query");
    verifiers.push(node.set_password("app2_shop_db", &changed_password));
    run(&node);
    node.grant(&[("app2_shop_db", None)], 0);
    run(&node);
    node.grant(&both, 0);
    run(&node);
    let mut first = log_in(&cluster, "app1_shop_db", &first_password, "postgres").expect("logs in");
    let mut second =
        log_in(&cluster, "app2_shop_db", &changed_password, "postgres").expect("logs in");
    assert!(!can_log_in(&cluster, "app2_shop_db", &second_password));

    // while these sessions are open, as the superuser sees them
    let activity = cluster.psql("SELECT string_agg(a::text, E'\\n') FROM pg_stat_activity a");
    let catalog = cluster.psql(
        "SELECT string_agg(rolname || ' ' || coalesce(rolpassword, ''), E'\\n') FROM pg_authid",
    );
    for session in [&mut first, &mut second] {
        session.batch_execute("SELECT 1").expect("still connected");
    }
    let log = cluster.server_log();
    assert!(
        log.contains("statement: "),
        "log_statement = all is on:\n{log}"
    );
    for password in [&first_password, &second_password, &changed_password] {
        assert!(
            !log.contains(password.as_str()),
            "a password in the server log"
        );
        assert!(
            !activity.contains(password.as_str()),
            "a password in pg_stat_activity"
        );
        assert!(
            !catalog.contains(password.as_str()),
            "a password in pg_authid"
        );
        assert!(
            !said.contains(password.as_str()),
            "a password in the provisioner's output"
        );
        let files = cluster.files_containing(password.as_bytes());
        assert!(files.is_empty(), "a password in {files:?}");
    }
    // what pg_authid holds for them is the verifiers, as given
    for (login, verifier) in [
        ("app1_shop_db", &verifiers[0]),
        ("app2_shop_db", &verifiers[2]),
    ] {
        let stored = cluster.psql(&format!(
            "SELECT rolpassword FROM pg_authid WHERE rolname = '{login}'"
        ));
        assert!(stored.starts_with("SCRAM-SHA-256$"), "{stored}");
        assert_eq!(&stored, verifier);
    }
    // and mesh keeps even the verifiers out of the log, the activity view and its output
    for verifier in &verifiers {
        let key = verifier.rsplit(':').next().expect("server key");
        assert!(!log.contains(key), "a verifier in the server log");
        assert!(!activity.contains(key), "a verifier in pg_stat_activity");
        assert!(
            !said.contains(key),
            "a verifier in the provisioner's output"
        );
    }
}

#[test]
fn an_unmanaged_role_with_the_same_name_pattern_is_untouched() {
    let cluster = Cluster::start();
    cluster.psql(
        "CREATE ROLE app9_shop_db LOGIN PASSWORD 'unmanaged-nine'; \
         CREATE ROLE app3_shop_db LOGIN PASSWORD 'unmanaged-three'; \
         CREATE ROLE app4_shop_db NOLOGIN",
    );
    let unmanaged = ["app9_shop_db", "app3_shop_db", "app4_shop_db"];
    let before: Vec<String> = unmanaged
        .iter()
        .map(|role| role_row(&cluster, role))
        .collect();
    let node = Node::new();
    let password = unique_password("app1");
    node.set_password("app1_shop_db", &password);
    node.set_password("app3_shop_db", &unique_password("app3"));

    // a grant for a name that an unmanaged role has: refused, the others go ahead
    node.grant(&[("app1_shop_db", None), ("app3_shop_db", None)], 0);
    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "error[E611]: login `app3_shop_db`: a role of that name exists and mesh does not \
             manage it (it is not a member of `mesh_managed`); left alone",
            "  = help: if the role is the consumer's from before mesh, hand it to mesh with \
             `GRANT mesh_managed TO \"app3_shop_db\"`; if it is someone else's, rename it or \
             give the consumer another name (the login is NODE_MODULE_NAME); the other grants \
             went ahead",
        ],
        "{stderr}"
    );
    assert!(can_log_in(&cluster, "app1_shop_db", &password));

    // nobody granted: the managed login is disabled, the unmanaged ones are not
    node.grant(&[], 0);
    let output = node.provision_once(&cluster);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(
        stdout.contains("disabled  login `app1_shop_db`"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("app9") && !stdout.contains("app3") && !stdout.contains("app4"),
        "{stdout}"
    );
    assert!(!can_log_in(&cluster, "app1_shop_db", &password));

    let after: Vec<String> = unmanaged
        .iter()
        .map(|role| role_row(&cluster, role))
        .collect();
    assert_eq!(before, after, "unmanaged roles are exactly as they were");
    assert!(can_log_in(&cluster, "app9_shop_db", "unmanaged-nine"));
    assert!(can_log_in(&cluster, "app3_shop_db", "unmanaged-three"));
}

#[test]
fn manifest_replaced_by_rename_100_times_every_version_is_seen() {
    let cluster = Cluster::start();
    let node = Node::new();
    let steady_password = unique_password("steady");
    let flip_password = unique_password("flip");
    node.set_password("steady", &steady_password);
    node.set_password("flip", &flip_password);
    let interval = Duration::from_millis(250);
    let mut watcher = node.watch(&cluster, "0.25", 1000);
    let version = |number: usize| -> Vec<(&str, Option<&str>)> {
        if number % 2 == 1 {
            vec![("flip", None), ("steady", None)]
        } else {
            vec![("steady", None)]
        }
    };
    let start = node.grant(&version(0), 0);
    watcher.wait_for_digest(&start, PATIENCE);

    // one at a time: each version is seen, and its state reached, within one interval
    let mut latencies = Vec::new();
    for number in 1..=100 {
        let digest = node.grant(&version(number), number);
        let replaced = Instant::now();
        let report = watcher.wait_for_digest(&digest, interval + ALLOWANCE);
        latencies.push(replaced.elapsed());
        assert_eq!(report["ok"], true, "version {number}: {report}");
        let expected = match number {
            1 => "created",
            odd if odd % 2 == 1 => "enabled",
            _ => "disabled",
        };
        assert_eq!(report["counts"][expected], 1, "version {number}: {report}");
        let flip = cluster.psql("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'flip'");
        assert_eq!(
            flip,
            if number % 2 == 1 { "t" } else { "f" },
            "version {number}"
        );
    }
    latencies.sort();
    println!(
        "100 versions one at a time (interval {interval:?}): reconciled after median {:?}, max {:?}",
        latencies[50], latencies[99]
    );

    // 100 more as fast as renames go: what is seen comes in order, the last is reconciled
    let digests: Vec<String> = (101..=200)
        .map(|number| node.grant(&version(number), number))
        .collect();
    let replaced = Instant::now();
    let last = digests.last().expect("100 digests").clone();
    let mut seen = Vec::new();
    watcher.wait_for_report(
        interval + ALLOWANCE,
        "the last version's report",
        |report| {
            if let Some(position) = digests
                .iter()
                .position(|digest| report["digest"] == *digest)
            {
                seen.push(position);
            }
            report["digest"] == last
        },
    );
    let elapsed = replaced.elapsed();
    println!(
        "100 versions back to back: the last reconciled {elapsed:?} after it was written; {} of them seen",
        seen.len()
    );
    assert!(
        seen.windows(2).all(|pair| pair[0] < pair[1]),
        "in order: {seen:?}"
    );
    // version 200 is even: flip is not granted
    assert_eq!(
        cluster.psql("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'flip'"),
        "f"
    );
    assert!(!can_log_in(&cluster, "flip", &flip_password));
    assert!(can_log_in(&cluster, "steady", &steady_password));
    watcher.assert_running();
}

#[test]
fn a_corrupt_manifest_in_the_middle_changes_nothing_and_is_recovered_from() {
    let cluster = Cluster::start();
    let node = Node::new();
    let first_password = unique_password("first");
    let second_password = unique_password("second");
    node.set_password("app1_shop_db", &first_password);
    node.set_password("app2_shop_db", &second_password);
    let good = node.grant(&[("app1_shop_db", None), ("app2_shop_db", None)], 0);
    let mut watcher = node.watch(&cluster, "0.5", 1000);
    let interval = Duration::from_millis(500);
    watcher.wait_for_digest(&good, PATIENCE);
    let state = || {
        (
            role_row(&cluster, "app1_shop_db"),
            role_row(&cluster, "app2_shop_db"),
        )
    };
    let good_state = state();

    // cut short while being written: reported, nothing changed, still polling
    let corrupt = node.write_manifest(b"{\"format\": \"mesh-grants/1\", \"grants\": [");
    let line = watcher.wait_for(Stream::Err, interval + ALLOWANCE, "an error line", |line| {
        line.starts_with("error[E601]: manifest ")
    });
    assert!(
        line.contains("EOF while parsing")
            && line.ends_with("nothing changed, keeping the last good state"),
        "{line}"
    );
    let report = watcher.wait_for_digest(&corrupt, interval + ALLOWANCE);
    assert_eq!(report["failure"], "input", "{report}");
    assert_eq!(state(), good_state);

    // well-formed, withdrawing app2, but app1's credential is not a verifier: the
    // withdrawal is not carried out either
    node.write_credential("app1_shop_db", b"hunter2\n");
    let withdrawing = node.grant(&[("app1_shop_db", None)], 0);
    let report = watcher.wait_for_digest(&withdrawing, interval + ALLOWANCE);
    assert_eq!(report["failure"], "input", "{report}");
    let error = report["errors"][0]["message"].as_str().expect("an error");
    assert!(
        error.contains("of login `app1_shop_db`: not a SCRAM-SHA-256 verifier"),
        "{error}"
    );
    assert_eq!(report["errors"][0]["code"], "E606", "{report}");
    assert!(
        !watcher.said().contains("hunter2"),
        "the credential's content is never said"
    );
    assert_eq!(state(), good_state);
    assert!(can_log_in(&cluster, "app2_shop_db", &second_password));

    // a credential file that is missing: the same
    std::fs::remove_file(node.credential_path("app1_shop_db")).expect("remove");
    let line = watcher.wait_for(
        Stream::Err,
        interval + ALLOWANCE,
        "a missing file",
        |line| line.contains("no such file"),
    );
    assert!(line.starts_with("error[E605]: credential "), "{line}");
    assert_eq!(state(), good_state);

    // fixed: the withdrawal happens
    node.set_password("app1_shop_db", &first_password);
    let report = watcher.wait_for_report(interval + ALLOWANCE, "a good reconcile", |report| {
        report["digest"] == withdrawing && report["ok"] == true
    });
    assert_eq!(report["counts"]["disabled"], 1, "{report}");
    assert!(can_log_in(&cluster, "app1_shop_db", &first_password));
    assert!(!can_log_in(&cluster, "app2_shop_db", &second_password));
    watcher.assert_running();

    // once: a bad manifest exits 1 with one problem saying what, why and what to do
    let corrupt_again = node.write_manifest(b"not json");
    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error[E601]: manifest `{}`: expected ident",
            node.manifest().display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("\n  = help: the file is not what meshc writes"),
        "{stderr}"
    );
    assert!(
        text(&output.stdout).contains(&corrupt_again[..19]),
        "the summary names the manifest's digest"
    );
}

#[test]
fn drift_is_repaired_every_n_polls() {
    let cluster = Cluster::start();
    let node = Node::new();
    let password = unique_password("app1");
    node.set_password("app1_shop_db", &password);
    node.set_password("app2_shop_db", &unique_password("app2"));
    let digest = node.grant(&[("app1_shop_db", None), ("app2_shop_db", None)], 0);
    let mut watcher = node.watch(&cluster, "0.3", 3);
    watcher.wait_for_digest(&digest, PATIENCE);
    let app2 = role_row(&cluster, "app2_shop_db");

    // somebody disables one login and changes another's password by hand
    cluster.psql("ALTER ROLE app1_shop_db NOLOGIN; ALTER ROLE app2_shop_db PASSWORD 'by-hand'");
    let repair = Duration::from_millis(300 * 3);
    let report = watcher.wait_for_report(repair + ALLOWANCE, "a repair", |report| {
        report["trigger"] == "repair"
    });
    assert_eq!(report["counts"]["enabled"], 1, "{report}");
    assert_eq!(report["counts"]["updated"], 1, "{report}");
    assert!(can_log_in(&cluster, "app1_shop_db", &password));
    assert_eq!(role_row(&cluster, "app2_shop_db"), app2);
    assert!(!can_log_in(&cluster, "app2_shop_db", "by-hand"));
}

#[test]
fn a_server_that_is_down_is_reported_and_retried_until_it_answers() {
    let mut cluster = Cluster::start();
    cluster.stop();
    let node = Node::new();
    let password = unique_password("app1");
    node.set_password("app1_shop_db", &password);
    node.grant(&[("app1_shop_db", None)], 0);

    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 2
            && lines[0].starts_with(&format!(
                "error[E608]: cannot connect to PostgreSQL at `127.0.0.1:{}`: ",
                cluster.port
            ))
            && lines[0].ends_with("; nothing changed")
            && lines[1].starts_with("  = help: check that PostgreSQL runs"),
        "{stderr}"
    );

    let mut watcher = node.watch(&cluster, "0.3", 1000);
    watcher.wait_for(Stream::Err, PATIENCE, "a connection error", |line| {
        line.starts_with("error[E608]: cannot connect to PostgreSQL")
    });
    cluster.restart();
    let report = watcher.wait_for_report(PATIENCE, "a reconcile once it answers", |report| {
        report["ok"] == true
    });
    assert_eq!(report["trigger"], "retry", "{report}");
    assert_eq!(report["counts"]["created"], 1, "{report}");
    assert!(can_log_in(&cluster, "app1_shop_db", &password));
    // a failing retry was said once, not at every poll
    let connection_errors = watcher
        .said()
        .lines()
        .filter(|line| line.contains("cannot connect"))
        .count();
    assert!(connection_errors <= 3, "{}", watcher.said());

    // restarted while the provisioner idles: its next reconcile opens a new session
    // instead of failing on the old one
    cluster.stop();
    cluster.restart();
    let errors_before = watcher.said().matches("Err: ").count();
    let digest = node.grant(&[], 0);
    let report = watcher.wait_for_digest(&digest, PATIENCE);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["counts"]["disabled"], 1, "{report}");
    assert_eq!(
        watcher.said().matches("Err: ").count(),
        errors_before,
        "{}",
        watcher.said()
    );
}

/// Membership of `mesh_managed` is the mark, and anyone with CREATEROLE (or a slip of
/// the hand) can give it to a superuser: the provisioner must still never disable such
/// a role nor set its password from a manifest, and never the role it connects as.
#[test]
fn a_privileged_member_of_the_marker_role_is_never_disabled_or_taken_over() {
    let cluster = Cluster::start();
    let node = Node::new();
    node.set_password("app1_shop_db", &unique_password("app1"));
    node.grant(&[("app1_shop_db", None)], 0);
    let output = node.provision_once(&cluster);
    assert!(output.status.success(), "{}", text(&output.stderr));
    cluster.psql(
        "CREATE ROLE hand_super SUPERUSER LOGIN PASSWORD 'hand-super'; \
         CREATE ROLE hand_files LOGIN PASSWORD 'hand-files' IN ROLE pg_write_server_files; \
         CREATE ROLE hand_delegate LOGIN CREATEROLE PASSWORD 'hand-delegate'; \
         GRANT mesh_managed TO hand_super, hand_files, hand_delegate, postgres",
    );
    let privileged = ["hand_super", "hand_files", "hand_delegate", "postgres"];
    let before: Vec<String> = privileged
        .iter()
        .map(|role| role_row(&cluster, role))
        .collect();

    // withdrawn (granted to nobody): none of them is disabled
    node.grant(&[("app1_shop_db", None)], 1);
    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for role in privileged {
        assert!(
            stderr.contains(&format!(
                "error[E612]: login `{role}`: a member of `mesh_managed` with more than mesh gives"
            )),
            "{stderr}"
        );
    }
    assert!(
        !text(&output.stdout).contains("disabled  login"),
        "{}",
        text(&output.stdout)
    );

    // granted with a credential the manifest's author knows: no password is set
    for role in privileged {
        node.set_password(role, &unique_password(role));
    }
    node.grant(
        &[
            ("app1_shop_db", None),
            ("hand_super", None),
            ("hand_files", None),
            ("hand_delegate", None),
            ("postgres", None),
        ],
        0,
    );
    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let after: Vec<String> = privileged
        .iter()
        .map(|role| role_row(&cluster, role))
        .collect();
    assert_eq!(before, after, "privileged roles are exactly as they were");
    assert!(can_log_in(&cluster, "hand_super", "hand-super"));
    assert!(can_log_in(&cluster, "hand_files", "hand-files"));
    assert!(can_log_in(
        &cluster,
        "postgres",
        cluster.superuser_password()
    ));
}

/// `public` and `none` make CREATE ROLE fail, which would fail the whole reconcile and
/// so block every withdrawal: the manifest is refused before anything is tried.
#[test]
fn a_reserved_role_name_is_a_malformed_manifest() {
    let cluster = Cluster::start();
    let node = Node::new();
    node.set_password("app1_shop_db", &unique_password("app1"));
    node.set_password("public", &unique_password("public"));
    node.grant(&[("app1_shop_db", None), ("public", None)], 0);
    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("login `public` is a name PostgreSQL reserves for roles; nothing changed"),
        "{stderr}"
    );
    assert!(stderr.starts_with("error[E603]: manifest `"), "{stderr}");
}

/// Where PUBLIC may create in the schema `public` (the default before PostgreSQL 15, and
/// in every database upgraded from one), a login can define a function named like a
/// catalog function that takes a better-matching argument type: `convert_to(text, text)`
/// beats `pg_catalog.convert_to(text, name)` for a string literal, whatever the
/// search_path's order. The provisioner calls such functions as the superuser; unless
/// it names `pg_catalog` and searches nothing else, the login's function runs as
/// the superuser and can make its author one.
#[test]
fn a_function_a_login_creates_in_public_never_runs_as_the_provisioner() {
    let cluster = Cluster::start();
    let node = Node::new();
    cluster.psql("GRANT CREATE ON SCHEMA public TO PUBLIC");
    let password = unique_password("app1");
    node.set_password("app1_shop_db", &password);
    node.grant(&[("app1_shop_db", None)], 0);
    let output = node.provision_once(&cluster);
    assert!(output.status.success(), "{}", text(&output.stderr));

    let mut consumer = log_in(&cluster, "app1_shop_db", &password, "postgres").expect("logs in");
    consumer
        .batch_execute(
            "CREATE TABLE public.ran (name text);
             GRANT INSERT ON public.ran TO PUBLIC;
             CREATE FUNCTION public.convert_to(text, text) RETURNS bytea
               LANGUAGE plpgsql AS $$
               BEGIN
                 INSERT INTO public.ran VALUES (current_user);
                 EXECUTE 'ALTER ROLE app1_shop_db SUPERUSER';
                 RETURN pg_catalog.convert_to($1, $2::name);
               EXCEPTION WHEN OTHERS THEN
                 RETURN pg_catalog.convert_to($1, $2::name);
               END $$;",
        )
        .expect("the consumer defines its functions");
    drop(consumer);

    // a new password makes the next reconcile read and compare verifiers
    node.set_password("app1_shop_db", &unique_password("app1-again"));
    let output = node.provision_once(&cluster);
    assert_eq!(
        cluster.psql("SELECT rolsuper FROM pg_roles WHERE rolname = 'app1_shop_db'"),
        "f",
        "the consumer made itself a superuser through the provisioner: {}",
        text(&output.stderr)
    );
    assert_eq!(
        cluster.psql("SELECT count(*) FROM public.ran"),
        "0",
        "a function of the consumer's ran in the provisioner's session"
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("updated   login `app1_shop_db`"),
        "{}",
        text(&output.stdout)
    );
}

/// Two grants reading one credential file would give two logins one verifier: whoever
/// knows the first login's password logs in as the second. The compiler never writes
/// that (each grant's file is `CREDENTIALS/LOGIN`); a manifest that names one file
/// twice, by the same path or through a link, is refused whole and changes nothing.
#[test]
fn two_grants_sharing_a_credential_file_are_refused_and_change_nothing() {
    let cluster = Cluster::start();
    let node = Node::new();
    let password = unique_password("app1");
    node.set_password("app1_shop_db", &password);
    let manifest = |second_credential: &str| {
        serde_json::json!({
            "format": "mesh-grants/1", "service": "postgres", "node": "db1",
            "grants": [
                {"consumer": "app1/shop/db", "login": "app1_shop_db",
                 "credential": format!("{CREDENTIALS}/app1_shop_db"), "form": "scram-sha-256"},
                {"consumer": "app2/shop/db", "login": "app2_shop_db",
                 "credential": second_credential, "form": "scram-sha-256"},
            ],
        })
        .to_string()
    };

    // the same file by another spelling of its path
    node.write_manifest(manifest(&format!("{CREDENTIALS}//app1_shop_db/")).as_bytes());
    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert!(
        !can_log_in(&cluster, "app2_shop_db", &password),
        "the second login logs in with the first one's password: {stderr}"
    );
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "grant of `app2/shop/db`: credential `{CREDENTIALS}//app1_shop_db/` is also the \
             credential of login `app1_shop_db`"
        )) && stderr.contains("nothing changed")
            && stderr.starts_with("error[E604]: "),
        "{stderr}"
    );
    assert!(!can_log_in(&cluster, "app1_shop_db", &password));

    // the same file through a symbolic link
    std::os::unix::fs::symlink(
        node.credential_path("app1_shop_db"),
        node.credential_path("app2_shop_db"),
    )
    .expect("a link");
    node.write_manifest(manifest(&format!("{CREDENTIALS}/app2_shop_db")).as_bytes());
    let output = node.provision_once(&cluster);
    let stderr = text(&output.stderr);
    assert!(
        !can_log_in(&cluster, "app2_shop_db", &password),
        "the second login logs in with the first one's password: {stderr}"
    );
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "credential `{}` of login `app2_shop_db`: the same file as the credential of \
             login `app1_shop_db`",
            node.credential_path("app2_shop_db").display()
        )) && stderr.contains("nothing changed")
            && stderr.starts_with("error[E604]: "),
        "{stderr}"
    );
    assert!(!can_log_in(&cluster, "app1_shop_db", &password));

    // each its own file: both are made
    std::fs::remove_file(node.credential_path("app2_shop_db")).expect("the link removed");
    let second = unique_password("app2");
    node.set_password("app2_shop_db", &second);
    let output = node.provision_once(&cluster);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(can_log_in(&cluster, "app1_shop_db", &password));
    assert!(can_log_in(&cluster, "app2_shop_db", &second));
    assert!(!can_log_in(&cluster, "app2_shop_db", &password));
}

/// Reading `pg_authid` and creating roles need a superuser: a provisioner pointed at
/// another role fails at its first such statement, with E609 and a help line that says
/// so, and changes nothing.
#[test]
fn a_provisioner_that_is_no_superuser_fails_with_e609() {
    let cluster = Cluster::start();
    let node = Node::new();
    node.set_password("app1_shop_db", &unique_password("app1"));
    node.grant(&[("app1_shop_db", None)], 0);
    let password = unique_password("plain");
    cluster.psql(&format!(
        "CREATE ROLE plain_admin LOGIN PASSWORD '{password}'"
    ));
    let password_file = node.root().join("plain-password");
    std::fs::write(&password_file, format!("{password}\n")).expect("a password file");
    let output = Command::new(BINARY)
        .arg("--manifest")
        .arg(node.manifest())
        .arg("--root")
        .arg(node.root())
        .arg("--postgres")
        .arg(format!(
            "postgres://plain_admin@127.0.0.1:{}/postgres",
            cluster.port
        ))
        .arg("--password-file")
        .arg(&password_file)
        .output()
        .expect("mesh-provision runs");
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 2
            && lines[0].starts_with("error[E609]: ")
            && lines[0].contains("permission denied")
            && lines[1].starts_with("  = help: ")
            && lines[1].contains("superuser"),
        "{stderr}"
    );
    assert!(!stderr.contains(&password), "{stderr}");
    assert!(
        text(&output.stdout).contains("(not completed)"),
        "{}",
        text(&output.stdout)
    );
    assert!(
        cluster
            .psql("SELECT rolname FROM pg_roles WHERE rolname = 'app1_shop_db'")
            .trim()
            .is_empty()
    );
}
