//! `meshc deploy`'s work: which nodes `--on` selects, the `ssh` command line for each
//! (the system's own `ssh`; nothing weakens its host key checking), the remote
//! command quoted for the node's shell, running several nodes at once, progress, and
//! the summary. Must not compile anything, and must never pass an inventory value to
//! the remote shell unquoted.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};

use compiler::deployment::Target;
use lang::{Diagnostic, codes};

/// What each node is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Send the plan and apply it (or, dry, show what would change).
    Apply { dry_run: bool },
    /// Apply the node's previous generation (`mesh-apply --rollback`).
    Rollback { dry_run: bool },
}

/// One node's deployment, ready to run.
#[derive(Clone, Debug)]
pub struct Job {
    pub node: String,
    pub target: Target,
    /// The plan's bytes (`None` for a rollback).
    pub plan: Option<Vec<u8>>,
}

/// How one node ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub node: String,
    pub succeeded: bool,
    /// What changed (`2 created, 1 changed`), or why it failed.
    pub detail: String,
}

/// The nodes `--on` selects, in name order: every node when none is given; `NAME`
/// names a node, `@TAG` every node with that tag. An unknown name or a tag no node
/// has is E430, before anything is sent.
pub fn select(
    targets: &BTreeMap<String, Target>,
    on: &[String],
) -> Result<Vec<String>, Diagnostic> {
    if on.is_empty() {
        return Ok(targets.keys().cloned().collect());
    }
    let mut selected = BTreeSet::new();
    for selector in on {
        if let Some(tag) = selector.strip_prefix('@') {
            let tagged: Vec<&String> = targets
                .iter()
                .filter(|(_, target)| target.tags.iter().any(|t| t == tag))
                .map(|(name, _)| name)
                .collect();
            if tagged.is_empty() {
                let tags: BTreeSet<&str> = targets
                    .values()
                    .flat_map(|target| target.tags.iter().map(String::as_str))
                    .collect();
                let help = lang::diagnostic::did_you_mean(tag, tags.iter().copied())
                    .unwrap_or_else(|| {
                        format!("tag nodes in mesh.nix with `tags = [ \"{tag}\" ];`")
                    });
                return Err(Diagnostic::error(
                    codes::NO_SUCH_DEPLOY_TARGET,
                    format!("no node has the tag `{tag}` (`--on @{tag}`)"),
                )
                .with_help(help));
            }
            selected.extend(tagged.into_iter().cloned());
        } else if targets.contains_key(selector) {
            selected.insert(selector.clone());
        } else {
            let known: Vec<&str> = targets.keys().map(String::as_str).collect();
            let help = lang::diagnostic::did_you_mean(selector, known.iter().copied())
                .unwrap_or_else(|| {
                    format!("the nodes are {}", lang::diagnostic::quoted_few(&known))
                });
            return Err(Diagnostic::error(
                codes::NO_SUCH_DEPLOY_TARGET,
                format!("there is no node `{selector}` in the inventory (`--on {selector}`)"),
            )
            .with_help(help));
        }
    }
    Ok(selected.into_iter().collect())
}

/// `text` as one word for a POSIX shell: single-quoted, each `'` written `'\''`.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The command the node's shell runs: every word quoted (ssh joins its arguments
/// into one command line for the remote shell, so an unquoted inventory value could
/// add commands).
pub fn remote_command(target: &Target, mode: Mode) -> String {
    let deployment = &target.deployment;
    let mut words: Vec<String> = vec![deployment.applier.clone()];
    let dry_run = match mode {
        Mode::Apply { dry_run } => {
            words.push("-".to_string());
            dry_run
        }
        Mode::Rollback { dry_run } => {
            words.push("--rollback".to_string());
            dry_run
        }
    };
    if let Some(root) = &deployment.root {
        words.push("--root".to_string());
        words.push(root.clone());
    }
    if dry_run {
        words.push("--dry-run".to_string());
    }
    words.push("--format".to_string());
    words.push("json".to_string());
    words
        .iter()
        .map(|word| shell_quote(word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `ssh`'s arguments: `-F FILE` when given, the port, `BatchMode=yes` (never a
/// password prompt in the middle of a fleet), `--`, `user@host` and the command.
/// Host keys are checked as the user's ssh configuration says.
pub fn ssh_arguments(target: &Target, mode: Mode, ssh_config: Option<&PathBuf>) -> Vec<OsString> {
    let deployment = &target.deployment;
    let mut arguments: Vec<OsString> = Vec::new();
    if let Some(file) = ssh_config {
        arguments.push("-F".into());
        arguments.push(file.into());
    }
    arguments.push("-p".into());
    arguments.push(deployment.port.to_string().into());
    arguments.push("-o".into());
    arguments.push("BatchMode=yes".into());
    arguments.push("--".into());
    arguments.push(format!("{}@{}", deployment.user, deployment.host).into());
    arguments.push(remote_command(target, mode).into());
    arguments
}

/// Runs one node: `ssh`, the plan on its standard input, the applier's JSON report
/// read back.
pub fn run_one(job: &Job, mode: Mode, ssh_config: Option<&PathBuf>) -> Outcome {
    let failed = |detail: String| Outcome {
        node: job.node.clone(),
        succeeded: false,
        detail,
    };
    let mut child = match Command::new("ssh")
        .args(ssh_arguments(&job.target, mode, ssh_config))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) => {
            return failed(format!(
                "cannot run `ssh`: {error} (install OpenSSH's client)"
            ));
        }
    };
    let plan = job.plan.clone().unwrap_or_default();
    let writer = child.stdin.take().map(|mut stdin| {
        std::thread::spawn(move || {
            // a node that fails before reading closes the pipe: its report says why
            let _ = stdin.write_all(&plan);
        })
    });
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let stderr_pipe = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = stderr_pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        bytes
    });
    if let Some(mut pipe) = child.stdout.take() {
        let _ = pipe.read_to_end(&mut stdout);
    }
    if let Ok(bytes) = reader.join() {
        stderr = bytes;
    }
    if let Some(writer) = writer {
        let _ = writer.join();
    }
    let status = match child.wait() {
        Ok(status) => status,
        Err(error) => return failed(format!("cannot wait for `ssh`: {error}")),
    };
    outcome_of(&job.node, status.code(), &stdout, &stderr)
}

/// The outcome from the applier's JSON report, or from ssh's message when there is
/// no report (exit 255: it could not connect or refused the host key).
pub fn outcome_of(node: &str, code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> Outcome {
    let report: Option<serde_json::Value> = serde_json::from_slice(stdout).ok();
    let last_line = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty())
            .map(|line| plan::display::escaped(line).into_owned())
            .unwrap_or_default()
    };
    let Some(report) = report else {
        let why = last_line(stderr);
        let detail = match code {
            Some(255) => format!("ssh failed: {why}"),
            Some(code) => format!("exited {code} without a report: {why}"),
            None => format!("ended by a signal: {why}"),
        };
        return Outcome {
            node: node.to_string(),
            succeeded: false,
            detail,
        };
    };
    let errors: Vec<String> = report["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|error| {
                    plan::display::escaped(&format!(
                        "{}: {}",
                        error["code"].as_str().unwrap_or("error"),
                        error["message"].as_str().unwrap_or_default()
                    ))
                    .into_owned()
                })
                .collect()
        })
        .unwrap_or_default();
    let succeeded = code == Some(0) && errors.is_empty();
    let detail = if succeeded {
        summary_of(&report)
    } else if errors.is_empty() {
        format!("exited {}", code.unwrap_or(-1))
    } else {
        errors.join("; ")
    };
    Outcome {
        node: node.to_string(),
        succeeded,
        detail,
    }
}

/// `2 created, 1 changed` from a report's summary; `no change` when nothing moved.
fn summary_of(report: &serde_json::Value) -> String {
    let mut parts = Vec::new();
    for status in ["created", "changed", "withdrawn", "kept"] {
        if let Some(count) = report["summary"][status].as_u64()
            && count > 0
        {
            parts.push(format!("{count} {status}"));
        }
    }
    let would = report["dry_run"] == true;
    match (parts.is_empty(), would) {
        (true, _) => "no change".to_string(),
        (false, true) => format!("would: {}", parts.join(", ")),
        (false, false) => parts.join(", "),
    }
}

/// Runs every job, `parallel` at a time, showing progress on standard error: one
/// status line per node rewritten in place on a terminal, plain lines otherwise.
/// Returns the outcomes in node order.
pub fn run_all(
    jobs: Vec<Job>,
    mode: Mode,
    ssh_config: Option<PathBuf>,
    parallel: usize,
) -> Vec<Outcome> {
    let names: Vec<String> = jobs.iter().map(|job| job.node.clone()).collect();
    let mut progress = Progress::new(&names, std::io::stderr().is_terminal());
    let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<Vec<_>>()));
    let (sender, receiver) = mpsc::channel::<Event>();
    let workers = parallel.clamp(1, names.len().max(1));
    let mut handles = Vec::new();
    for _ in 0..workers {
        let queue = Arc::clone(&queue);
        let sender = sender.clone();
        let ssh_config = ssh_config.clone();
        handles.push(std::thread::spawn(move || {
            loop {
                let job = match queue.lock() {
                    Ok(mut queue) if !queue.is_empty() => queue.remove(0),
                    _ => break,
                };
                let _ = sender.send(Event::Started(job.node.clone()));
                let outcome = run_one(&job, mode, ssh_config.as_ref());
                let _ = sender.send(Event::Finished(outcome));
            }
        }));
    }
    drop(sender);
    let mut outcomes = Vec::new();
    for event in receiver {
        progress.show(&event);
        if let Event::Finished(outcome) = event {
            outcomes.push(outcome);
        }
    }
    for handle in handles {
        let _ = handle.join();
    }
    outcomes.sort_by(|left, right| left.node.cmp(&right.node));
    outcomes
}

enum Event {
    Started(String),
    Finished(Outcome),
}

/// Per-node progress on standard error.
struct Progress {
    names: Vec<String>,
    terminal: bool,
    width: usize,
}

impl Progress {
    fn new(names: &[String], terminal: bool) -> Progress {
        let width = names.iter().map(String::len).max().unwrap_or(0);
        let progress = Progress {
            names: names.to_vec(),
            terminal,
            width,
        };
        if terminal {
            let mut text = String::new();
            for name in names {
                text.push_str(&format!("{name:<width$}  waiting\n"));
            }
            write_stderr(&text);
        }
        progress
    }

    fn show(&mut self, event: &Event) {
        let (node, status) = match event {
            Event::Started(node) => (node.as_str(), "deploying".to_string()),
            Event::Finished(outcome) => (
                outcome.node.as_str(),
                format!(
                    "{} {}",
                    if outcome.succeeded { "ok" } else { "FAILED" },
                    outcome.detail
                ),
            ),
        };
        let width = self.width;
        if !self.terminal {
            write_stderr(&format!("{node}: {status}\n"));
            return;
        }
        let Some(position) = self.names.iter().position(|name| name == node) else {
            return;
        };
        // up to the node's line, rewrite it, back down
        let up = self.names.len() - position;
        write_stderr(&format!(
            "\x1b[{up}A\r\x1b[2K{node:<width$}  {status}\x1b[{up}B\r"
        ));
    }
}

fn write_stderr(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// The summary table: node, result, what changed or the error.
pub fn summary_table(outcomes: &[Outcome]) -> String {
    let width = outcomes
        .iter()
        .map(|outcome| outcome.node.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut text = format!("{:<width$}  {:<6}  DETAIL\n", "NODE", "RESULT");
    for outcome in outcomes {
        text.push_str(&format!(
            "{:<width$}  {:<6}  {}\n",
            outcome.node,
            if outcome.succeeded { "ok" } else { "failed" },
            outcome.detail
        ));
    }
    let failed = outcomes.iter().filter(|outcome| !outcome.succeeded).count();
    text.push_str(&format!(
        "{} node(s): {} ok, {failed} failed\n",
        outcomes.len(),
        outcomes.len() - failed
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use compiler::deployment::Deployment;

    fn target(root: Option<&str>, applier: &str) -> Target {
        Target {
            tags: vec!["web".to_string()],
            deployment: Deployment {
                host: "10.0.0.5".to_string(),
                port: 2222,
                user: "deploy".to_string(),
                root: root.map(str::to_string),
                applier: applier.to_string(),
            },
        }
    }

    #[test]
    fn hostile_values_stay_one_quoted_word_each() {
        let hostile = target(Some("/x; touch /tmp/pwned"), "/opt/mesh'$(id)'/mesh-apply");
        let command = remote_command(&hostile, Mode::Apply { dry_run: true });
        assert_eq!(
            command,
            "'/opt/mesh'\\''$(id)'\\''/mesh-apply' '-' '--root' '/x; touch /tmp/pwned' '--dry-run' '--format' 'json'"
        );
        // the shell reads it back as exactly those words
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "for word in {command}; do printf '%s\\n' \"$word\"; done"
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            "/opt/mesh'$(id)'/mesh-apply\n-\n--root\n/x; touch /tmp/pwned\n--dry-run\n--format\njson\n"
        );
    }

    #[test]
    fn ssh_gets_the_port_batch_mode_and_the_destination_after_double_dash() {
        let arguments = ssh_arguments(
            &target(None, "mesh-apply"),
            Mode::Rollback { dry_run: false },
            Some(&PathBuf::from("/etc/ssh-test")),
        );
        let words: Vec<String> = arguments
            .iter()
            .map(|word| word.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            words,
            [
                "-F",
                "/etc/ssh-test",
                "-p",
                "2222",
                "-o",
                "BatchMode=yes",
                "--",
                "deploy@10.0.0.5",
                "'mesh-apply' '--rollback' '--format' 'json'"
            ]
        );
        assert!(
            !words
                .iter()
                .any(|word| word.contains("StrictHostKeyChecking"))
        );
    }

    #[test]
    fn selection_by_name_and_tag() {
        let mut targets = BTreeMap::new();
        targets.insert("app1".to_string(), target(None, "mesh-apply"));
        let mut db = target(None, "mesh-apply");
        db.tags = vec!["db".to_string()];
        targets.insert("db1".to_string(), db);
        assert_eq!(select(&targets, &[]).unwrap(), ["app1", "db1"]);
        assert_eq!(select(&targets, &["@web".to_string()]).unwrap(), ["app1"]);
        assert_eq!(
            select(&targets, &["db1".to_string(), "@web".to_string()]).unwrap(),
            ["app1", "db1"]
        );
        let unknown_tag = select(&targets, &["@eu".to_string()]).unwrap_err();
        assert_eq!(unknown_tag.code, codes::NO_SUCH_DEPLOY_TARGET);
        let unknown_node = select(&targets, &["db2".to_string()]).unwrap_err();
        assert!(
            unknown_node
                .help
                .as_deref()
                .unwrap_or_default()
                .contains("db1"),
            "{unknown_node:?}"
        );
    }

    #[test]
    fn an_outcome_without_a_report_says_what_ssh_said() {
        let outcome = outcome_of("db1", Some(255), b"", b"Host key verification failed.\n");
        assert!(!outcome.succeeded);
        assert_eq!(outcome.detail, "ssh failed: Host key verification failed.");
    }

    /// What the node says is shown with its escape sequences and its bidirectional
    /// controls escaped: an inventory's `deploy.applier` may hold U+202E, which the
    /// node's shell then quotes back in its error.
    #[test]
    fn what_the_node_says_is_escaped() {
        let stderr = "bash: /opt/mesh-apply\u{202e}\u{2066} deliaf: not found\x1b[2J\n";
        let outcome = outcome_of("db1", Some(127), b"", stderr.as_bytes());
        assert_eq!(
            outcome.detail,
            "exited 127 without a report: bash: /opt/mesh-apply\\u{202e}\\u{2066} deliaf: not found\\u{1b}[2J"
        );
        let report = r#"{"errors":[{"code":"E510","message":"a\u202eb\u001b[2J"}]}"#;
        let outcome = outcome_of("db1", Some(1), report.as_bytes(), b"");
        assert_eq!(outcome.detail, "E510: a\\u{202e}b\\u{1b}[2J");
    }
}
