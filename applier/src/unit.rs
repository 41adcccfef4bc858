//! The unit-file handling services and containers share (write, inspect, enable
//! offline, daemon-reload and start on a live host), all through the confined layer.
//! What goes into a unit, with systemd's quoting, is `plan::unit`'s: the one text
//! `meshc diff` compares too.

use crate::confined::{self, EntryKind};
use crate::file;
use crate::host::{Host, has_tool, run_tool};
use crate::problem::Problem;

/// The base system's unit directory.
pub const SYSTEM_UNIT_DIRECTORY: &str = "/etc/systemd/system";

/// The directory of `multi-user.target.wants` links.
const WANTS_DIRECTORY: &str = "/etc/systemd/system/multi-user.target.wants";

/// Is the file at `node_path` exactly `content`? (Absent is no.)
pub fn has_content(host: &Host, node_path: &str, content: &str) -> Result<bool, Problem> {
    let shown = host.path(node_path);
    let (directory, name) = match host.fs().parent_for_reading(node_path) {
        Ok(found) => found,
        Err(error) if confined::absent(&error) => return Ok(false),
        Err(error) => return Err(Problem::filesystem("inspect", &shown, &error)),
    };
    match directory.entry(&name) {
        Ok(Some(entry)) if entry.kind == EntryKind::File => {
            if entry.size != content.len() as u64 {
                return Ok(false);
            }
            file::has_content(&directory, &name, content.as_bytes())
                .map_err(|error| Problem::filesystem("read", &shown, &error))
        }
        Ok(_) => Ok(false),
        Err(error) => Err(Problem::filesystem("inspect", &shown, &error)),
    }
}

/// Is there anything at `node_path` (a final symlink not followed)?
pub fn exists(host: &Host, node_path: &str) -> Result<bool, Problem> {
    host.fs()
        .entry(node_path)
        .map(|entry| entry.is_some())
        .map_err(|error| Problem::filesystem("inspect", &host.path(node_path), &error))
}

/// Writes a unit file (root-owned, 0644) atomically and durably, creating the unit
/// directory (part of the base system) when a bare `--root` tree lacks it.
pub fn write_unit(host: &Host, node_path: &str, content: &str) -> Result<(), Problem> {
    let shown = host.path(node_path);
    if let Some((directory, _)) = confined::split(node_path) {
        host.fs()
            .create_directories(directory, 0o755)
            .map_err(|error| {
                Problem::filesystem("create the directory", &host.path(directory), &error)
            })?;
    }
    host.fs()
        .write_now(node_path, content.as_bytes(), 0o644)
        .map_err(|error| Problem::filesystem("write", &shown, &error))
}

/// The `multi-user.target.wants` link that enables `unit` (a node path).
pub fn wants_link(unit: &str) -> String {
    format!("{WANTS_DIRECTORY}/{unit}")
}

/// Is `unit` enabled (its wants link present)?
pub fn is_enabled(host: &Host, unit: &str) -> bool {
    matches!(host.fs().entry(&wants_link(unit)), Ok(Some(entry)) if entry.kind == EntryKind::Symlink)
}

/// Enables a unit: on the live host `systemctl enable`; under `--root` (or without
/// systemctl) the wants link it would make, through the confined layer.
pub fn enable(host: &Host, unit: &str) -> Result<(), Problem> {
    if host.is_live() && has_tool("systemctl") {
        return run_tool("systemctl", &["enable".to_string(), unit.to_string()]).map(|_| ());
    }
    let link = wants_link(unit);
    let directory = host
        .fs()
        .create_directories(WANTS_DIRECTORY, 0o755)
        .map_err(|error| {
            Problem::filesystem("create the directory", &host.path(WANTS_DIRECTORY), &error)
        })?;
    crate::link::replace_with_symlink(&directory, unit, &format!("{SYSTEM_UNIT_DIRECTORY}/{unit}"))
        .and_then(|()| directory.sync())
        .map_err(|error| Problem::filesystem("create the link", &host.path(&link), &error))
}

/// Disables a unit mesh enabled: removes its wants link, and the wants directory if
/// that left it empty (as `systemctl disable` does). Only a link to the unit file
/// mesh wrote is its own (what `enable` makes, and `systemctl enable` of that file):
/// a link to another unit of the name (the distribution's `ssh.service`, enabled
/// before a plan declared the name and taken for enabled then) stays, and that unit
/// with it.
pub fn disable(host: &Host, unit: &str) -> Result<(), Problem> {
    let link = wants_link(unit);
    let shown = host.path(&link);
    let directory = match host.fs().directory(WANTS_DIRECTORY) {
        Ok(directory) => directory,
        Err(error) if confined::absent(&error) => return Ok(()),
        Err(error) => return Err(Problem::filesystem("remove", &shown, &error)),
    };
    // no link, or a file there, is removed as before
    if let Ok(target) = directory.read_link(unit)
        && target != format!("{SYSTEM_UNIT_DIRECTORY}/{unit}").as_bytes()
    {
        return Ok(());
    }
    directory
        .remove_file(unit)
        .map_err(|error| Problem::filesystem("remove", &shown, &error))?;
    let units = host
        .fs()
        .directory(SYSTEM_UNIT_DIRECTORY)
        .map_err(|error| Problem::filesystem("open", &host.path(SYSTEM_UNIT_DIRECTORY), &error))?;
    units
        .remove_empty_directory("multi-user.target.wants")
        .map_err(|error| Problem::filesystem("remove", &host.path(WANTS_DIRECTORY), &error))
}

/// `systemctl ARGUMENTS...` on the live host.
pub fn systemctl(arguments: &[&str]) -> Result<String, Problem> {
    let arguments: Vec<String> = arguments
        .iter()
        .map(|argument| argument.to_string())
        .collect();
    run_tool("systemctl", &arguments)
}

/// Is the unit running on the live host?
pub fn is_active(unit: &str) -> bool {
    std::process::Command::new("systemctl")
        .args(["is-active", "--quiet", unit])
        .status()
        .is_ok_and(|status| status.success())
}
