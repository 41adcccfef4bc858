//! What a build reads beside the loader, as one digest: `mesh.lock` and every file
//! and link beneath `secrets/` (paths and bytes). Artifact directories are not in
//! it: a fleet with artifacts is never called unchanged without linking it again.

use std::path::Path;

/// The digest, or None when something there cannot be read.
pub fn digest(root: &Path) -> Option<String> {
    let mut bytes = Vec::new();
    let mut feed = |tag: &[u8], payload: &[u8]| {
        bytes.extend_from_slice(tag);
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(payload);
    };
    // as the lock is read: a regular file, not through a link, never waiting on a
    // FIFO, of bounded size (anything else is not digested: the build reads it, and
    // says what is wrong)
    match crate::fs::read_regular(&root.join("mesh.lock"), crate::confined::READ_LIMIT) {
        Ok(Some(lock)) => feed(b"lock", &lock),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => feed(b"no lock", b""),
        Ok(None) | Err(_) => return None,
    }
    let secrets = root.join("secrets");
    if std::fs::symlink_metadata(&secrets).is_ok() {
        for entry in walkdir::WalkDir::new(&secrets)
            .follow_links(false)
            .sort_by_file_name()
        {
            let entry = entry.ok()?;
            let relative = entry.path().strip_prefix(root).ok()?;
            let name = relative.to_string_lossy();
            let kind = entry.file_type();
            if kind.is_dir() {
                feed(b"directory", name.as_bytes());
            } else if kind.is_file() {
                feed(b"file", name.as_bytes());
                let bytes = crate::fs::read_regular(entry.path(), crate::confined::READ_LIMIT);
                feed(b"bytes", &bytes.ok()??);
            } else if kind.is_symlink() {
                feed(b"link", name.as_bytes());
                let target = std::fs::read_link(entry.path()).ok()?;
                feed(b"target", target.to_string_lossy().as_bytes());
            } else {
                return None;
            }
        }
    } else {
        feed(b"no secrets", b"");
    }
    Some(plan::sha256_digest(&bytes))
}
