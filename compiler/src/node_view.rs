//! `meshc show`'s view of one node, built from what the pipeline already holds for
//! it: the resolved modules (and who requires them), the settings with the span of
//! the value each got, the collected sets, the link declarations of the fleet and
//! the node's plan. Must not print sealed content or plaintext: credentials and
//! needs are shown as `<secret>` with the path they are placed at.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use lang::{Machine, Value};
use plan::Plan;

use crate::inspect::{place, print_value};
use crate::inventory::Node;
use crate::link::facts::{Fact, Facts};
use crate::link::{self, Declarations, Providers};
use crate::module::{self, Module};
use crate::resolve::Resolved;

/// What a secret looks like in a view.
pub const SECRET: &str = "<secret>";

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NodeView {
    pub node: String,
    /// Where the node is declared in the inventory (`file:line`).
    pub declared: String,
    pub modules: Vec<ModuleOnNode>,
    pub settings: Vec<EffectiveSetting>,
    pub collections: Vec<CollectionView>,
    pub consumes: Vec<ConsumeView>,
    pub provides: Vec<ProvideView>,
    pub needs: Vec<NeedView>,
    pub shapes: Vec<ShapeView>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ModuleOnNode {
    pub name: String,
    /// The inventory line that assigns it, if the node's `modules` lists it.
    pub assigned: Option<String>,
    pub required_by: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Requirement {
    pub module: String,
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct EffectiveSetting {
    pub module: String,
    pub name: String,
    pub value: String,
    /// `default` (declared by the module) or `inventory`.
    pub origin: &'static str,
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CollectionView {
    pub module: String,
    pub name: String,
    pub value: String,
    pub contributors: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ConsumeView {
    pub module: String,
    pub name: String,
    pub service: String,
    /// The node that provides it, when exactly one is chosen.
    pub provider: Option<String>,
    /// The provider's address in the inventory, when it is chosen and has one.
    pub address: Option<String>,
    /// The login the provider grants (`logins.NAME.login`).
    pub login: String,
    /// The provider's facts (`logins.NAME.facts`), as the language prints them.
    pub facts: Option<String>,
    /// `<secret>`, or null for a consumption of a provider of facts only.
    pub credential: Option<&'static str>,
    /// Where the credential is placed (null with no credential).
    pub path: Option<String>,
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProvideView {
    pub module: String,
    pub service: String,
    /// `node/module` of each consumer linked to this node.
    pub consumers: Vec<String>,
    /// What it publishes to them (`facts`), as the language prints it.
    pub facts: String,
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NeedView {
    pub module: String,
    pub name: String,
    pub secret: &'static str,
    pub path: String,
    pub at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ShapeView {
    pub module: String,
    pub kind: String,
    pub identity: String,
    pub source: String,
}

/// The part of the view one worker knows: modules, settings, collections, needs.
pub fn node_part(
    machine: &mut Machine,
    node: &Node,
    resolved: &Resolved,
    collected: &BTreeMap<String, Value>,
    modules: &BTreeMap<String, Module>,
    root: &Path,
) -> NodeView {
    let mut view = NodeView {
        node: node.name.clone(),
        declared: place(machine, node.span, root),
        ..NodeView::default()
    };
    for name in &resolved.modules {
        let assigned = node
            .modules
            .iter()
            .find(|(assigned, _)| assigned == name)
            .map(|(_, span)| place(machine, *span, root));
        let required_by = resolved
            .required_by
            .get(name)
            .into_iter()
            .flatten()
            .map(|(module, span)| Requirement {
                module: module.clone(),
                at: place(machine, *span, root),
            })
            .collect::<Vec<_>>();
        let mut required_by = required_by;
        required_by.sort_by(|a, b| a.module.cmp(&b.module));
        view.modules.push(ModuleOnNode {
            name: name.clone(),
            assigned,
            required_by,
        });
        let Some(module) = modules.get(name) else {
            continue;
        };
        view.settings
            .extend(effective_settings(machine, module, resolved, root));
        view.collections.extend(collections(
            machine, node, module, resolved, collected, modules, root,
        ));
    }
    view
}

fn effective_settings(
    machine: &mut Machine,
    module: &Module,
    resolved: &Resolved,
    root: &Path,
) -> Vec<EffectiveSetting> {
    let Some(Value::Attrs(settings)) = resolved.settings.get(&module.name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for attr in settings.iter() {
        let name = String::from_utf8_lossy(&attr.name).into_owned();
        let declared = module.options.get(&name).map(|option| option.span);
        let span = attr.span.or(declared).unwrap_or(module.span);
        let origin = if Some(span) == declared {
            "default"
        } else {
            "inventory"
        };
        out.push(EffectiveSetting {
            module: module.name.clone(),
            name,
            value: print_value(machine, &attr.value),
            origin,
            at: place(machine, span, root),
        });
    }
    out
}

/// The module's collected sets, each with the modules that gave to it (read again
/// from their `contributes`, which the contribution stage checked already).
fn collections(
    machine: &mut Machine,
    node: &Node,
    module: &Module,
    resolved: &Resolved,
    collected: &BTreeMap<String, Value>,
    modules: &BTreeMap<String, Module>,
    root: &Path,
) -> Vec<CollectionView> {
    let Some(Value::Attrs(sets)) = collected.get(&module.name) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in sets.iter() {
        let name = String::from_utf8_lossy(&entry.name).into_owned();
        let mut contributors = Vec::new();
        for contributor in &resolved.modules {
            let Some(other) = modules.get(contributor) else {
                continue;
            };
            if let Some(span) =
                contribution_span(machine, node, other, resolved, &module.name, &name)
            {
                contributors.push(Requirement {
                    module: contributor.clone(),
                    at: place(machine, span, root),
                });
            }
        }
        out.push(CollectionView {
            module: module.name.clone(),
            name,
            value: print_value(machine, &entry.value),
            contributors,
        });
    }
    out
}

/// Where `contributor` gives to `target.collection` on this node, if it does.
fn contribution_span(
    machine: &mut Machine,
    node: &Node,
    contributor: &Module,
    resolved: &Resolved,
    target: &str,
    collection: &str,
) -> Option<lang::Span> {
    let settings = resolved
        .settings
        .get(&contributor.name)
        .cloned()
        .unwrap_or(Value::Null);
    let arguments = [("node", node.value.clone()), ("settings", settings)];
    let given = module::field_value(machine, contributor, "contributes", &arguments).ok()??;
    let field_span = contributor.field_span("contributes");
    let Value::Attrs(given) = given else {
        return None;
    };
    let target_attr = given.get_attr(target.as_bytes())?;
    let target_span = target_attr.span.unwrap_or(field_span);
    let Ok(Value::Attrs(contributions)) = machine.force(&target_attr.value, target_span) else {
        return None;
    };
    let entry = contributions.get_attr(collection.as_bytes())?;
    Some(entry.span.unwrap_or(target_span))
}

/// The node's needs, from its own declarations.
pub fn needs(declared: &Declarations) -> Vec<NeedView> {
    declared
        .needs
        .iter()
        .map(|need| NeedView {
            module: need.module.clone(),
            name: need.name.clone(),
            secret: SECRET,
            path: need.path.clone(),
            at: source_line(&need.source),
        })
        .collect()
}

fn source_line(source: &plan::Source) -> String {
    format!("{}:{}", source.file, source.line)
}

/// The node's links: what it consumes from whom, what it provides to whom.
pub fn links(view: &mut NodeView, declarations: &[Arc<Declarations>]) {
    let Some(own) = declarations.iter().find(|d| d.node == view.node) else {
        return;
    };
    // chosen as the link chooses; a consumption whose provider cannot be chosen
    // shows none (its diagnostic is the compilation's)
    let providers = Providers::of(declarations);
    view.consumes = own
        .consumes
        .iter()
        .map(|consume| {
            let chosen = providers.choose(consume).ok();
            let provider =
                chosen.and_then(|(node, _)| declarations.iter().find(|d| d.node == node));
            ConsumeView {
                module: consume.module.clone(),
                name: consume.name.clone(),
                service: consume.service.clone(),
                provider: chosen.map(|(node, _)| node.to_string()),
                address: provider.and_then(|provider| provider.address.clone()),
                login: link::login(&own.node, &consume.module, &consume.name),
                facts: chosen
                    .map(|(_, provide)| print_facts(&link::grants::facts_for(consume, provide))),
                credential: consume.path.as_ref().map(|_| SECRET),
                path: consume.path.clone(),
                at: source_line(&consume.source),
            }
        })
        .collect();
    view.provides = own
        .provides
        .iter()
        .map(|provide| {
            let consumers = declarations
                .iter()
                .flat_map(|d| d.consumes.iter().map(move |c| (d, c)))
                .filter(|(_, c)| c.service == provide.service)
                .filter(|(_, c)| {
                    providers.choose(c).ok().map(|(node, _)| node) == Some(view.node.as_str())
                })
                .map(|(d, c)| format!("{}/{}", d.node, c.module))
                .collect();
            ProvideView {
                module: provide.module.clone(),
                service: provide.service.clone(),
                consumers,
                facts: print_facts(&provide.facts),
                at: source_line(&provide.source),
            }
        })
        .collect();
}

/// Facts as the language prints a record (`{ port = 5432; }`).
fn print_facts(facts: &Facts) -> String {
    let mut out = Vec::new();
    print_record(facts, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn print_record(record: &Facts, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{ ");
    for (name, fact) in record {
        lang::print::attribute_name(name.as_bytes(), out);
        out.extend_from_slice(b" = ");
        print_fact(fact, out);
        out.extend_from_slice(b"; ");
    }
    out.push(b'}');
}

fn print_fact(fact: &Fact, out: &mut Vec<u8>) {
    match fact {
        Fact::Null => out.extend_from_slice(b"null"),
        Fact::Bool(value) => out.extend_from_slice(if *value { b"true" } else { b"false" }),
        Fact::Int(value) => out.extend_from_slice(value.to_string().as_bytes()),
        Fact::Float(value) => out.extend_from_slice(lang::print::format_float(*value).as_bytes()),
        Fact::String(text) => lang::print::quote_string(text.as_bytes(), out),
        Fact::List(items) => {
            out.extend_from_slice(b"[ ");
            for item in items {
                print_fact(item, out);
                out.push(b' ');
            }
            out.push(b']');
        }
        Fact::Record(record) => print_record(record, out),
    }
}

/// The node's shapes, from its plan, grouped by module.
pub fn shapes(view: &mut NodeView, plan: &Plan) {
    view.shapes = plan
        .shapes()
        .iter()
        .map(|shape| ShapeView {
            module: shape.module().to_string(),
            kind: shape.kind().name().to_string(),
            identity: shape.identity().to_string(),
            source: shape.source().to_string(),
        })
        .collect();
    view.shapes.sort_by(|a, b| {
        (a.module.as_str(), a.kind.as_str(), a.identity.as_str()).cmp(&(
            b.module.as_str(),
            b.kind.as_str(),
            b.identity.as_str(),
        ))
    });
}

/// E120: `meshc show` names a node the inventory does not have.
pub fn unknown_node(name: &str, known: &[String]) -> lang::Diagnostic {
    let help = lang::diagnostic::did_you_mean(name, known.iter().map(String::as_str))
        .unwrap_or_else(|| {
            format!(
                "the inventory's nodes are {}",
                lang::diagnostic::quoted_few(known)
            )
        });
    lang::Diagnostic::error(
        lang::codes::UNKNOWN_NODE,
        format!("the inventory has no node `{name}`"),
    )
    .with_help(help)
}
