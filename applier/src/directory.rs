//! The `directory` shape on the host: create it with owner and mode, or fix owner and
//! mode, through the confined layer (`mkdirat` in the opened parent, then `fchown` and
//! `fchmod` on the directory opened with `O_NOFOLLOW`). Never deletes a directory or
//! anything in it, not even when withdrawn.

use crate::Planned;
use crate::accounts::Accounts;
use crate::codes::Code;
use crate::confined::{Directory, EntryKind, absent};
use crate::host::Host;
use crate::problem::Problem;

/// What applying the directory would change, and the device and inode of the
/// directory found, judged safe to change: in a user's directory it must be hers
/// (E524), refused here before anything changes.
pub fn inspect(
    host: &Host,
    node_path: &str,
    mode: u32,
    owner: &str,
    group: &str,
    accounts: &Accounts,
) -> Result<(Planned, Option<(u64, u64)>), Problem> {
    let shown = host.path(node_path);
    let found = host
        .fs()
        .parent_for_reading(node_path)
        .and_then(|(holder, name)| {
            let Some(entry) = holder.entry(&name)? else {
                return Ok(None);
            };
            if entry.kind == EntryKind::Directory {
                holder.may_have_found(&entry)?;
            }
            Ok(Some(entry))
        });
    let entry = match found {
        Ok(Some(entry)) => entry,
        Ok(None) => return Ok((Planned::Create, None)),
        Err(error) if absent(&error) => return Ok((Planned::Create, None)),
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
    let planned = if details.is_empty() {
        Planned::Unchanged
    } else {
        Planned::change(details)
    };
    Ok((planned, Some((entry.device, entry.inode))))
}

/// Creates the directory if absent, then sets owner and mode on it (never through a
/// symlink; `judged` is what inspection found, see [`Directory::make_directory`]).
/// Returns its parent, for the caller's flush.
pub fn apply(
    host: &Host,
    node_path: &str,
    (mode, uid, gid): (u32, u32, u32),
    judged: Option<(u64, u64)>,
) -> Result<Directory, Problem> {
    let shown = host.path(node_path);
    let (parent, name) = host
        .fs()
        .parent(node_path)
        .map_err(|error| Problem::filesystem("create the directory", &shown, &error))?;
    parent
        .make_directory(&name, (mode, uid, gid), judged)
        .map_err(|error| Problem::filesystem("set owner and mode of", &shown, &error))?;
    Ok(parent)
}

/// Is there a real directory (not a symlink) at `node_path`?
pub fn is_real_directory(host: &Host, node_path: &str) -> bool {
    matches!(host.fs().entry(node_path), Ok(Some(entry)) if entry.kind == EntryKind::Directory)
}
