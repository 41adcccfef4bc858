//! `mesh-provision`: keeps PostgreSQL or RabbitMQ logins in step with the grants
//! manifest the compiler writes on a provider node. Depends on no crate of the
//! workspace: it reads a JSON file and credential files placed by `mesh-apply`, and
//! talks to PostgreSQL (`reconcile`) or RabbitMQ's management API (`rabbitmq`). Must
//! never touch a role or user it does not manage, drop anything, or log a credential.
#![forbid(unsafe_code)]

pub mod codes;
pub mod config;
pub mod credential;
pub mod manifest;
pub mod problem;
pub mod rabbitmq;
pub mod reconcile;
pub mod report;
pub mod run;
mod sql;

pub use codes::Code;
pub use config::{Command, Config, Mode, OutputFormat, Target, parse_arguments};
pub use problem::Problem;
pub use run::run;
