//! A build output read back (`OUT/manifest.json`, `OUT/nodes/NODE.json`), as
//! `meshc diff`, `meshc publish` and `meshc deploy` read it: E408, the one diagnostic
//! for an output that cannot be read as `meshc build` wrote it, and the manifest's
//! plan digest of each node. Must not decide what to tell the user to do: the help
//! line is the reading command's. Every file is read beneath a handle on the output
//! opened once ([`BuildOutput`]): a regular file only, never through a link and never
//! waiting on a FIFO, as `meshc build` writes them.

use std::collections::BTreeMap;
use std::path::Path;

use lang::{Diagnostic, codes};

use crate::confined::Beneath;

/// A build output directory, opened once (the directory itself is the user's to
/// name and may be reached through a link; nothing below it is).
#[derive(Debug)]
pub struct BuildOutput {
    directory: Beneath,
}

impl BuildOutput {
    /// Opens the output `out`; a failure is E408 with the help line `help`.
    pub fn open(out: &Path, help: &str) -> Result<BuildOutput, Diagnostic> {
        let directory = Beneath::open(out, false).map_err(|e| unreadable(out, e, help))?;
        Ok(BuildOutput { directory })
    }

    pub fn path(&self) -> &Path {
        self.directory.path()
    }

    /// The bytes of the output's regular file `relative` (`manifest.json`); a
    /// missing one, a link, a FIFO or anything but a regular file is E408.
    pub fn read(&self, relative: &str, help: &str) -> Result<Vec<u8>, Diagnostic> {
        let path = self.path().join(relative);
        match self.directory.read(Path::new(relative)) {
            Ok(Some(bytes)) => Ok(bytes),
            Ok(None) => Err(unreadable(&path, "there is no such file", help)),
            Err(error) => Err(unreadable(&path, error, help)),
        }
    }

    /// The bytes of the plan file of `node` (a node name, as [`Manifest`] checks
    /// them), `nodes/NODE.json`.
    pub fn plan_file(&self, node: &str, help: &str) -> Result<Vec<u8>, Diagnostic> {
        self.read(&format!("nodes/{node}.json"), help)
    }

    /// The output's manifest.
    pub fn manifest(&self, help: &str) -> Result<Manifest, Diagnostic> {
        Manifest::parse(
            &self.path().join("manifest.json"),
            &self.read("manifest.json", help)?,
            help,
        )
    }
}

/// E408: the file at `path` of a build output cannot be read as `meshc build` wrote
/// it, because of `reason`; `help` says what to do, which depends on the command.
pub fn unreadable(
    path: &Path,
    reason: impl std::fmt::Display,
    help: impl Into<String>,
) -> Diagnostic {
    Diagnostic::error(
        codes::BUILD_UNREADABLE,
        format!(
            "cannot read the build `{}`: {reason}",
            plan::display::escaped(&path.display().to_string())
        ),
    )
    .with_help(help)
}

/// A build's `manifest.json`: its format checked, and the plan digest it records
/// for each node.
pub struct Manifest {
    /// The plan digest of each node, by node name (each a valid node name).
    pub digests: BTreeMap<String, String>,
    value: serde_json::Value,
}

impl Manifest {
    /// Reads `OUT/manifest.json` of the build output `out` ([`BuildOutput`]); a
    /// failure is E408 with the help line `help`.
    pub fn read(out: &Path, help: &str) -> Result<Manifest, Diagnostic> {
        BuildOutput::open(out, help)?.manifest(help)
    }

    /// The manifest in `bytes`, read from `path`.
    fn parse(path: &Path, bytes: &[u8], help: &str) -> Result<Manifest, Diagnostic> {
        let path = path.to_path_buf();
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| unreadable(&path, e, help))?;
        if value["format"] != crate::emit::MANIFEST_FORMAT {
            return Err(unreadable(
                &path,
                format!("its format is not {}", crate::emit::MANIFEST_FORMAT),
                help,
            ));
        }
        let Some(nodes) = value["nodes"].as_object() else {
            return Err(unreadable(&path, "it has no `nodes`", help));
        };
        if let Some(node) = nodes
            .iter()
            .find_map(|(node, digest)| (!digest.is_string()).then_some(node))
        {
            return Err(unreadable(
                &path,
                format!(
                    "the plan digest of node `{}` is not a string",
                    plan::display::escaped(node)
                ),
                help,
            ));
        }
        let digests = strings(&value["nodes"]);
        // a node name becomes a path (`nodes/NODE.json`) and is printed: it must be
        // a name, or a hostile manifest could point the reader at any file
        if let Some(node) = digests.keys().find(|node| plan::check::name(node).is_err()) {
            return Err(unreadable(
                &path,
                format!(
                    "it names a node `{}` that is not a valid node name",
                    plan::display::escaped(node)
                ),
                help,
            ));
        }
        Ok(Manifest { digests, value })
    }

    /// The string values of the manifest's object `key` (`keys`: each node's key),
    /// by name; empty when there is none.
    pub(crate) fn strings_of(&self, key: &str) -> BTreeMap<String, String> {
        strings(&self.value[key])
    }

    /// The manifest's field `key` as JSON (`null` when absent).
    pub(crate) fn field(&self, key: &str) -> &serde_json::Value {
        &self.value[key]
    }
}

/// The string values of a JSON object, by key; empty for anything else.
fn strings(value: &serde_json::Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .map(|object| {
            object
                .iter()
                .filter_map(|(name, value)| value.as_str().map(|v| (name.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one E408: the path (whose directory the user may have named with any
    /// bytes) written out where it would move the terminal, the reason, and the
    /// reading command's help line.
    #[test]
    fn e408_names_the_path_escaped_the_reason_and_the_help() {
        let diagnostic = unreadable(
            Path::new("/tmp/a\u{1b}[2Jb/manifest.json"),
            "it is not JSON",
            "build first",
        );
        assert_eq!(diagnostic.code, codes::BUILD_UNREADABLE);
        assert_eq!(
            diagnostic.message,
            "cannot read the build `/tmp/a\\u{1b}[2Jb/manifest.json`: it is not JSON"
        );
        assert_eq!(diagnostic.help.as_deref(), Some("build first"));
    }

    /// A manifest naming a node that is not a name (it would become a path) is E408
    /// with the caller's help, and a readable one gives its nodes' digests.
    #[test]
    fn a_manifest_is_read_with_its_digests_and_refused_with_the_callers_help() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let write = |nodes: &str| {
            std::fs::write(
                directory.path().join("manifest.json"),
                format!(
                    "{{\"format\":\"{}\",\"nodes\":{nodes}}}",
                    crate::emit::MANIFEST_FORMAT
                ),
            )
            .expect("manifest written");
        };
        write("{\"app1\":\"sha256:ab\",\"db1\":\"sha256:cd\"}");
        let manifest = Manifest::read(directory.path(), "deploy again").expect("read");
        assert_eq!(
            manifest.digests.get("app1").map(String::as_str),
            Some("sha256:ab")
        );
        assert_eq!(manifest.digests.len(), 2);
        for (nodes, said) in [
            ("[]", "it has no `nodes`"),
            (
                "{\"app1\":7}",
                "the plan digest of node `app1` is not a string",
            ),
        ] {
            write(nodes);
            let refused = Manifest::read(directory.path(), "deploy again")
                .err()
                .expect("refused");
            assert!(refused.message.ends_with(said), "{}", refused.message);
            assert_eq!(refused.help.as_deref(), Some("deploy again"));
        }
        write("{\"../../etc/passwd\":\"sha256:ab\"}");
        let refused = Manifest::read(directory.path(), "deploy again")
            .err()
            .expect("refused");
        assert_eq!(refused.code, codes::BUILD_UNREADABLE);
        assert_eq!(refused.help.as_deref(), Some("deploy again"));
    }
}
