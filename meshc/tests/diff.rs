//! `meshc diff` on pairs of fleets: the example repository, built, then edited in one
//! way per scenario and diffed against that build. Each scenario's output (plain, as
//! when piped) is compared with `tests/golden/diffs/<scenario>.txt`; regenerate them
//! with `MESH_BLESS=1 cargo test -p meshc --test diff` and review them as code. No
//! diff may contain a ciphertext or a plaintext of any secret of either build.

#[path = "support/repository.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::{MESHC, assert_built, files_under, workspace};

struct Scenario {
    _temporary: tempfile::TempDir,
    repository: PathBuf,
    old: PathBuf,
}

impl Scenario {
    /// The example, built into `old`.
    fn new() -> Scenario {
        let (temporary, repository) = support::homelab_copy();
        let old = temporary.path().join("old");
        assert_built(&support::build(&repository, &old));
        Scenario {
            _temporary: temporary,
            repository,
            old,
        }
    }

    fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.repository.join(file);
        let text = std::fs::read_to_string(&path).expect("readable");
        assert!(text.contains(from), "{file} has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("writable");
    }

    /// The web title changed and the repository built into `DIR/new`.
    fn changed_and_built(&self) -> PathBuf {
        self.edit(
            "mesh.nix",
            "settings.web.title = \"app1\";",
            "settings.web.title = \"shop front\";",
        );
        let new = self._temporary.path().join("new");
        assert_built(&support::build(&self.repository, &new));
        new
    }

    fn diff(&self, extra: &[&str]) -> Output {
        Command::new(MESHC)
            .arg("diff")
            .arg("--repo")
            .arg(&self.repository)
            .arg("--against")
            .arg(&self.old)
            .args(extra)
            .output()
            .expect("meshc runs")
    }
}

/// `meshc diff OLD NEW EXTRA...`: two build outputs compared.
fn diff_between(old: &Path, new: &Path, extra: &[&str]) -> Output {
    Command::new(MESHC)
        .arg("diff")
        .arg(old)
        .arg(new)
        .args(extra)
        .output()
        .expect("meshc runs")
}

fn check_golden(name: &str, output: &Output) {
    assert!(
        output.status.code() == Some(2) || output.status.success(),
        "meshc diff failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout.clone()).expect("UTF-8 output");
    assert!(!text.contains('\u{1b}'), "colour codes in piped output");
    let golden = workspace()
        .join("meshc/tests/golden/diffs")
        .join(format!("{name}.txt"));
    if std::env::var_os("MESH_BLESS").is_some() {
        std::fs::create_dir_all(golden.parent().expect("parent")).expect("create");
        std::fs::write(&golden, &text).expect("write golden");
        return;
    }
    let expected = std::fs::read_to_string(&golden).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with MESH_BLESS=1 to create it)",
            golden.display()
        )
    });
    assert_eq!(text, expected, "the diff of scenario `{name}` changed");
}

/// Every sealed value in the plans under `out`, and each one's plaintext.
fn secrets_of(out: &Path, identities: &Path) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    for (file, bytes) in files_under(&out.join("nodes")) {
        let node = file.trim_end_matches(".json");
        let plan: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        for shape in plan["shapes"].as_array().expect("shapes") {
            let Some(sealed) = shape["sealed"].as_str() else {
                continue;
            };
            // the armored body, line by line: any of it in a diff would be a leak
            for line in sealed
                .lines()
                .filter(|line| line.len() > 20 && !line.starts_with("-----"))
            {
                found.push(line.as_bytes().to_vec());
            }
            let directory = tempfile::tempdir().expect("temporary directory");
            let input = directory.path().join("sealed");
            std::fs::write(&input, sealed).expect("write");
            let opened = Command::new("age")
                .arg("-d")
                .arg("-i")
                .arg(identities.join(format!("{node}.key")))
                .arg(&input)
                .output()
                .expect("age runs");
            if opened.status.success() {
                found.push(opened.stdout);
            }
        }
    }
    found
}

fn assert_no_secret(scenario: &Scenario, outputs: &[&Output]) {
    let secrets = secrets_of(&scenario.old, &scenario.repository.join("identities"));
    assert!(!secrets.is_empty());
    for output in outputs {
        let all = [output.stdout.as_slice(), output.stderr.as_slice()].concat();
        for secret in &secrets {
            assert!(
                !all.windows(secret.len())
                    .any(|window| window == secret.as_slice()),
                "a secret (or a line of its ciphertext) is in the diff output"
            );
        }
    }
}

#[test]
fn no_changes_says_so_and_exits_zero() {
    let scenario = Scenario::new();
    let output = scenario.diff(&["--detailed-exitcode"]);
    assert_eq!(output.status.code(), Some(0));
    check_golden("no-changes", &output);
}

#[test]
fn text_content_service_unit_and_restart() {
    let scenario = Scenario::new();
    scenario.edit(
        "mesh.nix",
        "settings.web.title = \"app1\";",
        "settings.web.title = \"shop front\";",
    );
    scenario.edit(
        "mesh.nix",
        "settings.web = { title = \"app2\"; port = 8080; };",
        "settings.web = { title = \"app2\"; port = 8081; };",
    );
    let output = scenario.diff(&["--detailed-exitcode"]);
    assert_eq!(output.status.code(), Some(2));
    check_golden("text-content-service-unit-and-restart", &output);
    assert_no_secret(&scenario, &[&output]);
}

#[test]
fn withdrawn_consumer_loses_its_grant_and_credential() {
    let scenario = Scenario::new();
    scenario.edit(
        "mesh.nix",
        "modules = [ \"web\" \"node-exporter\" \"shop\" ];",
        "modules = [ \"web\" \"node-exporter\" ];",
    );
    scenario.edit("mesh.nix", "      settings.shop.database = \"db1\";\n", "");
    let output = scenario.diff(&[]);
    check_golden("withdrawn-consumer", &output);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("- grant app2_shop_db on postgres"));
    assert!(text.contains("- secret /var/lib/mesh/credentials/shop-db"));
    assert!(text.contains("- secret /var/lib/mesh/grants/postgres/app2_shop_db"));
    assert_no_secret(&scenario, &[&output]);
}

#[test]
fn added_consumer_gets_a_grant() {
    let scenario = Scenario::new();
    scenario.edit(
        "mesh.nix",
        "modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" ];",
        "modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" \"shop\" ];",
    );
    let output = scenario.diff(&[]);
    check_golden("added-consumer", &output);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("+ grant gateway_shop_db on postgres"));
    assert_no_secret(&scenario, &[&output]);
}

#[test]
fn a_new_node_key_shows_its_values_as_new() {
    let scenario = Scenario::new();
    let generated = Command::new("age-keygen")
        .output()
        .expect("age-keygen runs");
    let identity = String::from_utf8(generated.stdout).expect("text");
    let public = identity
        .lines()
        .find_map(|line| line.strip_prefix("# public key: "))
        .expect("public key");
    let inventory =
        std::fs::read_to_string(scenario.repository.join("mesh.nix")).expect("mesh.nix");
    let app2 = inventory.find("    app2 = {").expect("app2");
    let start = app2 + inventory[app2..].find("key = \"").expect("key") + "key = \"".len();
    let end = start + inventory[start..].find('"').expect("end");
    scenario.edit("mesh.nix", &inventory[start..end], public);
    let output = scenario.diff(&[]);
    check_golden("node-key-changed", &output);
    let text = String::from_utf8_lossy(&output.stdout);
    // app2's grant is made again (a new password, and a new check of it at db1):
    // nothing is "resealed", which would say the value is the same
    assert!(!text.contains("resealed"), "{text}");
    assert!(
        text.contains("sealed: new value, made by the next `meshc build`"),
        "{text}"
    );
    assert!(text.contains("read by: service shop"), "{text}");
    assert_no_secret(&scenario, &[&output]);
}

#[test]
fn nodes_added_and_removed() {
    let scenario = Scenario::new();
    let inventory =
        std::fs::read_to_string(scenario.repository.join("mesh.nix")).expect("mesh.nix");
    let start = inventory.find("    gateway = {").expect("gateway");
    let end = start + inventory[start..].find("\n    };\n").expect("end") + "\n    };\n".len();
    let gateway = inventory[start..end].to_string();
    // app3 is the gateway with `web` instead of its modules (monitoring among them)
    // and none of their settings
    let settings = gateway
        .find("      # the shop of both")
        .expect("the proxy's settings");
    let app3 = format!(
        "{}{}",
        &gateway[..settings],
        &gateway[gateway
            .find("      settings.users.accounts")
            .expect("users")..]
    )
    .replace("gateway = {", "app3 = {")
    .replace(
        "modules = [ \"proxy\" \"monitoring\" \"node-exporter\" \"users\" ];",
        "modules = [ \"web\" ];",
    )
    .replace("      settings.users.accounts = admins;\n", "");

    scenario.edit("mesh.nix", &gateway, &app3);
    let output = scenario.diff(&[]);
    check_golden("nodes-added-and-removed", &output);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("+ node app3 (new)"));
    assert!(text.contains("- node gateway (removed"));
}

#[test]
fn modes_owners_and_json_content() {
    let scenario = Scenario::new();
    scenario.edit(
        "modules/web/module.nix",
        "path = \"/srv/web/index.html\";\n      owner = \"web\";",
        "path = \"/srv/web/index.html\";\n      mode = \"0640\";\n      owner = \"web\";",
    );
    scenario.edit(
        "mesh.nix",
        "acmeEmail = \"ops@example.org\";",
        "acmeEmail = \"admin@example.org\";",
    );
    let output = scenario.diff(&["--format", "json"]);
    let parsed: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("--format json is JSON");
    // app1 and app2: index.html; gateway: caddy.json and the proxy's restart
    assert_eq!(parsed["summary"]["change"], 4, "{parsed:#}");
    check_golden("modes-owners-and-json-content", &scenario.diff(&[]));
    let changes: Vec<&serde_json::Value> = parsed["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .flat_map(|node| node["changes"].as_array().expect("changes"))
        .collect();
    let mode = changes
        .iter()
        .flat_map(|c| c["fields"].as_array().expect("fields"))
        .find(|f| f["field"] == "mode")
        .expect("a mode change");
    assert_eq!(mode["old"], "\"0644\"");
    assert_eq!(mode["new"], "\"0640\"");
    let json_change = changes
        .iter()
        .flat_map(|c| c["fields"].as_array().expect("fields"))
        .find(|f| f["kind"] == "json")
        .expect("a JSON content change");
    assert_eq!(
        json_change["changes"][0]["path"],
        "apps.tls.automation.policies[0].issuers[0].email"
    );
}

/// Whoever can commit to `secrets/` can seal a value they know to a node's key (its
/// public key is in mesh.nix) and keep the value id beside it. No `meshc` command
/// seals a kept value anew to the same key, so the diff must not call it "the same
/// value, resealed to a new key" (which also left what reads it out of the restarts).
#[test]
fn a_sealed_value_replaced_under_its_id_is_not_the_same_value() {
    let scenario = Scenario::new();
    replace_superuser_password(&scenario);

    let output = scenario.diff(&[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("resealed"), "{text}");
    assert!(
        text.contains("sealed: value id kept, but sealed anew to the same key (need)"),
        "{text}"
    );
    assert!(text.contains("check who changed `secrets/`"), "{text}");
    assert!(text.contains("read by: container postgres"), "{text}");
    let json = scenario.diff(&["--format", "json"]);
    let parsed: serde_json::Value =
        serde_json::from_slice(&json.stdout).expect("--format json is JSON");
    let field = parsed["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .flat_map(|node| node["changes"].as_array().expect("changes"))
        .filter(|change| change["identity"] == "/var/lib/mesh/postgres/superuser")
        .flat_map(|change| change["fields"].as_array().expect("fields"))
        .find(|field| field["kind"] == "sealed")
        .unwrap_or_else(|| panic!("no sealed field: {parsed:#}"))
        .clone();
    assert_eq!(field["value"], "replaced", "{field}");
    assert_eq!(field["resealed"], false, "{field}");
    assert_no_secret(&scenario, &[&output, &json]);
}

/// Seals a password of the test's choosing to db1's key in place of its
/// superuser password, as whoever can commit to `secrets/` could.
fn replace_superuser_password(scenario: &Scenario) {
    let sealed = scenario
        .repository
        .join("secrets/needs/db1/postgres/superuser.age");
    let recipient = std::fs::read_to_string(
        scenario
            .repository
            .join("secrets/needs/db1/postgres/superuser.recipient"),
    )
    .expect("the recipient");
    let known = scenario._temporary.path().join("known");
    std::fs::write(&known, "a password the replacer knows").expect("write");
    let replaced = Command::new("age")
        .args(["-a", "-r", recipient.trim(), "-o"])
        .arg(&sealed)
        .arg(&known)
        .output()
        .expect("age runs");
    assert!(replaced.status.success(), "{replaced:?}");
}

/// The same replacement with the value's id deleted beside it: the last build
/// recorded an id, so the value is not one "made before ids were kept" (which the
/// diff said, with a mild warning) but one changed outside `meshc`.
#[test]
fn a_sealed_value_replaced_with_its_id_deleted_is_flagged() {
    let scenario = Scenario::new();
    replace_superuser_password(&scenario);
    std::fs::remove_file(
        scenario
            .repository
            .join("secrets/needs/db1/postgres/superuser.value"),
    )
    .expect("remove the id");

    let output = scenario.diff(&[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("made before ids were kept"), "{text}");
    assert!(
        text.contains("sealed: value id removed since the last build (need)"),
        "{text}"
    );
    assert!(text.contains("check who changed `secrets/`"), "{text}");
    let json = scenario.diff(&["--format", "json"]);
    let parsed: serde_json::Value =
        serde_json::from_slice(&json.stdout).expect("--format json is JSON");
    let values: Vec<&serde_json::Value> = parsed["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .flat_map(|node| node["changes"].as_array().expect("changes"))
        .flat_map(|change| change["fields"].as_array().expect("fields"))
        .filter(|field| field["kind"] == "sealed")
        .map(|field| &field["value"])
        .collect();
    assert!(
        values.contains(&&serde_json::json!("id-removed")),
        "{parsed:#}"
    );
    assert_no_secret(&scenario, &[&output, &json]);
}

#[test]
fn two_build_outputs_compare_like_a_repository() {
    let scenario = Scenario::new();
    let new = scenario.changed_and_built();
    let between = diff_between(&scenario.old, &new, &[]);
    let against = scenario.diff(&[]);
    assert!(between.status.success());
    assert_eq!(between.stdout, against.stdout);
}

#[test]
fn an_unreadable_build_is_reported_as_e408() {
    let scenario = Scenario::new();
    // a plan that no longer matches its manifest digest
    let plan_path = scenario.old.join("nodes/app1.json");
    let text = std::fs::read_to_string(&plan_path).expect("plan");
    std::fs::write(&plan_path, text.replacen("app1", "app9", 1)).expect("write");
    scenario.edit(
        "mesh.nix",
        "settings.web.title = \"app1\";",
        "settings.web.title = \"shop front\";",
    );
    let output = scenario.diff(&["--detailed-exitcode"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("E408"), "{stderr}");
    assert!(stderr.contains("nodes/app1.json"), "{stderr}");
}

/// `meshc diff OLD NEW`, killed after 30 s: the output, or `None` when it had to be.
fn diff_between_in_time(old: &Path, new: &Path) -> Option<Output> {
    let (old, new) = (old.to_str().expect("UTF-8"), new.to_str().expect("UTF-8"));
    meshc_in_time(Path::new("."), &["diff", old, new])
}

/// A build output's files are read as `meshc build` writes them: regular files
/// beneath the output, never through a link and never waiting on a FIFO. A plan
/// swapped for a FIFO had `meshc diff` wait for ever (`std::fs::read` by name), and a
/// manifest swapped for a link was read through it; both are E408 now, at once.
#[test]
fn a_build_whose_files_are_links_or_fifos_is_e408_at_once() {
    let scenario = Scenario::new();
    let new = scenario.changed_and_built();
    let plan = scenario.old.join("nodes/app1.json");
    let kept = scenario._temporary.path().join("app1.json");
    std::fs::rename(&plan, &kept).expect("move the plan");
    support::fifo_in_place_of(&plan);
    let output = diff_between_in_time(&scenario.old, &new).expect("meshc diff waited on a FIFO");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E408") && stderr.contains("nodes/app1.json"),
        "{stderr}"
    );
    // the plan back, and the manifest a link to a copy of itself
    std::fs::remove_file(&plan).expect("remove the FIFO");
    std::fs::rename(&kept, &plan).expect("restore the plan");
    assert!(diff_between(&scenario.old, &new, &[]).status.code() != Some(1));
    let manifest = scenario.old.join("manifest.json");
    let copy = scenario._temporary.path().join("manifest.json");
    std::fs::rename(&manifest, &copy).expect("move the manifest");
    std::os::unix::fs::symlink(&copy, &manifest).expect("link");
    let output = diff_between(&scenario.old, &new, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E408") && stderr.contains("manifest.json"),
        "{stderr}"
    );
}

/// `meshc ARGUMENTS` run in `directory`, given 30 s: None when it did not end by
/// then (killed).
fn meshc_in_time(directory: &Path, arguments: &[&str]) -> Option<Output> {
    meshc_in_time_with(directory, &[], arguments)
}

/// [`meshc_in_time`] with `environment` set.
fn meshc_in_time_with(
    directory: &Path,
    environment: &[(&str, &Path)],
    arguments: &[&str],
) -> Option<Output> {
    let mut child = Command::new(MESHC)
        .args(arguments)
        .current_dir(directory)
        .envs(environment.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("meshc runs");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().ok();
            child.wait().ok();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(child.wait_with_output().expect("output"))
}

/// The record of the repository a build was made from (`OUT/.mesh-repository`)
/// is read as the build's other files are: a FIFO put in its place had `meshc
/// build` and `meshc diff` wait for ever (read by name), and a link was followed.
/// Either is now no record: the build writes its own in its place, the diff says
/// the build does not record its repository.
#[test]
fn a_repository_record_that_is_a_fifo_or_a_link_is_not_read() {
    let (_temporary, repository) = support::homelab_copy();
    let out = repository.join("build");
    assert_built(&support::build(&repository, &out));
    let record = out.join(".mesh-repository");
    support::fifo_in_place_of(&record);
    let diff = meshc_in_time(&repository, &["diff"]).expect("meshc diff waited on a FIFO");
    let said = String::from_utf8_lossy(&diff.stderr);
    assert_eq!(diff.status.code(), Some(0), "{said}");
    assert!(said.contains("does not record the repository"), "{said}");
    let built = meshc_in_time(&repository, &["build"]).expect("meshc build waited on a FIFO");
    assert_built(&built);
    let kept = std::fs::symlink_metadata(&record).expect("a record");
    assert!(kept.file_type().is_file(), "the build wrote its own record");
    // a link to another repository's record is not followed
    let elsewhere = _temporary.path().join("elsewhere.json");
    std::fs::write(
        &elsewhere,
        r#"{"format":"mesh-repository/1","root":"/somewhere/else"}"#,
    )
    .expect("written");
    std::fs::remove_file(&record).expect("the record");
    std::os::unix::fs::symlink(&elsewhere, &record).expect("linked");
    let diff = meshc_in_time(&repository, &["diff"]).expect("meshc diff ended");
    let said = String::from_utf8_lossy(&diff.stderr);
    assert_eq!(diff.status.code(), Some(0), "{said}");
    assert!(
        !said.contains("E420") && !said.contains("/somewhere/else"),
        "{said}"
    );
}

/// What meshc reads beside the loader is read as a regular file of bounded size,
/// never through a link and never waiting on a FIFO (red team): the record of the
/// user's builds in the state directory, `mesh.lock` when the build cache digests it,
/// and a build output's files. A FIFO at either of the first two had `meshc diff` and
/// the second `meshc build` wait for ever; a sparse plan file of 20 GB was read whole.
#[test]
fn files_beside_the_repository_are_read_bounded_and_never_waited_on() {
    let (temporary, repository) = support::homelab_copy();
    let state = temporary.path().join("state");
    let environment = [("XDG_STATE_HOME", state.as_path())];
    let run = |arguments: &[&str]| {
        meshc_in_time_with(&repository, &environment, arguments)
            .unwrap_or_else(|| panic!("meshc {arguments:?} waited on a FIFO"))
    };
    assert_built(&run(&["build"]));
    // the record of the user's build, a FIFO: the build is not known as theirs
    let builds = state.join("mesh/builds");
    let record = std::fs::read_dir(&builds)
        .expect("the records")
        .next()
        .expect("one record")
        .expect("an entry")
        .path();
    support::fifo_in_place_of(&record);
    let diff = run(&["diff"]);
    assert_eq!(diff.status.code(), Some(1), "{}", text(&diff.stderr));
    assert!(
        text(&diff.stderr).contains("E422"),
        "{}",
        text(&diff.stderr)
    );
    std::fs::remove_file(&record).expect("the FIFO");
    // `mesh.lock` a FIFO after a build into an output that keeps a build cache
    // (which digests the lock first): the lock's own error, at once
    assert_built(&run(&["build", "--out", "elsewhere"]));
    let lock = repository.join("mesh.lock");
    let pinned = std::fs::read(&lock).expect("the lock");
    support::fifo_in_place_of(&lock);
    let built = run(&["build", "--out", "elsewhere"]);
    assert_eq!(built.status.code(), Some(1), "{}", text(&built.stderr));
    std::fs::remove_file(&lock).expect("the FIFO");
    std::fs::write(&lock, pinned).expect("the lock back");
    // a plan file of a build named by the user, sparse and larger than mesh reads
    let against = temporary.path().join("against");
    assert_built(&support::build(&repository, &against));
    let plan = std::fs::OpenOptions::new()
        .write(true)
        .open(against.join("nodes/app1.json"))
        .expect("the plan");
    plan.set_len((1 << 30) + 1).expect("made sparse and large");
    drop(plan);
    // app1 changed, so its old plan is read to be compared
    let inventory = repository.join("mesh.nix");
    let edited = std::fs::read_to_string(&inventory)
        .expect("the inventory")
        .replacen(
            "settings.web.title = \"app1\";",
            "settings.web.title = \"shop front\";",
            1,
        );
    std::fs::write(&inventory, edited).expect("edited");
    let diff = run(&["diff", "--against", against.to_str().expect("UTF-8")]);
    let said = text(&diff.stderr);
    assert_eq!(diff.status.code(), Some(1), "{said}");
    assert!(
        said.contains("E408") && said.contains("more than"),
        "{said}"
    );
}

/// Rewrites the plan of `node` in the build `directory` with `edit` applied to each
/// resource, re-digested and re-listed in the manifest, as a hostile build would be.
fn forge_plan(
    directory: &Path,
    node: &str,
    edit: impl Fn(plan::Resource) -> plan::Resource,
    module: impl Fn(&str) -> String,
) {
    let plan_path = directory.join(format!("nodes/{node}.json"));
    let old = plan::Plan::read(&std::fs::read(&plan_path).expect("plan")).expect("valid plan");
    let shapes = old
        .shapes()
        .iter()
        .map(|shape| {
            plan::Shape::new(
                edit(shape.resource().clone()),
                module(shape.module()),
                shape.source().clone(),
            )
        })
        .collect();
    let forged = plan::Plan::new(node, shapes);
    std::fs::write(&plan_path, forged.to_json_bytes()).expect("write plan");
    let manifest_path = directory.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).expect("manifest")).expect("JSON");
    manifest["nodes"][node] = serde_json::Value::String(forged.digest().to_string());
    std::fs::write(&manifest_path, manifest.to_string()).expect("write manifest");
}

#[test]
fn diff_escapes_control_characters() {
    let scenario = Scenario::new();
    let hostile = scenario._temporary.path().join("hostile");
    support::copy_tree(&scenario.old, &hostile);
    // and invisible characters (a zero-width space, a byte order mark), which would
    // let two names that differ look alike
    const INJECTED: &str = "\u{1b}[2J\u{1b}[Hno changes\u{9b}31m\u{202E}\u{200B}\u{FEFF}";
    forge_plan(
        &hostile,
        "app1",
        |resource| match resource {
            plan::Resource::File(mut file) if file.content.is_some() => {
                file.content = Some(format!("hello {INJECTED}\n"));
                plan::Resource::File(file)
            }
            plan::Resource::Service(mut service) => {
                service.exec.push(format!("--title={INJECTED}"));
                plan::Resource::Service(service)
            }
            other => other,
        },
        str::to_string,
    );
    for format in [&[][..], &["--format", "json"][..]] {
        let output = diff_between(&scenario.old, &hostile, format);
        let stdout = String::from_utf8(output.stdout).expect("UTF-8");
        assert!(output.status.success(), "{format:?}");
        assert!(
            stdout.contains("no changes"),
            "the edit is shown:\n{stdout}"
        );
        for raw in ['\u{1b}', '\u{9b}', '\u{202E}', '\u{200B}', '\u{FEFF}'] {
            assert!(
                !stdout.contains(raw),
                "{format:?}: raw {raw:?} reaches the terminal:\n{stdout}"
            );
        }
    }
    let plain = diff_between(&scenario.old, &hostile, &[]);
    let stdout = String::from_utf8_lossy(&plain.stdout);
    assert!(
        stdout.contains("\\u{1b}[2J\\u{1b}[Hno changes\\u{9b}31m\\u{202e}\\u{200b}\\u{feff}"),
        "{stdout}"
    );
}

#[test]
fn diff_refuses_a_plan_whose_module_holds_an_escape_and_says_so_escaped() {
    let scenario = Scenario::new();
    let hostile = scenario._temporary.path().join("hostile");
    support::copy_tree(&scenario.old, &hostile);
    forge_plan(
        &hostile,
        "app1",
        |resource| resource,
        |module| format!("{module}\u{1b}[2K\rall nodes up to date"),
    );
    let output = diff_between(&scenario.old, &hostile, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E408"), "{stderr}");
    assert!(stderr.contains("`module`"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\r'),
        "{stderr:?}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains('\u{1b}'));
}

/// A file added to the `web` module (before the service), built into the old build.
fn with_web_file(scenario: &Scenario, declaration: &str) {
    scenario.edit(
        "modules/web/module.nix",
        "    (mesh.service {",
        &format!("    {declaration}\n    (mesh.service {{"),
    );
    assert_built(&support::build(&scenario.repository, &scenario.old));
}

/// A private key put into a file's content is refused (E400: no plan may carry
/// one), and the refusal prints none of it, human or JSON. Before, the plan was
/// made and the diff showed the content with the key blotted out.
#[test]
fn an_age_private_key_in_content_is_refused_and_never_printed() {
    let scenario = Scenario::new();
    let identity =
        std::fs::read_to_string(scenario.repository.join("identities/app1.key")).expect("key");
    let key = identity
        .lines()
        .find(|line| line.starts_with("AGE-SECRET-KEY-1"))
        .expect("a private key")
        .to_string();
    scenario.edit(
        "modules/web/module.nix",
        "<h1>${settings.title}</h1>",
        &format!("<h1>${{settings.title}}</h1>\n        {key}"),
    );
    assert_refused_with_e400_printing_none_of(&scenario, &key["AGE-SECRET-KEY-1".len()..]);
}

/// `meshc diff` of the scenario, human and JSON, fails with E400 and prints no part
/// of `secret`.
fn assert_refused_with_e400_printing_none_of(scenario: &Scenario, secret: &str) {
    for format in [&[][..], &["--format", "json"][..]] {
        let output = scenario.diff(format);
        assert_eq!(output.status.code(), Some(1), "{format:?}");
        let all = String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned();
        assert!(all.contains("E400"), "{format:?}:\n{all}");
        assert!(
            !all.contains(secret),
            "{format:?}: the private key is printed"
        );
    }
}

/// A PEM private key in a file's content is refused (E400), as an age key is, and
/// the refusal prints none of it. Before, the plan carried it.
#[test]
fn a_pem_private_key_in_content_is_refused_and_never_printed() {
    let scenario = Scenario::new();
    // as long as the shortest key's (ed25519, PKCS #8): 64 base64 characters
    let body = "MC4CAQAwBQYDK2VwBCIEIOldKeyFirstLineOfTheBodyAbcdefghijklmnopqrs";
    scenario.edit(
        "modules/web/module.nix",
        "<h1>${settings.title}</h1>",
        &format!(
            "<h1>${{settings.title}}</h1>\n        -----BEGIN PRIVATE KEY-----\n        {body}\n        -----END PRIVATE KEY-----"
        ),
    );
    assert_refused_with_e400_printing_none_of(&scenario, &body[20..]);
}

/// Two builds whose plans hold a PEM private key that changed (forged, as a build
/// of an older meshc or a hostile one would be: `meshc build` refuses them, E400):
/// the diff shows neither key's body, human or JSON, whichever side of the diff a
/// line is on. Before, only the `BEGIN` line was blotted out: the rendered diff was
/// redacted as one text, where each of the key's lines starts with `-`, which ended
/// the block.
#[test]
fn a_pem_private_key_that_changes_is_never_printed() {
    let scenario = Scenario::new();
    let pem = |body: [&str; 2]| {
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n{}\n-----END PRIVATE KEY-----\n",
            body[0], body[1]
        )
    };
    let old = [
        "MC4CAQAwBQYDK2VwBCIEIOldKeyFirstLineOfTheBodyAbcdefghijklmnopq",
        "OldKeySecondLine0123456789",
    ];
    let new = [
        "MC4CAQAwBQYDK2VwBCIEINewKeyFirstLineOfTheBodyAbcdefghijklmnopq",
        "NewKeySecondLine0123456789",
    ];
    with_web_file(
        &scenario,
        r#"(mesh.file { path = "/srv/web/tls.key"; content = "KEY"; mode = "0600"; })"#,
    );
    let newer = scenario._temporary.path().join("new");
    assert_built(&support::build(&scenario.repository, &newer));
    for (build, body) in [(&scenario.old, old), (&newer, new)] {
        let key = pem(body);
        forge_plan(
            build,
            "app1",
            |resource| match resource {
                plan::Resource::File(mut file) if file.path == "/srv/web/tls.key" => {
                    file.content = Some(key.clone());
                    plan::Resource::File(file)
                }
                other => other,
            },
            str::to_string,
        );
    }
    for format in [&[][..], &["--format", "json"][..]] {
        let output = diff_between(&scenario.old, &newer, format);
        let all = String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned();
        assert!(
            all.contains("tls.key"),
            "{format:?}: the change is not listed:\n{all}"
        );
        for line in old.iter().chain(&new) {
            assert!(
                !all.contains(&line[20..]),
                "{format:?}: a private key's line is printed:\n{all}"
            );
        }
    }
}

#[test]
fn json_content_whose_values_compare_equal_shows_its_text() {
    let scenario = Scenario::new();
    with_web_file(
        &scenario,
        r#"(mesh.file { path = "/srv/web/app.json"; content = ''{"port": 8080, "limit": 100000000000000000001}''; })"#,
    );
    // a duplicate key and a number f64 cannot tell apart: the same parsed value
    scenario.edit(
        "modules/web/module.nix",
        r#"{"port": 8080, "limit": 100000000000000000001}"#,
        r#"{"port": 9999, "port": 8080, "limit": 100000000000000000002}"#,
    );
    let output = scenario.diff(&["--detailed-exitcode"]);
    assert_eq!(output.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(r#"+{"port": 9999, "port": 8080, "limit": 100000000000000000002}"#),
        "the change is not shown:\n{stdout}"
    );
    assert!(!stdout.contains("content (JSON):"), "{stdout}");
}

#[test]
fn binary_content_is_summarised_not_printed() {
    use base64::Engine as _;
    let scenario = Scenario::new();
    let blob = scenario.repository.join("modules/web/blob.bin");
    let old: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&blob, &old).expect("write");
    with_web_file(
        &scenario,
        r#"(mesh.file { path = "/srv/web/blob.bin"; source = ./blob.bin; })"#,
    );
    let mut new = old.clone();
    new[100_000] ^= 0xff;
    new.push(0);
    std::fs::write(&blob, &new).expect("write");
    let output = scenario.diff(&[]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.len() < 4_000, "{} bytes of diff", stdout.len());
    let encoded = base64::engine::general_purpose::STANDARD.encode(&new);
    assert!(!stdout.contains(&encoded[..64]), "the content is printed");
    assert!(
        stdout.contains("content_base64 (binary): 200000 bytes (sha256:")
            && stdout.contains("-> 200001 bytes (sha256:"),
        "{stdout}"
    );
    let json = scenario.diff(&["--format", "json"]);
    let parsed: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    let field = &parsed["nodes"][0]["changes"][0]["fields"][0];
    assert_eq!(field["kind"], "binary", "{parsed:#}");
    assert_eq!(field["old"]["bytes"], 200_000);
    assert_eq!(field["new"]["bytes"], 200_001);
}

#[test]
fn text_that_turns_binary_is_summarised_not_printed() {
    let scenario = Scenario::new();
    let file = scenario.repository.join("modules/web/notes.txt");
    let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&file, &text).expect("write");
    with_web_file(
        &scenario,
        r#"(mesh.file { path = "/srv/web/notes.txt"; source = ./notes.txt; })"#,
    );
    // the same file now holds bytes that are not UTF-8: a plan carries it in base64
    let mut bytes = text.clone().into_bytes();
    bytes[10] = 0xff;
    std::fs::write(&file, &bytes).expect("write");
    let output = scenario.diff(&[]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.len() < 4_000,
        "{} bytes of diff: {}",
        stdout.len(),
        &stdout[..2000.min(stdout.len())]
    );
    assert!(!stdout.contains("line 19999"), "the old text is printed");
    assert!(
        stdout.contains(&format!("content (binary): {} bytes (sha256:", text.len()))
            && stdout.contains("-> none"),
        "{stdout}"
    );
    assert!(
        stdout.contains("content_base64 (binary): none -> "),
        "{stdout}"
    );
}

#[test]
fn a_plan_rewritten_behind_its_manifest_is_refused_where_nothing_changed() {
    let scenario = Scenario::new();
    let new = scenario._temporary.path().join("new");
    support::copy_tree(&scenario.old, &new);
    // the plan file changes, its manifest does not: both manifests still agree
    let plan_path = new.join("nodes/app1.json");
    let text = std::fs::read_to_string(&plan_path).expect("plan");
    assert!(text.contains("<title>app1</title>"));
    std::fs::write(
        &plan_path,
        text.replacen("<title>app1</title>", "<title>pwned</title>", 1),
    )
    .expect("write");
    let output = Command::new(MESHC)
        .arg("diff")
        .arg(&scenario.old)
        .arg(&new)
        .arg("--detailed-exitcode")
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E408"), "{stderr}");
    assert!(stderr.contains("nodes/app1.json"), "{stderr}");
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("No changes"),
        "a build that does not verify is said to change nothing"
    );
}

#[test]
fn a_plan_laid_out_otherwise_still_verifies_and_another_nodes_plan_does_not() {
    let scenario = Scenario::new();
    let new = scenario._temporary.path().join("new");
    support::copy_tree(&scenario.old, &new);
    let diff = || {
        Command::new(MESHC)
            .arg("diff")
            .arg(&scenario.old)
            .arg(&new)
            .arg("--detailed-exitcode")
            .output()
            .expect("meshc runs")
    };
    // the same plan, pretty-printed: read in full, and the same
    let plan_path = new.join("nodes/app1.json");
    let value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&plan_path).expect("plan")).expect("JSON");
    std::fs::write(
        &plan_path,
        serde_json::to_string_pretty(&value).expect("JSON"),
    )
    .expect("write");
    let output = diff();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("No changes"));
    // app2's plan where app1's belongs, its manifest entry made to match
    std::fs::copy(new.join("nodes/app2.json"), &plan_path).expect("copy");
    let manifest_path = new.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).expect("manifest")).expect("JSON");
    manifest["nodes"]["app1"] = manifest["nodes"]["app2"].clone();
    std::fs::write(&manifest_path, manifest.to_string()).expect("write");
    let output = diff();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("it is the plan of `app2`"), "{stderr}");
}

#[test]
fn json_keys_with_dots_are_not_read_as_nesting() {
    let scenario = Scenario::new();
    with_web_file(
        &scenario,
        r#"(mesh.file { path = "/srv/web/app.json"; content = ''{"a.b": 1, "a": {"b": 1}}''; })"#,
    );
    scenario.edit(
        "modules/web/module.nix",
        r#"{"a.b": 1, "a": {"b": 1}}"#,
        r#"{"a.b": 2, "a": {"b": 1}}"#,
    );
    let stdout = String::from_utf8_lossy(&scenario.diff(&[]).stdout).into_owned();
    assert!(stdout.contains(r#"~ ["a.b"]: 1 -> 2"#), "{stdout}");
    assert!(!stdout.contains("~ a.b:"), "{stdout}");
}

#[test]
fn a_build_that_does_not_record_its_repository_is_said_to() {
    let scenario = Scenario::new();
    let quiet = scenario.diff(&[]);
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("does not record"),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    std::fs::remove_file(scenario.old.join(".mesh-repository")).expect("remove the record");
    let output = scenario.diff(&[]);
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("does not record the repository it was made from"),
        "{stderr}"
    );
}

/// The diff says a service restarts only when the applier would: `after = [ "x" ]`
/// and `[ "x.service" ]` are one unit file, which the applier finds as it wants it.
/// The plan changed, so the change is listed, without a restart; naming another
/// unit does restart it.
#[test]
fn a_plan_change_that_leaves_the_unit_file_as_it_was_restarts_nothing() {
    let scenario = Scenario::new();
    let written = "after = [ \"network-online.target\" ];";
    scenario.edit(
        "modules/web/module.nix",
        written,
        "after = [ \"network-online.target\" \"shop\" ];",
    );
    assert_built(&support::build(&scenario.repository, &scenario.old));
    scenario.edit(
        "modules/web/module.nix",
        "\"shop\" ];",
        "\"shop.service\" ];",
    );
    let output = scenario.diff(&["--detailed-exitcode"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(2), "{stdout}");
    assert!(stdout.contains("~ service web"), "{stdout}");
    assert!(stdout.contains("shop.service"), "{stdout}");
    assert!(!stdout.contains("restarts"), "{stdout}");
    assert!(stdout.contains("0 to restart"), "{stdout}");

    scenario.edit(
        "modules/web/module.nix",
        "\"shop.service\" ];",
        "\"prometheus-node-exporter\" ];",
    );
    let output = scenario.diff(&["--detailed-exitcode"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("restarts: its unit changes"), "{stdout}");
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `meshc` in `repository` with its own state directory (where builds are recorded).
fn meshc_in(repository: &Path, state: &Path, arguments: &[&str]) -> Output {
    Command::new(MESHC)
        .args(arguments)
        .current_dir(repository)
        .env("XDG_STATE_HOME", state)
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs")
}

/// A `build/` that came with the repository (committed beside `mesh.nix`) is not
/// the baseline of `meshc diff` nor what `meshc publish` sends: E422, until the
/// user builds it, or names a build. Before, its plans were compared as the last
/// build (a removed `.mesh-repository` only made it a warning), so a change could
/// be made to look like none; and a build there whose cache said nothing changed
/// was recorded as the user's without being made.
#[test]
fn a_build_that_came_with_the_repository_is_refused_with_e422() {
    let (temporary, repository) = support::homelab_copy();
    let state = temporary.path().join("state");
    // the user's own build is the baseline
    assert_built(&meshc_in(&repository, &state, &["build"]));
    let own = meshc_in(&repository, &state, &["diff"]);
    assert_eq!(own.status.code(), Some(0), "{}", text(&own.stderr));
    // a second checkout whose `build/` came with it (what the first built, as if
    // committed)
    let checkout = checkout_with_its_build(temporary.path(), &repository);
    let before = meshc_in(&checkout, &temporary.path().join("other-state"), &["diff"]);
    let said = text(&before.stderr);
    assert!(said.contains("help:"), "{said}");
    assert_each_refuses_with_e422(|arguments| {
        meshc_in(&checkout, &temporary.path().join("other-state"), arguments)
    });
    // named, it is the user's choice
    let named = meshc_in(
        &checkout,
        &temporary.path().join("other-state"),
        &["diff", "--against", "build"],
    );
    assert_eq!(named.status.code(), Some(0), "{}", text(&named.stderr));
    // built by the user, it is the baseline again
    assert_built(&meshc_in(
        &checkout,
        &temporary.path().join("other-state"),
        &["build"],
    ));
    let rebuilt = meshc_in(&checkout, &temporary.path().join("other-state"), &["diff"]);
    assert_eq!(rebuilt.status.code(), Some(0), "{}", text(&rebuilt.stderr));
    // another user's build, with its cache, at this very path: this user's build
    // is made from nothing, not taken from that cache as "nothing changed" (which
    // would record the other's plans as this user's), and then recorded
    let third = temporary.path().join("third-state");
    let refused = meshc_in(&checkout, &third, &["diff"]);
    assert!(text(&refused.stderr).contains("E422"));
    let rebuilt = meshc_in(&checkout, &third, &["build"]);
    assert_built(&rebuilt);
    let said = text(&rebuilt.stderr);
    assert!(
        said.contains("building from nothing") && !said.contains("nothing changed"),
        "{said}"
    );
    let after_noop = meshc_in(&checkout, &third, &["diff"]);
    assert_eq!(
        after_noop.status.code(),
        Some(0),
        "{}",
        text(&after_noop.stderr)
    );
}

/// `meshc` in `repository` with `environment` set (and colours off).
fn meshc_with(repository: &Path, environment: &[(&str, &Path)], arguments: &[&str]) -> Output {
    let mut command = Command::new(MESHC);
    command
        .args(arguments)
        .current_dir(repository)
        .env("NO_COLOR", "1");
    for (name, value) in environment {
        command.env(name, value);
    }
    command.output().expect("meshc runs")
}

/// Where the record of a build is kept, and what is refused: a relative
/// `XDG_STATE_HOME` is ignored (as the XDG specification says: the record would
/// land in the working directory, the checkout) and `HOME` is used; a build that
/// cannot be recorded says so, and `diff` then refuses it; a manifest that is a
/// symbolic link is not followed, and refused.
#[test]
fn the_record_of_a_build_is_kept_outside_the_checkout_and_read_with_care() {
    let (temporary, repository) = support::homelab_copy();
    let home = temporary.path().join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    let relative = [
        ("XDG_STATE_HOME", Path::new("state-in-checkout")),
        ("HOME", home.as_path()),
    ];
    assert_built(&meshc_with(&repository, &relative, &["build"]));
    assert!(!repository.join("state-in-checkout").exists());
    assert!(home.join(".local/state/mesh/builds").is_dir());
    let diff = meshc_with(&repository, &relative, &["diff"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stderr));

    // a state directory that is a file: the build warns, the diff refuses
    let file = temporary.path().join("not-a-directory");
    std::fs::write(&file, "").expect("write");
    let unwritable = [("XDG_STATE_HOME", file.as_path())];
    let built = meshc_with(&repository, &unwritable, &["build"]);
    assert_built(&built);
    assert!(
        text(&built.stderr).contains("could not be recorded"),
        "{}",
        text(&built.stderr)
    );
    let refused = meshc_with(&repository, &unwritable, &["diff"]);
    assert!(
        text(&refused.stderr).contains("E422"),
        "{}",
        text(&refused.stderr)
    );

    // the recorded build, its manifest replaced by a link to the same bytes
    let manifest = repository.join("build/manifest.json");
    let copy = temporary.path().join("manifest-copy.json");
    std::fs::copy(&manifest, &copy).expect("copy");
    std::fs::remove_file(&manifest).expect("remove");
    std::os::unix::fs::symlink(&copy, &manifest).expect("link");
    let linked = meshc_with(&repository, &relative, &["diff"]);
    assert!(
        text(&linked.stderr).contains("E422"),
        "{}",
        text(&linked.stderr)
    );
}

/// A copy of `repository` into `directory/checkout`, its `build/` with it as if
/// committed, the build's record of its repository removed so that it is taken as
/// one of the copy.
fn checkout_with_its_build(directory: &Path, repository: &Path) -> PathBuf {
    let checkout = directory.join("checkout");
    support::copy_tree(repository, &checkout);
    std::fs::remove_file(checkout.join("build/.mesh-repository")).expect("remove");
    checkout
}

/// `diff`, `publish` and `broker-permissions`, run by `meshc`, each refuse the
/// default build with E422.
fn assert_each_refuses_with_e422(meshc: impl Fn(&[&str]) -> Output) {
    for arguments in [
        &["diff"][..],
        &["publish", "--amqp", "amqp://127.0.0.1:1"][..],
        &["broker-permissions"][..],
    ] {
        let refused = meshc(arguments);
        let said = text(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{arguments:?}: {said}");
        assert!(said.contains("E422"), "{arguments:?}: {said}");
    }
}

/// `meshc` in `repository` with neither `XDG_STATE_HOME` nor `HOME` set (a CI
/// runner's or a service's environment): no build can be recorded as the user's.
fn meshc_without_state(repository: &Path, arguments: &[&str]) -> Output {
    Command::new(MESHC)
        .args(arguments)
        .current_dir(repository)
        .env_remove("XDG_STATE_HOME")
        .env_remove("HOME")
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs")
}

/// With no state directory, a build in the default output is nobody's: `diff`,
/// `publish` and `broker-permissions` refuse it (E422) unless it is named, and
/// `meshc build` makes it from nothing instead of taking a cache that came with
/// the repository at its word. Before, nothing was checked there: a committed
/// `build/` whose cache said "nothing changed" was kept as it was, its plans
/// the diff's baseline and what `publish` sent.
#[test]
fn without_a_state_directory_a_default_build_is_nobodys() {
    let (temporary, repository) = support::homelab_copy();
    let state = temporary.path().join("state");
    assert_built(&meshc_in(&repository, &state, &["build"]));
    // a checkout whose `build/` (plans and cache) came with it
    let checkout = checkout_with_its_build(temporary.path(), &repository);
    assert_each_refuses_with_e422(|arguments| meshc_without_state(&checkout, arguments));
    let named = meshc_without_state(&checkout, &["diff", "--against", "build"]);
    assert_eq!(named.status.code(), Some(0), "{}", text(&named.stderr));
    // the build is made, not taken from the cache that came with the checkout,
    // and says it could not be recorded
    let built = meshc_without_state(&checkout, &["build"]);
    assert_built(&built);
    let said = text(&built.stderr);
    assert!(
        said.contains("building from nothing") && !said.contains("nothing changed"),
        "{said}"
    );
    assert!(said.contains("could not be recorded"), "{said}");
    let refused = meshc_without_state(&checkout, &["diff"]);
    assert!(
        text(&refused.stderr).contains("E422"),
        "{}",
        text(&refused.stderr)
    );
}

/// A `build/` that came without a manifest but with a cache and plans (a build's
/// manifest removed) is not the user's either: `meshc build` took its cache at
/// its word and reused its plans (a repository could have its own plan kept and
/// recorded as the user's), and `broker-permissions` accepted the result.
#[test]
fn a_build_that_came_without_its_manifest_is_built_from_nothing() {
    let (temporary, repository) = support::homelab_copy();
    // someone else's build of these very sources, at this path, its manifest gone
    assert_built(&meshc_in(
        &repository,
        &temporary.path().join("their-state"),
        &["build"],
    ));
    std::fs::remove_file(repository.join("build/manifest.json")).expect("remove");
    let state = temporary.path().join("state");
    let refused = meshc_in(&repository, &state, &["broker-permissions"]);
    assert!(
        text(&refused.stderr).contains("E422"),
        "{}",
        text(&refused.stderr)
    );
    let built = meshc_in(&repository, &state, &["build"]);
    assert_built(&built);
    let said = text(&built.stderr);
    assert!(
        said.contains("building from nothing") && !said.contains("reused)"),
        "{said}"
    );
    let own = meshc_in(&repository, &state, &["diff"]);
    assert_eq!(own.status.code(), Some(0), "{}", text(&own.stderr));
}

/// The record names the cache file itself (its stamp) as well as the manifest's
/// bytes: a build's
/// manifest can be made again by anyone who has the sources (builds are
/// reproducible), so a `build/` holding the user's very manifest beside a cache of
/// someone else's (which could say which plans to keep) is built from nothing.
/// Before, a manifest that matched the record was enough for its cache to be used.
#[test]
fn a_cache_beside_the_users_manifest_is_the_users_only_if_it_is_the_one_recorded() {
    let (temporary, repository) = support::homelab_copy();
    let state = temporary.path().join("state");
    assert_built(&meshc_in(&repository, &state, &["build"]));
    let manifest = std::fs::read(repository.join("build/manifest.json")).expect("manifest");
    let again = meshc_in(&repository, &state, &["build"]);
    assert!(
        text(&again.stderr).contains("nothing changed"),
        "{}",
        text(&again.stderr)
    );
    // the same sources built again, from nothing, by someone else at this path
    std::fs::remove_dir_all(repository.join("build")).expect("remove");
    assert_built(&meshc_in(
        &repository,
        &temporary.path().join("their-state"),
        &["build"],
    ));
    assert_eq!(
        std::fs::read(repository.join("build/manifest.json")).expect("manifest"),
        manifest,
        "a build is reproducible"
    );
    // `diff` reads the manifest, whose every plan it checks: the user's
    let diff = meshc_in(&repository, &state, &["diff"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stderr));
    // `build` would use the cache: not the user's
    let built = meshc_in(&repository, &state, &["build"]);
    assert_built(&built);
    let said = text(&built.stderr);
    assert!(
        said.contains("building from nothing") && !said.contains("nothing changed"),
        "{said}"
    );
    // which the user's builds then are (the first keeps its cache, the next uses it)
    let next = meshc_in(&repository, &state, &["build"]);
    assert!(
        !text(&next.stderr).contains("building from nothing"),
        "{}",
        text(&next.stderr)
    );
    let again = meshc_in(&repository, &state, &["build"]);
    assert!(
        text(&again.stderr).contains("nothing changed"),
        "{}",
        text(&again.stderr)
    );
}

/// A `--no-cache` build that fails leaves the user's last build (its plans and
/// manifest) as it was, and it stays the user's: the next `diff` compares against
/// it and the next `build` does not call it one that came with the repository.
/// Before, the record still named the cache `--no-cache` had removed, so the next
/// build said the output "was not made by your `meshc build`" and built from
/// nothing.
#[test]
fn a_failed_build_without_the_cache_leaves_the_users_build_the_users() {
    let (temporary, repository) = support::homelab_copy();
    let state = temporary.path().join("state");
    assert_built(&meshc_in(&repository, &state, &["build"]));
    let inventory = repository.join("mesh.nix");
    let sources = std::fs::read_to_string(&inventory).expect("mesh.nix");
    let broken = sources.replacen("registry = ", "registry = throw \"broken\"; x = ", 1);
    assert_ne!(broken, sources, "the inventory names a registry");
    std::fs::write(&inventory, broken).expect("write");
    let failed = meshc_in(&repository, &state, &["build", "--no-cache"]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    std::fs::write(&inventory, sources).expect("write");
    let diff = meshc_in(&repository, &state, &["diff"]);
    assert_eq!(diff.status.code(), Some(0), "{}", text(&diff.stderr));
    let built = meshc_in(&repository, &state, &["build"]);
    assert_built(&built);
    let said = text(&built.stderr);
    assert!(!said.contains("not made by your"), "{said}");
}

/// `meshc diff --against DIR` of a directory that is not there is E408, as `meshc
/// diff OLD NEW` of one is: it was taken for a fleet with every node new, which
/// `--detailed-exitcode` reported as changes (exit 2) where a path was mistyped.
#[test]
fn diff_against_a_directory_that_is_not_there_is_e408() {
    let (temporary, repository) = support::homelab_copy();
    let missing = temporary.path().join("deplyed");
    let diff = Command::new(MESHC)
        .args(["diff", "--detailed-exitcode", "--repo"])
        .arg(&repository)
        .arg("--against")
        .arg(&missing)
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    let said = text(&diff.stderr);
    assert_eq!(diff.status.code(), Some(1), "{said}");
    assert!(
        said.contains("E408") && said.contains("there is no such directory"),
        "{said}"
    );
    assert!(diff.stdout.is_empty(), "no diff is printed");
    // a file, or a link to nothing, named as the build: the same
    let file = temporary.path().join("a-file");
    std::fs::write(&file, "x").expect("write");
    let dangling = temporary.path().join("dangling");
    std::os::unix::fs::symlink(&missing, &dangling).expect("link");
    for against in [&file, &dangling] {
        let diff = Command::new(MESHC)
            .args(["diff", "--detailed-exitcode", "--repo"])
            .arg(&repository)
            .arg("--against")
            .arg(against)
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        let said = text(&diff.stderr);
        assert_eq!(diff.status.code(), Some(1), "{said}");
        assert!(said.contains("E408"), "{said}");
    }
}
