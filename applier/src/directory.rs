//! The `directory` shape on the host: create it with owner and mode, or fix owner and
//! mode, through the confined layer (`mkdirat` in the opened parent, then `fchown` and
//! `fchmod` on the directory opened with `O_NOFOLLOW`). Never deletes a directory or
//! anything in it, not even when withdrawn.

use crate::Planned;
use crate::accounts::Accounts;
use crate::codes::Code;
use crate::confined::{Directory, EntryKind};
use crate::host::Host;
use crate::problem::Problem;

pub fn inspect(
    host: &Host,
    node_path: &str,
    mode: u32,
    owner: &str,
    group: &str,
    accounts: &Accounts,
) -> Result<Planned, Problem> {
    let shown = host.path(node_path);
    let entry = match host.fs().entry(node_path) {
        Ok(Some(entry)) => entry,
        Ok(None) => return Ok(Planned::Create),
        Err(error) => return Err(Problem::filesystem("inspect", &shown, &error)),
    };
    if entry.kind != EntryKind::Directory {
        return Err(Problem::new(
            Code::InTheWay,
            format!(
                "a file or symlink not managed by this plan is in the way at `{}`",
                shown.display()
            ),
            "move it away by hand (mesh replaces only what it manages), then apply again",
        ));
    }
    let mut details = Vec::new();
    if entry.mode != mode {
        details.push(format!("mode {:04o} -> {mode:04o}", entry.mode));
    }
    if accounts.uid(owner) != Some(entry.uid) {
        details.push(format!("owner -> `{owner}`"));
    }
    if accounts.gid(group) != Some(entry.gid) {
        details.push(format!("group -> `{group}`"));
    }
    Ok(if details.is_empty() {
        Planned::Unchanged
    } else {
        Planned::change(details)
    })
}

/// Creates the directory if absent, then sets owner and mode on it (never through a
/// symlink). Returns its parent, for the caller's flush.
pub fn apply(
    host: &Host,
    node_path: &str,
    mode: u32,
    uid: u32,
    gid: u32,
) -> Result<Directory, Problem> {
    let shown = host.path(node_path);
    let (parent, name) = host
        .fs()
        .parent(node_path)
        .map_err(|error| Problem::filesystem("create the directory", &shown, &error))?;
    parent
        .create_directory(&name, 0o700)
        .map_err(|error| Problem::filesystem("create the directory", &shown, &error))?;
    parent
        .set_owner_and_mode(&name, true, mode, uid, gid)
        .map_err(|error| Problem::filesystem("set owner and mode of", &shown, &error))?;
    Ok(parent)
}

/// Is there a real directory (not a symlink) at `node_path`?
pub fn is_real_directory(host: &Host, node_path: &str) -> bool {
    matches!(host.fs().entry(node_path), Ok(Some(entry)) if entry.kind == EntryKind::Directory)
}
