//! Diagnostics the evaluator raises from more than one place: the shared
//! constructors (`error`, `type_error`, a secret misused) and a missing attribute
//! with its suggestions. Builds values of `Diagnostic` only; evaluates nothing.

use super::*;
use crate::codes;
use crate::compile::{IrAttrName, LambdaIr};
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::span::Span;
use crate::value::{Attrs, EvalResult, Value};

pub fn error(
    code: codes::Code,
    message: impl Into<String>,
    span: Span,
    label: &str,
    help: impl Into<String>,
) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(code, message)
            .with_primary(span, label)
            .with_help(help),
    )
}

pub fn type_error(expected: &str, found: &Value, span: Span, context: &str) -> Box<Diagnostic> {
    let message = if context.is_empty() {
        format!("expected {expected}, found {}", found.describe_type())
    } else {
        format!(
            "{context}: expected {expected}, found {}",
            found.describe_type()
        )
    };
    if let Value::Opaque(_) = found {
        // `secrets.token.path`: agenix's `age.secrets.token.path` habit
        if expected == "a set" {
            return opaque_selected(span);
        }
        return opaque_error(span);
    }
    error(
        codes::TYPE_MISMATCH,
        message,
        span,
        &format!("this is {}", found.describe_type()),
        format!("give {expected} here"),
    )
}

pub fn opaque_error(span: Span) -> Box<Diagnostic> {
    error(
        codes::OPAQUE_MISUSE,
        "a secret can only be given to a shape",
        span,
        "a secret is used here",
        "pass the secret to a shape constructor such as `mesh.secret`; it cannot be printed, compared, interpolated or converted",
    )
}

/// E044 of a secret put into a string: mesh never has its plaintext to put there.
pub fn opaque_interpolated(span: Span) -> Box<Diagnostic> {
    error(
        codes::OPAQUE_MISUSE,
        "a secret cannot be put into a string",
        span,
        "a secret is used here",
        "the secret is sealed: mesh never has its text to write into a file; the need places it on the node at the need's `path`: point the program at that file (a `password_file` or `..._FILE` option)",
    )
}

/// E044 of an attribute selected from a secret (agenix's `.path`): a handle has none.
pub fn opaque_selected(span: Span) -> Box<Diagnostic> {
    error(
        codes::OPAQUE_MISUSE,
        "a secret has no attributes",
        span,
        "a secret, not a set",
        "a secret is a handle for a sealed value, not agenix's `{ path; ... }`: the file it is placed in is the `path` written in its need (`needs.NAME.path`); write that path where the program needs it",
    )
}

impl Machine {
    pub(super) fn missing_attribute(
        &self,
        attrs: &Attrs,
        name: &[u8],
        path: &[IrAttrName],
        index: usize,
        span: Span,
    ) -> Box<Diagnostic> {
        let text = String::from_utf8_lossy(name).into_owned();
        let shown_path: Vec<String> = path[..=index]
            .iter()
            .map(|name| match name {
                IrAttrName::Static(name) => String::from_utf8_lossy(name).into_owned(),
                IrAttrName::Dynamic(_) => "${...}".to_string(),
            })
            .collect();
        let names: Vec<String> = attrs
            .iter()
            .map(|attr| String::from_utf8_lossy(&attr.name).into_owned())
            .collect();
        let help = did_you_mean(&text, names.iter().map(String::as_str)).unwrap_or_else(|| {
            if names.is_empty() {
                "the set is empty; use `or` to give a default".to_string()
            } else if names.len() <= 8 {
                format!(
                    "the set has {}; use `or` to give a default",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            } else {
                "use `or` to give a default, or `?` to test for the attribute".to_string()
            }
        });
        let mut diagnostic = Diagnostic::error(
            codes::MISSING_ATTRIBUTE,
            format!("attribute `{}` missing", shown_path.join(".")),
        )
        .with_primary(span, format!("the set has no `{text}`"))
        .with_help(help);
        if let Some(defined) = attrs.iter().find_map(|attr| attr.span) {
            diagnostic = diagnostic.with_secondary(defined, "the set is defined here");
        }
        Box::new(diagnostic)
    }
}

pub(super) fn lambda_name(lambda: &LambdaIr) -> String {
    match &lambda.name {
        Some(name) => format!("function `{}`", String::from_utf8_lossy(name)),
        None => "anonymous function".to_string(),
    }
}

pub(super) fn overflow(span: Span, op: &str) -> Box<Diagnostic> {
    error(
        codes::INTEGER_OVERFLOW,
        format!("integer overflow in `{op}`"),
        span,
        "the result does not fit in 64 bits",
        "integers are 64-bit signed; use floats for larger magnitudes",
    )
}

#[cold]
pub(super) fn unreachable_done() -> EvalResult<Value> {
    Err(Box::new(Diagnostic::bug(
        "a finished thunk was forced again",
    )))
}

#[cold]
pub(super) fn unreachable_logic() -> EvalResult<Value> {
    Err(Box::new(Diagnostic::bug(
        "logical operator evaluated strictly",
    )))
}
