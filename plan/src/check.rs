//! Value rules shared by the shape kinds: names, node paths, modes, environment.
//! Each returns a lowercase reason on refusal; it must not know about any one kind.

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
            "`{text}` is not a valid name (lowercase letters, digits, `_`, `-`, `.`, `@`; at most 64 bytes)"
        ))
    }
}

/// An absolute path on the node: starts with `/`, is not `/` itself, has no empty,
/// `.` or `..` component, no trailing `/`, and no control character.
pub fn node_path(text: &str) -> Result<(), String> {
    if text.bytes().any(|byte| byte.is_ascii_control()) {
        return Err(format!("{text:?} contains a control character"));
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!("`{text}` is not an absolute path"));
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
            "`{text}` is not a mode of four octal digits such as \"0644\""
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

/// A command-line argument or environment value: no NUL, newline or carriage return
/// (they cannot be written into a unit file faithfully).
pub fn unit_text(text: &str) -> Result<(), String> {
    if text.bytes().any(|byte| matches!(byte, 0 | b'\n' | b'\r')) {
        Err(format!(
            "{text:?} contains a NUL, newline or carriage return"
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
        Err(format!("`{text}` is not a valid environment variable name"))
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
