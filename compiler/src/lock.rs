//! `mesh.lock`: the repository's pins. Each mirrored upstream reference maps to the
//! digest it is pinned to, each artifact directory to the digest of its last build.
//! JSON, sorted, one entry per line, so a pin is a one-line diff.
//!
//! ```json
//! {
//!   "format": "mesh-lock/1",
//!   "mirrors": { "docker.io/library/postgres:16": "sha256:..." },
//!   "artifacts": { "modules/web/site": "sha256:..." }
//! }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use lang::{Diagnostic, codes};

pub const FORMAT: &str = "mesh-lock/1";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lock {
    /// Upstream reference (`registry/path:tag`) -> `sha256:HEX`.
    pub mirrors: BTreeMap<String, String>,
    /// Repository-relative artifact directory -> `sha256:HEX` of its archive.
    pub artifacts: BTreeMap<String, String>,
}

fn invalid(path: &Path, reason: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(codes::INVALID_LOCK, format!("`{}` is not a valid lock file: {reason}", path.display()))
        .with_help("fix it by hand, or delete it and pin again with `meshc lock --pin REF=sha256:...` and `meshc artifacts build`")
}

fn read_map(
    path: &Path,
    value: Option<&serde_json::Value>,
    what: &str,
) -> Result<BTreeMap<String, String>, Diagnostic> {
    let mut map = BTreeMap::new();
    let Some(value) = value else {
        return Ok(map);
    };
    let Some(object) = value.as_object() else {
        return Err(invalid(path, format!("`{what}` is not an object")));
    };
    for (key, digest) in object {
        let Some(digest) = digest.as_str().filter(|d| plan::is_sha256_digest(d)) else {
            return Err(invalid(
                path,
                format!("`{what}.{key}` is not a `sha256:` digest"),
            ));
        };
        map.insert(key.clone(), digest.to_string());
    }
    Ok(map)
}

/// Reads `mesh.lock` of the repository (an absent file is an empty lock).
pub fn read(repository_root: &Path) -> Result<Lock, Diagnostic> {
    // read beneath the repository, never through a link to a file elsewhere
    let text = crate::confined::Beneath::open(repository_root, false)
        .and_then(|repository| repository.read(Path::new("mesh.lock")));
    let text = match text {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(Lock::default()),
        Err(error) => return Err(unreadable(&error)),
    };
    // errors name the file as the operator sees it in the repository
    let path = Path::new("mesh.lock");
    let Unique(value) = serde_json::from_slice(&text).map_err(|error| invalid(path, error))?;
    match value.get("format").and_then(serde_json::Value::as_str) {
        Some(FORMAT) => {}
        other => {
            let found = match other {
                Some(format) => format!("its format is `{format}`"),
                None => "it names no `format`".to_string(),
            };
            return Err(invalid(
                path,
                format!("{found}; this meshc reads `{FORMAT}`"),
            ));
        }
    }
    if let Some(object) = value.as_object()
        && let Some(unknown) = object
            .keys()
            .find(|k| !matches!(k.as_str(), "format" | "mirrors" | "artifacts"))
    {
        return Err(invalid(path, format!("unknown key `{unknown}`")));
    }
    Ok(Lock {
        mirrors: read_map(path, value.get("mirrors"), "mirrors")?,
        artifacts: read_map(path, value.get("artifacts"), "artifacts")?,
    })
}

/// A JSON value none of whose objects gives a key twice. `serde_json::Value` keeps
/// the last of a key given twice, which is what a merge that kept both sides of a
/// conflict in `mesh.lock` gives: one side's pins would be used, and dropped by the
/// next write, without a word. Such a lock is invalid (E308).
struct Unique(serde_json::Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Unique, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<serde_json::Value, E> {
        Ok(value.into())
    }

    fn visit_i64<E>(self, value: i64) -> Result<serde_json::Value, E> {
        Ok(value.into())
    }

    fn visit_u64<E>(self, value: u64) -> Result<serde_json::Value, E> {
        Ok(value.into())
    }

    fn visit_f64<E>(self, value: f64) -> Result<serde_json::Value, E> {
        Ok(value.into())
    }

    fn visit_str<E>(self, value: &str) -> Result<serde_json::Value, E> {
        Ok(value.into())
    }

    fn visit_unit<E>(self) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut items: A,
    ) -> Result<serde_json::Value, A::Error> {
        let mut list = Vec::new();
        while let Some(Unique(item)) = items.next_element()? {
            list.push(item);
        }
        Ok(serde_json::Value::Array(list))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut entries: A,
    ) -> Result<serde_json::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = entries.next_key::<String>()? {
            let Unique(value) = entries.next_value()?;
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{key}` is given twice (a merge conflict resolved by keeping both sides?)"
                )));
            }
            object.insert(key, value);
        }
        Ok(serde_json::Value::Object(object))
    }
}

/// Why `mesh.lock` could not be read or written (`verb`): a link refused, or the
/// system's error.
fn cannot(verb: &str, error: &std::io::Error) -> String {
    if crate::confined::is_link_refusal(error) {
        format!("cannot {verb} `mesh.lock`: it is a symbolic link or passes through one")
    } else {
        format!("cannot {verb} `mesh.lock`: {error}")
    }
}

/// E324: `mesh.lock` is there but cannot be read (a directory by that name, a link,
/// no file descriptor left): not a lock that is wrong, so nothing is said of fixing
/// or deleting it.
fn unreadable(error: &std::io::Error) -> Diagnostic {
    Diagnostic::error(codes::LOCK_UNREADABLE, cannot("read", error)).with_help(
        "`mesh.lock` must be a regular file in the repository (not a directory or a link) that the user running meshc may read, and the process must be able to open files (`ulimit -n`); then run the command again",
    )
}

/// E317: `mesh.lock` cannot be written (a repository directory that cannot be
/// written, a full disk); the pins it was to record are not kept.
fn unwritable(error: &std::io::Error) -> Diagnostic {
    Diagnostic::error(codes::LOCK_UNWRITABLE, cannot("write", error)).with_help(
        "check that the repository directory and its `mesh.lock` can be written (permissions, a disk with room), then run the command again: the new pins were not saved",
    )
}

/// Writes `mesh.lock` (atomically, and only if it changes).
pub fn write(repository_root: &Path, lock: &Lock) -> Result<(), Diagnostic> {
    let value = serde_json::json!({
        "format": FORMAT,
        "mirrors": lock.mirrors,
        "artifacts": lock.artifacts,
    });
    // a value of strings only: writing it cannot fail
    let mut text = serde_json::to_string_pretty(&value).map_err(|error| {
        Diagnostic::bug(format!("`mesh.lock` cannot be written as JSON: {error}"))
    })?;
    text.push('\n');
    let repository = crate::confined::Beneath::open(repository_root, false)
        .map_err(|error| unwritable(&error))?;
    // committed beside the modules and secret to no one: a file that was there keeps
    // its mode, a new one is 0644 (less the umask), like any file an editor writes
    crate::emit::write_if_changed(
        &repository,
        "mesh.lock",
        text.as_bytes(),
        crate::confined::Readers::AsBefore,
    )
    .map_err(|error| unwritable(&error))
}

/// Is `reference` an upstream image reference with a tag or digest, like
/// `docker.io/library/postgres:16`?
pub fn is_upstream_reference(reference: &str) -> bool {
    let (name, tag) = match reference.rsplit_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => match reference.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
            _ => (reference, None),
        },
    };
    tag.is_some_and(|t| !t.is_empty())
        && name.contains('/')
        && name.bytes().all(|b| {
            b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || matches!(b, b'.' | b'/' | b'-' | b'_' | b':')
        })
}

/// The repository path of an upstream reference: `docker.io/library/postgres:16` ->
/// `docker.io/library/postgres`.
pub fn repository_path(reference: &str) -> &str {
    if let Some((name, _)) = reference.rsplit_once('@') {
        return name;
    }
    match reference.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => name,
        _ => reference,
    }
}

/// The pinned image a container names: `REGISTRY/UPSTREAM-PATH@sha256:HEX`.
pub fn pinned_image(registry: &str, reference: &str, digest: &str) -> String {
    format!(
        "{}/{}@{digest}",
        registry.trim_end_matches('/'),
        repository_path(reference)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_pins() {
        assert!(is_upstream_reference("docker.io/library/postgres:16"));
        assert!(is_upstream_reference("ghcr.io/mesh/provision@sha256:abc"));
        assert!(!is_upstream_reference("postgres"));
        assert!(!is_upstream_reference("docker.io/library/postgres"));
        assert_eq!(
            pinned_image(
                "registry.mesh.internal:5000",
                "docker.io/library/postgres:16",
                "sha256:00"
            ),
            "registry.mesh.internal:5000/docker.io/library/postgres@sha256:00"
        );
        assert_eq!(
            repository_path("localhost:5000/app:1"),
            "localhost:5000/app"
        );
    }

    /// A key given twice (both sides of a merge conflict kept) is E308, at any
    /// depth; serde_json's own value kept the last and the lock's next write
    /// dropped the first side's pins.
    #[test]
    fn a_key_given_twice_is_an_invalid_lock() {
        let repository = tempfile::tempdir().expect("temporary directory");
        let pin = "sha256:4eb9e8b3e5bc35e3a3c9a2c07a7c2b06f6c1b8d6e2e7b9a7c0a6a4a3f1d8c2b1";
        for (case, text) in [
            (
                "mirrors twice",
                format!(
                    r#"{{"format":"mesh-lock/1","mirrors":{{"ghcr.io/acme/tool:1":"{pin}"}},"artifacts":{{}},"mirrors":{{"docker.io/library/postgres:16":"{pin}"}}}}"#
                ),
            ),
            (
                "one image pinned twice",
                format!(
                    r#"{{"format":"mesh-lock/1","mirrors":{{"docker.io/library/postgres:16":"{pin}","docker.io/library/postgres:16":"{pin}"}}}}"#
                ),
            ),
        ] {
            std::fs::write(repository.path().join("mesh.lock"), &text).expect("write");
            let error = read(repository.path()).expect_err(case);
            assert_eq!(error.code, codes::INVALID_LOCK, "{case}");
            assert!(
                error.message.contains("is given twice"),
                "{case}: {}",
                error.message
            );
        }
        let text = format!(
            r#"{{"format":"mesh-lock/1","mirrors":{{"docker.io/library/postgres:16":"{pin}"}},"artifacts":{{}}}}"#
        );
        std::fs::write(repository.path().join("mesh.lock"), text).expect("write");
        let lock = read(repository.path()).expect("a valid lock");
        assert_eq!(lock.mirrors.len(), 1);
    }

    /// A lock of another format says which it is and which this meshc reads, in
    /// words: it printed Rust's `Some("mesh-lock/2")`.
    #[test]
    fn a_lock_of_another_format_says_so_plainly() {
        let repository = tempfile::tempdir().expect("temporary directory");
        for (text, said) in [
            (
                r#"{"format":"mesh-lock/2"}"#,
                "its format is `mesh-lock/2`; this meshc reads `mesh-lock/1`",
            ),
            (
                r#"{"mirrors":{}}"#,
                "it names no `format`; this meshc reads `mesh-lock/1`",
            ),
        ] {
            std::fs::write(repository.path().join("mesh.lock"), text).expect("write");
            let error = read(repository.path()).expect_err(text);
            assert_eq!(error.code, codes::INVALID_LOCK);
            assert!(error.message.contains(said), "{}", error.message);
            assert!(!error.message.contains("Some("), "{}", error.message);
        }
    }
}
