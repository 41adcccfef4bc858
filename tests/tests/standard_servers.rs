//! The standard library's servers against their own validators: a fleet using
//! `proxy`, `node-exporter` and `monitoring` (`tests/data/servers/`) is built by
//! `meshc`, each node's plan is applied into a temporary root by `mesh-apply`, and
//! the configuration found in the root is checked by the server's own tool: Debian's
//! `caddy validate` for the proxy, `promtool check config` for Prometheus
//! (`scripts/test` installs both; a missing one fails the test).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tests::{base_root, binary, copy_tree, make_identities_private, workspace_root};

fn succeeded(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed:\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs a validator, which must be installed.
fn validator(program: &str) -> Command {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .expect("sh runs");
    assert!(
        found.status.success(),
        "`{program}` is not installed: scripts/test installs it (apt-get install caddy prometheus)"
    );
    Command::new(program)
}

/// A self-signed certificate and its key in `directory`, made with `openssl`.
fn certificate(directory: &Path) {
    std::fs::create_dir_all(directory).expect("tls directory");
    let output = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=files.example.org"])
        .arg("-keyout")
        .arg(directory.join("shop.key"))
        .arg("-out")
        .arg(directory.join("shop.pem"))
        .output()
        .expect("openssl is installed");
    succeeded(&output, "openssl req");
}

/// The fixture with its certificate directory filled in, the identities of the
/// example fleet beside it, built into `OUT`.
struct Built {
    _temporary: tempfile::TempDir,
    temporary: PathBuf,
    repository: PathBuf,
    tls: PathBuf,
}

fn build() -> Built {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let path = temporary.path().to_path_buf();
    let repository = path.join("servers");
    copy_tree(&workspace_root().join("tests/data/servers"), &repository);
    copy_tree(
        &workspace_root().join("examples/homelab/identities"),
        &repository.join("identities"),
    );
    make_identities_private(&repository.join("identities"));
    let tls = path.join("tls");
    certificate(&tls);
    let template =
        std::fs::read_to_string(repository.join("mesh.nix.in")).expect("the fixture's mesh.nix.in");
    let tls_text = tls.to_str().expect("a UTF-8 temporary path");
    std::fs::write(
        repository.join("mesh.nix"),
        template.replace("@TLS@", tls_text),
    )
    .expect("mesh.nix");
    let output = Command::new(binary("meshc", "meshc"))
        .arg("build")
        .arg("--repo")
        .arg(&repository)
        .arg("--out")
        .arg(path.join("out"))
        .output()
        .expect("meshc runs");
    succeeded(&output, "meshc build");
    Built {
        _temporary: temporary,
        temporary: path,
        repository,
        tls,
    }
}

/// Applies `node`'s plan into a fresh root and returns the root.
fn apply(built: &Built, node: &str) -> PathBuf {
    let root = built.temporary.join(format!("root-{node}"));
    base_root(&root);
    // the certificate is part of the gateway's base system, as mesh.nix says
    let in_root = root.join(built.tls.strip_prefix("/").expect("absolute"));
    copy_tree(&built.tls, &in_root);
    let output = Command::new(binary("applier", "mesh-apply"))
        .arg(built.temporary.join(format!("out/nodes/{node}.json")))
        .arg("--identity")
        .arg(built.repository.join(format!("identities/{node}.key")))
        .arg("--root")
        .arg(&root)
        .output()
        .expect("mesh-apply runs");
    succeeded(&output, &format!("mesh-apply of {node}"));
    root
}

#[test]
fn the_proxys_rendered_configuration_passes_caddy_validate() {
    let built = build();
    let root = apply(&built, "gateway");
    let config = root.join("etc/mesh/proxy/caddy.json");
    let output = validator("caddy")
        .arg("validate")
        .arg("--config")
        .arg(&config)
        .arg("--adapter")
        .arg("")
        .output()
        .expect("caddy runs");
    succeeded(&output, "caddy validate");

    // every site is there, with its kind of TLS: the contributed one, the given
    // certificate, Caddy's internal CA, plain HTTP, ACME with the e-mail
    let text = std::fs::read_to_string(&config).expect("the rendered configuration");
    let config: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let hosts = |server: &str| -> Vec<String> {
        config["apps"]["http"]["servers"][server]["routes"]
            .as_array()
            .unwrap_or_else(|| panic!("server `{server}` has routes: {config:#}"))
            .iter()
            .map(|route| {
                route["match"][0]["host"][0]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(
        hosts("https"),
        [
            "files.example.org",
            "intranet.example.org",
            "shop.example.org",
            "www.example.org"
        ]
    );
    assert_eq!(hosts("http"), ["plain.example.org"]);
    let tls = &config["apps"]["tls"];
    assert_eq!(
        tls["certificates"]["load_files"][0]["certificate"],
        format!("{}/shop.pem", built.tls.display())
    );
    assert_eq!(
        tls["automation"]["policies"],
        serde_json::json!([
            {"subjects": ["shop.example.org", "www.example.org"],
             "issuers": [{"module": "acme", "email": "ops@example.org"}]},
            {"subjects": ["intranet.example.org"], "issuers": [{"module": "internal"}]},
        ])
    );
    assert!(text.contains("\"Strict-Transport-Security\":[\"max-age=31536000\"]"));
}

#[test]
fn a_certificate_caddy_cannot_load_fails_caddy_validate() {
    // the validator is a real check: the same configuration with its key gone is refused
    let built = build();
    let root = apply(&built, "gateway");
    std::fs::remove_file(built.tls.join("shop.key")).expect("remove the key");
    let output = validator("caddy")
        .arg("validate")
        .arg("--config")
        .arg(root.join("etc/mesh/proxy/caddy.json"))
        .arg("--adapter")
        .arg("")
        .output()
        .expect("caddy runs");
    assert!(
        !output.status.success(),
        "caddy validated a site without its key"
    );
}

#[test]
fn prometheus_scrapes_the_node_exporters_it_consumes_and_passes_promtool() {
    let built = build();
    let root = apply(&built, "gateway");
    apply(&built, "app1");
    let config = root.join("etc/mesh/monitoring/prometheus.yml");
    let output = validator("promtool")
        .arg("check")
        .arg("config")
        .arg(&config)
        .output()
        .expect("promtool runs");
    succeeded(&output, "promtool check config");
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&config).expect("the rendered configuration"))
            .expect("JSON, which is YAML");
    // each target's address is its node's, its port that node's setting
    assert_eq!(
        config["scrape_configs"],
        serde_json::json!([
            {"job_name": "node", "static_configs": [
                {"labels": {"node": "gateway"}, "targets": ["10.0.0.1:9100"]},
                {"labels": {"node": "app1"}, "targets": ["10.0.0.11:9200"]},
            ]},
            {"job_name": "shop", "static_configs": [{"targets": ["127.0.0.1:8000"]}]},
        ])
    );
}

#[test]
fn every_node_runs_its_exporter_on_the_port_it_publishes() {
    let built = build();
    let root = apply(&built, "app1");
    let unit =
        std::fs::read_to_string(root.join("etc/systemd/system/prometheus-node-exporter.service"))
            .expect("the exporter's unit takes the place of Debian's");
    assert!(unit.contains("--web.listen-address=:9200"), "{unit}");
    let firewall = std::fs::read_to_string(root.join("etc/mesh/firewall.nft")).expect("firewall");
    assert!(firewall.contains("tcp dport 9200 accept"), "{firewall}");
}
