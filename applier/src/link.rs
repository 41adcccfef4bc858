//! The `link` shape on the host: a symlink made with `symlinkat` as a temp link in its
//! confined parent directory and renamed over the target in that same directory, so the
//! swap is atomic and nothing outside the root is touched. Never replaces a directory.

use crate::Planned;
use crate::codes::Code;
use crate::confined::{self, Directory, EntryKind};
use crate::host::Host;
use crate::problem::Problem;

pub fn inspect(host: &Host, node_path: &str, target: &str) -> Result<Planned, Problem> {
    let shown = host.path(node_path);
    let (directory, name) = match host.fs().parent_for_reading(node_path) {
        Ok(found) => found,
        Err(error) if confined::absent(&error) => return Ok(Planned::Create),
        Err(error) => return Err(Problem::filesystem("inspect", &shown, &error)),
    };
    let entry = match directory.entry(&name) {
        Ok(Some(entry)) => entry,
        Ok(None) => return Ok(Planned::Create),
        Err(error) => return Err(Problem::filesystem("inspect", &shown, &error)),
    };
    if entry.kind == EntryKind::Directory {
        return Err(Problem::new(
            Code::InTheWay,
            format!("a directory is in the way at `{}`", shown.display()),
            "mesh never removes a directory (it may hold data): move it away by hand, then apply again",
        ));
    }
    if entry.kind != EntryKind::Symlink {
        return Ok(Planned::change(vec!["replaces a file".to_string()]));
    }
    let current = directory
        .read_link(&name)
        .map_err(|error| Problem::filesystem("read the link", &shown, &error))?;
    if current == target.as_bytes() {
        Ok(Planned::Unchanged)
    } else {
        Ok(Planned::change(vec![format!(
            "target `{}` -> `{target}`",
            String::from_utf8_lossy(&current)
        )]))
    }
}

/// Replaces whatever non-directory is at `node_path` with a symlink to `target`.
/// Returns the parent, for the caller's flush.
pub fn apply(host: &Host, node_path: &str, target: &str) -> Result<Directory, Problem> {
    let shown = host.path(node_path);
    let (directory, name) = host
        .fs()
        .parent(node_path)
        .map_err(|error| Problem::filesystem("replace the link", &shown, &error))?;
    replace_with_symlink(&directory, &name, target)
        .map_err(|error| Problem::filesystem("replace the link", &shown, &error))?;
    Ok(directory)
}

/// A temp link beside `name`, renamed over it.
pub fn replace_with_symlink(
    directory: &Directory,
    name: &str,
    target: &str,
) -> std::io::Result<()> {
    let temp = confined::temp_name(name);
    directory.remove_scratch_file(&temp, None)?;
    directory.symlink(target, &temp)?;
    directory.rename(&temp, name)
}
