//! The reader of `mirrors.NAME` entries: an upstream image reference with its
//! registry and tag (`docker.io/library/postgres:16`). Must not pin it: that is
//! `mesh.lock`'s, read by `super::super::mirrors`.

use lang::{Diagnostic, Value};

use super::Declared;
use super::entry::invalid;
use crate::link::Mirror;
use crate::lock;

pub(super) fn read(
    declared: Declared<'_>,
    value: &Value,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Mirror> {
    let Declared {
        module, name, span, ..
    } = declared;
    let Value::String(reference) = value else {
        diagnostics.push(invalid(
            format!(
                "mirror `{name}` of module `{module}` must be a string, not {}",
                value.describe_type()
            ),
            span,
            "write e.g. `mirrors.postgres = \"docker.io/library/postgres:16\";`",
        ));
        return None;
    };
    let reference = String::from_utf8_lossy(reference).into_owned();
    if !lock::is_upstream_reference(&reference) {
        diagnostics.push(invalid(
            format!(
                "mirror `{name}` of module `{module}` is not an image reference with a tag: {reference:?}"
            ),
            span,
            "write the upstream image with its registry and tag, e.g. \"docker.io/library/postgres:16\"",
        ));
        return None;
    }
    Some(Mirror {
        module: module.to_string(),
        name,
        reference,
        span,
    })
}
