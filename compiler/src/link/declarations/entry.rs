//! Reading the fields of one declaration entry (`provides.NAME = { ... }`): its
//! strings, paths on the node and modes, unknown fields with a "did you mean", and
//! the checks every record entry shares (an identifier name, a set). Each problem is
//! an E303 or E311 diagnostic at the entry; must not decide what an entry means.

use lang::diagnostic::did_you_mean;
use lang::value::{Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value, codes};

use super::Declared;
use crate::shape;

pub(super) fn invalid(message: String, span: Span, help: &str) -> Diagnostic {
    Diagnostic::error(codes::INVALID_DECLARATION, message)
        .with_primary(span, "declared here")
        .with_help(help.to_string())
}

/// A need, consume or provide name that would not be one plain path component
/// under `secrets/` (`needs."../postgres/superuser"`).
fn not_an_identifier(field: &str, entry_name: &str, module: &str, span: Span) -> Diagnostic {
    let shown = plan::display::escaped(entry_name);
    Diagnostic::error(
        codes::NAME_NOT_IDENTIFIER,
        format!(
            "`{field}.\"{shown}\"` of module `{module}` is not an identifier: {}",
            crate::names::why_not_identifier(entry_name)
        ),
    )
    .with_primary(span, "named here")
    .with_help(format!(
        "the name becomes part of a path under `secrets/`: use ASCII letters, digits, `_` and `-`, starting with a letter or `_`, e.g. `{field}.app_db`"
    ))
}

/// A record entry being read.
pub(super) struct Entry<'a> {
    pub machine: &'a mut Machine,
    pub attrs: Attrs,
    pub span: Span,
    /// "`provides.NAME` of module `MODULE`", for messages.
    pub what: String,
}

impl<'a> Entry<'a> {
    /// The entry as a record, if its name and value may be one: names that become
    /// paths must be identifiers (E311), and the value must be a set (E303).
    pub fn of(
        machine: &'a mut Machine,
        declared: &Declared<'_>,
        value: &Value,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Option<Entry<'a>> {
        let field = declared.field.name();
        if declared.field.names_are_paths() && !crate::names::is_identifier(&declared.name) {
            diagnostics.push(not_an_identifier(
                field,
                &declared.name,
                declared.module,
                declared.span,
            ));
            return None;
        }
        let Value::Attrs(attrs) = value else {
            diagnostics.push(invalid(
                format!(
                    "`{field}.{}` of module `{}` must be a set, not {}",
                    declared.name,
                    declared.module,
                    value.describe_type()
                ),
                declared.span,
                "see the book's chapter on credentials and secrets",
            ));
            return None;
        };
        Some(Entry {
            machine,
            attrs: attrs.clone(),
            span: declared.span,
            what: format!(
                "`{field}.{}` of module `{}`",
                declared.name, declared.module
            ),
        })
    }

    /// The string field `name`; `default` when it is absent or null, and an error
    /// when it is absent without a default or not a string.
    pub fn text(
        &mut self,
        name: &str,
        default: Option<&str>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> EvalResult<Option<String>> {
        let Some(value) = self.attrs.get(name.as_bytes()).cloned() else {
            if default.is_none() {
                diagnostics.push(invalid(
                    format!("{} has no `{name}`", self.what),
                    self.span,
                    &format!("add `{name} = \"...\";`"),
                ));
            }
            return Ok(default.map(str::to_string));
        };
        match self.machine.force(&value, self.span)? {
            Value::String(text) => Ok(Some(String::from_utf8_lossy(&text).into_owned())),
            Value::Null if default.is_some() => Ok(default.map(str::to_string)),
            other => {
                diagnostics.push(invalid(
                    format!(
                        "`{name}` of {} must be a string, not {}",
                        self.what,
                        other.describe_type()
                    ),
                    self.span,
                    &format!("write `{name} = \"...\";`"),
                ));
                Ok(None)
            }
        }
    }

    /// The required field `name`, an absolute canonical path on the node.
    pub fn path(
        &mut self,
        name: &str,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> EvalResult<Option<String>> {
        let text = self.text(name, None, diagnostics)?;
        match text {
            Some(path) if shape::is_canonical_absolute(path.as_bytes()) && path != "/" => {
                Ok(Some(path))
            }
            Some(path) => {
                diagnostics.push(invalid(
                    format!(
                        "`{name}` of {} must be an absolute path on the node, not {path:?}",
                        self.what
                    ),
                    self.span,
                    "write the path as a string, e.g. \"/run/mesh/credentials/app-db\"",
                ));
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// The field `mode`, an octal mode (`"0400"` when absent), as four digits; any
    /// other text is E314 at the field.
    pub fn mode(&mut self, diagnostics: &mut Vec<Diagnostic>) -> EvalResult<Option<String>> {
        let Some(text) = self.text("mode", Some("0400"), diagnostics)? else {
            return Ok(None);
        };
        let mode = mode_of(&text);
        if mode.is_none() {
            diagnostics.push(
                Diagnostic::error(
                    codes::INVALID_SECRET_MODE,
                    format!(
                        "`mode` of {} is not an octal mode: \"{}\"",
                        self.what,
                        plan::display::escaped(&text)
                    ),
                )
                .with_primary(self.field_span("mode"), "not an octal mode")
                .with_help(
                    "write three or four octal digits, e.g. `mode = \"0400\";` (owner may read)",
                ),
            );
        }
        Ok(mode)
    }

    /// Where the field `name` is set, or the entry when it cannot be told.
    pub fn field_span(&self, name: &str) -> Span {
        self.attrs
            .get_attr(name.as_bytes())
            .and_then(|attr| attr.span)
            .unwrap_or(self.span)
    }

    /// Reports every field of the entry that is not in `allowed`.
    pub fn check_keys(&self, allowed: &[&str], diagnostics: &mut Vec<Diagnostic>) {
        for entry in self.attrs.iter() {
            let key = String::from_utf8_lossy(&entry.name).into_owned();
            if !allowed.contains(&key.as_str()) {
                let help = did_you_mean(&key, allowed.iter().copied()).unwrap_or_else(|| {
                    format!("{} takes {}", self.what, lang::diagnostic::quoted(allowed))
                });
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_DECLARATION,
                        format!("{} has no field `{key}`", self.what),
                    )
                    .with_primary(entry.span.unwrap_or(self.span), "unknown field")
                    .with_help(help),
                );
            }
        }
    }
}

fn mode_of(text: &str) -> Option<String> {
    ((3..=4).contains(&text.len()) && text.bytes().all(|b| (b'0'..=b'7').contains(&b)))
        .then(|| format!("{text:0>4}"))
}
