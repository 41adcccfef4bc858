//! The `container` shape on the host: a Podman Quadlet file at
//! `/etc/containers/systemd/NAME.container` for the digest-pinned image. The text is
//! checked by our own Quadlet checker (and `quadlet -dryrun` where Podman is installed)
//! before it is written, so Quadlet never silently skips it.

use std::path::PathBuf;

use plan::Container;

use crate::confined::Directory;

use crate::Planned;
use crate::codes::Code;
use crate::host::{Host, run_tool};
use crate::problem::Problem;
use crate::unit;

const QUADLET: &str = "/usr/libexec/podman/quadlet";

/// The Quadlet file's node path (`/etc/containers/systemd/NAME.container`).
pub fn quadlet_path(name: &str) -> String {
    format!("/etc/containers/systemd/{name}.container")
}

/// The service Quadlet generates for the container.
pub fn service_name(name: &str) -> String {
    format!("{name}.service")
}

/// The keys each section may have: exactly what `plan::unit::container_unit` writes.
const ALLOWED_KEYS: &[(&str, &[&str])] = &[
    ("Unit", &["Description"]),
    (
        "Container",
        &[
            "ContainerName",
            "Image",
            "Exec",
            "Environment",
            "Volume",
            "PublishPort",
            "User",
        ],
    ),
    ("Service", &["Restart"]),
    ("Install", &["WantedBy"]),
];

/// Our Quadlet checker: every line a comment, a blank, a known section or a known key
/// of it; one `Image=` pinned by digest; `ContainerName=` the shape's name; volumes two
/// absolute paths and an optional `ro`; ports well formed; no line continuations.
pub fn check_quadlet(name: &str, text: &str) -> Result<(), String> {
    plan::check::name(name)?;
    let mut section: Option<&str> = None;
    let mut images = 0;
    let mut container_name = None;
    for (number, line) in text.lines().enumerate() {
        let line_number = number + 1;
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.ends_with('\\') {
            return Err(format!("line {line_number} continues onto the next"));
        }
        if line
            .bytes()
            .any(|byte| byte.is_ascii_control() && byte != b'\t')
        {
            return Err(format!("line {line_number} has a control character"));
        }
        if let Some(header) = line
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
        {
            if !ALLOWED_KEYS.iter().any(|(known, _)| *known == header) {
                return Err(format!("unknown section `[{header}]`"));
            }
            section = Some(header);
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("line {line_number} is not `Key=value`"));
        };
        let Some(current) = section else {
            return Err(format!(
                "`{key}` on line {line_number} is outside any section"
            ));
        };
        let allowed = ALLOWED_KEYS
            .iter()
            .find(|(known, _)| *known == current)
            .map(|(_, keys)| *keys)
            .unwrap_or(&[]);
        if !allowed.contains(&key) {
            return Err(format!(
                "`{key}` is not a key Quadlet takes in `[{current}]` here"
            ));
        }
        match key {
            "Image" => {
                images += 1;
                plan::container::pinned_image(value)?;
            }
            "ContainerName" => container_name = Some(value.to_string()),
            "Volume" => {
                let parts: Vec<&str> = value.split(':').collect();
                let valid = match parts.as_slice() {
                    [source, target] => {
                        plan::check::node_path(source).is_ok()
                            && plan::check::node_path(target).is_ok()
                    }
                    [source, target, "ro"] => {
                        plan::check::node_path(source).is_ok()
                            && plan::check::node_path(target).is_ok()
                    }
                    _ => false,
                };
                if !valid {
                    return Err(format!(
                        "`Volume={value}` is not `SOURCE:TARGET[:ro]` with absolute paths"
                    ));
                }
            }
            "PublishPort" => plan::container::published_port(value)?,
            "Exec" | "Environment"
                if !(value.starts_with('"') && value.ends_with('"') && value.len() >= 2) =>
            {
                return Err(format!("`{key}={value}` is not quoted"));
            }
            "Restart" if !matches!(value, "always" | "on-failure" | "no") => {
                return Err(format!("`Restart={value}` is not a restart policy"));
            }
            "WantedBy" if value != "multi-user.target" => {
                return Err(format!("`WantedBy={value}` is not `multi-user.target`"));
            }
            _ => {}
        }
    }
    if images != 1 {
        return Err(format!("the unit has {images} `Image=` lines, not one"));
    }
    if container_name.as_deref() != Some(name) {
        return Err(format!("`ContainerName=` is not `{name}`"));
    }
    Ok(())
}

/// Checks the text with our checker and, where Podman is installed, with
/// `quadlet -dryrun` on a copy in a private scratch directory (made fresh, 0700, under
/// an unpredictable name, removed afterwards).
pub fn validate(container: &Container) -> Result<(), Problem> {
    let text = plan::unit::container_unit(container);
    let invalid = |reason: String| {
        Problem::new(
            Code::InvalidContainerUnit,
            format!(
                "the Quadlet unit for container `{}` would be invalid: {reason}",
                container.name
            ),
            "this is a bug in mesh-apply or an unsupported value in the plan; please report it with the plan",
        )
    };
    check_quadlet(&container.name, &text).map_err(invalid)?;
    if quadlet_installed() {
        let base = std::env::temp_dir();
        let (scratch, name, path) = private_scratch(&base)
            .map_err(|error| Problem::filesystem("create a scratch directory in", &base, &error))?;
        let file_name = format!("{}.container", container.name);
        let written = scratch
            .create_fresh(&file_name, 0o600, 0, 0)
            .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
        let output = written.map(|()| {
            std::process::Command::new(QUADLET)
                .arg("-dryrun")
                .env("QUADLET_UNIT_DIRS", &path)
                .output()
        });
        let removed = Directory::open_path(&base).and_then(|base| base.remove_tree(&name));
        let output = output
            .map_err(|error| Problem::filesystem("write", &path.join(&file_name), &error))?
            .map_err(|error| invalid(format!("cannot run `{QUADLET}`: {error}")))?;
        if !output.status.success() {
            return Err(invalid(format!(
                "`quadlet -dryrun` refused it: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        removed.map_err(|error| Problem::filesystem("remove", &path, &error))?;
    }
    Ok(())
}

/// A new directory in `base`, made with `mkdirat` (never an existing one, never through
/// a symlink) mode 0700 under a name no other user can guess (`mkdtemp`).
pub fn private_scratch(base: &std::path::Path) -> std::io::Result<(Directory, String, PathBuf)> {
    use std::hash::{BuildHasher, Hasher};
    let parent = Directory::open_path(base)?;
    let mut attempt = 0u32;
    loop {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u32(attempt);
        let name = format!("mesh-apply-{:016x}", hasher.finish());
        match parent.create_new_directory(&name, 0o700) {
            Ok(()) => {
                let scratch = parent.open_directory(&name)?;
                return Ok((scratch, name.clone(), base.join(&name)));
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 64 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

pub fn inspect(container: &Container, host: &Host) -> Result<Planned, Problem> {
    let path = quadlet_path(&container.name);
    let exists = unit::exists(host, &path)?;
    let same = unit::has_content(host, &path, &plan::unit::container_unit(container))?;
    Ok(match (exists, same) {
        (false, _) => Planned::Create,
        (true, false) => Planned::change(vec!["quadlet".to_string()]),
        (true, true) if host.is_live() && !unit::is_active(&service_name(&container.name)) => {
            Planned::change(vec!["start".to_string()])
        }
        (true, true) => Planned::Unchanged,
    })
}

pub fn apply(container: &Container, host: &Host) -> Result<(), Problem> {
    let path = quadlet_path(&container.name);
    let text = plan::unit::container_unit(container);
    if !unit::has_content(host, &path, &text)? {
        unit::write_unit(host, &path, &text)?;
    }
    Ok(())
}

/// Stops (live) and removes the Quadlet file.
pub fn withdraw(name: &str, host: &Host) -> Result<(), Problem> {
    let service = service_name(name);
    if host.is_live() && unit::is_active(&service) {
        unit::systemctl(&["stop", &service])?;
    }
    crate::file::withdraw(host, &quadlet_path(name))
}

/// Checks that Podman's generator is on the live host before a container is applied.
pub fn podman_present() -> Result<(), Problem> {
    let installed = quadlet_installed();
    let version = if installed {
        Ok(String::new())
    } else {
        run_tool("podman", &["--version".to_string()])
    };
    podman_refusal(installed, version).map_or(Ok(()), Err)
}

/// Is Podman's Quadlet generator (Podman 4.4 and later) installed here?
pub fn quadlet_installed() -> bool {
    std::path::Path::new(QUADLET).is_file()
}

/// Why a live host cannot run containers, if it cannot: no Podman, or a Podman without
/// Quadlet (older than 4.4), whose systemd would never see the units written for it.
fn podman_refusal(quadlet_installed: bool, version: Result<String, Problem>) -> Option<Problem> {
    if quadlet_installed {
        return None;
    }
    match version {
        Err(problem) => Some(problem),
        Ok(version) => Some(Problem::new(
            Code::NoQuadlet,
            format!(
                "`{}` has no Quadlet (`{QUADLET}`), which came with Podman 4.4: systemd would never start this plan's containers",
                version.trim()
            ),
            "install Podman 4.4 or later (Debian 12 ships 4.3: take it from bookworm-backports, or move to Debian 13), then apply again",
        )),
    }
}

/// Said when the plan's container units were checked by mesh-apply's own checker only,
/// because Quadlet is not installed where it runs (an image built with `--root`).
pub fn quadlet_check_skipped() -> Problem {
    Problem::new(
        Code::NoQuadlet,
        format!(
            "`quadlet -dryrun` did not check this plan's container units: `{QUADLET}` is not installed here (Podman older than 4.4, or none); mesh-apply's own checker passed them"
        ),
        "the node itself needs Podman 4.4 or later to run them; apply where Quadlet is installed to have it check the units too",
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use crate::codes::Code;

    #[test]
    fn a_live_host_without_quadlet_is_refused_and_says_which_podman_it_has() {
        assert!(super::podman_refusal(true, Ok(String::new())).is_none());
        let old = super::podman_refusal(false, Ok("podman version 4.3.1\n".to_string()))
            .expect("Podman 4.3 has no Quadlet");
        assert_eq!(old.code, Code::NoQuadlet);
        assert!(
            old.message
                .contains("`podman version 4.3.1` has no Quadlet"),
            "{}",
            old.message
        );
        assert!(old.help.contains("4.4 or later"), "{}", old.help);
        let missing = crate::problem::Problem::new(Code::HostToolFailed, "no podman", "install it");
        let none = super::podman_refusal(false, Err(missing)).expect("no Podman at all");
        assert_eq!(none.code, Code::HostToolFailed);
    }

    #[test]
    fn scratch_directories_are_fresh_private_and_unpredictable() {
        let base = tempfile::tempdir().unwrap();
        let (_first, first_name, first_path) = super::private_scratch(base.path()).unwrap();
        let (_second, second_name, _) = super::private_scratch(base.path()).unwrap();
        assert_ne!(first_name, second_name);
        assert!(!first_name.contains(&std::process::id().to_string()));
        let metadata = std::fs::symlink_metadata(&first_path).unwrap();
        assert!(metadata.is_dir());
        assert_eq!(metadata.permissions().mode() & 0o7777, 0o700);
        // owned by whoever runs the applier, as the base made just now is
        let own = std::fs::metadata(base.path()).unwrap().uid();
        assert_eq!(metadata.uid(), own);
    }
}
