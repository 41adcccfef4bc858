//! The reader of `provides.SERVICE` entries: where the grants manifest and the
//! grants' credentials go on the provider, the `form` it checks logins with, and
//! who owns them; or none of the three, for a provider that hands out no logins and
//! publishes only its `facts`. Must not look at consumers: linking them is
//! `super::super::grants`'.

use lang::value::EvalResult;
use lang::{Diagnostic, Machine, Value};

use super::Declared;
use super::entry::{Entry, invalid};
use crate::link::facts::{self, Facts};
use crate::link::{LoginsAt, Provide};
use crate::secrets::Form;

const FIELDS: &[&str] = &["manifest", "credentials", "form", "owner", "group", "facts"];

pub(super) fn read(
    machine: &mut Machine,
    declared: Declared<'_>,
    value: &Value,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Provide>> {
    let Some(mut entry) = Entry::of(machine, &declared, value, diagnostics) else {
        return Ok(None);
    };
    entry.check_keys(FIELDS, diagnostics);
    let logins = logins_at(&mut entry, declared.span, diagnostics)?;
    let owner = entry.text("owner", Some("root"), diagnostics)?;
    let group = entry.text("group", Some("root"), diagnostics)?;
    let facts = match entry.attrs.get(b"facts").cloned() {
        Some(value) => {
            let span = entry
                .attrs
                .get_attr(b"facts")
                .and_then(|attr| attr.span)
                .unwrap_or(declared.span);
            // a function of `{ node, settings }`, like the field itself
            let value = entry.machine.force(&value, span)?;
            let value = crate::module::call_with(entry.machine, value, declared.arguments, span)?;
            facts::read(entry.machine, &value, span, &entry.what, diagnostics)?
        }
        None => Some(Facts::new()),
    };
    let (Some(logins), Some(owner), Some(group), Some(facts)) = (logins, owner, group, facts)
    else {
        return Ok(None);
    };
    Ok(Some(Provide {
        module: declared.module.to_string(),
        service: declared.name,
        logins,
        owner,
        group,
        facts,
        span: declared.span,
        source: declared.source,
    }))
}

/// The fields of a provider that hands out logins: all of `manifest`, `credentials`
/// and `form`, or none of them (`Some(None)`: facts only). `None` when they are
/// invalid (reported).
fn logins_at(
    entry: &mut Entry<'_>,
    span: lang::Span,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Option<LoginsAt>>> {
    const LOGIN_FIELDS: [&str; 3] = ["manifest", "credentials", "form"];
    let present = LOGIN_FIELDS
        .iter()
        .filter(|field| entry.attrs.get(field.as_bytes()).is_some())
        .count();
    if present == 0 {
        return Ok(Some(None));
    }
    let manifest = entry.path("manifest", diagnostics)?;
    let credentials = entry.path("credentials", diagnostics)?;
    let form_text = entry.text("form", None, diagnostics)?;
    let form = match form_text.as_deref().map(Form::from_name) {
        Some(Some(form)) => Some(form),
        Some(None) => {
            diagnostics.push(invalid(
                format!(
                    "{} has an unknown `form` {:?}",
                    entry.what,
                    form_text.unwrap_or_default()
                ),
                span,
                "`form` is \"scram-sha-256\" (the provider gets a PostgreSQL verifier), \"rabbit_password_hashing_sha256\" (a RabbitMQ password hash) or \"plain\" (the provider gets the password)",
            ));
            None
        }
        None => None,
    };
    Ok(match (manifest, credentials, form) {
        (Some(manifest), Some(credentials), Some(form)) => Some(Some(LoginsAt {
            manifest,
            credentials,
            form,
        })),
        _ => None,
    })
}
