//! The reader of `needs.NAME` entries: where a module's own secret is placed on its
//! node and who owns it. Must not make the secret: `super::super::needs` asks the
//! store, once every node is read.

use lang::value::EvalResult;
use lang::{Diagnostic, Machine, Value};

use super::Declared;
use super::entry::Entry;
use crate::link::Need;

const FIELDS: &[&str] = &["path", "owner", "group", "mode"];

pub(super) fn read(
    machine: &mut Machine,
    declared: Declared<'_>,
    value: &Value,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Need>> {
    let Some(mut entry) = Entry::of(machine, &declared, value, diagnostics) else {
        return Ok(None);
    };
    entry.check_keys(FIELDS, diagnostics);
    let path = entry.path("path", diagnostics)?;
    let owner = entry.text("owner", Some("root"), diagnostics)?;
    let group = entry.text("group", Some("root"), diagnostics)?;
    let mode = entry.mode(diagnostics)?;
    let (Some(path), Some(owner), Some(group), Some(mode)) = (path, owner, group, mode) else {
        return Ok(None);
    };
    Ok(Some(Need {
        module: declared.module.to_string(),
        name: declared.name,
        path,
        owner,
        group,
        mode,
        span: declared.span,
        source: declared.source,
    }))
}
