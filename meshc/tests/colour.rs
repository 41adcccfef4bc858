//! Diagnostics are coloured on a terminal and nowhere else, and never when `NO_COLOR`
//! is set to something (<https://no-color.org>). The terminal is a real pty made by
//! util-linux's `script` (Debian's bsdutils, on every Debian machine).

use std::process::Command;

const ESCAPE: &[u8] = b"\x1b[";

/// `meshc eval --expr 'x + 1'` (an undefined variable: E010) on a pty; what the
/// terminal showed.
fn on_a_terminal(no_colour: Option<&str>) -> Vec<u8> {
    let meshc = env!("CARGO_BIN_EXE_meshc");
    assert!(!meshc.contains('\''), "the test quotes {meshc} for a shell");
    let mut command = Command::new("script");
    command
        .args(["--quiet", "--return", "--command"])
        .arg(format!("'{meshc}' eval --expr 'x + 1'"))
        .arg("/dev/null")
        .env_remove("NO_COLOR");
    if let Some(value) = no_colour {
        command.env("NO_COLOR", value);
    }
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("`script` cannot run ({e}); install bsdutils"));
    assert_eq!(output.status.code(), Some(1), "meshc exits 1 on the error");
    assert!(
        output.stdout.windows(4).any(|window| window == b"E010"),
        "the terminal shows the diagnostic: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    output.stdout
}

fn coloured(bytes: &[u8]) -> bool {
    bytes.windows(ESCAPE.len()).any(|window| window == ESCAPE)
}

#[test]
fn a_terminal_gets_colour() {
    assert!(coloured(&on_a_terminal(None)));
}

#[test]
fn no_color_turns_colour_off_on_a_terminal() {
    assert!(!coloured(&on_a_terminal(Some("1"))));
}

#[test]
fn an_empty_no_color_is_unset() {
    // no-color.org: "when present and not an empty string"
    assert!(coloured(&on_a_terminal(Some(""))));
}

#[test]
fn a_pipe_gets_no_colour() {
    let output = Command::new(env!("CARGO_BIN_EXE_meshc"))
        .args(["eval", "--expr", "x + 1"])
        .env_remove("NO_COLOR")
        .output()
        .expect("meshc runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stderr.windows(4).any(|window| window == b"E010"));
    assert!(!coloured(&output.stderr));
}
