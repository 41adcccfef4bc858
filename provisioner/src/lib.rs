//! `mesh-provision`: keeps PostgreSQL logins in step with the grants manifest the
//! compiler writes on a provider node. Depends on no crate of the workspace: it reads a
//! JSON file and credential files placed by `mesh-apply`, and talks to PostgreSQL.
//! Must never touch a role it does not manage, drop anything, or log a credential.
#![forbid(unsafe_code)]

pub mod config;
pub mod credential;
pub mod manifest;
pub mod reconcile;
pub mod report;
pub mod run;
mod sql;

pub use config::{Command, Config, Mode, OutputFormat, parse_arguments};
pub use run::run;
