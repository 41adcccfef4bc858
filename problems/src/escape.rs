//! Text made safe to print: what a binary prints may quote a hostile plan, build
//! directory, control plane, server or file name, and none of it may reach a terminal
//! as escape sequences, fake lines or reordered (bidirectional) text. Pure string
//! functions; they must not decide what is valid (that is `plan::check`).

use std::borrow::Cow;

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

/// Characters that show as nothing at all: the zero-width space and joiners
/// (U+200B-U+200D), the word joiner and the invisible operators (U+2060-U+2065) and
/// the byte order mark U+FEFF.
pub fn is_invisible(character: char) -> bool {
    matches!(
        character,
        '\u{200B}'..='\u{200D}' | '\u{2060}'..='\u{2065}' | '\u{FEFF}'
    )
}

/// Which characters are written as escapes rather than printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Escape {
    /// Those [`is_unsafe_to_print`] names: `plan`, `meshc` and `mesh-provision`.
    Controls,
    /// Those and the ones [`is_invisible`] names: `mesh-apply`, whose report
    /// quotes plans, so that no name hides a character it holds.
    ControlsAndInvisible,
}

impl Escape {
    /// Is `character` one of the characters this escapes?
    pub fn covers(self, character: char) -> bool {
        match self {
            Escape::Controls => is_unsafe_to_print(character),
            Escape::ControlsAndInvisible => {
                is_unsafe_to_print(character) || is_invisible(character)
            }
        }
    }

    /// `text` with every character this [covers](Escape::covers) written as
    /// `\u{HEX}` (the common safe case borrows): `"a\u{1b}[2Jb"` prints as
    /// `a\u{1b}[2Jb`.
    pub fn text(self, text: &str) -> Cow<'_, str> {
        if !text.chars().any(|character| self.covers(character)) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len() + 16);
        for character in text.chars() {
            if self.covers(character) {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(character)));
            } else {
                out.push(character);
            }
        }
        Cow::Owned(out)
    }

    /// JSON text with the characters this [covers](Escape::covers) that JSON writers
    /// leave raw (DEL, C1 controls, bidirectional controls, separators, invisible
    /// characters) as `\uXXXX` escapes; the JSON means the same. They can only occur
    /// inside strings, where the escape is valid. C0 controls are left alone: inside
    /// strings every JSON writer escapes them already, outside they are the layout's
    /// own whitespace (newline, indentation).
    pub fn json(self, json: &str) -> Cow<'_, str> {
        let left_raw = |character: char| {
            self.covers(character) && !character.is_ascii_control() || character == '\u{7f}'
        };
        if !json.chars().any(left_raw) {
            return Cow::Borrowed(json);
        }
        let mut out = String::with_capacity(json.len() + 16);
        for character in json.chars() {
            if left_raw(character) {
                let mut units = [0u16; 2];
                for unit in character.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            } else {
                out.push(character);
            }
        }
        Cow::Owned(out)
    }
}

/// `text` with every character [`is_unsafe_to_print`] written as `\u{HEX}`:
/// [`Escape::Controls`]'s [`text`](Escape::text).
pub fn escaped(text: &str) -> Cow<'_, str> {
    Escape::Controls.text(text)
}

/// JSON text with the characters [`is_unsafe_to_print`] that JSON writers leave raw
/// as `\uXXXX`: [`Escape::Controls`]'s [`json`](Escape::json).
pub fn json_escaped(json: &str) -> Cow<'_, str> {
    Escape::Controls.json(json)
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
        assert_eq!(
            json_escaped("{\n  \"a\":\"x\u{202E}y\u{7f}\u{9b}\"}"),
            "{\n  \"a\":\"x\\u202ey\\u007f\\u009b\"}"
        );
    }

    /// The two sets differ by the invisible characters alone: `mesh-apply` escapes
    /// them, `plan`, `meshc` and `mesh-provision` print them.
    #[test]
    fn invisible_characters_are_escaped_only_where_asked() {
        let text = "a\u{200b}b\u{2060}c\u{feff}d";
        assert!(matches!(escaped(text), Cow::Borrowed(_)));
        assert!(matches!(json_escaped(text), Cow::Borrowed(_)));
        let escape = Escape::ControlsAndInvisible;
        assert_eq!(escape.text(text), "a\\u{200b}b\\u{2060}c\\u{feff}d");
        assert_eq!(escape.json(text), "a\\u200bb\\u2060c\\ufeffd");
        assert_eq!(escape.text("a\u{1b}b\u{202e}"), "a\\u{1b}b\\u{202e}");
        for character in (0..=0x10ffff).filter_map(char::from_u32) {
            assert_eq!(
                escape.covers(character),
                is_unsafe_to_print(character) || is_invisible(character),
                "{character:?}"
            );
            if Escape::Controls.covers(character) {
                assert!(escape.covers(character), "{character:?}");
            }
        }
    }

    /// In JSON, a C0 control outside a string is layout and stays; everything else
    /// the set covers becomes one `\uXXXX` per UTF-16 unit.
    #[test]
    fn json_keeps_its_layout_and_escapes_the_rest() {
        assert!(matches!(
            Escape::ControlsAndInvisible.json("{\n\t\"a\": 1\r\n}"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            Escape::ControlsAndInvisible.json("\"\u{85}\u{2028}\u{200d}\""),
            "\"\\u0085\\u2028\\u200d\""
        );
    }
}
