//! `meshc eval` prints byte for byte what `nix-instantiate --eval --strict [--json]`
//! prints: the value and a newline, or JSON with no newline. Compared with the real
//! nix-instantiate, which these tests require (install nix-bin).

use std::process::Command;

fn run(program: &str, arguments: &[&str]) -> Vec<u8> {
    let output = Command::new(program)
        .args(arguments)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{program} cannot run ({e}); the oracle tests need nix-bin: apt-get install nix-bin"
            )
        });
    assert!(
        output.status.success(),
        "{program} {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[test]
fn eval_output_is_byte_identical_to_nix_instantiate() {
    let meshc = env!("CARGO_BIN_EXE_meshc");
    for expression in ["{ a = 1; b = [ \"x\" 2.5 null ]; }", "\"s\\n\"", "[ ]"] {
        for json in [false, true] {
            let mut mesh = vec!["eval", "--expr", expression];
            let mut nix = vec!["--eval", "--strict", "--expr", expression];
            if json {
                mesh.insert(1, "--json");
                nix.insert(2, "--json");
            }
            assert_eq!(
                run(meshc, &mesh),
                run("nix-instantiate", &nix),
                "{expression} (json: {json})"
            );
        }
    }
}

/// A file or directory name that is not UTF-8 (which `readDir` returns) is kept as
/// the system's bytes: listed with its length, and a file beneath it imported
/// (with a relative import of its own) as Nix does. It was decoded lossily, so
/// the name grew and the import read a path that does not exist.
#[test]
fn names_that_are_not_utf8_are_listed_and_imported_as_nix_does() {
    use std::os::unix::ffi::OsStrExt;
    let temporary = tempfile::tempdir().expect("temporary directory");
    let directory = temporary.path().join(std::ffi::OsStr::from_bytes(b"d\xff"));
    std::fs::create_dir(&directory).expect("directory");
    std::fs::write(directory.join("a.nix"), "import ./b.nix").expect("a.nix");
    std::fs::write(directory.join("b.nix"), "42").expect("b.nix");
    let main = temporary.path().join("main.nix");
    std::fs::write(
        &main,
        "let names = builtins.attrNames (builtins.readDir ./.); in \
         map (n: if n == \"main.nix\" then n else [ (builtins.stringLength n) (import (./. + \"/${n}/a.nix\")) ]) names",
    )
    .expect("main.nix");
    let main = main.to_str().expect("a UTF-8 temporary path");
    let root = temporary.path().to_str().expect("a UTF-8 temporary path");
    let mesh = run(env!("CARGO_BIN_EXE_meshc"), &["eval", "--root", root, main]);
    assert_eq!(mesh, run("nix-instantiate", &["--eval", "--strict", main]));
    assert_eq!(
        String::from_utf8_lossy(&mesh),
        "[ [ 2 42 ] \"main.nix\" ]\n"
    );
}

/// `meshc eval` reads and parses ahead the `.nix` files a file names (a module
/// list of literal paths): on the real filesystem, a program importing a hundred
/// such files with imports of their own prints what Nix prints, and a named
/// `.nix` path that is a FIFO, or a file with a syntax error, that is never
/// imported is neither opened (a FIFO would block the read) nor reported.
#[test]
fn files_named_by_path_literals_are_parsed_ahead_as_nix_reads_them() {
    let temporary = tempfile::tempdir().expect("temporary directory");
    let directory = temporary.path();
    let mut list = String::new();
    for k in 0..100 {
        std::fs::write(
            directory.join(format!("f{k}.nix")),
            format!("{{ k = {k}; g = import ./g{k}.nix; }}"),
        )
        .expect("module");
        std::fs::write(directory.join(format!("g{k}.nix")), format!("\"g{k}\"")).expect("g");
        list.push_str(&format!(" ./f{k}.nix"));
    }
    std::fs::write(directory.join("broken.nix"), "{ not ( nix").expect("broken");
    let fifo = directory.join("pipe.nix");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo");
    let main = directory.join("main.nix");
    std::fs::write(
        &main,
        format!(
            "let modules = map import [{list} ]; in {{ sum = builtins.foldl' (a: m: a + m.k) 0 modules; last = (builtins.elemAt modules 99).g; named = map builtins.baseNameOf [ ./broken.nix ./pipe.nix ]; }}"
        ),
    )
    .expect("main");
    let main = main.to_str().expect("UTF-8 path");
    // a FIFO opened for reading waits for a writer: a timeout turns a hang into a failure
    let mesh = run(
        "timeout",
        &["20", env!("CARGO_BIN_EXE_meshc"), "eval", main],
    );
    assert_eq!(mesh, run("nix-instantiate", &["--eval", "--strict", main]));
    assert!(
        String::from_utf8_lossy(&mesh).contains("sum = 4950;"),
        "{}",
        String::from_utf8_lossy(&mesh)
    );
}

/// `eval-root-default`: a directory's `default.nix` is named as Nix names it, also
/// for the root directory: `meshc eval /` read `//default.nix` (and said so in E035).
#[test]
fn the_root_directory_is_imported_from_its_default_nix_as_nix_names_it() {
    assert!(
        !std::path::Path::new("/default.nix").exists(),
        "this test needs a machine without /default.nix"
    );
    let output = Command::new(env!("CARGO_BIN_EXE_meshc"))
        .args(["eval", "--root", "/", "/"])
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("E035"), "{stderr}");
    assert!(stderr.contains("`/default.nix`"), "{stderr}");
    assert!(!stderr.contains("//default.nix"), "{stderr}");
    let nix = Command::new("nix-instantiate")
        .args(["--eval", "/"])
        .output()
        .expect("nix-instantiate runs (install nix-bin)");
    assert!(
        String::from_utf8_lossy(&nix.stderr).contains("'/default.nix'"),
        "{}",
        String::from_utf8_lossy(&nix.stderr)
    );
}

/// `readFile` of a directory says it is one (a review found "a device or a socket is
/// not read" said of a directory), and of a device that it is a device.
#[test]
fn reading_a_directory_or_a_device_says_which_it_is() {
    let directory = tempfile::tempdir().expect("temporary directory");
    std::fs::create_dir(directory.path().join("templates")).expect("mkdir");
    for (expression, said) in [
        (
            "builtins.readFile ./templates",
            "it is a directory, not a regular file",
        ),
        (
            "builtins.readFile /dev/null",
            "it is a device, not a regular file",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_meshc"))
            .args(["eval", "--root", "/", "--expr", expression])
            .current_dir(directory.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{expression}: {stderr}");
        assert!(stderr.contains("E035"), "{expression}: {stderr}");
        assert!(stderr.contains(said), "{expression}: {stderr}");
    }
}

/// A device where a file is read (`/dev/zero`, which never ends) is refused with
/// E035 at once: `readFile`, `import`, `hashFile` and `meshc eval FILE` read it
/// until memory ran out (2.8 GB after 4 s). A named pipe is read as Nix reads it.
#[test]
fn a_device_is_refused_not_read_without_end() {
    for arguments in [
        vec![
            "eval",
            "--root",
            "/",
            "--expr",
            "builtins.readFile /dev/zero",
        ],
        vec!["eval", "--root", "/", "--expr", "import /dev/zero"],
        vec![
            "eval",
            "--root",
            "/",
            "--expr",
            "builtins.hashFile \"sha256\" /dev/zero",
        ],
        vec!["eval", "/dev/zero"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_meshc"))
            .args(&arguments)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("meshc runs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while child.try_wait().expect("a status").is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("meshc {arguments:?} kept reading the device");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let output = child.wait_with_output().expect("meshc ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{arguments:?}: {stderr}");
        assert!(stderr.contains("E035"), "{arguments:?}: {stderr}");
        assert!(
            stderr.contains("not a regular file"),
            "{arguments:?}: {stderr}"
        );
    }
}

/// `readFileType` names a link `"symlink"`, wherever it points (into the directory,
/// nowhere, outside the repository), as `readDir` names it and as newer Nix does.
/// It followed the link: `"regular"` for a link to a file, and E035 "no such file"
/// for a dangling one.
#[test]
fn read_file_type_names_a_link_a_symlink_without_following_it() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let here = directory.path();
    std::fs::write(here.join("real"), "x").expect("a file");
    std::fs::create_dir(here.join("sub")).expect("a directory");
    std::os::unix::fs::symlink("real", here.join("to-file")).expect("a link");
    std::os::unix::fs::symlink("nowhere", here.join("dangling")).expect("a link");
    std::os::unix::fs::symlink("/etc", here.join("outside")).expect("a link");
    let program = "map builtins.readFileType [ ./real ./sub ./to-file ./dangling ./outside ]";
    let output = Command::new(env!("CARGO_BIN_EXE_meshc"))
        .args(["eval", "--strict", "--expr", program])
        .current_dir(here)
        .output()
        .expect("meshc runs");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        r#"[ "regular" "directory" "symlink" "symlink" "symlink" ]"#,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A checkout's `.git` is not read: its configuration may hold a token (a remote's
/// URL), and a module could copy it into a plan. `readFile` of it is E035 and
/// `pathExists` false, as in a flake, whose source has no `.git`; listing the
/// repository still names it. It was read as any file.
#[test]
fn the_repositorys_git_directory_is_not_read() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let root = directory.path();
    std::fs::write(root.join("mesh.nix"), "{ nodes = { }; }\n").expect("mesh.nix");
    std::fs::create_dir_all(root.join(".git")).expect(".git");
    std::fs::write(
        root.join(".git/config"),
        "[remote \"origin\"]\n\turl = https://user:ghp_token@example.org/repo\n",
    )
    .expect("config");
    let eval = |expression: &str| {
        Command::new(env!("CARGO_BIN_EXE_meshc"))
            .args(["eval", "--expr", expression])
            .current_dir(root)
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs")
    };
    let read = eval("builtins.readFile ./.git/config");
    let stderr = String::from_utf8_lossy(&read.stderr);
    assert_eq!(read.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("E035") && stderr.contains("`.git`"),
        "{stderr}"
    );
    assert!(!stderr.contains("ghp_token"), "{stderr}");
    let exists = eval("builtins.pathExists ./.git/config");
    assert_eq!(String::from_utf8_lossy(&exists.stdout), "false\n");
    let listed = eval("builtins.attrNames (builtins.readDir ./.)");
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "[ \".git\" \"mesh.nix\" ]\n"
    );
}

const MESHC: &str = env!("CARGO_BIN_EXE_meshc");

/// A trace's message is written as Nix writes it to a pipe, and escaped when
/// standard error is a terminal (`script` gives the command one): the message is
/// the program's text, and its escape sequences would drive the terminal.
#[test]
fn a_trace_is_escaped_on_a_terminal_only() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let program = directory.path().join("trace.nix");
    std::fs::write(
        &program,
        "builtins.trace \"\u{1b}]0;owned\u{7}\u{202e}x\" 1\n",
    )
    .expect("write");
    let piped = std::process::Command::new(MESHC)
        .arg("eval")
        .arg(&program)
        .output()
        .expect("meshc runs");
    assert_eq!(
        String::from_utf8_lossy(&piped.stderr),
        "trace: \u{1b}]0;owned\u{7}\u{202e}x\n"
    );
    let command = format!("'{MESHC}' eval '{}'", program.display());
    let on_terminal = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script (util-linux) runs");
    let shown = String::from_utf8_lossy(&on_terminal.stdout);
    assert!(on_terminal.status.success(), "{shown}");
    assert!(
        shown.contains(r"trace: \u{1b}]0;owned\u{7}\u{202e}x"),
        "{shown:?}"
    );
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\u{202e}'),
        "{shown:?}"
    );
}

/// `-A PATH` selects as `nix-instantiate -A` does, byte for byte: names and list
/// indices, a quoted name with a dot, a function met on the way called with its
/// defaults, several paths printed a line each (JSON without newlines).
#[test]
fn attr_paths_select_as_nix_instantiate_does() {
    let meshc = env!("CARGO_BIN_EXE_meshc");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let file = temporary.path().join("default.nix");
    std::fs::write(
        &file,
        "{ port ? 8080, ... }: { web = { inherit port; hosts = [ { name = \"a\"; } \"b\" ]; }; \
         \"with.dot\" = { x = 1; }; mk = { y ? 2 }: { inherit y; }; \
         called = { __functor = self: { p ? 3 }: { r = p; }; }; }",
    )
    .expect("default.nix");
    let file = file.to_str().expect("a UTF-8 path");
    for paths in [
        &["web.port"][..],
        &["web.hosts.0.name"],
        &["\"with.dot\".x"],
        &["mk.y"],
        &["called.r"],
        &["web.port", "web.hosts.1"],
        &["web"],
    ] {
        for json in [false, true] {
            let mut mesh = vec!["eval", file];
            let mut nix = vec!["--eval", "--strict", file];
            if json {
                mesh.push("--json");
                nix.push("--json");
            }
            for path in paths {
                mesh.extend(["-A", path]);
                nix.extend(["-A", path]);
            }
            assert_eq!(
                String::from_utf8_lossy(&run(meshc, &mesh)),
                String::from_utf8_lossy(&run("nix-instantiate", &nix)),
                "{paths:?} (json: {json})"
            );
        }
    }
}

/// A path that goes wrong says where, with the code of the same mistake in an
/// expression: a missing name (with the names there), an index past the end, a
/// value that is not a set, a function whose argument has no default.
#[test]
fn attr_paths_that_go_wrong_say_where() {
    let meshc = env!("CARGO_BIN_EXE_meshc");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let file = temporary.path().join("default.nix");
    std::fs::write(
        &file,
        "{ web = { port = 8080; hosts = [ 1 ]; }; module = { mesh, ... }: { }; numbered = { \"0\" = 1; }; }",
    )
    .expect("default.nix");
    let file = file.to_str().expect("a UTF-8 path");
    for (path, code, said) in [
        ("web.prot", "E021", "did you mean `port`?"),
        (
            "web.hosts.3",
            "E032",
            "a list of 1 elements, without index 3",
        ),
        ("web.port.x", "E020", "`web.port` is an integer, not a set"),
        ("module.x", "E023", "argument `mesh` has no default"),
        // a number indexes a list, as in Nix, even where a set has it as a name
        ("numbered.0", "E020", "a number in a path indexes a list"),
    ] {
        let output = Command::new(meshc)
            .args(["eval", file, "-A", path])
            .env("NO_COLOR", "1")
            .output()
            .expect("meshc runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{path}: {stderr}");
        assert!(stderr.starts_with(code), "{path}: {stderr}");
        assert!(stderr.contains(said), "{path}: {stderr}");
        assert!(output.stdout.is_empty(), "{path}");
    }
    let output = Command::new(meshc)
        .args(["eval", file, "-A", "web..port"])
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(2), "a usage error");
}

/// `mesh` is not in scope in `meshc eval` (plain Nix, as `nix-instantiate`): the
/// help says where it is instead.
#[test]
fn mesh_in_eval_says_where_mesh_is_in_scope() {
    let output = Command::new(env!("CARGO_BIN_EXE_meshc"))
        .args(["eval", "--expr", "mesh.lib.optional true 1"])
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("E010"), "{stderr}");
    assert!(stderr.contains("meshc repl"), "{stderr}");
}

/// `--arg` and `--argstr` call the file's function (and those `-A` meets) as
/// `nix-instantiate` does, byte for byte: a function with `...` gets every
/// argument, one without only those it names; an argument nobody takes is never
/// evaluated; a function of one plain argument is not called.
#[test]
fn arguments_call_functions_as_nix_instantiate_does() {
    let meshc = env!("CARGO_BIN_EXE_meshc");
    let temporary = tempfile::tempdir().expect("temporary directory");
    let write = |name: &str, text: &str| {
        let path = temporary.path().join(name);
        std::fs::write(&path, text).expect("a file");
        path.to_str().expect("a UTF-8 path").to_string()
    };
    let open = write(
        "open.nix",
        "{ port ? 80, ... }@args: { inherit port; names = builtins.attrNames args; }",
    );
    let closed = write("closed.nix", "{ port ? 80, host }: { inherit port host; }");
    let plain = write("plain.nix", "x: x");
    let nested = write(
        "nested.nix",
        "{ site = { domain }: { url = \"https://${domain}\"; }; }",
    );
    for arguments in [
        vec![
            open.as_str(),
            "--arg",
            "port",
            "8080",
            "--argstr",
            "extra",
            "x",
        ],
        vec![
            closed.as_str(),
            "--argstr",
            "host",
            "db1",
            "--arg",
            "unused",
            "throw \"never\"",
        ],
        vec![
            closed.as_str(),
            "--arg",
            "host",
            "[ 1 (2 + 3) ]",
            "--arg",
            "port",
            "1",
        ],
        vec![plain.as_str(), "--arg", "x", "1"],
        // a name given twice: the last given, of either flag
        vec![
            closed.as_str(),
            "--argstr",
            "host",
            "a",
            "--arg",
            "host",
            "2",
        ],
        vec![
            closed.as_str(),
            "--arg",
            "host",
            "2",
            "--argstr",
            "host",
            "a",
        ],
        vec![
            nested.as_str(),
            "--argstr",
            "domain",
            "example.org",
            "-A",
            "site.url",
        ],
    ] {
        let mut mesh = vec!["eval"];
        mesh.extend(&arguments);
        let mut nix = vec!["--eval", "--strict"];
        nix.extend(&arguments);
        assert_eq!(
            String::from_utf8_lossy(&run(meshc, &mesh)),
            String::from_utf8_lossy(&run("nix-instantiate", &nix)),
            "{arguments:?}"
        );
    }
    // an argument a function needs and nobody gives: E023, naming `--arg`
    let output = Command::new(meshc)
        .args(["eval", &closed, "--arg", "port", "1"])
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("E023"), "{stderr}");
    assert!(stderr.contains("--argstr host"), "{stderr}");
}

/// A `__functor` that gives its own set back, met by `-A` or `--arg`, ends in E028
/// (nested too deeply; Nix: a stack overflow) at once: it ran the whole step budget
/// (E043, over a minute). And what the call says has no place of the argument's:
/// an error of the file's value is not drawn on an `--arg`'s text.
#[test]
fn calls_made_for_a_path_are_bounded_and_said_at_the_file() {
    let meshc = env!("CARGO_BIN_EXE_meshc");
    let output = Command::new(meshc)
        .args([
            "eval",
            "--expr",
            "let s = { __functor = self: self; }; in { x = s; }",
        ])
        .args(["-A", "x.y", "--max-steps", "100000000"])
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("E028"), "{stderr}");
    let output = Command::new(meshc)
        .args(["eval", "--expr", "{ __functor = 1; }", "--arg", "q", "1"])
        .env("NO_COLOR", "1")
        .output()
        .expect("meshc runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("E024"), "{stderr}");
    assert!(!stderr.contains("«--arg q»"), "{stderr}");
}

/// The programs `scripts/release` trains the optimized build on evaluate, and to
/// what `nix-instantiate` gives: a training run that failed early would train the
/// error path instead of the loops it was written for.
#[test]
fn the_release_training_programs_evaluate_as_nix_does() {
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/pgo-training");
    let mut programs: Vec<_> = std::fs::read_dir(directory)
        .expect("scripts/pgo-training")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "nix"))
        .collect();
    programs.sort();
    assert!(programs.len() >= 3, "{programs:?}");
    for program in &programs {
        let program = program.to_str().expect("a UTF-8 path");
        let mesh = run(
            env!("CARGO_BIN_EXE_meshc"),
            &["eval", "--root", directory, program],
        );
        assert_eq!(
            String::from_utf8_lossy(&mesh),
            String::from_utf8_lossy(&run("nix-instantiate", &["--eval", "--strict", program])),
            "{program}"
        );
    }
}
