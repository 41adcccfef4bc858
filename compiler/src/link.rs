//! Linking: consumers to providers across nodes, grants, credential placement,
//! needs, mirror pins and artifact digests. Declarations are read per node by the
//! workers (plain data, `Send`); the link itself runs once for the whole fleet.
//!
//! Grants are built here, from the active consumption links, where the declaration
//! is built: a consumer that is not assigned anywhere declares nothing, so it has no
//! grant and no credential file, whoever gathers grants. Its sealed material stays
//! in the store, so a consumer that comes back gets what it had.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use lang::diagnostic::did_you_mean;
use lang::value::{Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value, codes};

use crate::artifacts;
use crate::lock::{self, Lock};
use crate::module::{self, Module};
use crate::prelude;
use crate::secrets::{Form, Store, StoreError};
use crate::shape;

#[derive(Clone, Debug)]
pub struct Provide {
    pub module: String,
    pub service: String,
    pub manifest: String,
    pub credentials: String,
    pub form: Form,
    pub owner: String,
    pub group: String,
    pub span: Span,
    pub source: plan::Source,
}

#[derive(Clone, Debug)]
pub struct Consume {
    pub module: String,
    pub name: String,
    pub service: String,
    pub from: Option<String>,
    pub path: String,
    pub owner: String,
    pub group: String,
    pub mode: String,
    pub span: Span,
    pub source: plan::Source,
}

#[derive(Clone, Debug)]
pub struct Need {
    pub module: String,
    pub name: String,
    pub path: String,
    pub owner: String,
    pub group: String,
    pub mode: String,
    pub span: Span,
    pub source: plan::Source,
}

#[derive(Clone, Debug)]
pub struct Mirror {
    pub module: String,
    pub name: String,
    pub reference: String,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Artifact {
    pub module: String,
    pub name: String,
    /// Repository-relative directory (the key in `mesh.lock`).
    pub directory: String,
    pub absolute: PathBuf,
    pub span: Span,
}

/// What one node declares for linking (read by its worker).
#[derive(Clone, Debug, Default)]
pub struct Declarations {
    pub node: String,
    pub key: String,
    pub provides: Vec<Provide>,
    pub consumes: Vec<Consume>,
    pub needs: Vec<Need>,
    pub mirrors: Vec<Mirror>,
    pub artifacts: Vec<Artifact>,
}

/// A shape the compiler places itself (a credential, a grants manifest, a need).
#[derive(Clone, Debug)]
pub struct Placed {
    pub resource: plan::Resource,
    pub module: String,
    pub source: plan::Source,
    pub span: Span,
}

/// One grant as a provider module sees it (`grants.SERVICE`) and as the grants
/// manifest lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub consumer: String,
    pub login: String,
    pub credential: String,
    pub form: Form,
}

/// What linking gives one node.
#[derive(Clone, Debug, Default)]
pub struct NodeLink {
    pub placed: Vec<Placed>,
    /// (module, need name) -> sealed need.
    pub secrets: BTreeMap<(String, String), String>,
    /// (module, consume name) -> sealed credential.
    pub credentials: BTreeMap<(String, String), String>,
    /// (module, service) -> grants, sorted by login.
    pub grants: BTreeMap<(String, String), Vec<Grant>>,
    /// (module, mirror name) -> pinned image.
    pub images: BTreeMap<(String, String), String>,
    /// (module, artifact name) -> (archive file name, digest).
    pub artifacts: BTreeMap<(String, String), (String, String)>,
    pub diagnostics: Vec<Diagnostic>,
}

/// How the store is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretMode {
    /// `meshc build`: make what is missing.
    Make,
    /// `meshc build --locked`: make nothing; what is missing is an error.
    Locked,
    /// `meshc check`: make nothing and report nothing missing.
    Inspect,
}

/// A secret as the language holds it: it can be given to a shape and nothing else.
pub struct SecretHandle {
    pub sealed: String,
}

impl lang::value::Opaque for SecretHandle {
    fn type_name(&self) -> &'static str {
        "secret"
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

// ---- reading declarations (workers) -----------------------------------------

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

// ---- linking (once, for the fleet) -------------------------------------------

/// The login of a consumer: `NODE_MODULE_NAME` with anything but `[a-z0-9_]` as `_`.
pub fn login(consumer: &str, module: &str, name: &str) -> String {
    format!("{consumer}_{module}_{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// "`postgres` is provided by `db1`, `db2`".
fn provided_by(service: &str, nodes: &[&str]) -> String {
    format!(
        "`{service}` is provided by {}",
        lang::diagnostic::quoted(nodes)
    )
}

/// What the store gives when it may not make anything and has nothing (`check`).
const NOT_YET_MADE: &str = "-----BEGIN AGE ENCRYPTED FILE-----\nnot yet made: run `meshc build`\n-----END AGE ENCRYPTED FILE-----\n";

fn store_diagnostic(error: StoreError, what: String, span: Span) -> Diagnostic {
    match error {
        StoreError::NotMade { reason } => {
            Diagnostic::error(codes::SECRET_NOT_MADE, format!("{what} {reason}"))
                .with_primary(span, "declared here")
                .with_help(
                    "run `meshc build` without `--locked` to make it, then commit `secrets/`",
                )
        }
        StoreError::Link { .. } => {
            Diagnostic::error(codes::SECRET_STORE_LINK, format!("{what}: {error}"))
                .with_primary(span, "declared here")
                .with_help(
                    "`secrets/` and everything in it must be real directories and files of the repository: replace the symbolic link with what it points at, or remove it and build again",
                )
        }
        other => Diagnostic::error(codes::SECRET_STORE, format!("{what}: {other}"))
            .with_primary(span, "declared here")
            .with_help(
                "check the node's `key` in mesh.nix and that `secrets/` is readable and writable",
            ),
    }
}

/// Links the fleet. `declarations` are in node order; the result is per node.
pub fn link(
    declarations: &[Declarations],
    store: &Store,
    mode: SecretMode,
    lock: &Lock,
    registry: Option<&str>,
) -> BTreeMap<String, NodeLink> {
    let mut links: BTreeMap<String, NodeLink> = declarations
        .iter()
        .map(|d| (d.node.clone(), NodeLink::default()))
        .collect();
    let keys: BTreeMap<&str, &str> = declarations
        .iter()
        .map(|d| (d.node.as_str(), d.key.as_str()))
        .collect();
    let seal = |result: Result<String, StoreError>,
                links: &mut BTreeMap<String, NodeLink>,
                node: &str,
                what: String,
                span: Span|
     -> Option<String> {
        match result {
            Ok(sealed) => Some(sealed),
            Err(StoreError::NotMade { .. }) if mode == SecretMode::Inspect => {
                Some(NOT_YET_MADE.to_string())
            }
            Err(error) => {
                if let Some(link) = links.get_mut(node) {
                    link.diagnostics.push(store_diagnostic(error, what, span));
                }
                None
            }
        }
    };

    // needs
    for declaration in declarations {
        for need in &declaration.needs {
            let sealed = seal(
                store.need(
                    &declaration.node,
                    &need.module,
                    &need.name,
                    &declaration.key,
                ),
                &mut links,
                &declaration.node,
                format!(
                    "need `{}` of module `{}` on node `{}`",
                    need.name, need.module, declaration.node
                ),
                need.span,
            );
            let Some(sealed) = sealed else { continue };
            let Some(link) = links.get_mut(&declaration.node) else {
                continue;
            };
            link.placed.push(Placed {
                resource: plan::Resource::Secret(plan::Secret {
                    path: need.path.clone(),
                    sealed: sealed.clone(),
                    owner: need.owner.clone(),
                    group: need.group.clone(),
                    mode: need.mode.clone(),
                }),
                module: need.module.clone(),
                source: need.source.clone(),
                span: need.span,
            });
            link.secrets
                .insert((need.module.clone(), need.name.clone()), sealed);
        }
    }

    // consumers to providers
    let mut providers: BTreeMap<&str, Vec<(&str, &Provide)>> = BTreeMap::new();
    for declaration in declarations {
        for provide in &declaration.provides {
            providers
                .entry(provide.service.as_str())
                .or_default()
                .push((declaration.node.as_str(), provide));
        }
    }
    // provider node, service -> (provide, grants)
    // (provider node, service) -> the provide entry and its grants with their sealed checks
    type Granted = BTreeMap<(String, String), (Provide, Vec<(Grant, String, Span)>)>;
    let mut granted: Granted = BTreeMap::new();
    for declaration in declarations {
        for consume in &declaration.consumes {
            let candidates: Vec<&(&str, &Provide)> = providers
                .get(consume.service.as_str())
                .map(|v| v.iter().collect())
                .unwrap_or_default();
            let names: Vec<&str> = candidates.iter().map(|(node, _)| *node).collect();
            let chosen = match &consume.from {
                Some(from) => match candidates.iter().find(|(node, _)| node == from) {
                    Some(found) => Some(**found),
                    None => {
                        let diagnostic = if keys.contains_key(from.as_str()) || names.is_empty() {
                            let listed = if names.is_empty() {
                                format!("no node provides `{}`", consume.service)
                            } else {
                                provided_by(&consume.service, &names)
                            };
                            Diagnostic::error(
                                codes::NOT_A_PROVIDER,
                                format!("`{}` of module `{}` on node `{}` asks `{from}` for `{}`, which `{from}` does not provide", consume.name, consume.module, declaration.node, consume.service),
                            )
                            .with_primary(consume.span, "consumed here")
                            .with_help(format!("{listed}; set `from` (usually a setting in mesh.nix) to one of them"))
                        } else {
                            let help = did_you_mean(from, keys.keys().copied())
                                .unwrap_or_else(|| provided_by(&consume.service, &names));
                            Diagnostic::error(
                                codes::NOT_A_PROVIDER,
                                format!("`{}` of module `{}` on node `{}` asks node `{from}` for `{}`, but there is no node `{from}`", consume.name, consume.module, declaration.node, consume.service),
                            )
                            .with_primary(consume.span, "consumed here")
                            .with_help(help)
                        };
                        if let Some(link) = links.get_mut(&declaration.node) {
                            link.diagnostics.push(diagnostic);
                        }
                        None
                    }
                },
                None => match candidates.as_slice() {
                    [only] => Some(**only),
                    [] => {
                        if let Some(link) = links.get_mut(&declaration.node) {
                            link.diagnostics.push(
                                Diagnostic::error(
                                    codes::NO_PROVIDER,
                                    format!("`{}` of module `{}` on node `{}` consumes `{}`, which no node provides", consume.name, consume.module, declaration.node, consume.service),
                                )
                                .with_primary(consume.span, "consumed here")
                                .with_help(format!("assign a module that `provides.{}` to a node", consume.service)),
                            );
                        }
                        None
                    }
                    several => {
                        if let Some(link) = links.get_mut(&declaration.node) {
                            link.diagnostics.push(
                                Diagnostic::error(
                                    codes::AMBIGUOUS_PROVIDER,
                                    format!(
                                        "`{}` of module `{}` on node `{}` consumes `{}`, which {} nodes provide: {}",
                                        consume.name,
                                        consume.module,
                                        declaration.node,
                                        consume.service,
                                        several.len(),
                                        lang::diagnostic::quoted(names)
                                    ),
                                )
                                .with_primary(consume.span, "consumed here")
                                .with_help("choose one with `from` (usually a setting of the consuming module, set per node in mesh.nix)"),
                            );
                        }
                        None
                    }
                },
            };
            let Some((provider, provide)) = chosen else {
                continue;
            };
            let provider_key = keys.get(provider).copied().unwrap_or_default();
            let what = format!(
                "the credential `{}` of module `{}` on node `{}`",
                consume.name, consume.module, declaration.node
            );
            let material = store.grant(
                provider,
                &consume.service,
                &declaration.node,
                &consume.module,
                &consume.name,
                &declaration.key,
                provider_key,
                provide.form,
            );
            let material = match material {
                Ok(material) => material,
                Err(StoreError::NotMade { .. }) if mode == SecretMode::Inspect => {
                    crate::secrets::GrantMaterial {
                        consumer: NOT_YET_MADE.to_string(),
                        provider: NOT_YET_MADE.to_string(),
                    }
                }
                Err(error) => {
                    if let Some(link) = links.get_mut(&declaration.node) {
                        link.diagnostics
                            .push(store_diagnostic(error, what, consume.span));
                    }
                    continue;
                }
            };
            let login = login(&declaration.node, &consume.module, &consume.name);
            let grant = Grant {
                consumer: format!("{}/{}/{}", declaration.node, consume.module, consume.name),
                login: login.clone(),
                credential: format!("{}/{login}", provide.credentials),
                form: provide.form,
            };
            granted
                .entry((provider.to_string(), consume.service.clone()))
                .or_insert_with(|| (provide.clone(), Vec::new()))
                .1
                .push((grant, material.provider, consume.span));
            if let Some(link) = links.get_mut(&declaration.node) {
                link.placed.push(Placed {
                    resource: plan::Resource::Secret(plan::Secret {
                        path: consume.path.clone(),
                        sealed: material.consumer.clone(),
                        owner: consume.owner.clone(),
                        group: consume.group.clone(),
                        mode: consume.mode.clone(),
                    }),
                    module: consume.module.clone(),
                    source: consume.source.clone(),
                    span: consume.span,
                });
                link.credentials.insert(
                    (consume.module.clone(), consume.name.clone()),
                    material.consumer,
                );
            }
        }
    }

    // grants manifests and provider credentials
    for ((provider, service), (provide, mut grants)) in granted {
        grants.sort_by(|a, b| a.0.login.cmp(&b.0.login));
        let Some(link) = links.get_mut(&provider) else {
            continue;
        };
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut listed = Vec::new();
        for (grant, sealed, _) in &grants {
            if !seen.insert(grant.login.clone()) {
                link.diagnostics.push(
                    Diagnostic::error(
                        codes::LOGIN_CONFLICT,
                        format!("two consumers of `{service}` on node `{provider}` would both log in as `{}`", grant.login),
                    )
                    .with_primary(provide.span, "provided here")
                    .with_help("logins are NODE_MODULE_NAME with other characters as `_`: rename one of the consumers"),
                );
                continue;
            }
            listed.push(serde_json::json!({
                "consumer": grant.consumer,
                "login": grant.login,
                "credential": grant.credential,
                "form": grant.form.name(),
            }));
            link.placed.push(Placed {
                resource: plan::Resource::Secret(plan::Secret {
                    path: grant.credential.clone(),
                    sealed: sealed.clone(),
                    owner: provide.owner.clone(),
                    group: provide.group.clone(),
                    mode: "0400".to_string(),
                }),
                module: provide.module.clone(),
                source: provide.source.clone(),
                span: provide.span,
            });
        }
        link.placed
            .push(grants_manifest(&provide, &provider, listed));
        link.grants.insert(
            (provide.module.clone(), service.clone()),
            grants.into_iter().map(|(grant, _, _)| grant).collect(),
        );
    }
    // a provider with no consumers still gets its (empty) manifest
    for declaration in declarations {
        for provide in &declaration.provides {
            let Some(link) = links.get_mut(&declaration.node) else {
                continue;
            };
            let key = (provide.module.clone(), provide.service.clone());
            if link.grants.contains_key(&key) {
                continue;
            }
            link.placed
                .push(grants_manifest(provide, &declaration.node, Vec::new()));
            link.grants.insert(key, Vec::new());
        }
    }

    // mirrors and artifacts
    let mut built: BTreeMap<String, Result<String, artifacts::BuildError>> = BTreeMap::new();
    for declaration in declarations {
        let Some(link) = links.get_mut(&declaration.node) else {
            continue;
        };
        for mirror in &declaration.mirrors {
            let Some(digest) = lock.mirrors.get(&mirror.reference) else {
                link.diagnostics.push(
                    Diagnostic::error(
                        codes::UNPINNED_MIRROR,
                        format!("mirror `{}` of module `{}` ({}) is not pinned", mirror.name, mirror.module, mirror.reference),
                    )
                    .with_primary(mirror.span, "mirrored here")
                    .with_help(format!("pin it to the digest you have checked: `meshc lock --pin {}=sha256:<digest>`", mirror.reference)),
                );
                continue;
            };
            let Some(registry) = registry else {
                link.diagnostics.push(
                    Diagnostic::error(
                        codes::MIRROR_WITHOUT_REGISTRY,
                        format!("mirror `{}` of module `{}` needs a registry, and the inventory names none", mirror.name, mirror.module),
                    )
                    .with_primary(mirror.span, "mirrored here")
                    .with_help("set `registry = \"registry.example:5000\";` in mesh.nix: mirrored images are pulled from it"),
                );
                continue;
            };
            link.images.insert(
                (mirror.module.clone(), mirror.name.clone()),
                lock::pinned_image(registry, &mirror.reference, digest),
            );
        }
        for artifact in &declaration.artifacts {
            let result = built
                .entry(artifact.directory.clone())
                .or_insert_with(|| artifacts::build_checked(&artifact.absolute).map(|b| b.digest))
                .clone();
            let digest = match result {
                Ok(digest) => digest,
                Err(artifacts::BuildError::EscapingLink(escaping)) => {
                    link.diagnostics.push(escaping_link(artifact, &escaping));
                    continue;
                }
                Err(artifacts::BuildError::Other(reason)) => {
                    link.diagnostics.push(
                        Diagnostic::error(
                            codes::UNBUILT_ARTIFACT,
                            format!(
                                "artifact `{}` of module `{}` cannot be archived: {reason}",
                                artifact.name, artifact.module
                            ),
                        )
                        .with_primary(artifact.span, "declared here")
                        .with_help(
                            "the directory must exist and hold only files, directories and links",
                        ),
                    );
                    continue;
                }
            };
            match lock.artifacts.get(&artifact.directory) {
                Some(locked) if *locked == digest => {
                    link.artifacts.insert(
                        (artifact.module.clone(), artifact.name.clone()),
                        (artifacts::file_name(&digest), digest),
                    );
                }
                Some(_) => link.diagnostics.push(
                    Diagnostic::error(
                        codes::UNBUILT_ARTIFACT,
                        format!(
                            "artifact `{}` of module `{}` changed since it was built ({})",
                            artifact.name, artifact.module, artifact.directory
                        ),
                    )
                    .with_primary(artifact.span, "declared here")
                    .with_help("build it again: `meshc artifacts build`"),
                ),
                None => link.diagnostics.push(
                    Diagnostic::error(
                        codes::UNBUILT_ARTIFACT,
                        format!(
                            "artifact `{}` of module `{}` has not been built ({})",
                            artifact.name, artifact.module, artifact.directory
                        ),
                    )
                    .with_primary(artifact.span, "declared here")
                    .with_help("build it: `meshc artifacts build`"),
                ),
            }
        }
    }
    links
}

/// An artifact whose directory holds a link that leaves it: refused before packing,
/// since unpacking it on a node would reach outside the archive's directory.
fn escaping_link(artifact: &Artifact, escaping: &artifacts::EscapingLink) -> Diagnostic {
    Diagnostic::error(
        codes::ARTIFACT_LINK_ESCAPES,
        format!(
            "artifact `{}` of module `{}` cannot be archived: in `{}`, {escaping}",
            artifact.name, artifact.module, artifact.directory
        ),
    )
    .with_primary(artifact.span, "declared here")
    .with_help(format!(
        "links of an artifact must resolve inside its directory (following its other links): change or remove `{}/{}`",
        artifact.directory,
        plan::display::escaped(&escaping.path.to_string_lossy())
    ))
}

/// The grants manifest (`mesh-grants/1`) of `provide` on `node`, as the file shape
/// placed at its `manifest` path.
fn grants_manifest(provide: &Provide, node: &str, grants: Vec<serde_json::Value>) -> Placed {
    let manifest = serde_json::json!({
        "format": "mesh-grants/1",
        "service": provide.service,
        "node": node,
        "grants": grants,
    });
    let mut content = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    content.push('\n');
    Placed {
        resource: plan::Resource::File(plan::File {
            path: provide.manifest.clone(),
            content: Some(content),
            content_base64: None,
            owner: provide.owner.clone(),
            group: provide.group.clone(),
            mode: "0644".to_string(),
        }),
        module: provide.module.clone(),
        source: provide.source.clone(),
        span: provide.span,
    }
}
