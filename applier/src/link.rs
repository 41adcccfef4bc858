//! The `link` shape on the host: a symlink replaced atomically (a temp link beside it,
//! renamed over it). Never replaces a directory.

use std::io;
use std::path::Path;

use crate::Planned;
use crate::codes::Code;
use crate::durable;
use crate::problem::Problem;

pub fn inspect(host_path: &Path, target: &str) -> Result<Planned, Problem> {
    let metadata = match std::fs::symlink_metadata(host_path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Planned::Create),
        Err(error) => return Err(Problem::filesystem("inspect", host_path, &error)),
    };
    if metadata.is_dir() {
        return Err(Problem::new(
            Code::InTheWay,
            format!("a directory is in the way at `{}`", host_path.display()),
            "mesh never removes a directory (it may hold data): move it away by hand, then apply again",
        ));
    }
    if !metadata.file_type().is_symlink() {
        return Ok(Planned::change(vec!["replaces a file".to_string()]));
    }
    let current = std::fs::read_link(host_path)
        .map_err(|error| Problem::filesystem("read the link", host_path, &error))?;
    if current.as_os_str().as_encoded_bytes() == target.as_bytes() {
        Ok(Planned::Unchanged)
    } else {
        Ok(Planned::change(vec![format!(
            "target `{}` -> `{target}`",
            current.display()
        )]))
    }
}

pub fn apply(host_path: &Path, target: &str) -> Result<(), Problem> {
    durable::replace_with_symlink(host_path, target)
        .map_err(|error| Problem::filesystem("replace the link", host_path, &error))
}
