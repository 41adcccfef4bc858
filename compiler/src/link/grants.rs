//! Grants: for each active consumption, its material from the store, the
//! credential placed at the consumer's path and its `logins` entry (the login, the
//! provider's node, address and facts), and on the provider's node one secret
//! per grant and the grants manifest (`mesh-grants/1`, sorted by login). Built from
//! the consumptions declared, never from what the store holds, so an unassigned
//! consumer has no grant and no credential file. A grant carries the consumer's
//! access (vhost, permissions) exactly when its provider's form takes one (E214,
//! E215), and that vhost joins the login's facts. Must not choose providers: that is
//! `provider::Providers::choose`.

use std::collections::{BTreeMap, BTreeSet};

use lang::{Diagnostic, codes};

use super::facts::{Fact, Facts};
use super::provider::Providers;
use super::store::{self, NOT_YET_MADE};
use super::{
    Access, Consume, Declarations, Grant, Login, NodeLink, Placed, Provide, SecretMode, login,
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
    declarations: &[Declarations],
    store: &Store,
    mode: SecretMode,
    links: &mut BTreeMap<String, NodeLink>,
) {
    let providers = Providers::of(declarations);
    let nodes: BTreeMap<&str, &Declarations> =
        declarations.iter().map(|d| (d.node.as_str(), d)).collect();
    let mut granted: ByProvider = BTreeMap::new();
    for declaration in declarations {
        for consume in &declaration.consumes {
            let Some(link) = links.get_mut(&declaration.node) else {
                continue;
            };
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
                    provide.form,
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
            let grant = grant_of(&declaration.node, consume, provide, access);
            link.logins.insert(
                (consume.module.clone(), consume.name.clone()),
                Login {
                    login: grant.login.clone(),
                    provider: provider.to_string(),
                    address: provider_node.and_then(|d| d.address.clone()),
                    path: consume.path.clone(),
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
            place_credential(link, consume, material.consumer);
        }
    }
    for ((provider, service), (provide, grants)) in granted {
        if let Some(link) = links.get_mut(&provider) {
            place_grants(link, &provider, &service, &provide, grants);
        }
    }
    // a provider with no consumers still gets its (empty) manifest
    for declaration in declarations {
        let Some(link) = links.get_mut(&declaration.node) else {
            continue;
        };
        for provide in &declaration.provides {
            let key = (provide.module.clone(), provide.service.clone());
            if link.grants.contains_key(&key) {
                continue;
            }
            link.placed
                .push(grants_manifest(provide, &declaration.node, Vec::new()));
            link.grants.insert(key, Vec::new());
        }
    }
}

/// The access `consume` asks of `provide`: one exactly when the provider's form
/// takes it (a vhost for RabbitMQ, E215 without; none for PostgreSQL, E214 with).
fn access_of(consume: &Consume, provide: &Provide) -> Result<Option<Access>, Diagnostic> {
    match (&consume.access, provide.form.takes_access()) {
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
                "`consumes.{}` of module `{}` declares a `vhost` or `permissions`, but its provider of `{}` grants logins of form `{}`, which take neither",
                consume.name, consume.module, consume.service, provide.form.name()
            ),
        )
        .with_primary(access.span, "not taken by this provider")
        .with_secondary(provide.span, "provided here")
        .with_help("remove `vhost` and `permissions`: they are for a RabbitMQ provider")),
    }
}

/// The grant `consume` on `node` gets at `provide`.
fn grant_of(node: &str, consume: &Consume, provide: &Provide, access: Option<Access>) -> Grant {
    let login = login(node, &consume.module, &consume.name);
    Grant {
        consumer: format!("{node}/{}/{}", consume.module, consume.name),
        credential: format!("{}/{login}", provide.credentials),
        login,
        form: provide.form,
        access,
    }
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

/// The consumer's credential: a secret shape at its path, and its handle.
fn place_credential(link: &mut NodeLink, consume: &Consume, sealed: String) {
    link.placed.push(Placed {
        resource: plan::Resource::Secret(plan::Secret {
            path: consume.path.clone(),
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
        .push(grants_manifest(provide, provider, entries));
    link.grants.insert(
        (provide.module.clone(), service.to_string()),
        grants.into_iter().map(|granted| granted.grant).collect(),
    );
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
