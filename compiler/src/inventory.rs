//! The inventory (`mesh.nix`): nodes, their keys and addresses, which modules they
//! are assigned, their setting overrides, and the base system. Unknown keys are
//! errors with a suggestion; nothing here knows what a module contains.

use std::collections::{BTreeMap, BTreeSet};

use lang::codes::{self, Code};
use lang::diagnostic::did_you_mean;
use lang::value::{Attr, Attrs, EvalResult};
use lang::{Diagnostic, Machine, Span, Value};

use crate::repository::is_valid_name;
use crate::shape::is_canonical_absolute;
use crate::source::literal_span;

/// Paths, users and groups a node has before mesh touches it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Base {
    pub paths: BTreeSet<String>,
    pub users: BTreeSet<String>,
    pub groups: BTreeSet<String>,
}

/// The documented default base system (see the book, "The base system").
pub fn default_base() -> Base {
    let paths = [
        "/",
        "/etc",
        "/etc/systemd",
        "/etc/systemd/system",
        "/home",
        "/opt",
        "/root",
        "/run",
        "/srv",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/lib",
        "/usr/local",
        "/usr/local/bin",
        "/usr/share",
        "/var",
        "/var/cache",
        "/var/lib",
        "/var/log",
        "/var/tmp",
    ];
    let users = ["root", "nobody"];
    let groups = ["root", "nogroup", "adm", "users"];
    Base {
        paths: paths.iter().map(|p| p.to_string()).collect(),
        users: users.iter().map(|u| u.to_string()).collect(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

impl Base {
    pub fn extend(&mut self, other: &Base) {
        self.paths.extend(other.paths.iter().cloned());
        self.users.extend(other.users.iter().cloned());
        self.groups.extend(other.groups.iter().cloned());
    }
}

#[derive(Clone, Debug)]
pub struct Override {
    pub name: String,
    pub value: Value,
    /// Where the setting's name is written in the inventory.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ModuleOverrides {
    pub span: Span,
    pub settings: Vec<Override>,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub span: Span,
    pub key: String,
    // read by no stage yet: kept with the node for the diagnostics that will need it
    #[allow(dead_code)]
    pub key_span: Span,
    pub address: Option<String>,
    /// Assigned modules with where each is named.
    pub modules: Vec<(String, Span)>,
    pub settings: BTreeMap<String, ModuleOverrides>,
    pub base: Base,
    /// `tags`, for `meshc deploy --on @TAG`.
    pub tags: Vec<String>,
    /// How `meshc deploy` reaches the node (`deploy`, defaults filled in).
    pub deploy: crate::deployment::Deployment,
    /// The entry as modules see it (`node`): the inventory's set plus `name`.
    pub value: Value,
}

#[derive(Debug, Default)]
pub struct Inventory {
    pub registry: Option<String>,
    /// The nodes read, without errors.
    pub nodes: BTreeMap<String, Node>,
    /// The validly named nodes [`read_some`] was told not to read yet: each entry
    /// with where it is named, read by [`Inventory::read_later`].
    pub unread: BTreeMap<String, (Value, Span)>,
    /// The nodes whose entries were read with errors (reported): other nodes may
    /// name them, and are not told there is no such node.
    pub failed: BTreeSet<String>,
    /// The fleet-wide base (the default one extended by `base`).
    base: Base,
    #[allow(dead_code)]
    pub span: Span,
}

impl Inventory {
    /// Every node's name, read or not, in name order.
    pub fn names(&self) -> Vec<&String> {
        let mut names: Vec<&String> = self.nodes.keys().chain(self.unread.keys()).collect();
        names.sort_unstable();
        names
    }

    /// Reads the entry of `name` that [`read_some`] left unread (None if it has
    /// errors, which are in the diagnostics, or is not an unread node).
    pub fn read_later(
        &self,
        machine: &mut Machine,
        name: &str,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> EvalResult<Option<Node>> {
        let Some((value, span)) = self.unread.get(name) else {
            return Ok(None);
        };
        read_clean_node(machine, name, value, *span, &self.base, diagnostics)
    }
}

const TOP_KEYS: &[&str] = &["registry", "nodes", "base"];
const NODE_KEYS: &[&str] = &[
    "key",
    "address",
    "modules",
    "settings",
    "base",
    "description",
    "tags",
    "deploy",
];
const BASE_KEYS: &[&str] = &["paths", "users", "groups"];

pub(crate) fn unknown_key(name: &str, known: &[&str], span: Span, context: &str) -> Diagnostic {
    let help = did_you_mean(name, known.iter().copied())
        .unwrap_or_else(|| format!("{context} takes {}", lang::diagnostic::quoted(known)));
    Diagnostic::error(
        codes::UNKNOWN_INVENTORY_KEY,
        format!("unknown key `{name}` in {context}"),
    )
    .with_primary(span, "not a known key")
    .with_help(help)
}

/// What is wrong with a node's `address`, which modules write into configuration
/// (`host=`, a scrape target) and `meshc deploy` gives `ssh`: a host name, an IPv4
/// or an IPv6 address, nothing around it. A port, a scheme or a path would be
/// written into every configuration that names the node and fail only there.
fn address_problem(text: &str) -> Option<(String, String)> {
    let host_help =
        "write the host name or IP address alone, e.g. \"10.0.0.11\" or \"db1.example.org\"";
    if text.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    if let Some((scheme, _)) = text.split_once("://") {
        return Some((
            format!("{text:?} is a URL (`{scheme}://...`), not a host"),
            host_help.to_string(),
        ));
    }
    if let Some((host, port)) = text.rsplit_once(':')
        && !port.is_empty()
        && port.bytes().all(|byte| byte.is_ascii_digit())
        && (host.parse::<std::net::Ipv4Addr>().is_ok() || is_host_name(host))
    {
        return Some((
            format!("{text:?} has a port"),
            format!(
                "write the host alone, \"{host}\": the SSH port is the node's `deploy.port`, and a service's port is a setting of its module"
            ),
        ));
    }
    let bracketed = text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|inner| inner.parse::<std::net::Ipv6Addr>().is_ok());
    if bracketed {
        return Some((
            format!("{text:?} is an IPv6 address in brackets"),
            "write it without the brackets: modules add them where a port follows".to_string(),
        ));
    }
    if !is_host_name(text) {
        return Some((
            format!("{text:?} is neither a host name nor an IP address"),
            host_help.to_string(),
        ));
    }
    None
}

/// A host name: labels of letters, digits, `-` (not at either end) and `_` (an
/// `ssh` alias may have one) of at most 63 bytes, joined by dots, at most 253
/// bytes, a trailing dot allowed.
fn is_host_name(text: &str) -> bool {
    let name = text.strip_suffix('.').unwrap_or(text);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
        })
}

fn wrong(
    code: Code,
    what: &str,
    expected: &str,
    found: &Value,
    span: Span,
    help: &str,
) -> Diagnostic {
    Diagnostic::error(
        code,
        format!("{what} must be {expected}, not {}", found.describe_type()),
    )
    .with_primary(span, format!("this is {}", found.describe_type()))
    .with_help(help)
}

/// Evaluates the inventory value. Errors are collected; nodes with errors are kept
/// out of the result so later stages do not report their consequences.
pub fn read(
    machine: &mut Machine,
    value: &Value,
    file_span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Inventory> {
    read_some(machine, value, file_span, diagnostics, &|_| true)
}

/// [`read`], but the entry of a validly named node for which `read_now` is false
/// is left unread (in [`Inventory::unread`]): the caller knows it reads without a
/// diagnostic (the build cache: it did in the last build, and nothing it is read
/// from changed).
pub fn read_some(
    machine: &mut Machine,
    value: &Value,
    file_span: Span,
    diagnostics: &mut Vec<Diagnostic>,
    read_now: &dyn Fn(&str) -> bool,
) -> EvalResult<Inventory> {
    let value = machine.force(value, file_span)?;
    let Value::Attrs(top) = value else {
        diagnostics.push(wrong(
            codes::INVALID_INVENTORY_VALUE,
            "the inventory",
            "a set with `nodes`",
            &value,
            file_span,
            "`mesh.nix` evaluates to `{ nodes = { NAME = { key = \"age1...\"; modules = [ ... ]; }; }; }`",
        ));
        return Ok(Inventory::default());
    };
    let mut inventory = Inventory {
        span: file_span,
        ..Inventory::default()
    };
    for entry in top.iter() {
        let name = String::from_utf8_lossy(&entry.name).into_owned();
        if !TOP_KEYS.contains(&name.as_str()) {
            diagnostics.push(unknown_key(
                &name,
                TOP_KEYS,
                entry.span.unwrap_or(file_span),
                "the inventory",
            ));
        }
    }
    if let Some(registry) = top.get_attr(b"registry") {
        let span = registry.span.unwrap_or(file_span);
        match machine.force(&registry.value.clone(), span)? {
            Value::String(text) => {
                inventory.registry = Some(String::from_utf8_lossy(&text).into_owned())
            }
            other => diagnostics.push(wrong(
                codes::INVALID_INVENTORY_VALUE,
                "`registry`",
                "a string",
                &other,
                span,
                "write the registry host, e.g. \"registry.mesh.internal:5000\"",
            )),
        }
    }
    let mut global_base = crate::inventory::default_base();
    if let Some(base) = top.get_attr(b"base") {
        let span = base.span.unwrap_or(file_span);
        global_base.extend(&read_base(machine, &base.value.clone(), span, diagnostics)?);
    }
    let Some(nodes) = top.get_attr(b"nodes") else {
        diagnostics.push(
            Diagnostic::error(
                codes::INVALID_INVENTORY_VALUE,
                "the inventory has no `nodes`",
            )
            .with_primary(file_span, "in this inventory")
            .with_help("add `nodes = { NAME = { key = \"age1...\"; modules = [ ... ]; }; };`"),
        );
        return Ok(inventory);
    };
    let nodes_span = nodes.span.unwrap_or(file_span);
    let nodes_value = machine.force(&nodes.value.clone(), nodes_span)?;
    let Value::Attrs(nodes) = nodes_value else {
        diagnostics.push(wrong(
            codes::INVALID_INVENTORY_VALUE,
            "`nodes`",
            "a set of nodes",
            &nodes_value,
            nodes_span,
            "write `nodes = { NAME = { ... }; };`",
        ));
        return Ok(inventory);
    };
    // a set's names come in order: the maps are built from sorted runs at once
    let mut unread = Vec::with_capacity(nodes.len());
    let mut read = Vec::with_capacity(nodes.len());
    for entry in nodes.iter() {
        let name = String::from_utf8_lossy(&entry.name).into_owned();
        let span = entry.span.unwrap_or(nodes_span);
        if !is_valid_name(&name) {
            diagnostics.push(
                Diagnostic::error(codes::INVALID_NODE_NAME, format!("`{name}` is not a valid node name"))
                    .with_primary(span, "node named here")
                    .with_help("node names start with a lowercase letter and use lowercase letters, digits and `-`"),
            );
            inventory.failed.insert(name);
            continue;
        }
        if !read_now(&name) {
            unread.push((name, (entry.value.clone(), span)));
            continue;
        }
        if let Some(node) = read_clean_node(
            machine,
            &name,
            &entry.value.clone(),
            span,
            &global_base,
            diagnostics,
        )? {
            read.push((name, node));
        } else {
            inventory.failed.insert(name);
        }
    }
    inventory.unread = unread.into_iter().collect();
    inventory.nodes = read.into_iter().collect();
    inventory.base = global_base;
    Ok(inventory)
}

fn string_list(
    machine: &mut Machine,
    value: &Value,
    span: Span,
    what: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Vec<(String, Span)>> {
    let value = machine.force(value, span)?;
    let Value::List(items) = &value else {
        diagnostics.push(wrong(
            codes::INVALID_INVENTORY_VALUE,
            what,
            "a list of strings",
            &value,
            span,
            "write `[ \"a\" \"b\" ]`",
        ));
        return Ok(Vec::new());
    };
    let mut result = Vec::new();
    // each item is looked for after the previous one, so that the same name
    // written twice gets two spans
    let mut search_from = span;
    for (index, item) in items.iter().enumerate() {
        match machine.force(item, span)? {
            Value::String(text) => {
                let text = String::from_utf8_lossy(&text).into_owned();
                let item_span = match literal_span(machine, search_from, &text) {
                    Some(found) => {
                        search_from = Span::new(found.file, found.end as usize, found.end as usize);
                        found
                    }
                    None => span,
                };
                result.push((text, item_span));
            }
            other => {
                let help = if what.ends_with("`modules`") {
                    "a module is named by a string, the name of its directory under `modules/`: write `[ \"app\" ]`, not `[ ./modules/app ]`"
                } else {
                    "write `[ \"a\" \"b\" ]`"
                };
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_INVENTORY_VALUE,
                        format!(
                            "element {index} of {what} is {}, where a list of strings was meant",
                            other.describe_type()
                        ),
                    )
                    .with_primary(
                        span,
                        format!("element {index} of this list is {}", other.describe_type()),
                    )
                    .with_help(help),
                );
            }
        }
    }
    Ok(result)
}

fn read_base(
    machine: &mut Machine,
    value: &Value,
    span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Base> {
    let value = machine.force(value, span)?;
    let Value::Attrs(attrs) = &value else {
        diagnostics.push(wrong(
            codes::INVALID_INVENTORY_VALUE,
            "`base`",
            "a set",
            &value,
            span,
            "write `base = { paths = [ ... ]; users = [ ... ]; groups = [ ... ]; };`",
        ));
        return Ok(Base::default());
    };
    let mut base = Base::default();
    for entry in attrs.iter() {
        let name = String::from_utf8_lossy(&entry.name).into_owned();
        let entry_span = entry.span.unwrap_or(span);
        let items = match name.as_str() {
            "paths" => &mut base.paths,
            "users" => &mut base.users,
            "groups" => &mut base.groups,
            _ => {
                diagnostics.push(unknown_key(&name, BASE_KEYS, entry_span, "`base`"));
                continue;
            }
        };
        for (item, item_span) in string_list(
            machine,
            &entry.value.clone(),
            entry_span,
            &format!("`base.{name}`"),
            diagnostics,
        )? {
            // shapes' paths are canonical; a base path that is not would match none
            if name == "paths" && !is_canonical_absolute(item.as_bytes()) {
                let canonical = format!(
                    "/{}",
                    item.split('/')
                        .filter(|c| !c.is_empty())
                        .collect::<Vec<_>>()
                        .join("/")
                );
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_INVENTORY_VALUE,
                        format!("`base.paths` holds {item:?}, which is not an absolute path without `.`, `..`, `//` or a trailing `/`"),
                    )
                    .with_primary(item_span, "this path")
                    .with_help(format!("write the path as shapes do, e.g. {canonical:?}")),
                );
                // reported; kept in its canonical form so shapes below it are not
                // reported as well
                items.insert(canonical);
                continue;
            }
            items.insert(item);
        }
    }
    Ok(base)
}

/// [`read_node`], kept only when reading it reported nothing: later stages do not
/// report the consequences of a node with errors.
fn read_clean_node(
    machine: &mut Machine,
    name: &str,
    value: &Value,
    span: Span,
    global_base: &Base,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Node>> {
    let errors_before = diagnostics.len();
    let node = read_node(machine, name, value, span, global_base, diagnostics)?;
    Ok(node.filter(|_| diagnostics.len() == errors_before))
}

fn read_node(
    machine: &mut Machine,
    name: &str,
    value: &Value,
    span: Span,
    global_base: &Base,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Node>> {
    let value = machine.force(value, span)?;
    let Value::Attrs(attrs) = &value else {
        diagnostics.push(wrong(
            codes::INVALID_INVENTORY_VALUE,
            &format!("node `{name}`"),
            "a set",
            &value,
            span,
            "write `NAME = { key = \"age1...\"; modules = [ ... ]; };`",
        ));
        return Ok(None);
    };
    for entry in attrs.iter() {
        let key = String::from_utf8_lossy(&entry.name).into_owned();
        if !NODE_KEYS.contains(&key.as_str()) {
            diagnostics.push(unknown_key(
                &key,
                NODE_KEYS,
                entry.span.unwrap_or(span),
                &format!("node `{name}`"),
            ));
        }
    }
    let (key, key_span) = match attrs.get_attr(b"key") {
        Some(entry) => {
            let key_span = entry.span.unwrap_or(span);
            match machine.force(&entry.value.clone(), key_span)? {
                Value::String(text)
                    if crate::private_key::contains_private_key(&String::from_utf8_lossy(
                        &text,
                    )) =>
                {
                    // never echoed: not in the message, and the source line shown
                    // beside it has the key blotted out (`redact_private_keys`)
                    let shown = String::from_utf8_lossy(&text).into_owned();
                    let value_span = literal_span(machine, key_span, &shown).unwrap_or(key_span);
                    diagnostics.push(
                        Diagnostic::error(
                            codes::PRIVATE_KEY,
                            format!("node `{name}`'s `key` is not a public key: this is a private key: treat it as leaked and make a new one"),
                        )
                        .with_primary(value_span, "a private key, not the node's public key")
                        .with_help("remove it from mesh.nix (and from the repository's history), make a new identity on the node with `age-keygen -o /var/lib/mesh/identity`, and write the public key it prints (`age1...`) here"),
                    );
                    return Ok(None);
                }
                Value::String(text) if is_age_recipient(&text) => {
                    (String::from_utf8_lossy(&text).into_owned(), key_span)
                }
                Value::String(text) => {
                    let shown = String::from_utf8_lossy(&text).into_owned();
                    let value_span = literal_span(machine, key_span, &shown).unwrap_or(key_span);
                    let diagnostic = if has_age_recipient_form(&text) {
                        Diagnostic::error(codes::INVALID_INVENTORY_VALUE, format!("node `{name}` has a key whose checksum does not match: {shown:?}"))
                            .with_primary(value_span, "a character of this key is wrong")
                            .with_help("copy the public key again from the node: `age-keygen -y /var/lib/mesh/identity` prints it")
                    } else {
                        Diagnostic::error(codes::INVALID_INVENTORY_VALUE, format!("node `{name}` has a key that is not an age recipient: {shown:?}"))
                            .with_primary(value_span, "not an `age1...` public key")
                            .with_help("generate one on the node with `age-keygen -o /var/lib/mesh/identity` and copy the printed public key")
                    };
                    diagnostics.push(diagnostic);
                    return Ok(None);
                }
                other => {
                    diagnostics.push(wrong(
                        codes::INVALID_INVENTORY_VALUE,
                        &format!("node `{name}`'s `key`"),
                        "a string",
                        &other,
                        key_span,
                        "write the node's age public key, \"age1...\"",
                    ));
                    return Ok(None);
                }
            }
        }
        None => {
            diagnostics.push(
                Diagnostic::error(codes::INVALID_INVENTORY_VALUE, format!("node `{name}` has no `key`"))
                    .with_primary(span, "node declared here")
                    .with_help("every node needs its age public key: `key = \"age1...\";` (from `age-keygen` on the node)"),
            );
            return Ok(None);
        }
    };
    let address = match attrs.get_attr(b"address") {
        Some(entry) => {
            let address_span = entry.span.unwrap_or(span);
            match machine.force(&entry.value.clone(), address_span)? {
                Value::String(text) => {
                    let text = String::from_utf8_lossy(&text).into_owned();
                    if let Some((problem, help)) = address_problem(&text) {
                        diagnostics.push(
                            Diagnostic::error(
                                codes::INVALID_INVENTORY_VALUE,
                                format!("node `{name}`'s `address` {problem}"),
                            )
                            .with_primary(address_span, "this address")
                            .with_help(help),
                        );
                        return Ok(None);
                    }
                    Some(text)
                }
                Value::Null => None,
                other => {
                    diagnostics.push(wrong(
                        codes::INVALID_INVENTORY_VALUE,
                        &format!("node `{name}`'s `address`"),
                        "a string",
                        &other,
                        address_span,
                        "write the address as a string, e.g. \"10.0.0.11\"",
                    ));
                    None
                }
            }
        }
        None => None,
    };
    let modules = match attrs.get_attr(b"modules") {
        Some(entry) => string_list(
            machine,
            &entry.value.clone(),
            entry.span.unwrap_or(span),
            &format!("node `{name}`'s `modules`"),
            diagnostics,
        )?,
        None => Vec::new(),
    };
    let mut seen: BTreeMap<&str, Span> = BTreeMap::new();
    for (module, module_span) in &modules {
        if let Some(first) = seen.insert(module, *module_span) {
            diagnostics.push(
                Diagnostic::error(
                    codes::DUPLICATE_ASSIGNMENT,
                    format!("module `{module}` is assigned to node `{name}` twice"),
                )
                .with_primary(*module_span, "assigned again here")
                .with_secondary(first, "first assigned here")
                .with_help("remove one of the two"),
            );
        }
    }
    let mut settings = BTreeMap::new();
    if let Some(entry) = attrs.get_attr(b"settings") {
        let settings_span = entry.span.unwrap_or(span);
        let settings_value = machine.force(&entry.value.clone(), settings_span)?;
        match settings_value {
            Value::Attrs(per_module) => {
                for module in per_module.iter() {
                    let module_name = String::from_utf8_lossy(&module.name).into_owned();
                    let module_span = module.span.unwrap_or(settings_span);
                    let module_value = machine.force(&module.value.clone(), module_span)?;
                    let Value::Attrs(values) = module_value else {
                        diagnostics.push(wrong(
                            codes::INVALID_INVENTORY_VALUE,
                            &format!("`settings.{module_name}`"),
                            "a set of settings",
                            &module_value,
                            module_span,
                            "write `settings.MODULE.SETTING = value;`",
                        ));
                        continue;
                    };
                    let overrides = values
                        .iter()
                        .map(|setting| Override {
                            name: String::from_utf8_lossy(&setting.name).into_owned(),
                            value: setting.value.clone(),
                            span: setting.span.unwrap_or(module_span),
                        })
                        .collect();
                    settings.insert(
                        module_name,
                        ModuleOverrides {
                            span: module_span,
                            settings: overrides,
                        },
                    );
                }
            }
            other => diagnostics.push(wrong(
                codes::INVALID_INVENTORY_VALUE,
                &format!("node `{name}`'s `settings`"),
                "a set",
                &other,
                settings_span,
                "write `settings.MODULE.SETTING = value;`",
            )),
        }
    }
    let mut base = global_base.clone();
    if let Some(entry) = attrs.get_attr(b"base") {
        base.extend(&read_base(
            machine,
            &entry.value.clone(),
            entry.span.unwrap_or(span),
            diagnostics,
        )?);
    }
    let tags = match attrs.get_attr(b"tags") {
        Some(entry) => crate::deployment::read_tags(
            machine,
            name,
            &entry.value.clone(),
            entry.span.unwrap_or(span),
            diagnostics,
        )?,
        None => Vec::new(),
    };
    let deploy_entry = attrs
        .get_attr(b"deploy")
        .map(|entry| (entry.value.clone(), entry.span.unwrap_or(span)));
    let deploy = crate::deployment::read_deploy(
        machine,
        name,
        address.as_deref(),
        deploy_entry.as_ref().map(|(value, span)| (value, *span)),
        diagnostics,
    )?;
    let mut entries: Vec<Attr> = attrs.iter().cloned().collect();
    entries.retain(|attr| &*attr.name != b"name");
    entries.push(Attr {
        name: lang::Name::of("name"),
        value: Value::string_from(name),
        span: Some(span),
    });
    Ok(Some(Node {
        name: name.to_string(),
        span,
        key,
        key_span,
        address,
        modules,
        settings,
        base,
        tags,
        deploy,
        value: Value::Attrs(Attrs::from_unsorted(entries)),
    }))
}

/// An age X25519 recipient: `age1` and 58 bech32 characters whose last six are
/// the checksum, so a mistyped key is caught here rather than when sealing.
pub fn is_age_recipient(text: &[u8]) -> bool {
    has_age_recipient_form(text) && bech32_checksum_matches(b"age", &text[4..])
}

/// `age1` and 58 characters of the bech32 alphabet, checksum not checked.
fn has_age_recipient_form(text: &[u8]) -> bool {
    text.len() == 62
        && text.starts_with(b"age1")
        && text[4..].iter().all(|b| BECH32_ALPHABET.contains(b))
}

const BECH32_ALPHABET: &[u8; 32] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";

/// BIP 173: the checksum of human-readable part and data is valid when the
/// polymod of both is 1.
fn bech32_checksum_matches(human_readable_part: &[u8], data: &[u8]) -> bool {
    const GENERATOR: [u32; 5] = [
        0x3b6a_57b2,
        0x2650_8e6d,
        0x1ea1_19fa,
        0x3d42_33dd,
        0x2a14_62b3,
    ];
    let values = human_readable_part
        .iter()
        .map(|b| b >> 5)
        .chain(std::iter::once(0))
        .chain(human_readable_part.iter().map(|b| b & 31))
        .chain(data.iter().filter_map(|b| {
            BECH32_ALPHABET
                .iter()
                .position(|a| a == b)
                .map(|position| position as u8)
        }));
    let mut checksum: u32 = 1;
    for value in values {
        let top = checksum >> 25;
        checksum = ((checksum & 0x01ff_ffff) << 5) ^ u32::from(value);
        for (bit, generator) in GENERATOR.iter().enumerate() {
            if (top >> bit) & 1 == 1 {
                checksum ^= generator;
            }
        }
    }
    checksum == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node's address is a host name or an IP address alone: a port, a scheme,
    /// brackets or a space, written into every configuration naming the node,
    /// failed only on the node (review: `"10.0.0.21:22"` became a Prometheus target
    /// `[10.0.0.21:22]:9100` and `host=10.0.0.21:22`).
    #[test]
    fn an_address_is_a_host_or_an_ip_address_alone() {
        for good in [
            "10.0.0.11",
            "db1",
            "db1.example.org",
            "db1.example.org.",
            "fd00::11",
            "::1",
            "xn--bcher-kva.example",
            "db1_prod",
        ] {
            assert!(address_problem(good).is_none(), "{good}");
        }
        for (bad, said) in [
            ("10.0.0.21:22", "has a port"),
            ("db1.lan:2222", "has a port"),
            ("https://mq1.example.org/", "is a URL"),
            ("[fd00::11]", "in brackets"),
            ("db 1", "neither"),
            ("db1.example.org/x", "neither"),
            ("-db1", "neither"),
            ("", "neither"),
        ] {
            let (problem, _) = address_problem(bad).expect(bad);
            assert!(problem.contains(said), "{bad}: {problem}");
        }
    }

    #[test]
    fn age_keygen_recipients_are_accepted_and_a_changed_character_is_not() {
        let recipient = b"age17nkegg8q77unmvtxew9kpydfjgkq87lnenhucmkty0fwj2d4qfdq3p59xc";
        assert!(is_age_recipient(recipient));
        let mut changed = *recipient;
        changed[20] = if changed[20] == b'q' { b'p' } else { b'q' };
        assert!(has_age_recipient_form(&changed));
        assert!(!is_age_recipient(&changed));
        let mut swapped = *recipient;
        swapped.swap(30, 31);
        assert!(swapped == *recipient || !is_age_recipient(&swapped));
    }
}
