//! Reading what each module running on a node declares for linking (`provides`,
//! `consumes`, `needs`, `mirrors`, `artifacts`), on the workers: one reader per kind
//! of field (`declarations/`), each checking its entries, with names that become
//! paths held to the identifier rule (`crate::names`). Must not touch the sealed
//! store or another node's declarations; linking is `super::link`'s.

use std::collections::BTreeMap;
use std::path::Path;

use lang::value::EvalResult;
use lang::{Diagnostic, Machine, Span, Value};

use super::Declarations;
use crate::module::{self, Module};
use crate::prelude;

mod access;
mod artifacts;
mod consumes;
mod entry;
mod mirrors;
mod needs;
mod provides;

use entry::invalid;

/// A module field that declares something for linking: which one says how its
/// entries are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Provides,
    Consumes,
    Needs,
    Mirrors,
    Artifacts,
}

impl Field {
    /// In the order they are read (and their diagnostics reported).
    const ALL: [Field; 5] = [
        Field::Provides,
        Field::Consumes,
        Field::Needs,
        Field::Mirrors,
        Field::Artifacts,
    ];

    fn name(self) -> &'static str {
        match self {
            Field::Provides => "provides",
            Field::Consumes => "consumes",
            Field::Needs => "needs",
            Field::Mirrors => "mirrors",
            Field::Artifacts => "artifacts",
        }
    }

    /// Whether an entry's name becomes part of a path under `secrets/`.
    fn names_are_paths(self) -> bool {
        match self {
            Field::Provides | Field::Consumes | Field::Needs => true,
            Field::Mirrors | Field::Artifacts => false,
        }
    }
}

/// One entry of a field, as its reader gets it.
struct Declared<'a> {
    field: Field,
    module: &'a str,
    name: String,
    span: Span,
    source: plan::Source,
    /// The module's arguments of this stage (`node`, `settings`), for an entry's
    /// own functions (`facts`).
    arguments: &'a [(&'static str, Value)],
}

/// Reads the linking fields of every module running on a node.
pub fn declarations(
    machine: &mut Machine,
    node: &crate::inventory::Node,
    resolved: &crate::resolve::Resolved,
    modules: &BTreeMap<String, Module>,
    repository_root: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Declarations> {
    let mut result = Declarations {
        node: node.name.clone(),
        key: node.key.clone(),
        address: node.address.clone(),
        ..Declarations::default()
    };
    for name in &resolved.modules {
        let Some(module) = modules.get(name) else {
            continue;
        };
        let settings = resolved.settings.get(name).cloned().unwrap_or(Value::Null);
        let arguments = [("node", node.value.clone()), ("settings", settings)];
        for field in Field::ALL {
            let Some(value) = module::field_value(machine, module, field.name(), &arguments)?
            else {
                continue;
            };
            let field_span = module.field_span(field.name());
            let Value::Attrs(entries) = value else {
                diagnostics.push(invalid(
                    format!(
                        "`{}` of module `{name}` must be a set, not {}",
                        field.name(),
                        value.describe_type()
                    ),
                    field_span,
                    "write `NAME = { ... };` entries",
                ));
                continue;
            };
            for entry in entries.iter() {
                let span = entry.span.unwrap_or(field_span);
                let declared = Declared {
                    field,
                    module: name,
                    name: String::from_utf8_lossy(&entry.name).into_owned(),
                    span,
                    source: location(machine, span, repository_root),
                    arguments: &arguments,
                };
                let value = machine.force(&entry.value, span)?;
                read(
                    machine,
                    declared,
                    &value,
                    repository_root,
                    &mut result,
                    diagnostics,
                )?;
            }
        }
    }
    Ok(result)
}

/// Reads one entry with the reader of its field into `result`.
fn read(
    machine: &mut Machine,
    declared: Declared<'_>,
    value: &Value,
    repository_root: &Path,
    result: &mut Declarations,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<()> {
    match declared.field {
        Field::Provides => {
            result
                .provides
                .extend(provides::read(machine, declared, value, diagnostics)?);
        }
        Field::Consumes => {
            result
                .consumes
                .extend(consumes::read(machine, declared, value, diagnostics)?);
        }
        Field::Needs => {
            result
                .needs
                .extend(needs::read(machine, declared, value, diagnostics)?);
        }
        Field::Mirrors => {
            result
                .mirrors
                .extend(mirrors::read(declared, value, diagnostics));
        }
        Field::Artifacts => {
            result.artifacts.extend(artifacts::read(
                machine,
                declared,
                value,
                repository_root,
                diagnostics,
            )?);
        }
    }
    Ok(())
}

fn location(machine: &Machine, span: Span, root: &Path) -> plan::Source {
    let (file, line, column) = prelude::location(machine, span, root);
    plan::Source {
        file,
        line: line as u32,
        column: column as u32,
    }
}
