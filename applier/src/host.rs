//! The host the plan is applied to: the live system (`/`) or a tree under `--root`.
//! Holds the confined layer every path goes through, names node paths for messages and
//! host tools, and runs the host's own tools. Must not decide anything about shapes,
//! and must not touch a path but through [`Confined`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use crate::codes::Code;
use crate::confined::{Confined, Resolution};
use crate::problem::Problem;

/// The node path of the applier's state (record, lock, received plans), which no
/// shape may own (`plan::check::shape_path`).
pub const STATE_DIRECTORY: &str = plan::check::STATE_DIRECTORY;

#[derive(Clone, Debug)]
pub struct Host {
    /// `/` on the live host, the canonical `--root` otherwise.
    root: PathBuf,
    live: bool,
    fs: Arc<Confined>,
}

impl Host {
    /// Opens the root once: beneath `--root` symlinks are followed only where root
    /// alone can have placed them, on the live host none (`RESOLVE_NO_SYMLINKS`); see
    /// [`Resolution`]. A kernel without `openat2` is refused (E522).
    pub fn new(root: Option<&Path>) -> Result<Host, Problem> {
        let (root, live, resolution) = match root {
            Some(root) => (root.to_path_buf(), false, Resolution::InRoot),
            None => (PathBuf::from("/"), true, Resolution::NoSymlinks),
        };
        let fs = Confined::open(&root, resolution).map_err(|error| root_problem(&root, &error))?;
        Ok(Host {
            root,
            live,
            fs: Arc::new(fs),
        })
    }

    /// The confined layer: every filesystem operation on this host goes through it.
    pub fn fs(&self) -> &Confined {
        &self.fs
    }

    /// Is this the running system (services are started), rather than a `--root` tree?
    pub fn is_live(&self) -> bool {
        self.live
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a node path (`/etc/motd`) is on this host: for messages and host tools,
    /// never to be opened by name.
    pub fn path(&self, node_path: &str) -> PathBuf {
        self.root.join(node_path.trim_start_matches('/'))
    }

    /// The mesh state directory (`/var/lib/mesh`) on this host, for messages.
    pub fn state_directory(&self) -> PathBuf {
        self.path(STATE_DIRECTORY)
    }

    /// The `--root`/`--prefix` style argument for tools, when not live.
    pub fn offline_root(&self) -> Option<&Path> {
        if self.live { None } else { Some(&self.root) }
    }
}

/// Why the root could not be opened: E522 when the kernel has no `openat2` (the layer
/// fails closed rather than walk paths by name), else E517.
fn root_problem(root: &Path, error: &std::io::Error) -> Problem {
    if crate::confined::is_unavailable(error) {
        Problem::new(
            Code::ConfinementUnavailable,
            format!(
                "this kernel cannot resolve paths confined beneath `{}` (`openat2`: {error})",
                root.display()
            ),
            "run mesh-apply on Linux 5.6 or later, outside any sandbox that refuses `openat2`",
        )
    } else {
        Problem::filesystem("open the root", root, error)
    }
}

/// Runs a host tool, capturing its output; a non-zero exit is an E516 problem that
/// shows the command and what it printed.
pub fn run_tool(program: &str, arguments: &[String]) -> Result<String, Problem> {
    let command_line = format!("{program} {}", arguments.join(" "));
    let output = Command::new(program)
        .args(arguments)
        .env("LC_ALL", "C")
        .output()
        .map_err(|error| {
            Problem::new(
                Code::HostToolFailed,
                format!("cannot run `{command_line}`: {error}"),
                format!("install `{program}` or put it on PATH"),
            )
        })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        let printed = String::from_utf8_lossy(&output.stderr).trim().to_string();
        Err(Problem::new(
            Code::HostToolFailed,
            format!("`{command_line}` failed ({}): {printed}", output.status),
            "read the tool's message above; fix the host or the plan, then apply again",
        ))
    }
}

/// Is `program` on PATH?
pub fn has_tool(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|directory| directory.join(program).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_openat2_is_refused_with_e522() {
        let missing = std::io::Error::from(rustix::io::Errno::NOSYS);
        let problem = root_problem(Path::new("/srv/image"), &missing);
        assert_eq!(problem.code.as_str(), "E522");
        assert!(problem.message.contains("openat2"), "{}", problem.message);
        let other = std::io::Error::from(rustix::io::Errno::NOENT);
        assert_eq!(
            root_problem(Path::new("/srv/image"), &other).code.as_str(),
            "E517"
        );
    }
}
