//! Age private keys (`AGE-SECRET-KEY-1...`, what `age-keygen` writes) found where a
//! public key belongs. One pasted into the inventory is refused without printing any
//! of it, and every source text shown beside a diagnostic has it blotted out, so no
//! part of a leaked identity reaches a terminal, a CI log or an editor.

use std::borrow::Cow;

/// The prefix, compared without regard to case (bech32 may be written either way).
const PREFIX: &[u8] = b"AGE-SECRET-KEY-1";

/// Where the private keys in `text` start and end (byte ranges): the prefix and the
/// run of bech32 characters after it.
fn ranges(text: &[u8]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    let mut start = 0;
    while start + PREFIX.len() <= text.len() {
        let candidate = &text[start..start + PREFIX.len()];
        if candidate.eq_ignore_ascii_case(PREFIX) {
            let end = start
                + PREFIX.len()
                + text[start + PREFIX.len()..]
                    .iter()
                    .take_while(|byte| byte.is_ascii_alphanumeric())
                    .count();
            found.push((start, end));
            start = end;
        } else {
            start += 1;
        }
    }
    found
}

/// Does `text` hold an age private key?
pub fn contains_private_key(text: &str) -> bool {
    !ranges(text.as_bytes()).is_empty()
}

/// Does `bytes` hold an age private key as `age-keygen` writes it, in capitals, or in
/// small letters (the other spelling bech32 allows; a key in mixed case is not a
/// key)? Fast enough for every byte of every plan: two SIMD searches.
pub fn holds_private_key(bytes: &[u8]) -> bool {
    static FINDERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
        std::sync::LazyLock::new(|| {
            [
                memchr::memmem::Finder::new(b"AGE-SECRET-KEY-1"),
                memchr::memmem::Finder::new(b"age-secret-key-1"),
            ]
        });
    FINDERS.iter().any(|finder| finder.find(bytes).is_some())
}

/// `text` with every private key in it replaced by as many `*` as it has bytes, so
/// that offsets into it (diagnostic spans) still point at the same bytes.
pub fn redact_private_keys(text: &str) -> Cow<'_, str> {
    let found = ranges(text.as_bytes());
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end) in found {
        // the ranges hold ASCII only, so they start and end on character boundaries
        out.push_str(&text[last..start]);
        out.extend(std::iter::repeat_n('*', end - start));
        last = end;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "AGE-SECRET-KEY-1QQPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE";

    #[test]
    fn keys_are_found_in_any_case_and_blotted_out_byte_for_byte() {
        let text = format!("key = \"{KEY}\";\nother = \"{}\";", KEY.to_lowercase());
        assert!(contains_private_key(&text));
        assert!(!contains_private_key("age1qqqq AGE-SECRET-KEY"));
        let redacted = redact_private_keys(&text);
        assert_eq!(redacted.len(), text.len());
        assert!(!redacted.to_lowercase().contains("secret"), "{redacted}");
        assert!(redacted.starts_with("key = \"*****"));
        assert_eq!(redact_private_keys("plain"), "plain");
    }
}
