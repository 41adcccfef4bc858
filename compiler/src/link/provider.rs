//! Choosing the provider of a consumption: the node `from` names if it provides the
//! service, else the only node that provides it; otherwise the diagnostic that says
//! why none can be chosen (E300, E301, E302). One function, used by the link and by
//! `meshc show`, so the two can never disagree. Must not look at the sealed store.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use lang::diagnostic::did_you_mean;
use lang::{Diagnostic, codes};

use super::{Consume, Declarations, Provide};

/// Every `provides` entry of the fleet, by service, in node order.
pub struct Providers<'a> {
    by_service: BTreeMap<&'a str, Vec<(&'a str, &'a Provide)>>,
    nodes: BTreeSet<&'a str>,
}

impl<'a> Providers<'a> {
    pub fn of(declarations: &'a [Arc<Declarations>]) -> Providers<'a> {
        let mut by_service: BTreeMap<&str, Vec<(&str, &Provide)>> = BTreeMap::new();
        for declaration in declarations {
            for provide in &declaration.provides {
                by_service
                    .entry(provide.service.as_str())
                    .or_default()
                    .push((declaration.node.as_str(), provide));
            }
        }
        Providers {
            by_service,
            nodes: declarations.iter().map(|d| d.node.as_str()).collect(),
        }
    }

    /// The provider node and its entry for `consume`, declared on `node`.
    pub fn choose(
        &self,
        node: &str,
        consume: &Consume,
    ) -> Result<(&'a str, &'a Provide), Diagnostic> {
        let candidates: &[(&str, &Provide)] = self
            .by_service
            .get(consume.service.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let names: Vec<&str> = candidates.iter().map(|(node, _)| *node).collect();
        match &consume.from {
            Some(from) => match candidates.iter().find(|(node, _)| node == from) {
                Some(found) => Ok(*found),
                None => Err(self.not_a_provider(node, consume, from, &names)),
            },
            None => match candidates {
                [only] => Ok(*only),
                [] => Err(Diagnostic::error(
                    codes::NO_PROVIDER,
                    format!(
                        "`{}` of module `{}` on node `{node}` consumes `{}`, which no node provides",
                        consume.name, consume.module, consume.service
                    ),
                )
                .with_primary(consume.span, "consumed here")
                .with_help(format!(
                    "assign a module that `provides.{}` to a node",
                    consume.service
                ))),
                several => Err(Diagnostic::error(
                    codes::AMBIGUOUS_PROVIDER,
                    format!(
                        "`{}` of module `{}` on node `{node}` consumes `{}`, which {} nodes provide: {}",
                        consume.name,
                        consume.module,
                        consume.service,
                        several.len(),
                        lang::diagnostic::quoted_few(names)
                    ),
                )
                .with_primary(consume.span, "consumed here")
                .with_help("choose one with `from` (usually a setting of the consuming module, set per node in mesh.nix)")),
            },
        }
    }

    /// E302: `from` names a node that does not provide the service, or no node.
    fn not_a_provider(
        &self,
        node: &str,
        consume: &Consume,
        from: &str,
        names: &[&str],
    ) -> Diagnostic {
        if self.nodes.contains(from) || names.is_empty() {
            let listed = if names.is_empty() {
                format!("no node provides `{}`", consume.service)
            } else {
                provided_by(&consume.service, names)
            };
            Diagnostic::error(
                codes::NOT_A_PROVIDER,
                format!(
                    "`{}` of module `{}` on node `{node}` asks `{from}` for `{}`, which `{from}` does not provide",
                    consume.name, consume.module, consume.service
                ),
            )
            .with_primary(consume.span, "consumed here")
            .with_help(format!(
                "{listed}; set `from` (usually a setting in mesh.nix) to one of them"
            ))
        } else {
            let help = did_you_mean(from, self.nodes.iter().copied())
                .unwrap_or_else(|| provided_by(&consume.service, names));
            Diagnostic::error(
                codes::NOT_A_PROVIDER,
                format!(
                    "`{}` of module `{}` on node `{node}` asks node `{from}` for `{}`, but there is no node `{from}`",
                    consume.name, consume.module, consume.service
                ),
            )
            .with_primary(consume.span, "consumed here")
            .with_help(help)
        }
    }
}

/// "`postgres` is provided by `db1`, `db2`".
fn provided_by(service: &str, nodes: &[&str]) -> String {
    format!(
        "`{service}` is provided by {}",
        lang::diagnostic::quoted_few(nodes)
    )
}
