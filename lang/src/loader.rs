//! How the language reaches files: a trait the host implements. The language itself
//! does no I/O; `meshc` gives it the real filesystem, tests and the editor can give
//! it files from memory.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    File,
    Directory,
    Symlink,
    Other,
}

impl FileKind {
    /// The name `builtins.readDir` gives this kind.
    pub fn nix_name(self) -> &'static str {
        match self {
            FileKind::File => "regular",
            FileKind::Directory => "directory",
            FileKind::Symlink => "symlink",
            FileKind::Other => "unknown",
        }
    }
}

pub trait Loader {
    /// The bytes of `path`, if there are at most `max_len` of them; more is
    /// [`too_large`], found without reading (or keeping) more than `max_len + 1`
    /// bytes: a file may be a terabyte, sparse, or a pipe that never ends, and the
    /// evaluation's memory bound must hold for what it reads as for what it makes.
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>>;
    /// The bytes of `path` as a source is kept (shared between threads): a loader
    /// that read the file before in the same build may give those bytes again
    /// instead of reading it once more. Bounded as [`Loader::read`].
    fn read_source(&self, path: &Path, max_len: u64) -> io::Result<Arc<[u8]>> {
        self.read(path, max_len).map(Arc::from)
    }
    /// The bytes of `path` for reading it ahead of any import (`eval::prefetch`):
    /// only when it is a regular file of at most `max_len` bytes, else None, as
    /// when it cannot be read. A host reading a real filesystem looks at the file
    /// it opened, opened without waiting (a FIFO opened for reading waits for a
    /// writer), before reading it: no import asked for it, so nothing may block
    /// or grow on its account.
    fn read_ahead(&self, path: &Path, max_len: u64) -> Option<Arc<[u8]>> {
        if self.kind(path) != Some(FileKind::File) {
            return None;
        }
        self.read_source(path, max_len)
            .ok()
            .filter(|text| text.len() as u64 <= max_len)
    }
    /// What is at `path`, or None if nothing is.
    fn kind(&self, path: &Path) -> Option<FileKind>;
    /// The entries of a directory, in any order.
    fn list(&self, path: &Path) -> io::Result<Entries>;
    /// A new evaluation starts on the same machine (an interactive session's next
    /// input): forget what was remembered of the filesystem for the last one.
    fn next_evaluation(&self) {}
}

/// The error of a read that found more than it may read (`ErrorKind::FileTooLarge`).
pub fn too_large(max_len: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!("it is larger than the {max_len} bytes left to read"),
    )
}

/// `bytes`, if there are at most `max_len` of them (a loader that holds its files
/// in memory).
pub fn within<T: AsRef<[u8]>>(bytes: T, max_len: u64) -> io::Result<T> {
    if bytes.as_ref().len() as u64 > max_len {
        return Err(too_large(max_len));
    }
    Ok(bytes)
}

/// A directory's entries: each name as the system's bytes (not necessarily UTF-8),
/// and what it is.
pub type Entries = Vec<(Vec<u8>, FileKind)>;

/// Files held in memory, keyed by absolute path. Directories are implied by paths.
#[derive(Default, Debug, Clone)]
pub struct MemoryLoader {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemoryLoader {
    pub fn new() -> MemoryLoader {
        MemoryLoader::default()
    }

    pub fn insert(&mut self, path: impl Into<PathBuf>, content: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), content.into());
    }
}

impl Loader for MemoryLoader {
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
        let bytes = self
            .files
            .get(path)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))?;
        within(bytes, max_len).cloned()
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        if self.files.contains_key(path) {
            return Some(FileKind::File);
        }
        self.files
            .keys()
            .any(|file| file.starts_with(path) && file != path)
            .then_some(FileKind::Directory)
    }

    fn list(&self, path: &Path) -> io::Result<Entries> {
        let mut entries: BTreeMap<Vec<u8>, FileKind> = BTreeMap::new();
        for file in self.files.keys() {
            if let Ok(rest) = file.strip_prefix(path) {
                let mut components = rest.components();
                if let Some(first) = components.next() {
                    let name = first.as_os_str().as_bytes().to_vec();
                    let kind = if components.next().is_some() {
                        FileKind::Directory
                    } else {
                        FileKind::File
                    };
                    entries.insert(name, kind);
                }
            }
        }
        if entries.is_empty() {
            return Err(io::Error::new(io::ErrorKind::NotFound, "no such directory"));
        }
        Ok(entries.into_iter().collect())
    }
}
