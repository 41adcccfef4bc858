//! A blocking client for one-shot work: the operator's commands (`meshc publish`,
//! `meshc artifacts build --remote`), observers of status reports, and tests. One
//! connection, one confirmed channel (reopened after a channel error), its own small
//! runtime. Does not reconnect: a one-shot command reports the failure and is run
//! again (publishing a plan twice is harmless: the listener acknowledges a plan it has
//! already applied without work).

use std::time::Duration;

use futures_lite::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicGetOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, Consumer};

use crate::connection::{self, Error};
use crate::consume;
use crate::message::{Incoming, Outgoing};
use crate::names;

pub struct Client {
    runtime: tokio::runtime::Runtime,
    connection: Connection,
    channel: Channel,
    app: String,
}

/// A private queue bound to the exchange, consumed as messages arrive.
pub struct Subscription {
    pub queue: String,
    consumer: Consumer,
}

impl Client {
    /// Connects to `url`; `app` names the publisher in the messages' `app_id`. Gives
    /// up when the connection is not open within the URL's `connection_timeout`
    /// (default [`connection::DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect(url: &str, app: &str) -> Result<Client, Error> {
        Client::connect_within(url, app, None)
    }

    /// [`Client::connect`], giving up after `limit` if that is sooner.
    pub fn connect_within(url: &str, app: &str, limit: Option<Duration>) -> Result<Client, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|error| Error::new(format!("cannot start the async runtime: {error}")))?;
        let (connection, channel) = runtime.block_on(async {
            let connection = connection::connect(url, app, limit).await?;
            let channel = connection::confirmed_channel(&connection).await?;
            Ok::<_, Error>((connection, channel))
        })?;
        Ok(Client {
            runtime,
            connection,
            channel,
            app: app.to_string(),
        })
    }

    /// The channel, reopened if the broker closed it after an error.
    fn channel(&mut self) -> Result<Channel, Error> {
        if !self.channel.status().connected() {
            self.channel = self
                .runtime
                .block_on(connection::confirmed_channel(&self.connection))?;
        }
        Ok(self.channel.clone())
    }

    /// Declares the exchange, the build queue and the queues of `nodes`.
    pub fn declare_topology(&mut self, nodes: &[&str]) -> Result<(), Error> {
        let channel = self.channel()?;
        self.runtime
            .block_on(connection::declare_topology(&channel, nodes))
    }

    /// Publishes one message to the `mesh` exchange and waits for its confirm.
    pub fn publish(&mut self, outgoing: &Outgoing) -> Result<(), Error> {
        let channel = self.channel()?;
        let app = self.app.clone();
        self.runtime
            .block_on(connection::publish_confirmed(&channel, outgoing, &app))
    }

    /// Publishes every message (mandatory: each must reach a queue), then waits for
    /// their confirms; one result per message, in order.
    pub fn publish_all(&mut self, messages: &[Outgoing]) -> Result<Vec<Result<(), Error>>, Error> {
        let channel = self.channel()?;
        let app = self.app.clone();
        self.runtime.block_on(async {
            let mut pending = Vec::with_capacity(messages.len());
            for outgoing in messages {
                pending.push(connection::publish(&channel, outgoing, &app, true).await);
            }
            let mut results = Vec::with_capacity(messages.len());
            for (outgoing, published) in messages.iter().zip(pending) {
                let what = format!("`{}`", outgoing.routing_key);
                results.push(match published {
                    Ok(confirm) => connection::confirmed(confirm, &what).await,
                    Err(error) => Err(error),
                });
            }
            Ok(results)
        })
    }

    /// Declares a durable queue bound to the exchange (declared too) with
    /// `binding_key`, for an observer that must not miss messages while it is away
    /// (status reports, build results).
    pub fn declare_observer(&mut self, queue: &str, binding_key: &str) -> Result<(), Error> {
        let channel = self.channel()?;
        self.runtime.block_on(async {
            connection::declare_exchange(&channel).await?;
            channel
                .queue_declare(
                    queue.into(),
                    QueueDeclareOptions {
                        durable: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await?;
            channel
                .queue_bind(
                    queue.into(),
                    names::EXCHANGE.into(),
                    binding_key.into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
            Ok(())
        })
    }

    /// Takes one message from `queue` (acknowledged), if there is one.
    pub fn get(&mut self, queue: &str) -> Result<Option<Incoming>, Error> {
        let channel = self.channel()?;
        self.runtime.block_on(async {
            let Some(message) = channel
                .basic_get(queue.into(), BasicGetOptions::default())
                .await?
            else {
                return Ok(None);
            };
            let incoming = incoming_of(&message.delivery);
            message.delivery.ack(BasicAckOptions::default()).await?;
            Ok(Some(incoming))
        })
    }

    /// How many messages wait in `queue` (not counting those delivered and not yet
    /// acknowledged).
    pub fn message_count(&mut self, queue: &str) -> Result<u32, Error> {
        let channel = self.channel()?;
        self.runtime.block_on(consume::check_queue(&channel, queue))
    }

    /// Starts consuming `queue`, as a node or builder would, and stops again: `Ok` if
    /// the broker allows it.
    pub fn try_consume(&mut self, queue: &str) -> Result<(), Error> {
        let channel = self.channel()?;
        self.runtime.block_on(async {
            let consumer = channel
                .basic_consume(
                    queue.into(),
                    "".into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await
                .map_err(|error| Error::new(format!("cannot consume from `{queue}`: {error}")))?;
            channel
                .basic_cancel(
                    consumer.tag(),
                    lapin::options::BasicCancelOptions::default(),
                )
                .await?;
            Ok(())
        })
    }

    /// A private queue (named by the broker, gone with the connection) bound with
    /// `binding_key`, consumed without acknowledgements.
    pub fn subscribe(&mut self, binding_key: &str) -> Result<Subscription, Error> {
        let channel = self.channel()?;
        self.runtime.block_on(async {
            let queue = channel
                .queue_declare(
                    "".into(),
                    QueueDeclareOptions {
                        exclusive: true,
                        auto_delete: true,
                        ..QueueDeclareOptions::default()
                    },
                    FieldTable::default(),
                )
                .await?;
            let queue = queue.name().to_string();
            channel
                .queue_bind(
                    queue.as_str().into(),
                    names::EXCHANGE.into(),
                    binding_key.into(),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
            let consumer = channel
                .basic_consume(
                    queue.as_str().into(),
                    "".into(),
                    BasicConsumeOptions {
                        no_ack: true,
                        ..BasicConsumeOptions::default()
                    },
                    FieldTable::default(),
                )
                .await?;
            Ok(Subscription { queue, consumer })
        })
    }

    /// The next message of `subscription`, or `None` when `timeout` passed first.
    pub fn next(
        &self,
        subscription: &mut Subscription,
        timeout: Duration,
    ) -> Result<Option<Incoming>, Error> {
        self.runtime.block_on(async {
            match tokio::time::timeout(timeout, subscription.consumer.next()).await {
                Err(_elapsed) => Ok(None),
                Ok(None) => Err(Error::new("the broker cancelled the subscription")),
                Ok(Some(Err(error))) => Err(Error::new(format!(
                    "the connection to the broker failed: {error}"
                ))),
                Ok(Some(Ok(delivery))) => Ok(Some(incoming_of(&delivery))),
            }
        })
    }

    /// Closes the connection politely.
    pub fn close(self) {
        let Client {
            runtime,
            connection,
            ..
        } = self;
        runtime.block_on(async {
            let _closed = connection.close(200, "done".into()).await;
        });
    }
}

/// The parts of a delivery the handlers see.
pub fn incoming_of(delivery: &lapin::message::Delivery) -> Incoming {
    Incoming {
        body: delivery.data.clone(),
        routing_key: delivery.routing_key.to_string(),
        message_id: delivery
            .properties
            .message_id()
            .as_ref()
            .map(ToString::to_string),
        correlation_id: delivery
            .properties
            .correlation_id()
            .as_ref()
            .map(ToString::to_string),
        kind: delivery.properties.kind().as_ref().map(ToString::to_string),
        redelivered: delivery.redelivered,
        published_ms: connection::published_ms(&delivery.properties),
    }
}

/// Waits up to `timeout` in total for messages on `subscription` until `done` says
/// enough; returns what came.
pub fn collect_until(
    client: &Client,
    subscription: &mut Subscription,
    timeout: Duration,
    mut done: impl FnMut(&[Incoming]) -> bool,
) -> Result<Vec<Incoming>, Error> {
    let deadline = std::time::Instant::now() + timeout;
    let mut received = Vec::new();
    while !done(&received) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        if let Some(message) = client.next(subscription, left)? {
            received.push(message);
        }
    }
    Ok(received)
}
