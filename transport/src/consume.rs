//! The supervised consumer that both `mesh-apply --listen` and `mesh-build` run: one
//! connection, one channel per queue with prefetch 1 (one message at a time), a
//! handler called on a blocking thread, its replies published to the `mesh` exchange
//! and confirmed, and only then the message acknowledged (or rejected without
//! requeue). When the broker drops the connection, every worker stops, and the
//! supervisor reconnects with backoff and starts them again: lapin's own recovery is
//! not used. Knows nothing of plans or builds; the handlers do.
//!
//! What this guarantees: a message is acknowledged only after its handler returned
//! and its replies were confirmed by the broker, so a crash or a dropped connection
//! anywhere before that leaves it unacknowledged and the broker redelivers it. A
//! handler must therefore recognise work it has already done (the listener compares
//! plan digests with the applied record, the builder looks correlation ids up in its
//! record).

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicQosOptions, BasicRejectOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection};
use tokio::task::JoinSet;

use crate::connection::{self, Backoff, Error, Stop};
use crate::message::{Incoming, Outgoing};
use crate::names;

/// What the handler decided about a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// Done (whatever the outcome): acknowledge once the replies are confirmed.
    Ack,
    /// Not something this consumer can ever handle: reject without requeue, so it
    /// cannot loop.
    Reject,
    /// Could not be done now for a reason of this host (its disk): back to the queue,
    /// for this or another consumer to try again.
    Requeue,
}

/// The handler's answer: what to do with the message and what to publish first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handled {
    pub disposition: Disposition,
    pub replies: Vec<Outgoing>,
}

impl Handled {
    pub fn ack(replies: Vec<Outgoing>) -> Handled {
        Handled {
            disposition: Disposition::Ack,
            replies,
        }
    }

    pub fn reject(replies: Vec<Outgoing>) -> Handled {
        Handled {
            disposition: Disposition::Reject,
            replies,
        }
    }

    pub fn requeue() -> Handled {
        Handled {
            disposition: Disposition::Requeue,
            replies: Vec::new(),
        }
    }
}

/// Handles one message; called on a blocking thread, never twice at once.
pub type Handler = Box<dyn FnMut(&Incoming) -> Handled + Send>;

/// Where progress lines go (stderr in the binaries, a buffer in tests).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// What went wrong while serving: the supervisor tries again, or gives one message
/// up. Typed, so that a program reports each in its own words and codes
/// ([`Options::troubles`]); its `Display` is the line the log gets otherwise.
#[derive(Clone, Debug)]
pub enum Trouble {
    /// No connection could be opened (nothing listens, no handshake in time, the login
    /// refused); tried again after `delay`.
    Connect { error: Error, delay: Duration },
    /// The connection was lost; opened again after `delay`.
    Lost { error: Error, delay: Duration },
    /// `queue` cannot be consumed from while the connection lives (not declared,
    /// access refused); tried again after `delay`.
    Queue {
        queue: String,
        error: Error,
        delay: Duration,
    },
    /// The handler of `queue` ended without an answer (it panicked): the message is
    /// rejected, not requeued.
    Handler { queue: String, failure: String },
}

impl std::fmt::Display for Trouble {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Trouble::Connect { error, delay } => write!(
                formatter,
                "{error}; trying again in {:.1} s",
                delay.as_secs_f64()
            ),
            Trouble::Lost { error, delay } => write!(
                formatter,
                "connection lost: {error}; reconnecting in {:.1} s",
                delay.as_secs_f64()
            ),
            Trouble::Queue {
                queue,
                error,
                delay,
            } => write!(
                formatter,
                "queue `{queue}`: {error}; trying again in {:.1} s",
                delay.as_secs_f64()
            ),
            Trouble::Handler { queue, failure } => write!(
                formatter,
                "queue `{queue}`: the handler failed ({failure}); the message is rejected"
            ),
        }
    }
}

/// Where [`Trouble`]s go, when not to the log as lines.
pub type Troubles = Arc<dyn Fn(&Trouble) + Send + Sync>;

/// One queue and its handler.
pub struct Worker {
    pub queue: String,
    pub handler: Handler,
}

/// How to reach the broker and report.
#[derive(Clone)]
pub struct Options {
    pub url: String,
    /// The connection's name in `rabbitmqctl list_connections`.
    pub name: String,
    /// The `app_id` of the replies.
    pub app: String,
    pub log: Log,
    /// Where troubles go; `None`: to `log`, each as its line.
    pub troubles: Option<Troubles>,
    pub backoff: Backoff,
}

impl Options {
    pub fn new(url: &str, name: &str, app: &str, log: Log) -> Options {
        Options {
            url: url.to_string(),
            name: name.to_string(),
            app: app.to_string(),
            log,
            troubles: None,
            backoff: Backoff::default(),
        }
    }

    /// Where troubles go: `troubles`, or the log.
    fn trouble_reporter(&self) -> Troubles {
        match &self.troubles {
            Some(troubles) => troubles.clone(),
            None => {
                let log = self.log.clone();
                Arc::new(move |trouble: &Trouble| log(&trouble.to_string()))
            }
        }
    }
}

/// A log that writes lines to stderr. A line that cannot be written (stderr's reader
/// gone) is dropped: a service does not stop for its log (`eprintln!` panics there).
/// What it is given is written as it is: a caller quoting untrusted text escapes it
/// (`mesh-apply --listen` renders coded problems, help lines and all), or uses
/// [`escaping_stderr_log`].
pub fn stderr_log() -> Log {
    Arc::new(|line: &str| {
        let mut stderr = std::io::stderr().lock();
        let _unwritten = writeln!(stderr, "{line}");
    })
}

/// [`stderr_log`] with each line escaped as it is written (terminal and
/// bidirectional controls, line breaks), for a log whose lines quote what arrived
/// from the broker (`mesh-build`: a request's directory and correlation id) or what
/// a repository holds (a file's name): none reaches a terminal as an escape
/// sequence or a fake line.
pub fn escaping_stderr_log() -> Log {
    let log = stderr_log();
    Arc::new(move |line: &str| log(&plan::display::escaped(line)))
}

struct WorkerState {
    queue: String,
    handler: Arc<Mutex<Handler>>,
}

/// A connection that lived this long before it was lost starts the backoff afresh.
const HEALTHY: Duration = Duration::from_secs(5);

/// Runs the workers until `stop`, reconnecting whenever the connection is lost.
/// Blocks; builds its own runtime.
pub fn serve(options: Options, workers: Vec<Worker>, stop: Stop) -> Result<(), Error> {
    connection::runtime()?.block_on(serve_async(options, workers, stop));
    Ok(())
}

/// [`serve`] on the caller's runtime. Returns once stopped.
pub async fn serve_async(options: Options, workers: Vec<Worker>, stop: Stop) {
    let workers: Vec<Arc<WorkerState>> = workers
        .into_iter()
        .map(|worker| {
            Arc::new(WorkerState {
                queue: worker.queue,
                handler: Arc::new(Mutex::new(worker.handler)),
            })
        })
        .collect();
    let log = options.log.clone();
    let troubles = options.trouble_reporter();
    let mut backoff = options.backoff.clone();
    while !stop.is_stopped() {
        let connection = tokio::select! {
            connected = connection::connect(&options.url, &options.name, None) => connected,
            () = stop.stopped() => return,
        };
        let connection = match connection {
            Ok(connection) => Arc::new(connection),
            Err(error) => {
                let delay = backoff.next_delay();
                troubles(&Trouble::Connect { error, delay });
                stop.sleep(delay).await;
                continue;
            }
        };
        log(&format!(
            "connected to {} as `{}`",
            names::redact(&options.url),
            options.name
        ));
        let connected_at = Instant::now();
        let mut tasks = JoinSet::new();
        for worker in &workers {
            tasks.spawn(run_worker(
                connection.clone(),
                worker.clone(),
                options.app.clone(),
                troubles.clone(),
                stop.clone(),
            ));
        }
        let mut lost = None;
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    lost = Some(error);
                    break;
                }
                Err(join_error) => {
                    lost = Some(Error::new(format!("a worker ended: {join_error}")));
                    break;
                }
            }
        }
        // a handler still running on its blocking thread finishes and keeps the
        // handler's lock meanwhile, so the next session waits for it
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        if stop.is_stopped() || lost.is_none() {
            if connection.status().connected() {
                // the broker requeues what was not acknowledged either way
                let _closed = connection.close(200, "stopping".into()).await;
            }
            return;
        }
        if connected_at.elapsed() > HEALTHY {
            backoff.reset();
        }
        let delay = backoff.next_delay();
        if let Some(error) = lost {
            troubles(&Trouble::Lost { error, delay });
        }
        drop(connection);
        stop.sleep(delay).await;
    }
}

/// Consumes one queue while the connection lives; a channel-level failure (the queue
/// does not exist yet, access refused) is retried with backoff. Returns `Err` only
/// when the connection is gone.
async fn run_worker(
    connection: Arc<Connection>,
    worker: Arc<WorkerState>,
    app: String,
    troubles: Troubles,
    stop: Stop,
) -> Result<(), Error> {
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(10));
    loop {
        let error = match consume_queue(&connection, &worker, &app, &troubles, &stop).await {
            Ok(()) => return Ok(()),
            Err(error) => error,
        };
        if stop.is_stopped() {
            return Ok(());
        }
        // let the connection's state catch up with what the channel saw
        tokio::time::sleep(Duration::from_millis(50)).await;
        if !connection.status().connected() {
            return Err(error);
        }
        let delay = backoff.next_delay();
        troubles(&Trouble::Queue {
            queue: worker.queue.clone(),
            error: error.clone(),
            delay,
        });
        stop.sleep(delay).await;
        if !connection.status().connected() {
            return Err(error);
        }
    }
}

async fn consume_queue(
    connection: &Connection,
    worker: &WorkerState,
    app: &str,
    troubles: &Troubles,
    stop: &Stop,
) -> Result<(), Error> {
    let channel = connection::confirmed_channel(connection).await?;
    channel.basic_qos(1, BasicQosOptions::default()).await?;
    check_queue(&channel, &worker.queue).await?;
    let mut consumer = channel
        .basic_consume(
            worker.queue.as_str().into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(|error| Error::new(format!("cannot consume from `{}`: {error}", worker.queue)))?;
    loop {
        let next = tokio::select! {
            next = consumer.next() => next,
            () = stop.stopped() => {
                let _closed = channel.close(200, "stopping".into()).await;
                return Ok(());
            }
        };
        let delivery = match next {
            Some(Ok(delivery)) => delivery,
            Some(Err(error)) => return Err(error.into()),
            None => return Err(Error::new("the broker cancelled the consumer")),
        };
        let incoming = crate::client::incoming_of(&delivery);
        let handler = worker.handler.clone();
        let handled = tokio::task::spawn_blocking(move || {
            let mut handler = handler.lock().unwrap_or_else(PoisonError::into_inner);
            handler(&incoming)
        })
        .await;
        let handled = match handled {
            Ok(handled) => handled,
            Err(failure) => {
                troubles(&Trouble::Handler {
                    queue: worker.queue.clone(),
                    failure: failure.to_string(),
                });
                Handled::reject(Vec::new())
            }
        };
        for reply in &handled.replies {
            connection::publish_confirmed(&channel, reply, app).await?;
        }
        match handled.disposition {
            Disposition::Ack => delivery.ack(BasicAckOptions::default()).await?,
            Disposition::Reject => {
                delivery
                    .reject(BasicRejectOptions { requeue: false })
                    .await?
            }
            Disposition::Requeue => {
                delivery
                    .reject(BasicRejectOptions { requeue: true })
                    .await?
            }
        };
    }
}

/// Checks that `queue` exists without declaring it (a passive declare needs no
/// permission; nodes and builders are not allowed to configure the broker).
pub async fn check_queue(channel: &Channel, queue: &str) -> Result<u32, Error> {
    channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .map(|declared| declared.message_count())
        .map_err(|error| {
            Error::new(format!(
                "the queue `{queue}` cannot be used: {error} (the operator declares it: `meshc publish`, `meshc artifacts build --remote`)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener whose broker address accepts connections and never answers the
    /// handshake (a port another program took over) gives each attempt up after the
    /// URL's `connection_timeout`, says so, and tries again with backoff; it still
    /// stops when asked. Before, it waited in its first attempt for ever, saying
    /// nothing.
    #[test]
    fn a_listener_retries_a_handshake_never_answered() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for socket in listener.incoming().flatten() {
                held.push(socket);
            }
        });
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let log: Log = {
            let lines = lines.clone();
            Arc::new(move |line: &str| {
                lines
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line.to_string());
            })
        };
        let mut options = Options::new(
            &format!("amqp://127.0.0.1:{port}/%2f?connection_timeout=200"),
            "test",
            "test",
            log,
        );
        options.backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(50));
        let worker = Worker {
            queue: "mesh.node.test".to_string(),
            handler: Box::new(|_| Handled::requeue()),
        };
        let stop = Stop::new();
        let serving = {
            let stop = stop.clone();
            std::thread::spawn(move || serve(options, vec![worker], stop))
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        let given_up = || {
            lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .filter(|line| line.contains("no AMQP handshake within 0.2 s; trying again in"))
                .count()
        };
        while given_up() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.stop();
        let served = serving.join().expect("the listener did not panic");
        assert!(served.is_ok(), "{served:?}");
        assert!(
            given_up() >= 3,
            "{:?}",
            lines.lock().unwrap_or_else(PoisonError::into_inner)
        );
    }
}
