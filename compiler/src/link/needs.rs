//! Placing needs: each need of a node made (or found) in the store, sealed to that
//! node, and placed as a `secret` shape at its path; its handle goes to the module's
//! `secrets`. Must not look at any other node's declarations.

use super::store::{self, NOT_YET_MADE};
use super::{Declarations, NodeLink, Placed, SecretMode};
use crate::secrets::Store;

/// Places the needs `declaration` declares into its node's `link`.
pub(super) fn place(
    declaration: &Declarations,
    store: &Store,
    mode: SecretMode,
    link: &mut NodeLink,
) {
    for need in &declaration.needs {
        let sealed = store::sealed(
            store.need(
                &declaration.node,
                &need.module,
                &need.name,
                &declaration.key,
            ),
            mode,
            || NOT_YET_MADE.to_string(),
            || {
                format!(
                    "need `{}` of module `{}` on node `{}`",
                    need.name, need.module, declaration.node
                )
            },
            need.span,
        );
        let sealed = match sealed {
            Ok(sealed) => sealed,
            Err(diagnostic) => {
                link.diagnostics.push(diagnostic);
                continue;
            }
        };
        link.placed.push(Placed {
            resource: plan::Resource::Secret(plan::Secret {
                path: need.path.clone(),
                sealed: sealed.clone(),
                owner: need.owner.clone(),
                group: need.group.clone(),
                mode: need.mode.clone(),
            }),
            module: need.module.clone(),
            source: need.source.clone(),
            span: need.span,
        });
        link.secrets
            .insert((need.module.clone(), need.name.clone()), sealed);
    }
}
