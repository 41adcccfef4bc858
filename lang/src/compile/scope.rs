//! Scopes: a name resolves to a frame distance and slot, a `with` lookup or a
//! builtin, or is reported undefined (with the names in scope as suggestions).

use std::hash::{BuildHasher, BuildHasherDefault};

use super::*;

/// A frame's names and slots, with a 64-bit filter of their hashes: a lookup
/// hashes its name once and asks a frame's table only when the filter says it
/// may hold the name (most frames a lookup passes do not).
pub(super) struct Frame {
    names: NameMap<u32>,
    filter: u64,
}

/// The filter bit of a name hashing to `hash` (the top six bits choose it).
fn filter_bit(hash: u64) -> u64 {
    1 << (hash >> 58)
}

fn name_hash(name: &[u8]) -> u64 {
    BuildHasherDefault::<crate::symbols::NameHasher>::default().hash_one(name)
}

impl Frame {
    pub(super) fn new(names: NameMap<u32>) -> Frame {
        let filter = names
            .keys()
            .fold(0, |filter, name| filter | filter_bit(name_hash(name)));
        Frame { names, filter }
    }

    /// The frame's copy of `name` (whose hash is `hash`) and its slot.
    fn get(&self, name: &[u8], hash: u64) -> Option<(&Name, &u32)> {
        if self.filter & filter_bit(hash) == 0 {
            return None;
        }
        self.names.get_key_value(name)
    }
}

impl Compiler<'_> {
    pub(super) fn lookup(&self, name: &[u8]) -> Option<IrKind> {
        self.lookup_bound(name).map(|(kind, _)| kind)
    }

    /// As [`Compiler::lookup`], with the frame's copy of the name when a frame binds it.
    fn lookup_bound(&self, name: &[u8]) -> Option<(IrKind, Option<Name>)> {
        let mut withs = Vec::new();
        let hash = name_hash(name);
        for (up, scope) in self.scopes.iter().rev().enumerate() {
            match scope {
                Scope::Frame(frame) => {
                    if let Some((key, slot)) = frame.get(name, hash) {
                        let kind = IrKind::Var {
                            up: up as u32,
                            slot: *slot,
                        };
                        return Some((kind, Some(*key)));
                    }
                }
                Scope::With => withs.push(up as u32),
            }
        }
        if let Some(value) = self.globals.global(name) {
            return Some((IrKind::Const(value), None));
        }
        if !withs.is_empty() {
            let kind = IrKind::WithVar {
                name: crate::name::Name::new(name),
                withs: withs.into_boxed_slice(),
            };
            return Some((kind, None));
        }
        None
    }

    /// How `name` is bound where it is written, without making its node: `Some(true)`
    /// for a constant (a builtin), `Some(false)` for what a frame or a `with`
    /// binds, None when nothing does (as [`Compiler::lookup`] decides).
    pub(super) fn bound_as_constant(&self, name: &[u8]) -> Option<bool> {
        let hash = name_hash(name);
        let mut with = false;
        for scope in self.scopes.iter().rev() {
            match scope {
                Scope::Frame(frame) => {
                    if frame.get(name, hash).is_some() {
                        return Some(false);
                    }
                }
                Scope::With => with = true,
            }
        }
        if self.globals.global(name).is_some() {
            return Some(true);
        }
        with.then_some(false)
    }

    /// Is `name` bound by the program (not a builtin)? Operators that Nix desugars
    /// into calls of `__sub` and friends honour such bindings.
    pub(super) fn is_shadowed(&self, name: &[u8]) -> bool {
        let hash = name_hash(name);
        self.scopes.iter().any(|scope| match scope {
            Scope::Frame(frame) => frame.get(name, hash).is_some(),
            Scope::With => false,
        })
    }

    pub(super) fn variable(&mut self, name: &str, span: Span) -> Rc<Ir> {
        match self.lookup_bound(name.as_bytes()) {
            Some((kind, bound)) => {
                if let Some(bound) = bound {
                    self.reference_names.push((span, bound));
                }
                node(kind, span)
            }
            None if self.has_too_many_errors() => self.error_node(span),
            None => {
                let mut candidates: Vec<String> = self.globals.global_names();
                for scope in &self.scopes {
                    if let Scope::Frame(frame) = scope {
                        candidates.extend(frame.names.keys().map(|n| name_text(n)));
                    }
                }
                let mut diagnostic = Diagnostic::error(
                    codes::UNDEFINED_VARIABLE,
                    format!("undefined variable `{name}`"),
                )
                .with_primary(span, "not defined in this scope");
                diagnostic = match did_you_mean(name, candidates.iter().map(String::as_str)) {
                    Some(suggestion) => diagnostic.with_help(suggestion),
                    None => diagnostic.with_help(format!(
                        "bind `{name}` with `let {name} = ...; in` or take it as a function argument"
                    )),
                };
                self.error(diagnostic);
                self.error_node(span)
            }
        }
    }
}
