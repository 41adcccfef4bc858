//! When a service or container restarts although its own unit did not change: when
//! a path it names (in its command, environment or mounts) was created or changed.
//! The one rule `mesh-apply` and `meshc diff` share, so that what the diff says
//! will restart is what the applier restarts.

use crate::{Resource, Shape};

/// Does `text` name `path`, as a whole path or a path under it?
pub fn mentions(text: &str, path: &str) -> bool {
    let is_name_byte =
        |byte: u8| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-');
    text.match_indices(path).any(|(start, _)| {
        let before_ok = start == 0
            || text
                .as_bytes()
                .get(start - 1)
                .is_none_or(|byte| !is_name_byte(*byte) && *byte != b'/');
        let after_ok = text
            .as_bytes()
            .get(start + path.len())
            .is_none_or(|byte| !is_name_byte(*byte));
        before_ok && after_ok
    })
}

/// The changed path (one of `changed`) that `shape` names, if it is a service or
/// container that names one: it is restarted for it.
pub fn named_change<'p>(shape: &Shape, changed: &[&'p str]) -> Option<&'p str> {
    let texts: Vec<&str> = match shape.resource() {
        Resource::Service(service) => service
            .exec
            .iter()
            .chain(service.environment.values())
            .map(String::as_str)
            .collect(),
        Resource::Container(container) => container
            .command
            .iter()
            .chain(container.environment.values())
            .map(String::as_str)
            .chain(container.mounts.iter().map(|mount| mount.source.as_str()))
            .collect(),
        _ => return None,
    };
    changed
        .iter()
        .find(|path| texts.iter().any(|text| mentions(text, path)))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::mentions;

    #[test]
    fn whole_paths_only() {
        assert!(mentions("/etc/app.conf", "/etc/app.conf"));
        assert!(mentions("--config=/etc/app.conf", "/etc/app.conf"));
        assert!(mentions("/srv/app/static/x", "/srv/app"));
        assert!(!mentions("/etc/app.confx", "/etc/app.conf"));
        assert!(!mentions("/x/etc/app.conf", "/etc/app.conf"));
        assert!(!mentions("/etc/application", "/etc/app"));
    }
}
