//! The inventory's `tags` and `deploy` of a node (how `meshc deploy` reaches it over
//! SSH), checked into plain values with located diagnostics, and [`targets`], which
//! reads them for `meshc deploy`. Must not run ssh or know what a plan holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::codes;
use lang::value::EvalResult;
use lang::{Diagnostic, Limits, Machine, Sources, Span, Value};

use crate::inventory::{self, unknown_key};
use crate::source::literal_span;
use crate::stdlib::{self, MeshLoader};

/// How `meshc deploy` reaches a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deployment {
    /// The node's `address` (or its name) unless `deploy.host` says otherwise.
    pub host: String,
    pub port: u16,
    pub user: String,
    /// `--root` for `mesh-apply` on the node (an image, a test); `None` is `/`.
    pub root: Option<String>,
    /// The applier's command on the node: a name on its PATH or an absolute path.
    pub applier: String,
}

/// A node as `meshc deploy` selects and reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub tags: Vec<String>,
    pub deployment: Deployment,
}

const DEPLOY_KEYS: &[&str] = &["host", "port", "user", "root", "applier"];

/// A tag: a letter, then letters, digits, `-` or `_`.
pub fn is_tag(text: &str) -> bool {
    let mut bytes = text.bytes();
    bytes.next().is_some_and(|byte| byte.is_ascii_alphabetic())
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

fn invalid(what: String, span: Span, label: &str, help: &str) -> Diagnostic {
    Diagnostic::error(codes::INVALID_INVENTORY_VALUE, what)
        .with_primary(span, label.to_string())
        .with_help(help.to_string())
}

/// `tags = [ "web" "eu" ];`: a list of identifiers, each once.
pub fn read_tags(
    machine: &mut Machine,
    node: &str,
    value: &Value,
    span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Vec<String>> {
    let help =
        "write `tags = [ \"web\" \"eu\" ];`: each a letter, then letters, digits, `-` or `_`";
    let value = machine.force(value, span)?;
    let Value::List(items) = &value else {
        diagnostics.push(invalid(
            format!(
                "node `{node}`'s `tags` must be a list of tags, not {}",
                value.describe_type()
            ),
            span,
            "not a list",
            help,
        ));
        return Ok(Vec::new());
    };
    let mut tags: Vec<String> = Vec::new();
    for item in items.iter() {
        match machine.force(item, span)? {
            Value::String(text) => {
                let text = String::from_utf8_lossy(&text).into_owned();
                let item_span = literal_span(machine, span, &text).unwrap_or(span);
                if !is_tag(&text) {
                    diagnostics.push(invalid(
                        format!("node `{node}` has the tag {text:?}, which is not an identifier"),
                        item_span,
                        "this tag",
                        help,
                    ));
                } else if tags.contains(&text) {
                    diagnostics.push(invalid(
                        format!("node `{node}` has the tag `{text}` twice"),
                        item_span,
                        "again here",
                        "remove one of the two",
                    ));
                } else {
                    tags.push(text);
                }
            }
            other => diagnostics.push(invalid(
                format!(
                    "node `{node}`'s `tags` must hold strings, not {}",
                    other.describe_type()
                ),
                span,
                "in this list",
                help,
            )),
        }
    }
    Ok(tags)
}

/// Text safe in an SSH destination or a remote argument: no control character.
fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// `deploy = { host; port; user; root; applier; };`, defaults filled in.
pub fn read_deploy(
    machine: &mut Machine,
    node: &str,
    address: Option<&str>,
    value: Option<(&Value, Span)>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Deployment> {
    let mut deployment = Deployment {
        host: address.unwrap_or(node).to_string(),
        port: 22,
        user: "root".to_string(),
        root: None,
        applier: "mesh-apply".to_string(),
    };
    let Some((value, span)) = value else {
        return Ok(deployment);
    };
    let value = machine.force(value, span)?;
    let Value::Attrs(attrs) = &value else {
        diagnostics.push(invalid(
            format!(
                "node `{node}`'s `deploy` must be a set, not {}",
                value.describe_type()
            ),
            span,
            "not a set",
            "write `deploy = { host = \"10.0.0.5\"; port = 22; user = \"root\"; };`",
        ));
        return Ok(deployment);
    };
    for entry in attrs.iter() {
        let key = String::from_utf8_lossy(&entry.name).into_owned();
        let entry_span = entry.span.unwrap_or(span);
        if !DEPLOY_KEYS.contains(&key.as_str()) {
            diagnostics.push(unknown_key(
                &key,
                DEPLOY_KEYS,
                entry_span,
                &format!("node `{node}`'s `deploy`"),
            ));
            continue;
        }
        let field = machine.force(&entry.value.clone(), entry_span)?;
        read_field(
            machine,
            node,
            &key,
            &field,
            entry_span,
            &mut deployment,
            diagnostics,
        );
    }
    Ok(deployment)
}

fn read_field(
    machine: &Machine,
    node: &str,
    key: &str,
    field: &Value,
    span: Span,
    deployment: &mut Deployment,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let what = format!("node `{node}`'s `deploy.{key}`");
    if key == "port" {
        match field {
            Value::Int(port) if (1..=65535).contains(port) => {
                deployment.port = u16::try_from(*port).unwrap_or(22)
            }
            other => diagnostics.push(invalid(
                match other {
                    Value::Int(port) => {
                        format!("{what} must be a port number from 1 to 65535, not {port}")
                    }
                    other => format!(
                        "{what} must be a port number from 1 to 65535, not {}",
                        other.describe_type()
                    ),
                },
                span,
                "this port",
                "write the SSH port, e.g. `port = 2222;`",
            )),
        }
        return;
    }
    let text = match field {
        Value::String(text) => String::from_utf8_lossy(text).into_owned(),
        Value::Null if key == "root" => return,
        other => {
            diagnostics.push(invalid(
                format!("{what} must be a string, not {}", other.describe_type()),
                span,
                &format!("this is {}", other.describe_type()),
                "write it as a string",
            ));
            return;
        }
    };
    let value_span = literal_span(machine, span, &text).unwrap_or(span);
    let refusal = match key {
        "host"
            if text.is_empty()
                || text.starts_with('-')
                || text.contains(['@', ' '])
                || has_control(&text) =>
        {
            Some(
                "a host name or address: not empty, no `@`, spaces or control characters, not starting with `-`",
            )
        }
        "user"
            if text.is_empty()
                || text.starts_with('-')
                || text.contains(['@', ' ', ':'])
                || has_control(&text) =>
        {
            Some(
                "a user name: not empty, no `@`, `:`, spaces or control characters, not starting with `-`",
            )
        }
        "root" if !text.starts_with('/') || has_control(&text) => {
            Some("an absolute path without control characters")
        }
        "applier" if text.is_empty() || text.starts_with('-') || has_control(&text) => Some(
            "a command name on the node's PATH or an absolute path, without control characters",
        ),
        _ => None,
    };
    if let Some(expected) = refusal {
        diagnostics.push(invalid(
            format!("{what} is {text:?}, which is not {expected}"),
            value_span,
            "this value",
            "see the book's deploy chapter for what `deploy` takes",
        ));
        return;
    }
    match key {
        "host" => deployment.host = text,
        "user" => deployment.user = text,
        "root" => deployment.root = Some(text),
        _ => deployment.applier = text,
    }
}

/// Every node's tags and deployment, read from the inventory of the repository at
/// `root`; its errors are returned with the sources they point into.
pub fn targets(root: &Path) -> Result<BTreeMap<String, Target>, (Vec<Diagnostic>, Sources)> {
    let repository =
        crate::repository::load(root).map_err(|diagnostic| (vec![*diagnostic], Sources::new()))?;
    let loader = Rc::new(MeshLoader::new(repository.root.clone()));
    let mut machine = Machine::new(
        loader,
        vec![repository.root.clone(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        Limits::default(),
    );
    let value = match machine.eval_file(&repository.inventory) {
        Ok(value) => value,
        Err(errors) => return Err((errors, std::mem::take(&mut machine.sources))),
    };
    let file = machine
        .sources
        .find_path(&repository.inventory)
        .unwrap_or_default();
    let mut diagnostics = Vec::new();
    let read = inventory::read(
        &mut machine,
        &value,
        Span::new(file, 0, 0),
        &mut diagnostics,
    );
    let inventory = match read {
        Ok(inventory) if diagnostics.is_empty() => inventory,
        Ok(_) => return Err((diagnostics, std::mem::take(&mut machine.sources))),
        Err(error) => return Err((vec![*error], std::mem::take(&mut machine.sources))),
    };
    Ok(inventory
        .nodes
        .into_values()
        .map(|node| {
            (
                node.name,
                Target {
                    tags: node.tags,
                    deployment: node.deploy,
                },
            )
        })
        .collect())
}
