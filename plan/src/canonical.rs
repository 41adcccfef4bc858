//! The one definition of canonical JSON and of the `sha256:HEX` digest that plans,
//! shapes and the compiler's emitter share. Must not depend on serde_json's map order
//! (a feature elsewhere in the graph could turn on `preserve_order`).

use sha2::{Digest, Sha256};

/// Canonical JSON of a value: object keys sorted by their UTF-8 bytes, no whitespace
/// outside strings, strings escaped as serde_json escapes them, numbers as serde_json
/// prints them.
pub fn canonical_json(value: &serde_json::Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => out.extend_from_slice(number.to_string().as_bytes()),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
            entries.sort_by(|left, right| left.0.as_bytes().cmp(right.0.as_bytes()));
            out.push(b'{');
            for (position, (key, item)) in entries.into_iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

/// Escapes exactly as serde_json does: `"` and `\\` escaped, the short escapes for
/// backspace, form feed, newline, carriage return and tab, `\u00XX` (lowercase hex)
/// for the other control characters, everything else as UTF-8.
fn write_string(text: &str, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // copy runs of bytes that need no escape in one go
    let mut start = 0;
    for (index, byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..index]);
        if escape.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0x0f)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = index + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// `sha256:` followed by the lowercase hex SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    digest_text(&Sha256::digest(bytes))
}

/// `sha256:` and the hash in lowercase hex.
fn digest_text(hash: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digest = String::with_capacity(7 + 2 * hash.len());
    digest.push_str("sha256:");
    for byte in hash {
        digest.push(char::from(HEX[usize::from(byte >> 4)]));
        digest.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    digest
}

/// Is `text` a `sha256:` digest with 64 lowercase hex digits?
pub fn is_sha256_digest(text: &str) -> bool {
    match text.strip_prefix("sha256:") {
        Some(hex_digits) => {
            hex_digits.len() == 64
                && hex_digits
                    .bytes()
                    .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
        }
        None => false,
    }
}

/// A field value as the canonical writer sees it: borrowed, so writing a shape's
/// canonical JSON allocates nothing but the output.
pub(crate) enum Field<'a> {
    Text(&'a str),
    OptionalText(Option<&'a str>),
    Bool(bool),
    Number(u64),
    Texts(&'a [String]),
    Map(&'a std::collections::BTreeMap<String, String>),
    Mounts(&'a [crate::Mount]),
    Source(&'a crate::Source),
}

/// Writes an object of `entries` as canonical JSON, exactly as
/// [`canonical_json`] would write the same object: keys sorted by their bytes.
pub(crate) fn write_object(entries: &mut [(&str, Field<'_>)], out: &mut Vec<u8>) {
    sort_entries(entries);
    out.push(b'{');
    for (position, (key, field)) in entries.iter().enumerate() {
        if position > 0 {
            out.push(b',');
        }
        write_string(key, out);
        out.push(b':');
        write_field(field, out);
    }
    out.push(b'}');
}

fn sort_entries(entries: &mut [(&str, Field<'_>)]) {
    let by_key = |left: &(&str, Field<'_>), right: &(&str, Field<'_>)| {
        left.0.as_bytes().cmp(right.0.as_bytes())
    };
    if !entries.is_sorted_by(|left, right| by_key(left, right).is_le()) {
        entries.sort_unstable_by(by_key);
    }
}

/// An object's members (`"key":value`) written once each, so that objects of some
/// of them and of more can be joined without escaping anything twice.
pub(crate) struct Members<'k> {
    bytes: Vec<u8>,
    /// Each member's key and its bytes in `bytes`, sorted by key.
    members: Vec<(&'k str, std::ops::Range<usize>)>,
}

impl<'k> Members<'k> {
    pub(crate) fn new(entries: &mut [(&'k str, Field<'_>)]) -> Members<'k> {
        sort_entries(entries);
        let mut members = Members {
            bytes: Vec::with_capacity(512),
            members: Vec::with_capacity(entries.len() + 3),
        };
        for (key, field) in entries.iter() {
            let range = members.write(key, field);
            members.members.push((key, range));
        }
        members
    }

    fn write(&mut self, key: &'k str, field: &Field<'_>) -> std::ops::Range<usize> {
        let start = self.bytes.len();
        write_string(key, &mut self.bytes);
        self.bytes.push(b':');
        write_field(field, &mut self.bytes);
        start..self.bytes.len()
    }

    /// Adds a member in its place among the others; `key` must be new.
    pub(crate) fn insert(&mut self, key: &'k str, field: Field<'_>) {
        let range = self.write(key, &field);
        // a handful of short keys: a scan that compares first bytes beats a binary
        // search calling memcmp per probe
        let position = self
            .members
            .iter()
            .position(|(other, _)| {
                let (other, key) = (other.as_bytes(), key.as_bytes());
                other.first() > key.first() || (other.first() == key.first() && other > key)
            })
            .unwrap_or(self.members.len());
        self.members.insert(position, (key, range));
    }

    /// The canonical JSON object of all members, piece by piece.
    fn pieces(&self, mut piece: impl FnMut(&[u8])) {
        piece(b"{");
        for (position, (_, range)) in self.members.iter().enumerate() {
            if position > 0 {
                piece(b",");
            }
            piece(&self.bytes[range.clone()]);
        }
        piece(b"}");
    }

    /// The canonical JSON object of all members.
    pub(crate) fn object(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes.len() + self.members.len() + 2);
        self.pieces(|piece| out.extend_from_slice(piece));
        out
    }

    /// [`sha256_digest`] of [`Members::object`], without making the object.
    pub(crate) fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        self.pieces(|piece| hasher.update(piece));
        digest_text(&hasher.finalize())
    }
}

fn write_texts(items: &[String], out: &mut Vec<u8>) {
    out.push(b'[');
    for (position, item) in items.iter().enumerate() {
        if position > 0 {
            out.push(b',');
        }
        write_string(item, out);
    }
    out.push(b']');
}

fn write_field(field: &Field<'_>, out: &mut Vec<u8>) {
    match field {
        Field::Text(text) => write_string(text, out),
        Field::OptionalText(Some(text)) => write_string(text, out),
        Field::OptionalText(None) => out.extend_from_slice(b"null"),
        Field::Bool(true) => out.extend_from_slice(b"true"),
        Field::Bool(false) => out.extend_from_slice(b"false"),
        Field::Number(number) => out.extend_from_slice(number.to_string().as_bytes()),
        Field::Texts(items) => write_texts(items, out),
        Field::Map(map) => {
            // a BTreeMap iterates in key order, which is canonical order
            out.push(b'{');
            for (position, (key, value)) in map.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_string(value, out);
            }
            out.push(b'}');
        }
        Field::Mounts(mounts) => {
            out.push(b'[');
            for (position, mount) in mounts.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                write_object(
                    &mut [
                        ("read_only", Field::Bool(mount.read_only)),
                        ("source", Field::Text(&mount.source)),
                        ("target", Field::Text(&mount.target)),
                    ],
                    out,
                );
            }
            out.push(b']');
        }
        Field::Source(source) => write_object(
            &mut [
                ("column", Field::Number(u64::from(source.column))),
                ("file", Field::Text(&source.file)),
                ("line", Field::Number(u64::from(source.line))),
            ],
            out,
        ),
    }
}
