//! The reader of `artifacts.NAME` entries: a directory of the repository (a path
//! literal such as `./site`) that is really inside it, links resolved. Must not
//! archive it: `super::super::artifacts` does, once per directory.

use std::path::Path;

use lang::value::EvalResult;
use lang::{Diagnostic, Machine, Value};

use super::Declared;
use super::entry::{Entry, invalid};
use crate::link::Artifact;

pub(super) fn read(
    machine: &mut Machine,
    declared: Declared<'_>,
    value: &Value,
    repository_root: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Artifact>> {
    let Some(entry) = Entry::of(machine, &declared, value, diagnostics) else {
        return Ok(None);
    };
    entry.check_keys(&["directory"], diagnostics);
    let directory = entry
        .attrs
        .get(b"directory")
        .cloned()
        .unwrap_or(Value::Null);
    let Declared {
        module, name, span, ..
    } = declared;
    let path = match entry.machine.force(&directory, span)? {
        Value::Path(path) => path,
        other => {
            diagnostics.push(invalid(
                format!(
                    "artifact `{name}` of module `{module}` needs `directory`, a path such as `./site`, not {}",
                    other.describe_type()
                ),
                span,
                "write `artifacts.NAME = { directory = ./dir; };`",
            ));
            return Ok(None);
        }
    };
    let absolute = lang::compile::host_path(&path);
    let resolved = absolute.canonicalize().unwrap_or_else(|_| absolute.clone());
    match absolute.strip_prefix(repository_root) {
        Ok(_) if !resolved.starts_with(repository_root) => {
            diagnostics.push(invalid(
                format!(
                    "artifact `{name}` of module `{module}` is a link to `{}`, outside the repository",
                    plan::display::escaped(&resolved.to_string_lossy())
                ),
                span,
                "artifacts are real directories of the repository: replace the link with the directory",
            ));
            Ok(None)
        }
        Ok(relative) => match relative.to_str() {
            // a plan names the directory in JSON, which holds only UTF-8
            Some(directory) => Ok(Some(Artifact {
                module: module.to_string(),
                name,
                directory: directory.to_string(),
                absolute,
                span,
            })),
            None => {
                diagnostics.push(invalid(
                    format!(
                        "artifact `{name}` of module `{module}` is the directory `{}`, whose name is not UTF-8",
                        plan::display::escaped(&relative.to_string_lossy())
                    ),
                    span,
                    "a plan names an artifact's directory as text: rename the directory (or a directory above it) in UTF-8",
                ));
                Ok(None)
            }
        },
        Err(_) => {
            diagnostics.push(invalid(
                format!(
                    "artifact `{name}` of module `{module}` is not a directory of the repository"
                ),
                span,
                "artifacts are directories of repository modules, e.g. `artifacts.site = { directory = ./site; };`",
            ));
            Ok(None)
        }
    }
}
