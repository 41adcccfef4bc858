//! Grants: for each active consumption, its material from the store, the
//! credential placed at the consumer's path and its `logins` entry (the login, the
//! provider's node, address and facts), and on the provider's node one secret
//! per grant and the grants manifest (`mesh-grants/1`, sorted by login). A provider
//! of facts only gets no grants and its consumers no credential: only `logins`. Built from
//! the consumptions declared, never from what the store holds, so an unassigned
//! consumer has no grant and no credential file. A grant carries the consumer's
//! access (vhost, permissions) exactly when its provider's form takes one (E214,
//! E215), and that vhost joins the login's facts. Must not choose providers: that is
//! `provider::Providers::choose`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use lang::{Diagnostic, codes};

use super::facts::{Fact, Facts};
use super::provider::Providers;
use super::store::{self, NOT_YET_MADE};
use super::{
    Access, Consume, Declarations, Grant, Login, LoginsAt, NodeLink, Placed, Provide, SecretMode,
    login,
};
use crate::secrets::{GrantMaterial, Store};

/// One grant of a provider with its sealed check.
struct Granted {
    grant: Grant,
    sealed: String,
}

/// (provider node, service) -> the provide entry and its grants.
type ByProvider = BTreeMap<(String, String), (Provide, Vec<Granted>)>;

/// Links every consumption of the fleet and places its credentials and grants.
pub(super) fn place(
    declarations: &[Arc<Declarations>],
    store: &Store,
    mode: SecretMode,
    links: &mut BTreeMap<String, NodeLink>,
) {
    let providers = Providers::of(declarations);
    let nodes: BTreeMap<&str, &Declarations> = declarations
        .iter()
        .map(|d| (d.node.as_str(), &**d))
        .collect();
    let mut granted: ByProvider = BTreeMap::new();
    for declaration in declarations {
        for consume in &declaration.consumes {
            // the declaration's own node: its link is made if it has none yet
            let link = links.entry(declaration.node.clone()).or_default();
            let (provider, provide) = match providers.choose(&declaration.node, consume) {
                Ok(chosen) => chosen,
                Err(diagnostic) => {
                    link.diagnostics.push(diagnostic);
                    continue;
                }
            };
            let access = match access_of(consume, provide) {
                Ok(access) => access,
                Err(diagnostic) => {
                    link.diagnostics.push(diagnostic);
                    continue;
                }
            };
            let provider_node = nodes.get(provider);
            let address = provider_node.and_then(|d| d.address.clone());
            let (logins_at, path) = match (&provide.logins, &consume.path) {
                (Some(logins_at), Some(path)) => (logins_at, path),
                (None, None) => {
                    // facts only: the consumer learns where the provider is, nothing is made
                    link.logins.insert(
                        (consume.module.clone(), consume.name.clone()),
                        Login {
                            login: login(&declaration.node, &consume.module, &consume.name),
                            provider: provider.to_string(),
                            address,
                            path: None,
                            facts: provide.facts.clone(),
                        },
                    );
                    continue;
                }
                (None, Some(_)) | (Some(_), None) => {
                    link.diagnostics.push(misplaced_path(
                        &declaration.node,
                        consume,
                        provider,
                        provide,
                    ));
                    continue;
                }
            };
            let provider_key = provider_node.map(|d| d.key.as_str()).unwrap_or_default();
            let material = store::sealed(
                store.grant(
                    provider,
                    &consume.service,
                    &declaration.node,
                    &consume.module,
                    &consume.name,
                    &declaration.key,
                    provider_key,
                    logins_at.form,
                ),
                mode,
                || GrantMaterial {
                    consumer: NOT_YET_MADE.to_string(),
                    provider: NOT_YET_MADE.to_string(),
                },
                || {
                    format!(
                        "the credential `{}` of module `{}` on node `{}`",
                        consume.name, consume.module, declaration.node
                    )
                },
                consume.span,
            );
            let material = match material {
                Ok(material) => material,
                Err(diagnostic) => {
                    link.diagnostics.push(diagnostic);
                    continue;
                }
            };
            let grant = grant_of(&declaration.node, consume, logins_at, access);
            link.logins.insert(
                (consume.module.clone(), consume.name.clone()),
                Login {
                    login: grant.login.clone(),
                    provider: provider.to_string(),
                    address,
                    path: Some(path.clone()),
                    facts: login_facts(&provide.facts, grant.access.as_ref()),
                },
            );
            granted
                .entry((provider.to_string(), consume.service.clone()))
                .or_insert_with(|| (provide.clone(), Vec::new()))
                .1
                .push(Granted {
                    grant,
                    sealed: material.provider,
                });
            place_credential(link, consume, path, material.consumer);
        }
    }
    for ((provider, service), (provide, grants)) in granted {
        if nodes.contains_key(provider.as_str()) {
            let link = links.entry(provider.clone()).or_default();
            place_grants(link, &provider, &service, &provide, grants);
        }
    }
    // a provider with no consumers still gets its (empty) manifest
    for declaration in declarations {
        if declaration
            .provides
            .iter()
            .all(|provide| provide.logins.is_none())
        {
            continue;
        }
        let link = links.entry(declaration.node.clone()).or_default();
        for provide in &declaration.provides {
            let key = (provide.module.clone(), provide.service.clone());
            let Some(logins_at) = &provide.logins else {
                continue;
            };
            if link.grants.contains_key(&key) {
                continue;
            }
            link.placed.push(grants_manifest(
                provide,
                logins_at,
                &declaration.node,
                Vec::new(),
            ));
            link.grants.insert(key, Vec::new());
        }
    }
}

/// The access `consume` asks of `provide`: one exactly when the provider's form
/// takes it (a vhost for RabbitMQ, E215 without; none for PostgreSQL, E214 with).
fn access_of(consume: &Consume, provide: &Provide) -> Result<Option<Access>, Diagnostic> {
    let form = provide.logins.as_ref().map(|logins| logins.form);
    match (&consume.access, form.is_some_and(|form| form.takes_access())) {
        (Some(access), true) => Ok(Some(access.clone())),
        (None, false) => Ok(None),
        (None, true) => Err(Diagnostic::error(
            codes::ACCESS_MISSING,
            format!(
                "`consumes.{}` of module `{}` asks for `{}` without a `vhost`: its provider's logins are granted in a vhost",
                consume.name, consume.module, consume.service
            ),
        )
        .with_primary(consume.span, "consumed here")
        .with_secondary(provide.span, "provided here, with grants of form `rabbit_password_hashing_sha256`")
        .with_help("add `vhost = \"NAME\";` (and `permissions = { configure = ...; write = ...; read = ...; };` for less than everything in it)")),
        (Some(access), false) => Err(Diagnostic::error(
            codes::ACCESS_NOT_TAKEN,
            format!(
                "`consumes.{}` of module `{}` declares a `vhost` or `permissions`, but its provider of `{}` {}, which take neither",
                consume.name, consume.module, consume.service,
                form.map_or("hands out no logins, only facts".to_string(), |form| format!("grants logins of form `{}`", form.name()))
            ),
        )
        .with_primary(access.span, "not taken by this provider")
        .with_secondary(provide.span, "provided here")
        .with_help("remove `vhost` and `permissions`: they are for a RabbitMQ provider")),
    }
}

/// The grant `consume` on `node` gets at `provide`.
fn grant_of(node: &str, consume: &Consume, logins_at: &LoginsAt, access: Option<Access>) -> Grant {
    let login = login(node, &consume.module, &consume.name);
    Grant {
        consumer: format!("{node}/{}/{}", consume.module, consume.name),
        credential: format!("{}/{login}", logins_at.credentials),
        login,
        form: logins_at.form,
        access,
    }
}

/// The facts `consume` receives from `provide` as `logins.NAME.facts` (for views; an
/// access the provider does not take adds nothing).
pub(crate) fn facts_for(consume: &Consume, provide: &Provide) -> Facts {
    let access = access_of(consume, provide).ok().flatten();
    login_facts(&provide.facts, access.as_ref())
}

/// What the consumer sees as `logins.NAME.facts`: the provider's facts, and the
/// grant's `vhost` when it has one (the grant's own, over a provider's `vhost`).
fn login_facts(provided: &Facts, access: Option<&Access>) -> Facts {
    let mut facts = provided.clone();
    if let Some(access) = access {
        facts.insert("vhost".to_string(), Fact::String(access.vhost.clone()));
    }
    facts
}

/// A grant as the grants manifest lists it.
fn listed(grant: &Grant) -> serde_json::Value {
    let mut entry = serde_json::json!({
        "consumer": grant.consumer,
        "login": grant.login,
        "credential": grant.credential,
        "form": grant.form.name(),
    });
    if let (Some(access), Some(fields)) = (&grant.access, entry.as_object_mut()) {
        fields.insert("vhost".to_string(), access.vhost.clone().into());
        fields.insert(
            "permissions".to_string(),
            serde_json::json!({
                "configure": access.permissions.configure,
                "write": access.permissions.write,
                "read": access.permissions.read,
            }),
        );
    }
    entry
}

/// E216 for a credential `path` where the provider hands out no logins, only facts;
/// E217 for none where it hands out logins.
fn misplaced_path(node: &str, consume: &Consume, provider: &str, provide: &Provide) -> Diagnostic {
    let what = format!(
        "`{}` of module `{}` on node `{node}`",
        consume.name, consume.module
    );
    let (code, message, provided, help) = if consume.path.is_some() {
        (
            codes::PATH_FOR_FACTS_ONLY,
            format!(
                "{what} gives a credential `path`, but `{}` on node `{provider}` hands out no logins, only facts",
                consume.service
            ),
            "provided here, without `manifest`, `credentials` and `form`",
            format!(
                "remove `path` from `consumes.{0}`: `logins.{0}` still gives the provider's node, address and facts",
                consume.name
            ),
        )
    } else {
        (
            codes::CONSUMPTION_WITHOUT_PATH,
            format!(
                "{what} gives no `path`, but `{}` on node `{provider}` hands out logins: its credential must be placed somewhere",
                consume.service
            ),
            "provided here, with logins",
            format!(
                "add `path = \"/var/lib/mesh/credentials/{}-{}\";` to `consumes.{}`",
                consume.module, consume.name, consume.name
            ),
        )
    };
    Diagnostic::error(code, message)
        .with_primary(consume.span, "consumed here")
        .with_secondary(provide.span, provided)
        .with_help(help)
}

/// The consumer's credential: a secret shape at its path, and its handle.
fn place_credential(link: &mut NodeLink, consume: &Consume, path: &str, sealed: String) {
    link.placed.push(Placed {
        resource: plan::Resource::Secret(plan::Secret {
            path: path.to_string(),
            sealed: sealed.clone(),
            owner: consume.owner.clone(),
            group: consume.group.clone(),
            mode: consume.mode.clone(),
        }),
        module: consume.module.clone(),
        source: consume.source.clone(),
        span: consume.span,
    });
    link.credentials
        .insert((consume.module.clone(), consume.name.clone()), sealed);
}

/// A provider's grants of one service: one secret per login (two consumers with
/// one login are E309), the grants manifest, and `grants.SERVICE` for its module.
fn place_grants(
    link: &mut NodeLink,
    provider: &str,
    service: &str,
    provide: &Provide,
    mut grants: Vec<Granted>,
) {
    let Some(logins_at) = &provide.logins else {
        return;
    };
    grants.sort_by(|a, b| a.grant.login.cmp(&b.grant.login));
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut entries = Vec::new();
    for Granted { grant, sealed } in &grants {
        if !seen.insert(grant.login.clone()) {
            link.diagnostics.push(
                Diagnostic::error(
                    codes::LOGIN_CONFLICT,
                    format!(
                        "two consumers of `{service}` on node `{provider}` would both log in as `{}`",
                        grant.login
                    ),
                )
                .with_primary(provide.span, "provided here")
                .with_help("logins are NODE_MODULE_NAME with other characters as `_`: rename one of the consumers"),
            );
            continue;
        }
        entries.push(listed(grant));
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
        .push(grants_manifest(provide, logins_at, provider, entries));
    link.grants.insert(
        (provide.module.clone(), service.to_string()),
        grants.into_iter().map(|granted| granted.grant).collect(),
    );
}

/// The grants manifest (`mesh-grants/1`) of `provide` on `node`, as the file shape
/// placed at its `manifest` path.
fn grants_manifest(
    provide: &Provide,
    logins_at: &LoginsAt,
    node: &str,
    grants: Vec<serde_json::Value>,
) -> Placed {
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
            path: logins_at.manifest.clone(),
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
