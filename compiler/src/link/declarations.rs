//! Reading what each module running on a node declares for linking (`provides`,
//! `consumes`, `needs`, `mirrors`, `artifacts`), on the workers: checked, with names
//! that become paths held to the identifier rule (`crate::names`). Must not touch the
//! sealed store or another node's declarations; linking is `super::link`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;

use lang::diagnostic::did_you_mean;
use lang::value::{Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value, codes};

use super::{Artifact, Consume, Declarations, Form, Mirror, Need, Provide};
use crate::lock;
use crate::module::{self, Module};
use crate::prelude;
use crate::shape;

fn invalid(message: String, span: Span, help: &str) -> Diagnostic {
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

struct Entry<'a> {
    machine: &'a mut Machine,
    attrs: &'a Attrs,
    span: Span,
    what: String,
}

impl Entry<'_> {
    fn text(
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

    fn path(
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

    fn check_keys(&self, allowed: &[&str], diagnostics: &mut Vec<Diagnostic>) {
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

/// Reads the linking fields of every module running on a node.
#[allow(clippy::too_many_arguments)]
pub fn declarations(
    machine: &mut Machine,
    node: &crate::inventory::Node,
    resolved: &crate::resolve::Resolved,
    modules: &BTreeMap<String, Module>,
    repository_root: &std::path::Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Declarations> {
    let mut result = Declarations {
        node: node.name.clone(),
        key: node.key.clone(),
        ..Declarations::default()
    };
    for name in &resolved.modules {
        let Some(module) = modules.get(name) else {
            continue;
        };
        let settings = resolved.settings.get(name).cloned().unwrap_or(Value::Null);
        let arguments = [("node", node.value.clone()), ("settings", settings)];
        for field in ["provides", "consumes", "needs", "mirrors", "artifacts"] {
            let Some(value) = module::field_value(machine, module, field, &arguments)? else {
                continue;
            };
            let field_span = module.field_span(field);
            let Value::Attrs(entries) = value else {
                diagnostics.push(invalid(
                    format!(
                        "`{field}` of module `{name}` must be a set, not {}",
                        value.describe_type()
                    ),
                    field_span,
                    "write `NAME = { ... };` entries",
                ));
                continue;
            };
            for entry in entries.iter() {
                let entry_name = String::from_utf8_lossy(&entry.name).into_owned();
                let span = entry.span.unwrap_or(field_span);
                let source = location(machine, span, repository_root);
                let value = machine.force(&entry.value, span)?;
                if field == "mirrors" {
                    match value {
                        Value::String(reference) => {
                            let reference = String::from_utf8_lossy(&reference).into_owned();
                            if lock::is_upstream_reference(&reference) {
                                result.mirrors.push(Mirror {
                                    module: name.clone(),
                                    name: entry_name,
                                    reference,
                                    span,
                                });
                            } else {
                                diagnostics.push(invalid(
                                    format!("mirror `{entry_name}` of module `{name}` is not an image reference with a tag: {reference:?}"),
                                    span,
                                    "write the upstream image with its registry and tag, e.g. \"docker.io/library/postgres:16\"",
                                ));
                            }
                        }
                        other => diagnostics.push(invalid(
                            format!(
                                "mirror `{entry_name}` of module `{name}` must be a string, not {}",
                                other.describe_type()
                            ),
                            span,
                            "write e.g. `mirrors.postgres = \"docker.io/library/postgres:16\";`",
                        )),
                    }
                    continue;
                }
                if matches!(field, "provides" | "consumes" | "needs")
                    && !crate::names::is_identifier(&entry_name)
                {
                    diagnostics.push(not_an_identifier(field, &entry_name, name, span));
                    continue;
                }
                let Value::Attrs(attrs) = &value else {
                    diagnostics.push(invalid(
                        format!(
                            "`{field}.{entry_name}` of module `{name}` must be a set, not {}",
                            value.describe_type()
                        ),
                        span,
                        "see the book's chapter on credentials and secrets",
                    ));
                    continue;
                };
                let mut entry = Entry {
                    machine,
                    attrs,
                    span,
                    what: format!("`{field}.{entry_name}` of module `{name}`"),
                };
                match field {
                    "provides" => {
                        entry.check_keys(
                            &["manifest", "credentials", "form", "owner", "group"],
                            diagnostics,
                        );
                        let manifest = entry.path("manifest", diagnostics)?;
                        let credentials = entry.path("credentials", diagnostics)?;
                        let form_text = entry.text("form", None, diagnostics)?;
                        let owner = entry.text("owner", Some("root"), diagnostics)?;
                        let group = entry.text("group", Some("root"), diagnostics)?;
                        let form = match form_text.as_deref().map(Form::from_name) {
                            Some(Some(form)) => Some(form),
                            Some(None) => {
                                diagnostics.push(invalid(
                                    format!("{} has an unknown `form` {:?}", entry.what, form_text.unwrap_or_default()),
                                    span,
                                    "`form` is \"scram-sha-256\" (the provider gets a verifier) or \"plain\" (the provider gets the password)",
                                ));
                                None
                            }
                            None => None,
                        };
                        if let (
                            Some(manifest),
                            Some(credentials),
                            Some(form),
                            Some(owner),
                            Some(group),
                        ) = (manifest, credentials, form, owner, group)
                        {
                            result.provides.push(Provide {
                                module: name.clone(),
                                service: entry_name,
                                manifest,
                                credentials,
                                form,
                                owner,
                                group,
                                span,
                                source,
                            });
                        }
                    }
                    "consumes" => {
                        entry.check_keys(
                            &["service", "from", "path", "owner", "group", "mode"],
                            diagnostics,
                        );
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
                                    .with_primary(span, "consumed here")
                                    .with_help("`service` names a provider's `provides.NAME`, which is an identifier: ASCII letters, digits, `_` and `-`"),
                                );
                                None
                            }
                            other => other,
                        };
                        let from = entry
                            .text("from", Some(""), diagnostics)?
                            .filter(|f| !f.is_empty());
                        let path = entry.path("path", diagnostics)?;
                        let owner = entry.text("owner", Some("root"), diagnostics)?;
                        let group = entry.text("group", Some("root"), diagnostics)?;
                        let mode = entry
                            .text("mode", Some("0400"), diagnostics)?
                            .and_then(|m| mode_of(&m));
                        if let (Some(service), Some(path), Some(owner), Some(group), Some(mode)) =
                            (service, path, owner, group, mode)
                        {
                            result.consumes.push(Consume {
                                module: name.clone(),
                                name: entry_name,
                                service,
                                from,
                                path,
                                owner,
                                group,
                                mode,
                                span,
                                source,
                            });
                        }
                    }
                    "needs" => {
                        entry.check_keys(&["path", "owner", "group", "mode"], diagnostics);
                        let path = entry.path("path", diagnostics)?;
                        let owner = entry.text("owner", Some("root"), diagnostics)?;
                        let group = entry.text("group", Some("root"), diagnostics)?;
                        let mode = entry
                            .text("mode", Some("0400"), diagnostics)?
                            .and_then(|m| mode_of(&m));
                        if let (Some(path), Some(owner), Some(group), Some(mode)) =
                            (path, owner, group, mode)
                        {
                            result.needs.push(Need {
                                module: name.clone(),
                                name: entry_name,
                                path,
                                owner,
                                group,
                                mode,
                                span,
                                source,
                            });
                        }
                    }
                    _ => {
                        entry.check_keys(&["directory"], diagnostics);
                        let directory = attrs.get(b"directory").cloned().unwrap_or(Value::Null);
                        match machine.force(&directory, span)? {
                            Value::Path(path) => {
                                let absolute = PathBuf::from(String::from_utf8_lossy(&path).into_owned());
                                let resolved = absolute.canonicalize().unwrap_or_else(|_| absolute.clone());
                                match absolute.strip_prefix(repository_root) {
                                    Ok(_) if !resolved.starts_with(repository_root) => diagnostics.push(invalid(
                                        format!("artifact `{entry_name}` of module `{name}` is a link to `{}`, outside the repository", plan::display::escaped(&resolved.to_string_lossy())),
                                        span,
                                        "artifacts are real directories of the repository: replace the link with the directory",
                                    )),
                                    Ok(relative) => result.artifacts.push(Artifact {
                                        module: name.clone(),
                                        name: entry_name,
                                        directory: relative.to_string_lossy().into_owned(),
                                        absolute,
                                        span,
                                    }),
                                    Err(_) => diagnostics.push(invalid(
                                        format!("artifact `{entry_name}` of module `{name}` is not a directory of the repository"),
                                        span,
                                        "artifacts are directories of repository modules, e.g. `artifacts.site = { directory = ./site; };`",
                                    )),
                                }
                            }
                            other => diagnostics.push(invalid(
                                format!("artifact `{entry_name}` of module `{name}` needs `directory`, a path such as `./site`, not {}", other.describe_type()),
                                span,
                                "write `artifacts.NAME = { directory = ./dir; };`",
                            )),
                        }
                    }
                }
            }
        }
    }
    Ok(result)
}

fn location(machine: &Machine, span: Span, root: &std::path::Path) -> plan::Source {
    let (file, line, column) = prelude::location(machine, span, root);
    plan::Source {
        file,
        line: line as u32,
        column: column as u32,
    }
}
