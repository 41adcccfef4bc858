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
use std::sync::Arc;

use lang::{Diagnostic, Span};

use serde::{Deserialize, Serialize};

use crate::lock::Lock;
use crate::secrets::{Form, Store};

mod artifacts;
mod declarations;
pub(crate) mod facts;
pub(crate) mod grants;
mod mirrors;
mod needs;
mod provider;
mod serial;

/// The file of a position read back from the build cache: none of the compilation's.
pub(crate) use serial::span::NO_FILE;
mod store;

pub use declarations::declarations;
pub use facts::{Facts, to_value as facts_value};
pub use provider::Providers;
pub(crate) use store::{NOT_YET_MADE, store_write_diagnostic};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Provide {
    pub module: String,
    pub service: String,
    /// Where its logins go; `None` for a provider that hands out no logins, only
    /// its facts (`provides.SERVICE = { facts = ...; }`).
    pub logins: Option<LoginsAt>,
    pub owner: String,
    pub group: String,
    /// What the provider publishes to its consumers (`facts`).
    pub facts: Facts,
    #[serde(with = "serial::span")]
    pub span: Span,
    pub source: plan::Source,
}

/// Where a provider that hands out logins keeps them, and how it checks them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoginsAt {
    pub manifest: String,
    pub credentials: String,
    pub form: Form,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Consume {
    pub module: String,
    pub name: String,
    pub service: String,
    pub from: Option<String>,
    /// Where the credential is placed; `None` asks a provider of facts only.
    pub path: Option<String>,
    pub owner: String,
    pub group: String,
    pub mode: String,
    /// The vhost and permissions asked for, if the entry declares them.
    pub access: Option<Access>,
    #[serde(with = "serial::span")]
    pub span: Span,
    pub source: plan::Source,
}

/// What a grant allows at a provider whose grants carry access (RabbitMQ): one vhost
/// and the configure, write and read permissions in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    pub vhost: String,
    pub permissions: Permissions,
    /// Where the consumer declares it.
    #[serde(with = "serial::span")]
    pub span: Span,
}

/// RabbitMQ's three permissions, each a regular expression over resource names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permissions {
    pub configure: String,
    pub write: String,
    pub read: String,
}

impl Permissions {
    /// Everything in the vhost, as `rabbitmqctl set_permissions ... ".*" ".*" ".*"`.
    pub fn all() -> Permissions {
        Permissions {
            configure: ".*".to_string(),
            write: ".*".to_string(),
            read: ".*".to_string(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Need {
    pub module: String,
    pub name: String,
    pub path: String,
    pub owner: String,
    pub group: String,
    pub mode: String,
    #[serde(with = "serial::span")]
    pub span: Span,
    pub source: plan::Source,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Mirror {
    pub module: String,
    pub name: String,
    pub reference: String,
    #[serde(with = "serial::span")]
    pub span: Span,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Artifact {
    pub module: String,
    pub name: String,
    /// Repository-relative directory (the key in `mesh.lock`).
    pub directory: String,
    pub absolute: PathBuf,
    #[serde(with = "serial::span")]
    pub span: Span,
}

/// What one node declares for linking (read by its worker).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Declarations {
    pub node: String,
    pub key: String,
    /// The node's `address` in the inventory, if it has one.
    pub address: Option<String>,
    pub provides: Vec<Provide>,
    pub consumes: Vec<Consume>,
    pub needs: Vec<Need>,
    pub mirrors: Vec<Mirror>,
    pub artifacts: Vec<Artifact>,
}

impl Declarations {
    /// Whether `other` declares the same, wherever their spans point (the files of
    /// two evaluations are numbered apart).
    pub fn same_but_spans(&self, other: &Declarations) -> bool {
        format!("{:?}", self.without_spans()) == format!("{:?}", other.without_spans())
    }

    fn without_spans(&self) -> Declarations {
        let mut declarations = self.clone();
        declarations.each_span(|span| *span = Span::default());
        declarations
    }

    /// The declarations as a record keeps them: each span its byte range in no
    /// file of this compilation ([`NO_FILE`]), as they are when read back from a
    /// cache file, whose spans are kept without their file.
    pub fn unfiled(&self) -> Declarations {
        let mut declarations = self.clone();
        declarations.each_span(|span| span.file = NO_FILE);
        declarations
    }

    fn each_span(&mut self, mut change: impl FnMut(&mut Span)) {
        for provide in &mut self.provides {
            change(&mut provide.span);
        }
        for consume in &mut self.consumes {
            change(&mut consume.span);
            if let Some(access) = &mut consume.access {
                change(&mut access.span);
            }
        }
        for need in &mut self.needs {
            change(&mut need.span);
        }
        for mirror in &mut self.mirrors {
            change(&mut mirror.span);
        }
        for artifact in &mut self.artifacts {
            change(&mut artifact.span);
        }
    }
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
    /// The vhost and permissions, for a form that takes them.
    pub access: Option<Access>,
}

/// What a consumer's `shapes` learns of one of its logins (`logins.NAME`).
#[derive(Clone, Debug, PartialEq)]
pub struct Login {
    pub login: String,
    /// The provider's node name and address.
    pub provider: String,
    pub address: Option<String>,
    /// Where the credential is placed on the consumer's node; `None` when the
    /// provider hands out facts only.
    pub path: Option<String>,
    pub facts: Facts,
}

/// What linking gives one node.
#[derive(Clone, Debug, Default)]
pub struct NodeLink {
    pub placed: Vec<Placed>,
    /// (module, need name) -> sealed need.
    pub secrets: BTreeMap<(String, String), String>,
    /// (module, consume name) -> sealed credential.
    pub credentials: BTreeMap<(String, String), String>,
    /// (module, consume name) -> the login, its provider and the provider's facts.
    pub logins: BTreeMap<(String, String), Login>,
    /// (module, service) -> grants, sorted by login.
    pub grants: BTreeMap<(String, String), Vec<Grant>>,
    /// (module, mirror name) -> pinned image.
    pub images: BTreeMap<(String, String), String>,
    /// (module, artifact name) -> (archive file name, digest).
    pub artifacts: BTreeMap<(String, String), (String, String)>,
    pub diagnostics: Vec<Diagnostic>,
    /// A node it consumes from failed to compile (reported): its consumptions are
    /// not all linked, so its shapes are not made (they would fail for want of a
    /// login, an error that is not the node's).
    pub provider_failed: bool,
}

impl NodeLink {
    /// Whether the node receives nothing from the link and it said nothing.
    pub fn is_empty(&self) -> bool {
        let NodeLink {
            placed,
            secrets,
            credentials,
            logins,
            grants,
            images,
            artifacts,
            diagnostics,
            provider_failed,
        } = self;
        placed.is_empty()
            && secrets.is_empty()
            && credentials.is_empty()
            && logins.is_empty()
            && grants.is_empty()
            && images.is_empty()
            && artifacts.is_empty()
            && diagnostics.is_empty()
            && !provider_failed
    }
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

/// Links the fleet. `declarations` are in node order; the result is per node, and
/// has only the nodes that receive something or are told something (a node it
/// does not have receives the empty link: most nodes of a large fleet). The steps
/// run in this order, so each node's diagnostics come in this order too: needs,
/// consumptions and grants, mirrors and artifacts.
pub fn link(
    declarations: &[Arc<Declarations>],
    failed: &BTreeSet<String>,
    store: &Store,
    mode: SecretMode,
    lock: &Lock,
    registry: Option<&str>,
) -> BTreeMap<String, NodeLink> {
    let mut links: BTreeMap<String, NodeLink> = BTreeMap::new();
    for declaration in declarations {
        let mut link = NodeLink::default();
        needs::place(declaration, store, mode, &mut link);
        if !link.is_empty() {
            links.insert(declaration.node.clone(), link);
        }
    }
    grants::place(declarations, failed, store, mode, &mut links);
    let mut built = artifacts::Built::new();
    for declaration in declarations {
        let mut link = links.remove(&declaration.node).unwrap_or_default();
        mirrors::pin(declaration, lock, registry, &mut link);
        artifacts::check(declaration, lock, &mut built, &mut link);
        if !link.is_empty() {
            links.insert(declaration.node.clone(), link);
        }
    }
    links
}
