//! `meshc build` as a user runs it: what happens to the output directory. An
//! output that cannot be written is E407 (the one code `compile()` alone cannot
//! produce, so the diagnostic fixtures list it as covered here); a rebuild of an
//! unchanged repository touches no file; a node removed from the inventory loses
//! its plan file.

#[path = "support/repository.rs"]
mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use support::{MESHC, assert_built, files_under, homelab};

fn assert_output_unwritable(output: &Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "exit status; stderr:\n{stderr}"
    );
    assert!(stderr.contains("E407"), "no E407 in stderr:\n{stderr}");
    assert!(
        stderr.contains("--out DIR"),
        "no help line in stderr:\n{stderr}"
    );
}

/// Can this process write into `directory` despite its mode (root has
/// CAP_DAC_OVERRIDE)?
fn writable_anyway(directory: &Path) -> bool {
    let probe = directory.join("probe");
    let written = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    written
}

#[test]
fn read_only_output_directory_is_reported_as_e407() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let out = temporary.path().join("out");
    std::fs::create_dir(&out).expect("output directory");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    // Permission bits do not stop root: run meshc without CAP_DAC_OVERRIDE then,
    // so the directory is read-only for it too.
    let mut command = if writable_anyway(&out) {
        let mut command = Command::new("setpriv");
        command.args(["--bounding-set", "-dac_override", "--", MESHC]);
        command
    } else {
        Command::new(MESHC)
    };
    let output = command
        .arg("build")
        .arg("--repo")
        .arg(homelab())
        .arg("--out")
        .arg(&out)
        .output()
        .expect("meshc runs (as root this needs `setpriv`, from util-linux)");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
    assert_output_unwritable(&output);
    assert!(
        files_under(&out).is_empty(),
        "nothing is written into a read-only directory"
    );
}

#[test]
fn output_below_a_regular_file_is_reported_as_e407() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let file = temporary.path().join("a-file");
    std::fs::write(&file, b"not a directory\n").expect("write");
    let output = support::build(&homelab(), &file.join("out"));
    assert_output_unwritable(&output);
}

#[test]
fn rebuilding_into_the_same_output_changes_no_file() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let out = temporary.path().join("out");
    assert_built(&support::build(&homelab(), &out));
    let identity = |path: &Path| {
        let metadata = std::fs::metadata(path).expect("built file");
        (metadata.ino(), metadata.mtime(), metadata.mtime_nsec())
    };
    let before: Vec<_> = files_under(&out)
        .into_iter()
        .map(|(name, bytes)| {
            let id = identity(&out.join(&name));
            (name, bytes, id)
        })
        .collect();
    // long enough for a rewritten file to get a different modification time
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_built(&support::build(&homelab(), &out));
    let after: Vec<_> = files_under(&out)
        .into_iter()
        .map(|(name, bytes)| {
            let id = identity(&out.join(&name));
            (name, bytes, id)
        })
        .collect();
    assert_eq!(before.len(), after.len());
    for ((name, bytes, id), (name_after, bytes_after, id_after)) in before.iter().zip(&after) {
        assert_eq!(name, name_after);
        assert!(bytes == bytes_after, "`{name}` changed");
        assert_eq!(
            id, id_after,
            "`{name}` was rewritten (inode and modification time)"
        );
    }
}

/// Two builds at once into an output that does not exist yet both succeed, and
/// leave what one build leaves: the second waits for the first (a lock on the
/// output). Before, both staged in the same `OUT/.mesh-staging`, and the first to
/// finish or fail took the other's plans with it: in a red team's runs both failed
/// (E407, every node) in 9 of 12 rounds and the output was left missing.
#[test]
fn two_builds_at_once_into_a_new_output_both_succeed() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let alone = temporary.path().join("alone");
    assert_built(&support::build(&homelab(), &alone));
    let expected: Vec<String> = files_under(&alone)
        .into_keys()
        .filter(|name| !name.starts_with(".mesh-cache"))
        .collect();
    for round in 0..8 {
        let out = temporary.path().join(format!("out{round}"));
        let start = |out: &Path| {
            Command::new(MESHC)
                .arg("build")
                .arg("--repo")
                .arg(homelab())
                .arg("--out")
                .arg(out)
                .output()
        };
        let (first, second) = std::thread::scope(|scope| {
            let first = scope.spawn(|| start(&out));
            let second = start(&out);
            (first.join().expect("a build"), second)
        });
        assert_built(&first.expect("meshc runs"));
        assert_built(&second.expect("meshc runs"));
        let built: Vec<String> = files_under(&out)
            .into_keys()
            .filter(|name| !name.starts_with(".mesh-cache"))
            .collect();
        assert_eq!(built, expected, "round {round}");
        for name in &built {
            assert_eq!(
                std::fs::read(out.join(name)).expect("built"),
                std::fs::read(alone.join(name)).expect("built"),
                "{name}"
            );
        }
    }
}

/// `build-needs-tmpdir`: the build asked which user it runs as by making a file in
/// the temporary directory, so with `TMPDIR` naming a directory that is not there
/// (or a full `/tmp`) every build that wrote plans failed with an E407 that blamed
/// `OUT/nodes`. Nothing of a build goes to the temporary directory.
#[test]
fn a_build_needs_no_temporary_directory() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let out = temporary.path().join("out");
    // the second build finds plans in place, whose stale ones it may remove
    for _ in 0..2 {
        let output = Command::new(MESHC)
            .arg("build")
            .arg("--no-cache")
            .arg("--repo")
            .arg(homelab())
            .arg("--out")
            .arg(&out)
            .env("TMPDIR", temporary.path().join("not-there"))
            .output()
            .expect("meshc runs");
        assert_built(&output);
    }
}

#[test]
fn removed_node_loses_its_stale_plan() {
    let (temporary, repository) = support::homelab_copy();
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    assert!(out.join("nodes/app2.json").is_file());

    // remove the node `app2 = { ... };` from the inventory
    let inventory_path = repository.join("mesh.nix");
    let inventory = std::fs::read_to_string(&inventory_path).expect("mesh.nix");
    let start = inventory.find("    app2 = {").expect("app2 in the example");
    let end =
        start + inventory[start..].find("\n    };\n").expect("end of app2") + "\n    };\n".len();
    // and from the nodes the gateway's Prometheus scrapes (a `node` it names must exist)
    let scraped = "settings.monitoring.nodes = [ \"app1\" \"app2\" \"db1\" \"gateway\" \"mq1\" ];";
    assert!(
        inventory.contains(scraped),
        "the example changed: {scraped}"
    );
    let without = format!("{}{}", &inventory[..start], &inventory[end..]).replacen(
        scraped,
        "settings.monitoring.nodes = [ \"app1\" \"db1\" \"gateway\" \"mq1\" ];",
        1,
    );
    std::fs::write(&inventory_path, without).expect("write mesh.nix");

    assert_built(&support::build(&repository, &out));
    let files = files_under(&out);
    assert!(
        !files.contains_key("nodes/app2.json"),
        "stale plan kept: {:?}",
        files.keys().collect::<Vec<_>>()
    );
    assert!(files.contains_key("nodes/app1.json"));
    assert!(files.contains_key("nodes/gateway.json"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&files["manifest.json"]).expect("manifest is JSON");
    let nodes: Vec<&String> = manifest["nodes"]
        .as_object()
        .expect("manifest nodes")
        .keys()
        .collect();
    assert_eq!(nodes, ["app1", "db1", "gateway", "mq1"]);
}

/// A stale plan that cannot be removed (here a directory named like one) fails the
/// build after its plans are in place: the manifest staged for it is removed, not
/// left beside the old one for no build to remove.
#[test]
fn a_stale_plan_that_cannot_be_removed_leaves_no_staged_manifest() {
    let (temporary, repository) = support::homelab_copy();
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    std::fs::create_dir_all(out.join("nodes/ghost.json/inside")).expect("a directory");
    let inventory = repository.join("mesh.nix");
    let text = std::fs::read_to_string(&inventory).expect("mesh.nix");
    std::fs::write(
        &inventory,
        text.replacen("title = \"app2\"", "title = \"two\"", 1),
    )
    .expect("write mesh.nix");
    let output = support::build(&repository, &out);
    assert!(!output.status.success(), "the build failed");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ghost.json"), "{stderr}");
    let left: Vec<String> = std::fs::read_dir(&out)
        .expect("the output")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".new"))
        .collect();
    assert!(left.is_empty(), "staged files left: {left:?}");
}

#[test]
fn stale_removal_through_symlinked_nodes_refused() {
    let (temporary, repository) = support::homelab_copy();
    let out = temporary.path().join("out");
    let elsewhere = temporary.path().join("elsewhere");
    // a build's output (anything else is refused before, E421), whose `nodes`
    // is then replaced by a link
    assert_built(&support::build(&repository, &out));
    std::fs::remove_dir_all(out.join("nodes")).expect("remove nodes");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    std::fs::write(elsewhere.join("victim.json"), "keep").expect("victim");
    std::os::unix::fs::symlink(&elsewhere, out.join("nodes")).expect("link");
    let output = support::build(&repository, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(stderr.contains("E409"), "no E409 in stderr:\n{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(
        std::fs::read(elsewhere.join("victim.json")).expect("victim kept"),
        b"keep"
    );
    assert_eq!(
        files_under(&elsewhere).len(),
        1,
        "a plan was written through the link"
    );
}

#[test]
fn planted_plan_links_are_replaced_or_removed_never_followed() {
    let (temporary, repository) = support::homelab_copy();
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    let plan = std::fs::read(out.join("nodes/app1.json")).expect("plan");
    // a link where a plan goes, to a file that already holds the plan's bytes (a
    // comparison that follows it would leave the link in place), and a stale one
    let victim = temporary.path().join("victim");
    let stale_victim = temporary.path().join("stale-victim.json");
    std::fs::write(&victim, &plan).expect("victim");
    std::fs::write(&stale_victim, "keep").expect("stale victim");
    std::fs::remove_file(out.join("nodes/app1.json")).expect("remove");
    std::os::unix::fs::symlink(&victim, out.join("nodes/app1.json")).expect("link");
    std::os::unix::fs::symlink(&stale_victim, out.join("nodes/gone.json")).expect("link");
    assert_built(&support::build(&repository, &out));
    let app1 = std::fs::symlink_metadata(out.join("nodes/app1.json")).expect("app1");
    assert!(app1.is_file(), "the planted link was kept");
    assert_eq!(std::fs::read(out.join("nodes/app1.json")).unwrap(), plan);
    assert_eq!(std::fs::read(&victim).unwrap(), plan);
    assert!(!out.join("nodes/gone.json").exists());
    assert!(std::fs::symlink_metadata(out.join("nodes/gone.json")).is_err());
    assert_eq!(std::fs::read(&stale_victim).unwrap(), b"keep");
}

#[test]
fn stale_removal_from_a_nodes_dir_of_another_user_refused() {
    let (temporary, repository) = support::homelab_copy();
    let out = temporary.path().join("out");
    let nodes = out.join("nodes");
    // a build's output (anything else is refused before, E421), whose `nodes`
    // is then another user's
    assert_built(&support::build(&repository, &out));
    std::fs::write(nodes.join("theirs.json"), "keep").expect("their file");
    let own = std::fs::metadata(temporary.path()).expect("metadata").uid();
    assert_eq!(
        own, 0,
        "this test gives a directory to another user, which only root can: run the suite as root"
    );
    let status = Command::new("chown")
        .arg("4242")
        .arg(&nodes)
        .status()
        .expect("chown runs");
    assert!(status.success());
    let output = support::build(&repository, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stderr:\n{stderr}");
    assert!(stderr.contains("E409"), "{stderr}");
    assert!(stderr.contains("uid 4242"), "{stderr}");
    assert_eq!(std::fs::read(nodes.join("theirs.json")).unwrap(), b"keep");
}

/// A build replaces `OUT/nodes` and `OUT/manifest.json` and removes the files of
/// `OUT/nodes` no node has: it refuses an output that holds something else, and
/// changes nothing there. Before, `*.json` files of a directory that was never a
/// build were removed, and a build of another repository's output removed that
/// repository's plans with only a note.
#[test]
fn an_output_that_is_not_this_repositorys_build_is_refused_and_kept() {
    let (temporary, repository) = support::homelab_copy();
    // a directory of the user's, shaped like an output
    let data = temporary.path().join("data");
    std::fs::create_dir_all(data.join("nodes")).expect("data/nodes");
    std::fs::write(data.join("nodes/inventory.json"), "{\"mine\":1}\n").expect("write");
    std::fs::write(data.join("manifest.json"), "{\"mine\":2}\n").expect("write");
    let before = support::files_under(&data);
    let output = support::build(&repository, &data);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("E421") && said.contains("`manifest.json`"),
        "{said}"
    );
    assert_eq!(
        support::files_under(&data),
        before,
        "the user's files changed"
    );

    // another repository's build: its plans stay, with --no-cache too
    let out = temporary.path().join("out");
    support::assert_built(&support::build(&repository, &out));
    let built = support::files_under(&out);
    let other = temporary.path().join("other");
    std::fs::create_dir_all(&other).expect("other");
    std::fs::write(
        other.join("mesh.nix"),
        "{ nodes.lone = { key = \"age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w\"; modules = [ ]; }; }\n",
    )
    .expect("mesh.nix");
    for extra in [&[][..], &["--no-cache"][..]] {
        let output = support::build_with(&other, &out, extra);
        let said = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{extra:?}: {said}");
        assert!(said.contains("E420"), "{extra:?}: {said}");
        // in the words `meshc diff` uses for it: one constructor makes both
        assert!(
            said.contains("was made from the repository"),
            "{extra:?}: {said}"
        );
        assert_eq!(
            support::files_under(&out),
            built,
            "{extra:?}: the build changed"
        );
    }

    // its own build, an older build that did not record its repository, and what
    // an interrupted first build leaves are built into
    std::fs::remove_file(out.join(".mesh-repository")).expect("remove the record");
    support::assert_built(&support::build(&repository, &out));
    let interrupted = temporary.path().join("interrupted");
    std::fs::create_dir_all(interrupted.join(".mesh-staging")).expect("staging");
    std::fs::write(interrupted.join(".mesh-staging/db1.json"), "{}").expect("write");
    support::assert_built(&support::build(&repository, &interrupted));
    support::assert_built(&support::build(&repository, &interrupted));
}

/// The names E421 lists and the repository E420 names are read from the output,
/// where anyone who may write in it could have put them: the diagnostic holds them
/// escaped, as the compiler's messages hold every name it did not choose, so an
/// escape sequence in a file name reaches no terminal and no tool that reads the
/// message. Before, E421's names were in its message as they were (the terminal
/// was kept safe only by the renderer's own escaping).
#[test]
fn names_planted_in_an_output_are_escaped_in_e421_and_e420() {
    let (temporary, repository) = support::homelab_copy();
    let root = repository.canonicalize().expect("canonical repository");
    let planted = temporary.path().join("planted");
    std::fs::create_dir_all(&planted).expect("planted");
    std::fs::write(planted.join("x\u{1b}[31mred"), "").expect("a planted name");
    let diagnostic = compiler::check_output_for(&planted, &root).expect_err("E421");
    assert_eq!(diagnostic.code, lang::codes::NOT_A_BUILD_OUTPUT);
    assert!(
        !diagnostic.message.contains('\u{1b}') && diagnostic.message.contains("`x\\u{1b}[31mred`"),
        "{:?}",
        diagnostic.message
    );
    let output = support::build_with(&repository, &planted, &["--color", "never"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("E421"));
    assert!(!output.stderr.contains(&0x1b), "{:?}", output.stderr);

    // a record of a repository whose name holds an escape sequence
    let other = temporary.path().join("other");
    std::fs::create_dir_all(&other).expect("other");
    std::fs::write(
        other.join(compiler::REPOSITORY_FILE),
        "{\"format\":\"mesh-repository/1\",\"root\":\"/srv/\\u001b[2Jx\"}\n",
    )
    .expect("a planted record");
    for diagnostic in [
        compiler::check_output_for(&other, &root).expect_err("E420 from build"),
        compiler::check_built_from(&other, &root).expect_err("E420 from diff"),
    ] {
        assert_eq!(diagnostic.code, lang::codes::BUILD_OF_ANOTHER_REPOSITORY);
        assert!(
            !diagnostic.message.contains('\u{1b}')
                && diagnostic.message.contains("/srv/\\u{1b}[2Jx"),
            "{:?}",
            diagnostic.message
        );
    }
}

/// A plan that cannot be put in place (a directory where it goes) fails the build
/// before any plan is renamed into `OUT/nodes`, and leaves no temporary behind;
/// one left by a build that was killed is removed by the next build. Before, the
/// plans renamed before the failing one stayed new beside the old manifest, and
/// the temporaries of the rest stayed in `OUT/nodes` for good.
#[test]
fn a_plan_that_cannot_be_put_in_place_changes_no_plan_and_leaves_no_temporary() {
    let (temporary, repository) = support::homelab_copy();
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    let inventory = repository.join("mesh.nix");
    let text = std::fs::read_to_string(&inventory).expect("mesh.nix");
    let changed = text.replace("port = 8080;", "port = 8081;");
    assert_ne!(changed, text, "the example has app2's port");
    std::fs::write(&inventory, &changed).expect("write mesh.nix");
    // mq1's plan goes where a directory is now; app2's plan changes
    std::fs::remove_file(out.join("nodes/mq1.json")).expect("remove");
    std::fs::create_dir(out.join("nodes/mq1.json")).expect("a directory there");
    let before = files_under(&out);
    let names_before: Vec<_> = std::fs::read_dir(out.join("nodes"))
        .expect("nodes")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    let output = support::build(&repository, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E407") && stderr.contains("mq1.json"),
        "{stderr}"
    );
    let after = files_under(&out);
    let changed: Vec<&String> = after
        .keys()
        .chain(before.keys())
        .filter(|name| after.get(*name) != before.get(*name))
        .collect();
    assert!(changed.is_empty(), "changed: {changed:?}");
    let mut names_after: Vec<_> = std::fs::read_dir(out.join("nodes"))
        .expect("nodes")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    let mut names_before = names_before;
    names_before.sort();
    names_after.sort();
    assert_eq!(
        names_after, names_before,
        "a temporary was left in OUT/nodes"
    );

    // the directory removed, and a killed build's temporary planted: the next
    // build puts every plan in place and removes the temporary
    std::fs::remove_dir(out.join("nodes/mq1.json")).expect("remove the directory");
    let stale = out.join("nodes/.db1.json.4242.7.new");
    std::fs::write(&stale, "{}").expect("a stale temporary");
    assert_built(&support::build(&repository, &out));
    assert!(!stale.exists(), "the stale temporary stayed");
    assert!(out.join("nodes/mq1.json").is_file());
}

/// A build refuses an output whose names someone else may change (E409): whoever
/// may rename or replace what is in `OUT` may swap its plans or its manifest between
/// the build and `meshc publish` or `deploy`, which is root on the nodes. A
/// directory every user may write in, and one another user owns, were built into.
#[test]
fn an_output_others_may_write_in_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let temporary = tempfile::tempdir().expect("temporary directory");
    let open = temporary.path().join("open");
    std::fs::create_dir(&open).expect("mkdir");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let theirs = temporary.path().join("theirs");
    std::fs::create_dir(&theirs).expect("mkdir");
    let mut refused = vec![(open, "every user may write in it")];
    // as root, a directory of another user stands for one a user made in advance
    let as_root = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&theirs).expect("made").uid() == 0
    };
    if as_root {
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown");
        refused.push((theirs, "it belongs to uid 65534"));
    }
    for (out, why) in refused {
        let output = support::build(&homelab(), &out);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("E409") && stderr.contains(why), "{stderr}");
        assert!(!out.join("nodes").exists(), "{stderr}");
    }
    // an output only the builder (and its group: a shared checkout's) may write in
    // is built into
    for mode in [0o755, 0o775] {
        let mine = temporary.path().join(format!("mine{mode:o}"));
        std::fs::create_dir(&mine).expect("mkdir");
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(mode)).expect("chmod");
        assert_built(&support::build(&homelab(), &mine));
    }
}

/// Positions a module asks for (`unsafeGetAttrPos`, `__curPos`) name its file as
/// plans do, relative to the repository (`<stdlib>/...` for the standard library):
/// they named it by its absolute path, which put the operator's directory layout into
/// the plan and made the plan depend on where the repository was checked out.
#[test]
fn positions_in_a_plan_name_files_relative_to_the_repository() {
    let (temporary, repository) = support::homelab_copy();
    let module = repository.join("modules/web/module.nix");
    let text = std::fs::read_to_string(&module).expect("module.nix");
    let changed = text.replacen(
        "<h1>${settings.title}</h1>",
        "<h1>${settings.title}</h1> ${builtins.toJSON [ (builtins.unsafeGetAttrPos \"x\" { x = 1; }).file __curPos.file ]}",
        1,
    );
    assert_ne!(changed, text, "web's page");
    std::fs::write(&module, changed).expect("module.nix");
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    let plan = std::fs::read_to_string(out.join("nodes/app1.json")).expect("app1's plan");
    assert!(
        plan.contains(r#"[\"modules/web/module.nix\",\"modules/web/module.nix\"]"#),
        "{plan}"
    );
    let root = repository.canonicalize().expect("canonical");
    assert!(!plan.contains(&*root.to_string_lossy()), "{plan}");
}

/// The default output, `REPO/build`, is the repository's to name only as a real
/// directory: a `build` link committed to the repository is E409 for `build`,
/// `diff` and `publish`, and nothing is written where it points. Before, `meshc
/// build` wrote its plans, manifest and cache into the link's target (any empty
/// directory the operator may write). A link named with `--out` is followed.
#[test]
fn a_build_link_in_the_repository_is_refused() {
    let (temporary, repository) = support::homelab_copy();
    let elsewhere = temporary.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, repository.join("build")).expect("link");
    for arguments in [&["build"][..], &["diff"][..], &["publish"][..]] {
        let output = Command::new(MESHC)
            .args(arguments)
            .current_dir(&repository)
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        support::assert_coded(&output, "E409", &format!("{arguments:?}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("is a symbolic link"),
            "{arguments:?}: {stderr}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("list").count(),
        0,
        "something was written where the link points"
    );
    // named by the operator, the same link is followed
    let output = Command::new(MESHC)
        .arg("build")
        .arg("--out")
        .arg(repository.join("build"))
        .current_dir(&repository)
        .output()
        .expect("meshc runs");
    assert_built(&output);
    assert!(elsewhere.join("manifest.json").is_file());
}

/// A module directory that is a link, or whose `module.nix` is not a regular file,
/// is no module (modules are read beneath the repository, never through a link):
/// the node that names it is told the module is unknown, and the help says what a
/// module's directory must be (red team: it said only "check the name").
#[test]
fn a_module_that_is_a_link_is_unknown_and_the_help_says_why() {
    let (temporary, repository) = support::homelab_copy();
    let web = repository.join("modules/web");
    let moved = temporary.path().join("web-elsewhere");
    std::fs::rename(&web, &moved).expect("move the module");
    std::os::unix::fs::symlink(&moved, &web).expect("link it back");
    let output = support::build(&repository, &temporary.path().join("out"));
    support::assert_coded(&output, "E101", "a linked module directory");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("unknown module `web`") && said.contains("not a link to one"),
        "{said}"
    );
}
