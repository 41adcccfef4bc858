//! `mesh-apply --listen`: applies plans as they arrive on this node's queue. Each
//! message is checked (a plan that verifies, whose digest is the message id, for this
//! node), applied with the same `run` as `mesh-apply PLAN`, and answered with a status
//! report on `status.NODE`; `transport::consume` acknowledges it only after the apply
//! finished, its record was written and the report was confirmed. A plan equal to
//! the last applied one (by digest, from the applied record on disk, so it holds
//! across restarts) is acknowledged without work; that is what makes a redelivery
//! after a dropped connection harmless. A plan published before the newest plan the
//! node applied (the record's mark) is refused by the apply itself, under the node's
//! lock (E546, `crate::order`), answered `failed` and acknowledged. Malformed
//! messages are rejected without requeue. Knows messages and the record, not how
//! shapes are applied.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use plan::Plan;
use transport::consume::{self, Handled, Handler, Log, Options, Trouble, Troubles, Worker};
use transport::message::{Incoming, Outcome, ReportedError, StatusReport};
use transport::{Stop, names};

use crate::codes::Code;
use crate::config::{Config, OutputFormat};
use crate::problem::Problem;

// `ListenConfig` is made from the command line by `crate::config`, with the flags
// of `mesh-apply PLAN`.
use crate::host::{Host, STATE_DIRECTORY};
use crate::record::{Record, RecordState};
use crate::report::{Report, Status};

/// Where a received plan is kept (node path), for the operator to read.
const RECEIVED_PLAN: &str = "/var/lib/mesh/received.json";

/// What `mesh-apply --listen` is asked to do, validated.
#[derive(Clone, Debug)]
pub struct ListenConfig {
    pub node: String,
    pub identity_path: PathBuf,
    pub root: Option<PathBuf>,
    pub artifacts: PathBuf,
    pub url: String,
    pub format: OutputFormat,
    /// Print one line per message on stdout (off for many listeners in one process).
    pub print: bool,
}

/// Listens until the process is stopped. Only what keeps it from starting returns
/// (E542): a broker URL no connection could ever be made with, or no runtime. What
/// goes wrong once it runs is retried and reported on stderr as problems ([`troubles`]).
pub fn listen(config: ListenConfig) -> Result<(), Problem> {
    if transport::names::password_on_command_line() {
        consume::stderr_log()(transport::names::PASSWORD_ON_COMMAND_LINE);
    }
    transport::connection::parse_url(&config.url).map_err(|error| {
        Problem::new(
            Code::ListenerCannotStart,
            error.to_string(),
            "give `--amqp` (or `MESH_AMQP_URL`) the broker's URL as `amqp://USER:PASSWORD@HOST:5672/%2f`; this build has no TLS, so not `amqps://` (book: transport)",
        )
    })?;
    let log = consume::stderr_log();
    let worker = worker(config.clone(), log.clone());
    let mut options = Options::new(
        &config.url,
        &format!("mesh-apply {}", config.node),
        "mesh-apply",
        log.clone(),
    );
    options.troubles = Some(troubles(log));
    consume::serve(options, vec![worker], Stop::new()).map_err(|error| {
        Problem::new(
            Code::ListenerCannotStart,
            error.to_string(),
            "mesh-apply could not start the threads it listens with: check the limits on threads and memory of its service (`ulimit -u`, systemd's `TasksMax=`), then start it again",
        )
    })
}

/// What goes wrong while listening, each written to `log` as the coded problem
/// [`trouble_problem`] makes of it (without the last newline: the log adds one).
pub fn troubles(log: Log) -> Troubles {
    Arc::new(move |trouble: &Trouble| {
        let text = crate::report::render_problem(&trouble_problem(trouble));
        log(text.trim_end_matches('\n'));
    })
}

/// A trouble of the supervisor as a problem: its line is the message, what it means
/// for this node the help.
pub fn trouble_problem(trouble: &Trouble) -> Problem {
    let message = trouble.to_string();
    match trouble {
        Trouble::Connect { error, .. } | Trouble::Lost { error, .. } => {
            let help = if error.is_access_refused() {
                "the broker refused the node's login: correct the user and password of the URL (`--amqp`, `MESH_AMQP_URL`), or have the operator create them (`meshc broker-permissions`); mesh-apply keeps trying"
            } else if error.timed_out().is_some() {
                "something listens at the URL's host and port but does not answer as a broker: check the port (RabbitMQ's is 5672) and that the broker has started; mesh-apply keeps trying"
            } else {
                "check that RabbitMQ runs at the URL's host and port (`--amqp`, `MESH_AMQP_URL`) and that this node reaches it; mesh-apply keeps trying, and plans published meanwhile wait in the node's queue"
            };
            Problem::new(Code::BrokerUnreachable, message, help)
        }
        Trouble::Queue { error, .. } => {
            let help = if error.is_access_refused() {
                "the node's user may not read its queue: have the operator set its permissions (`meshc broker-permissions`); mesh-apply keeps trying"
            } else {
                "the operator declares the node's queue: `meshc publish` a build that has this node (and check `--node`); mesh-apply keeps trying"
            };
            Problem::new(Code::QueueUnusable, message, help)
        }
        Trouble::Handler { .. } => Problem::new(
            Code::ReceivedPlanUnanswered,
            message,
            "this is a bug of mesh-apply: please report it with the lines above; the message is not tried again, so publish the plan again or apply it by hand (`mesh-apply PLAN`) to see what fails",
        ),
    }
}

/// The worker for this node's queue: what `listen` runs, and what a process that
/// listens for many nodes at once (the benchmark) runs once per node.
pub fn worker(config: ListenConfig, log: Log) -> Worker {
    Worker {
        queue: names::node_queue(&config.node),
        handler: handler(config, log),
    }
}

/// How long a plan waits before going back to the queue when another `mesh-apply`
/// holds the node's lock.
const LOCKED_RETRY: Duration = Duration::from_secs(2);

/// The handler: check, apply, report; one line per message on stdout.
pub fn handler(config: ListenConfig, log: Log) -> Handler {
    let config = Arc::new(config);
    Box::new(move |incoming: &Incoming| {
        let (report, locked) = handle(&config, incoming);
        if locked {
            log(&format!(
                "another mesh-apply holds the lock of node `{}`: the plan goes back to the queue",
                config.node
            ));
            std::thread::sleep(LOCKED_RETRY);
            return Handled::requeue();
        }
        if config.print {
            print_line(&config, &report);
        }
        let reply = report.to_outgoing();
        if report.outcome == Outcome::Rejected {
            Handled::reject(vec![reply])
        } else {
            Handled::ack(vec![reply])
        }
    })
}

fn print_line(config: &ListenConfig, report: &StatusReport) {
    let line = match config.format {
        OutputFormat::Json => {
            crate::report::json_escaped(&serde_json::to_string(report).unwrap_or_default())
        }
        OutputFormat::Human => crate::report::escaped(&human_line(report)).into_owned(),
    };
    let mut stdout = std::io::stdout().lock();
    // a closed stdout must not stop the listener: the report also goes to the broker
    let written = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    match written {
        Ok(()) | Err(_) => {}
    }
}

fn human_line(report: &StatusReport) -> String {
    let plan = report.plan.as_deref().unwrap_or("?");
    let counts = || {
        report
            .counts
            .iter()
            .filter(|(_, count)| **count > 0)
            .map(|(name, count)| format!("{count} {name}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match report.outcome {
        Outcome::Applied => format!("applied {plan}: {}", counts()),
        Outcome::AlreadyApplied => format!("{plan} is already applied: acknowledged without work"),
        Outcome::Failed => {
            let errors: Vec<String> = report
                .errors
                .iter()
                .map(|error| format!("error[{}]: {}", error.code, error.message))
                .collect();
            // a plan refused before anything changed has no counts to show
            match counts() {
                counts if counts.is_empty() => format!("failed {plan}: {}", errors.join("; ")),
                counts => format!("failed {plan}: {counts}; {}", errors.join("; ")),
            }
        }
        Outcome::Rejected => format!(
            "rejected message {}: {}",
            report.message_id.as_deref().unwrap_or("without an id"),
            report.reason.as_deref().unwrap_or("")
        ),
    }
}

/// The report on one message, and whether it must wait for the node's lock.
pub fn handle(config: &ListenConfig, incoming: &Incoming) -> (StatusReport, bool) {
    let mut report = StatusReport::new(&config.node, Outcome::Rejected);
    report.message_id = incoming.message_id.clone();
    let plan = match Plan::read(&incoming.body) {
        Ok(plan) => plan,
        Err(error) => {
            report.reason = Some(format!("not a plan that verifies: {error}"));
            return (report, false);
        }
    };
    report.plan = Some(plan.digest().to_string());
    if let Some(message_id) = &incoming.message_id
        && message_id != plan.digest()
    {
        report.reason = Some(format!(
            "the message id `{message_id}` is not the plan's digest `{}`",
            plan.digest()
        ));
        return (report, false);
    }
    if plan.node() != config.node {
        report.reason = Some(format!(
            "the plan is for node `{}`, but this is node `{}`",
            plan.node(),
            config.node
        ));
        return (report, false);
    }
    let host = match Host::new(config.root.as_deref()) {
        Ok(host) => host,
        Err(problem) => {
            report.outcome = Outcome::Failed;
            report.errors.push(ReportedError {
                code: problem.code.as_str().to_string(),
                message: problem.message,
            });
            return (report, false);
        }
    };
    if let Ok(Some(record)) = Record::load(&host)
        && record.state == RecordState::Applied
        && record.plan == plan.digest()
        && record.node == config.node
    {
        report.outcome = Outcome::AlreadyApplied;
        report.reason = Some("the plan is the one last applied".to_string());
        return (report, false);
    }
    let plan_path = host.path(RECEIVED_PLAN);
    let kept = host
        .fs()
        .create_directories(STATE_DIRECTORY, 0o755)
        .and_then(|_| host.fs().write_now(RECEIVED_PLAN, &incoming.body, 0o600));
    if let Err(error) = kept {
        report.outcome = Outcome::Failed;
        report.errors.push(ReportedError {
            code: Code::FilesystemFailed.as_str().to_string(),
            message: format!("cannot keep the plan in `{}`: {error}", plan_path.display()),
        });
        return (report, false);
    }
    // the plan is applied from the bytes received, never read back by name
    let applied = crate::run::run_with_plan(
        &Config {
            plan: crate::config::PlanSource::File(plan_path),
            identity_path: Some(config.identity_path.clone()),
            keep_generations: crate::generations::DEFAULT_KEEP,
            root: config.root.clone(),
            node: Some(config.node.clone()),
            artifacts: config.artifacts.clone(),
            dry_run: false,
            format: OutputFormat::Json,
            published_ms: incoming.published_ms,
        },
        &incoming.body,
    );
    if applied
        .problems
        .iter()
        .any(|problem| problem.code == Code::Locked)
    {
        return (report, true);
    }
    fill(&mut report, &applied);
    (report, false)
}

fn fill(report: &mut StatusReport, applied: &Report) {
    report.outcome = if applied.succeeded() {
        Outcome::Applied
    } else {
        Outcome::Failed
    };
    for status in Status::ALL {
        report
            .counts
            .insert(status.name().to_string(), applied.count(status) as u64);
    }
    report
        .counts
        .insert("not_reached".to_string(), applied.not_reached as u64);
    report.errors = applied
        .problems
        .iter()
        .chain(&applied.notes)
        .map(|problem| ReportedError {
            code: problem.code.as_str().to_string(),
            message: problem.message.clone(),
        })
        .collect();
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use transport::Error;

    use super::*;

    /// Every trouble the supervisor reports is printed as a problem: its line as the
    /// message, a code of its own and a help line that fits the cause.
    #[test]
    fn each_trouble_of_the_listener_is_a_coded_problem_with_a_help_line() {
        let delay = Duration::from_millis(400);
        let refused = Error::new("ACCESS_REFUSED - Login was refused");
        let cases = [
            (
                Trouble::Connect {
                    error: Error::new("cannot connect: Connection refused"),
                    delay,
                },
                Code::BrokerUnreachable,
                "check that RabbitMQ runs",
            ),
            (
                Trouble::Connect {
                    error: refused.clone(),
                    delay,
                },
                Code::BrokerUnreachable,
                "refused the node's login",
            ),
            (
                Trouble::Lost {
                    error: Error::new("missed heartbeats"),
                    delay,
                },
                Code::BrokerUnreachable,
                "check that RabbitMQ runs",
            ),
            (
                Trouble::Queue {
                    queue: "mesh.node.db1".to_string(),
                    error: Error::new("NOT_FOUND - no queue"),
                    delay,
                },
                Code::QueueUnusable,
                "`meshc publish`",
            ),
            (
                Trouble::Queue {
                    queue: "mesh.node.db1".to_string(),
                    error: refused,
                    delay,
                },
                Code::QueueUnusable,
                "`meshc broker-permissions`",
            ),
            (
                Trouble::Handler {
                    queue: "mesh.node.db1".to_string(),
                    failure: "task 3 panicked".to_string(),
                },
                Code::ReceivedPlanUnanswered,
                "a bug of mesh-apply",
            ),
        ];
        for (trouble, code, help) in cases {
            let problem = trouble_problem(&trouble);
            assert_eq!(problem.code, code, "{trouble}");
            assert_eq!(problem.message, trouble.to_string());
            assert!(problem.help.contains(help), "{trouble}: {}", problem.help);
        }

        let lines = Arc::new(Mutex::new(Vec::new()));
        let log: Log = {
            let lines = lines.clone();
            Arc::new(move |line: &str| lines.lock().unwrap().push(line.to_string()))
        };
        troubles(log)(&Trouble::Handler {
            queue: "mesh.node.db1".to_string(),
            failure: "task 3 panicked".to_string(),
        });
        let lines = lines.lock().unwrap();
        let [line] = lines.as_slice() else {
            panic!("{lines:?}")
        };
        assert!(
            line.starts_with(
                "error[E545]: queue `mesh.node.db1`: the handler failed (task 3 panicked); \
                 the message is rejected\n  = help: this is a bug of mesh-apply"
            ) && !line.ends_with('\n'),
            "{line:?}"
        );
    }
}
