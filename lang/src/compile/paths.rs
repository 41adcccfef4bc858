//! Path helpers of the language: a host path as bytes, Nix's `canonPath`, and a
//! path literal made absolute. Pure functions on bytes; they touch no filesystem.

use std::path::Path;

pub fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().into_owned().into_bytes()
}

/// Nix's `canonPath`: an absolute path with `.`, `..` and repeated slashes removed.
pub fn canonical_path(path: &[u8]) -> Vec<u8> {
    let mut components: Vec<&[u8]> = Vec::new();
    for component in path.split(|b| *b == b'/') {
        match component {
            b"" | b"." => {}
            b".." => {
                components.pop();
            }
            other => components.push(other),
        }
    }
    if components.is_empty() {
        return b"/".to_vec();
    }
    let mut result = Vec::with_capacity(path.len());
    for component in components {
        result.push(b'/');
        result.extend_from_slice(component);
    }
    result
}

/// A path literal's text made absolute against `base` and canonical.
pub fn absolute_path(text: &[u8], base: &[u8]) -> Vec<u8> {
    if text.first() == Some(&b'/') {
        canonical_path(text)
    } else {
        let mut joined = base.to_vec();
        joined.push(b'/');
        joined.extend_from_slice(text);
        canonical_path(&joined)
    }
}
