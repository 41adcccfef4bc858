//! The standard module library, embedded at build time, and the loader that serves
//! it beside the repository under a virtual root.

use std::io;
use std::path::{Path, PathBuf};

use lang::{FileKind, Loader};

use crate::fs::{Overlay, RealFs};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/stdlib.rs"));
}

/// A digest of the embedded library (every file's path and bytes, in order): what
/// the build cache records of it.
pub fn digest() -> &'static str {
    static DIGEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIGEST.get_or_init(|| {
        let mut bytes = Vec::new();
        for (path, content) in embedded::FILES {
            bytes.extend_from_slice(path.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(&(content.len() as u64).to_le_bytes());
            bytes.extend_from_slice(content);
        }
        plan::sha256_digest(&bytes)
    })
}

/// Where the standard library appears to the evaluator. No real file is read there.
pub const VIRTUAL_ROOT: &str = "/mesh-stdlib";
/// How its files are named in plans and diagnostics.
pub const DISPLAY_PREFIX: &str = "<stdlib>";

/// Names of the standard modules (directories holding a `module.nix`).
pub fn module_names() -> Vec<String> {
    let mut names: Vec<String> = embedded::FILES
        .iter()
        .filter_map(|(path, _)| path.strip_suffix("/module.nix"))
        .filter(|name| !name.contains('/'))
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

fn relative(path: &Path) -> Option<String> {
    path.strip_prefix(VIRTUAL_ROOT)
        .ok()
        .map(|rest| rest.to_string_lossy().into_owned())
}

/// The repository on the real filesystem plus the embedded standard library, with
/// an editor's unsaved buffers (if any) consulted before the disk.
pub struct MeshLoader {
    repository: RealFs,
    overlay: Overlay,
}

impl MeshLoader {
    pub fn new(repository_root: PathBuf) -> MeshLoader {
        MeshLoader::with_overlay(repository_root, Overlay::default())
    }

    pub fn with_overlay(repository_root: PathBuf, overlay: Overlay) -> MeshLoader {
        MeshLoader {
            repository: RealFs::new(vec![repository_root]),
            overlay,
        }
    }

    /// This loader, refusing to read named pipes if `refused` (see
    /// [`RealFs::refusing_pipes`]).
    pub fn refusing_pipes(self, refused: bool) -> MeshLoader {
        MeshLoader {
            repository: self.repository.refusing_pipes(refused),
            ..self
        }
    }
}

/// The bytes of the standard library's file `name`.
fn embedded_file(name: &str) -> io::Result<&'static [u8]> {
    embedded::FILES
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, content)| *content)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "no such file in the standard library",
            )
        })
}

impl Loader for MeshLoader {
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
        match relative(path) {
            Some(name) => lang::within(embedded_file(&name)?, max_len).map(<[u8]>::to_vec),
            None => match self.overlay.get(path) {
                Some(buffer) => lang::within(&**buffer, max_len).map(<[u8]>::to_vec),
                None => self.repository.read(path, max_len),
            },
        }
    }

    /// As `read`, with one copy fewer: an unsaved buffer is shared as it is, and a
    /// file of the standard library copied once.
    fn read_source(&self, path: &Path, max_len: u64) -> io::Result<std::sync::Arc<[u8]>> {
        match relative(path) {
            Some(name) => lang::within(embedded_file(&name)?, max_len).map(std::sync::Arc::from),
            None => match self.overlay.get(path) {
                Some(buffer) => lang::within(buffer.clone(), max_len),
                None => self
                    .repository
                    .read(path, max_len)
                    .map(std::sync::Arc::from),
            },
        }
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        match relative(path) {
            Some(name) if name.is_empty() => Some(FileKind::Directory),
            Some(name) => {
                if embedded::FILES.iter().any(|(file, _)| *file == name) {
                    Some(FileKind::File)
                } else if embedded::FILES.iter().any(|(file, _)| {
                    file.starts_with(&name) && file.as_bytes().get(name.len()) == Some(&b'/')
                }) {
                    Some(FileKind::Directory)
                } else {
                    None
                }
            }
            None if self.overlay.contains_key(path) => Some(FileKind::File),
            None => self.repository.kind(path),
        }
    }

    fn list(&self, path: &Path) -> io::Result<lang::Entries> {
        match relative(path) {
            Some(name) => {
                let prefix = if name.is_empty() {
                    String::new()
                } else {
                    format!("{name}/")
                };
                let mut entries = lang::Entries::new();
                for (file, _) in embedded::FILES {
                    if let Some(rest) = file.strip_prefix(&prefix) {
                        let (first, kind) = match rest.split_once('/') {
                            Some((first, _)) => (first, FileKind::Directory),
                            None => (rest, FileKind::File),
                        };
                        if !entries.iter().any(|(n, _)| n == first.as_bytes()) {
                            entries.push((first.as_bytes().to_vec(), kind));
                        }
                    }
                }
                Ok(entries)
            }
            None => {
                let mut entries = self.repository.list(path)?;
                for buffer in self.overlay.keys() {
                    if buffer.parent() == Some(path)
                        && let Some(name) = buffer.file_name()
                    {
                        let name = std::os::unix::ffi::OsStrExt::as_bytes(name).to_vec();
                        if !entries.iter().any(|(entry, _)| *entry == name) {
                            entries.push((name, FileKind::File));
                        }
                    }
                }
                Ok(entries)
            }
        }
    }

    fn next_evaluation(&self) {
        self.repository.next_evaluation();
    }
}
