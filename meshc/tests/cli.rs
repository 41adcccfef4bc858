//! The conventions of `meshc`'s command line, tested on the built binary: help on
//! every command naming every flag, the version, usage errors that exit 2 with
//! clap's suggestions, completions a shell accepts, man pages, a closed standard
//! output that ends the program quietly, the repository found by walking up, the
//! default output `REPO/build`, and the refused comparison of a repository with
//! another repository's build.

#[path = "support/repository.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use clap::CommandFactory;
use support::{MESHC, assert_built, assert_coded, homelab_copy, silent_broker_url};

fn meshc(arguments: &[&str]) -> Output {
    Command::new(MESHC)
        .args(arguments)
        .env_remove("NO_COLOR")
        .output()
        .expect("meshc runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every command path (`["build"]`, `["artifacts", "build"]`) and its definition.
fn command_paths() -> Vec<(Vec<String>, clap::Command)> {
    fn walk(
        command: &clap::Command,
        path: Vec<String>,
        paths: &mut Vec<(Vec<String>, clap::Command)>,
    ) {
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let mut sub_path = path.clone();
            sub_path.push(sub.get_name().to_string());
            paths.push((sub_path.clone(), sub.clone()));
            walk(sub, sub_path, paths);
        }
    }
    let mut command = meshc::cli::Cli::command();
    command.build();
    let mut paths = vec![(Vec::new(), command.clone())];
    walk(&command, Vec::new(), &mut paths);
    paths
}

#[test]
fn help_on_every_command_exits_0_and_names_every_flag_and_an_example() {
    let paths = command_paths();
    assert!(paths.len() > 12, "the commands: {}", paths.len());
    for (path, definition) in paths {
        let mut arguments: Vec<&str> = path.iter().map(String::as_str).collect();
        arguments.push("--help");
        let output = meshc(&arguments);
        let help = text(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "meshc {arguments:?}: {help}");
        assert!(
            output.stderr.is_empty(),
            "meshc {arguments:?}: {}",
            text(&output.stderr)
        );
        assert!(
            help.contains("Examples:"),
            "no example in meshc {arguments:?}:\n{help}"
        );
        for argument in definition.get_arguments() {
            if argument.is_hide_set() {
                continue;
            }
            if let Some(long) = argument.get_long() {
                assert!(
                    help.contains(&format!("--{long}")),
                    "meshc {arguments:?} --help does not name --{long}:\n{help}"
                );
                assert!(
                    argument.get_help().is_some(),
                    "--{long} of meshc {arguments:?} is not described"
                );
            }
        }
    }
}

#[test]
fn the_environment_variables_are_shown_on_their_flags() {
    let help = text(&meshc(&["build", "--help"]).stdout);
    for variable in ["MESH_WORKERS", "MESH_TIMINGS"] {
        assert!(
            help.contains(&format!("[env: {variable}")),
            "{variable}:\n{help}"
        );
    }
    let help = text(&meshc(&["publish", "--help"]).stdout);
    assert!(help.contains("[env: MESH_AMQP_URL"), "{help}");
}

#[test]
fn the_broker_url_in_the_environment_is_not_shown_in_help() {
    let output = Command::new(MESHC)
        .args(["publish", "--help"])
        .env("MESH_AMQP_URL", "amqp://operator:hunter2@broker/%2f")
        .output()
        .expect("meshc runs");
    assert!(
        !text(&output.stdout).contains("hunter2"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn version_is_printed_by_both_spellings() {
    for flag in ["--version", "-V"] {
        let output = meshc(&[flag]);
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(
            text(&output.stdout),
            format!("meshc {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn a_misspelt_command_exits_2_and_suggests_build() {
    let output = meshc(&["bulid"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("'build'"), "{stderr}");
}

#[test]
fn a_misspelt_flag_exits_2_and_suggests_repo() {
    let output = meshc(&["build", "--rpo", "x"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("'--repo'"), "{stderr}");
}

#[test]
fn usage_errors_found_in_values_exit_2() {
    for arguments in [
        &["eval"][..],
        &["eval", "file.nix", "--expr", "1"],
        &["lock", "--pin", "postgres=sha256:0"],
        &["check", "--format", "yaml"],
        &["diff", "one-build"],
        &["artifacts", "build", "--remote", "--store", "x"],
        &[],
    ] {
        let output = meshc(arguments);
        assert_eq!(
            output.status.code(),
            Some(2),
            "meshc {arguments:?}: {}",
            text(&output.stderr)
        );
    }
}

#[test]
fn bash_completions_pass_bash_n() {
    let output = meshc(&["completions", "bash"]);
    assert_eq!(output.status.code(), Some(0));
    let script = tempfile::NamedTempFile::new().expect("temporary file");
    std::fs::write(script.path(), &output.stdout).expect("write the script");
    let check = Command::new("bash")
        .arg("-n")
        .arg(script.path())
        .output()
        .expect("bash runs");
    assert!(check.status.success(), "bash -n: {}", text(&check.stderr));
    assert!(text(&output.stdout).contains("--detailed-exitcode"));
}

#[test]
fn completions_are_made_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let output = meshc(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        assert!(text(&output.stdout).contains("artifacts"), "{shell}");
    }
}

#[test]
fn man_pages_are_written_for_meshc_and_each_command() {
    let out = tempfile::tempdir().expect("temporary directory");
    let output = Command::new(MESHC)
        .args(["man", "--out"])
        .arg(out.path())
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    for page in [
        "meshc.1",
        "meshc-build.1",
        "meshc-artifacts-build.1",
        "meshc-diff.1",
    ] {
        let bytes = std::fs::read(out.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text(&bytes).contains(".TH"), "{page} is not a man page");
    }
    let build = std::fs::read_to_string(out.path().join("meshc-build.1")).expect("page");
    assert!(build.contains("locked"), "{build}");
    let apply = std::fs::read_to_string(out.path().join("mesh-apply.1")).expect("page");
    assert!(apply.contains("identity"), "{apply}");
}

/// Runs meshc with a standard output whose reader is already closed, so that its
/// first write fails with a broken pipe.
fn with_closed_output(arguments: &[&str], directory: &Path) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let child = Command::new(MESHC)
        .args(arguments)
        .current_dir(directory)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .expect("meshc runs");
    child.wait_with_output().expect("meshc ends")
}

#[test]
fn help_into_a_closed_pipe_ends_quietly() {
    let output = with_closed_output(&["--help"], Path::new("."));
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
}

#[test]
fn check_json_into_a_closed_pipe_ends_quietly() {
    let repository =
        support::workspace().join("meshc/tests/data/settings/override-wrong-type-shows-both-spans");
    let output = with_closed_output(&["check", "--format", "json"], &repository);
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
}

#[test]
fn completions_into_a_closed_pipe_end_quietly() {
    let output = with_closed_output(&["completions", "zsh"], Path::new("."));
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
}

#[test]
fn color_always_colours_a_pipe_and_never_does_not() {
    let coloured = |arguments: &[&str]| {
        let output = meshc(arguments);
        assert_eq!(output.status.code(), Some(1));
        output.stderr.windows(2).any(|window| window == b"\x1b[")
    };
    assert!(coloured(&["--color", "always", "eval", "--expr", "x + 1"]));
    assert!(!coloured(&["eval", "--expr", "x + 1", "--color", "never"]));
}

#[test]
fn check_walks_up_from_a_module_directory_to_mesh_nix() {
    let (_temporary, repository) = homelab_copy();
    let output = Command::new(MESHC)
        .arg("check")
        .current_dir(repository.join("modules/web"))
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("node(s) compiled without errors, 0 error(s)"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn outside_a_repository_check_says_so_with_e100() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let output = Command::new(MESHC)
        .arg("check")
        .current_dir(directory.path())
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("E100") && stderr.contains("--repo DIR"),
        "{stderr}"
    );
}

#[test]
fn build_from_a_module_directory_writes_repo_build() {
    let (_temporary, repository) = homelab_copy();
    let output = Command::new(MESHC)
        .arg("build")
        .current_dir(repository.join("modules/web"))
        .output()
        .expect("meshc runs");
    assert_built(&output);
    assert!(repository.join("build/manifest.json").is_file());
    assert!(!repository.join("modules/web/build").exists());
    // diff, from the same place, finds the repository and its build: nothing changed
    let output = Command::new(MESHC)
        .args(["diff", "--detailed-exitcode"])
        .current_dir(repository.join("modules/web"))
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        !text(&output.stderr).contains("no build"),
        "{}",
        text(&output.stderr)
    );
    // and lock, too, edits the repository's own mesh.lock
    let output = Command::new(MESHC)
        .args(["lock", "--pin"])
        .arg(format!(
            "docker.io/library/redis:7=sha256:{}",
            "a".repeat(64)
        ))
        .current_dir(repository.join("modules/web"))
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let lock = std::fs::read_to_string(repository.join("mesh.lock")).expect("mesh.lock");
    assert!(lock.contains("docker.io/library/redis:7"), "{lock}");
    assert!(!repository.join("modules/web/mesh.lock").exists());
}

#[test]
fn build_with_repo_writes_repo_build_not_the_working_directory() {
    let (temporary, repository) = homelab_copy();
    let elsewhere = temporary.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("a working directory");
    let output = Command::new(MESHC)
        .arg("build")
        .arg("--repo")
        .arg(&repository)
        .current_dir(&elsewhere)
        .output()
        .expect("meshc runs");
    assert_built(&output);
    assert!(repository.join("build/manifest.json").is_file());
    assert!(!elsewhere.join("build").exists());
    // and diff finds that build by itself: nothing changed
    let output = Command::new(MESHC)
        .args(["diff", "--detailed-exitcode", "--repo"])
        .arg(&repository)
        .current_dir(&elsewhere)
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}

/// The report's scenario: two repositories built into the same `./build`, then the
/// first compared with it. The second build is refused now (E420, `meshc build`
/// would replace the first's plans), so the output is the second's alone.
#[test]
fn diff_refuses_a_build_of_another_repository() {
    let (temporary, first) = homelab_copy();
    let second = temporary.path().join("other");
    support::copy_tree(&first, &second);
    let work = temporary.path();
    let build = |repository: &Path| {
        Command::new(MESHC)
            .args(["build", "--out", "build", "--repo"])
            .arg(repository)
            .current_dir(work)
            .output()
            .expect("meshc runs")
    };
    assert_built(&build(&second));
    let refused = build(&first);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("E420"),
        "{}",
        text(&refused.stderr)
    );
    let output = Command::new(MESHC)
        .args(["diff", "--against", "build", "--repo"])
        .arg(&first)
        .current_dir(work)
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("E420"), "{stderr}");
    assert!(stderr.contains("was made from the repository"), "{stderr}");
    assert!(
        output.stdout.is_empty(),
        "no diff is shown: {}",
        text(&output.stdout)
    );
    // the second repository may compare with its own build
    let output = Command::new(MESHC)
        .args([
            "diff",
            "--detailed-exitcode",
            "--against",
            "build",
            "--repo",
        ])
        .arg(&second)
        .current_dir(work)
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}

#[test]
fn publish_outside_a_repository_asks_for_out() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let output = Command::new(MESHC)
        .arg("publish")
        .current_dir(directory.path())
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("E100"), "{stderr}");
    assert!(stderr.contains("help: pass `--out DIR`"), "{stderr}");
}

/// A URL of this machine on which nothing listens: a port the kernel gave a
/// listener that is closed again.
fn closed_broker_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("its address").port();
    drop(listener);
    format!("amqp://guest:guest@127.0.0.1:{port}/%2f")
}

/// What `meshc publish` and `meshc broker-permissions` cannot do is a diagnostic
/// with a code and a help line, tested without a broker: an output that is no
/// build (E408), a `--node` the build lacks (E120), a broker that does not answer
/// or a URL that is none (E440). Before, each was a bare `error: ...` line.
#[test]
fn publish_and_broker_permissions_failures_are_coded_diagnostics() {
    let (temporary, repository) = homelab_copy();
    let empty = temporary.path().join("empty");
    std::fs::create_dir_all(&empty).expect("empty");
    let closed = closed_broker_url();
    for command in ["publish", "broker-permissions"] {
        let mut command_line = Command::new(MESHC);
        command_line.arg(command).arg("--out").arg(&empty);
        if command == "publish" {
            // the build is read before the broker is reached
            command_line.args(["--amqp", &closed]);
        }
        let output = command_line.output().expect("meshc runs");
        assert_coded(&output, "E408", command);
    }
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    let publish = |extra: &[&str]| {
        Command::new(MESHC)
            .arg("publish")
            .arg("--out")
            .arg(&out)
            .args(extra)
            .output()
            .expect("meshc runs")
    };
    assert_coded(
        &publish(&["--amqp", &closed, "--node", "nosuch"]),
        "E120",
        "an unknown --node",
    );
    let refused = publish(&["--amqp", &closed]);
    assert_coded(&refused, "E440", "a closed port");
    assert!(
        text(&refused.stderr).contains("--amqp"),
        "{}",
        text(&refused.stderr)
    );
    assert!(
        !text(&refused.stderr).contains("guest:guest"),
        "the password is shown"
    );
    assert_coded(
        &publish(&["--amqp", "not a url"]),
        "E440",
        "a URL that is none",
    );
}

/// `meshc publish` to a port that accepts the connection and never answers the
/// AMQP handshake gives up after the URL's `connection_timeout` with E440, whose
/// help line names the time limit. Before, it waited for ever (once 28 minutes).
#[test]
fn publish_to_a_port_that_never_answers_gives_up_with_e440() {
    let (temporary, repository) = homelab_copy();
    let out = temporary.path().join("out");
    assert_built(&support::build(&repository, &out));
    let started = std::time::Instant::now();
    let output = Command::new(MESHC)
        .arg("publish")
        .arg("--out")
        .arg(&out)
        .args(["--amqp", &silent_broker_url("?connection_timeout=1500")])
        .output()
        .expect("meshc runs");
    let waited = started.elapsed();
    assert_coded(&output, "E440", "a port that never answers");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("no AMQP handshake within 1.5 s")
            && stderr.contains("help: the connection was given up after 1.5 s")
            && stderr.contains("connection_timeout=MILLISECONDS"),
        "{stderr}"
    );
    assert!(!stderr.contains("guest:guest"), "the password is shown");
    assert!(
        waited < std::time::Duration::from_secs(20),
        "gave up after {waited:?}"
    );
}

/// `meshc builds` of a store whose record cannot be read is E316 with a help line.
#[test]
fn builds_of_an_unreadable_record_is_e316() {
    let store = tempfile::tempdir().expect("temporary directory");
    // a directory where the record goes cannot be read as one
    std::fs::create_dir(store.path().join("builds.jsonl")).expect("a directory");
    let output = Command::new(MESHC)
        .args(["builds", "--store"])
        .arg(store.path())
        .output()
        .expect("meshc runs");
    assert_coded(&output, "E316", "meshc builds");
}

/// `meshc man --out` where no directory can be made is E055 with a help line.
#[test]
fn man_pages_that_cannot_be_written_are_e055() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let file = temporary.path().join("file");
    std::fs::write(&file, "").expect("a file");
    for out in [file.clone(), file.join("below")] {
        let output = Command::new(MESHC)
            .args(["man", "--out"])
            .arg(&out)
            .output()
            .expect("meshc runs");
        assert_coded(&output, "E055", &out.display().to_string());
    }
}

/// `--repo DIR` of a directory without `mesh.nix` is E100 for every repository
/// command, before anything is read or written there. Before, `meshc lock --repo
/// modules/web --pin ...` wrote a new `mesh.lock` into the module's directory
/// (exit 0) and left the repository's own as it was.
#[test]
fn repo_without_an_inventory_is_e100_and_nothing_is_written() {
    let (_temporary, repository) = homelab_copy();
    let module = repository.join("modules/web");
    let before = support::files_under(&module);
    let pin = format!("docker.io/library/caddy:2.8=sha256:{}", "c".repeat(64));
    let arguments: &[&[&str]] = &[
        &["lock", "--pin", &pin],
        &["build"],
        &["check"],
        &["artifacts", "build"],
    ];
    for arguments in arguments {
        let output = Command::new(MESHC)
            .args(*arguments)
            .arg("--repo")
            .arg(&module)
            .output()
            .expect("meshc runs");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("E100") && stderr.contains("has no `mesh.nix`"),
            "{arguments:?}: {stderr}"
        );
        assert_eq!(
            support::files_under(&module),
            before,
            "{arguments:?} wrote there"
        );
    }
}

/// Runs meshc with `arguments` under the umask `umask` (through `sh`, so the test
/// does not depend on the umask it was started with).
fn meshc_under_umask(umask: &str, arguments: &[&std::ffi::OsStr]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(MESHC)
        .args(arguments)
        .output()
        .expect("sh runs meshc")
}

/// The permission bits of `path`, in octal.
fn permissions(path: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode();
    format!("{:o}", mode & 0o7777)
}

/// `mesh.lock` is committed beside the modules and secret to no one: a new one is
/// 0644 (less the umask), one that was there keeps its mode exactly, as an editor
/// keeps it; the sealed values a build makes stay 0600 whatever the umask. Before,
/// every rewrite of `mesh.lock` (`meshc lock`, `meshc artifacts build`) left it 0600,
/// the mode of the confined writer's temporaries.
#[test]
fn a_rewritten_lock_keeps_its_mode_and_a_new_one_is_0644_while_secrets_stay_0600() {
    let (_temporary, repository) = homelab_copy();
    let lock = repository.join("mesh.lock");
    let pin = |digit: &str| {
        std::ffi::OsString::from(format!(
            "docker.io/library/redis:7=sha256:{}",
            digit.repeat(64)
        ))
    };
    let lock_with = |umask: &str, digit: &str| {
        let output = meshc_under_umask(
            umask,
            &[
                "lock".as_ref(),
                "--repo".as_ref(),
                repository.as_os_str(),
                "--pin".as_ref(),
                &pin(digit),
            ],
        );
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let written = std::fs::read_to_string(&lock).expect("mesh.lock");
        assert!(written.contains(&digit.repeat(64)), "{written}");
    };
    std::fs::remove_file(&lock).expect("remove mesh.lock");
    lock_with("022", "a");
    assert_eq!(permissions(&lock), "644", "a new mesh.lock");
    // a mode of the operator's, which the umask would not give, is kept
    std::fs::set_permissions(&lock, std::os::unix::fs::PermissionsExt::from_mode(0o664))
        .expect("chmod");
    lock_with("022", "b");
    assert_eq!(
        permissions(&lock),
        "664",
        "a rewritten group-writable mesh.lock"
    );
    std::fs::set_permissions(&lock, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .expect("chmod");
    lock_with("022", "c");
    assert_eq!(permissions(&lock), "600", "a rewritten private mesh.lock");

    // secrets made by a build under a permissive umask are the owner's only
    let (_temporary, fresh) = homelab_copy();
    std::fs::remove_dir_all(fresh.join("secrets")).expect("remove secrets/");
    let output = meshc_under_umask(
        "000",
        &["build".as_ref(), "--repo".as_ref(), fresh.as_os_str()],
    );
    assert_built(&output);
    let sealed: Vec<String> = support::files_under(&fresh.join("secrets"))
        .into_keys()
        .collect();
    assert!(!sealed.is_empty(), "the build made no secrets");
    for name in sealed {
        let path = fresh.join("secrets").join(&name);
        assert_eq!(permissions(&path), "600", "secrets/{name}");
    }
}

/// `meshc check`'s last line counts a node an error was said for as not compiled
/// without errors (it said 5 of 5 while reporting errors for two), names the nodes
/// with errors, and the nodes left uncompiled because they consume from one (a
/// node missing from the count was not explained).
#[test]
fn check_says_which_nodes_have_errors_and_which_were_not_compiled() {
    let (_temporary, repository) = homelab_copy();
    let inventory = repository.join("mesh.nix");
    let sources = std::fs::read_to_string(&inventory).expect("mesh.nix");
    let broken = sources.replacen(
        "settings.web.title = \"app1\";",
        "settings.web.titel = \"app1\";",
        1,
    );
    assert_ne!(broken, sources, "app1 sets its title");
    std::fs::write(&inventory, broken).expect("write");
    let output = Command::new(MESHC)
        .args(["check", "--color", "never"])
        .current_dir(&repository)
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let said = text(&output.stderr);
    let last = said.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        "3 node(s) compiled without errors, 1 error(s); errors in `app1`; not compiled, as they consume from a node with errors: `gateway`",
        "{said}"
    );
}

/// Nodes named as colmena, deploy-rs and nixos-rebuild name them (`deploy app1`,
/// `--node app1`, `--target app1`) are a usage error (exit 2) that says to write
/// `--on`; they were "unexpected argument" with no way forward.
#[test]
fn deploy_of_a_node_named_without_on_says_to_write_on() {
    for arguments in [
        &["deploy", "app1"][..],
        &["deploy", "--node", "app1"],
        &["deploy", "--target", "app1"],
    ] {
        let output = meshc(arguments);
        let said = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {said}");
        assert!(
            said.contains("write `meshc deploy --on app1`"),
            "{arguments:?}: {said}"
        );
    }
}

/// One node named to `build` or `check` (`build app1`, `.#app1`, `--on`, `--node`,
/// `--target`) is a usage error (exit 2) that says every node is compiled and
/// names what shows or deploys one; clap's tip for `build --target` was `--trace`.
#[test]
fn build_or_check_of_one_node_says_every_node_is_compiled() {
    for arguments in [
        &["build", "app1"][..],
        &["build", ".#app1"],
        &["build", "--target", "app1"],
        &["check", "--on", "app1"],
        &["check", "--node", "app1"],
    ] {
        let output = meshc(arguments);
        let said = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {said}");
        assert!(
            said.contains("compiles every node") && said.contains("`meshc show app1`"),
            "{arguments:?}: {said}"
        );
    }
}
