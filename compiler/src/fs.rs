//! The real filesystem as the language's loader. Paths are resolved through
//! symlinks before reading, so a link cannot smuggle a file from outside the
//! repository past the evaluator's lexical check.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
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
    /// The directories this loader has resolved, by the path they were asked by:
    /// an evaluation asks about many files of few directories. Forgotten when the
    /// machine starts its next evaluation (a session's next input), so that a
    /// directory replaced by a link since is resolved again.
    directories: std::cell::RefCell<std::collections::HashMap<Vec<u8>, PathBuf>>,
    /// Whether a named pipe is read (waiting for its writer, as Nix does) or
    /// refused (an editor's analysis, which must not wait on anyone).
    pipes: bool,
}

impl RealFs {
    pub fn new(roots: Vec<PathBuf>) -> RealFs {
        let roots = roots
            .into_iter()
            .map(|root| root.canonicalize().unwrap_or(root))
            .collect();
        RealFs {
            roots,
            directories: Default::default(),
            pipes: true,
        }
    }

    /// This loader, refusing to read named pipes if `refused` (an editor's).
    pub fn refusing_pipes(self, refused: bool) -> RealFs {
        RealFs {
            pipes: !refused,
            ..self
        }
    }

    /// `path` with every link resolved, as `canonicalize` resolves it: its
    /// directory as this loader resolved it before (or now, the same way), then
    /// the last component, resolved again when it is itself a link.
    fn canonical(&self, path: &Path) -> io::Result<PathBuf> {
        let bytes = path.as_os_str().as_bytes();
        if !is_plain(bytes) {
            return path.canonicalize();
        }
        self.resolved(bytes)
    }

    /// [`RealFs::canonical`] of a path [`is_plain`] says is plain.
    fn resolved(&self, path: &[u8]) -> io::Result<PathBuf> {
        let cut = path.iter().rposition(|byte| *byte == b'/').unwrap_or(0);
        let (parent, name) = (&path[..cut], OsStr::from_bytes(&path[cut + 1..]));
        let directory = if parent.is_empty() {
            PathBuf::from("/")
        } else {
            let known = self.directories.borrow().get(parent).cloned();
            match known {
                Some(directory) => directory,
                None => {
                    let directory = self.resolved(parent)?;
                    self.directories
                        .borrow_mut()
                        .insert(parent.to_vec(), directory.clone());
                    directory
                }
            }
        };
        let joined = directory.join(name);
        if std::fs::symlink_metadata(&joined)?.file_type().is_symlink() {
            joined.canonicalize()
        } else {
            Ok(joined)
        }
    }

    fn resolve(&self, path: &Path) -> io::Result<PathBuf> {
        let resolved = self.canonical(path)?;
        let bytes = resolved.as_os_str().as_bytes();
        let inside = |root: &PathBuf| {
            let root = root.as_os_str().as_bytes();
            bytes.starts_with(root)
                && (bytes.len() == root.len()
                    || root.ends_with(b"/")
                    || bytes.get(root.len()) == Some(&b'/'))
        };
        // a checkout's `.git` is its history and its configuration (a remote's URL may
        // hold a token), never module input: as in a flake, whose source has no `.git`
        let in_git = |root: &PathBuf| {
            bytes[root.as_os_str().len().min(bytes.len())..]
                .split(|byte| *byte == b'/')
                .any(|component| component == b".git")
        };
        if let Some(root) = self.roots.iter().find(|root| inside(root))
            && in_git(root)
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "it is in the repository's `.git`, which evaluation does not read (its history and configuration, not module input)",
            ));
        }
        if self.roots.is_empty() || self.roots.iter().any(inside) {
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

/// Whether `path` is absolute with only named components (no `.`, `..`, empty
/// component or trailing `/`): then its directory and its name are where its
/// last `/` is, and resolving it component by component is what `canonicalize` does.
fn is_plain(path: &[u8]) -> bool {
    path.len() > 1
        && path[0] == b'/'
        && path[1..]
            .split(|byte| *byte == b'/')
            .all(|component| !component.is_empty() && component != b"." && component != b"..")
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
    /// A regular file, or a named pipe as Nix reads one (waiting for its writer);
    /// anything else (a device such as `/dev/zero`, a socket) is refused, looked at
    /// once opened, and opened without waiting: read, a device can grow without end.
    /// At most `max_len + 1` bytes are reserved or read.
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let resolved = self.resolve(path)?;
        let pipe = std::fs::metadata(&resolved)?.file_type().is_fifo();
        if pipe && !self.pipes {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is a named pipe, which the editor does not read (reading waits for its writer)",
            ));
        }
        let flags = if pipe {
            rustix::fs::OFlags::empty()
        } else {
            rustix::fs::OFlags::NONBLOCK
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags.bits() as i32)
            .open(resolved)?;
        let metadata = file.metadata()?;
        let readable = metadata.is_file() || (pipe && metadata.file_type().is_fifo());
        if !readable {
            let file_type = metadata.file_type();
            let what = if file_type.is_dir() {
                "a directory, not a regular file (`builtins.readDir` lists one; `import` of a directory reads its `default.nix`)"
            } else if file_type.is_socket() {
                "a socket, not a regular file"
            } else if file_type.is_char_device() || file_type.is_block_device() {
                "a device, not a regular file"
            } else {
                "not a regular file"
            };
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is {what}: only regular files are read"),
            ));
        }
        if metadata.len() > max_len {
            return Err(lang::too_large(max_len));
        }
        // the size is a hint (a file may grow while it is read, a pipe has none): a
        // reservation that cannot be made is an error to report, not an abort, and
        // no more than the bound and one byte is read
        let mut text = Vec::new();
        text.try_reserve_exact(usize::try_from(metadata.len()).unwrap_or(usize::MAX))
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    "it is larger than the memory this process can have",
                )
            })?;
        file.take(max_len.saturating_add(1))
            .read_to_end(&mut text)?;
        lang::within(text, max_len)
    }

    /// Opened without waiting and without following a link put in its place since
    /// it was resolved; its kind and size are the opened file's (a path that was a
    /// regular file when asked about may be a FIFO, or a huge file, by now).
    fn read_ahead(&self, path: &Path, max_len: u64) -> Option<Arc<[u8]>> {
        let resolved = self.resolve(path).ok()?;
        read_regular(&resolved, max_len)
            .ok()
            .flatten()
            .map(Arc::from)
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let resolved = self.resolve(path).ok()?;
        std::fs::metadata(resolved)
            .ok()
            .map(|metadata| kind_of(&metadata))
    }

    fn list(&self, path: &Path) -> io::Result<lang::Entries> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(self.resolve(path)?)? {
            let entry = entry?;
            let metadata = std::fs::symlink_metadata(entry.path())?;
            entries.push((
                std::os::unix::ffi::OsStringExt::into_vec(entry.file_name()),
                kind_of(&metadata),
            ));
        }
        Ok(entries)
    }

    fn next_evaluation(&self) {
        self.directories.borrow_mut().clear();
    }
}

/// The bytes of the regular file at `path`, read without following a link and
/// without waiting on a FIFO: what is judged is the file opened, not what the
/// path was when asked about (a link to a FIFO put there in between would have
/// the read wait for ever). `Ok(None)` when it is no regular file or is larger
/// than `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    read_regular_file(path, limit, false)
}

/// [`read_regular`] through a link at `path` (the file it leads to is read): for a
/// file the user named, which may be a link on purpose.
pub fn read_regular_following(path: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
    read_regular_file(path, limit, true)
}

fn read_regular_file(path: &Path, limit: u64, follow: bool) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = match follow {
        true => rustix::fs::OFlags::NONBLOCK,
        false => rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW,
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        // a link where the file should be (`O_NOFOLLOW`)
        Err(error) if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let metadata = file.metadata()?;
    if !metadata.is_file() || metadata.len() > limit {
        return Ok(None);
    }
    // room for its size and the byte that says it grew: read without regrowing
    // (a reservation that cannot be made is an error, not an abort)
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(
            usize::try_from(metadata.len())
                .unwrap_or(0)
                .saturating_add(1),
        )
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                "the file is larger than the memory this process can have",
            )
        })?;
    // a file that grew since is not read past the bound
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// What `read_regular` tells apart beyond what reading ahead takes (see the
    /// test after it for FIFOs, devices and large files): a missing file is an
    /// error the caller can tell (`meshc diff` takes it for no build), a link or
    /// a file one byte past the bound is none.
    #[test]
    fn read_regular_tells_a_missing_file_from_one_it_does_not_read() {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let file = directory.path().join("manifest.json");
        std::fs::write(&file, b"{}").expect("written");
        assert_eq!(read_regular(&file, 2).expect("read"), Some(b"{}".to_vec()));
        assert_eq!(read_regular(&file, 1).expect("read"), None);
        let link = directory.path().join("link");
        symlink(&file, &link).expect("a link");
        assert_eq!(read_regular(&link, 1 << 20).expect("not followed"), None);
        let missing = read_regular(&directory.path().join("missing"), 1 << 20);
        assert_eq!(
            missing.map_err(|error| error.kind()),
            Err(io::ErrorKind::NotFound)
        );
    }

    /// Reading ahead takes only a regular file inside the repository no larger than
    /// asked, looked at once opened: a FIFO is not waited on (opening one for
    /// reading waits for a writer), a sparse 1 GiB file is not read, a link to a file
    /// outside and a directory are refused.
    #[test]
    fn read_ahead_takes_only_small_regular_files_inside() {
        let temporary = tempfile::tempdir().expect("temporary directory");
        let base = temporary.path().canonicalize().expect("canonical");
        let root = base.join("repo");
        std::fs::create_dir_all(root.join("dir.nix")).expect("made");
        std::fs::write(root.join("small.nix"), "1").expect("written");
        std::fs::write(base.join("secret.nix"), "2").expect("written");
        symlink(base.join("secret.nix"), root.join("escape.nix")).expect("link");
        std::fs::File::create(root.join("big.nix"))
            .and_then(|file| file.set_len(1 << 30))
            .expect("sparse file");
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("pipe.nix"))
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo");
        let (sender, receiver) = std::sync::mpsc::channel();
        let asked = root.clone();
        // a FIFO waited on would block: a timeout turns the hang into a failure
        std::thread::spawn(move || {
            let fs = RealFs::new(vec![asked.clone()]);
            let read = |name: &str| {
                fs.read_ahead(&asked.join(name), 64 << 20)
                    .map(|text| text.to_vec())
            };
            let _sent = sender.send(
                [
                    "small.nix",
                    "pipe.nix",
                    "big.nix",
                    "escape.nix",
                    "dir.nix",
                    "missing.nix",
                ]
                .map(read),
            );
        });
        let read = receiver
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("read ahead without waiting");
        assert_eq!(read, [Some(b"1".to_vec()), None, None, None, None, None]);
        let fs = RealFs::new(vec![root.clone()]);
        assert_eq!(
            fs.read_ahead(&root.join("small.nix"), 0),
            None,
            "past the bound"
        );
    }

    /// The remembered directories resolve as `canonicalize` does: through links
    /// inside the repository, and never to a file outside it.
    #[test]
    fn paths_resolve_through_remembered_directories_as_canonicalize_does() {
        let temporary = tempfile::tempdir().expect("temporary directory");
        let base = temporary.path().canonicalize().expect("canonical");
        let root = base.join("repo");
        let outside = base.join("outside");
        for directory in [root.join("modules/a"), root.join("real"), outside.clone()] {
            std::fs::create_dir_all(&directory).expect("made");
        }
        std::fs::write(root.join("modules/a/module.nix"), "1").expect("written");
        std::fs::write(root.join("real/file.nix"), "2").expect("written");
        std::fs::write(outside.join("secret.nix"), "3").expect("written");
        symlink(root.join("real"), root.join("modules/linked")).expect("link");
        symlink(&outside, root.join("modules/escape")).expect("link");
        symlink(
            outside.join("secret.nix"),
            root.join("modules/a/secret.nix"),
        )
        .expect("link");
        symlink("../real/file.nix", root.join("modules/relative.nix")).expect("link");
        let fs = RealFs::new(vec![root.clone()]);
        for path in [
            root.join("modules/a/module.nix"),
            root.join("modules/linked/file.nix"),
            root.join("modules/relative.nix"),
            root.join("modules/escape/secret.nix"),
            root.join("modules/a/secret.nix"),
            root.join("modules/a/missing.nix"),
            root.join("modules/missing/module.nix"),
        ] {
            // twice: the second asks the remembered directories
            for _ in 0..2 {
                let want = path.canonicalize().map_err(|error| error.kind());
                assert_eq!(
                    fs.canonical(&path).map_err(|error| error.kind()),
                    want,
                    "{path:?}"
                );
            }
        }
        assert_eq!(
            fs.read(&root.join("modules/linked/file.nix"), u64::MAX)
                .expect("read"),
            b"2"
        );
        for escaping in ["modules/escape/secret.nix", "modules/a/secret.nix"] {
            let error = fs
                .read(&root.join(escaping), u64::MAX)
                .expect_err("outside the repository");
            assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{escaping}");
        }
    }

    /// A read stops at its bound: a file that claims a gigabyte (sparse) or a pipe
    /// that never ends is refused with `FileTooLarge` once the bound is passed,
    /// with no more than the bound read or reserved; a file within it is read whole.
    #[test]
    fn a_read_stops_at_its_bound() {
        let temporary = tempfile::tempdir().expect("temporary directory");
        let root = temporary.path().canonicalize().expect("canonical");
        let fs = RealFs::new(vec![root.clone()]);
        let sparse = root.join("sparse");
        std::fs::File::create(&sparse)
            .and_then(|file| file.set_len(1 << 30))
            .expect("a sparse gigabyte");
        let error = fs.read(&sparse, 1 << 20).expect_err("too large");
        assert_eq!(error.kind(), io::ErrorKind::FileTooLarge);
        let small = root.join("small");
        std::fs::write(&small, b"12345").expect("written");
        assert_eq!(fs.read(&small, 5).expect("within"), b"12345");
        assert_eq!(
            fs.read(&small, 4).expect_err("one byte over").kind(),
            io::ErrorKind::FileTooLarge
        );
        // a pipe has no size to look at: what is read is bounded
        let pipe = root.join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &pipe,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("a named pipe");
        let writer = std::thread::spawn({
            let pipe = pipe.clone();
            move || {
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&pipe)
                    .expect("the pipe's writer");
                // the reader stops reading: the write then fails (EPIPE), which ends it
                let chunk = vec![b'x'; 1 << 16];
                for _ in 0..1024 {
                    if file.write_all(&chunk).is_err() {
                        return true;
                    }
                }
                false
            }
        });
        let error = fs.read(&pipe, 1 << 20).expect_err("a pipe past the bound");
        assert_eq!(error.kind(), io::ErrorKind::FileTooLarge);
        assert!(
            writer.join().expect("the writer"),
            "the reader read all 64 MiB the writer wrote"
        );
    }
}
