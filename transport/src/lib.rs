//! transport: mesh over RabbitMQ (lapin). The `mesh` exchange, the queues and routing
//! keys (`names`), the message formats (`message`), connecting and publishing with
//! confirms (`connection`), the supervised consumer that acknowledges only after its
//! work and its replies are done (`consume`), a blocking client for one-shot commands
//! (`client`, `publish`, `remote`), the builder and its record (`builder`; its
//! archives are the `archive` crate's) and the broker permissions (`permissions`).
//!
//! Depends on `plan` and `archive` only among our crates: never on the language, module resolution
//! or the compiler, so a change to how plans are made cannot reach the wire, and the
//! applier (which runs as root and uses this crate for `--listen`) stays small.
#![forbid(unsafe_code)]

pub mod build_command;
pub mod builder;
pub mod client;
pub mod connection;
pub mod consume;
pub mod message;
pub mod names;
pub mod permissions;
pub mod publish;
pub mod remote;

pub use client::Client;
pub use connection::{Backoff, Error, Stop};
pub use consume::{
    Disposition, Handled, Handler, Log, Options, Trouble, Troubles, Worker, serve, serve_async,
};
pub use message::{
    BuildOutcome, BuildRequest, BuildResult, Incoming, Outcome, Outgoing, ReportedError,
    StatusReport,
};
