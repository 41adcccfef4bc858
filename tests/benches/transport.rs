//! Benchmark: plans for 1,000 nodes published through the local RabbitMQ and applied by
//! 1,000 listeners in this one process (one connection, one channel per node's queue,
//! prefetch 1, each applying into its own root under /dev/shm), timed from the first
//! publish to the last status report; then the same plans again, which every listener
//! acknowledges without work. Prints plans per second end to end.
//!
//! Run: `cargo bench -p tests --bench transport` (release profile); `MESH_BENCH_NODES`
//! changes the fleet size. Makes and deletes its own vhost with rabbitmqctl.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use applier::config::OutputFormat;
use applier::listen::{ListenConfig, worker};
use plan::{Directory, File, Plan, Resource, Shape, Source};
use transport::consume::{Log, Options};
use transport::message::{Outcome, StatusReport};
use transport::publish::PlanMessage;
use transport::{Client, Stop, names};

fn rabbitmqctl(arguments: &[&str]) {
    let output = Command::new("rabbitmqctl")
        .args(arguments)
        .output()
        .expect("rabbitmqctl runs (scripts/services starts RabbitMQ)");
    assert!(
        output.status.success(),
        "rabbitmqctl {}: {}",
        arguments.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn plan_for(node: &str, round: usize) -> Plan {
    let source = Source {
        file: "modules/app/module.nix".to_string(),
        line: 1,
        column: 1,
    };
    let directory = "/srv/app".to_string();
    let mut shapes = vec![Shape::new(
        Resource::Directory(Directory {
            path: directory.clone(),
            owner: "root".to_string(),
            group: "root".to_string(),
            mode: "0755".to_string(),
        }),
        "app",
        source.clone(),
    )];
    for index in 0..5 {
        shapes.push(Shape::new(
            Resource::File(File {
                path: format!("{directory}/file{index}.conf"),
                content: Some(format!("node = {node}\nround = {round}\nindex = {index}\n")),
                content_base64: None,
                owner: "root".to_string(),
                group: "root".to_string(),
                mode: "0644".to_string(),
            }),
            "app",
            source.clone(),
        ));
    }
    Plan::new(node, shapes)
}

fn base_root(root: &Path) {
    for directory in ["etc", "srv", "var/lib"] {
        std::fs::create_dir_all(root.join(directory)).expect("base directory");
    }
    std::fs::write(root.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n").expect("passwd");
    std::fs::write(root.join("etc/group"), "root:x:0:\n").expect("group");
    std::fs::write(root.join("etc/shadow"), "root:*:19000:0:99999:7:::\n").expect("shadow");
    std::fs::write(root.join("etc/gshadow"), "root:*::\n").expect("gshadow");
}

/// Publishes `plans` and waits for one status report per plan on `subscription`.
fn round(
    url: &str,
    client: &Client,
    subscription: &mut transport::client::Subscription,
    plans: &[Plan],
    expected: Outcome,
) -> (Duration, Duration) {
    let messages: Vec<PlanMessage> = plans
        .iter()
        .map(|plan| PlanMessage {
            node: plan.node().to_string(),
            digest: plan.digest().to_string(),
            bytes: plan.to_json_bytes(),
        })
        .collect();
    let started = Instant::now();
    for published in transport::publish::publish_plans(url, &messages).expect("publish") {
        published.result.expect("confirmed");
    }
    let published = started.elapsed();
    let mut waiting: BTreeSet<String> = plans.iter().map(|p| p.digest().to_string()).collect();
    while !waiting.is_empty() {
        let message = client
            .next(subscription, Duration::from_secs(120))
            .expect("subscription")
            .unwrap_or_else(|| panic!("{} plans not reported within 120 s", waiting.len()));
        let report = StatusReport::parse(&message.body).expect("status report");
        assert_eq!(report.outcome, expected, "{report:?}");
        if let Some(digest) = &report.plan {
            waiting.remove(digest);
        }
    }
    (published, started.elapsed())
}

fn main() {
    let nodes: usize = std::env::var("MESH_BENCH_NODES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1000);
    let vhost = format!("mesh-bench-{}", std::process::id());
    rabbitmqctl(&["-q", "add_vhost", &vhost]);
    rabbitmqctl(&[
        "-q",
        "set_permissions",
        "-p",
        &vhost,
        "guest",
        ".*",
        ".*",
        ".*",
    ]);
    let url = format!("amqp://guest:guest@127.0.0.1:5672/{vhost}");
    let shm = Path::new("/dev/shm");
    let roots = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .expect("roots");
    // a private copy of the example's identity: mesh-apply refuses one others may read
    let identity = roots.path().join("db1.key");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace")
            .join("examples/homelab/identities/db1.key"),
        &identity,
    )
    .expect("copy the identity");
    tests::make_private(&identity);
    let names: Vec<String> = (0..nodes).map(|index| format!("node{index:04}")).collect();

    let mut client = Client::connect(&url, "bench").expect("broker");
    let node_names: Vec<&str> = names.iter().map(String::as_str).collect();
    client.declare_topology(&node_names).expect("topology");
    let mut subscription = client.subscribe(names::ALL_STATUS_KEY).expect("subscribe");

    let log: Log = Arc::new(|line: &str| eprintln!("listeners: {line}"));
    let workers = names
        .iter()
        .map(|node| {
            let root = roots.path().join(node);
            base_root(&root);
            worker(
                ListenConfig {
                    node: node.clone(),
                    identity_path: identity.clone(),
                    root: Some(root.clone()),
                    artifacts: root.join("var/lib/mesh/artifacts"),
                    url: url.clone(),
                    format: OutputFormat::Human,
                    print: false,
                },
                log.clone(),
            )
        })
        .collect();
    let stop = Stop::new();
    let listening = {
        let stop = stop.clone();
        let options = Options::new(&url, "bench listeners", "mesh-apply", log.clone());
        std::thread::spawn(move || transport::serve(options, workers, stop))
    };

    let first: Vec<Plan> = names.iter().map(|node| plan_for(node, 1)).collect();
    let (published, total) = round(&url, &client, &mut subscription, &first, Outcome::Applied);
    println!(
        "transport/apply {nodes} nodes: published and confirmed in {:.2} s, applied and reported in {:.2} s: {:.0} plans/s end to end",
        published.as_secs_f64(),
        total.as_secs_f64(),
        nodes as f64 / total.as_secs_f64()
    );
    let (published, total) = round(
        &url,
        &client,
        &mut subscription,
        &first,
        Outcome::AlreadyApplied,
    );
    println!(
        "transport/again {nodes} nodes (already applied): published in {:.2} s, reported in {:.2} s: {:.0} plans/s end to end",
        published.as_secs_f64(),
        total.as_secs_f64(),
        nodes as f64 / total.as_secs_f64()
    );
    let second: Vec<Plan> = names.iter().map(|node| plan_for(node, 2)).collect();
    let (published, total) = round(&url, &client, &mut subscription, &second, Outcome::Applied);
    println!(
        "transport/change {nodes} nodes (every file changed): published in {:.2} s, applied and reported in {:.2} s: {:.0} plans/s end to end",
        published.as_secs_f64(),
        total.as_secs_f64(),
        nodes as f64 / total.as_secs_f64()
    );

    stop.stop();
    listening
        .join()
        .expect("listeners thread")
        .expect("listeners");
    client.close();
    rabbitmqctl(&["-q", "delete_vhost", &vhost]);
}
