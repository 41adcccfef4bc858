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

/// Appends the canonical JSON of `value` to `out` (see [`canonical_json`]).
pub fn write_canonical(value: &serde_json::Value, out: &mut Vec<u8>) {
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
            write_entries(entries.into_iter(), out, write_canonical);
        }
    }
}

/// Appends the canonical JSON of an object of strings to `out`: `entries` must come
/// with their keys in the order of their UTF-8 bytes, each key once (as a
/// `BTreeMap<String, String>` iterates), which is the order canonical JSON writes.
pub fn write_string_object<'a>(
    entries: impl Iterator<Item = (&'a str, &'a str)>,
    out: &mut Vec<u8>,
) {
    write_entries(entries, out, |value: &str, out| write_string(value, out));
}

/// An object of `entries`, already in canonical order, each value written by `value`.
fn write_entries<K: AsRef<str>, V>(
    entries: impl Iterator<Item = (K, V)>,
    out: &mut Vec<u8>,
    value: impl Fn(V, &mut Vec<u8>),
) {
    out.push(b'{');
    for (position, (key, item)) in entries.enumerate() {
        if position > 0 {
            out.push(b',');
        }
        write_string(key.as_ref(), out);
        out.push(b':');
        value(item, out);
    }
    out.push(b'}');
}

/// Escapes exactly as serde_json does: `"` and `\\` escaped, the short escapes for
/// backspace, form feed, newline, carriage return and tab, `\u00XX` (lowercase hex)
/// for the other control characters, everything else as UTF-8.
pub fn write_string(text: &str, out: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // runs of bytes that need no escape are copied in one go; eight bytes at a time
    // are checked for one that does (the last few padded with a space)
    let mut start = 0;
    let mut offset = 0;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        if let Ok(word) = <[u8; 8]>::try_from(chunk)
            && needs_escape(u64::from_le_bytes(word))
        {
            escape_run(bytes, &mut start, offset, chunk, out);
        }
        offset += 8;
    }
    let rest = chunks.remainder();
    let mut word = [b' '; 8];
    if let Some(head) = word.get_mut(..rest.len()) {
        head.copy_from_slice(rest);
    }
    if needs_escape(u64::from_le_bytes(word)) {
        escape_run(bytes, &mut start, offset, rest, out);
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
    out.push(b'"');
}

/// Does any of the eight bytes of `word` need an escape: below 0x20, `"` or `\\`?
/// (Each test is exact as a yes or no for the whole word.)
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |value: u64| value.wrapping_sub(ONES) & !value & HIGHS != 0;
    word.wrapping_sub(ONES * 0x20) & !word & HIGHS != 0
        || has_zero(word ^ (ONES * u64::from(b'"')))
        || has_zero(word ^ (ONES * u64::from(b'\\')))
}

/// What follows the backslash in the escape of each byte (`u` for `\u00XX`); 0 for
/// a byte written as it is.
const ESCAPES: [u8; 256] = {
    let mut escapes = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        escapes[byte] = b'u';
        byte += 1;
    }
    escapes[0x08] = b'b';
    escapes[0x0c] = b'f';
    escapes[b'\n' as usize] = b'n';
    escapes[b'\r' as usize] = b'r';
    escapes[b'\t' as usize] = b't';
    escapes[b'"' as usize] = b'"';
    escapes[b'\\' as usize] = b'\\';
    escapes
};

/// Writes the escapes of `run` (the bytes of `bytes` from `offset` on), each after
/// the bytes before it that need none, and moves `start` past each.
fn escape_run(bytes: &[u8], start: &mut usize, offset: usize, run: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (index, byte) in run.iter().enumerate() {
        let escape = ESCAPES[usize::from(*byte)];
        if escape == 0 {
            continue;
        }
        let at = offset + index;
        out.extend_from_slice(bytes.get(*start..at).unwrap_or_default());
        if escape == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(byte >> 4)]);
            out.push(HEX[usize::from(byte & 0x0f)]);
        } else {
            out.extend_from_slice(&[b'\\', escape]);
        }
        *start = at + 1;
    }
}

/// A key of the crate's own (plain ASCII, nothing to escape) and its `:`.
fn write_key(key: &str, out: &mut Vec<u8>) {
    debug_assert!(!key.bytes().any(|byte| ESCAPES[usize::from(byte)] != 0));
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// A number as serde_json prints an unsigned integer: decimal digits, no sign.
fn write_number(mut number: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut first = digits.len();
    loop {
        first -= 1;
        digits[first] = b'0' + (number % 10) as u8;
        number /= 10;
        if number == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[first..]);
}

/// `sha256:` followed by the lowercase hex SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    sha256_digest_of_parts(&[bytes])
}

/// `sha256:` followed by the lowercase hex SHA-256 of the bytes of `parts`, one
/// after the other (as if they were one slice).
pub fn sha256_digest_of_parts(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    digest_text(&hasher.finalize())
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
        write_key(key, out);
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

/// An object's members (`"key":value`) written once each, so that objects of them
/// and of more can be joined without escaping anything twice. The members given to
/// [`Members::new`] are written as one canonical object, so that its digest is
/// taken in one pass.
pub(crate) struct Members<'k> {
    /// The canonical object of the members.
    bytes: Vec<u8>,
    /// Each member's key and its bytes in `bytes`, sorted by key.
    members: Vec<(&'k str, std::ops::Range<usize>)>,
}

impl<'k> Members<'k> {
    pub(crate) fn new(entries: &mut [(&'k str, Field<'_>)]) -> Members<'k> {
        sort_entries(entries);
        // room for the fields' text (escapes aside), so that a file's content is
        // not copied as the buffer grows
        let text: usize = entries
            .iter()
            .map(|(key, field)| key.len() + 8 + field_size(field))
            .sum();
        let mut members = Members {
            bytes: Vec::with_capacity(text + 2),
            members: Vec::with_capacity(entries.len()),
        };
        members.bytes.push(b'{');
        for (position, (key, field)) in entries.iter().enumerate() {
            if position > 0 {
                members.bytes.push(b',');
            }
            let range = members.write(key, field);
            members.members.push((key, range));
        }
        members.bytes.push(b'}');
        members
    }

    fn write(&mut self, key: &'k str, field: &Field<'_>) -> std::ops::Range<usize> {
        let start = self.bytes.len();
        write_key(key, &mut self.bytes);
        write_field(field, &mut self.bytes);
        start..self.bytes.len()
    }

    /// The canonical JSON object of the members and of `more` (keys none of the
    /// members has, in byte order): each member's bytes copied once, each of `more`
    /// written in its place among them.
    pub(crate) fn object_with(&self, more: &[(&str, Field<'_>)]) -> Vec<u8> {
        debug_assert!(more.is_sorted_by(|left, right| left.0 < right.0));
        debug_assert!(
            more.iter()
                .all(|(key, _)| self.members.iter().all(|(member, _)| member != key))
        );
        let length: usize = self.members.iter().map(|(_, range)| range.len() + 1).sum();
        let added: usize = more
            .iter()
            .map(|(key, field)| key.len() + 4 + field_size(field))
            .sum();
        let mut out = Vec::with_capacity(length + added + 2);
        out.push(b'{');
        let mut more = more.iter().peekable();
        let write_more = |out: &mut Vec<u8>, key: &str, field: &Field<'_>| {
            if out.len() > 1 {
                out.push(b',');
            }
            write_key(key, out);
            write_field(field, out);
        };
        for (key, range) in &self.members {
            while let Some((more_key, field)) =
                more.next_if(|(more_key, _)| more_key.as_bytes() < key.as_bytes())
            {
                write_more(&mut out, more_key, field);
            }
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(self.bytes.get(range.clone()).unwrap_or_default());
        }
        for (more_key, field) in more {
            write_more(&mut out, more_key, field);
        }
        out.push(b'}');
        out
    }

    /// [`sha256_digest`] of the canonical JSON object of the members given to
    /// [`Members::new`].
    pub(crate) fn digest(&self) -> String {
        sha256_digest(&self.bytes)
    }
}

/// About the bytes [`write_field`] writes for `field` when nothing needs an escape.
fn field_size(field: &Field<'_>) -> usize {
    match field {
        Field::Text(text) | Field::OptionalText(Some(text)) => text.len() + 2,
        Field::OptionalText(None) | Field::Bool(_) => 5,
        Field::Texts(items) => items.iter().map(|item| item.len() + 3).sum::<usize>() + 2,
        Field::Map(map) => {
            map.iter()
                .map(|(key, value)| key.len() + value.len() + 6)
                .sum::<usize>()
                + 2
        }
        Field::Mounts(mounts) => {
            mounts
                .iter()
                .map(|mount| mount.source.len() + mount.target.len() + 48)
                .sum::<usize>()
                + 2
        }
        Field::Source(source) => source.file.len() + 48,
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
        Field::Texts(items) => write_texts(items, out),
        // a BTreeMap iterates in key order, which is canonical order
        Field::Map(map) => write_string_object(
            map.iter()
                .map(|(key, value)| (key.as_str(), value.as_str())),
            out,
        ),
        Field::Mounts(mounts) => {
            out.push(b'[');
            for (position, mount) in mounts.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                // the keys in canonical order: read_only, source, target
                out.extend_from_slice(b"{\"read_only\":");
                out.extend_from_slice(if mount.read_only {
                    &b"true"[..]
                } else {
                    &b"false"[..]
                });
                out.extend_from_slice(b",\"source\":");
                write_string(&mount.source, out);
                out.extend_from_slice(b",\"target\":");
                write_string(&mount.target, out);
                out.push(b'}');
            }
            out.push(b']');
        }
        Field::Source(source) => {
            // the keys in canonical order: column, file, line
            out.extend_from_slice(b"{\"column\":");
            write_number(u64::from(source.column), out);
            out.extend_from_slice(b",\"file\":");
            write_string(&source.file, out);
            out.extend_from_slice(b",\"line\":");
            write_number(u64::from(source.line), out);
            out.push(b'}');
        }
    }
}
