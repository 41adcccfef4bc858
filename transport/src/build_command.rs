//! The command line of `mesh-build`, defined once with clap: read by the binary
//! (`src/bin/mesh-build.rs`) and by the book's check of its commands chapter. Must not
//! run anything, and gives no default broker or store: both are required.

use std::path::PathBuf;

use clap::Parser;

use crate::names;

/// The builder: builds the artifacts requested on the build queue (`mesh.builds`),
/// one at a time, from its own checkout of the repository; stores each archive
/// content-addressed in the store, keeps every result (failures included) in
/// STORE/builds.jsonl, and answers through the `mesh` exchange with the request's
/// correlation id. While the broker cannot be reached it says so on standard error at
/// every retry.
#[derive(Debug, Parser)]
#[command(
    name = "mesh-build",
    version,
    arg_required_else_help = true,
    args_override_self = true,
    after_help = "\
Examples:
  MESH_AMQP_URL=amqp://builder:secret@broker:5672/%2f mesh-build --repo /srv/mesh --store /var/lib/mesh/builds
  mesh-build --amqp amqp://127.0.0.1:5672/%2f --repo . --store /tmp/builds    (a local broker, as guest)

A password in `--amqp` is readable by every local user while the builder runs: give
it in MESH_AMQP_URL, from a file only root may read (systemd's EnvironmentFile=).

Exit status: 0 when stopped, 1 on an error, 2 on a usage error."
)]
pub struct Arguments {
    /// The broker to take requests from
    #[arg(long, value_name = "URL", env = names::URL_VARIABLE, hide_env_values = true)]
    pub amqp: String,
    /// The repository checkout that requests name directories of
    #[arg(long, value_name = "DIR")]
    pub repo: PathBuf,
    /// Where archives and the record of every build are kept (for example
    /// /var/lib/mesh/builds)
    #[arg(long, value_name = "DIR")]
    pub store: PathBuf,
    /// The builder's name in results; default: the host name
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
}
