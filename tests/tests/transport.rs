//! Transport over the real RabbitMQ on 127.0.0.1:5672, with the real binaries
//! (`meshc`, `mesh-apply --listen`, `mesh-build`). Each test makes its own vhost with
//! `rabbitmqctl` and deletes it afterwards; a broker that does not answer fails the
//! test with the reason (`scripts/services` starts it), it never skips.
//!
//! - three nodes' plans published and applied by three listeners, reports arrive,
//!   queues drain;
//! - the broker drops every connection mid-run: listeners and builder reconnect,
//!   nothing is lost, nothing is applied twice;
//! - the builder killed during a build: the request is redelivered and the record
//!   holds exactly one result for it;
//! - with the generated permissions, node A reading B's queue or publishing B's status
//!   is refused (ACCESS_REFUSED), and each user can still do its own job;
//! - malformed messages are rejected without requeue, reported, and the listener goes
//!   on;
//! - a plan that waited in the queue while a newer one was applied on the node (by
//!   hand, or after the listener's ack of it was lost) is refused with E546 when it
//!   arrives, not applied over the newer one.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plan::{Directory, File, Plan, Resource, Shape, Source};
use serde_json::Value;
use tests::{base_root, binary, copy_tree, make_private, workspace_root};
use transport::message::{BuildRequest, BuildResult, Outcome, Outgoing, StatusReport};
use transport::{Client, names};

// ---------------------------------------------------------------- the broker

fn rabbitmqctl(arguments: &[&str]) -> Output {
    Command::new("rabbitmqctl")
        .args(arguments)
        .output()
        .unwrap_or_else(|error| {
            panic!("cannot run rabbitmqctl ({error}): install RabbitMQ and run scripts/services")
        })
}

fn rabbitmqctl_ok(arguments: &[&str]) -> String {
    let output = rabbitmqctl(arguments);
    assert!(
        output.status.success(),
        "rabbitmqctl {} failed (is RabbitMQ running? scripts/services starts it):\n{}{}",
        arguments.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A fresh vhost on the local broker, deleted when dropped.
struct Broker {
    vhost: String,
}

impl Broker {
    fn fresh(test: &str) -> Broker {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .subsec_nanos();
        let vhost = format!("mesh-test-{test}-{}-{nanos}", std::process::id());
        rabbitmqctl_ok(&["-q", "add_vhost", &vhost]);
        let broker = Broker { vhost };
        rabbitmqctl_ok(&[
            "-q",
            "set_permissions",
            "-p",
            &broker.vhost,
            "guest",
            ".*",
            ".*",
            ".*",
        ]);
        // the broker answers AMQP, not only rabbitmqctl
        let client = Client::connect(&broker.url(), "test").unwrap_or_else(|error| {
            panic!("the broker on 127.0.0.1:5672 does not answer: {error}")
        });
        client.close();
        broker
    }

    fn url(&self) -> String {
        self.url_as("guest", "guest")
    }

    fn url_as(&self, user: &str, password: &str) -> String {
        format!("amqp://{user}:{password}@127.0.0.1:5672/{}", self.vhost)
    }

    fn client(&self) -> Client {
        Client::connect(&self.url(), "test").expect("the test connects")
    }

    fn close_all_connections(&self) {
        rabbitmqctl_ok(&[
            "-q",
            "close_all_connections",
            "-p",
            &self.vhost,
            "the test drops every connection",
        ]);
    }

    /// Messages in each queue, ready and unacknowledged together.
    fn queue_totals(&self) -> BTreeMap<String, u64> {
        rabbitmqctl_ok(&["-q", "list_queues", "-p", &self.vhost, "name", "messages"])
            .lines()
            .filter_map(|line| {
                let mut fields = line.split_whitespace();
                let name = fields.next()?.to_string();
                let count = fields.next()?.parse().ok()?;
                Some((name, count))
            })
            .collect()
    }

    /// Waits until the named queues hold nothing at all.
    fn wait_drained(&self, queues: &[String], timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let totals = self.queue_totals();
            if queues
                .iter()
                .all(|queue| totals.get(queue).copied() == Some(0))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "queues not drained after {timeout:?}: {totals:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A durable queue that keeps every message with `key` until the test reads it,
    /// whatever happens to the test's connections meanwhile.
    fn observer(&self, queue: &str, key: &str) {
        let mut client = self.client();
        client.declare_observer(queue, key).expect("observer queue");
        client.close();
    }

    /// Reads everything in an observer queue (reconnecting for each attempt).
    fn drain(&self, queue: &str) -> Vec<transport::Incoming> {
        let mut client = self.client();
        let mut messages = Vec::new();
        while let Some(message) = client.get(queue).expect("basic.get") {
            messages.push(message);
        }
        client.close();
        messages
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = rabbitmqctl(&["-q", "delete_vhost", &self.vhost]);
    }
}

/// Collects observer messages until `enough` says so.
fn collect<T>(
    broker: &Broker,
    queue: &str,
    timeout: Duration,
    parse: impl Fn(&transport::Incoming) -> T,
    enough: impl Fn(&[T]) -> bool,
) -> Vec<T> {
    let deadline = Instant::now() + timeout;
    let mut collected = Vec::new();
    loop {
        collected.extend(broker.drain(queue).iter().map(&parse));
        if enough(&collected) || Instant::now() > deadline {
            return collected;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn status(message: &transport::Incoming) -> StatusReport {
    StatusReport::parse(&message.body).expect("a status report")
}

// ---------------------------------------------------------------- processes

struct Binaries {
    meshc: PathBuf,
    apply: PathBuf,
    build: PathBuf,
}

fn binaries() -> Binaries {
    Binaries {
        meshc: binary("meshc", "meshc"),
        apply: binary("applier", "mesh-apply"),
        build: binary("transport", "mesh-build"),
    }
}

/// A running binary whose output lines are collected as they come.
struct Process {
    child: Child,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Process {
    fn spawn(command: &mut Command) -> Process {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary starts");
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        for (pipe, lines) in [
            (
                Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
                stdout.clone(),
            ),
            (
                Box::new(child.stderr.take().expect("stderr")),
                stderr.clone(),
            ),
        ] {
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    lines.lock().expect("lines").push(line);
                }
            });
        }
        Process {
            child,
            stdout,
            stderr,
        }
    }

    fn stdout(&self) -> Vec<String> {
        self.stdout.lock().expect("lines").clone()
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr.lock().expect("lines").clone()
    }

    /// Waits until a stderr line contains `needle`; the line.
    fn wait_stderr(&self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.stderr().into_iter().find(|line| line.contains(needle)) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "no line with `{needle}` after {timeout:?}; stderr:\n{}",
                self.stderr().join("\n")
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

fn listener(binaries: &Binaries, url: &str, node: &str, identity: &Path, root: &Path) -> Process {
    Process::spawn(
        Command::new(&binaries.apply)
            .args([
                "--listen", "--node", node, "--amqp", url, "--format", "json",
            ])
            .arg("--identity")
            .arg(identity)
            .arg("--root")
            .arg(root),
    )
}

fn builder(binaries: &Binaries, url: &str, repository: &Path, store: &Path) -> Process {
    Process::spawn(
        Command::new(&binaries.build)
            .args(["--amqp", url, "--name", "test-builder"])
            .arg("--repo")
            .arg(repository)
            .arg("--store")
            .arg(store),
    )
}

/// The status reports a listener printed (`--format json`), in order.
fn printed_reports(process: &Process) -> Vec<StatusReport> {
    process
        .stdout()
        .iter()
        .map(|line| serde_json::from_str(line).expect("a JSON status line"))
        .collect()
}

fn succeeded(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---------------------------------------------------------------- plans

fn homelab() -> PathBuf {
    workspace_root().join("examples/homelab")
}

/// Builds a copy of the example fleet into `directory/build`; the manifest.
fn build_homelab(binaries: &Binaries, directory: &Path) -> (PathBuf, Value) {
    let repository = directory.join("homelab");
    copy_tree(&homelab(), &repository);
    let out = directory.join("build");
    let output = Command::new(&binaries.meshc)
        .arg("build")
        .arg("--repo")
        .arg(&repository)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("meshc runs");
    succeeded(&output, "meshc build");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("manifest JSON");
    (out, manifest)
}

/// The example's identity of `node`, copied once per test process to a private file
/// (mode 0600, as `mesh-apply` requires: E541; the committed key is checked out 0644).
fn identity(node: &str) -> PathBuf {
    static PRIVATE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let directory = PRIVATE.get_or_init(|| tempfile::tempdir().expect("identities"));
    let private = directory.path().join(format!("{node}.key"));
    if !private.exists() {
        let committed = homelab().join("identities").join(format!("{node}.key"));
        let staged = directory
            .path()
            .join(format!("{node}.key.{:?}", std::thread::current().id()));
        std::fs::copy(&committed, &staged).expect("copy the identity");
        make_private(&staged);
        // tests run in parallel: the rename makes the private file appear whole
        std::fs::rename(&staged, &private).expect("place the identity");
    }
    private
}

/// A small hand-made plan: `/srv/NODE` holding a file with `content`.
fn small_plan(node: &str, content: &str) -> Plan {
    let source = Source {
        file: "modules/app/module.nix".to_string(),
        line: 1,
        column: 1,
    };
    let directory = format!("/srv/{node}");
    Plan::new(
        node,
        vec![
            Shape::new(
                Resource::Directory(Directory {
                    path: directory.clone(),
                    owner: "root".to_string(),
                    group: "root".to_string(),
                    mode: "0755".to_string(),
                }),
                "app",
                source.clone(),
            ),
            Shape::new(
                Resource::File(File {
                    path: format!("{directory}/version"),
                    content: Some(content.to_string()),
                    content_base64: None,
                    owner: "root".to_string(),
                    group: "root".to_string(),
                    mode: "0644".to_string(),
                }),
                "app",
                source,
            ),
        ],
    )
}

fn plan_message(plan: &Plan) -> Outgoing {
    Outgoing::plan(plan.node(), plan.digest(), plan.to_json_bytes())
}

fn root(directory: &Path, node: &str) -> PathBuf {
    let root = directory.join("roots").join(node);
    base_root(&root);
    root
}

fn applied_digest(root: &Path) -> Option<String> {
    let bytes = std::fs::read(root.join("var/lib/mesh/applied.json")).ok()?;
    let record: Value = serde_json::from_slice(&bytes).ok()?;
    (record["state"] == "applied").then(|| record["plan"].as_str().map(str::to_string))?
}

// ---------------------------------------------------------------- tests

#[test]
fn three_nodes_published_and_applied_by_three_listeners() {
    let binaries = binaries();
    let broker = Broker::fresh("three");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let (out, manifest) = build_homelab(&binaries, temporary.path());
    let nodes = ["app1", "app2", "db1"];
    broker.observer("test.status", names::ALL_STATUS_KEY);
    let mut client = broker.client();
    client.declare_topology(&nodes).expect("topology");
    client.close();
    let roots: BTreeMap<&str, PathBuf> = nodes
        .iter()
        .map(|node| (*node, root(temporary.path(), node)))
        .collect();
    let listeners: Vec<Process> = nodes
        .iter()
        .map(|node| {
            listener(
                &binaries,
                &broker.url(),
                node,
                &identity(node),
                &roots[node],
            )
        })
        .collect();

    let mut publish = Command::new(&binaries.meshc);
    publish
        .arg("publish")
        .arg("--out")
        .arg(&out)
        .args(["--amqp", &broker.url()]);
    for node in nodes {
        publish.args(["--node", node]);
    }
    let published = publish.output().expect("meshc publish runs");
    succeeded(&published, "meshc publish");
    let stdout = String::from_utf8_lossy(&published.stdout);
    for node in nodes {
        let digest = manifest["nodes"][node].as_str().expect("digest");
        assert!(
            stdout.lines().any(|line| line.starts_with(node)
                && line.contains(digest)
                && line.ends_with("published")),
            "meshc publish reports each node: {stdout}"
        );
    }

    let reports = collect(
        &broker,
        "test.status",
        Duration::from_secs(60),
        status,
        |reports| reports.len() >= nodes.len(),
    );
    assert_eq!(reports.len(), nodes.len(), "{reports:#?}");
    for node in nodes {
        let report = reports
            .iter()
            .find(|report| report.node == node)
            .unwrap_or_else(|| panic!("no report from `{node}`: {reports:#?}"));
        let digest = manifest["nodes"][node].as_str().expect("digest");
        assert_eq!(report.outcome, Outcome::Applied, "{report:#?}");
        assert_eq!(report.plan.as_deref(), Some(digest));
        assert_eq!(report.message_id.as_deref(), Some(digest));
        assert!(report.counts["created"] > 0, "{report:#?}");
        assert_eq!(report.counts["failed"], 0, "{report:#?}");
        assert!(report.errors.is_empty(), "{report:#?}");
        assert_eq!(applied_digest(&roots[node]).as_deref(), Some(digest));
    }
    let queues: Vec<String> = nodes.iter().map(|node| names::node_queue(node)).collect();
    broker.wait_drained(&queues, Duration::from_secs(10));
    for listener in &listeners {
        assert_eq!(
            printed_reports(listener).len(),
            1,
            "{:?}",
            listener.stdout()
        );
    }
}

#[test]
fn listeners_and_builder_reconnect_when_the_broker_drops_every_connection() {
    let binaries = binaries();
    let broker = Broker::fresh("drop");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let nodes = ["alpha", "beta", "gamma"];
    let versions = 30;
    broker.observer("test.status", names::ALL_STATUS_KEY);
    broker.observer("test.results", names::BUILD_RESULT_KEY);
    let mut client = broker.client();
    client.declare_topology(&nodes).expect("topology");
    client.close();

    // the builder's repository: a few small directories
    let repository = temporary.path().join("repository");
    for index in 0..6 {
        let directory = repository.join(format!("modules/site{index}/public"));
        std::fs::create_dir_all(&directory).expect("directory");
        std::fs::write(directory.join("index.html"), format!("<p>{index}</p>\n")).expect("file");
    }
    let store = temporary.path().join("store");
    let mut build = builder(&binaries, &broker.url(), &repository, &store);

    let roots: BTreeMap<&str, PathBuf> = nodes
        .iter()
        .map(|node| (*node, root(temporary.path(), node)))
        .collect();
    let mut listeners: Vec<Process> = nodes
        .iter()
        .map(|node| {
            listener(
                &binaries,
                &broker.url(),
                node,
                &identity("db1"),
                &roots[node],
            )
        })
        .collect();
    for process in listeners.iter().chain([&build]) {
        process.wait_stderr("connected to", Duration::from_secs(30));
    }

    let plans: BTreeMap<&str, Vec<Plan>> = nodes
        .iter()
        .map(|node| {
            (
                *node,
                (0..versions)
                    .map(|version| small_plan(node, &format!("version {version}\n")))
                    .collect(),
            )
        })
        .collect();
    let mut correlation_ids = Vec::new();
    // three waves: publish a third of the plans and two build requests, then drop
    // every connection while the listeners and the builder are at work
    for wave in 0..3 {
        let mut client = broker.client();
        let mut messages = Vec::new();
        for node in nodes {
            let wave_plans = &plans[node][wave * versions / 3..(wave + 1) * versions / 3];
            messages.extend(wave_plans.iter().map(plan_message));
        }
        for index in [wave * 2, wave * 2 + 1] {
            let id = format!("request-{index}");
            messages
                .push(BuildRequest::new(&format!("modules/site{index}/public")).to_outgoing(&id));
            correlation_ids.push(id);
        }
        for result in client.publish_all(&messages).expect("publish") {
            result.expect("confirmed");
        }
        client.close();
        std::thread::sleep(Duration::from_millis(40));
        broker.close_all_connections();
        std::thread::sleep(Duration::from_millis(300));
    }

    // every plan was handled and the last one is what each node has
    let everything: BTreeSet<String> = plans
        .values()
        .flatten()
        .map(|plan| plan.digest().to_string())
        .collect();
    let reports = collect(
        &broker,
        "test.status",
        Duration::from_secs(120),
        status,
        |reports| {
            let handled: BTreeSet<&str> = reports
                .iter()
                .filter_map(|report| report.plan.as_deref())
                .collect();
            everything
                .iter()
                .all(|digest| handled.contains(digest.as_str()))
        },
    );
    for report in &reports {
        assert!(
            matches!(report.outcome, Outcome::Applied | Outcome::AlreadyApplied),
            "{report:#?}"
        );
    }
    let handled: BTreeSet<String> = reports.iter().filter_map(|r| r.plan.clone()).collect();
    assert_eq!(handled, everything, "every published plan was reported on");
    for node in nodes {
        let last = plans[node].last().expect("plans");
        assert_eq!(applied_digest(&roots[node]).as_deref(), Some(last.digest()));
        assert_eq!(
            std::fs::read_to_string(roots[node].join(format!("srv/{node}/version")))
                .expect("the file"),
            format!("version {}\n", versions - 1)
        );
    }
    let queues: Vec<String> = nodes.iter().map(|node| names::node_queue(node)).collect();
    broker.wait_drained(&queues, Duration::from_secs(30));

    // nothing applied twice: each listener ran the applier once per plan, in order
    for (node, process) in nodes.iter().zip(&listeners) {
        let printed = printed_reports(process);
        let applied: Vec<&str> = printed
            .iter()
            .filter(|report| report.outcome == Outcome::Applied)
            .filter_map(|report| report.plan.as_deref())
            .collect();
        let expected: Vec<&str> = plans[node].iter().map(Plan::digest).collect();
        assert_eq!(
            applied, expected,
            "node `{node}` applied each plan once, in order"
        );
        let reconnected = process
            .stderr()
            .iter()
            .filter(|line| line.starts_with("connected to"))
            .count();
        assert!(
            reconnected >= 4,
            "node `{node}` reconnected after each drop:\n{}",
            process.stderr().join("\n")
        );
    }

    // every build answered, and recorded once
    let results = collect(
        &broker,
        "test.results",
        Duration::from_secs(60),
        |message| BuildResult::parse(&message.body).expect("a build result"),
        |results| {
            correlation_ids.iter().all(|id| {
                results
                    .iter()
                    .any(|result| result.correlation_id.as_ref() == Some(id))
            })
        },
    );
    let contents = transport::builder::read_record(&store).expect("record");
    assert!(contents.unreadable.is_empty());
    let record = contents.results;
    for id in &correlation_ids {
        assert!(
            results
                .iter()
                .any(|result| result.correlation_id.as_ref() == Some(id)
                    && result.outcome == transport::BuildOutcome::Built),
            "a result for {id}: {results:#?}"
        );
        assert_eq!(
            record
                .iter()
                .filter(|result| result.correlation_id.as_ref() == Some(id))
                .count(),
            1,
            "exactly one recorded result for {id}"
        );
    }
    broker.wait_drained(&[names::BUILD_QUEUE.to_string()], Duration::from_secs(30));
    let reconnected = build
        .stderr()
        .iter()
        .filter(|line| line.starts_with("connected to"))
        .count();
    assert!(reconnected >= 4, "{}", build.stderr().join("\n"));
    for process in listeners.iter_mut().chain([&mut build]) {
        assert!(process.is_running(), "{}", process.stderr().join("\n"));
    }
}

#[test]
fn a_builder_killed_during_a_build_leaves_the_request_for_the_next_one() {
    let binaries = binaries();
    let broker = Broker::fresh("kill");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repository");
    let directory = repository.join("modules/big/data");
    std::fs::create_dir_all(&directory).expect("directory");
    // big enough that archiving and storing it takes a while (sparse: no disk used)
    let big = std::fs::File::create(directory.join("blob")).expect("blob");
    big.set_len(256 << 20).expect("sparse blob");
    drop(big);
    std::fs::write(directory.join("README"), "big\n").expect("file");
    let store = temporary.path().join("store");
    broker.observer("test.results", names::BUILD_RESULT_KEY);
    let mut client = broker.client();
    client.declare_topology(&[]).expect("topology");

    let mut first = builder(&binaries, &broker.url(), &repository, &store);
    first.wait_stderr("connected to", Duration::from_secs(30));
    let id = "the-request";
    client
        .publish(&BuildRequest::new("modules/big/data").to_outgoing(id))
        .expect("request published");
    client.close();
    first.wait_stderr(&format!("(request {id})"), Duration::from_secs(30));
    first.kill();
    assert!(
        !first.stderr().iter().any(|line| line.starts_with("built ")),
        "the kill came after the build finished; make the blob bigger:\n{}",
        first.stderr().join("\n")
    );
    let totals = broker.queue_totals();
    assert_eq!(
        totals.get(names::BUILD_QUEUE),
        Some(&1),
        "the request is back: {totals:?}"
    );

    let second = builder(&binaries, &broker.url(), &repository, &store);
    let results = collect(
        &broker,
        "test.results",
        Duration::from_secs(120),
        |message| BuildResult::parse(&message.body).expect("a build result"),
        |results| !results.is_empty(),
    );
    let redelivered = second.wait_stderr(&format!("(request {id}"), Duration::from_secs(5));
    assert!(
        redelivered.contains("redelivered") || redelivered.contains("answered before"),
        "{redelivered}"
    );
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0].correlation_id.as_deref(), Some(id));
    assert_eq!(results[0].outcome, transport::BuildOutcome::Built);
    let digest = results[0].digest.clone().expect("a digest");
    assert!(
        store.join(archive::file_name(&digest)).is_file(),
        "stored content-addressed"
    );
    let record = transport::builder::read_record(&store)
        .expect("record")
        .results;
    let recorded: Vec<&BuildResult> = record
        .iter()
        .filter(|result| result.correlation_id.as_deref() == Some(id))
        .collect();
    assert_eq!(recorded.len(), 1, "{record:#?}");
    assert_eq!(recorded[0].digest.as_deref(), Some(digest.as_str()));
    broker.wait_drained(&[names::BUILD_QUEUE.to_string()], Duration::from_secs(10));

    // the builds view shows it
    let view = Command::new(&binaries.meshc)
        .arg("builds")
        .arg("--store")
        .arg(&store)
        .output()
        .expect("meshc builds runs");
    succeeded(&view, "meshc builds");
    let text = String::from_utf8_lossy(&view.stdout);
    assert!(
        text.contains(id) && text.contains(&digest) && text.contains("built"),
        "{text}"
    );
}

/// Deletes the users the permission script made, whatever the test did.
struct Users(Vec<String>);

impl Drop for Users {
    fn drop(&mut self) {
        for user in &self.0 {
            let _ = rabbitmqctl(&["-q", "delete_user", user]);
        }
    }
}

#[test]
fn generated_permissions_confine_each_node_and_the_builder() {
    let binaries = binaries();
    let broker = Broker::fresh("permissions");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let (out, manifest) = build_homelab(&binaries, temporary.path());
    let script = Command::new(&binaries.meshc)
        .arg("broker-permissions")
        .arg("--out")
        .arg(&out)
        .args(["--vhost", &broker.vhost])
        .output()
        .expect("meshc broker-permissions runs");
    succeeded(&script, "meshc broker-permissions");
    let script_path = temporary.path().join("permissions.sh");
    std::fs::write(&script_path, &script.stdout).expect("script");

    let nodes: Vec<String> = manifest["nodes"]
        .as_object()
        .expect("nodes")
        .keys()
        .cloned()
        .collect();
    let mut users = vec![
        transport::permissions::OPERATOR_USER.to_string(),
        transport::permissions::BUILDER_USER.to_string(),
    ];
    users.extend(
        nodes
            .iter()
            .map(|node| transport::permissions::node_user(node)),
    );
    let _cleanup = Users(users.clone());
    let passwords = temporary.path().join("passwords");
    std::fs::create_dir_all(&passwords).expect("passwords");
    let password = |user: &str| format!("pw-{user}-{}", std::process::id());
    for user in &users {
        std::fs::write(passwords.join(user), password(user)).expect("password file");
    }
    let ran = Command::new("sh")
        .arg(&script_path)
        .env("MESH_BROKER_PASSWORDS", &passwords)
        .output()
        .expect("sh runs");
    succeeded(&ran, "the permission script");

    let url_of = |user: &str| broker.url_as(user, &password(user));
    let node_a = transport::permissions::node_user("db1");
    let builder_user = transport::permissions::BUILDER_USER;
    let operator = transport::permissions::OPERATOR_USER;

    // the operator declares the topology and publishes plans
    let mut as_operator = Client::connect(&url_of(operator), "operator").expect("operator");
    let node_names: Vec<&str> = nodes.iter().map(String::as_str).collect();
    as_operator
        .declare_topology(&node_names)
        .expect("the operator declares");

    // node A (db1): its own queue and status, nothing of B (app1)
    let mut as_a = Client::connect(&url_of(&node_a), "node a").expect("node a connects");
    as_a.try_consume(&names::node_queue("db1"))
        .expect("a node reads its own queue");
    let refused = as_a
        .try_consume(&names::node_queue("app1"))
        .expect_err("a node must not read another node's queue");
    assert!(refused.is_access_refused(), "{refused}");
    let mut own = StatusReport::new("db1", Outcome::AlreadyApplied);
    own.reason = Some("test".to_string());
    as_a.publish(&own.to_outgoing())
        .expect("a node publishes its own status");
    let refused = as_a
        .publish(&StatusReport::new("app1", Outcome::Applied).to_outgoing())
        .expect_err("a node must not publish another node's status");
    assert!(refused.is_access_refused(), "{refused}");
    let app1_plan = std::fs::read(out.join("nodes/app1.json")).expect("plan");
    let app1_digest = manifest["nodes"]["app1"].as_str().expect("digest");
    let refused = as_a
        .publish(&Outgoing::plan("app1", app1_digest, app1_plan.clone()))
        .expect_err("a node must not publish plans");
    assert!(refused.is_access_refused(), "{refused}");
    let refused = as_a
        .declare_topology(&["db1"])
        .expect_err("a node must not configure the broker");
    assert!(refused.is_access_refused(), "{refused}");
    as_a.close();

    // the builder: the build queue and build results only
    let mut as_builder = Client::connect(&url_of(builder_user), "builder").expect("builder");
    as_builder
        .try_consume(names::BUILD_QUEUE)
        .expect("the builder reads the build queue");
    let refused = as_builder
        .try_consume(&names::node_queue("db1"))
        .expect_err("the builder must not read a node's queue");
    assert!(refused.is_access_refused(), "{refused}");
    let refused = as_builder
        .publish(&Outgoing::plan("app1", app1_digest, app1_plan))
        .expect_err("the builder must not publish plans");
    assert!(refused.is_access_refused(), "{refused}");
    let refused = as_builder
        .publish(&StatusReport::new("db1", Outcome::Applied).to_outgoing())
        .expect_err("the builder must not publish status");
    assert!(refused.is_access_refused(), "{refused}");
    as_builder.close();

    // and with these users the real work still gets done: the operator publishes
    // db1's plan, db1's listener (as its own user) applies it and reports
    broker.observer("test.status", names::ALL_STATUS_KEY);
    let db1_root = root(temporary.path(), "db1");
    let _listener = listener(
        &binaries,
        &url_of(&node_a),
        "db1",
        &identity("db1"),
        &db1_root,
    );
    let digest = manifest["nodes"]["db1"].as_str().expect("digest");
    let bytes = std::fs::read(out.join("nodes/db1.json")).expect("plan");
    as_operator
        .publish(&Outgoing::plan("db1", digest, bytes))
        .expect("the operator publishes plans");
    as_operator.close();
    let reports = collect(
        &broker,
        "test.status",
        Duration::from_secs(60),
        status,
        |reports| reports.iter().any(|r| r.plan.as_deref() == Some(digest)),
    );
    let report = reports
        .iter()
        .find(|report| report.plan.as_deref() == Some(digest))
        .unwrap_or_else(|| panic!("db1 applied and reported under its own user: {reports:#?}"));
    assert_eq!(report.outcome, Outcome::Applied, "{report:#?}");
}

#[test]
fn malformed_messages_are_rejected_reported_and_the_listener_goes_on() {
    let binaries = binaries();
    let broker = Broker::fresh("malformed");
    let temporary = tempfile::tempdir().expect("temporary directory");
    broker.observer("test.status", names::ALL_STATUS_KEY);
    let mut client = broker.client();
    client.declare_topology(&["db1"]).expect("topology");
    let db1_root = root(temporary.path(), "db1");
    let process = listener(&binaries, &broker.url(), "db1", &identity("db1"), &db1_root);
    process.wait_stderr("connected to", Duration::from_secs(30));

    let good = small_plan("db1", "good\n");
    let other = small_plan("app1", "for somebody else\n");
    let mut not_json = plan_message(&good);
    not_json.body = b"this is not JSON".to_vec();
    not_json.message_id = Some("not-json".to_string());
    let mut mislabelled = plan_message(&good);
    mislabelled.message_id = Some(format!("sha256:{}", "0".repeat(64)));
    let mut tampered = plan_message(&good);
    tampered.body = String::from_utf8(good.to_json_bytes())
        .expect("UTF-8")
        .replace("good\\n", "evil\\n")
        .into_bytes();
    tampered.message_id = Some("tampered".to_string());
    let mut for_another_node = plan_message(&other);
    for_another_node.routing_key = names::plan_key("db1");
    for message in [&not_json, &mislabelled, &tampered, &for_another_node] {
        client.publish(message).expect("published");
    }
    client.publish(&plan_message(&good)).expect("published");
    client.close();

    let reports = collect(
        &broker,
        "test.status",
        Duration::from_secs(60),
        status,
        |reports| reports.len() >= 5,
    );
    assert_eq!(reports.len(), 5, "{reports:#?}");
    let reasons: Vec<String> = reports[..4]
        .iter()
        .map(|report| {
            assert_eq!(report.outcome, Outcome::Rejected, "{report:#?}");
            assert_eq!(report.node, "db1");
            report.reason.clone().expect("a reason")
        })
        .collect();
    assert!(
        reasons[0].contains("not a plan") && reasons[0].contains("JSON"),
        "{reasons:?}"
    );
    assert_eq!(reports[0].message_id.as_deref(), Some("not-json"));
    assert!(
        reasons[1].contains("is not the plan's digest"),
        "{reasons:?}"
    );
    assert!(reasons[2].contains("digest"), "{reasons:?}");
    assert_eq!(reports[2].message_id.as_deref(), Some("tampered"));
    assert!(reasons[3].contains("node `app1`"), "{reasons:?}");
    assert_eq!(reports[4].outcome, Outcome::Applied, "{:#?}", reports[4]);
    assert_eq!(reports[4].plan.as_deref(), Some(good.digest()));
    assert_eq!(applied_digest(&db1_root).as_deref(), Some(good.digest()));
    assert_eq!(
        std::fs::read_to_string(db1_root.join("srv/db1/version")).expect("file"),
        "good\n"
    );

    // rejected for good: not requeued, not redelivered, nothing more reported
    broker.wait_drained(&[names::node_queue("db1")], Duration::from_secs(10));
    std::thread::sleep(Duration::from_secs(1));
    assert!(broker.drain("test.status").is_empty());
    assert_eq!(printed_reports(&process).len(), 5);

    // the same plan again is acknowledged without work
    let mut client = broker.client();
    client.publish(&plan_message(&good)).expect("published");
    client.close();
    let reports = collect(
        &broker,
        "test.status",
        Duration::from_secs(30),
        status,
        |reports| !reports.is_empty(),
    );
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].outcome, Outcome::AlreadyApplied, "{reports:#?}");
    broker.wait_drained(&[names::node_queue("db1")], Duration::from_secs(10));
}

/// `mesh-apply PLAN` run on the node by hand (as `meshc deploy` runs it over SSH).
fn apply_by_hand(binaries: &Binaries, directory: &Path, node_root: &Path, plan: &Plan) {
    let plan_path = directory.join(format!(
        "by-hand-{}.json",
        plan.digest().trim_start_matches("sha256:")
    ));
    std::fs::write(&plan_path, plan.to_json_bytes()).expect("plan file");
    let output = Command::new(&binaries.apply)
        .arg(&plan_path)
        .arg("--identity")
        .arg(identity(plan.node()))
        .arg("--root")
        .arg(node_root)
        .args(["--node", plan.node(), "--format", "json"])
        .output()
        .expect("mesh-apply runs");
    succeeded(&output, "mesh-apply PLAN");
}

/// The one status report the listener publishes next (on `test.status`, within a
/// minute).
fn the_one_report(broker: &Broker) -> StatusReport {
    let reports = collect(
        broker,
        "test.status",
        Duration::from_secs(60),
        status,
        |reports| !reports.is_empty(),
    );
    let [report] = reports.as_slice() else {
        panic!("one report: {reports:#?}")
    };
    report.clone()
}

fn error_codes(report: &StatusReport) -> Vec<&str> {
    report
        .errors
        .iter()
        .map(|error| error.code.as_str())
        .collect()
}

/// The listener was down; the operator published a plan (`meshc publish`), then
/// applied a newer one on the node by hand. The queue holds the older plan, and a
/// queue's order is all a listener had to go by: it applied the older plan over the
/// newer one when it started, a silent rollback. Now the published plan carries when
/// it was published, the node's record when it applied last, and the older plan is
/// answered `failed` with E546 and acknowledged; the node keeps the newer plan, and a
/// plan published after it is applied.
#[test]
fn a_plan_published_before_a_newer_one_applied_by_hand_is_refused_when_it_arrives() {
    let binaries = binaries();
    let broker = Broker::fresh("order");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let (out, manifest) = build_homelab(&binaries, temporary.path());
    let published = manifest["nodes"]["db1"]
        .as_str()
        .expect("digest")
        .to_string();
    broker.observer("test.status", names::ALL_STATUS_KEY);
    let db1_root = root(temporary.path(), "db1");

    // the listener is down: the plan waits in the node's queue
    let output = Command::new(&binaries.meshc)
        .arg("publish")
        .arg("--out")
        .arg(&out)
        .args(["--amqp", &broker.url(), "--node", "db1"])
        .output()
        .expect("meshc publish runs");
    succeeded(&output, "meshc publish");
    // a newer plan applied on the node by hand, after the publish
    let by_hand = small_plan("db1", "applied by hand\n");
    apply_by_hand(&binaries, temporary.path(), &db1_root, &by_hand);
    assert_eq!(applied_digest(&db1_root).as_deref(), Some(by_hand.digest()));

    let process = listener(&binaries, &broker.url(), "db1", &identity("db1"), &db1_root);
    let report = the_one_report(&broker);
    assert_eq!(report.outcome, Outcome::Failed, "{report:#?}");
    assert_eq!(report.plan.as_deref(), Some(published.as_str()));
    assert_eq!(error_codes(&report), ["E546"], "{report:#?}");
    assert!(
        report.errors[0]
            .message
            .contains("before the plan this node applied last"),
        "{report:#?}"
    );
    // the node keeps the plan applied by hand
    assert_eq!(applied_digest(&db1_root).as_deref(), Some(by_hand.digest()));
    assert_eq!(
        std::fs::read_to_string(db1_root.join("srv/db1/version")).expect("file"),
        "applied by hand\n"
    );
    // answered and acknowledged, not requeued
    broker.wait_drained(&[names::node_queue("db1")], Duration::from_secs(10));
    let printed = printed_reports(&process);
    assert_eq!(printed.as_slice(), std::slice::from_ref(&report));

    // a plan published afterwards is applied
    let later = small_plan("db1", "published later\n");
    let mut client = broker.client();
    client.publish(&plan_message(&later)).expect("published");
    client.close();
    let report = the_one_report(&broker);
    assert_eq!(report.outcome, Outcome::Applied, "{report:#?}");
    assert_eq!(applied_digest(&db1_root).as_deref(), Some(later.digest()));
    assert_eq!(
        std::fs::read_to_string(db1_root.join("srv/db1/version")).expect("file"),
        "published later\n"
    );
}

/// Takes one message from `queue` without acknowledging it, gives it to `work`, then
/// closes the connection without the ack: the broker puts the message back, with the
/// properties it was published with, as when a listener's connection drops between
/// its apply and its ack.
fn take_without_ack(url: &str, queue: &str, work: impl FnOnce(&transport::Incoming)) {
    use lapin::options::BasicGetOptions;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let connection = lapin::Connection::connect(url, lapin::ConnectionProperties::default())
            .await
            .expect("connects");
        let channel = connection.create_channel().await.expect("a channel");
        let message = channel
            .basic_get(queue.into(), BasicGetOptions { no_ack: false })
            .await
            .expect("basic.get")
            .expect("a message in the queue");
        let incoming = transport::client::incoming_of(&message.delivery);
        work(&incoming);
        connection
            .close(200, "the ack is lost".into())
            .await
            .expect("closed");
    });
}

/// A listener applied a plan and its ack was lost with its connection; meanwhile the
/// operator applied a newer plan by hand. The broker redelivers the first plan, with
/// the stamp it was published with: it is refused (E546), not applied again over the
/// newer one.
#[test]
fn a_plan_redelivered_after_a_lost_ack_does_not_undo_a_newer_apply() {
    let binaries = binaries();
    let broker = Broker::fresh("lost-ack");
    let temporary = tempfile::tempdir().expect("temporary directory");
    broker.observer("test.status", names::ALL_STATUS_KEY);
    let mut client = broker.client();
    client.declare_topology(&["db1"]).expect("topology");
    let first = small_plan("db1", "first\n");
    client.publish(&plan_message(&first)).expect("published");
    client.close();
    let db1_root = root(temporary.path(), "db1");

    // the listener's apply of it, whose ack is lost
    let config = applier::listen::ListenConfig {
        node: "db1".to_string(),
        identity_path: identity("db1"),
        root: Some(db1_root.clone()),
        artifacts: db1_root.join("var/lib/mesh/artifacts"),
        url: broker.url(),
        format: applier::OutputFormat::Json,
        print: false,
    };
    take_without_ack(&broker.url(), &names::node_queue("db1"), |incoming| {
        assert!(incoming.published_ms.is_some(), "{incoming:?}");
        let (report, _) = applier::listen::handle(&config, incoming);
        assert_eq!(report.outcome, Outcome::Applied, "{report:#?}");
    });
    assert_eq!(applied_digest(&db1_root).as_deref(), Some(first.digest()));
    let by_hand = small_plan("db1", "applied by hand\n");
    apply_by_hand(&binaries, temporary.path(), &db1_root, &by_hand);

    let _process = listener(&binaries, &broker.url(), "db1", &identity("db1"), &db1_root);
    let report = the_one_report(&broker);
    assert_eq!(report.outcome, Outcome::Failed, "{report:#?}");
    assert_eq!(report.plan.as_deref(), Some(first.digest()));
    assert_eq!(error_codes(&report), ["E546"], "{report:#?}");
    assert_eq!(applied_digest(&db1_root).as_deref(), Some(by_hand.digest()));
    assert_eq!(
        std::fs::read_to_string(db1_root.join("srv/db1/version")).expect("file"),
        "applied by hand\n"
    );
    broker.wait_drained(&[names::node_queue("db1")], Duration::from_secs(10));
}

/// What `mesh-build` logs of a request (its directory, its correlation id) is
/// escaped: both come from whoever can publish to the build queue, and reached the
/// terminal raw, escape sequences, bidirectional controls and line breaks with them.
#[test]
fn the_builder_logs_what_a_request_names_escaped() {
    let binaries = binaries();
    let broker = Broker::fresh("escapes");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("repository");
    std::fs::create_dir_all(&repository).expect("repository");
    let store = temporary.path().join("store");
    broker.observer("test.results", names::BUILD_RESULT_KEY);
    let mut client = broker.client();
    client.declare_topology(&[]).expect("topology");
    let builder = builder(&binaries, &broker.url(), &repository, &store);
    builder.wait_stderr("connected to", Duration::from_secs(30));
    let id = "id\u{1b}[2J";
    client
        .publish(
            &BuildRequest::new("mod\u{1b}[31mules/\u{9b}2J\u{202e}\nfake line").to_outgoing(id),
        )
        .expect("request published");
    client.close();
    let results = collect(
        &broker,
        "test.results",
        Duration::from_secs(60),
        |message| BuildResult::parse(&message.body).expect("a build result"),
        |results| !results.is_empty(),
    );
    assert_eq!(results[0].outcome, transport::BuildOutcome::Failed);
    let building = builder.wait_stderr("building `", Duration::from_secs(5));
    assert!(
        building.contains("mod\\u{1b}[31mules/\\u{9b}2J\\u{202e}\\u{a}fake line")
            && building.contains("id\\u{1b}[2J"),
        "{building}"
    );
    let lines = builder.stderr();
    assert!(
        lines
            .iter()
            .all(|line| !line.contains(['\u{1b}', '\u{9b}', '\u{202e}'])
                && !line.starts_with("fake line")),
        "{}",
        lines.join("\n")
    );
}
