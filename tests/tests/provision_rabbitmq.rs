//! End to end, from a repository to an AMQP login: a repository whose node `mq1` runs
//! the standard `rabbitmq` module and whose consumer node asks for `amqp` in a vhost
//! of this test's own; `meshc build`, `mesh-apply` of both plans into temporary roots
//! (the consumer's AMQP settings rendered from `logins.bus`), `mesh-provision
//! --rabbitmq` against the real RabbitMQ on this machine (its management API, which
//! scripts/services enables). The consumer logs in over AMQP with the password `age
//! -d` opens from its own plan, publishes and consumes in its vhost and is refused in
//! another; a bad manifest keeps the last good state; after the consumer is
//! unassigned its login is refused and its user kept, and no connection opens as it
//! even with a password and permissions set by hand; a user mesh does not manage is
//! untouched; the password is in neither the broker's definitions nor its logs.
//!
//! Everything this test makes on the broker (vhosts, users) has a name of its own
//! and is deleted when the test ends, passed or failed.

#[path = "support/binaries.rs"]
mod binaries;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use binaries::{binaries, consumer_password, run};
use serde_json::{Value, json};

const MANAGEMENT: &str = "http://127.0.0.1:15672";

/// The broker's management API as guest, the administrator the tests use.
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

/// The management API answers, or the test fails saying how to make it answer.
fn management_answers() {
    if let Err(error) = api("GET", "overview", None) {
        panic!(
            "RabbitMQ's management API does not answer at {MANAGEMENT} with guest/guest ({error}): \
             run `rabbitmq-plugins enable rabbitmq_management` (scripts/services does)"
        );
    }
}

/// Deletes what the test made on the broker, however the test ends.
struct Cleanup {
    vhosts: Vec<String>,
    users: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for vhost in &self.vhosts {
            let _ = api("DELETE", &format!("vhosts/{}", encoded(vhost)), None);
        }
        for user in &self.users {
            let _ = api("DELETE", &format!("users/{user}"), None);
        }
    }
}

fn encoded(vhost: &str) -> String {
    vhost.replace('/', "%2F")
}

/// Logs in over AMQP and, in `vhost`, declares a queue, publishes one message to it
/// and takes it back; the broker's refusal otherwise.
fn publish_and_consume(login: &str, password: &str, vhost: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        use lapin::options::{BasicGetOptions, BasicPublishOptions, QueueDeclareOptions};
        use lapin::types::FieldTable;
        let url = format!(
            "amqp://{login}:{password}@127.0.0.1:5672/{}",
            encoded(vhost)
        );
        let connection = lapin::Connection::connect(&url, lapin::ConnectionProperties::default())
            .await
            .map_err(|error| error.to_string())?;
        let channel = connection
            .create_channel()
            .await
            .map_err(|error| error.to_string())?;
        channel
            .queue_declare(
                "orders".into(),
                QueueDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(|error| error.to_string())?;
        channel
            .basic_publish(
                "".into(),
                "orders".into(),
                BasicPublishOptions::default(),
                b"one order",
                lapin::BasicProperties::default(),
            )
            .await
            .map_err(|error| error.to_string())?
            .await
            .map_err(|error| error.to_string())?;
        let mut taken = None;
        for _ in 0..50 {
            taken = channel
                .basic_get("orders".into(), BasicGetOptions { no_ack: true })
                .await
                .map_err(|error| error.to_string())?;
            if taken.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let message = taken.ok_or("the message published is not there")?;
        assert_eq!(message.delivery.data, b"one order");
        let _ = connection.close(200, "done".into()).await;
        Ok(())
    })
}

/// A Quadlet unit read strictly: `[Section]` and `Key=Value` lines only (comments
/// aside), keys of `[Container]` as lists of their values in order.
fn quadlet(path: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    let mut section = String::new();
    let mut container = std::collections::BTreeMap::<String, Vec<String>>::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            section = name.to_string();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("{path:?}: not `Key=Value`: {line}"));
        assert!(
            !key.is_empty() && key.bytes().all(|byte| byte.is_ascii_alphanumeric()),
            "{path:?}: key {key:?}"
        );
        if section == "Container" {
            container
                .entry(key.to_string())
                .or_default()
                .push(value.to_string());
        }
    }
    container
}

/// A Quadlet `Exec=` line's words: double-quoted, `\"` and `\\` escaped, `$$` a `$`.
fn unquote(exec: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut characters = exec.chars().peekable();
    while let Some(character) = characters.next() {
        match character {
            ' ' => {}
            '"' => {
                let mut word = String::new();
                while let Some(inner) = characters.next() {
                    match inner {
                        '"' => break,
                        '\\' => word.extend(characters.next()),
                        '$' if characters.peek() == Some(&'$') => {
                            characters.next();
                            word.push('$');
                        }
                        other => word.push(other),
                    }
                }
                words.push(word);
            }
            other => panic!("an unquoted word in `{exec}` at {other:?}"),
        }
    }
    words
}

fn age_keypair(directory: &Path, name: &str) -> String {
    let identity = directory.join(format!("{name}.key"));
    let output = run(Command::new("age-keygen").arg("-o").arg(&identity));
    let text = String::from_utf8_lossy(&output.stderr).to_string()
        + &std::fs::read_to_string(&identity).expect("identity");
    text.lines()
        .find_map(|line| line.split("public key: ").nth(1))
        .expect("age-keygen prints the public key")
        .trim()
        .to_string()
}

#[test]
fn a_consumer_logs_in_over_amqp_in_its_vhost_until_it_is_withdrawn() {
    management_answers();
    let binaries = binaries();
    let unique = format!(
        "{}{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("a clock")
            .subsec_micros()
    );
    let vhost = format!("mesh-test-{unique}");
    let other_vhost = format!("mesh-test-other-{unique}");
    let app = format!("app{unique}");
    let login = format!("{app}_shopbus_bus");
    let unmanaged = format!("mesh-test-unmanaged-{unique}");
    let _cleanup = Cleanup {
        vhosts: vec![vhost.clone(), other_vhost.clone()],
        users: vec![login.clone(), unmanaged.clone()],
    };

    let scratch = tempfile::tempdir().expect("a temporary directory");
    let keys = scratch.path().join("identities");
    std::fs::create_dir_all(&keys).expect("identities");
    let mq_key = age_keypair(&keys, "mq1");
    let app_key = age_keypair(&keys, &app);
    let repository = scratch.path().join("repository");
    std::fs::create_dir_all(repository.join("modules/shopbus")).expect("modules");
    let inventory = |app_modules: &str| {
        format!(
            r#"{{
  registry = "registry.mesh.internal:5000";
  nodes = {{
    mq1 = {{ key = "{mq_key}"; address = "10.0.0.31"; modules = [ "rabbitmq" ]; }};
    {app} = {{ key = "{app_key}"; modules = [ {app_modules} ]; }};
  }};
}}
"#
        )
    };
    std::fs::write(repository.join("mesh.nix"), inventory("\"shopbus\"")).expect("mesh.nix");
    std::fs::write(
        repository.join("mesh.lock"),
        r#"{
  "artifacts": {},
  "format": "mesh-lock/1",
  "mirrors": {
    "docker.io/library/rabbitmq:3.13-management": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
    "ghcr.io/mesh-project/mesh-provision:0.1.0": "sha256:9c1d7e2a4f5b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f"
  }
}
"#,
    )
    .expect("mesh.lock");
    std::fs::write(
        repository.join("modules/shopbus/module.nix"),
        format!(
            r#"{{ mesh, ... }}:
{{
  description = "publishes orders";
  consumes.bus = {{
    service = "amqp";
    vhost = "{vhost}";
    permissions = {{ configure = "^orders$"; write = "^(amq\\.default|orders)$"; read = "^orders$"; }};
    path = "/var/lib/shopbus/bus-password";
  }};
  shapes = {{ logins, ... }}: [
    (mesh.directory {{ path = "/var/lib/shopbus"; mode = "0700"; }})
    (mesh.file {{
      path = "/var/lib/shopbus/amqp.conf";
      content = ''
        host=${{logins.bus.facts.host}}
        port=${{toString logins.bus.facts.port}}
        vhost=${{logins.bus.facts.vhost}}
        user=${{logins.bus.login}}
        password_file=${{logins.bus.path}}
      '';
    }})
  ];
}}
"#
        ),
    )
    .expect("module");

    let out = scratch.path().join("out");
    let mq_root = scratch.path().join("mq1-root");
    let app_root = scratch.path().join("app-root");
    for root in [&mq_root, &app_root] {
        // the directories a real host has, which the plan does not declare
        for directory in ["etc", "var/lib"] {
            std::fs::create_dir_all(root.join(directory)).expect("root directories");
        }
    }
    let build = || {
        run(Command::new(&binaries.meshc)
            .arg("build")
            .arg("--repo")
            .arg(&repository)
            .arg("--out")
            .arg(&out));
    };
    let apply = |node: &str, root: &Path| {
        run(Command::new(&binaries.mesh_apply)
            .arg(out.join(format!("nodes/{node}.json")))
            .arg("--identity")
            .arg(keys.join(format!("{node}.key")))
            .arg("--root")
            .arg(root));
    };
    build();
    apply("mq1", &mq_root);
    apply(&app, &app_root);

    // the provider's two containers, as Quadlet units: the broker's administrator
    // password is read from the need's file, and the provisioner's command line is
    // one `mesh-provision` takes
    let units = mq_root.join("etc/containers/systemd");
    let administrator =
        std::fs::read_to_string(mq_root.join("var/lib/mesh/rabbitmq/administrator"))
            .expect("the administrator's password is placed");
    assert!(administrator.trim().len() >= 16, "a made password");
    let broker = quadlet(&units.join("rabbitmq.container"));
    assert!(broker["Image"][0].contains("/docker.io/library/rabbitmq@sha256:1111"));
    assert_eq!(broker["PublishPort"], ["5672:5672/tcp", "15672:15672/tcp"]);
    assert!(broker["Exec"][0].contains("$$(cat /run/secrets/administrator)"));
    let provisioner_unit = quadlet(&units.join("rabbitmq-provisioner.container"));
    let arguments = unquote(&provisioner_unit["Exec"][0]);
    assert_eq!(arguments[0], "mesh-provision");
    match provisioner::parse_arguments(arguments[1..].iter().map(std::ffi::OsString::from)) {
        Ok(provisioner::Command::Run(config)) => assert_eq!(
            config.target,
            provisioner::Target::Rabbitmq(provisioner::rabbitmq::Endpoint {
                base: "http://host.containers.internal:15672".to_string(),
                user: "administrator".to_string(),
            })
        ),
        Err(error) => panic!("the module's provisioner command line: {error}"),
    }
    for unit in ["rabbitmq.container", "rabbitmq-provisioner.container"] {
        let text = std::fs::read_to_string(units.join(unit)).expect("unit");
        assert!(
            !text.contains(administrator.trim()),
            "{unit} holds the password"
        );
    }

    // the consumer's settings, rendered from `logins.bus`, and its credential placed
    let rendered =
        std::fs::read_to_string(app_root.join("var/lib/shopbus/amqp.conf")).expect("amqp.conf");
    assert_eq!(
        rendered,
        format!(
            "host=10.0.0.31\nport=5672\nvhost={vhost}\nuser={login}\npassword_file=/var/lib/shopbus/bus-password\n"
        )
    );
    let password = consumer_password(
        &out.join(format!("nodes/{app}.json")),
        "/var/lib/shopbus/bus-password",
        &keys.join(format!("{app}.key")),
        scratch.path(),
    );
    assert_eq!(
        std::fs::read_to_string(app_root.join("var/lib/shopbus/bus-password")).expect("placed"),
        password
    );

    // the provider got the hash, in RabbitMQ's format, never the password
    let manifest = mq_root.join("etc/mesh/grants/amqp.json");
    let grants: Value =
        serde_json::from_slice(&std::fs::read(&manifest).expect("manifest")).expect("JSON");
    assert_eq!(grants["grants"][0]["vhost"], vhost.as_str());
    assert_eq!(grants["grants"][0]["permissions"]["configure"], "^orders$");
    let hash = std::fs::read_to_string(mq_root.join(format!("var/lib/mesh/grants/amqp/{login}")))
        .expect("the grant's credential");
    assert!(!hash.contains(&password));
    let mq_plan = std::fs::read_to_string(out.join("nodes/mq1.json")).expect("plan");
    assert!(!mq_plan.contains(&password));

    // a user mesh does not manage, and a vhost the consumer has no permissions in
    api("PUT", &format!("vhosts/{other_vhost}"), Some(json!({}))).expect("a vhost");
    api(
        "PUT",
        &format!("users/{unmanaged}"),
        Some(json!({"password": "not-managed", "tags": ""})),
    )
    .expect("an unmanaged user");
    api(
        "PUT",
        &format!("permissions/{other_vhost}/{unmanaged}"),
        Some(json!({"configure": ".*", "write": ".*", "read": ".*"})),
    )
    .expect("its permissions");
    let unmanaged_before = (
        api("GET", &format!("users/{unmanaged}"), None).expect("the user"),
        api("GET", &format!("users/{unmanaged}/permissions"), None).expect("permissions"),
    );

    let password_file = scratch.path().join("administrator");
    std::fs::write(&password_file, "guest\n").expect("password file");
    let provision = || {
        Command::new(&binaries.mesh_provision)
            .arg("--root")
            .arg(&mq_root)
            .arg("--manifest")
            .arg(&manifest)
            .arg("--rabbitmq")
            .arg("http://guest@127.0.0.1:15672")
            .arg("--password-file")
            .arg(&password_file)
            .output()
            .expect("mesh-provision runs")
    };
    let first = provision();
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(
        first.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        stdout.contains(&format!("created   vhost `{vhost}`"))
            && stdout.contains(&format!("created   login `{login}`"))
            && stdout
                .contains(": 1 created, 0 updated, 0 enabled, 0 disabled, 0 unchanged, 0 failed"),
        "{stdout}"
    );
    publish_and_consume(&login, &password, &vhost).expect("the consumer works in its vhost");
    let refused = publish_and_consume(&login, &password, &other_vhost)
        .expect_err("the consumer is refused in another vhost");
    assert!(
        refused.to_lowercase().contains("access") || refused.contains("403"),
        "{refused}"
    );
    assert!(publish_and_consume(&login, "not-the-password", &vhost).is_err());

    let again = String::from_utf8_lossy(&provision().stdout).to_string();
    assert!(
        again.contains(": 0 created, 0 updated, 0 enabled, 0 disabled, 1 unchanged, 0 failed"),
        "{again}"
    );

    // a bad manifest changes nothing
    let good_manifest = std::fs::read(&manifest).expect("manifest");
    std::fs::write(&manifest, b"{ not json").expect("a bad manifest");
    let bad = provision();
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("keeping the last good state"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    publish_and_consume(&login, &password, &vhost).expect("still works after a bad manifest");
    std::fs::write(&manifest, good_manifest).expect("the manifest back");

    // the consumer is unassigned: its user is kept without permissions or password
    std::fs::write(repository.join("mesh.nix"), inventory("")).expect("mesh.nix");
    build();
    apply("mq1", &mq_root);
    let withdrawn = String::from_utf8_lossy(&provision().stdout).to_string();
    assert!(
        withdrawn.contains(&format!("disabled  login `{login}`"))
            && withdrawn
                .contains(": 0 created, 0 updated, 0 enabled, 1 disabled, 0 unchanged, 0 failed"),
        "{withdrawn}"
    );
    assert!(publish_and_consume(&login, &password, &vhost).is_err());
    let kept = api("GET", &format!("users/{login}"), None).expect("the user is kept");
    assert_eq!(kept["password_hash"], "");
    assert!(kept["tags"].to_string().contains("mesh-managed"), "{kept}");
    assert_eq!(
        api("GET", &format!("users/{login}/permissions"), None).expect("permissions"),
        json!([])
    );
    // and it may open no connection, however it authenticates: a client certificate
    // (EXTERNAL) needs no password, and is stood in for here by one set by hand, with
    // permissions given by hand too; the next reconcile takes both away again
    api(
        "PUT",
        &format!("users/{login}"),
        Some(json!({"password": "set by hand", "tags": "mesh-managed"})),
    )
    .expect("a password set by hand");
    api(
        "PUT",
        &format!("permissions/{}/{login}", encoded(&vhost)),
        Some(json!({"configure": ".*", "write": ".*", "read": ".*"})),
    )
    .expect("permissions given by hand");
    let refused = publish_and_consume(&login, "set by hand", &vhost)
        .expect_err("a withdrawn user opens no connection");
    assert!(refused.contains("connection limit"), "{refused}");
    let withdrawn_again = String::from_utf8_lossy(&provision().stdout).to_string();
    assert!(
        withdrawn_again.contains(&format!("disabled  login `{login}`")),
        "{withdrawn_again}"
    );
    assert_eq!(
        api("GET", &format!("users/{login}/permissions"), None).expect("permissions"),
        json!([])
    );

    // the unmanaged user is as it was
    assert_eq!(
        (
            api("GET", &format!("users/{unmanaged}"), None).expect("the user"),
            api("GET", &format!("users/{unmanaged}/permissions"), None).expect("permissions"),
        ),
        unmanaged_before
    );

    // the password is in neither the broker's definitions nor its logs
    let definitions = api("GET", "definitions", None).expect("definitions");
    assert!(definitions.to_string().contains(&login));
    assert!(!definitions.to_string().contains(&password));
    let nodes = api("GET", "nodes", None).expect("nodes");
    let logs: Vec<String> = nodes[0]["log_files"]
        .as_array()
        .expect("the broker names its log files")
        .iter()
        .filter_map(Value::as_str)
        .filter(|path| Path::new(path).is_file())
        .map(str::to_string)
        .collect();
    assert!(
        !logs.is_empty(),
        "no log file of the broker can be read: {nodes}"
    );
    for log in logs {
        let text = std::fs::read(&log).unwrap_or_else(|error| panic!("{log}: {error}"));
        assert!(
            !String::from_utf8_lossy(&text).contains(&password),
            "{log} holds the password"
        );
    }
}
