//! Settings: each module's declared defaults plus the node's overrides from the
//! inventory, checked against the declared types. A function of the declarations
//! and the inventory only, so it cannot depend on anything computed later.

use std::collections::HashMap;

use lang::codes;
use lang::diagnostic::did_you_mean;
use lang::value::{Attr, Attrs, EvalResult};
use lang::{Diagnostic, Machine, Value};

use crate::inventory::Node;
use crate::module::Module;
use crate::types::{self, CheckContext};

/// Settings values with no overrides are the same for every node: made once.
#[derive(Default)]
pub struct DefaultsCache {
    by_module: HashMap<String, Value>,
}

impl DefaultsCache {
    /// The cached settings sets (roots for [`lang::Machine::reclaim`]).
    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.by_module.values()
    }
}

/// The settings set a module's fields receive on `node`, or None after reporting
/// why it cannot be made.
pub fn module_settings(
    machine: &mut Machine,
    module: &Module,
    node: &Node,
    context: &CheckContext<'_>,
    cache: &mut DefaultsCache,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Value>> {
    let overrides = node.settings.get(&module.name);
    if overrides.is_none()
        && let Some(cached) = cache.by_module.get(&module.name)
    {
        return Ok(Some(cached.clone()));
    }
    let mut entries = Vec::with_capacity(module.options.len());
    let mut failed = false;
    if let Some(overrides) = overrides {
        for setting in &overrides.settings {
            if !module.options.contains_key(&setting.name) {
                let help = did_you_mean(&setting.name, module.options.keys().map(String::as_str))
                    .unwrap_or_else(|| {
                        if module.options.is_empty() {
                            format!("module `{}` declares no settings", module.name)
                        } else {
                            format!(
                                "module `{}` declares {}",
                                module.name,
                                module
                                    .options
                                    .keys()
                                    .map(|k| format!("`{k}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    });
                let mut diagnostic = Diagnostic::error(
                    codes::UNKNOWN_SETTING,
                    format!("module `{}` has no setting `{}`", module.name, setting.name),
                )
                .with_primary(setting.span, "set here")
                .with_help(help);
                if module.has_field("settings") {
                    diagnostic = diagnostic.with_secondary(
                        module.field_span("settings"),
                        "the module's settings are declared here",
                    );
                }
                diagnostics.push(diagnostic);
                failed = true;
            }
        }
    }
    for (name, option) in &module.options {
        let given = overrides.and_then(|o| o.settings.iter().find(|s| s.name == *name));
        let value = match (given, &option.default) {
            (Some(setting), _) => {
                if let Err(mismatch) = types::check(
                    machine,
                    &option.option_type,
                    &setting.value,
                    setting.span,
                    context,
                )? {
                    diagnostics.push(
                        Diagnostic::error(
                            codes::SETTING_TYPE_MISMATCH,
                            format!(
                                "`nodes.{}.settings.{}.{}{}` is {}, but the setting is {}",
                                node.name,
                                module.name,
                                name,
                                mismatch.path,
                                mismatch.found,
                                mismatch.expected
                            ),
                        )
                        .with_primary(mismatch.span.unwrap_or(setting.span), "set here")
                        .with_secondary(
                            option.span,
                            format!("declared as `{}` here", option.option_type.name()),
                        )
                        .with_help(mismatch.hint.clone().unwrap_or_else(|| {
                            format!("give a value that is {}", mismatch.expected)
                        })),
                    );
                    failed = true;
                    continue;
                }
                Attr {
                    name: lang::Name::new(name.as_bytes()),
                    value: setting.value.clone(),
                    span: Some(setting.span),
                }
            }
            (None, Some(default)) => Attr {
                name: lang::Name::new(name.as_bytes()),
                value: default.clone(),
                span: Some(option.span),
            },
            (None, None) => {
                diagnostics.push(
                    Diagnostic::error(
                        codes::SETTING_WITHOUT_VALUE,
                        format!(
                            "node `{}` does not set `{}.{name}`, which has no default",
                            node.name, module.name
                        ),
                    )
                    .with_primary(node.span, "this node runs the module")
                    .with_secondary(option.span, "declared without a default here")
                    .with_help(format!(
                        "set it in the inventory: `nodes.{}.settings.{}.{name} = ...;` ({})",
                        node.name,
                        module.name,
                        option.option_type.describe()
                    )),
                );
                failed = true;
                continue;
            }
        };
        entries.push(value);
    }
    if failed {
        return Ok(None);
    }
    let value = Value::Attrs(Attrs::from_sorted(entries));
    if overrides.is_none() {
        cache.by_module.insert(module.name.clone(), value.clone());
    }
    Ok(Some(value))
}
