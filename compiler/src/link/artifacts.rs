//! Artifact digests: each directory a node's modules ship, archived once per link
//! (shared by every node that declares it) and checked against its digest in
//! `mesh.lock`. Must not write the archive: `meshc artifacts build` does (E307 says so).

use std::collections::BTreeMap;

use lang::{Diagnostic, codes};

use super::{Artifact, Declarations, NodeLink};
use crate::artifacts::{self, BuildError};
use crate::lock::Lock;

/// Each artifact directory's digest as archived now, computed once per link.
pub(super) type Built = BTreeMap<String, Result<String, BuildError>>;

/// Checks the artifacts `declaration` declares into its node's `link`.
pub(super) fn check(
    declaration: &Declarations,
    lock: &Lock,
    built: &mut Built,
    link: &mut NodeLink,
) {
    for artifact in &declaration.artifacts {
        let result = built
            .entry(artifact.directory.clone())
            .or_insert_with(|| artifacts::build_checked(&artifact.absolute).map(|b| b.digest))
            .clone();
        let digest = match result {
            Ok(digest) => digest,
            Err(BuildError::EscapingLink(escaping)) => {
                link.diagnostics.push(escaping_link(artifact, &escaping));
                continue;
            }
            Err(BuildError::Other(reason)) => {
                link.diagnostics.push(
                    Diagnostic::error(
                        codes::UNBUILT_ARTIFACT,
                        format!(
                            "artifact `{}` of module `{}` cannot be archived: {reason}",
                            artifact.name, artifact.module
                        ),
                    )
                    .with_primary(artifact.span, "declared here")
                    .with_help(
                        "the directory must exist and hold only files, directories and links",
                    ),
                );
                continue;
            }
        };
        match lock.artifacts.get(&artifact.directory) {
            Some(locked) if *locked == digest => {
                link.artifacts.insert(
                    (artifact.module.clone(), artifact.name.clone()),
                    (artifacts::file_name(&digest), digest),
                );
            }
            Some(_) => link.diagnostics.push(
                Diagnostic::error(
                    codes::UNBUILT_ARTIFACT,
                    format!(
                        "artifact `{}` of module `{}` changed since it was built ({})",
                        artifact.name, artifact.module, artifact.directory
                    ),
                )
                .with_primary(artifact.span, "declared here")
                .with_help("build it again: `meshc artifacts build`"),
            ),
            None => link.diagnostics.push(
                Diagnostic::error(
                    codes::UNBUILT_ARTIFACT,
                    format!(
                        "artifact `{}` of module `{}` has not been built ({})",
                        artifact.name, artifact.module, artifact.directory
                    ),
                )
                .with_primary(artifact.span, "declared here")
                .with_help("build it: `meshc artifacts build`"),
            ),
        }
    }
}

/// An artifact whose directory holds a link that leaves it: refused before packing,
/// since unpacking it on a node would reach outside the archive's directory.
fn escaping_link(artifact: &Artifact, escaping: &artifacts::EscapingLink) -> Diagnostic {
    Diagnostic::error(
        codes::ARTIFACT_LINK_ESCAPES,
        format!(
            "artifact `{}` of module `{}` cannot be archived: in `{}`, {escaping}",
            artifact.name, artifact.module, artifact.directory
        ),
    )
    .with_primary(artifact.span, "declared here")
    .with_help(format!(
        "links of an artifact must resolve inside its directory (following its other links): change or remove `{}/{}`",
        artifact.directory,
        plan::display::escaped(&escaping.path.to_string_lossy())
    ))
}
