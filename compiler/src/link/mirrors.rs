//! Pinning mirrors: each upstream reference a node's modules mirror, looked up in
//! `mesh.lock` and named as `REGISTRY/PATH@sha256:...` for `images`. Must not
//! resolve a tag itself: what is not pinned is a diagnostic (E306, E310).

use lang::{Diagnostic, codes};

use super::{Declarations, NodeLink};
use crate::lock::{self, Lock};

/// Pins the mirrors `declaration` declares into its node's `link`.
pub(super) fn pin(
    declaration: &Declarations,
    lock: &Lock,
    registry: Option<&str>,
    link: &mut NodeLink,
) {
    for mirror in &declaration.mirrors {
        let Some(digest) = lock.mirrors.get(&mirror.reference) else {
            link.diagnostics.push(
                Diagnostic::error(
                    codes::UNPINNED_MIRROR,
                    format!(
                        "mirror `{}` of module `{}` ({}) is not pinned",
                        mirror.name, mirror.module, mirror.reference
                    ),
                )
                .with_primary(mirror.span, "mirrored here")
                .with_help(format!(
                    "pin it to the digest you have checked: `meshc lock --pin {}=sha256:<digest>`",
                    mirror.reference
                )),
            );
            continue;
        };
        let Some(registry) = registry else {
            link.diagnostics.push(
                Diagnostic::error(
                    codes::MIRROR_WITHOUT_REGISTRY,
                    format!(
                        "mirror `{}` of module `{}` needs a registry, and the inventory names none",
                        mirror.name, mirror.module
                    ),
                )
                .with_primary(mirror.span, "mirrored here")
                .with_help("set `registry = \"registry.example:5000\";` in mesh.nix: mirrored images are pulled from it"),
            );
            continue;
        };
        link.images.insert(
            (mirror.module.clone(), mirror.name.clone()),
            lock::pinned_image(registry, &mirror.reference, digest),
        );
    }
}
