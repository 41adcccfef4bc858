//! The `directory` shape on the host: create it with owner and mode, or fix owner and
//! mode. Never deletes a directory or anything in it, not even when withdrawn.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use crate::Planned;
use crate::accounts::Accounts;
use crate::codes::Code;
use crate::durable;
use crate::problem::Problem;

pub fn inspect(
    host_path: &Path,
    mode: u32,
    owner: &str,
    group: &str,
    accounts: &Accounts,
) -> Result<Planned, Problem> {
    let metadata = match std::fs::symlink_metadata(host_path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Planned::Create),
        Err(error) => return Err(Problem::filesystem("inspect", host_path, &error)),
    };
    if !metadata.is_dir() {
        return Err(Problem::new(
            Code::InTheWay,
            format!(
                "a file or symlink not managed by this plan is in the way at `{}`",
                host_path.display()
            ),
            "move it away by hand (mesh replaces only what it manages), then apply again",
        ));
    }
    let mut details = Vec::new();
    let current_mode = metadata.permissions().mode() & 0o7777;
    if current_mode != mode {
        details.push(format!("mode {current_mode:04o} -> {mode:04o}"));
    }
    if accounts.uid(owner) != Some(metadata.uid()) {
        details.push(format!("owner -> `{owner}`"));
    }
    if accounts.gid(group) != Some(metadata.gid()) {
        details.push(format!("group -> `{group}`"));
    }
    Ok(if details.is_empty() {
        Planned::Unchanged
    } else {
        Planned::change(details)
    })
}

/// Creates the directory if absent, then sets owner and mode (never through a symlink).
pub fn apply(host_path: &Path, mode: u32, uid: u32, gid: u32) -> Result<(), Problem> {
    match std::fs::DirBuilder::new().mode(0o700).create(host_path) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => {
            return Err(Problem::filesystem(
                "create the directory",
                host_path,
                &error,
            ));
        }
    }
    durable::set_owner_and_mode(host_path, true, mode, uid, gid)
        .map_err(|error| Problem::filesystem("set owner and mode of", host_path, &error))
}
