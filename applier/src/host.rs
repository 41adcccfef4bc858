//! The host the plan is applied to: the live system (`/`) or a tree under `--root`.
//! Maps node paths into it and runs the host's own tools. Must not decide anything
//! about shapes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::codes::Code;
use crate::problem::Problem;

#[derive(Clone, Debug)]
pub struct Host {
    /// `/` on the live host, the canonical `--root` otherwise.
    root: PathBuf,
    live: bool,
}

impl Host {
    pub fn new(root: Option<&Path>) -> Host {
        match root {
            Some(root) => Host {
                root: root.to_path_buf(),
                live: false,
            },
            None => Host {
                root: PathBuf::from("/"),
                live: true,
            },
        }
    }

    /// Is this the running system (services are started), rather than a `--root` tree?
    pub fn is_live(&self) -> bool {
        self.live
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a node path (`/etc/motd`) is on this host.
    pub fn path(&self, node_path: &str) -> PathBuf {
        self.root.join(node_path.trim_start_matches('/'))
    }

    /// The mesh state directory (`/var/lib/mesh`) on this host.
    pub fn state_directory(&self) -> PathBuf {
        self.path("/var/lib/mesh")
    }

    /// The `--root`/`--prefix` style argument for tools, when not live.
    pub fn offline_root(&self) -> Option<&Path> {
        if self.live { None } else { Some(&self.root) }
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
