//! The real filesystem as the language's loader. Paths are resolved through
//! symlinks before reading, so a link cannot smuggle a file from outside the
//! repository past the evaluator's lexical check.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lang::{FileKind, Loader};

/// Unsaved editor buffers by absolute path, read in place of the files on disk
/// (`meshc lsp` compiles what the user sees, not what was last saved).
pub type Overlay = Arc<BTreeMap<PathBuf, Arc<[u8]>>>;

#[derive(Debug, Clone)]
pub struct RealFs {
    /// Directories a resolved path must stay inside.
    roots: Vec<PathBuf>,
}

impl RealFs {
    pub fn new(roots: Vec<PathBuf>) -> RealFs {
        let roots = roots
            .into_iter()
            .map(|root| root.canonicalize().unwrap_or(root))
            .collect();
        RealFs { roots }
    }

    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let resolved = path.canonicalize()?;
        if self.roots.is_empty() || self.roots.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "it resolves to `{}`, outside the repository",
                    resolved.display()
                ),
            ))
        }
    }
}

fn kind_of(metadata: &std::fs::Metadata) -> FileKind {
    let file_type = metadata.file_type();
    if file_type.is_symlink() {
        FileKind::Symlink
    } else if file_type.is_dir() {
        FileKind::Directory
    } else if file_type.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    }
}

impl Loader for RealFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(self.resolve(path)?)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let resolved = self.resolve(path).ok()?;
        std::fs::metadata(resolved)
            .ok()
            .map(|metadata| kind_of(&metadata))
    }

    fn list(&self, path: &Path) -> io::Result<Vec<(String, FileKind)>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(self.resolve(path)?)? {
            let entry = entry?;
            let metadata = std::fs::symlink_metadata(entry.path())?;
            entries.push((
                entry.file_name().to_string_lossy().into_owned(),
                kind_of(&metadata),
            ));
        }
        Ok(entries)
    }
}
