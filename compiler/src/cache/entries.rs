//! The inventory as the cache compares it: each node's evaluated entry, and the
//! fleet-wide rest (every top-level field but `nodes`, and the node names), each
//! reduced to a digest of its fully evaluated value with the position of every
//! attribute (positions can reach a plan through `unsafeGetAttrPos`). Evaluated on
//! a machine of its own, whose traces are dropped: the compilation's output is
//! never touched. A value that cannot be digested (a function, an error) gives
//! None, and None never equals anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use lang::{Machine, Span, Value};

use crate::stdlib::{self, MeshLoader};

/// The inventory's digests.
#[derive(Debug, Default)]
pub struct EntryDigests {
    pub fleet: Option<String>,
    pub nodes: BTreeMap<String, Option<String>>,
}

/// Evaluates `inventory` (the repository's `mesh.nix`, read through `loader`, with
/// the session's limits and cancel flag) and digests it. The trees it parses are kept in `parses`.
pub fn digest_inventory(
    root: &Path,
    inventory: &Path,
    loader: Rc<MeshLoader>,
    session: &crate::pipeline::Session,
    parses: &std::sync::Arc<lang::ParseCache>,
) -> EntryDigests {
    let mut machine = Machine::new(
        loader,
        vec![root.to_path_buf(), PathBuf::from(stdlib::VIRTUAL_ROOT)],
        session.limits,
    )
    .with_parse_cache(parses.clone());
    if let Some(cancelled) = &session.cancelled {
        machine = machine.with_cancel_flag(cancelled.clone());
    }
    let mut digests = EntryDigests::default();
    let Ok(value) = machine.eval_file(inventory) else {
        return digests;
    };
    let Ok(Value::Attrs(top)) = machine.force(&value, Span::default()) else {
        return digests;
    };
    let mut fleet = Digester::new(root);
    let mut complete = true;
    for attr in top.iter() {
        fleet.bytes(b"attr", &attr.name);
        if &*attr.name == b"nodes" {
            let Ok(Value::Attrs(nodes)) = machine.force(&attr.value, Span::default()) else {
                return digests;
            };
            for node in nodes.iter() {
                let name = String::from_utf8_lossy(&node.name).into_owned();
                fleet.bytes(b"node", &node.name);
                let mut entry = Digester::new(root);
                entry.position(&machine, node.span);
                let digest = entry
                    .value(&mut machine, &node.value, 0)
                    .map(|()| entry.finish());
                digests.nodes.insert(name, digest);
            }
        } else {
            fleet.position(&machine, attr.span);
            complete &= fleet.value(&mut machine, &attr.value, 0).is_some();
        }
    }
    if complete {
        digests.fleet = Some(fleet.finish());
    }
    digests
}

/// Deeper than this, a value is not digested (None).
const MAX_DEPTH: usize = 512;

struct Digester<'a> {
    root: &'a Path,
    bytes: Vec<u8>,
}

impl<'a> Digester<'a> {
    fn new(root: &'a Path) -> Digester<'a> {
        Digester {
            root,
            bytes: Vec::new(),
        }
    }

    /// A tag and a length-prefixed payload, so that no two values feed the same bytes.
    fn bytes(&mut self, tag: &[u8], payload: &[u8]) {
        self.bytes.extend_from_slice(tag);
        self.bytes
            .extend_from_slice(&(payload.len() as u64).to_le_bytes());
        self.bytes.extend_from_slice(payload);
    }

    fn position(&mut self, machine: &Machine, span: Option<Span>) {
        let Some(span) = span else {
            self.bytes(b"nowhere", b"");
            return;
        };
        match machine.sources.get(span.file) {
            Some(file) => {
                let (line, column) = file.line_column(span.start);
                let path = file
                    .path
                    .as_ref()
                    .map(|path| {
                        path.strip_prefix(self.root)
                            .unwrap_or(path)
                            .display()
                            .to_string()
                    })
                    .unwrap_or_else(|| file.name.clone());
                self.bytes(b"at", format!("{path}:{line}:{column}").as_bytes());
            }
            None => self.bytes(b"nowhere", b""),
        }
    }

    fn value(&mut self, machine: &mut Machine, value: &Value, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let value = machine.force(value, Span::default()).ok()?;
        match &value {
            Value::Null => self.bytes(b"null", b""),
            Value::Bool(flag) => self.bytes(b"bool", &[u8::from(*flag)]),
            Value::Int(number) => self.bytes(b"int", &number.to_le_bytes()),
            Value::Float(number) => self.bytes(b"float", &number.to_bits().to_le_bytes()),
            Value::String(text) => self.bytes(b"string", text),
            Value::Path(path) => self.bytes(b"path", path),
            Value::Attrs(attrs) => {
                self.bytes(b"attrs", &(attrs.len() as u64).to_le_bytes());
                for attr in attrs.iter() {
                    self.bytes(b"name", &attr.name);
                    self.position(machine, attr.span);
                    self.value(machine, &attr.value, depth + 1)?;
                }
            }
            Value::List(items) => {
                self.bytes(b"list", &(items.len() as u64).to_le_bytes());
                for item in items.iter() {
                    self.value(machine, item, depth + 1)?;
                }
            }
            Value::Lambda(_)
            | Value::PrimOp(_)
            | Value::PrimOpApp(_)
            | Value::Thunk(_)
            | Value::Opaque(_) => return None,
        }
        Some(())
    }

    fn finish(self) -> String {
        plan::sha256_digest(&self.bytes)
    }
}
