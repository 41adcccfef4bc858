//! `meshc lock`: pin mirrored images in `mesh.lock`. Checks each pin before the file
//! is touched; must not compile the repository.

use std::process::ExitCode;

use clap::Args;

use crate::cli::{ColorWhen, RepositoryArgs};
use crate::say;
use crate::terminal::{self, Failure};

/// Pin a mirrored image to a digest in `mesh.lock`
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  meshc lock --pin docker.io/library/postgres:16=sha256:0123…cdef
  meshc lock --repo examples/homelab --pin REF=sha256:HEX --pin REF2=sha256:HEX2")]
pub struct LockArgs {
    #[command(flatten)]
    pub repository: RepositoryArgs,
    /// An image reference with a tag and the digest to pin it to (repeat for more)
    #[arg(long, value_name = "REF=sha256:HEX", required = true, value_parser = parse_pin)]
    pub pin: Vec<(String, String)>,
}

/// `REF=sha256:HEX`, checked: a reference with a tag and a well-formed digest.
fn parse_pin(pin: &str) -> Result<(String, String), String> {
    let Some((reference, digest)) = pin.rsplit_once('=') else {
        return Err(format!("`{pin}` is not REF=sha256:HEX"));
    };
    if !compiler::is_upstream_reference(reference) {
        return Err(format!(
            "`{reference}` is not an image reference with a tag, like docker.io/library/postgres:16"
        ));
    }
    if !plan::is_sha256_digest(digest) {
        return Err(format!(
            "`{digest}` is not a digest: write sha256: and 64 lowercase hex digits"
        ));
    }
    Ok((reference.to_string(), digest.to_string()))
}

pub fn run(arguments: LockArgs, color: ColorWhen) -> Result<ExitCode, Failure> {
    let root = arguments.repository.checked_root(color)?;
    let mut lock = compiler::read_lock(&root).map_err(|d| terminal::fail_alone(&d, color))?;
    for (reference, digest) in arguments.pin {
        match lock.mirrors.insert(reference.clone(), digest.clone()) {
            Some(previous) if previous != digest => {
                say!("pinned {reference} to {digest} (was {previous})")
            }
            Some(_) => say!("{reference} was already pinned to {digest}"),
            None => say!("pinned {reference} to {digest}"),
        }
    }
    compiler::write_lock(&root, &lock).map_err(|d| terminal::fail_alone(&d, color))?;
    Ok(ExitCode::SUCCESS)
}
