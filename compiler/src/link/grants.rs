//! Grants: for each active consumption, its material from the store, the
//! credential placed at the consumer's path and its `logins` entry (the login, the
//! provider's node, address and facts), and on the provider's node one secret
//! per grant and the grants manifest (`mesh-grants/1`, sorted by login). A provider
//! of facts only gets no grants and its consumers no credential: only `logins`. Built from
//! the consumptions declared, never from what the store holds, so an unassigned
//! consumer has no grant and no credential file. A grant carries the consumer's
//! access (vhost, permissions) exactly when its provider's form takes one (E214,
//! E215), and that vhost joins the login's facts. A login its provider's server (or
//! `mesh-provision`, which would refuse the whole manifest) does not take is E318.
//! Must not choose providers: that is `provider::Providers::choose`.

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
use crate::secrets::{Form, GrantMaterial, Store};

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
    failed: &BTreeSet<String>,
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
            let (provider, provide) = match providers.choose(consume) {
                Ok(chosen) => chosen,
                // a provider named that failed to compile (reported) is not refused
                // again as no node or no provider
                Err(_) if Providers::from_failed(consume, failed) => {
                    link.provider_failed = true;
                    continue;
                }
                Err(mut diagnostic) if providers.unprovided_beside_failed(consume, failed) => {
                    if let Some(help) = &mut diagnostic.help {
                        help.push_str(&format!(
                            "; if a node that failed to compile ({}) provides it, fix that first",
                            lang::diagnostic::quoted_few(failed.iter().map(String::as_str))
                        ));
                    }
                    link.diagnostics.push(diagnostic);
                    link.provider_failed = true;
                    continue;
                }
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
            // before anything is made for it: `mesh-provision` would refuse the whole
            // manifest over this one login, every other grant and withdrawal with it
            let name = login(&declaration.node, &consume.module, &consume.name);
            if let Some(refusal) = why_not_login(&name, logins_at.form) {
                link.diagnostics.push(refused_login(
                    &declaration.node,
                    consume,
                    provider,
                    provide,
                    &name,
                    logins_at.form,
                    refusal,
                ));
                continue;
            }
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

/// The longest role name PostgreSQL keeps whole (`NAMEDATALEN` - 1): a longer one is
/// cut short without a word, so two grants could name one role.
const LONGEST_POSTGRES_LOGIN: usize = 63;

/// The longest RabbitMQ user name mesh grants: RabbitMQ sets no bound, but the name is
/// a segment of the management API's URLs and the name of its credential file.
const LONGEST_RABBITMQ_LOGIN: usize = 255;

/// Role names PostgreSQL refuses (`public`, `none`) or reads as another role when
/// unquoted (`current_user`, `session_user`, `current_role`).
const RESERVED_ROLE_NAMES: [&str; 5] = [
    "public",
    "none",
    "current_user",
    "session_user",
    "current_role",
];

/// The role `mesh-provision` marks the PostgreSQL logins it manages with.
const MARKER_ROLE: &str = "mesh_managed";

/// Why a login is not one its provider can grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Longer than the server keeps (or than mesh grants), or empty.
    Length(usize),
    /// Characters other than `a-z 0-9 _` (`login` never makes them).
    Characters,
    /// `pg_`, PostgreSQL's prefix for its own roles.
    PgPrefix,
    /// A name PostgreSQL reserves or reads as another role.
    Reserved,
    /// The role that marks the logins mesh manages.
    Marker,
}

/// Why the server of `form` does not take `login` as a grant's login, if it does not:
/// `mesh-provision` checks a manifest by the same rule and refuses it whole
/// (`check_login` in `provisioner/src/manifest.rs`; that crate may depend on none of
/// ours, so a test on each side holds the same names). PostgreSQL: 1 to 63 bytes of
/// `a-z 0-9 _`, not `pg_...`, a reserved role name or the marker role. RabbitMQ
/// reserves none of these: 1 to 255 bytes of `a-z 0-9 _`. A `plain` provider's
/// manifest is read by its own service, which decides for itself.
fn why_not_login(login: &str, form: Form) -> Option<Refusal> {
    let longest = match form {
        Form::ScramSha256 => LONGEST_POSTGRES_LOGIN,
        Form::RabbitSha256 => LONGEST_RABBITMQ_LOGIN,
        Form::Plain => return None,
    };
    if login.is_empty() || login.len() > longest {
        return Some(Refusal::Length(longest));
    }
    let allowed = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_';
    if !login.bytes().all(allowed) {
        return Some(Refusal::Characters);
    }
    if form != Form::ScramSha256 {
        return None;
    }
    if login.starts_with("pg_") {
        Some(Refusal::PgPrefix)
    } else if RESERVED_ROLE_NAMES.contains(&login) {
        Some(Refusal::Reserved)
    } else if login == MARKER_ROLE {
        Some(Refusal::Marker)
    } else {
        None
    }
}

/// E318: the login of `consume` on `node` is one `provide`, granting logins of
/// `form`, cannot grant.
fn refused_login(
    node: &str,
    consume: &Consume,
    provider: &str,
    provide: &Provide,
    login: &str,
    form: Form,
    refusal: Refusal,
) -> Diagnostic {
    let reason = match refusal {
        Refusal::Length(longest) if login.is_empty() => {
            format!("it is empty, and a login is 1 to {longest} bytes")
        }
        Refusal::Length(longest) if form == Form::ScramSha256 => format!(
            "it is {} bytes long, and PostgreSQL keeps {longest} bytes of a name (it cuts a longer one short without a word, so two logins could become one role)",
            login.len()
        ),
        Refusal::Length(longest) => format!(
            "it is {} bytes long, and mesh grants logins of at most {longest}",
            login.len()
        ),
        Refusal::Characters => "it has characters other than `a-z`, `0-9` and `_`".to_string(),
        Refusal::PgPrefix => {
            "it starts with `pg_`, which PostgreSQL reserves for its own roles".to_string()
        }
        Refusal::Reserved => {
            format!("PostgreSQL refuses `{login}` as a role name, or reads it as another role")
        }
        Refusal::Marker => {
            format!("`{MARKER_ROLE}` is the role that marks the logins mesh manages")
        }
    };
    let help = match refusal {
        Refusal::PgPrefix => format!(
            "a login is NODE_MODULE_NAME, so it starts with the node's name: rename node `{node}` so that its name does not start with `pg` and a separator (e.g. `db-{node}`)"
        ),
        Refusal::Length(longest) => format!(
            "a login is NODE_MODULE_NAME: shorten the name of node `{node}`, module `{}` or `consumes.{}`, so that the login is at most {longest} bytes",
            consume.module, consume.name
        ),
        Refusal::Characters | Refusal::Reserved | Refusal::Marker => format!(
            "a login is NODE_MODULE_NAME with other characters as `_`: rename node `{node}`, module `{}` or `consumes.{}`",
            consume.module, consume.name
        ),
    };
    Diagnostic::error(
        codes::INVALID_LOGIN,
        format!(
            "`consumes.{}` of module `{}` on node `{node}` would log in to `{}` on node `{provider}` as `{login}`, which cannot be granted: {reason}",
            consume.name, consume.module, consume.service
        ),
    )
    .with_primary(consume.span, format!("consumed here, as `{login}`"))
    .with_secondary(
        provide.span,
        format!("provided here, with grants of form `{}`", form.name()),
    )
    .with_help(help)
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

#[cfg(test)]
mod tests {
    use super::{Form, Refusal, why_not_login};

    /// `mesh-provision` checks a manifest's logins by this rule too: its test
    /// `login_names_follow_the_compilers_rule` holds the same names.
    #[test]
    fn login_names() {
        let long = |bytes: usize| "a".repeat(bytes);
        let taken_by_both = [
            "app1_shop_db".to_string(),
            "a".to_string(),
            "pg".to_string(),
            "pgx_app_bus".to_string(),
            "app_pg_bus".to_string(),
            "public_x".to_string(),
            "mesh_managed_x".to_string(),
            long(63),
        ];
        // RabbitMQ reserves none of PostgreSQL's names
        let rabbitmq_only = [
            "pg_app_bus".to_string(),
            "pg_".to_string(),
            "pg_signal_backend".to_string(),
            "public".to_string(),
            "none".to_string(),
            "current_user".to_string(),
            "session_user".to_string(),
            "current_role".to_string(),
            "mesh_managed".to_string(),
            long(64),
            long(255),
        ];
        let taken_by_neither = [
            String::new(),
            long(256),
            "Robert".to_string(),
            "app-1_shop_db".to_string(),
            "caf\u{e9}".to_string(),
            "a b".to_string(),
        ];
        for login in &taken_by_both {
            assert_eq!(why_not_login(login, Form::ScramSha256), None, "{login}");
            assert_eq!(why_not_login(login, Form::RabbitSha256), None, "{login}");
        }
        for login in &rabbitmq_only {
            assert!(why_not_login(login, Form::ScramSha256).is_some(), "{login}");
            assert_eq!(why_not_login(login, Form::RabbitSha256), None, "{login}");
        }
        for login in &taken_by_neither {
            assert!(
                why_not_login(login, Form::ScramSha256).is_some(),
                "{login:?}"
            );
            assert!(
                why_not_login(login, Form::RabbitSha256).is_some(),
                "{login:?}"
            );
        }
        assert_eq!(
            why_not_login("pg_app_bus", Form::ScramSha256),
            Some(Refusal::PgPrefix)
        );
        assert_eq!(
            why_not_login(&long(64), Form::ScramSha256),
            Some(Refusal::Length(63))
        );
        // a `plain` provider's own service reads its manifest
        assert_eq!(why_not_login("pg_app_bus", Form::Plain), None);
    }
}
