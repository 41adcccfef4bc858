//! Talking to the broker: connecting (within a time limit, and never with lapin's own
//! recovery: the supervisor in `consume` reconnects), backoff with jitter, declaring
//! the topology, publishing with confirms, and the error type. Knows no message format
//! beyond `Outgoing`.

use std::fmt;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::tcp::{AMQPUriTcpExt, AsyncTcpStream, TLSConfig};
use lapin::types::{AMQPValue, FieldTable};
use lapin::uri::{AMQPScheme, AMQPUri};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};

use crate::message::{Outgoing, PUBLISHED_MS_HEADER};
use crate::names;

/// What went wrong talking to the broker, in words for the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
    /// The time limit that ran out, when connecting took too long.
    timed_out: Option<Duration>,
}

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            timed_out: None,
        }
    }

    /// The time limit, when this is a connection given up because the broker (or
    /// whatever listens at its address) did not finish the handshake in time.
    pub fn timed_out(&self) -> Option<Duration> {
        self.timed_out
    }

    /// Did the broker refuse it for want of permission (`ACCESS_REFUSED`)?
    pub fn is_access_refused(&self) -> bool {
        self.message.contains("ACCESS_REFUSED")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<lapin::Error> for Error {
    fn from(error: lapin::Error) -> Error {
        Error::new(error.to_string())
    }
}

/// Doubling delays between attempts, from `initial` to `max`, each drawn at random
/// from its upper half so that a fleet that lost the broker together does not come
/// back in lockstep.
#[derive(Clone, Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    current: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            current: initial,
        }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self.current;
        self.current = (self.current * 2).min(self.max);
        let half = ceiling / 2;
        half + half.mul_f64(random_fraction())
    }

    pub fn reset(&mut self) {
        self.current = self.initial;
    }
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff::new(Duration::from_millis(100), Duration::from_secs(5))
    }
}

fn random_fraction() -> f64 {
    let mut bytes = [0u8; 8];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

/// Asks long-running work to finish what it holds and return.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    inner: Arc<StopInner>,
}

#[derive(Debug, Default)]
struct StopInner {
    stopped: AtomicBool,
    notify: tokio::sync::Notify,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    pub fn stop(&self) {
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    /// Resolves once [`Stop::stop`] was called.
    pub async fn stopped(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }

    /// Sleeps for `duration`, or less if stopped meanwhile.
    pub async fn sleep(&self, duration: Duration) {
        tokio::select! {
            () = tokio::time::sleep(duration) => {}
            () = self.stopped() => {}
        }
    }
}

/// How long a connection may take, from the TCP connect to the end of the AMQP
/// handshake, when the URL does not say (`?connection_timeout=MILLISECONDS`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Opens one connection (one attempt), named for `rabbitmqctl list_connections`, and
/// gives up when it is not open within the URL's `connection_timeout` (milliseconds;
/// default [`DEFAULT_CONNECT_TIMEOUT`]) or `limit`, whichever is shorter.
///
/// lapin has no such limit of its own: a peer that accepts the TCP connection and
/// never answers the protocol header (a port reused by another program, a broker
/// hung at start) kept its handshake waiting for ever. Dropping lapin's future is not
/// enough either, since its I/O thread goes on waiting on the socket: the sockets of
/// an abandoned attempt are shut down, which ends that thread, so that a listener
/// retrying such a peer does not gather one waiting thread per attempt.
pub async fn connect(url: &str, name: &str, limit: Option<Duration>) -> Result<Connection, Error> {
    let failed = |reason: &dyn fmt::Display| {
        Error::new(format!(
            "cannot connect to the broker at `{}`: {reason}",
            names::redact(url)
        ))
    };
    let uri = parse_url(url)?;
    let timeout = uri
        .query
        .connection_timeout
        .map_or(DEFAULT_CONNECT_TIMEOUT, Duration::from_millis);
    let timeout = limit.map_or(timeout, |limit| timeout.min(limit));
    let runtime = lapin::runtime::default_runtime().map_err(|error| failed(&error))?;
    let properties = ConnectionProperties::default().with_connection_name(name.into());
    let sockets = AttemptSockets::default();
    let opening = {
        let sockets = sockets.clone();
        Connection::connector(
            uri,
            runtime,
            async move |uri, runtime| {
                let given_up = || std::io::Error::other("the connection attempt was given up");
                if sockets.is_finished() {
                    return Err(given_up().into());
                }
                let stream = uri
                    .connect_with_config_async(TLSConfig::default(), &runtime)
                    .await?;
                if let AsyncTcpStream::Plain(plain) = &stream
                    && !sockets.keep(plain.get_ref())
                {
                    return Err(given_up().into());
                }
                Ok(stream)
            },
            properties,
        )
    };
    let opened = tokio::time::timeout(timeout, opening).await;
    // a connection that opened needs no copy of its socket; one that failed or was
    // abandoned has its socket shut down, so that lapin's I/O thread ends
    sockets.finish(!matches!(opened, Ok(Ok(_))));
    match opened {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(error)) => Err(failed(&error)),
        Err(_elapsed) => Err(Error {
            message: format!(
                "cannot connect to the broker at `{}`: no AMQP handshake within {}",
                names::redact(url),
                seconds(timeout)
            ),
            timed_out: Some(timeout),
        }),
    }
}

/// The broker's URL read as [`connect`] reads it, refused when no connection could
/// ever be made with it: not an AMQP URI, or `amqps://`. lapin is built without a
/// TLS backend here (book: transport), and given `amqps://` it would speak plain AMQP
/// to the port, password and all, rather than fail.
pub fn parse_url(url: &str) -> Result<AMQPUri, Error> {
    let refused = |reason: &dyn fmt::Display| {
        Error::new(format!(
            "cannot connect to the broker at `{}`: {reason}",
            names::redact(url)
        ))
    };
    // lapin reads `amqp:/user:password@host/` as the default host, the guest user
    // and the vhost `user:password@host/`: the password went to the broker as a
    // vhost's name (and to its log)
    let scheme = |scheme: &str| {
        url.get(..scheme.len())
            .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
    };
    if !scheme("amqp://") && !scheme("amqps://") {
        return Err(refused(
            &"a broker URL starts `amqp://` (write `amqp://USER:PASSWORD@HOST:PORT/VHOST`)",
        ));
    }
    let uri: AMQPUri = url.parse().map_err(|reason: String| refused(&reason))?;
    if uri.scheme == AMQPScheme::AMQPS {
        return Err(refused(
            &"`amqps://` needs TLS, which this build of mesh does not have (use `amqp://`)",
        ));
    }
    Ok(uri)
}

/// `20 s`, `1.5 s`.
pub fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

/// A copy of each socket a connection attempt opened, to shut down should the
/// attempt be abandoned (the socket itself belongs to lapin's I/O thread).
#[derive(Clone, Default)]
struct AttemptSockets {
    inner: Arc<Mutex<AttemptState>>,
}

#[derive(Default)]
struct AttemptState {
    finished: bool,
    sockets: Vec<std::net::TcpStream>,
}

impl AttemptSockets {
    fn state(&self) -> std::sync::MutexGuard<'_, AttemptState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_finished(&self) -> bool {
        self.state().finished
    }

    /// Keeps a copy of `socket`'s descriptor (none if the process has no descriptor
    /// left: the attempt then fails in lapin, or is merely not shut down); false,
    /// with the socket shut down, when the attempt was given up while it connected.
    fn keep(&self, socket: &impl AsFd) -> bool {
        let Ok(copy) = socket.as_fd().try_clone_to_owned() else {
            return true;
        };
        let copy = std::net::TcpStream::from(copy);
        let mut state = self.state();
        if state.finished {
            let _already_closed = copy.shutdown(std::net::Shutdown::Both);
            return false;
        }
        state.sockets.push(copy);
        true
    }

    /// No more sockets: the copies are closed, and with `shut_down` their sockets
    /// shut down first.
    fn finish(&self, shut_down: bool) {
        let mut state = self.state();
        state.finished = true;
        for socket in std::mem::take(&mut state.sockets) {
            if shut_down {
                let _already_closed = socket.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// A channel with publisher confirms on.
pub async fn confirmed_channel(connection: &Connection) -> Result<Channel, Error> {
    let channel = connection.create_channel().await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    Ok(channel)
}

/// Declares the `mesh` exchange (durable topic), the build queue and the queues of
/// `nodes`, each bound with its key. Idempotent; needs the operator's configure
/// permission (nodes and builders only ever check that their queue exists).
///
/// The nodes' queues are declared and bound without waiting for each answer (a fleet
/// of 1,000 nodes would otherwise wait for 2,000 round trips); the build queue is
/// declared last and waited for, and since a channel does its methods in order, that
/// answer (or the error that closed the channel) says how all of them went.
pub async fn declare_topology(channel: &Channel, nodes: &[&str]) -> Result<(), Error> {
    declare_exchange(channel).await?;
    for node in nodes {
        declare_bound_queue(
            channel,
            &names::node_queue(node),
            &names::plan_key(node),
            true,
        )
        .await?;
    }
    declare_bound_queue(channel, names::BUILD_QUEUE, names::BUILD_REQUEST_KEY, false).await
}

/// Declares the `mesh` exchange (durable topic). Idempotent.
pub async fn declare_exchange(channel: &Channel) -> Result<(), Error> {
    channel
        .exchange_declare(
            names::EXCHANGE.into(),
            ExchangeKind::Topic,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(|error| Error::new(format!("cannot declare the exchange `mesh`: {error}")))
}

async fn declare_bound_queue(
    channel: &Channel,
    queue: &str,
    key: &str,
    nowait: bool,
) -> Result<(), Error> {
    channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                durable: true,
                nowait,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .map_err(|error| Error::new(format!("cannot declare the queue `{queue}`: {error}")))?;
    channel
        .queue_bind(
            queue.into(),
            names::EXCHANGE.into(),
            key.into(),
            QueueBindOptions { nowait },
            FieldTable::default(),
        )
        .await
        .map_err(|error| Error::new(format!("cannot bind the queue `{queue}`: {error}")))?;
    Ok(())
}

/// The AMQP properties of an outgoing message: persistent, JSON, typed, and stamped
/// with when it is published by this machine's clock (see [`properties_at`]).
pub fn properties(outgoing: &Outgoing, app: &str) -> BasicProperties {
    properties_at(outgoing, app, crate::message::now_ms())
}

/// The AMQP properties of `outgoing` published at `published_ms` (milliseconds since
/// the Unix epoch): the standard `timestamp` property in seconds, and the header
/// [`PUBLISHED_MS_HEADER`] in milliseconds, which is what a listener orders plans by
/// (a redelivered message keeps both).
pub fn properties_at(outgoing: &Outgoing, app: &str, published_ms: u64) -> BasicProperties {
    let mut headers = FieldTable::default();
    headers.insert(
        PUBLISHED_MS_HEADER.into(),
        // AMQP 0-9-1 as RabbitMQ speaks it has no unsigned 64-bit field: a signed one
        // holds every time until the year 292,278,994
        AMQPValue::LongLongInt(i64::try_from(published_ms).unwrap_or(i64::MAX)),
    );
    let mut properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_type(outgoing.kind.as_str().into())
        .with_app_id(app.into())
        .with_timestamp(published_ms / 1000)
        .with_headers(headers);
    if let Some(message_id) = &outgoing.message_id {
        properties = properties.with_message_id(message_id.as_str().into());
    }
    if let Some(correlation_id) = &outgoing.correlation_id {
        properties = properties.with_correlation_id(correlation_id.as_str().into());
    }
    properties
}

/// When a received message was published: its [`PUBLISHED_MS_HEADER`], if it has one
/// holding a time (any unsigned or non-negative integer field, as another client may
/// encode it); `None` otherwise (an older publisher's message).
pub fn published_ms(properties: &BasicProperties) -> Option<u64> {
    let value = properties
        .headers()
        .as_ref()?
        .inner()
        .get(PUBLISHED_MS_HEADER)?;
    match value {
        AMQPValue::LongLongInt(number) => u64::try_from(*number).ok(),
        AMQPValue::LongInt(number) => u64::try_from(*number).ok(),
        AMQPValue::LongUInt(number) => Some(u64::from(*number)),
        AMQPValue::Timestamp(number) => Some(*number),
        _ => None,
    }
}

/// Publishes to the `mesh` exchange (mandatory, so an unroutable message is an error
/// rather than silently dropped when `mandatory` is set) without waiting.
pub async fn publish(
    channel: &Channel,
    outgoing: &Outgoing,
    app: &str,
    mandatory: bool,
) -> Result<lapin::PublisherConfirm, Error> {
    channel
        .basic_publish(
            names::EXCHANGE.into(),
            outgoing.routing_key.as_str().into(),
            BasicPublishOptions {
                mandatory,
                ..BasicPublishOptions::default()
            },
            &outgoing.body,
            properties(outgoing, app),
        )
        .await
        .map_err(|error| {
            Error::new(format!(
                "cannot publish `{}`: {error}",
                outgoing.routing_key
            ))
        })
}

/// Waits for one publisher confirm: `Ok` once the broker has taken the message
/// (and, for `mandatory`, routed it to a queue).
pub async fn confirmed(confirm: lapin::PublisherConfirm, what: &str) -> Result<(), Error> {
    let confirmation = confirm
        .await
        .map_err(|error| Error::new(format!("no confirm for {what}: {error}")))?;
    if confirmation.is_nack() {
        return Err(Error::new(format!("the broker refused {what} (nack)")));
    }
    if let Some(returned) = confirmation.take_message() {
        return Err(Error::new(format!(
            "the broker could not route {what}: {} {} (is its queue declared?)",
            returned.reply_code, returned.reply_text
        )));
    }
    Ok(())
}

/// Publishes one message to the `mesh` exchange and waits for its confirm.
pub async fn publish_confirmed(
    channel: &Channel,
    outgoing: &Outgoing,
    app: &str,
) -> Result<(), Error> {
    let confirm = publish(channel, outgoing, app, false).await?;
    confirmed(confirm, &format!("`{}`", outgoing.routing_key)).await
}

/// A multi-threaded runtime for the blocking entry points.
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|error| Error::new(format!("cannot start the async runtime: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::time::Instant;

    /// Every message is stamped with when it is published: the AMQP `timestamp` in
    /// seconds and the header in milliseconds, which a receiver reads back; a message
    /// without the header, or with one that holds no time, has no stamp.
    #[test]
    fn messages_carry_when_they_were_published() {
        let plan = Outgoing::plan("db1", "sha256:ab", b"{}".to_vec());
        let stamped = properties_at(&plan, "meshc publish", 1_700_000_000_123);
        assert_eq!(*stamped.timestamp(), Some(1_700_000_000));
        assert_eq!(published_ms(&stamped), Some(1_700_000_000_123));
        assert_eq!(
            stamped.message_id().as_ref().map(|id| id.as_str()),
            Some("sha256:ab")
        );

        let before = crate::message::now_ms();
        let now = published_ms(&properties(&plan, "meshc publish")).expect("stamped");
        assert!(before <= now && now <= crate::message::now_ms(), "{now}");

        assert_eq!(published_ms(&BasicProperties::default()), None);
        for (value, expected) in [
            (AMQPValue::LongLongInt(-1), None),
            (AMQPValue::LongString("1700000000123".into()), None),
            (AMQPValue::LongUInt(7), Some(7)),
            (
                AMQPValue::Timestamp(1_700_000_000_123),
                Some(1_700_000_000_123),
            ),
        ] {
            let mut headers = FieldTable::default();
            headers.insert(PUBLISHED_MS_HEADER.into(), value.clone());
            let properties = BasicProperties::default().with_headers(headers);
            assert_eq!(published_ms(&properties), expected, "{value:?}");
        }
    }

    /// A peer that accepts connections and never says a word, as a port another
    /// program took over: what it read of each connection until that connection
    /// ended (`None` if it had not ended after 20 s).
    fn silent_peer() -> (u16, std::sync::mpsc::Receiver<Option<Vec<u8>>>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for socket in listener.incoming() {
                let Ok(mut socket) = socket else { return };
                let sender = sender.clone();
                std::thread::spawn(move || {
                    let _set = socket.set_read_timeout(Some(Duration::from_secs(20)));
                    let mut read = Vec::new();
                    let ended = socket.read_to_end(&mut read).is_ok();
                    let _gone = sender.send(ended.then_some(read));
                });
            }
        });
        (port, receiver)
    }

    /// Before, a handshake that was never answered waited for ever (a `meshc
    /// publish` once hung 28 minutes on a port just reused by another program): the
    /// attempt is given up after the URL's `connection_timeout`, or the caller's
    /// limit if that is shorter, with an error that says so, and its socket is shut
    /// down rather than left to lapin's I/O thread to wait on.
    #[test]
    fn a_handshake_never_answered_is_given_up_in_time() {
        let runtime = runtime().expect("a runtime");
        let (port, connections) = silent_peer();
        for (query, limit, expected) in [
            ("?connection_timeout=700", None, Duration::from_millis(700)),
            (
                "",
                Some(Duration::from_millis(500)),
                Duration::from_millis(500),
            ),
            (
                "?connection_timeout=60000",
                Some(Duration::from_millis(300)),
                Duration::from_millis(300),
            ),
        ] {
            let url = format!("amqp://guest:secret@127.0.0.1:{port}/%2f{query}");
            let started = Instant::now();
            let error = runtime
                .block_on(connect(&url, "test", limit))
                .expect_err("nothing answers");
            let waited = started.elapsed();
            assert_eq!(error.timed_out(), Some(expected), "{url}: {error}");
            assert!(
                waited >= expected && waited < expected + Duration::from_secs(5),
                "{url}: gave up after {waited:?}"
            );
            assert!(
                error
                    .message
                    .contains(&format!("no AMQP handshake within {}", seconds(expected)))
                    && error.message.contains("guest:***@")
                    && !error.message.contains("secret"),
                "{error}"
            );
            let read = connections
                .recv_timeout(Duration::from_secs(40))
                .expect("the peer was connected to");
            let read = read.expect("the abandoned connection was not closed");
            assert!(read.starts_with(b"AMQP"), "{read:?}");
        }
    }

    #[test]
    fn a_connection_that_fails_is_no_time_out() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        drop(listener);
        let url = format!("amqp://127.0.0.1:{port}/%2f");
        let error = runtime()
            .expect("a runtime")
            .block_on(connect(&url, "test", None))
            .expect_err("nothing listens");
        assert_eq!(error.timed_out(), None, "{error}");
        assert!(
            error.message.starts_with("cannot connect to the broker at"),
            "{error}"
        );
    }

    /// `amqps-url-is-refused-not-sent-in-clear`: lapin without a TLS backend took an
    /// `amqps://` URL and spoke plain AMQP to the port, the login's password with it.
    /// It is refused before anything is sent, as the book says.
    #[test]
    fn amqps_url_is_refused_not_sent_in_clear() {
        let (port, connections) = silent_peer();
        let url = format!("amqps://guest:secret@127.0.0.1:{port}/%2f?connection_timeout=500");
        let error = runtime()
            .expect("a runtime")
            .block_on(connect(&url, "test", None))
            .expect_err("amqps is refused");
        assert_eq!(error.timed_out(), None, "{error}");
        assert!(
            error.message.contains("`amqps://` needs TLS")
                && error.message.contains("guest:***@")
                && !error.message.contains("secret"),
            "{error}"
        );
        assert!(
            connections.recv_timeout(Duration::from_secs(1)).is_err(),
            "the peer was connected to"
        );
        assert!(parse_url(&url.replacen("amqps", "amqp", 1)).is_ok());
        assert!(parse_url(&url.replacen("amqps", "AMQP", 1)).is_ok());
        let error = parse_url("broker:5672").expect_err("not a URL");
        assert!(
            error
                .message
                .starts_with("cannot connect to the broker at `broker:5672`: "),
            "{error}"
        );
    }

    /// A URL mistyped without its `//` is refused before anything is sent, its
    /// password hidden: lapin read `amqp:/u:PASSWORD@127.0.0.1:1/` as the guest user
    /// on the default host with the vhost `u:PASSWORD@127.0.0.1:1/`, which sent the password
    /// to the broker (and its log) as a vhost's name, and the message quoted it.
    #[test]
    fn a_url_without_its_slashes_is_refused_and_its_password_hidden() {
        for url in [
            "amqp:/u:s3cr3t@127.0.0.1:1/",
            "amqps//u:s3cr3t@127.0.0.1/",
            "amqp:u:s3cr3t@127.0.0.1/",
        ] {
            let error = parse_url(url).expect_err(url);
            assert!(
                error.message.contains("starts `amqp://`") && !error.message.contains("s3cr3t"),
                "{error}"
            );
        }
    }

    #[test]
    fn backoff_doubles_up_to_its_maximum_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(800));
        let delays: Vec<Duration> = (0..6).map(|_| backoff.next_delay()).collect();
        for (delay, ceiling) in delays.iter().zip([100, 200, 400, 800, 800, 800]) {
            assert!(*delay <= Duration::from_millis(ceiling), "{delays:?}");
            assert!(*delay >= Duration::from_millis(ceiling / 2), "{delays:?}");
        }
        backoff.reset();
        assert!(backoff.next_delay() <= Duration::from_millis(100));
    }
}
