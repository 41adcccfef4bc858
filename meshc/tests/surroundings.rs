//! What `meshc` says when its surroundings fail rather than the repository: a
//! standard output that cannot be written, a current directory that was removed,
//! a standard input that cannot be read, an editor that hangs up before it starts
//! the language server, no room for a scratch directory, a `mesh.lock` that cannot
//! be written. Each is a diagnostic with its own code and a help line, never a bare
//! `error:` line; tested on the built binary.

#[path = "support/repository.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{MESHC, assert_coded, homelab_copy};

/// `meshc ARGUMENTS` under a limit on virtual memory of `kilobytes` (`ulimit -v`),
/// in `directory`, given `input` on standard input (closed after it).
fn under_memory_limit(
    kilobytes: u64,
    arguments: &[&std::ffi::OsStr],
    input: &[u8],
    directory: &Path,
) -> Output {
    use std::io::Write;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kilobytes} && exec \"$0\" \"$@\""))
        .arg(MESHC)
        .args(arguments)
        .current_dir(directory)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let mut stdin = child.stdin.take().expect("a pipe");
    // meshc may end before it reads its input (a limit it refuses at once), and
    // then writing to it is a broken pipe, not a failure of the test.
    match stdin.write_all(input) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
            panic!("writing meshc's standard input: {error}")
        }
        _ => {}
    }
    drop(stdin);
    child.wait_with_output().expect("meshc ends")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A standard output that fails with something other than a broken pipe (a full
/// disk: `/dev/full`) is E056 and status 1. Before, a bare `error: cannot write the
/// output` line.
#[test]
fn standard_output_that_cannot_be_written_is_e056() {
    let repository =
        support::workspace().join("meshc/tests/data/settings/override-wrong-type-shows-both-spans");
    for arguments in [
        &["eval", "--expr", "1"][..],
        &["--color", "never", "eval", "--expr", "{ a = 1; }"][..],
        &["check", "--format", "json"][..],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let output = Command::new(MESHC)
            .args(arguments)
            .current_dir(&repository)
            .stdout(Stdio::from(full))
            .stderr(Stdio::piped())
            .output()
            .expect("meshc runs");
        assert_coded(&output, "E056", &format!("{arguments:?}"));
        assert!(
            text(&output.stderr).contains("standard output"),
            "{}",
            text(&output.stderr)
        );
    }
}

/// Runs `meshc ARGUMENTS` in `directory`, which is removed before meshc starts:
/// a shell enters it, removes it and runs meshc there.
fn meshc_in_removed_directory(directory: &Path, arguments: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("cd \"$1\" && rmdir \"$1\" && shift && exec \"$0\" \"$@\"")
        .arg(MESHC)
        .arg(directory)
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .expect("sh runs meshc")
}

/// Every command that starts from the current directory (the repository found by
/// walking up, `eval`'s relative paths, `repl`, `fmt`, `publish`'s default build)
/// says it cannot read it as E113. Before, a bare `error: cannot read the current
/// directory` line.
#[test]
fn a_removed_current_directory_is_e113() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    for (index, arguments) in [
        &["eval", "--expr", "1"][..],
        &["repl"][..],
        &["check"][..],
        &["fmt", "--check"][..],
        &["publish"][..],
    ]
    .into_iter()
    .enumerate()
    {
        let directory = temporary.path().join(format!("removed-{index}"));
        std::fs::create_dir(&directory).expect("a directory");
        let output = meshc_in_removed_directory(&directory, arguments);
        assert!(!directory.exists(), "{}", directory.display());
        assert_coded(&output, "E113", &format!("{arguments:?}"));
        assert!(
            text(&output.stderr).contains("current directory"),
            "{}",
            text(&output.stderr)
        );
    }
}

/// `meshc repl` whose standard input cannot be read (a directory) is E057 and
/// status 1. Before, a bare `error: cannot read standard input` line.
#[test]
fn repl_of_an_unreadable_standard_input_is_e057() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let directory = std::fs::File::open(temporary.path()).expect("a directory opened");
    let output = Command::new(MESHC)
        .arg("repl")
        .current_dir(temporary.path())
        .stdin(Stdio::from(directory))
        .output()
        .expect("meshc runs");
    assert_coded(&output, "E057", "meshc repl < DIRECTORY");
}

/// `meshc` under a limit on address space below the 2 GiB an evaluation thread's
/// stack reserves (`ulimit -v 1800000`, about 1.7 GiB) is E059 and status 1, and a
/// build writes nothing. Before, `eval` and `repl` panicked (status 101: "cannot
/// start the evaluation thread") and a build added two E900 "bug" lines, one a
/// worker, to the real error.
#[test]
fn no_room_for_an_evaluation_thread_is_e059() {
    let (_temporary, repository) = homelab_copy();
    let out = repository.join("limited-build");
    let limited = |arguments: &[&str], input: &[u8]| {
        let arguments: Vec<&std::ffi::OsStr> = arguments.iter().map(std::ffi::OsStr::new).collect();
        under_memory_limit(1_800_000, &arguments, input, &repository)
    };
    let out_argument = out.to_string_lossy().into_owned();
    for (arguments, input) in [
        (&["eval", "--expr", "1 + 2"][..], &b""[..]),
        (&["repl"][..], &b"1 + 2\n"[..]),
        (&["build", "--out", out_argument.as_str()][..], &b""[..]),
    ] {
        let output = limited(arguments, input);
        let stderr = text(&output.stderr);
        assert_coded(
            &output,
            "E059",
            &format!("meshc {arguments:?} under ulimit -v"),
        );
        assert!(stderr.contains("ulimit -v"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!stderr.contains("E900"), "{stderr}");
    }
    assert!(
        !out.join("manifest.json").exists(),
        "a build that evaluated nothing wrote a manifest"
    );
}

/// The same limit with an inventory nested 9,000 levels deep (under the parser's
/// bound): the build cache reads the inventory before any worker starts, and is
/// E059 too, into a new output and into one with a record whose inventory
/// changed. Before, the cache parsed it on the main thread when no thread of its
/// own could start, and the process died of a stack overflow (status 134).
#[test]
fn no_room_for_the_cache_to_read_a_deep_inventory_is_e059() {
    let (_temporary, repository) = homelab_copy();
    let out = repository.join("cached");
    let built = Command::new(MESHC)
        .arg("build")
        .arg("--out")
        .arg(&out)
        .current_dir(&repository)
        .output()
        .expect("meshc runs");
    assert!(built.status.success(), "{}", text(&built.stderr));
    let inventory = repository.join("mesh.nix");
    let original = std::fs::read_to_string(&inventory).expect("mesh.nix");
    let depth = 9_000;
    std::fs::write(
        &inventory,
        format!(
            "let unused = {}{}; in\n{original}",
            "[".repeat(depth),
            "]".repeat(depth)
        ),
    )
    .expect("mesh.nix written");
    for out in [out.clone(), repository.join("new")] {
        let arguments = ["build".as_ref(), "--out".as_ref(), out.as_os_str()];
        let output = under_memory_limit(1_800_000, &arguments, b"", &repository);
        let stderr = text(&output.stderr);
        assert!(!stderr.contains("overflowed its stack"), "{stderr}");
        assert_coded(&output, "E059", &format!("meshc build --out {out:?}"));
        assert!(!stderr.contains("E900"), "{stderr}");
    }
    // the build that could not run left the last one's output as it was
    let unlimited = Command::new(MESHC)
        .arg("build")
        .arg("--out")
        .arg(&out)
        .current_dir(&repository)
        .output()
        .expect("meshc runs");
    assert!(unlimited.status.success(), "{}", text(&unlimited.stderr));
}

/// `meshc lsp` whose client hangs up before `initialize` is E058 and status 1.
/// Before, a bare `error: disconnected channel` line.
#[test]
fn lsp_whose_editor_hangs_up_before_initialize_is_e058() {
    let output = Command::new(MESHC)
        .arg("lsp")
        .stdin(Stdio::null())
        .output()
        .expect("meshc runs");
    assert_coded(&output, "E058", "meshc lsp < /dev/null");
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
}

/// `meshc lsp` with room for its own thread (2 GiB of stack) but not for the two
/// workers that parse and analyse (2 GiB each): it says E059 to the editor
/// (`window/showMessage`, an error) and on standard error, and ends with status 1.
/// Before, it answered every request and never reported a diagnostic, silently:
/// the workers that did not start were dropped.
#[test]
fn lsp_without_room_for_its_workers_says_e059() {
    let mut input = String::new();
    for message in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#,
        r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
    ] {
        input.push_str(&format!(
            "Content-Length: {}\r\n\r\n{message}",
            message.len()
        ));
    }
    // both are in the pipe before it closes
    let output = under_memory_limit(
        5_000_000,
        &[std::ffi::OsStr::new("lsp")],
        input.as_bytes(),
        &std::env::temp_dir(),
    );
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains(r#""method":"window/showMessage""#) && stdout.contains("[E059]"),
        "{stdout}"
    );
    assert!(stdout.contains(r#""type":1"#), "an error message: {stdout}");
    assert_coded(&output, "E059", "meshc lsp under ulimit -v 5000000");
}

/// `meshc deploy --dry-run` that cannot make its scratch directory for the plans
/// (`TMPDIR` names none) is E407, the code of a build output that cannot be
/// written. Before, a bare `error: cannot make a scratch directory` line.
#[test]
fn dry_run_without_a_scratch_directory_is_e407() {
    let (temporary, repository) = homelab_copy();
    let output = Command::new(MESHC)
        .args(["deploy", "--dry-run", "--repo"])
        .arg(&repository)
        .env("TMPDIR", temporary.path().join("no-such-directory"))
        .output()
        .expect("meshc runs");
    assert_coded(&output, "E407", "meshc deploy --dry-run");
    assert!(
        text(&output.stderr).contains("TMPDIR"),
        "{}",
        text(&output.stderr)
    );
}

/// A `mesh.lock` that is there but cannot be read (a directory by that name; no file
/// descriptor left under `ulimit -n`) is E324, which says nothing of deleting it.
/// Before, E308 "not a valid lock file", whose help said to delete it and pin again:
/// harmful advice for a passing error.
#[test]
fn a_lock_that_cannot_be_read_is_e324_not_an_invalid_lock() {
    let (_temporary, repository) = homelab_copy();
    let lock = repository.join("mesh.lock");
    let _ = std::fs::remove_file(&lock);
    std::fs::create_dir(&lock).expect("a directory named mesh.lock");
    let output = Command::new(MESHC)
        .arg("build")
        .arg("--repo")
        .arg(&repository)
        .arg("--out")
        .arg(repository.join("out"))
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    assert_coded(&output, "E324", "meshc build with a directory at mesh.lock");
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("E308"), "{stderr}");
    assert!(!stderr.contains("delete it"), "{stderr}");
    assert!(lock.is_dir(), "mesh.lock was touched");
}

/// A `mesh.lock` that cannot be written is E317 with a help line naming it, and the
/// file is left as it was. Root writes through any mode, so the write is made to
/// fail with a file size limit of 0 (`ulimit -f 0`, the signal ignored so the write
/// returns `EFBIG`). Before, E407, whose help speaks of the build output and `--out`.
#[test]
fn a_lock_that_cannot_be_written_is_e317() {
    let (_temporary, repository) = homelab_copy();
    let lock = repository.join("mesh.lock");
    let before = std::fs::read(&lock).ok();
    let pin = format!("docker.io/library/redis:7=sha256:{}", "e".repeat(64));
    let output = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ && ulimit -f 0 && exec \"$0\" \"$@\"")
        .arg(MESHC)
        .args(["lock", "--pin", &pin, "--repo"])
        .arg(&repository)
        .output()
        .expect("sh runs meshc");
    assert_coded(&output, "E317", "meshc lock");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("help: ") && stderr.contains("mesh.lock"),
        "{stderr}"
    );
    assert!(!stderr.contains("--out"), "{stderr}");
    assert_eq!(std::fs::read(&lock).ok(), before, "mesh.lock changed");
}

/// A repository of `count` nodes whose plans are small (one file each, `motd`)
/// and whose manifest is large (it names every node): a file size limit can let
/// every plan through and stop the manifest.
fn many_small_nodes(repository: &Path, count: usize, greeting: &str) {
    let key = "age12y52ld3kt27sk7w3rpt4d6n0mpndj2v2u02z7q8ra8sjr0saepcshezt9w";
    let nodes: String = (0..count)
        .map(|index| {
            format!(
                "    n{index:03} = {{ key = \"{key}\"; address = \"10.0.{}.{}\"; modules = [ \"motd\" ]; }};\n",
                index / 200,
                index % 200 + 1
            )
        })
        .collect();
    std::fs::create_dir_all(repository.join("modules/motd")).expect("modules/motd");
    std::fs::write(
        repository.join("mesh.nix"),
        format!("{{\n  nodes = {{\n{nodes}  }};\n}}\n"),
    )
    .expect("mesh.nix");
    std::fs::write(
        repository.join("modules/motd/module.nix"),
        format!(
            "{{ mesh, ... }}:\n{{\n  description = \"A greeting\";\n  shapes = {{ node, ... }}: [\n    (mesh.file {{ path = \"/etc/motd\"; content = \"{greeting} ${{node.name}}\\n\"; }})\n  ];\n}}\n"
        ),
    )
    .expect("module.nix");
}

/// `meshc build` under a file size limit (`ulimit -f`, 512-byte blocks in `sh`),
/// with SIGXFSZ at its default action (which ends a process that writes past it).
fn build_under_file_size_limit(blocks: u64, repository: &Path, out: &Path) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap - XFSZ && ulimit -f {blocks} && exec \"$0\" \"$@\""
        ))
        .arg(MESHC)
        .arg("build")
        .arg("--repo")
        .arg(repository)
        .arg("--out")
        .arg(out)
        .env("NO_COLOR", "1")
        .output()
        .expect("sh runs meshc")
}

/// A build whose manifest is past the file size limit while its plans are not is
/// E407 with the output as it was: into a new output nothing is left, and into an
/// existing one every file keeps its bytes. Before, SIGXFSZ ended the build in
/// the middle of its commit (status 153, no diagnostic), and with the signal
/// ignored the plans were renamed in place before the manifest failed, so the
/// output held new plans under the old manifest.
#[test]
fn a_build_past_the_file_size_limit_is_e407_and_changes_nothing() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let repository = temporary.path().join("fleet");
    many_small_nodes(&repository, 120, "hello");
    // 8 KiB: every plan (a few hundred bytes) fits, the manifest (18 KiB) does not
    let fresh = temporary.path().join("fresh");
    let output = build_under_file_size_limit(16, &repository, &fresh);
    assert_coded(&output, "E407", "a new output");
    assert!(
        text(&output.stderr).contains("manifest.json"),
        "{}",
        text(&output.stderr)
    );
    assert!(!fresh.exists(), "the build left {}", fresh.display());

    let out = temporary.path().join("out");
    support::assert_built(&support::build(&repository, &out));
    let before = support::files_under(&out);
    many_small_nodes(&repository, 120, "goodbye");
    let output = build_under_file_size_limit(16, &repository, &out);
    assert_coded(&output, "E407", "an existing output");
    assert_eq!(support::files_under(&out), before, "the output changed");
    // and the next build, without the limit, makes the new plans
    support::assert_built(&support::build(&repository, &out));
    let plan = std::fs::read_to_string(out.join("nodes/n007.json")).expect("a plan");
    assert!(plan.contains("goodbye n007"), "{plan}");
}

/// `toXML` and `toJSON` write their output as it grows, past what the memory bound
/// has counted: under a limit on virtual memory the growth failed and the process
/// aborted ("memory allocation of 654311424 bytes failed", status 134). Now the
/// growth that cannot be made is E046 and status 1. A list shared at every level
/// is written out 2^26 times.
#[test]
fn a_serialization_whose_buffer_cannot_grow_is_e046_not_an_abort() {
    let directory = tempfile::tempdir().expect("a scratch directory");
    // `toJSON`'s buffer grows by doubling; `toXML` writes in chunks of at most half
    // what the bound leaves, so its bound is set past what the address space
    // leaves it, for its chunks to run out first
    for (builtin, depth, bound) in [("toXML", 26, "4000M"), ("toJSON", 28, "1200M")] {
        let program = format!(
            "let l = n: if n == 0 then [1] else let x = l (n - 1); in [x x]; \
             in builtins.stringLength (builtins.{builtin} (l {depth}))"
        );
        // the evaluation thread's stack reserves 2 GiB and mimalloc 1 GiB: 3.4 GB
        // leaves the output about half a gigabyte, while the bound is not yet
        // reached
        let output = under_memory_limit(
            3_500_000,
            &[
                "eval".as_ref(),
                "--max-memory".as_ref(),
                bound.as_ref(),
                "--expr".as_ref(),
                program.as_ref(),
            ],
            b"",
            directory.path(),
        );
        assert_coded(&output, "E046", &format!("{builtin} under ulimit -v"));
        let stderr = text(&output.stderr);
        assert!(stderr.contains("no memory left"), "{builtin}: {stderr}");
    }
}

/// A worker that cannot start (its stack's 2 GiB of address space past `ulimit
/// -v`) says E059, and the fleet is not linked without its nodes. Before, the link
/// ran on the other worker's declarations alone, and every consumer of a node of
/// the missing worker was told that no node provides the service, or that its
/// provider does not provide it (E300, E302): false errors, one per consumption,
/// each looking for a name like the missing node's; and, with the link skipped,
/// the other worker's nodes said their credentials were missing (E021).
#[test]
fn a_worker_that_cannot_start_leaves_no_false_link_errors() {
    let (_temporary, repository) = homelab_copy();
    let out = repository.with_file_name("out");
    let output = under_memory_limit(
        4_000_000,
        &[
            "build".as_ref(),
            "--repo".as_ref(),
            repository.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
            "--workers".as_ref(),
            "2".as_ref(),
            "--no-cache".as_ref(),
        ],
        b"",
        &repository,
    );
    assert_coded(&output, "E059", "a build whose second worker cannot start");
    let stderr = text(&output.stderr);
    for code in ["E300", "E301", "E302"] {
        assert!(!stderr.contains(code), "a false {code}:\n{stderr}");
    }
    // nor are the other worker's nodes made without their links (each consumer
    // would say its credential is missing: E021): E059 is the only code said
    let codes: std::collections::BTreeSet<&str> = stderr
        .match_indices('E')
        .filter_map(|(at, _)| stderr.get(at..at + 4))
        .filter(|code| code[1..].bytes().all(|byte| byte.is_ascii_digit()))
        .collect();
    assert_eq!(codes.into_iter().collect::<Vec<_>>(), ["E059"], "{stderr}");
    assert!(!out.join("nodes").exists(), "no plan is written");
}
