//! Writing systemd unit syntax faithfully: quoting of command lines and environment
//! assignments, and the unit-file handling services and containers share (write,
//! inspect, enable offline, daemon-reload and start on a live host). Must not decide
//! what goes into a unit.

use std::io;
use std::path::{Path, PathBuf};

use crate::durable;
use crate::host::{Host, has_tool, run_tool};
use crate::problem::Problem;

/// One command-line word for `ExecStart=`/`Exec=`: always double-quoted, with `\` and
/// `"` escaped, `%` doubled (specifiers) and `$` doubled (variable expansion).
pub fn quote_word(word: &str) -> String {
    let mut quoted = String::with_capacity(word.len() + 2);
    quoted.push('"');
    for character in word.chars() {
        match character {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '$' => quoted.push_str("$$"),
            '\t' => quoted.push_str("\\t"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

/// A command line: the program written plain when it has only path characters (the
/// usual form), quoted otherwise; every argument quoted.
pub fn command_line(words: &[String]) -> String {
    let mut parts = Vec::with_capacity(words.len());
    for (position, word) in words.iter().enumerate() {
        let plain = word.bytes().all(|byte| {
            byte.is_ascii_alphanumeric()
                || matches!(byte, b'/' | b'.' | b'_' | b'-' | b'+' | b'@' | b',' | b'=')
        });
        if position == 0 && plain && !word.is_empty() {
            parts.push(word.clone());
        } else {
            parts.push(quote_word(word));
        }
    }
    parts.join(" ")
}

/// `"KEY=value"` for `Environment=`, with `\`, `"` escaped and `%` doubled.
pub fn environment_assignment(key: &str, value: &str) -> String {
    let mut quoted = String::from("\"");
    quoted.push_str(key);
    quoted.push('=');
    for character in value.chars() {
        match character {
            '\\' => quoted.push_str("\\\\"),
            '"' => quoted.push_str("\\\""),
            '%' => quoted.push_str("%%"),
            '\t' => quoted.push_str("\\t"),
            other => quoted.push(other),
        }
    }
    quoted.push('"');
    quoted
}

/// `After=` names: a plain name is a mesh service or container (`NAME.service`).
pub fn unit_name(after: &str) -> String {
    if after.contains('.') {
        after.to_string()
    } else {
        format!("{after}.service")
    }
}

/// Is the file at `path` exactly `content`? (Absent is no.)
pub fn has_content(path: &Path, content: &str) -> Result<bool, Problem> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_file() => {
            if metadata.len() != content.len() as u64 {
                return Ok(false);
            }
            std::fs::read(path)
                .map(|bytes| bytes == content.as_bytes())
                .map_err(|error| Problem::filesystem("read", path, &error))
        }
        Ok(_) => Ok(false),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(Problem::filesystem("inspect", path, &error)),
    }
}

/// Writes a unit file (root-owned, 0644) atomically and durably, creating the unit
/// directory (part of the base system) when a bare `--root` tree lacks it.
pub fn write_unit(path: &Path, content: &str) -> Result<(), Problem> {
    if let Some(directory) = path.parent() {
        std::fs::create_dir_all(directory)
            .map_err(|error| Problem::filesystem("create the directory", directory, &error))?;
    }
    durable::write_file_now(path, content.as_bytes(), 0o644)
        .map_err(|error| Problem::filesystem("write", path, &error))
}

/// Removes a unit file (absent is fine).
pub fn remove_unit(path: &Path) -> Result<(), Problem> {
    durable::remove_if_present(&durable::temp_path_for(path))
        .map_err(|error| Problem::filesystem("remove", path, &error))?;
    durable::remove_if_present(path).map_err(|error| Problem::filesystem("remove", path, &error))
}

/// `ROOT/etc/systemd/system`.
pub fn system_unit_directory(host: &Host) -> PathBuf {
    host.path("/etc/systemd/system")
}

/// The `multi-user.target.wants` link that enables `unit`.
pub fn wants_link(host: &Host, unit: &str) -> PathBuf {
    system_unit_directory(host)
        .join("multi-user.target.wants")
        .join(unit)
}

/// Is `unit` enabled (its wants link present)?
pub fn is_enabled(host: &Host, unit: &str) -> bool {
    std::fs::symlink_metadata(wants_link(host, unit))
        .is_ok_and(|metadata| metadata.file_type().is_symlink())
}

/// Enables a unit: `systemctl [--root=ROOT] enable`, or, without systemctl, the wants
/// link it would make.
pub fn enable(host: &Host, unit: &str) -> Result<(), Problem> {
    if has_tool("systemctl") {
        let mut arguments = Vec::new();
        if let Some(root) = host.offline_root() {
            arguments.push(format!("--root={}", root.display()));
        }
        arguments.extend(["enable".to_string(), unit.to_string()]);
        return run_tool("systemctl", &arguments).map(|_| ());
    }
    let link = wants_link(host, unit);
    if let Some(directory) = link.parent() {
        std::fs::create_dir_all(directory)
            .map_err(|error| Problem::filesystem("create the directory", directory, &error))?;
    }
    durable::replace_with_symlink(&link, &format!("/etc/systemd/system/{unit}"))
        .map_err(|error| Problem::filesystem("create the link", &link, &error))
}

/// Disables a unit: removes its wants link, and the wants directory if that left it
/// empty (as `systemctl disable` does).
pub fn disable(host: &Host, unit: &str) -> Result<(), Problem> {
    let link = wants_link(host, unit);
    durable::remove_if_present(&link)
        .map_err(|error| Problem::filesystem("remove", &link, &error))?;
    if let Some(directory) = link.parent()
        && std::fs::read_dir(directory).is_ok_and(|mut entries| entries.next().is_none())
    {
        std::fs::remove_dir(directory)
            .map_err(|error| Problem::filesystem("remove", directory, &error))?;
    }
    Ok(())
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
