//! Path helpers of the language: a host path as bytes and back, Nix's
//! `canonPath`, and a path literal made absolute. Pure functions on bytes; they
//! touch no filesystem. A path's bytes are the system's, never decoded: a name
//! that is not UTF-8 (which `readDir` can return) names the same file both ways.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub fn path_bytes(path: &Path) -> Vec<u8> {
    path.as_os_str().as_bytes().to_vec()
}

/// The host path of a language path's bytes (the inverse of [`path_bytes`]).
pub fn host_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
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
