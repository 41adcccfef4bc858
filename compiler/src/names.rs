//! The one rule for names that become parts of paths (need, consume and provide
//! names, module directory names; anything written under `secrets/` or `OUT/`):
//! an identifier `[A-Za-z_][A-Za-z0-9_-]*`. Pure; it must not touch the filesystem.

/// Is `name` an identifier: `[A-Za-z_][A-Za-z0-9_-]*`? No `/`, `.`, `..`, empty
/// name, control or non-ASCII character can pass, so it is always one plain path
/// component that stays where it is put.
pub fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z' | b'a'..=b'z' | b'_'))
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'))
}

/// Why `name` is not an identifier, for a diagnostic's message.
pub fn why_not_identifier(name: &str) -> &'static str {
    if name.is_empty() {
        "it is empty"
    } else if name.contains('/') {
        "it contains `/`"
    } else if name.starts_with('.') {
        "it starts with `.`"
    } else if name.chars().any(char::is_control) {
        "it contains a control character"
    } else if name.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        "it starts with a digit or `-`"
    } else {
        "it holds a character other than ASCII letters, digits, `_` and `-`"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_single_plain_components() {
        for good in ["superuser", "app_db", "Api-Key", "_x", "a1"] {
            assert!(is_identifier(good), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "/abs",
            "a/b",
            "../postgres/superuser",
            "1a",
            "-a",
            "a.b",
            "a\u{1b}",
            "é",
            "a b",
        ] {
            assert!(!is_identifier(bad), "{bad:?}");
        }
    }
}
