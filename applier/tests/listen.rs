//! `mesh-apply --listen` when it cannot do its work: every failure, whether it keeps
//! the listener from starting (exit 1) or is retried while it runs, is printed on
//! stderr as a coded problem with a help line, never a bare `error: ` line or an
//! uncoded one. The real binary, against a URL no broker has, a port nothing listens
//! on, and the local RabbitMQ (127.0.0.1:5672, guest/guest) without the node's queue.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use support::BINARY;

/// How long a listener is given to say what is wrong.
const PATIENCE: Duration = Duration::from_secs(20);

/// A running `mesh-apply --listen` and its stderr, line by line; killed when dropped.
/// How the warning about a password given in `--amqp` starts.
const PASSWORD_WARNING: &str = "warning: the password in `--amqp`";

struct Listener {
    child: Child,
    lines: Receiver<String>,
    _identity: tempfile::TempDir,
}

/// `mesh-apply --listen` started for `node` at `url` with an identity in a temporary
/// directory (kept with the child), its stderr a pipe.
fn spawn(node: &str, url: &str) -> (Child, tempfile::TempDir) {
    let identity = tempfile::tempdir().unwrap();
    let path = identity.path().join("identity.txt");
    std::fs::write(&path, "AGE-SECRET-KEY-1\n").unwrap();
    let child = Command::new(BINARY)
        .args(["--listen", "--node", node, "--amqp", url, "--identity"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, identity)
}

impl Listener {
    fn start(node: &str, url: &str) -> Listener {
        let (mut child, identity) = spawn(node, url);
        let stderr = child.stderr.take().unwrap();
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // the warning a password in `--amqp` gets is the test of its own below
            for line in BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .filter(|line| !line.starts_with(PASSWORD_WARNING))
            {
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        Listener {
            child,
            lines,
            _identity: identity,
        }
    }

    /// The lines printed until the first help line (included), and whether that
    /// took longer than [`PATIENCE`] or stderr ended first.
    fn first_problem(&self) -> Vec<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut printed = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let is_help = line.starts_with("  = help: ");
                    printed.push(line);
                    if is_help {
                        return printed;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no help line within {PATIENCE:?}:\n{}", printed.join("\n"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("stderr ended without a help line:\n{}", printed.join("\n"))
                }
            }
        }
    }

    /// The exit status, if the listener ends within [`PATIENCE`].
    fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.child.kill().unwrap();
        }
        self.child.wait().unwrap();
    }
}

/// `listen-bare-error-line`: a URL no connection could ever be made with was tried
/// again for ever, each attempt an uncoded line (and `amqps://`, which this build has
/// no TLS for, was spoken to in plain AMQP); what keeps the listener from starting was
/// a bare `error: ` line. Now it is E542 with its help line, and the listener exits 1.
#[test]
fn listen_refuses_a_url_no_broker_has_with_e542_and_exits() {
    for (url, says) in [
        (
            "broker.example:5672",
            "cannot connect to the broker at `broker.example:5672`: ",
        ),
        (
            "amqps://node:secret@127.0.0.1:5671/%2f",
            "`amqps://` needs TLS, which this build of mesh does not have",
        ),
    ] {
        let mut listener = Listener::start("web1", url);
        let printed = listener.first_problem();
        assert_eq!(printed.len(), 2, "{url}: {printed:#?}");
        assert!(
            printed[0].starts_with("error[E542]: ") && printed[0].contains(says),
            "{url}: {printed:#?}"
        );
        assert!(printed[1].contains("`--amqp`"), "{url}: {printed:#?}");
        assert!(!printed.concat().contains("secret"), "{printed:#?}");
        assert_eq!(listener.exit_code(), Some(1), "{url}");
    }
}

/// A broker that cannot be reached is retried, each attempt E543 with a help line.
#[test]
fn listen_says_why_the_broker_cannot_be_reached_with_e543() {
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    let url = format!("amqp://node:secret@127.0.0.1:{port}/%2f");
    let mut listener = Listener::start("web1", &url);
    let printed = listener.first_problem();
    assert_eq!(printed.len(), 2, "{printed:#?}");
    assert!(
        printed[0].starts_with(&format!(
            "error[E543]: cannot connect to the broker at `amqp://node:***@127.0.0.1:{port}/%2f`: "
        )) && printed[0].ends_with(" s"),
        "{printed:#?}"
    );
    assert!(
        printed[1].contains("check that RabbitMQ runs at the URL's host and port"),
        "{printed:#?}"
    );
    assert!(!printed.concat().contains("secret"), "{printed:#?}");
    // and it keeps trying
    assert_eq!(listener.first_problem()[0].get(..11), Some("error[E543]"));
    assert!(listener.child.try_wait().unwrap().is_none());
}

/// Connected, but the node's queue was never declared (no `meshc publish` yet, or a
/// mistyped `--node`): E544, retried. Needs the local RabbitMQ.
#[test]
fn listen_says_the_node_queue_is_not_declared_with_e544() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let node = format!("undeclared{}x{nanos}", std::process::id());
    let listener = Listener::start(&node, "amqp://guest:guest@127.0.0.1:5672/%2f");
    let printed = listener.first_problem();
    let problem: Vec<&String> = printed
        .iter()
        .skip_while(|line| line.starts_with("connected to "))
        .collect();
    assert_eq!(
        problem.len(),
        2,
        "RabbitMQ must answer at 127.0.0.1:5672 with guest/guest (scripts/services): {printed:#?}"
    );
    assert!(
        problem[0].starts_with(&format!(
            "error[E544]: queue `mesh.node.{node}`: the queue `mesh.node.{node}` cannot be used: "
        )),
        "{printed:#?}"
    );
    assert!(problem[1].contains("`meshc publish`"), "{printed:#?}");
}

/// `listen-dies-when-stderr-closes`: the supervisor wrote each problem with
/// `eprintln!`, which panics when the write fails, so a listener whose stderr's reader
/// went away (a closed pipe: a log collector restarted) ended with exit 101 at its
/// next retry. What it cannot write is dropped; it keeps listening.
#[test]
fn listen_keeps_trying_after_its_stderr_is_closed() {
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    let (mut child, _identity) = spawn("web1", &format!("amqp://node:secret@127.0.0.1:{port}/%2f"));
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    while first.is_empty() || first.starts_with(PASSWORD_WARNING) {
        first.clear();
        stderr.read_line(&mut first).unwrap();
    }
    assert!(first.starts_with("error[E543]: "), "{first}");
    drop(stderr);
    // retries come 0.1 s apart at first, doubling to 5 s: several in these 3 s
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let status = child.try_wait().unwrap();
        assert!(
            status.is_none(),
            "the listener ended when its stderr closed: {status:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A password in `--amqp` can be read by every local user for as long as the
/// listener runs (`ps`): it says so once, and not when the URL comes from
/// `MESH_AMQP_URL` or holds no password.
#[test]
fn a_password_on_the_command_line_is_warned_about() {
    let url = "amqps://node:secret@127.0.0.1:5671/%2f";
    let stderr_of = |command: &mut Command| {
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(1));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let identity = tempfile::tempdir().unwrap();
    let path = identity.path().join("identity.txt");
    std::fs::write(&path, "AGE-SECRET-KEY-1\n").unwrap();
    let base = || {
        let mut command = Command::new(BINARY);
        command
            .args(["--listen", "--node", "web1", "--identity"])
            .arg(&path)
            .env_remove("MESH_AMQP_URL");
        command
    };
    for arguments in [vec!["--amqp", url], vec![&*format!("--amqp={url}")]] {
        let stderr = stderr_of(base().args(&arguments));
        assert_eq!(
            stderr.matches(PASSWORD_WARNING).count(),
            1,
            "{arguments:?}: {stderr}"
        );
        assert!(!stderr.contains("secret"), "{stderr}");
    }
    let from_environment = stderr_of(base().env("MESH_AMQP_URL", url));
    assert!(
        !from_environment.contains(PASSWORD_WARNING),
        "{from_environment}"
    );
    let without_password = stderr_of(base().args(["--amqp", "amqps://127.0.0.1:5671/%2f"]));
    assert!(
        !without_password.contains(PASSWORD_WARNING),
        "{without_password}"
    );
}
