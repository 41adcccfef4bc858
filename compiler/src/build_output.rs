//! A build output read back (`OUT/manifest.json`, `OUT/nodes/NODE.json`), as
//! `meshc diff`, `meshc publish` and `meshc deploy` read it: E408, the one diagnostic
//! for an output that cannot be read as `meshc build` wrote it, and the manifest's
//! plan digest of each node. Must not decide what to tell the user to do: the help
//! line is the reading command's. Every file is read beneath a handle on the output
//! opened once ([`BuildOutput`]): a regular file only, never through a link and never
//! waiting on a FIFO, as `meshc build` writes them.
//!
//! Invariant: once the manifest has been kept ([`BuildOutput::keep_manifest`]),
//! every read of it gives the bytes kept: what was judged of it (`meshc diff` and
//! `meshc publish` ask whether this user's build wrote it) is what is used, and
//! each plan is read against the digest those bytes give it.

use std::collections::BTreeMap;
use std::path::Path;

use lang::{Diagnostic, codes};

use crate::confined::Beneath;

/// A build output directory, opened once (the directory itself is the user's to
/// name and may be reached through a link; nothing below it is).
#[derive(Debug)]
pub struct BuildOutput {
    directory: Beneath,
    /// The manifest as it was read once and kept (`Some(None)`: there was none).
    manifest: Option<Option<Vec<u8>>>,
}

impl BuildOutput {
    /// Opens the output `out`; a failure is E408 with the help line `help`.
    pub fn open(out: &Path, help: &str) -> Result<BuildOutput, Diagnostic> {
        let directory = Beneath::open(out, false).map_err(|e| unreadable(out, e, help))?;
        Ok(BuildOutput {
            directory,
            manifest: None,
        })
    }

    /// Reads the manifest's bytes once and keeps them (None: there is none): from
    /// now on the manifest is these bytes, whatever the directory holds later.
    /// Anything but a regular file there (a link, a FIFO), or one of more than
    /// `limit` bytes (not read), is an error.
    pub fn keep_manifest(&mut self, limit: u64) -> std::io::Result<Option<&[u8]>> {
        if self.manifest.is_none() {
            let read = self
                .directory
                .read_stamped_if(Path::new(MANIFEST), |stamp| match stamp.2 > limit {
                    true => Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("the manifest is larger than {limit} bytes"),
                    )),
                    false => Ok(()),
                })?;
            self.manifest = Some(read.map(|(bytes, _)| bytes));
        }
        Ok(self.manifest.as_ref().and_then(Option::as_deref))
    }

    /// Whether the output holds a manifest: the kept one, if one was kept.
    pub fn has_manifest(&self) -> bool {
        match &self.manifest {
            Some(kept) => kept.is_some(),
            None => self.holds(MANIFEST),
        }
    }

    /// Whether the output holds anything named `name` (not followed if a link).
    pub fn holds(&self, name: &str) -> bool {
        self.directory.holds(name)
    }

    pub fn path(&self) -> &Path {
        self.directory.path()
    }

    /// The bytes of the output's regular file `relative` (`manifest.json`); a
    /// missing one, a link, a FIFO or anything but a regular file is E408.
    pub fn read(&self, relative: &str, help: &str) -> Result<Vec<u8>, Diagnostic> {
        let path = self.path().join(relative);
        let read = match &self.manifest {
            Some(kept) if relative == MANIFEST => Ok(kept.clone()),
            _ => self.directory.read(Path::new(relative)),
        };
        match read {
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
            &self.path().join(MANIFEST),
            &self.read(MANIFEST, help)?,
            help,
        )
    }
}

/// The manifest's name in a build output.
const MANIFEST: &str = "manifest.json";

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

    /// A manifest kept once is the one every later read gives, whatever takes its
    /// place in the directory (what was judged is what is used); an output kept
    /// without one has none, even when one appears later.
    #[test]
    fn a_kept_manifest_is_the_one_read_whatever_takes_its_place() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let manifest = |node: &str| {
            format!(
                "{{\"format\":\"{}\",\"nodes\":{{\"{node}\":\"sha256:ab\"}}}}",
                crate::emit::MANIFEST_FORMAT
            )
        };
        let replace = |text: &str| {
            let new = directory.path().join("manifest.json.new");
            std::fs::write(&new, text).expect("written");
            std::fs::rename(&new, directory.path().join(MANIFEST)).expect("renamed");
        };
        replace(&manifest("judged"));
        // one over the limit is refused, and nothing is kept
        let mut output = BuildOutput::open(directory.path(), "help").expect("opened");
        assert!(output.keep_manifest(8).is_err());
        assert!(output.has_manifest());
        let mut output = BuildOutput::open(directory.path(), "help").expect("opened");
        let kept = output
            .keep_manifest(1 << 20)
            .expect("read")
            .map(<[u8]>::to_vec);
        assert_eq!(kept.as_deref(), Some(manifest("judged").as_bytes()));
        replace(&manifest("swapped"));
        let read = output.manifest("help").expect("the kept manifest");
        assert_eq!(read.digests.keys().collect::<Vec<_>>(), ["judged"]);
        assert!(output.has_manifest());
        // a fresh handle reads what is there now
        let fresh = BuildOutput::open(directory.path(), "help").expect("opened");
        assert_eq!(
            fresh
                .manifest("help")
                .expect("read")
                .digests
                .keys()
                .collect::<Vec<_>>(),
            ["swapped"]
        );

        let empty = tempfile::tempdir().expect("temporary directory");
        let mut output = BuildOutput::open(empty.path(), "help").expect("opened");
        assert_eq!(output.keep_manifest(1 << 20).expect("read"), None);
        std::fs::write(empty.path().join(MANIFEST), manifest("late")).expect("written");
        assert!(!output.has_manifest());
        let refused = output.manifest("help").err().expect("none was kept");
        assert_eq!(refused.code, codes::BUILD_UNREADABLE);
        assert!(output.holds(MANIFEST));
        // a link is held, not followed, and never read as the manifest
        let linked = tempfile::tempdir().expect("temporary directory");
        std::os::unix::fs::symlink(empty.path().join(MANIFEST), linked.path().join(MANIFEST))
            .expect("linked");
        let mut output = BuildOutput::open(linked.path(), "help").expect("opened");
        assert!(output.holds(MANIFEST));
        assert!(output.keep_manifest(1 << 20).is_err());
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
