//! Contributions: collections a module declares (`collects`) filled from what the
//! other modules on the same node give them (`contributes`). Lists concatenate in
//! the order of the contributing modules' names; sets merge, and the same key from
//! two modules is an error showing both. A contribution sees only its own node and
//! settings, never other contributions, so nothing here can recurse.

use std::collections::BTreeMap;

use lang::codes;
use lang::diagnostic::did_you_mean;
use lang::value::{Attr, Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value};

use crate::inventory::Node;
use crate::module::{self, Module};
use crate::resolve::Resolved;
use crate::types::{self, CheckContext, Type};

struct Collection {
    collection_type: Type,
    span: Span,
    /// Lists: the items so far. Sets: the entries so far, with who gave them.
    items: Vec<Value>,
    entries: BTreeMap<Vec<u8>, (Attr, String)>,
}

fn attr(name: &str, value: Value) -> Attr {
    Attr {
        name: lang::Name::new(name.as_bytes()),
        value,
        span: None,
    }
}

/// Each resolved module's `collected` set on this node.
pub fn collect(
    machine: &mut Machine,
    node: &Node,
    resolved: &Resolved,
    modules: &BTreeMap<String, Module>,
    known: &[String],
    context: &CheckContext<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<BTreeMap<String, Value>> {
    let mut collections: BTreeMap<String, BTreeMap<String, Collection>> = BTreeMap::new();
    for name in &resolved.modules {
        let Some(module) = modules.get(name) else {
            continue;
        };
        let settings = resolved.settings.get(name).cloned().unwrap_or(Value::Null);
        let arguments = [("node", node.value.clone()), ("settings", settings)];
        let Some(declared) = module::field_value(machine, module, "collects", &arguments)? else {
            continue;
        };
        let field_span = module.field_span("collects");
        let Value::Attrs(declared) = declared else {
            diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_COLLECTION,
                    format!("`collects` of module `{name}` must be a set of types"),
                )
                .with_primary(field_span, "here")
                .with_help("write `collects.ports = mesh.types.listOf mesh.types.port;`"),
            );
            continue;
        };
        let mut module_collections = BTreeMap::new();
        for entry in declared.iter() {
            let collection_name = String::from_utf8_lossy(&entry.name).into_owned();
            let span = entry.span.unwrap_or(field_span);
            let collection_type = match types::read_type(machine, &entry.value, span)? {
                Ok(collection_type @ (Type::ListOf(_) | Type::AttrsOf(_))) => collection_type,
                Ok(other) => {
                    diagnostics.push(
                        Diagnostic::error(
                            codes::INVALID_COLLECTION,
                            format!("collection `{name}.{collection_name}` is `{}`; a collection is a list or a set", other.name()),
                        )
                        .with_primary(span, "declared here")
                        .with_help("use `mesh.types.listOf T` (contributions concatenate) or `mesh.types.attrsOf T` (contributions merge)"),
                    );
                    continue;
                }
                Err(problem) => {
                    diagnostics.push(
                        Diagnostic::error(
                            codes::INVALID_COLLECTION,
                            format!(
                                "collection `{name}.{collection_name}` is not a type: {problem}"
                            ),
                        )
                        .with_primary(span, "declared here")
                        .with_help("use `mesh.types.listOf T` or `mesh.types.attrsOf T`"),
                    );
                    continue;
                }
            };
            module_collections.insert(
                collection_name,
                Collection {
                    collection_type,
                    span,
                    items: Vec::new(),
                    entries: BTreeMap::new(),
                },
            );
        }
        collections.insert(name.clone(), module_collections);
    }

    for contributor in &resolved.modules {
        let Some(module) = modules.get(contributor) else {
            continue;
        };
        let settings = resolved
            .settings
            .get(contributor)
            .cloned()
            .unwrap_or(Value::Null);
        let arguments = [("node", node.value.clone()), ("settings", settings)];
        let Some(given) = module::field_value(machine, module, "contributes", &arguments)? else {
            continue;
        };
        let field_span = module.field_span("contributes");
        let Value::Attrs(given) = given else {
            diagnostics.push(
                Diagnostic::error(codes::INVALID_MODULE_FIELD, format!("`contributes` of module `{contributor}` must be a set"))
                    .with_primary(field_span, "here")
                    .with_help("write `contributes = { settings, ... }: { networking.ports = [ settings.port ]; };`"),
            );
            continue;
        };
        for target in given.iter() {
            let target_name = String::from_utf8_lossy(&target.name).into_owned();
            let target_span = target.span.unwrap_or(field_span);
            if !known.contains(&target_name) {
                let help = did_you_mean(&target_name, known.iter().map(String::as_str))
                    .unwrap_or_else(|| {
                        "contributions go to a module that declares the collection in `collects`"
                            .into()
                    });
                diagnostics.push(
                    Diagnostic::error(
                        codes::CONTRIBUTION_TO_UNKNOWN_MODULE,
                        format!("module `{contributor}` contributes to `{target_name}`, which is not a module"),
                    )
                    .with_primary(target_span, "no module has this name")
                    .with_help(help),
                );
                continue;
            }
            // a module that exists but does not run here: an optional integration
            let Some(target_collections) = collections.get_mut(&target_name) else {
                if !resolved.modules.contains(&target_name) {
                    continue;
                }
                let target_value = machine.force(&target.value, target_span)?;
                if let Value::Attrs(names) = target_value
                    && let Some(first) = names.iter().next()
                {
                    diagnostics.push(undeclared_collection(
                        contributor,
                        &target_name,
                        first,
                        target_span,
                        &[],
                        modules,
                    ));
                }
                continue;
            };
            let target_value = machine.force(&target.value, target_span)?;
            let Value::Attrs(contributions) = target_value else {
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_MODULE_FIELD,
                        format!("module `{contributor}`'s contribution to `{target_name}` must be a set of collections"),
                    )
                    .with_primary(target_span, "here")
                    .with_help(format!("write `{target_name}.COLLECTION = value;`")),
                );
                continue;
            };
            for contribution in contributions.iter() {
                let collection_name = String::from_utf8_lossy(&contribution.name).into_owned();
                let span = contribution.span.unwrap_or(target_span);
                let declared: Vec<String> = target_collections.keys().cloned().collect();
                let Some(collection) = target_collections.get_mut(&collection_name) else {
                    diagnostics.push(undeclared_collection(
                        contributor,
                        &target_name,
                        contribution,
                        span,
                        &declared,
                        modules,
                    ));
                    continue;
                };
                if let Err(mismatch) = types::check(
                    machine,
                    &collection.collection_type,
                    &contribution.value,
                    span,
                    context,
                )? {
                    diagnostics.push(
                        Diagnostic::error(
                            codes::CONTRIBUTION_TYPE_MISMATCH,
                            format!(
                                "module `{contributor}` contributes {} to `{target_name}.{collection_name}{}`, which collects {}",
                                mismatch.found, mismatch.path, mismatch.expected
                            ),
                        )
                        .with_primary(mismatch.span.unwrap_or(span), "contributed here")
                        .with_secondary(collection.span, format!("declared as `{}` here", collection.collection_type.name()))
                        .with_help(format!("contribute {}", collection.collection_type.describe())),
                    );
                    continue;
                }
                let value = machine.force(&contribution.value, span)?;
                match (&collection.collection_type, value) {
                    (Type::ListOf(_), Value::List(items)) => {
                        collection.items.extend(items.iter().cloned())
                    }
                    (Type::AttrsOf(_), Value::Attrs(entries)) => {
                        for entry in entries.iter() {
                            let entry_span = entry.span.unwrap_or(span);
                            if let Some((first, first_module)) =
                                collection.entries.get(&entry.name.to_vec())
                            {
                                let mut diagnostic = Diagnostic::error(
                                    codes::CONTRIBUTION_CONFLICT,
                                    format!(
                                        "modules `{first_module}` and `{contributor}` both contribute `{}` to `{target_name}.{collection_name}`",
                                        String::from_utf8_lossy(&entry.name)
                                    ),
                                )
                                .with_primary(entry_span, format!("contributed by `{contributor}` here"))
                                .with_help("each key of a collected set comes from one module; rename one of them");
                                if let Some(first_span) = first.span {
                                    diagnostic = diagnostic.with_secondary(
                                        first_span,
                                        format!("contributed by `{first_module}` here"),
                                    );
                                }
                                diagnostics.push(diagnostic);
                                continue;
                            }
                            collection.entries.insert(
                                entry.name.to_vec(),
                                (
                                    Attr {
                                        name: entry.name,
                                        value: entry.value.clone(),
                                        span: Some(entry_span),
                                    },
                                    contributor.clone(),
                                ),
                            );
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    let mut collected = BTreeMap::new();
    for (module_name, module_collections) in collections {
        let entries = module_collections
            .into_iter()
            .map(|(name, collection)| {
                let value = match collection.collection_type {
                    Type::ListOf(_) => Value::List(lang::value::List::from(collection.items)),
                    _ => Value::Attrs(Attrs::from_sorted(
                        collection
                            .entries
                            .into_values()
                            .map(|(attr, _)| attr)
                            .collect(),
                    )),
                };
                attr(&name, value)
            })
            .collect();
        collected.insert(module_name, Value::Attrs(Attrs::from_sorted(entries)));
    }
    Ok(collected)
}

fn undeclared_collection(
    contributor: &str,
    target: &str,
    contribution: &Attr,
    span: Span,
    declared: &[String],
    modules: &BTreeMap<String, Module>,
) -> Diagnostic {
    let collection = String::from_utf8_lossy(&contribution.name).into_owned();
    let help =
        did_you_mean(&collection, declared.iter().map(String::as_str)).unwrap_or_else(|| {
            if declared.is_empty() {
                format!("module `{target}` declares no collections")
            } else {
                format!(
                    "module `{target}` collects {}",
                    lang::diagnostic::quoted(declared)
                )
            }
        });
    let mut diagnostic = Diagnostic::error(
        codes::CONTRIBUTION_TO_UNKNOWN_COLLECTION,
        format!("module `{contributor}` contributes to `{target}.{collection}`, but `{target}` collects no `{collection}`"),
    )
    .with_primary(contribution.span.unwrap_or(span), "contributed here")
    .with_help(help);
    if let Some(module) = modules
        .get(target)
        .filter(|module| module.has_field("collects"))
    {
        diagnostic = diagnostic.with_secondary(
            module.field_span("collects"),
            format!("`{target}`'s collections are declared here"),
        );
    }
    diagnostic
}
