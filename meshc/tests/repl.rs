//! `meshc repl` on the built binary. On a real terminal (a pty made by util-linux's
//! `script`, typed into line by line): evaluate, load a file, complete a name and an
//! attribute with TAB, keep the history, quit. Piped: one value a line, a runaway
//! line ending in its diagnostic while the next lines still run, the status 1 when a
//! line failed, and `--node` putting the node's `node` and `settings` in scope.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const MESHC: &str = env!("CARGO_BIN_EXE_meshc");

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `meshc repl ARGUMENTS` with `input` on a pipe.
fn piped(arguments: &[&str], input: &str, directory: &Path) -> Output {
    let mut child = Command::new(MESHC)
        .arg("repl")
        .args(arguments)
        .current_dir(directory)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("meshc runs");
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(input.as_bytes())
        .expect("meshc reads");
    child.wait_with_output().expect("meshc ends")
}

#[test]
fn piped_input_prints_one_value_a_line() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let output = piped(
        &[],
        "1 + 2\nx = [ 1 2 ]\nbuiltins.length x\n\"a\" + \"b\"\n:t x\n",
        directory.path(),
    );
    assert_eq!(
        text(&output.stdout),
        "3\n2\n\"ab\"\na list\n",
        "{}",
        text(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn the_prelude_is_in_scope_with_mesh_lib() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let output = piped(
        &[],
        "mesh.lib.optionals true [ 1 ]\nbuiltins.isFunction mesh.option\n",
        directory.path(),
    );
    assert_eq!(
        text(&output.stdout),
        "[ 1 ]\ntrue\n",
        "{}",
        text(&output.stderr)
    );
}

/// An expression written over several lines (as NixOS users paste a set or a
/// `let`) is read until it is finished, then evaluated once; a mistake is said
/// at once and does not swallow the lines after it; an expression the input
/// ended inside of is said as unclosed.
#[test]
fn an_expression_left_open_goes_on_over_the_next_lines() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let output = piped(
        &[],
        "# a comment alone is nothing\nx = # the value is on the next lines\n  {\n  a = 1;\n  b = [\n    2\n    3\n  ];\n}\nx.a + builtins.length x.b\n<nixpkgs>\n\
         let\n  y = 40;\nin\n  y + 2\n\"two\n  lines\"\n:t {\n}\n{ a = = 1;\n5\n{ c = 1;\n",
        directory.path(),
    );
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert_eq!(stdout, "3\n42\n\"two\\n  lines\"\na set\n5\n", "{stderr}");
    // a line whose last token is wrong (`<nixpkgs>`) is said at once, not waited on
    assert!(stderr.contains("E007"), "{stderr}");
    // the mistake is said at once (not its set, whose `}` was still to come), the
    // `5` after it is read alone, and the set the input ended inside of is said
    // unclosed
    assert_eq!(stderr.matches("unexpected `=`").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("`{` is not closed").count(), 1, "{stderr}");
    assert!(stderr.contains("{ c = 1;"), "{stderr}");
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn a_runaway_line_ends_in_a_diagnostic_and_the_session_goes_on() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let output = piped(
        &["--max-steps", "100000"],
        "let loop = n: loop (n + 1); in loop 0\n40 + 2\nundefined-name\n:nonsense\n",
        directory.path(),
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("E043"),
        "the budget ends the loop: {stderr}"
    );
    assert!(stderr.contains("E010"), "{stderr}");
    assert!(stderr.contains("E051"), "{stderr}");
    // the next line has a budget of its own
    assert_eq!(text(&output.stdout), "42\n");
    assert_eq!(output.status.code(), Some(1), "a line failed");
}

#[test]
fn load_brings_a_files_attributes_into_scope() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        directory.path().join("values.nix"),
        "{ answer = 42; greet = name: \"hi ${name}\"; }\n",
    )
    .expect("writable");
    let output = piped(
        &[],
        ":l values.nix\ngreet \"mesh\"\nanswer\n",
        directory.path(),
    );
    assert_eq!(
        text(&output.stdout),
        "\"hi mesh\"\n42\n",
        "{}",
        text(&output.stderr)
    );
    assert!(text(&output.stderr).contains("Added 2 variables."));
}

/// What `:l` cannot load is reported at the command typed, not at the first line of
/// the prelude's file (where a missing file's E035 used to point), and the value
/// of a file that is not a set there too.
#[test]
fn load_reports_its_errors_at_the_command() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    write(&directory.path().join("list.nix"), "[ 1 ]\n");
    let output = piped(
        &[],
        ":l ./missing.nix\n:l ./list.nix\n1 + 1\n",
        directory.path(),
    );
    let stderr = text(&output.stderr);
    assert!(stderr.contains("E035"), "{stderr}");
    assert!(stderr.contains("«repl 1»:1:4"), "{stderr}");
    assert!(stderr.contains(":l ./missing.nix"), "{stderr}");
    assert!(!stderr.contains("mesh-stdlib"), "{stderr}");
    assert!(
        stderr.contains("the file's value is a list, not a set"),
        "{stderr}"
    );
    assert_eq!(text(&output.stdout), "2\n", "{stderr}");
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("writable");
    std::fs::write(path, content).expect("writable");
}

#[test]
fn node_puts_the_nodes_node_and_settings_in_scope() {
    let repository = tempfile::tempdir().expect("a temporary directory");
    write(
        &repository.path().join("mesh.nix"),
        "{ nodes.web-1 = { key = \"age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc\"; modules = [ \"web\" ]; settings.web.port = 8080; }; }\n",
    );
    write(
        &repository.path().join("modules/web/module.nix"),
        "{ mesh, ... }: { settings = { port = mesh.option { type = mesh.types.port; default = 80; description = \"the port\"; }; greeting = mesh.option { type = mesh.types.str; default = \"hello\"; description = \"the greeting\"; }; }; }\n",
    );
    let output = piped(
        &["--node", "web-1"],
        "node.name\nsettings.web.port\nsettings.web.greeting\n",
        repository.path(),
    );
    assert_eq!(
        text(&output.stdout),
        "\"web-1\"\n8080\n\"hello\"\n",
        "{}",
        text(&output.stderr)
    );
    let unknown = piped(&["--node", "web-9"], "1\n", repository.path());
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        text(&unknown.stderr).contains("E050"),
        "{}",
        text(&unknown.stderr)
    );
    assert!(
        text(&unknown.stderr).contains("web-1"),
        "the help names the nodes"
    );
}

/// Types `lines` into `meshc repl` on a pty, one at a time; what the terminal showed.
fn on_a_terminal(lines: &[&str], directory: &Path, state: &Path) -> String {
    assert!(!MESHC.contains('\''), "the test quotes {MESHC} for a shell");
    let mut child = Command::new("script")
        .args(["--quiet", "--return", "--command"])
        .arg(format!("'{MESHC}' repl"))
        .arg("/dev/null")
        .current_dir(directory)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("`script` cannot run ({e}); install bsdutils"));
    let mut stdin = child.stdin.take().expect("a pipe");
    std::thread::sleep(Duration::from_millis(1500));
    for line in lines {
        stdin.write_all(line.as_bytes()).expect("script reads");
        stdin.flush().expect("script reads");
        std::thread::sleep(Duration::from_millis(700));
    }
    let output = child.wait_with_output().expect("script ends");
    drop(stdin);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    text(&output.stdout)
}

#[test]
fn on_a_terminal_it_evaluates_loads_completes_keeps_history_and_quits() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let state = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(
        directory.path().join("values.nix"),
        "{ distinctive-name = { deep-attribute = 7; }; }\n",
    )
    .expect("writable");
    let screen = on_a_terminal(
        &[
            "6 * 7\r",
            ":l values.nix\r",
            // a name, completed, then an attribute of it, completed
            "distinctive-n\t",
            ".deep-a\t",
            "\r",
            ":q\r",
        ],
        directory.path(),
        state.path(),
    );
    assert!(screen.contains("42"), "{screen}");
    assert!(screen.contains("Added 1 variables."), "{screen}");
    assert!(
        screen.contains("distinctive-name.deep-attribute"),
        "completed: {screen}"
    );
    assert!(
        screen.contains("\n7") || screen.contains("\r7"),
        "the completed line ran: {screen}"
    );
    let history = std::fs::read_to_string(state.path().join("mesh/repl-history"))
        .expect("the history is kept");
    assert!(history.contains("6 * 7"), "{history}");
    assert!(
        history.contains("distinctive-name.deep-attribute"),
        "{history}"
    );
}

/// On a terminal, Enter inside an open block starts a new line of the same input
/// (rustyline's validator): the block is evaluated once it is closed, and kept in
/// the history as one entry.
#[test]
fn on_a_terminal_a_block_goes_on_over_lines_until_it_is_closed() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let state = tempfile::tempdir().expect("a temporary directory");
    let screen = on_a_terminal(
        &["{\r", "  answer = 40 + 2;\r", "}.answer\r", ":q\r"],
        directory.path(),
        state.path(),
    );
    assert!(screen.contains("42"), "{screen}");
    assert!(
        !screen.contains("E001"),
        "no line was evaluated alone: {screen}"
    );
    let history = std::fs::read_to_string(state.path().join("mesh/repl-history"))
        .expect("the history is kept");
    assert!(
        history
            .lines()
            .any(|entry| entry.starts_with('{') && entry.ends_with("}.answer")),
        "one entry: {history}"
    );
}

/// What a session prints holds the repository's text, and a person reads it: a
/// trace's message and a printed string write escape sequences and bidirectional
/// controls as `\u{..}`, and no such character reaches the terminal raw. Before,
/// `builtins.trace "\e]0;owned\a\e[2J"` set the window's title and cleared it.
#[test]
fn a_session_prints_nothing_that_drives_the_terminal() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let input = "builtins.trace \"\u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}\" \"app1\u{1b}[8mhidden\"\n";
    let output = piped(&[], input, directory.path());
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
        assert!(!stdout.contains(raw), "{raw:?} in {stdout:?}");
        assert!(!stderr.contains(raw), "{raw:?} in {stderr:?}");
    }
    assert!(
        stderr.contains(r"trace: \u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}"),
        "{stderr}"
    );
    assert!(stdout.contains(r"app1\u{1b}[8mhidden"), "{stdout}");
}
