//! Choosing the provider of a consumption: the node `from` names if it provides the
//! service, else the only node that provides it; otherwise the diagnostic that says
//! why none can be chosen (E300, E301, E302). One function, used by the link and by
//! `meshc show`, so the two can never disagree. Must not look at the sealed store.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use lang::diagnostic::did_you_mean;
use lang::{Diagnostic, codes};

use super::{Consume, Declarations, Provide};

/// Every `provides` entry of the fleet, by service, in node order (a node's own
/// entries in the order it declared them): a consumption that names its provider
/// finds it by binary search, not by a walk of every provider (a fleet where every
/// node consumes from every other took the square of its size to link).
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
        for providers in by_service.values_mut() {
            // stable: a node that provides a service twice keeps its first first
            providers.sort_by_key(|(node, _)| *node);
        }
        Providers {
            by_service,
            nodes: declarations.iter().map(|d| d.node.as_str()).collect(),
        }
    }

    /// The provider node and its entry for `consume`.
    pub fn choose(&self, consume: &Consume) -> Result<(&'a str, &'a Provide), Diagnostic> {
        let candidates: &[(&str, &Provide)] = self
            .by_service
            .get(consume.service.as_str())
            .map(Vec::as_slice)
            .unwrap_or_default();
        // the providers' names, each once (a node may provide a service from two
        // modules), for a diagnostic only
        let names = || {
            let mut names: Vec<&str> = candidates.iter().map(|(node, _)| *node).collect();
            names.dedup();
            names
        };
        match &consume.from {
            Some(from) => {
                let first = candidates.partition_point(|(node, _)| *node < from.as_str());
                match candidates.get(first) {
                    Some(found) if found.0 == from => Ok(*found),
                    _ => Err(self.not_a_provider(consume, from, &names())),
                }
            }
            None => match candidates {
                [only] => Ok(*only),
                [] => Err(Diagnostic::error(
                    codes::NO_PROVIDER,
                    format!(
                        "`{}` of module `{}` consumes `{}`, which no node provides",
                        consume.name, consume.module, consume.service
                    ),
                )
                .with_primary(consume.span, "consumed here")
                .with_help(self.no_provider_help(&consume.service, "a node"))),
                several => Err(Diagnostic::error(
                    codes::AMBIGUOUS_PROVIDER,
                    match names().as_slice() {
                        // one node, from two of its modules
                        [one] => format!(
                            "`{}` of module `{}` consumes `{}`, which node `{one}` provides from {} modules: {}",
                            consume.name,
                            consume.module,
                            consume.service,
                            several.len(),
                            lang::diagnostic::quoted_few(several.iter().map(|(_, provide)| provide.module.as_str()))
                        ),
                        names => format!(
                            "`{}` of module `{}` consumes `{}`, which {} nodes provide: {}",
                            consume.name,
                            consume.module,
                            consume.service,
                            names.len(),
                            lang::diagnostic::quoted_few(names)
                        ),
                    },
                )
                .with_primary(consume.span, "consumed here")
                .with_help("choose one with `from` (usually a setting of the consuming module, set per node in mesh.nix)")),
            },
        }
    }

    /// Whether `consume` names with `from` a node in `failed` (nodes whose
    /// compilation failed, reported, and which declared nothing or less than they
    /// would): its refusal would follow from that node's error.
    pub fn from_failed(consume: &Consume, failed: &BTreeSet<String>) -> bool {
        consume
            .from
            .as_ref()
            .is_some_and(|from| failed.contains(from))
    }

    /// Whether `consume` names no provider and no node that compiled provides
    /// its service, while some nodes failed: one of them may be the provider, so
    /// the error is said with that (and the consumer's shapes, which would fail
    /// for want of the login, are not made), but it is said: a failed node
    /// elsewhere must not hide a service that nobody provides.
    pub fn unprovided_beside_failed(&self, consume: &Consume, failed: &BTreeSet<String>) -> bool {
        consume.from.is_none()
            && !failed.is_empty()
            && self
                .by_service
                .get(consume.service.as_str())
                .is_none_or(Vec::is_empty)
    }

    /// What to do about `service`, which no node provides: the service meant, if
    /// one provided is named like it (`postgresql` for `postgres`), else give
    /// `whom` a module that provides it.
    fn no_provider_help(&self, service: &str, whom: &str) -> String {
        match did_you_mean(service, self.by_service.keys().copied()) {
            Some(similar) => format!(
                "{similar} (no node provides `{service}`; the services provided are {})",
                lang::diagnostic::quoted_few(self.by_service.keys())
            ),
            None => format!(
                "no node provides `{service}`: assign a module that `provides.{service}` to {whom}"
            ),
        }
    }

    /// E302: `from` names a node that does not provide the service, or no node.
    fn not_a_provider(&self, consume: &Consume, from: &str, names: &[&str]) -> Diagnostic {
        if names.is_empty() {
            Diagnostic::error(
                codes::NOT_A_PROVIDER,
                format!(
                    "`{}` of module `{}` asks `{from}` for `{}`, which no node provides",
                    consume.name, consume.module, consume.service
                ),
            )
            .with_primary(consume.span, "consumed here")
            .with_help(self.no_provider_help(&consume.service, &format!("`{from}`")))
        } else if self.nodes.contains(from) {
            let listed = provided_by(&consume.service, names);
            Diagnostic::error(
                codes::NOT_A_PROVIDER,
                format!(
                    "`{}` of module `{}` asks `{from}` for `{}`, which `{from}` does not provide",
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
                    "`{}` of module `{}` asks node `{from}` for `{}`, but there is no node `{from}`",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> plan::Source {
        plan::Source {
            file: "modules/m/module.nix".to_string(),
            line: 1,
            column: 1,
        }
    }

    fn provider(node: &str, modules: &[&str]) -> Arc<Declarations> {
        let provides = modules
            .iter()
            .map(|module| Provide {
                module: module.to_string(),
                service: "postgres".to_string(),
                logins: None,
                owner: "root".to_string(),
                group: "root".to_string(),
                facts: Default::default(),
                span: Default::default(),
                source: source(),
            })
            .collect();
        Arc::new(Declarations {
            node: node.to_string(),
            provides,
            ..Declarations::default()
        })
    }

    fn consume(from: Option<&str>) -> Consume {
        Consume {
            module: "app".to_string(),
            name: "db".to_string(),
            service: "postgres".to_string(),
            from: from.map(str::to_string),
            path: None,
            owner: "root".to_string(),
            group: "root".to_string(),
            mode: "0400".to_string(),
            access: None,
            span: Default::default(),
            source: source(),
        }
    }

    /// `from` finds its node among many providers however the declarations come,
    /// a node that provides the service twice gives its first, and a name that is
    /// no provider is E302 naming the ones there are.
    #[test]
    fn from_finds_its_provider_among_many() {
        let mut declarations: Vec<_> = (0..50)
            .rev()
            .map(|index| provider(&format!("db{index:02}"), &["main"]))
            .collect();
        declarations.push(provider("db25x", &["first", "second"]));
        let providers = Providers::of(&declarations);
        for wanted in ["db00", "db25", "db49"] {
            let (node, _) = providers
                .choose(&consume(Some(wanted)))
                .expect("a provider");
            assert_eq!(node, wanted);
        }
        let (node, provide) = providers
            .choose(&consume(Some("db25x")))
            .expect("a provider");
        assert_eq!((node, provide.module.as_str()), ("db25x", "first"));
        let refused = providers
            .choose(&consume(Some("db2")))
            .expect_err("db2 provides nothing");
        assert_eq!(refused.code, codes::NOT_A_PROVIDER);
        let refused = providers.choose(&consume(None)).expect_err("51 providers");
        assert_eq!(refused.code, codes::AMBIGUOUS_PROVIDER);
        assert!(refused.message.contains("51 nodes"), "{}", refused.message);
        // one node from two of its modules is not "1 nodes"
        let one = [provider("kv1", &["first", "second"])];
        let refused = Providers::of(&one)
            .choose(&consume(None))
            .expect_err("two entries");
        assert!(
            refused
                .message
                .contains("node `kv1` provides from 2 modules: `first`, `second`"),
            "{}",
            refused.message
        );
    }
}
