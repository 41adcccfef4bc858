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
use lang::{Diagnostic, Span, codes};

use crate::artifacts;
use crate::lock::{self, Lock};
use crate::secrets::{Form, Store, StoreError};

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

// ---- reading declarations (workers): `link/declarations.rs` ---------------------

mod declarations;
pub use declarations::declarations;

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
pub(crate) const NOT_YET_MADE: &str = "-----BEGIN AGE ENCRYPTED FILE-----\nnot yet made: run `meshc build`\n-----END AGE ENCRYPTED FILE-----\n";

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
