//! Plan-supplied text made safe to print: a plan may come from a hostile build
//! directory or control plane, and its names, paths, modules and contents must not
//! reach a terminal as escape sequences, fake lines or reordered (bidirectional)
//! text. Pure string functions; they must not decide what is valid (that is `check`).

use std::borrow::Cow;
use std::fmt::Write as _;

/// Characters that reorder displayed text: the bidirectional embeddings and
/// overrides (U+202A-U+202E), isolates (U+2066-U+2069), the marks U+200E, U+200F
/// and the Arabic letter mark U+061C.
pub fn is_bidi_control(character: char) -> bool {
    matches!(
        character,
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
    )
}

/// Would this character change the terminal rather than show as itself: a C0 or
/// C1 control (escape, newline, carriage return, tab, ...), DEL, a bidirectional
/// control, or the line and paragraph separators?
pub fn is_unsafe_to_print(character: char) -> bool {
    character.is_control()
        || is_bidi_control(character)
        || matches!(character, '\u{2028}' | '\u{2029}')
}

/// `text` with every character [`is_unsafe_to_print`] written as `\u{HEX}` (the
/// common safe case borrows): `"a\u{1b}[2Jb"` prints as `a\u{1b}[2Jb`.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_to_print) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        if is_unsafe_to_print(character) {
            let _ = write!(out, "\\u{{{:x}}}", character as u32);
        } else {
            out.push(character);
        }
    }
    Cow::Owned(out)
}

/// JSON text with the characters [`is_unsafe_to_print`] that JSON writers leave raw
/// (DEL, C1 controls, bidirectional controls, separators) as `\uXXXX` escapes; the
/// JSON means the same. They can only occur inside strings, where the escape is valid.
pub fn json_escaped(json: &str) -> Cow<'_, str> {
    // C0 controls inside strings are escaped by every JSON writer; outside strings
    // they are the layout's own whitespace (newline, indentation) and stay
    let left_raw = |character: char| {
        is_unsafe_to_print(character) && !character.is_ascii_control() || character == '\u{7f}'
    };
    if !json.chars().any(left_raw) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for character in json.chars() {
        if left_raw(character) {
            let _ = write!(out, "\\u{:04x}", character as u32);
        } else {
            out.push(character);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_are_escaped_and_plain_text_is_borrowed() {
        assert!(matches!(escaped("/etc/motd"), Cow::Borrowed("/etc/motd")));
        assert_eq!(escaped("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escaped("x\nfake summary"), "x\\u{a}fake summary");
        assert_eq!(escaped("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escaped("abc\u{202E}fdp.exe"), "abc\\u{202e}fdp.exe");
        assert_eq!(escaped("é ü 日本"), "é ü 日本");
        let json = json_escaped("{\n  \"a\":\"x\u{202E}y\u{7f}\u{9b}\"}");
        assert_eq!(json, "{\n  \"a\":\"x\\u202ey\\u007f\\u009b\"}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["a"], "x\u{202E}y\u{7f}\u{9b}");
    }
}
