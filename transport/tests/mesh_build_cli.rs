//! The command line of `mesh-build`, on the built binary: it takes its broker and
//! store explicitly (no arguments is a usage error, exit 2), prints its version, and
//! says on every retry that it cannot reach its broker.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

const MESH_BUILD: &str = env!("CARGO_BIN_EXE_mesh-build");

#[test]
fn no_arguments_print_usage_and_exit_2() {
    let output = Command::new(MESH_BUILD)
        .env_remove("MESH_AMQP_URL")
        .output()
        .expect("mesh-build runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("Usage: mesh-build"), "{stderr}");
}

#[test]
fn a_missing_store_is_a_usage_error() {
    let output = Command::new(MESH_BUILD)
        .args(["--amqp", "amqp://127.0.0.1:1/%2f", "--repo", "."])
        .output()
        .expect("mesh-build runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--store"));
}

#[test]
fn version_is_printed_by_both_spellings() {
    for flag in ["--version", "-V"] {
        let output = Command::new(MESH_BUILD)
            .arg(flag)
            .output()
            .expect("mesh-build runs");
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("mesh-build {}\n", env!("CARGO_PKG_VERSION"))
        );
    }
}

#[test]
fn help_describes_every_flag_with_an_example() {
    let output = Command::new(MESH_BUILD)
        .arg("--help")
        .output()
        .expect("mesh-build runs");
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "--amqp",
        "--repo",
        "--store",
        "--name",
        "[env: MESH_AMQP_URL",
        "Examples:",
    ] {
        assert!(help.contains(flag), "{flag}:\n{help}");
    }
    no_example_puts_a_password_in_amqp(&help);
}

/// The URL each example gives `--amqp` holds no password: every local user reads a
/// command line (the program warns when one does), so the help shows it in
/// `MESH_AMQP_URL` instead.
fn no_example_puts_a_password_in_amqp(help: &str) {
    let mut words = help.split_whitespace();
    let mut seen = 0;
    while let Some(word) = words.next() {
        if word == "--amqp"
            && let Some(url) = words.next().filter(|url| url.starts_with("amqp://"))
        {
            seen += 1;
            // the programs' own test of a password in a URL
            assert_eq!(transport::names::redact(url), url, "in:\n{help}");
        }
    }
    assert!(seen > 0, "no example of --amqp in:\n{help}");
}

/// `mesh-build` on the broker `url` with the repository `.` and the store `store`,
/// its stderr a pipe.
fn builder(url: &str, store: &std::path::Path) -> std::process::Child {
    Command::new(MESH_BUILD)
        .args(["--amqp", url, "--repo", "."])
        .arg("--store")
        .arg(store)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mesh-build runs")
}

/// Nothing listens on port 1: each attempt fails at once, and each is reported.
#[test]
fn an_unreachable_broker_is_reported_on_every_retry() {
    let store = tempfile::tempdir().expect("temporary directory");
    let mut child = builder("amqp://builder:hunter2@127.0.0.1:1/%2f", store.path());
    // read until the third retry is reported (a loaded machine may take a while to
    // get there: a fixed wait of 1.5 s saw none), then stopped
    let mut stderr_pipe = child.stderr.take().expect("piped");
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut read = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(count) = stderr_pipe.read(&mut buffer) {
            if count == 0 {
                break;
            }
            read.extend_from_slice(&buffer[..count]);
            let _sent = sender.send(String::from_utf8_lossy(&read).into_owned());
        }
    });
    let is_retry = |line: &str| {
        line.contains("cannot connect to the broker at") && line.contains("trying again")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut stderr = String::new();
    while std::time::Instant::now() < deadline
        && stderr.lines().filter(|line| is_retry(line)).count() < 3
    {
        if let Ok(read) = receiver.recv_timeout(Duration::from_millis(100)) {
            stderr = read;
        }
    }
    child.kill().expect("mesh-build is still retrying");
    child.wait().expect("mesh-build ends");
    let retries = stderr.lines().filter(|line| is_retry(line)).count();
    assert!(retries >= 3, "one line per retry:\n{stderr}");
    assert!(
        !stderr.contains("hunter2"),
        "the password is redacted:\n{stderr}"
    );
}

/// A URL no connection could ever be made with (`amqps://`, which this build cannot
/// speak; one mistyped without its `//`) ends the builder at once with its reason
/// and the password hidden, as `mesh-apply --listen` ends (E542). It was retried
/// for ever, the password in every retry's line for the malformed one.
#[test]
fn a_url_that_can_never_work_ends_the_builder_at_once() {
    let store = tempfile::tempdir().expect("temporary directory");
    for url in [
        "amqps://builder:hunter2@127.0.0.1:1/%2f",
        "amqp:/builder:hunter2@127.0.0.1:1/",
    ] {
        let mut child = builder(url, store.path());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().expect("mesh-build") {
                break Some(status);
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .expect("piped")
            .read_to_string(&mut stderr)
            .expect("stderr");
        assert_eq!(
            status.and_then(|status| status.code()),
            Some(1),
            "{url}: {stderr}"
        );
        assert!(
            stderr.contains("cannot connect to the broker at"),
            "{stderr}"
        );
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(!stderr.contains("trying again"), "{stderr}");
        // given on the command line, the password is visible to every local user
        assert!(
            stderr.contains("the password in `--amqp` can be read by every local user"),
            "{stderr}"
        );
    }
}
