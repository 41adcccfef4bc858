//! mesh-apply: makes one node's plan true on the host. Depends on `plan` only: no
//! language, no compiler. Runs as root, so: no `unwrap`, no panicking indexing, no
//! ignored results outside tests.
#![forbid(unsafe_code)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::let_underscore_must_use
)]
#![cfg_attr(
    test,
    allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod accounts;
pub mod archive;
pub mod base;
pub mod codes;
pub mod config;
pub mod confined;
pub mod container;
pub mod directory;
pub mod durable;
mod execute;
pub mod file;
pub mod generations;
pub mod host;
pub mod identity;
pub mod link;
pub mod listen;
pub mod needs;
pub mod order;
pub mod ownership;
pub mod problem;
pub mod record;
pub mod report;
pub mod run;
pub mod secret;
pub mod service;
pub mod unit;
pub mod user;

pub use config::{Command, Config, OutputFormat, PlanSource, parse_arguments};
pub use report::{Report, ShapeResult, Status};
pub use run::run;

/// What inspection says a shape needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Planned {
    Create,
    /// What differs, for the output (`mode 0644 -> 0600`); never secret content.
    Change(Vec<String>),
    Unchanged,
}

impl Planned {
    pub fn change(details: Vec<String>) -> Planned {
        Planned::Change(details)
    }

    pub fn is_unchanged(&self) -> bool {
        matches!(self, Planned::Unchanged)
    }
}
