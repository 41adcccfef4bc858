//! Talking to the broker: connecting (never with lapin's own recovery: the
//! supervisor in `consume` reconnects), backoff with jitter, declaring the topology,
//! publishing with confirms, and the error type. Knows no message format beyond
//! `Outgoing`.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};

use crate::message::Outgoing;
use crate::names;

/// What went wrong talking to the broker, in words for the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
}

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
        }
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

/// Opens one connection (one attempt), named for `rabbitmqctl list_connections`.
pub async fn connect(url: &str, name: &str) -> Result<Connection, Error> {
    let properties = ConnectionProperties::default().with_connection_name(name.into());
    Connection::connect(url, properties).await.map_err(|error| {
        Error::new(format!(
            "cannot connect to the broker at `{}`: {error}",
            names::redact(url)
        ))
    })
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

/// The AMQP properties of an outgoing message: persistent, JSON, typed.
pub fn properties(outgoing: &Outgoing, app: &str) -> BasicProperties {
    let mut properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_type(outgoing.kind.as_str().into())
        .with_app_id(app.into());
    if let Some(message_id) = &outgoing.message_id {
        properties = properties.with_message_id(message_id.as_str().into());
    }
    if let Some(correlation_id) = &outgoing.correlation_id {
        properties = properties.with_correlation_id(correlation_id.as_str().into());
    }
    properties
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
