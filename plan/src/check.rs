//! Value rules shared by the shape kinds: names, node paths, modes, environment.
//! Each returns a lowercase reason on refusal; it must not know about any one kind.
//! Reasons show the refused text escaped, so a hostile plan cannot reach a terminal
//! through an error message.

use crate::display::escaped;

/// A user, group, service or container name: `[a-z0-9_][a-z0-9_.@-]*`, at most 64 bytes.
pub fn name(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let first_ok = matches!(bytes.first(), Some(first) if first.is_ascii_lowercase() || first.is_ascii_digit() || *first == b'_');
    let rest_ok = bytes.iter().all(|byte| {
        byte.is_ascii_lowercase()
            || byte.is_ascii_digit()
            || matches!(byte, b'_' | b'-' | b'.' | b'@')
    });
    if first_ok && rest_ok && bytes.len() <= 64 {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a valid name (lowercase letters, digits, `_`, `-`, `.`, `@`; at most 64 bytes)",
            escaped(text)
        ))
    }
}

/// An owner or group of a path: a [`name`] that is not all digits (`chown` and the
/// shadow tools would take `1000` for a uid, not a name).
pub fn account(text: &str) -> Result<(), String> {
    name(text)?;
    if text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!(
            "`{text}` is all digits, which the host tools read as a numeric id, not a name"
        ));
    }
    Ok(())
}

/// A user or group the applier creates, as `useradd` and `groupadd` accept it:
/// `[a-z_][a-z0-9_-]*[$]?`, at most 32 bytes, not all digits.
pub fn user_name(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let body = bytes.strip_suffix(b"$").unwrap_or(bytes);
    let first_ok =
        matches!(body.first(), Some(first) if first.is_ascii_lowercase() || *first == b'_');
    let rest_ok = body.iter().all(|byte| {
        byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'-')
    });
    if bytes.is_empty() {
        return Err("the name is empty".to_string());
    }
    if bytes.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "`{text}` is all digits, which `useradd` refuses (it would read as a uid)"
        ));
    }
    if !(first_ok && rest_ok) {
        return Err(format!(
            "`{}` is not a name `useradd` accepts (`[a-z_][a-z0-9_-]*`, optionally ending in `$`)",
            escaped(text)
        ));
    }
    if bytes.len() > 32 {
        return Err(format!("`{text}` is longer than 32 bytes"));
    }
    Ok(())
}

/// Text shown to people and written into files and units: no control character
/// (C0, DEL, C1) and no bidirectional control (U+202A-U+202E, U+2066-U+2069, U+200E,
/// U+200F, U+061C), which would make it display as something else.
pub fn display_text(text: &str) -> Result<(), String> {
    // printable ASCII holds neither (every control and bidirectional character is
    // below 0x20, 0x7f, or not ASCII): most texts are answered by one pass over bytes
    if text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) {
        return Ok(());
    }
    if text.chars().any(char::is_control) {
        return Err(format!("{:?} contains a control character", escaped(text)));
    }
    if text.chars().any(crate::display::is_bidi_control) {
        return Err(format!(
            "\"{}\" contains a bidirectional control character, which makes it display as something else",
            escaped(text)
        ));
    }
    Ok(())
}

/// A user's home or login shell: a [`node_path`] without `:` (the field separator
/// of `/etc/passwd`).
pub fn account_path(text: &str) -> Result<(), String> {
    node_path(text)?;
    if text.contains(':') {
        return Err(format!(
            "`{text}` contains `:`, the field separator of `/etc/passwd`"
        ));
    }
    Ok(())
}

/// An absolute path on the node: starts with `/`, is not `/` itself, has no empty,
/// `.` or `..` component, no trailing `/`, and no control or bidirectional control
/// character ([`display_text`]).
pub fn node_path(text: &str) -> Result<(), String> {
    display_text(text)?;
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!("`{}` is not an absolute path", escaped(text)));
    };
    if rest.is_empty() {
        return Err("`/` itself cannot be a shape's path".to_string());
    }
    if text.len() > 4095 {
        return Err("the path is longer than 4095 bytes".to_string());
    }
    for component in rest.split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return Err(format!(
                "`{text}` is not canonical (no `.`, `..`, `//` or trailing `/`)"
            ));
        }
        if component.len() > 255 {
            return Err(format!("`{text}` has a component longer than 255 bytes"));
        }
    }
    Ok(())
}

/// A mode string of exactly four octal digits.
pub fn mode(text: &str) -> Result<u32, String> {
    if text.len() == 4 && text.bytes().all(|byte| (b'0'..=b'7').contains(&byte)) {
        u32::from_str_radix(text, 8).map_err(|error| format!("`{text}`: {error}"))
    } else {
        Err(format!(
            "`{}` is not a mode of four octal digits such as \"0644\"",
            escaped(text)
        ))
    }
}

/// A mode for a regular file: no setuid or setgid bit (a plan must not be able to
/// hand out root).
pub fn file_mode(text: &str) -> Result<u32, String> {
    let bits = mode(text)?;
    if bits & 0o6000 != 0 {
        return Err(format!(
            "`{text}` sets the setuid or setgid bit, which a plan may not do"
        ));
    }
    Ok(bits)
}

/// A secret's mode: a [`file_mode`] of at most `0640` (owner read and write,
/// group read): no bit for others, no execute bit, no setuid, setgid or sticky bit.
pub fn secret_mode(text: &str) -> Result<u32, String> {
    let bits = mode(text)?;
    if bits & !0o640 != 0 {
        return Err(format!(
            "`{text}` gives more than `0640` allows (others, execute, setuid, setgid or sticky bits): a secret is readable by its owner and at most its group"
        ));
    }
    Ok(bits)
}

/// A command-line argument or environment value: no NUL, newline or carriage return
/// (they cannot be written into a unit file faithfully).
pub fn unit_text(text: &str) -> Result<(), String> {
    if text.bytes().any(|byte| matches!(byte, 0 | b'\n' | b'\r')) {
        Err(format!(
            "\"{}\" contains a NUL, newline or carriage return",
            escaped(text)
        ))
    } else {
        Ok(())
    }
}

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn environment_name(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let first_ok =
        matches!(bytes.first(), Some(first) if first.is_ascii_alphabetic() || *first == b'_');
    if first_ok
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'_')
    {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a valid environment variable name",
            escaped(text)
        ))
    }
}

/// Environment entries: valid names, unit-safe values.
pub fn environment(entries: &std::collections::BTreeMap<String, String>) -> Result<(), String> {
    for (key, value) in entries {
        environment_name(key)?;
        unit_text(value).map_err(|reason| format!("`{key}`: {reason}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        /// The ASCII fast path refuses exactly what the definition refuses: any
        /// control character or bidirectional control, ASCII or not.
        #[test]
        fn display_text_refuses_exactly_controls_and_bidi(
            text in "(\\PC|[\\x00-\\x1f\\x7f\\u{80}-\\u{9f}\\u{200e}\\u{200f}\\u{202a}-\\u{202e}\\u{2066}-\\u{2069}\\u{61c}]){0,12}"
        ) {
            let refused = text.chars().any(|c| c.is_control() || crate::display::is_bidi_control(c));
            prop_assert_eq!(super::display_text(&text).is_err(), refused);
        }
    }
}
