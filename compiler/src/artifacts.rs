//! Artifacts: a module's directory built into a reproducible archive, named by the
//! sha256 of its bytes. The archive format is the `archive` crate's, because the
//! builder (`mesh-build`) makes the same archives and must not depend on the compiler;
//! this module is the compiler's name for it, and keeps the repository's own store
//! (`.mesh/artifacts`) beneath the repository. Must not grow a second archive format.

pub(crate) use archive::{BuildError, Built, EscapingLink, build_checked, file_name};

use std::path::{Path, PathBuf};

/// Stores an archive in the repository's store `.mesh/artifacts`, reached beneath
/// the repository without following links (a committed `.mesh -> /elsewhere` must
/// not have `meshc artifacts build` write there); written once, durably.
pub fn store_in_repository(repository_root: &Path, built: &Built) -> Result<PathBuf, String> {
    let relative = Path::new(".mesh/artifacts");
    let shown = repository_root.join(relative);
    let store = crate::confined::Beneath::open(repository_root, false)
        .and_then(|repository| repository.directory(relative, true))
        .map_err(|error| format!("`{}`: {error}", shown.display()))?
        .ok_or_else(|| format!("`{}` was not made", shown.display()))?;
    let name = built.file_name();
    let path = shown.join(&name);
    let existing = store.read(Path::new(&name)).ok().flatten();
    if existing.is_some_and(|bytes| plan::sha256_digest(&bytes) == built.digest) {
        return Ok(path);
    }
    store
        .write(&name, &built.bytes, true, crate::confined::Readers::Owner)
        .map_err(|error| format!("`{}`: {error}", path.display()))?;
    Ok(path)
}
