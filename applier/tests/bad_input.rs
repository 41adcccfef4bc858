//! Bad input is refused with a clear error and nothing changed: truncated plans, wrong
//! digests, tampered shapes, secrets for another node, unsafe archives, undeclared
//! needs, things in the way. One test per refusal, each in its own root.

mod support;

use std::path::Path;
use std::process::Command;

use plan::Plan;
use serde_json::Value;
use support::*;

/// Runs a plan file and asserts exit 1, the code, and an unchanged tree.
fn refused(root: &TestRoot, keys: &Keys, plan_path: &Path, extra: &[&str], code: &str) -> Value {
    let before = snapshot(root.path(), &[]);
    let (output, report) = run_apply(root, plan_path, keys, extra);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(
        error_codes(&report).contains(&code.to_string()),
        "expected {code}: {report:#}"
    );
    assert_same_tree(
        &before,
        &snapshot(root.path(), &[]),
        "a refused plan changed the tree",
    );
    report
}

fn refused_plan(root: &TestRoot, keys: &Keys, plan: &Plan, code: &str) -> Value {
    let plans = tempfile::tempdir().expect("tempdir");
    let path = write_plan(plans.path(), "plan.json", plan);
    refused(root, keys, &path, &[], code)
}

fn good_plan() -> Plan {
    Plan::new(
        "db1",
        vec![
            directory("/etc/app", "root", "0755"),
            file("/etc/app/app.conf", "port = 1\n", "root", "0644"),
        ],
    )
}

fn edited(edit: impl FnOnce(&mut Value), resign: bool) -> Vec<u8> {
    let mut value = good_plan().to_json();
    edit(&mut value);
    if resign {
        let object = value.as_object_mut().expect("object");
        object.remove("digest");
        let digest = plan::sha256_digest(&plan::canonical_json(&Value::Object(object.clone())));
        object.insert("digest".into(), Value::String(digest));
    }
    plan::canonical_json(&value)
}

fn refused_bytes(bytes: &[u8], code: &str) -> Value {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let path = plans.path().join("plan.json");
    std::fs::write(&path, bytes).expect("write");
    refused(&root, &keys, &path, &[], code)
}

#[test]
fn truncated_plan_is_refused() {
    let bytes = good_plan().to_json_bytes();
    let report = refused_bytes(&bytes[..bytes.len() / 2], "E500");
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("not valid JSON")
    );
}

#[test]
fn missing_plan_file_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    refused(
        &root,
        &keys,
        Path::new("/nonexistent/plan.json"),
        &[],
        "E500",
    );
}

/// A plan that never ends (`--plan /dev/zero`) is refused once more than any plan
/// holds was read; it was read until memory ran out. A sparse file stands for it.
#[test]
fn a_plan_larger_than_any_plan_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let path = plans.path().join("plan.json");
    std::fs::File::create(&path)
        .and_then(|file| file.set_len(300 << 20))
        .expect("a sparse plan");
    let report = refused(&root, &keys, &path, &[], "E500");
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("larger than 256 MiB"),
        "{report:#}"
    );
}

#[test]
fn wrong_plan_digest_is_refused() {
    refused_bytes(
        &edited(
            |value| value["digest"] = Value::String(plan::sha256_digest(b"x")),
            false,
        ),
        "E501",
    );
}

#[test]
fn unknown_format_version_is_refused() {
    refused_bytes(
        &edited(
            |value| value["format"] = Value::String("mesh-plan/9".into()),
            true,
        ),
        "E502",
    );
}

#[test]
fn unknown_field_is_refused() {
    refused_bytes(
        &edited(
            |value| value["shapes"][1]["setuid"] = Value::Bool(true),
            true,
        ),
        "E503",
    );
}

#[test]
fn unknown_kind_is_refused() {
    refused_bytes(
        &edited(
            |value| value["shapes"][1]["kind"] = Value::String("cron".into()),
            true,
        ),
        "E503",
    );
}

#[test]
fn tampered_shape_is_refused() {
    let report = refused_bytes(
        &edited(
            |value| value["shapes"][1]["content"] = Value::String("port = 6666\n".into()),
            true,
        ),
        "E504",
    );
    assert_eq!(
        report["errors"][0]["shape"]["identity"],
        "/etc/app/app.conf"
    );
}

#[test]
fn duplicate_shapes_are_refused() {
    refused_bytes(
        &edited(
            |value| {
                let copy = value["shapes"][1].clone();
                value["shapes"].as_array_mut().expect("shapes").push(copy);
            },
            true,
        ),
        "E505",
    );
}

#[test]
fn plan_for_another_node_is_refused_by_flag() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let path = write_plan(plans.path(), "plan.json", &good_plan());
    let report = refused(&root, &keys, &path, &["--node", "db2"], "E506");
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("`db1`")
    );
}

#[test]
fn plan_for_another_node_is_refused_by_the_record() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_ok(&root, &good_plan(), &keys);
    refused_plan(&root, &keys, &Plan::new("db2", vec![]), "E506");
}

#[test]
fn undeclared_parent_directory_is_refused_with_where_it_was_declared() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let report = refused_plan(
        &root,
        &keys,
        &Plan::new(
            "db1",
            vec![file("/etc/nowhere/app.conf", "x", "root", "0644")],
        ),
        "E507",
    );
    let error = &report["errors"][0];
    assert_eq!(error["shape"]["kind"], "file");
    assert_eq!(error["shape"]["module"], "app");
    assert_eq!(error["shape"]["source"]["file"], "modules/app/module.nix");
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("`/etc/nowhere`")
    );
    assert!(
        error["help"]
            .as_str()
            .expect("help")
            .contains("mesh.directory")
    );
}

#[test]
fn undeclared_owner_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![file("/etc/app.conf", "x", "ghost", "0644")]),
        "E508",
    );
}

#[test]
fn undeclared_service_user_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![service("app", &["/usr/bin/app"], "ghost")]),
        "E508",
    );
}

#[test]
fn undeclared_mount_source_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    refused_plan(
        &root,
        &keys,
        &Plan::new(
            "db1",
            vec![container("cache", &[("/srv/nothing", "/data")])],
        ),
        "E509",
    );
}

#[test]
fn needs_met_by_the_host_are_accepted() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::create_dir_all(root.host("/srv/existing")).expect("mkdir");
    std::fs::write(
        root.host("/etc/passwd"),
        "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n",
    )
    .expect("passwd");
    std::fs::write(root.host("/etc/group"), "root:x:0:\nalice:x:1000:\n").expect("group");
    let report = apply_ok(
        &root,
        &Plan::new(
            "db1",
            vec![
                file("/srv/existing/notes", "x", "alice", "0600"),
                service("notes", &["/usr/bin/notes"], "alice"),
                container("cache", &[("/srv/existing", "/data")]),
            ],
        ),
        &keys,
    );
    assert_eq!(summary(&report, "created"), 3);
    assert_eq!(
        owner_of(&root.host("/srv/existing/notes")),
        (1000, 1000),
        "owners come from ROOT/etc/passwd"
    );
}

#[test]
fn a_path_through_a_symlink_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::os::unix::fs::symlink("/tmp", root.host("/etc/escape")).expect("symlink");
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![file("/etc/escape/x", "x", "root", "0644")]),
        "E510",
    );
}

#[test]
fn secret_for_another_node_is_refused() {
    let root = TestRoot::new();
    let this_node = Keys::new();
    let other_node = Keys::new();
    let sealed = other_node.seal(b"not for you");
    let report = refused_plan(
        &root,
        &this_node,
        &Plan::new(
            "db1",
            vec![
                file("/etc/motd", "hello\n", "root", "0644"),
                secret("/etc/token", &sealed, "root", "0400"),
            ],
        ),
        "E511",
    );
    let message = report["errors"][0]["message"].as_str().expect("message");
    assert!(message.contains("another node"), "{message}");
    assert!(!root.host("/etc/token").exists());
}

#[test]
fn garbage_sealed_value_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let garbage = "-----BEGIN AGE ENCRYPTED FILE-----\nbm90IGFuIGFnZSBmaWxl\n-----END AGE ENCRYPTED FILE-----\n";
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![secret("/etc/token", garbage, "root", "0400")]),
        "E511",
    );
}

#[test]
fn unreadable_identity_is_refused() {
    let root = TestRoot::new();
    let mut keys = Keys::new();
    keys.identity = keys.directory.path().join("missing.txt");
    let plans = tempfile::tempdir().expect("tempdir");
    let path = write_plan(plans.path(), "plan.json", &good_plan());
    refused(&root, &keys, &path, &[], "E512");
}

/// An identity file larger than any is refused from its size, not read: a sparse
/// one of 200 GB had the applier reserve all of it and abort (red team).
#[test]
fn an_identity_file_larger_than_any_is_refused_unread() {
    use std::os::unix::fs::PermissionsExt;
    let root = TestRoot::new();
    let mut keys = Keys::new();
    let huge = keys.directory.path().join("huge.txt");
    std::fs::File::create(&huge)
        .and_then(|file| file.set_len(200 << 30))
        .expect("a sparse identity");
    std::fs::set_permissions(&huge, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    keys.identity = huge;
    let plans = tempfile::tempdir().expect("tempdir");
    let path = write_plan(plans.path(), "plan.json", &good_plan());
    let report = refused(&root, &keys, &path, &[], "E512");
    assert!(report.to_string().contains("at most"), "{report:#}");
}

#[test]
fn missing_artifact_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let artifact = (
        format!("sha256-{}.tar", "0".repeat(64)),
        format!("sha256:{}", "0".repeat(64)),
    );
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]),
        "E513",
    );
}

#[test]
fn artifact_with_the_wrong_digest_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let (name, _) = root.add_artifact(&tar_bytes(&[("a", "a")], &[]));
    let wrong = (name, plan::sha256_digest(b"something else"));
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![archive("/srv/site", &wrong, "root")]),
        "E514",
    );
}

fn refused_archive(bytes: Vec<u8>) {
    let root = TestRoot::new();
    let keys = Keys::new();
    let artifact = root.add_artifact(&bytes);
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]),
        "E515",
    );
    assert!(!root.host("/srv/site").exists());
    assert!(!root.host("/srv/evil").exists() && !root.host("/evil").exists());
}

#[test]
fn archive_with_parent_entries_is_refused() {
    refused_archive(forged_tar("../evil", tar::EntryType::Regular, ""));
}

#[test]
fn archive_with_absolute_entries_is_refused() {
    refused_archive(forged_tar("/evil", tar::EntryType::Regular, ""));
}

#[test]
fn archive_with_an_escaping_symlink_is_refused() {
    refused_archive(tar_bytes(&[], &[("up", "../../etc/shadow")]));
}

#[test]
fn archive_with_an_absolute_symlink_is_refused() {
    refused_archive(tar_bytes(&[], &[("shadow", "/etc/shadow")]));
}

#[test]
fn archive_with_an_escaping_hard_link_is_refused() {
    refused_archive(forged_tar("passwd", tar::EntryType::Link, "/etc/passwd"));
}

#[test]
fn archive_with_a_device_is_refused() {
    refused_archive(forged_tar("disk", tar::EntryType::Block, ""));
}

#[test]
fn archive_writing_through_its_own_symlink_is_refused() {
    refused_archive(
        tar_bytes(&[("dir/file", "x")], &[("dir", ".")])
            .into_iter()
            .collect(),
    );
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::Symlink);
    header.set_size(0);
    builder
        .append_link(&mut header, "inner", "sub")
        .expect("link");
    let mut header = tar::Header::new_ustar();
    header.set_size(1);
    header.set_entry_type(tar::EntryType::Regular);
    builder
        .append_data(&mut header, "inner/x", &b"x"[..])
        .expect("data");
    refused_archive(builder.into_inner().expect("tar"));
}

#[test]
fn host_tool_failure_is_reported() {
    let root = TestRoot::new();
    let keys = Keys::new();
    // useradd cannot open its group shadow file when that name is a directory
    std::fs::remove_file(root.host("/etc/gshadow")).expect("remove");
    std::fs::create_dir(root.host("/etc/gshadow")).expect("mkdir");
    let report = apply_fails(&root, &Plan::new("db1", vec![user("app")]), &keys);
    assert!(
        error_codes(&report).contains(&"E516".to_string()),
        "{report:#}"
    );
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("useradd")
    );
    assert_eq!(status_of(&report, "user", "app"), "failed");
}

#[test]
fn filesystem_failure_stops_and_is_reported() {
    let root = TestRoot::new();
    let keys = Keys::new();
    // the name fits, but its temp file's name does not
    let long = format!("/etc/{}", "n".repeat(250));
    let report = apply_fails(
        &root,
        &Plan::new(
            "db1",
            vec![
                file("/etc/first", "1", "root", "0644"),
                file(&long, "x", "root", "0644"),
            ],
        ),
        &keys,
    );
    assert!(
        error_codes(&report).contains(&"E517".to_string()),
        "{report:#}"
    );
    assert_eq!(status_of(&report, "file", &long), "failed");
    assert_eq!(
        status_of(&report, "file", "/etc/first"),
        "created",
        "what came before the failure is done"
    );
    let record: Value = serde_json::from_slice(
        &std::fs::read(root.host("/var/lib/mesh/applied.json")).expect("record"),
    )
    .expect("json");
    assert_eq!(record["state"], "failed");
}

#[test]
fn corrupt_record_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::create_dir_all(root.host("/var/lib/mesh")).expect("mkdir");
    std::fs::write(root.host("/var/lib/mesh/applied.json"), "{ not json").expect("write");
    refused_plan(&root, &keys, &good_plan(), "E519");
}

#[test]
fn directory_in_the_way_of_a_file_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::create_dir_all(root.host("/etc/app/app.conf")).expect("mkdir");
    refused_plan(&root, &keys, &good_plan(), "E520");
}

#[test]
fn unmanaged_directory_in_the_way_of_an_archive_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::create_dir_all(root.host("/srv/site")).expect("mkdir");
    std::fs::write(root.host("/srv/site/precious"), "data").expect("write");
    let artifact = root.add_artifact(&tar_bytes(&[("a", "a")], &[]));
    refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]),
        "E520",
    );
}

#[test]
fn a_second_apply_at_the_same_time_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    std::fs::create_dir_all(root.host("/var/lib/mesh")).expect("mkdir");
    let lock = std::fs::File::create(root.host("/var/lib/mesh/lock")).expect("lock");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).expect("flock");
    refused_plan(&root, &keys, &good_plan(), "E521");
}

/// A plan of many short values (here 10,000,000 one-letter strings, 40 MB) is
/// refused (E500) before it is parsed, in memory of the order of its bytes. Parsed
/// whole, each value took some 50 bytes: a red team's 255 MiB plan of `"a",` peaked
/// at 4.7 GB before its digest was found wrong (this one at about 700 MB).
#[test]
fn a_plan_of_many_short_values_is_refused_before_it_is_parsed() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let path = plans.path().join("plan.json");
    let mut text = String::from(r#"{"format":"mesh-plan/1","node":"db1","shapes":["#);
    text.push_str(&"\"a\",".repeat(10_000_000));
    text.push_str(r#""a"],"digest":"sha256:0"}"#);
    std::fs::write(&path, text).expect("written");
    let measure = "import resource, subprocess, sys\n\
        done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)\n\
        print(done.returncode)\n\
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n\
        print(done.stdout.decode())\n";
    let mut measured = Command::new("python3");
    measured
        .args(["-c", measure, BINARY])
        .arg(&path)
        .arg("--identity")
        .arg(&keys.identity);
    let output = rooted(&mut measured, &root, "json")
        .output()
        .expect("python3 runs (scripts/test installs it)");
    let printed = String::from_utf8_lossy(&output.stdout);
    let mut lines = printed.lines();
    assert_eq!(lines.next(), Some("1"), "{printed}");
    let peak_kib: u64 = lines
        .next()
        .and_then(|line| line.parse().ok())
        .expect("a peak");
    let report: Value =
        serde_json::from_str(&lines.collect::<Vec<_>>().join("\n")).expect("a report");
    assert_eq!(error_codes(&report), vec!["E500".to_string()], "{report:#}");
    assert!(report.to_string().contains("JSON values"), "{report:#}");
    assert!(
        peak_kib < 250 * 1024,
        "mesh-apply peaked at {} MiB refusing a 40 MB plan",
        peak_kib / 1024
    );
}

/// On a host mesh never touched there is no lock to take before the record is
/// read: a second apply that makes the lock and applies its plan while the first
/// still prepares must not be lost from the record (its shapes were never
/// withdrawn after). The first's `flock` is held back two seconds (`strace`
/// injects the delay), the second applies in that window: the first then refuses
/// (E521), having changed nothing, and the record is the second's. Before, the
/// first applied and stored its record from what it had read, without `/srv/y`.
#[test]
fn an_apply_that_came_in_before_the_first_lock_was_made_stays_recorded() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let first = write_plan(
        plans.path(),
        "x.json",
        &Plan::new("db1", vec![directory("/srv/x", "root", "0755")]),
    );
    let second = Plan::new(
        "db1",
        vec![
            directory("/srv/y", "root", "0755"),
            file("/srv/y/from-y", "y\n", "root", "0644"),
        ],
    );
    let mut delayed = Command::new("strace");
    delayed
        .args([
            "-f",
            "-o",
            "/dev/null",
            "-e",
            "inject=flock:delay_enter=2000000:when=1",
        ])
        .arg(BINARY)
        .arg(&first)
        .arg("--identity")
        .arg(&keys.identity);
    rooted(&mut delayed, &root, "json");
    let running = delayed
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("strace runs (it is installed by scripts/test)");
    // the first has read the record (none) and made the lock file it now waits to lock
    let started = std::time::Instant::now();
    while !root.host("/var/lib/mesh/lock").exists() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the first apply never made its lock file"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    apply_ok(&root, &second, &keys);
    let output = running.wait_with_output().expect("the first apply ends");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        error_codes(&report).contains(&"E521".to_string()),
        "{report:#}"
    );
    assert!(
        !root.host("/srv/x").exists(),
        "the first apply changed the host"
    );
    let record = std::fs::read_to_string(root.host("/var/lib/mesh/applied.json")).expect("record");
    assert!(
        record.contains("/srv/y/from-y"),
        "the second apply is lost from the record:\n{record}"
    );
}

/// The lock file is root's alone (0600): `flock` needs only a descriptor, and any
/// user could open the 0644 file it was made as and hold it, refusing every apply
/// after (E521) for as long as they liked. One left readable by an earlier
/// mesh-apply is replaced by the next apply that can take it.
#[test]
fn the_lock_file_is_roots_alone_and_a_readable_one_is_replaced() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let plan = write_plan(plans.path(), "plan.json", &good_plan());
    let applied = |root: &TestRoot| {
        let (output, report) = run_apply(root, &plan, &keys, &[]);
        assert_eq!(output.status.code(), Some(0), "{report:#}");
        std::fs::metadata(root.host("/var/lib/mesh/lock")).expect("the lock")
    };
    let fresh = TestRoot::new();
    assert_eq!(applied(&fresh).mode() & 0o7777, 0o600);

    let earlier = TestRoot::new();
    std::fs::create_dir_all(earlier.host("/var/lib/mesh")).expect("mkdir");
    let lock = earlier.host("/var/lib/mesh/lock");
    std::fs::write(&lock, b"").expect("lock");
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    // kept open (not locked), so that its inode is not reused by the new file
    let readable = std::fs::File::open(&lock).expect("the lock");
    let replaced = applied(&earlier);
    assert_eq!(replaced.mode() & 0o7777, 0o600);
    let old = readable.metadata().expect("the old lock");
    assert_ne!(replaced.ino(), old.ino());
    assert_eq!(old.nlink(), 0, "the readable lock file is removed");
}

#[test]
fn several_problems_are_all_reported_at_once() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let report = refused_plan(
        &root,
        &keys,
        &Plan::new(
            "db1",
            vec![
                file("/nope/a", "x", "root", "0644"),
                file("/etc/b", "x", "ghost", "0644"),
            ],
        ),
        "E507",
    );
    // in plan order: `/etc/b` sorts before `/nope/a`
    assert_eq!(error_codes(&report), vec!["E508", "E507"]);
}

#[test]
fn errors_are_rendered_with_code_location_and_help() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let plans = tempfile::tempdir().expect("tempdir");
    let path = write_plan(
        plans.path(),
        "plan.json",
        &Plan::new("db1", vec![file("/nope/a", "x", "root", "0644")]),
    );
    let output = std::process::Command::new(BINARY)
        .arg(&path)
        .arg("--identity")
        .arg(&keys.identity)
        .arg("--root")
        .arg(root.path())
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).expect("utf8");
    assert!(
        text.contains("error[E507]: file `/nope/a` needs the directory `/nope`"),
        "{text}"
    );
    assert!(
        text.contains("  --> modules/app/module.nix:1:3 (module `app`): file `/nope/a`\n"),
        "{text}"
    );
    assert!(
        text.contains("  = help: declare `mesh.directory { path = \"/nope\"; }`"),
        "{text}"
    );
}

#[test]
fn a_root_without_a_base_system_is_one_e537_before_any_shape() {
    let root = TestRoot::new();
    let keys = Keys::new();
    // an empty tree but for the artifacts directory the tests keep inside it
    std::fs::remove_dir_all(root.host("/etc")).expect("remove /etc");
    std::fs::remove_dir_all(root.host("/srv")).expect("remove /srv");
    let report = refused_plan(
        &root,
        &keys,
        &Plan::new(
            "db1",
            vec![
                user_in_groups("app", &["adm"]),
                directory("/etc/mesh", "root", "0755"),
                file("/etc/hostname", "db1\n", "root", "0644"),
                directory("/srv/app", "app", "0755"),
            ],
        ),
        "E537",
    );
    // one problem, not an undeclared need per shape
    assert_eq!(error_codes(&report), vec!["E537"], "{report:#}");
    let error = &report["errors"][0];
    let message = error["message"].as_str().expect("message");
    assert!(message.contains("no base system"), "{message}");
    assert!(
        message.contains("`/etc/passwd` and `/etc/group`"),
        "{message}"
    );
    let help = error["help"].as_str().expect("help");
    assert!(help.contains("debootstrap"), "{help}");
    assert!(help.contains("ROOT/etc/passwd"), "{help}");
}

/// Runs `mesh-apply` on `plan` with `arguments` (after the plan and the identity),
/// killing it after 60 s: an artifact that blocks must not hang the applier.
fn apply_within_a_minute(keys: &Keys, plan: &Plan, arguments: &[&std::ffi::OsStr]) -> Value {
    let plans = tempfile::tempdir().expect("tempdir");
    let path = write_plan(plans.path(), "plan.json", plan);
    let mut child = std::process::Command::new(BINARY)
        .arg(&path)
        .arg("--identity")
        .arg(&keys.identity)
        .args(arguments)
        .args(["--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let started = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().expect("kill");
            child.wait().expect("reap");
            panic!("mesh-apply hung on the artifact");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("output");
    assert_eq!(output.status.code(), Some(1));
    serde_json::from_slice(&output.stdout).expect("a JSON report")
}

fn only_error(report: &Value, code: &str) -> String {
    assert_eq!(error_codes(report), vec![code.to_string()], "{report:#}");
    report["errors"][0]["message"]
        .as_str()
        .expect("message")
        .to_string()
}

/// A symlink in the artifact directory to a file elsewhere (with the right digest) is
/// not followed: the artifact is refused (E539) and nothing is unpacked.
#[test]
fn an_artifact_that_is_a_symlink_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let outside = tempfile::tempdir().expect("tempdir");
    let bytes = tar_bytes(&[("index.html", "from outside")], &[]);
    let digest = plan::sha256_digest(&bytes);
    std::fs::write(outside.path().join("real.tar"), &bytes).expect("write");
    std::os::unix::fs::symlink(
        outside.path().join("real.tar"),
        root.artifacts.join("linked.tar"),
    )
    .expect("symlink");
    let artifact = ("linked.tar".to_string(), digest);
    let report = refused_plan(
        &root,
        &keys,
        &Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]),
        "E539",
    );
    assert!(only_error(&report, "E539").contains("linked.tar"));
    assert!(!root.host("/srv/site").exists());
}

/// A FIFO where the artifact should be is refused at once (E539), not read forever.
#[test]
fn an_artifact_that_is_a_fifo_is_refused_without_hanging() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let fifo = root.artifacts.join("fifo.tar");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let artifact = ("fifo.tar".to_string(), plan::sha256_digest(b""));
    let plan = Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]);
    let report = apply_within_a_minute(
        &keys,
        &plan,
        &[
            "--root".as_ref(),
            root.path().as_os_str(),
            "--artifacts".as_ref(),
            root.artifacts.as_os_str(),
        ],
    );
    assert!(only_error(&report, "E539").contains("not a regular file"));
    assert!(!root.host("/srv/site").exists());
}

/// The default artifact directory, `ROOT/var/lib/mesh/artifacts`, is the plan's to
/// shape: when it is a symlink (here to a directory outside the root holding an
/// artifact with the right digest, as a plan's `link` to `/etc` or `/dev` would be) the
/// apply is refused (E539), no digest of what it points at is printed, and nothing is
/// unpacked.
#[test]
fn a_symlinked_default_artifact_directory_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let outside = tempfile::tempdir().expect("tempdir");
    let bytes = tar_bytes(&[("index.html", "from outside")], &[]);
    let digest = plan::sha256_digest(&bytes);
    std::fs::write(outside.path().join("site.tar"), &bytes).expect("write");
    std::fs::create_dir_all(root.host("/var/lib/mesh")).expect("mkdir");
    std::os::unix::fs::symlink(outside.path(), root.host("/var/lib/mesh/artifacts"))
        .expect("symlink");
    let wanted = plan::sha256_digest(b"not this");
    for (artifact, shown) in [
        (("site.tar".to_string(), digest.clone()), None),
        (("site.tar".to_string(), wanted), Some(&digest)),
    ] {
        let plan = Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]);
        let report =
            apply_within_a_minute(&keys, &plan, &["--root".as_ref(), root.path().as_os_str()]);
        let message = only_error(&report, "E539");
        assert!(message.contains("symlink"), "{message}");
        if let Some(digest) = shown {
            assert!(!report.to_string().contains(digest.as_str()), "{report:#}");
        }
        assert!(!root.host("/srv/site").exists());
    }
}

/// An artifact directory inside the root that a user owns or others may write is
/// refused (E539) before anything is read from it: the red team's user put a sparse
/// 20 GB file at an artifact's name and the apply hashed it for 80 s with the node's
/// lock held (terabytes would hold it for hours). Root's and root-only, it is used.
#[test]
fn an_artifact_directory_others_may_write_is_refused() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let artifact = root.add_artifact(&tar_bytes(&[("index.html", "hello")], &[]));
    let plan = Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]);
    let permissions = |mode| std::os::unix::fs::PermissionsExt::from_mode(mode);
    std::os::unix::fs::chown(&root.artifacts, Some(1000), Some(1000)).expect("chown");
    let report = refused_plan(&root, &keys, &plan, "E539");
    assert!(
        only_error(&report, "E539").contains("owned by uid 1000"),
        "{report:#}"
    );
    std::os::unix::fs::chown(&root.artifacts, Some(0), Some(0)).expect("chown");
    std::fs::set_permissions(&root.artifacts, permissions(0o777)).expect("chmod");
    let report = refused_plan(&root, &keys, &plan, "E539");
    assert!(only_error(&report, "E539").contains("0777"), "{report:#}");
    assert!(!root.host("/srv/site").exists());
    std::fs::set_permissions(&root.artifacts, permissions(0o755)).expect("chmod");
    apply_ok(&root, &plan, &keys);
    assert_eq!(
        std::fs::read_to_string(root.host("/srv/site/index.html")).expect("unpacked"),
        "hello"
    );
}

/// `/srv/www`, root's and a local user's group's to write (in one she owns, root's
/// shapes there would be refused, E524), with her data at the names mesh uses for
/// scratch beside three shapes.
fn user_data_at_scratch_names(root: &TestRoot) {
    let www = root.host("/srv/www");
    std::fs::create_dir_all(www.join(".site.mesh-unpack/photos")).expect("mkdir");
    std::fs::write(www.join(".site.mesh-unpack/photos/2019.jpg"), "precious").expect("write");
    std::fs::create_dir_all(www.join(".site.mesh-old")).expect("mkdir");
    std::fs::write(www.join(".site.mesh-old/notes"), "mine").expect("write");
    std::fs::write(www.join(".conf.mesh-new"), "mine").expect("write");
    std::fs::write(www.join(".latest.mesh-new"), "mine too").expect("write");
    let status = std::process::Command::new("chown")
        .args(["-R", "1000:1000"])
        .arg(&www)
        .status()
        .expect("chown");
    assert!(status.success());
    shared_with_group_1000(root, "/srv/www");
}

/// Data a local user keeps at `.NAME.mesh-unpack`, `.NAME.mesh-old` or `.NAME.mesh-new`
/// in a directory they may write is not mesh's leftover: the apply (and the dry run) is
/// refused with E520 for each shape, before anything changes, and the data is kept.
#[test]
fn user_data_at_scratch_names_is_refused_and_kept() {
    let root = TestRoot::new();
    let keys = Keys::new();
    user_data_at_scratch_names(&root);
    let artifact = root.add_artifact(&tar_bytes(&[("index.html", "hi")], &[]));
    let plan = Plan::new(
        "db1",
        vec![
            archive("/srv/www/site", &artifact, "root"),
            file("/srv/www/conf", "x", "root", "0644"),
            link("/srv/www/latest", "site"),
        ],
    );
    for extra in [&["--dry-run"][..], &[]] {
        let plans = tempfile::tempdir().expect("tempdir");
        let path = write_plan(plans.path(), "plan.json", &plan);
        let report = refused(&root, &keys, &path, extra, "E520");
        assert_eq!(error_codes(&report), vec!["E520"; 3], "{report:#}");
        assert!(
            report.to_string().contains(".site.mesh-unpack"),
            "{report:#}"
        );
    }
    let www = root.host("/srv/www");
    assert_eq!(
        std::fs::read_to_string(www.join(".site.mesh-unpack/photos/2019.jpg")).expect("kept"),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(www.join(".conf.mesh-new")).expect("kept"),
        "mine"
    );
}

/// A directory root owns and group 1000 (a local user's) may write: `0775`.
fn shared_with_group_1000(root: &TestRoot, node_path: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let directory = root.host(node_path);
    std::fs::create_dir_all(&directory).expect("mkdir");
    std::os::unix::fs::chown(&directory, Some(0), Some(1000)).expect("chown");
    std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o775)).expect("chmod");
    directory
}

/// A withdrawn file's temp name is removed only when it is provably mesh's: a local
/// user's file there, in a directory they may write (root's, their group's to write:
/// in one they own, root's `conf` would be refused, E524), survives the withdrawal.
#[test]
fn a_withdrawal_keeps_user_data_at_the_temp_name() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let www = shared_with_group_1000(&root, "/srv/www");
    apply_ok(
        &root,
        &Plan::new("db1", vec![file("/srv/www/conf", "x", "root", "0644")]),
        &keys,
    );
    std::fs::write(www.join(".conf.mesh-new"), "mine").expect("write");
    std::os::unix::fs::chown(www.join(".conf.mesh-new"), Some(1000), Some(1000)).expect("chown");
    let report = apply_ok(&root, &Plan::new("db1", vec![]), &keys);
    assert_eq!(status_of(&report, "file", "/srv/www/conf"), "withdrawn");
    assert!(!www.join("conf").exists());
    assert_eq!(
        std::fs::read_to_string(www.join(".conf.mesh-new")).expect("kept"),
        "mine"
    );
}

/// A local user who writes a directory can rename any directory in it to a scratch
/// name, root's included: root's `0700` vault in her directory, which she cannot empty
/// herself, renamed to `.site.mesh-unpack` (or `.site.mesh-old`) was taken as mesh's
/// leftover for being root-owned and removed with everything in it (red team,
/// 7-scratch-rename-rootdir.sh). Where others may write, no directory at a scratch name
/// is taken as mesh's: E520 before anything changes, and the vault is kept. Removed
/// by hand, the archive is applied. (Her directory is root's and her group's to write
/// here: in one she owns, root's archive would be refused, E524.)
#[test]
fn a_root_directory_renamed_to_a_scratch_name_is_refused_and_kept() {
    use std::os::unix::fs::PermissionsExt;
    let root = TestRoot::new();
    let keys = Keys::new();
    let www = shared_with_group_1000(&root, "/srv/www");
    let artifact = root.add_artifact(&tar_bytes(&[("index.html", "hi")], &[]));
    let plan = Plan::new("db1", vec![archive("/srv/www/site", &artifact, "root")]);
    for scratch in [".site.mesh-unpack", ".site.mesh-old"] {
        let vault = www.join(scratch);
        std::fs::create_dir_all(vault.join("db")).expect("mkdir");
        std::fs::write(vault.join("db/data"), "precious").expect("write");
        std::fs::set_permissions(&vault, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        for extra in [&["--dry-run"][..], &[]] {
            let plans = tempfile::tempdir().expect("tempdir");
            let path = write_plan(plans.path(), "plan.json", &plan);
            let report = refused(&root, &keys, &path, extra, "E520");
            assert_eq!(error_codes(&report), vec!["E520"], "{report:#}");
            assert!(report.to_string().contains(scratch), "{report:#}");
        }
        assert_eq!(
            std::fs::read_to_string(vault.join("db/data")).expect("kept"),
            "precious"
        );
        assert!(!www.join("site").exists());
        std::fs::remove_dir_all(&vault).expect("remove by hand");
    }
    apply_ok(&root, &plan, &keys);
    assert_eq!(
        std::fs::read_to_string(www.join("site/index.html")).expect("applied"),
        "hi"
    );
}

/// Adds alice (uid and gid 1000), the local user of the red team's cases, to the
/// root's account files.
fn add_alice(root: &TestRoot) {
    use std::io::Write;
    for (table, line) in [
        ("etc/passwd", "alice:x:1000:1000::/home/alice:/bin/sh\n"),
        ("etc/group", "alice:x:1000:\n"),
    ] {
        std::fs::OpenOptions::new()
            .append(true)
            .open(root.path().join(table))
            .and_then(|mut file| file.write_all(line.as_bytes()))
            .expect("append");
    }
}

/// A user who owns an archive's tree can move a directory of hers into it, holding
/// root's `0700` vault, which she cannot empty herself; the next version's swap then
/// removed the old tree, vault and all, by name (red team, 8-scratch-race-any-owner.sh
/// names the same unchecked removal). The old tree is now removed through its
/// descriptor, and a subdirectory of a directory others may write only when it has the
/// tree's owner and group: the vault stops the removal (E520) and is kept, the new
/// version is in place.
#[test]
fn a_directory_moved_into_an_archive_tree_is_not_removed_with_it() {
    use std::os::unix::fs::PermissionsExt;
    let root = TestRoot::new();
    let keys = Keys::new();
    add_alice(&root);
    let www = root.host("/srv/www");
    std::fs::create_dir_all(&www).expect("mkdir");
    std::os::unix::fs::chown(&www, Some(1000), Some(1000)).expect("chown");
    let first = root.add_artifact(&tar_bytes(&[("index.html", "one")], &[]));
    let second = root.add_artifact(&tar_bytes(&[("index.html", "two"), ("x", "y")], &[]));
    apply_ok(
        &root,
        &Plan::new("db1", vec![archive("/srv/www/site", &first, "alice")]),
        &keys,
    );
    // her directory, with root's vault in it, moved into the tree she owns
    let stuff = www.join("site/stuff");
    std::fs::create_dir_all(stuff.join("vault/db")).expect("mkdir");
    std::fs::write(stuff.join("vault/db/data"), "precious").expect("write");
    std::fs::set_permissions(stuff.join("vault"), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    std::os::unix::fs::chown(&stuff, Some(1000), Some(1000)).expect("chown");
    let report = apply_fails(
        &root,
        &Plan::new("db1", vec![archive("/srv/www/site", &second, "alice")]),
        &keys,
    );
    assert_eq!(error_codes(&report), vec!["E520"], "{report:#}");
    assert_eq!(
        std::fs::read_to_string(www.join(".site.mesh-unpack/stuff/vault/db/data")).expect("kept"),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(www.join("site/index.html")).expect("swapped in"),
        "two"
    );
}

/// Where only root writes, the scratch names are mesh's: a killed run's leftovers are
/// replaced and removed as before.
#[test]
fn leftover_scratch_names_where_only_root_writes_are_replaced() {
    let root = TestRoot::new();
    let keys = Keys::new();
    let srv = root.host("/srv");
    std::fs::create_dir_all(srv.join(".site.mesh-unpack/half")).expect("mkdir");
    std::fs::write(srv.join(".conf.mesh-new"), "half").expect("write");
    let artifact = root.add_artifact(&tar_bytes(&[("index.html", "hi")], &[]));
    apply_ok(
        &root,
        &Plan::new(
            "db1",
            vec![
                archive("/srv/site", &artifact, "root"),
                file("/srv/conf", "x", "root", "0644"),
            ],
        ),
        &keys,
    );
    let mut names: Vec<String> = std::fs::read_dir(&srv)
        .expect("read")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["conf", "site"]);
    assert_eq!(
        std::fs::read_to_string(srv.join("conf")).expect("read"),
        "x"
    );
}

/// A plan whose shapes own the applier's scratch names or its own state is refused
/// before anything changes (the plan's rules, which the compiler applies too). A
/// red team's plan owned `/srv/.app.mesh-unpack` beside the archive `/srv/app`:
/// the next change of the archive removed that directory and all it held, as its
/// own leftover; a file at `.a.mesh-new` became `/srv/a`'s content on every run;
/// and a file at `/var/lib/mesh/identity` would replace the node's key. Another gave
/// `/var/lib` to a user: the apply stopped writing its record (E519), and every
/// later apply was refused (E524: the way to the record passed from the user's
/// directory into root's), even one giving `/var/lib` back. A link at
/// `/var/lib/mesh` would point the applier's state elsewhere.
#[test]
fn shapes_at_the_appliers_scratch_or_state_are_refused() {
    for shape in [
        directory("/srv/.app.mesh-unpack", "root", "0755"),
        file("/srv/.a.mesh-new", "scratch\n", "root", "0644"),
        file(
            "/var/lib/mesh/identity",
            "AGE-SECRET-KEY-1\n",
            "root",
            "0600",
        ),
        file("/var/lib/mesh/applied.json", "{}\n", "root", "0644"),
        directory("/var/lib/mesh", "nobody", "0755"),
        directory("/var/lib", "nobody", "0755"),
        directory("/var", "nobody", "0755"),
        directory("/var/lib", "root", "0777"),
        link("/var/lib/mesh", "/srv"),
        link("/var/lib", "/srv"),
        file("/var", "x", "root", "0644"),
        // red team: a link there had every later plan with an archive refused
        link("/var/lib/mesh/artifacts", "/srv/arts"),
        file("/var/lib/mesh/artifacts", "x", "root", "0644"),
        directory("/var/lib/mesh/artifacts", "nobody", "0755"),
    ] {
        let root = TestRoot::new();
        let keys = Keys::new();
        let report = refused_plan(&root, &keys, &Plan::new("db1", vec![shape]), "E503");
        let message = report["errors"][0]["message"].as_str().expect("message");
        assert!(
            message.contains("mesh-apply"),
            "the reason names the applier's own: {message}"
        );
    }
}

/// A shape at an account file (or at `/etc`, which holds them) is refused before
/// anything changes (E503), and the host's accounts are as they were. The red team
/// found that a plan writing `/etc/passwd` with root's line at uid 1000 had the
/// state directory, owned by `root` by name, made uid 1000's: owners are looked up
/// in the account files the plan had just replaced.
#[test]
fn shapes_at_the_account_files_are_refused() {
    for shape in [
        file(
            "/etc/passwd",
            "root:x:1000:1000:root:/root:/bin/sh\n",
            "root",
            "0644",
        ),
        file("/etc/shadow-", "root:!:1::::::\n", "root", "0600"),
        file("/etc/.pwd.lock", "", "root", "0600"),
        link("/etc/group", "/srv/group"),
        directory("/etc/gshadow", "root", "0755"),
        file("/etc/passwd/x", "x", "root", "0644"),
        link("/etc", "/srv/etc"),
        directory("/etc", "nobody", "0755"),
        directory("/etc", "root", "0777"),
    ] {
        let root = TestRoot::new();
        let passwd = root.directory.path().join("etc/passwd");
        let before = std::fs::read(&passwd).ok();
        let keys = Keys::new();
        let report = refused_plan(&root, &keys, &Plan::new("db1", vec![shape]), "E503");
        let message = report["errors"][0]["message"].as_str().expect("message");
        assert!(
            message.contains("account"),
            "the reason names the accounts: {message}"
        );
        assert_eq!(std::fs::read(&passwd).ok(), before, "accounts unchanged");
    }
}

/// A path shape at a file the applier writes for a unit (the service's unit, its
/// enabling link, a container's Quadlet file) is refused before anything changes
/// (E505, a conflict between two shapes).
/// A red team's plan with a file at `/etc/systemd/system/web.service` and the
/// service `web` changed one then the other on every run (a restart each time).
#[test]
fn a_path_shape_at_a_units_file_is_refused() {
    for shape in [
        file(
            "/etc/systemd/system/web.service",
            "[Service]\n",
            "root",
            "0644",
        ),
        file(
            "/etc/systemd/system/multi-user.target.wants/web.service",
            "x",
            "root",
            "0644",
        ),
        directory("/etc/systemd/system/web.service", "root", "0755"),
    ] {
        let root = TestRoot::new();
        let keys = Keys::new();
        let report = refused_plan(
            &root,
            &keys,
            &Plan::new(
                "db1",
                vec![shape, service("web", &["/usr/bin/web"], "root")],
            ),
            "E505",
        );
        let message = report["errors"][0]["message"].as_str().expect("message");
        assert!(message.contains("mesh-apply writes"), "{message}");
    }
}

/// The owner of an archive's tree may give a file in it a name that is not UTF-8.
/// The next version swapped in but could not remove the old tree (the name, made
/// into text, named nothing: "Directory not empty", E517), and every apply after
/// that failed until someone removed `.site.mesh-unpack` by hand (red team). Names
/// are now removed by their bytes: every version goes in, nothing is left over.
#[test]
fn a_name_that_is_not_utf8_in_an_archive_tree_does_not_block_the_next_versions() {
    use std::os::unix::ffi::OsStrExt;
    let root = TestRoot::new();
    let keys = Keys::new();
    add_alice(&root);
    let srv = root.host("/srv");
    std::fs::create_dir_all(&srv).expect("mkdir");
    let versions: Vec<_> = ["one", "two", "three"]
        .into_iter()
        .map(|text| root.add_artifact(&tar_bytes(&[("index.html", text)], &[])))
        .collect();
    let apply_version = |version: usize| {
        apply_ok(
            &root,
            &Plan::new(
                "db1",
                vec![archive("/srv/site", &versions[version], "alice")],
            ),
            &keys,
        )
    };
    apply_version(0);
    let odd = srv
        .join("site")
        .join(std::ffi::OsStr::from_bytes(b"\xffodd\xfe"));
    std::fs::write(&odd, "hers").expect("a name that is not UTF-8");
    std::os::unix::fs::chown(&odd, Some(1000), Some(1000)).expect("chown");
    for version in [1, 2] {
        apply_version(version);
        assert_eq!(
            std::fs::read_to_string(srv.join("site/index.html")).expect("swapped in"),
            ["one", "two", "three"][version]
        );
        let left: Vec<_> = std::fs::read_dir(&srv)
            .expect("srv")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(
            left,
            vec![std::ffi::OsString::from("site")],
            "version {version}"
        );
    }
}

/// An archive entry nested in more than 256 directories is refused before
/// anything is unpacked (E515); a file in exactly 256 is unpacked. A red team's 10 KB artifact
/// holding one file 3,000 directories deep ran out of descriptors removing the old
/// tree (`ulimit -n 1024`, one a level), which no later apply could then remove.
#[test]
fn an_archive_nested_too_deep_is_refused_and_one_at_the_bound_is_unpacked() {
    let deep = |levels: usize| format!("{}file", "d/".repeat(levels));
    refused_archive(tar_bytes(&[(deep(257).as_str(), "x")], &[]));
    let root = TestRoot::new();
    let keys = Keys::new();
    let artifact = root.add_artifact(&tar_bytes(&[(deep(256).as_str(), "x")], &[]));
    apply_ok(
        &root,
        &Plan::new("db1", vec![archive("/srv/site", &artifact, "root")]),
        &keys,
    );
    assert_eq!(
        std::fs::read_to_string(root.host("/srv/site").join(deep(256))).expect("unpacked"),
        "x"
    );
}

/// A file past the file size limit (`ulimit -f`, `LimitFSIZE=` in a unit) fails
/// its step with a problem the report names, the file left as it was, and the run
/// ends in a report. Before, SIGXFSZ ended `mesh-apply` in the middle of the write:
/// no report, and a temporary file left beside the old one.
#[test]
fn a_file_past_the_file_size_limit_fails_with_a_report() {
    let root = TestRoot::new();
    let keys = Keys::new();
    apply_ok(&root, &good_plan(), &keys);
    let before = snapshot(root.path(), &[]);
    let large = "port = 1\n".repeat(2_000);
    let plan = Plan::new(
        "db1",
        vec![
            directory("/etc/app", "root", "0755"),
            file("/etc/app/app.conf", &large, "root", "0644"),
        ],
    );
    let plans = tempfile::tempdir().expect("tempdir");
    let path = write_plan(plans.path(), "plan.json", &plan);
    // 8 KiB in `sh`'s 512-byte blocks: the plan (18 KB) is read, the file cannot be written
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("trap - XFSZ && ulimit -f 16 && exec \"$0\" \"$@\"")
        .arg(BINARY)
        .arg(&path)
        .arg("--identity")
        .arg(&keys.identity);
    rooted(&mut command, &root, "json");
    let output = command.output().expect("sh runs mesh-apply");
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert!(!error_codes(&report).is_empty(), "{report:#}");
    assert!(
        report.to_string().contains("too large") || report.to_string().contains("File too large"),
        "{report:#}"
    );
    assert_eq!(
        std::fs::read_to_string(root.host("/etc/app/app.conf")).expect("the file"),
        "port = 1\n"
    );
    // the applier's own record of the run aside
    let outside_state = |tree: std::collections::BTreeMap<String, Node>| {
        tree.into_iter()
            .filter(|(name, _)| !name.starts_with("var/lib/mesh"))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert_same_tree(
        &outside_state(before),
        &outside_state(snapshot(root.path(), &[])),
        "a failed write changed the tree",
    );
}

/// Only a file or a symlink at a file's scratch name can be mesh's leftover: a FIFO
/// of alice's at `.conf.mesh-new`, in a directory she may write, beside a file the
/// plan gives her, was removed as one (red team). It is someone's (E520) and kept.
#[test]
fn a_fifo_at_a_scratch_name_is_not_taken_for_a_leftover() {
    use std::os::unix::fs::FileTypeExt;
    let root = TestRoot::new();
    let keys = Keys::new();
    add_alice(&root);
    let www = shared_with_group_1000(&root, "/srv/www");
    let fifo = www.join(".conf.mesh-new");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    std::os::unix::fs::chown(&fifo, Some(1000), Some(1000)).expect("chown");
    // the shape's owner, group and mode: only its kind says it is not mesh's
    std::fs::set_permissions(&fifo, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    let plans = tempfile::tempdir().expect("tempdir");
    let plan = Plan::new("db1", vec![file("/srv/www/conf", "x", "alice", "0600")]);
    let path = write_plan(plans.path(), "plan.json", &plan);
    // (the tree is not read whole to compare it: reading the FIFO would wait)
    let (output, report) = run_apply(&root, &path, &keys, &[]);
    assert_eq!(output.status.code(), Some(1), "{report:#}");
    assert_eq!(error_codes(&report), vec!["E520"], "{report:#}");
    let kept = std::fs::symlink_metadata(&fifo).expect("kept");
    assert!(kept.file_type().is_fifo());
    assert!(!www.join("conf").exists());
}
