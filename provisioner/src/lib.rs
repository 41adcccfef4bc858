//! `mesh-provision`: keeps PostgreSQL or RabbitMQ logins in step with the grants
//! manifest the compiler writes on a provider node. Depends on no crate of the
//! workspace but `problems` (how a binary reports, shared with `mesh-apply`): it
//! reads a JSON file and credential files placed by `mesh-apply`, and talks to PostgreSQL (`reconcile`) or RabbitMQ's management API (`rabbitmq`). Must
//! never touch a role or user it does not manage, drop anything, or log a credential.
#![forbid(unsafe_code)]

pub mod codes;
pub mod config;
pub mod credential;
pub mod manifest;
pub mod rabbitmq;
pub mod reconcile;
pub mod report;
pub mod run;
mod sql;

pub use codes::Code;
pub use config::{Command, Config, Mode, OutputFormat, Target, parse_arguments};
pub use run::run;

/// A problem the provisioner reports: its code, a message that names what it is about
/// (the manifest, a credential file, a login, the server) and a help line that says
/// what to do; rendered by `report`. Must never carry a credential: messages name
/// files and logins, never their content.
pub type Problem = problems::Problem<Code>;
