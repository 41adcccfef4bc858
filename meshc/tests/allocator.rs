//! The allocator's setting, on the built binary: `meshc` runs with freed memory kept
//! for reuse (`MIMALLOC_PURGE_DELAY=-1`, see `main.rs`) unless the user chose a
//! value, and it is the same process (one pid) that answers. Read from
//! `/proc/PID/environ` of a `meshc repl` that has answered one line, so that the
//! program has certainly run itself again by then.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const MESHC: &str = env!("CARGO_BIN_EXE_meshc");

/// The value of `MIMALLOC_PURGE_DELAY` in the environment `meshc` runs with, when
/// started with `purge_delay` (none: the variable unset).
fn purge_delay_seen(purge_delay: Option<&str>) -> Option<String> {
    let mut command = Command::new(MESHC);
    command
        .arg("repl")
        .env("NO_COLOR", "1")
        .env_remove("MIMALLOC_PURGE_DELAY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(value) = purge_delay {
        command.env("MIMALLOC_PURGE_DELAY", value);
    }
    let mut child = command.spawn().expect("meshc runs");
    let mut input = child.stdin.take().expect("a pipe");
    input.write_all(b"1 + 2\n").expect("meshc reads");
    input.flush().expect("meshc reads");
    let mut answer = String::new();
    BufReader::new(child.stdout.take().expect("a pipe"))
        .read_line(&mut answer)
        .expect("meshc answers");
    assert_eq!(answer, "3\n", "the repl answers the first line");
    let environment =
        std::fs::read(format!("/proc/{}/environ", child.id())).expect("the environment of meshc");
    drop(input);
    let status = child.wait().expect("meshc ends");
    assert!(status.success(), "meshc repl ends well: {status}");
    environment
        .split(|byte| *byte == 0)
        .filter_map(|entry| entry.strip_prefix(b"MIMALLOC_PURGE_DELAY="))
        .map(|value| String::from_utf8_lossy(value).into_owned())
        .next()
}

#[test]
fn meshc_keeps_freed_memory_for_reuse() {
    assert_eq!(purge_delay_seen(None).as_deref(), Some("-1"));
}

#[test]
fn a_purge_delay_the_user_set_is_kept() {
    assert_eq!(purge_delay_seen(Some("25")).as_deref(), Some("25"));
}
