//! The reader of `consumes.NAME` entries: the `service` asked for (an identifier,
//! since it names a provider's `provides.SERVICE`), the node it is asked `from`, and
//! where the credential is placed on the consumer (no `path` for a provider of facts
//! only), and the access asked of a provider whose grants carry one
//! (`super::access`). Must not choose the provider:
//! `super::super::provider` does, once every node is read.

use lang::value::EvalResult;
use lang::{Diagnostic, Machine, Value, codes};

use super::Declared;
use super::access;
use super::entry::Entry;
use crate::link::Consume;

const FIELDS: &[&str] = &[
    "service",
    "from",
    "path",
    "owner",
    "group",
    "mode",
    "vhost",
    "permissions",
];

pub(super) fn read(
    machine: &mut Machine,
    declared: Declared<'_>,
    value: &Value,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Consume>> {
    let Some(mut entry) = Entry::of(machine, &declared, value, diagnostics) else {
        return Ok(None);
    };
    entry.check_keys(FIELDS, diagnostics);
    let service = entry.text("service", None, diagnostics)?;
    let service = match service {
        Some(service) if !crate::names::is_identifier(&service) => {
            diagnostics.push(
                Diagnostic::error(
                    codes::NAME_NOT_IDENTIFIER,
                    format!(
                        "the `service` of {} is not an identifier: \"{}\" ({})",
                        entry.what,
                        plan::display::escaped(&service),
                        crate::names::why_not_identifier(&service)
                    ),
                )
                .with_primary(declared.span, "consumed here")
                .with_help("`service` names a provider's `provides.NAME`, which is an identifier: ASCII letters, digits, `_` and `-`"),
            );
            None
        }
        other => other,
    };
    let from = entry
        .text("from", Some(""), diagnostics)?
        .filter(|from| !from.is_empty());
    // no `path` asks a provider of facts only; the link checks which it is
    let path = match entry.attrs.get(b"path") {
        Some(_) => entry.path("path", diagnostics)?.map(Some),
        None => Some(None),
    };
    let owner = entry.text("owner", Some("root"), diagnostics)?;
    let group = entry.text("group", Some("root"), diagnostics)?;
    let mode = entry.mode(diagnostics)?;
    let declares_access =
        entry.attrs.get(b"vhost").is_some() || entry.attrs.get(b"permissions").is_some();
    let access = access::read(&mut entry, diagnostics)?;
    if declares_access && access.is_none() {
        return Ok(None);
    }
    let (Some(service), Some(path), Some(owner), Some(group), Some(mode)) =
        (service, path, owner, group, mode)
    else {
        return Ok(None);
    };
    Ok(Some(Consume {
        module: declared.module.to_string(),
        name: declared.name,
        service,
        from,
        path,
        owner,
        group,
        mode,
        access,
        span: declared.span,
        source: declared.source,
    }))
}
