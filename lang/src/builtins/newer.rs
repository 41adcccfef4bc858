//! Builtins newer than Nix 2.8 that current nixpkgs `lib` needs and that fit the
//! language: `readFileType` (a file's type inside the repository) and `warn` (a
//! message printed like `trace`, then the value). Nothing here reads outside the
//! repository or writes anywhere: warnings are collected on the machine.

use super::Builtin;
use crate::codes;
use crate::eval::{Machine, error};
use crate::span::Span;
use crate::value::{EvalResult, Value};

pub(super) fn builtins() -> Vec<Builtin> {
    vec![
        Builtin {
            name: "readFileType",
            arity: 1,
            function: read_file_type,
        },
        Builtin {
            name: "warn",
            arity: 2,
            function: warn,
        },
    ]
}

/// `builtins.readFileType path`: "regular", "directory", "symlink" or "unknown", as
/// `readDir` names an entry's type (the link itself, not what it points to).
fn read_file_type(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let path = machine.coerce_to_path(&arguments[0], span, "`readFileType`")?;
    let file_path = machine.check_allowed(&path, span, "`readFileType`")?;
    // the entry itself, as its directory lists it (as `readDir` does): a link is
    // "symlink", wherever it points, and is not followed; the kind of the path
    // itself only where it has no directory to be listed in (a root)
    let listed = file_path
        .parent()
        .zip(file_path.file_name())
        .and_then(|(parent, name)| {
            use std::os::unix::ffi::OsStrExt;
            let entries = machine.loader().list(parent).ok()?;
            entries
                .into_iter()
                .find(|(entry, _)| entry.as_slice() == name.as_bytes())
                .map(|(_, kind)| kind)
        });
    match listed.or_else(|| machine.loader().kind(&file_path)) {
        Some(kind) => Ok(Value::string_from(kind.nix_name())),
        None => Err(error(
            codes::FILE_UNREADABLE,
            format!(
                "cannot get the type of `{}`: no such file or directory",
                file_path.display()
            ),
            span,
            "asked here",
            "check the path, or test it first with `builtins.pathExists`",
        )),
    }
}

/// `builtins.warn message value`: records `message` (a string, as newer Nix demands)
/// as an evaluation warning and returns `value`.
fn warn(machine: &mut Machine, arguments: &[Value], span: Span) -> EvalResult<Value> {
    let message = machine.force_string(&arguments[0], span, "`warn`")?;
    machine.traces.push(super::Traced {
        kind: super::TraceKind::Warning,
        message: String::from_utf8_lossy(&message).into_owned(),
        span,
    });
    machine.force(&arguments[1], span)
}
