//! The one confined filesystem layer: every path the applier touches on the host (the
//! plan's shapes and its own record, lock, unit and scratch files) is resolved beneath a
//! directory handle on the root, and every change is made on an opened parent directory
//! (`mkdirat`, `openat` with `O_NOFOLLOW`, `renameat`, `unlinkat`, `symlinkat`, `fchown`
//! and `fchmod` on the opened file). The check is the open: this module must never look
//! a path up by name and then use the name again, and nothing here may resolve a path
//! from the process's working directory or from `/` once the root is opened, but the
//! operator's own paths ([`Directory::open_path`], [`open_named_without_symlinks`]).
//!
//! Every path is walked one name at a time from the root's handle (`openat` with
//! `O_NOFOLLOW|O_DIRECTORY` in the directory opened before), each directory checked on
//! its descriptor: a directory a user other than root owns leads only into one she owns
//! ([`UnsafeOwnership`], systemd's "unsafe path transition": she may have moved root's
//! directory there), and mesh neither changes in place anything someone else owns
//! there nor makes a directory there someone else's. A symlink on the way is refused
//! on the live host (`ELOOP`). Under `--root` it is followed only when the directory
//! holding it, checked on its opened descriptor, is root's and writable by root only,
//! so nobody but root can have put it there; its target is read as if the tree were
//! `/` (an absolute target means a path inside the root, `..` stops at it, as in a
//! chroot), and at most [`MAX_SYMLINKS`] are followed. A symlink anywhere else is refused
//! ([`UntrustedSymlink`]): a user who owns a directory in the tree could otherwise swap
//! it for a link and send what the plan makes for them to another directory of the
//! root. `openat2` (Linux 5.6) is still required, for the operator's named files, and
//! the layer fails closed without it: see [`Confined::open`].

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Gid, Mode, OFlags, RenameFlags, ResolveFlags, Uid};
use rustix::io::Errno;

/// How paths are resolved beneath the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// `--root`: a symlink is followed, as if the root were `/`, only where nobody but
    /// root can have put it (see [`UntrustedSymlink`]); anywhere else it is refused.
    InRoot,
    /// The live host: no symlink on the way to a path's parent.
    NoSymlinks,
}

/// What is at a path, read without following a final symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    Other,
}

/// The metadata the applier compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub device: u64,
    pub inode: u64,
    /// Hard links to the inode.
    pub links: u64,
}

impl Entry {
    // the field types differ between architectures (`st_nlink` is u64 or u32)
    #[allow(clippy::useless_conversion)]
    pub(crate) fn of(stat: &rustix::fs::Stat) -> Entry {
        let raw_mode = stat.st_mode;
        let kind = match FileType::from_raw_mode(raw_mode) {
            FileType::RegularFile => EntryKind::File,
            FileType::Directory => EntryKind::Directory,
            FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Other,
        };
        Entry {
            kind,
            mode: raw_mode & 0o7777,
            uid: stat.st_uid,
            gid: stat.st_gid,
            size: u64::try_from(stat.st_size).unwrap_or(0),
            device: stat.st_dev,
            inode: u64::from(stat.st_ino),
            links: u64::from(stat.st_nlink),
        }
    }
}

/// The root, opened once; every path of a run is resolved beneath it.
#[derive(Debug)]
pub struct Confined {
    root: OwnedFd,
    root_path: PathBuf,
    resolution: Resolution,
    /// Parents opened for reading while inspecting (one `openat2` per directory, not
    /// per file), `None` for one found absent. Never used to change anything, and
    /// `None` as a whole once the first change may be made: see
    /// [`Confined::parent_for_reading`].
    reading: Mutex<Option<HashMap<String, Option<Arc<Directory>>>>>,
}

/// An opened directory: the parent every change is made in.
#[derive(Debug)]
pub struct Directory {
    fd: OwnedFd,
}

/// Symlinks one resolution under `--root` follows at most (the kernel's own bound,
/// `ELOOP`).
pub const MAX_SYMLINKS: usize = 40;

/// Under `--root`, a symlink on the way to a path lies in a directory that someone
/// other than root owns or may write (its group or others may write, or, with POSIX
/// ACLs, a named user or group: the group bits are the mask), or is itself someone
/// else's (left in a directory a plan has made root's since). Whoever may write there
/// could have put it there, or swapped a directory for it, to send what mesh makes to
/// another directory of the root, so it is not followed.
#[derive(Debug)]
pub struct UntrustedSymlink {
    /// The symlink's node path, as walked (`/home/alice/data`).
    pub link: String,
    /// The node path of the directory holding it (`/home/alice`).
    pub directory: String,
}

impl std::fmt::Display for UntrustedSymlink {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "`{}` is a symlink in `{}` that someone other than root may have made (the directory or the link is someone else's, or others may write the directory)",
            self.link, self.directory
        )
    }
}

impl std::error::Error for UntrustedSymlink {}

/// The [`UntrustedSymlink`] in `error`, if that is what it is.
pub fn untrusted_symlink(error: &io::Error) -> Option<&UntrustedSymlink> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<UntrustedSymlink>())
}

/// Why a path could not be resolved safely (the caller turns it into a diagnostic): a
/// symlink refused on the way (`ELOOP`, also past [`MAX_SYMLINKS`]; `EXDEV`), or one in
/// a directory others may write ([`UntrustedSymlink`]).
pub fn is_symlink_refusal(error: &io::Error) -> bool {
    untrusted_symlink(error).is_some()
        || matches!(
            error.raw_os_error().map(Errno::from_raw_os_error),
            Some(Errno::LOOP | Errno::XDEV)
        )
}

/// `openat2` is missing (old kernel, or a seccomp filter refusing it).
pub fn is_unavailable(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error().map(Errno::from_raw_os_error),
        Some(Errno::NOSYS | Errno::PERM)
    )
}

/// Something someone else owns in a directory a user other than root owns: that user
/// may have moved it there (`mv` of root's `0700` directory into her home) or may swap
/// it at any time, so mesh neither walks into it, nor changes it in place, nor makes a
/// directory there someone else's, which it could not walk into after (systemd's
/// "unsafe path transition"). A file someone else owns may be made there: it is
/// written anew, never changed in place, and nothing is reached through it.
#[derive(Debug)]
pub struct UnsafeOwnership {
    /// The node path walked into (`/home/alice/work`), or `None` for the name an
    /// operation was given (the caller's message names it).
    pub path: Option<String>,
    /// Who owns the directory holding it.
    pub directory_owner: u32,
    /// Who owns it (`found`) or would own it.
    pub owner: u32,
    /// Found there (walked into or about to be changed), or wanted by the plan.
    pub found: bool,
}

impl std::fmt::Display for UnsafeOwnership {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (owner, holder) = (self.owner, self.directory_owner);
        match (&self.path, self.found) {
            (Some(path), _) => write!(
                formatter,
                "on the way, `{path}` is owned by uid {owner} but lies in a directory owned by uid {holder}, who may have put it there or may swap it at any time"
            ),
            (None, true) => write!(
                formatter,
                "it is owned by uid {owner} but lies in a directory owned by uid {holder}, who may have put it there"
            ),
            (None, false) => write!(
                formatter,
                "it would be owned by uid {owner} in a directory owned by uid {holder}, who could swap it for anything of theirs"
            ),
        }
    }
}

impl std::error::Error for UnsafeOwnership {}

/// The [`UnsafeOwnership`] in `error`, if that is what it is.
pub fn unsafe_ownership(error: &io::Error) -> Option<&UnsafeOwnership> {
    error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<UnsafeOwnership>())
}

/// Whether `owner` may own what mesh acts on in a directory `directory_owner` owns:
/// anyone in root's, only the directory's owner in anyone else's. The one statement
/// of E524's rule: the walk, the changes and the plan's check before them
/// (`crate::ownership`) all ask it.
pub(crate) fn may_own(directory_owner: u32, owner: u32) -> bool {
    directory_owner == 0 || directory_owner == owner
}

fn ownership_error(ownership: UnsafeOwnership) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, ownership)
}

/// Refuses `owner` for a directory mesh makes or changes in a directory `holder` owns.
fn check_new_owner(holder: &Entry, owner: u32) -> io::Result<()> {
    if may_own(holder.uid, owner) {
        return Ok(());
    }
    Err(ownership_error(UnsafeOwnership {
        path: None,
        directory_owner: holder.uid,
        owner,
        found: false,
    }))
}

/// Refuses to change in place what is found in a directory `holder` owns when it is
/// someone else's.
fn check_found_owner(holder: &Entry, found: &Entry) -> io::Result<()> {
    if may_own(holder.uid, found.uid) {
        return Ok(());
    }
    Err(ownership_error(UnsafeOwnership {
        path: None,
        directory_owner: holder.uid,
        owner: found.uid,
        found: true,
    }))
}

/// Whether a path could not be resolved, or a change made, without acting where a
/// local user could have steered it: a symlink refused ([`is_symlink_refusal`]) or
/// someone else's entry in a user's directory ([`UnsafeOwnership`]).
pub fn is_unsafe_path(error: &io::Error) -> bool {
    is_symlink_refusal(error) || unsafe_ownership(error).is_some()
}

/// An [`UntrustedSymlink`]: the link `name` in the directory walked as `directory`.
fn untrusted<'a>(directory: impl Iterator<Item = &'a [u8]>, name: &[u8]) -> io::Error {
    let mut holder = String::new();
    for part in directory {
        holder.push('/');
        holder.push_str(&String::from_utf8_lossy(part));
    }
    let link = format!("{holder}/{}", String::from_utf8_lossy(name));
    if holder.is_empty() {
        holder.push('/');
    }
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        UntrustedSymlink {
            link,
            directory: holder,
        },
    )
}

/// The components of a node path (`/etc/motd` -> `etc`, `motd`). A component that is
/// empty, `.` or `..` is refused: plan paths are normalized, and a name must never step.
fn components(node_path: &str) -> io::Result<Vec<&str>> {
    let mut parts = Vec::new();
    for part in node_path.split('/') {
        match part {
            "" => {}
            "." | ".." => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{node_path}` is not a normalized path"),
                ));
            }
            part if part.contains('\0') => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a path holds a NUL byte",
                ));
            }
            part => parts.push(part),
        }
    }
    Ok(parts)
}

fn directory_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

/// A file opened to be read: never through a final symlink, never blocking (a FIFO).
fn reading_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC
}

/// Opens a file the operator names (the identity given with `--identity`) for reading,
/// with no symlink anywhere on its path, the file itself included (`openat2` with
/// `RESOLVE_NO_SYMLINKS`, from the working directory for a relative path; `ELOOP` when
/// there is one), non-blocking, with the metadata of the opened descriptor, as
/// [`Directory::open_with_entry`].
pub fn open_named_without_symlinks(path: &Path) -> io::Result<(File, Entry)> {
    let mut attempts = 0;
    let fd = loop {
        match rustix::fs::openat2(
            rustix::fs::CWD,
            path,
            reading_flags(),
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        ) {
            Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
            result => break result?,
        }
    };
    let entry = Entry::of(&rustix::fs::fstat(&fd)?);
    Ok((File::from(fd), entry))
}

impl Confined {
    /// Opens the root. The root itself is the operator's argument and is trusted; only
    /// what lies beneath it is confined. `openat2` is probed here, so an old kernel is
    /// refused before anything is read.
    pub fn open(root_path: &Path, resolution: Resolution) -> io::Result<Confined> {
        let root = rustix::fs::open(root_path, directory_flags(), Mode::empty())?;
        let confined = Confined {
            root,
            root_path: root_path.to_path_buf(),
            resolution,
            reading: Mutex::new(Some(HashMap::new())),
        };
        // probe: a kernel without openat2 answers ENOSYS here, before any change
        confined.open_without_symlinks(".")?;
        Ok(confined)
    }

    pub fn resolution(&self) -> Resolution {
        self.resolution
    }

    pub fn root_path(&self) -> &Path {
        &self.root_path
    }

    /// Where a node path is, for messages and host tools.
    pub fn display_path(&self, node_path: &str) -> PathBuf {
        self.root_path.join(node_path.trim_start_matches('/'))
    }

    /// `openat2(root, relative)` for a directory, never through a symlink, retried when
    /// the kernel saw a rename race (`EAGAIN`): the probe of [`Confined::open`].
    fn open_without_symlinks(&self, relative: &str) -> io::Result<OwnedFd> {
        let mut attempts = 0;
        loop {
            match rustix::fs::openat2(
                &self.root,
                relative,
                directory_flags(),
                Mode::empty(),
                ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::BENEATH,
            ) {
                Err(Errno::AGAIN) if attempts < 16 => attempts += 1,
                result => return result.map_err(io::Error::from),
            }
        }
    }

    /// The directory at the components `parts` beneath the root: [`Confined::walk`],
    /// following a symlink only under `--root`.
    fn open_components(&self, parts: &[&str]) -> io::Result<OwnedFd> {
        self.walk(parts, self.resolution == Resolution::InRoot)
    }

    /// Walks `parts` from the root one name at a time, each opened with
    /// `O_NOFOLLOW|O_DIRECTORY` in the directory opened before it, and checked on its
    /// descriptor: a directory owned by a user other than root may only lead into one
    /// she owns ([`UnsafeOwnership`]; the root itself is the operator's and trusted).
    /// A symlink is refused (`ELOOP`) unless `follow`, and then followed only when the
    /// directory holding it is root's and writable by root only (checked on that
    /// directory's descriptor, which the walk holds: nobody but root can have put the
    /// link there or change it); its target is walked the same way, an absolute one
    /// from the root, `..` back to the directory walked before (never above the root).
    /// Anywhere else a symlink is an [`UntrustedSymlink`]; past [`MAX_SYMLINKS`] it is
    /// `ELOOP`. The directories are walked down from the root's handle only, so `..`
    /// never leaves the root.
    fn walk(&self, parts: &[&str], follow: bool) -> io::Result<OwnedFd> {
        // the directories walked beneath the root, with their names and owners
        let mut walked: Vec<(Vec<u8>, OwnedFd, u32)> = Vec::new();
        // the names still to walk, the next one last
        let mut pending: Vec<Vec<u8>> = parts
            .iter()
            .rev()
            .map(|part| part.as_bytes().to_vec())
            .collect();
        let mut followed = 0;
        while let Some(name) = pending.pop() {
            match name.as_slice() {
                b"" | b"." => continue,
                b".." => {
                    walked.pop();
                    continue;
                }
                _ => {}
            }
            let current = walked
                .last()
                .map_or(self.root.as_fd(), |(_, fd, _)| fd.as_fd());
            let c_name = CString::new(name.as_slice())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))?;
            let opened = rustix::fs::openat(
                current,
                c_name.as_c_str(),
                directory_flags() | OFlags::NOFOLLOW,
                Mode::empty(),
            );
            match opened {
                Ok(fd) => {
                    let owner = rustix::fs::fstat(&fd)?.st_uid;
                    if let Some((_, _, holder)) = walked.last()
                        && !may_own(*holder, owner)
                    {
                        let mut path = String::new();
                        for part in walked.iter().map(|(name, _, _)| name).chain([&name]) {
                            path.push('/');
                            path.push_str(&String::from_utf8_lossy(part));
                        }
                        return Err(ownership_error(UnsafeOwnership {
                            path: Some(path),
                            directory_owner: *holder,
                            owner,
                            found: true,
                        }));
                    }
                    walked.push((name, fd, owner));
                }
                // a symlink (or something that is not a directory)
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    // the holder first: once it is root's and writable by root only,
                    // nobody but root can change its entries, so the link examined
                    // next is the one whose target is read
                    let holder = Entry::of(&rustix::fs::fstat(current)?);
                    let link =
                        rustix::fs::statat(current, c_name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                    let link = Entry::of(&link);
                    if link.kind != EntryKind::Symlink {
                        return Err(Errno::NOTDIR.into());
                    }
                    if !follow {
                        return Err(Errno::LOOP.into());
                    }
                    // and the link is root's too: a directory that was someone
                    // else's (and made root's since, by a plan) may still hold
                    // their links, which only root could have made otherwise
                    if holder.uid != 0 || holder.mode & 0o022 != 0 || link.uid != 0 {
                        let names = walked.iter().map(|(name, _, _)| name.as_slice());
                        return Err(untrusted(names, &name));
                    }
                    let target =
                        match rustix::fs::readlinkat(current, c_name.as_c_str(), Vec::new()) {
                            Ok(target) => target.into_bytes(),
                            Err(Errno::INVAL) => return Err(Errno::NOTDIR.into()),
                            Err(error) => return Err(error.into()),
                        };
                    if target.is_empty() {
                        return Err(Errno::NOENT.into());
                    }
                    followed += 1;
                    if followed > MAX_SYMLINKS {
                        return Err(Errno::LOOP.into());
                    }
                    if target.starts_with(b"/") {
                        walked.clear();
                    }
                    pending.extend(target.split(|&byte| byte == b'/').rev().map(<[u8]>::to_vec));
                }
                Err(error) => return Err(error.into()),
            }
        }
        match walked.pop() {
            Some((_, fd, _)) => Ok(fd),
            None => Ok(rustix::fs::openat(
                &self.root,
                c".",
                directory_flags(),
                Mode::empty(),
            )?),
        }
    }

    /// The directory at `node_path` (`/` is the root), resolved beneath the root.
    pub fn directory(&self, node_path: &str) -> io::Result<Directory> {
        let parts = components(node_path)?;
        self.open_components(&parts).map(|fd| Directory { fd })
    }

    /// The directory at `node_path` reached without any symlink, whatever the
    /// resolution (for files a host tool will open by name: it would follow them).
    pub fn directory_without_symlinks(&self, node_path: &str) -> io::Result<Directory> {
        let parts = components(node_path)?;
        self.walk(&parts, false).map(|fd| Directory { fd })
    }

    /// The parent directory of `node_path`, opened, and the final name in it. Every
    /// operation on the path itself is then made on this directory with this name.
    pub fn parent(&self, node_path: &str) -> io::Result<(Directory, String)> {
        let parts = components(node_path)?;
        let Some((name, ancestors)) = parts.split_last() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the root has no parent",
            ));
        };
        let directory = self.open_components(ancestors).map(|fd| Directory { fd })?;
        Ok((directory, (*name).to_string()))
    }

    /// The parent of `node_path` for reading only (inspection: `fstatat`, reading a
    /// file's content, `readlinkat`), opened once per directory and kept until
    /// [`Confined::forget_reading`]. A change is never made through it: a kept handle
    /// may name a directory that was moved since, which is harmless to read from and
    /// must not be written to.
    pub fn parent_for_reading(&self, node_path: &str) -> io::Result<(Arc<Directory>, String)> {
        let Some((parent, name)) = split(node_path) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{node_path}` has no parent"),
            ));
        };
        components(node_path)?;
        let cached = match self.reading.lock() {
            Ok(cache) => cache.as_ref().and_then(|cache| cache.get(parent).cloned()),
            Err(_) => None,
        };
        match cached {
            Some(Some(directory)) => return Ok((directory, name.to_string())),
            Some(None) => return Err(io::Error::from(Errno::NOENT)),
            None => {}
        }
        let opened = match self.directory(parent) {
            Ok(directory) => Some(Arc::new(directory)),
            Err(error) if absent(&error) => None,
            Err(error) => return Err(error),
        };
        if let Ok(mut cache) = self.reading.lock()
            && let Some(cache) = cache.as_mut()
        {
            cache.insert(parent.to_string(), opened.clone());
        }
        match opened {
            Some(directory) => Ok((directory, name.to_string())),
            None => Err(io::Error::from(Errno::NOENT)),
        }
    }

    /// Drops the handles kept for reading and keeps no more: called before the first
    /// change, after which a directory found absent may be created.
    pub fn forget_reading(&self) {
        if let Ok(mut cache) = self.reading.lock() {
            *cache = None;
        }
    }

    /// What is at `node_path` (a final symlink is not followed); `None` when it or a
    /// parent is absent. Reads through [`Confined::parent_for_reading`].
    pub fn entry(&self, node_path: &str) -> io::Result<Option<Entry>> {
        let (directory, name) = match self.parent_for_reading(node_path) {
            Ok(found) => found,
            Err(error) if absent(&error) => return Ok(None),
            Err(error) => return Err(error),
        };
        directory.entry(&name)
    }

    /// Creates `node_path` and its missing ancestors as directories (`mode`, owned by
    /// whoever runs the applier: root, so never in a user's directory), each made with
    /// `mkdirat` in its resolved parent.
    pub fn create_directories(&self, node_path: &str, mode: u32) -> io::Result<Directory> {
        let parts = components(node_path)?;
        for end in 1..=parts.len() {
            let prefix = parts.get(..end).unwrap_or_default().join("/");
            let (parent, name) = self.parent(&prefix)?;
            if parent.entry(&name)?.is_none() {
                parent.may_hold(rustix::process::geteuid().as_raw())?;
            }
            parent.create_directory(&name, mode)?;
        }
        self.directory(node_path)
    }

    /// Reads a whole file of at most `limit` bytes, `None` when absent. Refuses
    /// anything but a regular file, and a larger one before reading it (a sparse file
    /// of gigabytes at the record, a generation or `/etc/group` was read whole).
    pub fn read(&self, node_path: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        let (directory, name) = match self.parent(node_path) {
            Ok(found) => found,
            Err(error) if absent(&error) => return Ok(None),
            Err(error) => return Err(error),
        };
        match directory.open_regular(&name) {
            Ok(file) => {
                let too_large = || {
                    io::Error::new(
                        io::ErrorKind::FileTooLarge,
                        format!("it is larger than {limit} bytes, more than mesh reads of it"),
                    )
                };
                if file.metadata()?.len() > limit {
                    return Err(too_large());
                }
                let mut bytes = Vec::new();
                io::Read::read_to_end(&mut io::Read::take(file, limit + 1), &mut bytes)?;
                if bytes.len() as u64 > limit {
                    return Err(too_large());
                }
                Ok(Some(bytes))
            }
            Err(error) if absent(&error) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Writes a small file atomically and durably right away (temp, fsync, rename,
    /// fsync of the directory), root-owned. For the record and unit files.
    pub fn write_now(&self, node_path: &str, content: &[u8], mode: u32) -> io::Result<()> {
        let (directory, name) = self.parent(node_path)?;
        let temp = temp_name(&name);
        let mut file = directory.create_fresh(&temp, mode, 0, 0)?;
        io::Write::write_all(&mut file, content)?;
        file.sync_all()?;
        directory.rename(&temp, &name)?;
        directory.sync()
    }
}

/// A node path's parent node path and final name (`/etc/motd` -> `/etc`, `motd`).
pub fn split(node_path: &str) -> Option<(&str, &str)> {
    let trimmed = node_path.trim_end_matches('/');
    let (parent, name) = trimmed.rsplit_once('/')?;
    if name.is_empty() {
        return None;
    }
    Some((if parent.is_empty() { "/" } else { parent }, name))
}

/// Is this "not there" (the path or one of its parents)?
pub fn absent(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error().map(Errno::from_raw_os_error),
        Some(Errno::NOENT | Errno::NOTDIR)
    )
}

/// The temp name beside `name` (`.motd.mesh-new`). Deterministic, so a temp file left by
/// a killed run is found and replaced by the next one, where that is provably mesh's
/// leftover: see [`Directory::remove_scratch_file`].
pub fn temp_name(name: &str) -> String {
    format!(".{name}.mesh-new")
}

/// A scratch name of mesh's (`.NAME.mesh-new`, `.NAME.mesh-unpack`, `.NAME.mesh-old`)
/// is taken in a directory someone other than root may write to (or by a directory
/// where a file temp goes): it may be someone's data rather than a leftover of an
/// interrupted run, so it is neither removed nor replaced.
#[derive(Debug)]
pub struct ForeignScratch {
    pub name: String,
}

impl std::fmt::Display for ForeignScratch {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "`{}`, a name mesh uses for scratch, is taken, and it cannot tell it is its own leftover",
            self.name
        )
    }
}

impl std::error::Error for ForeignScratch {}

/// Was this error a [`ForeignScratch`]?
pub fn is_foreign_scratch(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<ForeignScratch>())
}

/// The owner, group and (for a file) mode mesh gives a scratch entry: the shape's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchOwner {
    pub uid: u32,
    pub gid: u32,
    pub mode: Option<u32>,
}

pub fn foreign_scratch(name: &(impl AsRef<OsStr> + ?Sized)) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        ForeignScratch {
            name: name.as_ref().to_string_lossy().into_owned(),
        },
    )
}

/// One name in a directory as the system takes it: its bytes, which need not be
/// UTF-8 (a name someone else put in a directory mesh empties may be any bytes).
fn c_name(name: &(impl AsRef<OsStr> + ?Sized)) -> io::Result<CString> {
    let bytes = name.as_ref().as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a single name", name.as_ref().to_string_lossy()),
        ));
    }
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
}

impl Directory {
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens a directory the operator named (a scratch base such as `TMPDIR`), which is
    /// trusted like the root; what lies beneath it is opened through the handle.
    pub fn open_path(path: &Path) -> io::Result<Directory> {
        let fd = rustix::fs::open(path, directory_flags(), Mode::empty())?;
        Ok(Directory { fd })
    }

    /// What `name` is here, without following it; `None` when absent.
    pub fn entry(&self, name: &(impl AsRef<OsStr> + ?Sized)) -> io::Result<Option<Entry>> {
        match rustix::fs::statat(
            &self.fd,
            c_name(name)?.as_c_str(),
            AtFlags::SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) => Ok(Some(Entry::of(&stat))),
            Err(Errno::NOENT) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// When `name` was last modified, in seconds since the epoch (not following it).
    pub fn modified_seconds(&self, name: &str) -> io::Result<i64> {
        let stat = rustix::fs::statat(
            &self.fd,
            c_name(name)?.as_c_str(),
            AtFlags::SYMLINK_NOFOLLOW,
        )?;
        Ok(stat.st_mtime)
    }

    /// The metadata of this directory itself.
    pub fn own_entry(&self) -> io::Result<Entry> {
        Ok(Entry::of(&rustix::fs::fstat(&self.fd)?))
    }

    /// The subdirectory `name`, never through a symlink.
    pub fn open_directory(&self, name: &(impl AsRef<OsStr> + ?Sized)) -> io::Result<Directory> {
        let fd = rustix::fs::openat(
            &self.fd,
            c_name(name)?.as_c_str(),
            directory_flags() | OFlags::NOFOLLOW,
            Mode::empty(),
        )?;
        Ok(Directory { fd })
    }

    /// Opens the regular file `name` for reading: never a symlink, never a FIFO or a
    /// device (opened non-blocking, then checked on the descriptor).
    pub fn open_regular(&self, name: &str) -> io::Result<File> {
        let (file, entry) = self.open_with_entry(name)?;
        if entry.kind != EntryKind::File {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a regular file"),
            ));
        }
        Ok(file)
    }

    /// Opens whatever `name` is for reading, never through a symlink (`ELOOP` when it
    /// is one), non-blocking, with the metadata of the opened descriptor: the caller
    /// checks the file it will read, and says itself why anything else is refused.
    pub fn open_with_entry(&self, name: &str) -> io::Result<(File, Entry)> {
        let fd = rustix::fs::openat(
            &self.fd,
            c_name(name)?.as_c_str(),
            reading_flags(),
            Mode::empty(),
        )?;
        let entry = Entry::of(&rustix::fs::fstat(&fd)?);
        Ok((File::from(fd), entry))
    }

    /// [`Directory::open_regular`], with the metadata of the opened descriptor: what is
    /// checked there is the file that will be read, not a name looked up again.
    pub fn open_regular_with_entry(&self, name: &str) -> io::Result<(File, Entry)> {
        let file = self.open_regular(name)?;
        let entry = Entry::of(&rustix::fs::fstat(&file)?);
        Ok((file, entry))
    }

    /// `mkdirat(name, mode)`; an existing entry of that name is left as it is (the
    /// next open of it decides whether it is usable).
    pub fn create_directory(&self, name: &str, mode: u32) -> io::Result<()> {
        match rustix::fs::mkdirat(
            &self.fd,
            c_name(name)?.as_c_str(),
            Mode::from_raw_mode(mode),
        ) {
            Ok(()) | Err(Errno::EXIST) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Opens the regular file `name` for writing, creating it (`mode`) if absent; never
    /// through a symlink. For the lock.
    pub fn open_or_create(&self, name: &str, mode: u32) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            c_name(name)?.as_c_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )?;
        if Entry::of(&rustix::fs::fstat(&fd)?).kind != EntryKind::File {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a regular file"),
            ));
        }
        Ok(File::from(fd))
    }

    /// `mkdirat(name, mode)` that fails when anything of that name exists.
    pub fn create_new_directory(&self, name: &str, mode: u32) -> io::Result<()> {
        rustix::fs::mkdirat(
            &self.fd,
            c_name(name)?.as_c_str(),
            Mode::from_raw_mode(mode),
        )
        .map_err(io::Error::from)
    }

    /// A new file `name` (an old one of that name, or a symlink, is removed first),
    /// created with `O_CREAT|O_EXCL|O_NOFOLLOW`, whose owner and mode are set on the
    /// descriptor before any byte is written.
    pub fn create_fresh(&self, name: &str, mode: u32, uid: u32, gid: u32) -> io::Result<File> {
        let c_name = c_name(name)?;
        let create = || {
            rustix::fs::openat(
                &self.fd,
                c_name.as_c_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            )
        };
        // the name is usually free; a leftover (a killed run's temp file) is removed once,
        // when it is provably mesh's
        let fd = match create() {
            Err(Errno::EXIST) => {
                let shape = ScratchOwner {
                    uid,
                    gid,
                    mode: Some(mode),
                };
                self.remove_scratch_file(name, Some(shape))?;
                create()?
            }
            result => result?,
        };
        set_owner_and_mode(&fd, mode, uid, gid)?;
        Ok(File::from(fd))
    }

    /// Makes the directory `name` here when it is absent (`mkdirat`, `0700`), opens it
    /// without following it and sets owner and mode on the descriptor. Not when this
    /// directory is a user's and what is there, or what it would become, is someone
    /// else's ([`UnsafeOwnership`]). A directory found there is judged by its owner,
    /// unless it is the one just made (the applier's own and empty when opened: she
    /// may have renamed something to the name in between, which is then judged as
    /// found), or the one `judged` names (device, inode) as judged before this run
    /// changed anything: a tree given from one user to another has its parent changed
    /// first, and its subdirectories are still the old owner's.
    pub fn make_directory(
        &self,
        name: &str,
        (mode, uid, gid): (u32, u32, u32),
        judged: Option<(u64, u64)>,
    ) -> io::Result<()> {
        let holder = self.own_entry()?;
        check_new_owner(&holder, uid)?;
        let made = match rustix::fs::mkdirat(
            &self.fd,
            c_name(name)?.as_c_str(),
            Mode::from_raw_mode(0o700),
        ) {
            Ok(()) => true,
            Err(Errno::EXIST) => false,
            Err(error) => return Err(error.into()),
        };
        let opened = self.open_directory(name)?;
        let found = opened.own_entry()?;
        let own = found.uid == rustix::process::geteuid().as_raw();
        let fresh = made && own && opened.names()?.is_empty();
        if !fresh && judged != Some((found.device, found.inode)) {
            check_found_owner(&holder, &found)?;
        }
        set_owner_and_mode(&opened.fd, mode, uid, gid)
    }

    /// Refuses ([`UnsafeOwnership`]) `found`, found here, when this directory is a
    /// user's and `found` someone else's: she may have moved it here.
    pub fn may_have_found(&self, found: &Entry) -> io::Result<()> {
        check_found_owner(&self.own_entry()?, found)
    }

    /// Refuses ([`UnsafeOwnership`]) to make a directory here that `uid` owns when this
    /// directory is a user's and `uid` someone else: mesh could not walk into it after
    /// (for a tree made beneath a descriptor and renamed here whole, as an archive is).
    pub fn may_hold(&self, uid: u32) -> io::Result<()> {
        check_new_owner(&self.own_entry()?, uid)
    }

    /// Sets owner and mode of this directory itself.
    pub fn set_own_owner_and_mode(&self, mode: u32, uid: u32, gid: u32) -> io::Result<()> {
        set_owner_and_mode(&self.fd, mode, uid, gid)
    }

    /// Sets owner and mode of the regular file `name` in place, on its descriptor, when
    /// it is the inode's only name. Returns `false` (and changes nothing) when the inode
    /// has other hard links: one of them may be a file elsewhere that a local user linked
    /// here, which must not be chowned or chmodded; the caller rewrites it instead. So
    /// too when this directory is a user's and the file someone else's
    /// ([`UnsafeOwnership`]: she may have moved it here).
    pub fn set_owner_and_mode_of_sole_file(
        &self,
        name: &str,
        mode: u32,
        uid: u32,
        gid: u32,
    ) -> io::Result<bool> {
        let holder = self.own_entry()?;
        let file = self.open_regular(name)?;
        let found = Entry::of(&rustix::fs::fstat(&file)?);
        if found.links != 1 || check_found_owner(&holder, &found).is_err() {
            return Ok(false);
        }
        set_owner_and_mode(&file, mode, uid, gid)?;
        Ok(true)
    }

    /// `renameat(from, to)` within this directory.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        rustix::fs::renameat(
            &self.fd,
            c_name(from)?.as_c_str(),
            &self.fd,
            c_name(to)?.as_c_str(),
        )
        .map_err(io::Error::from)
    }

    /// Swaps two entries of this directory atomically (`RENAME_EXCHANGE`).
    pub fn exchange(&self, first: &str, second: &str) -> Result<(), Errno> {
        rustix::fs::renameat_with(
            &self.fd,
            c_name(first).map_err(|_| Errno::INVAL)?.as_c_str(),
            &self.fd,
            c_name(second).map_err(|_| Errno::INVAL)?.as_c_str(),
            RenameFlags::EXCHANGE,
        )
    }

    /// Removes a file or symlink `name`; absent is fine; a directory is refused.
    pub fn remove_file(&self, name: &(impl AsRef<OsStr> + ?Sized)) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, c_name(name)?.as_c_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Does anyone but root write here? The owner is not root, or the group or others
    /// may write (with POSIX ACLs, the group bits are the mask: any named user or group
    /// with write access shows there).
    pub fn others_may_write(&self) -> io::Result<bool> {
        let own = self.own_entry()?;
        Ok(own.uid != 0 || own.mode & 0o022 != 0)
    }

    /// Refuses ([`ForeignScratch`]) when the scratch name `name` is taken by something
    /// that cannot be mesh's leftover. Where only root writes in this directory, the
    /// name is reserved and nobody else can have put anything there: whatever is there
    /// is mesh's. Where someone else may write, a directory there never is taken as
    /// mesh's: its owner says nothing, since a user who writes here can rename any
    /// directory of this one into the name (root's `0700` `vault` in her home, which she
    /// cannot empty herself), and removing it would remove everything in it. A file or
    /// symlink there is taken as mesh's when it is owned by root or has exactly the
    /// owner and group mesh gives it (`shape`) and, for a file, no permission bit
    /// beyond the shape's mode: the states a killed run can leave it in; removing it
    /// removes one name, which whoever could have moved it there could have removed.
    pub fn check_scratch(&self, name: &str, shape: Option<ScratchOwner>) -> io::Result<()> {
        let Some(entry) = self.entry(name)? else {
            return Ok(());
        };
        if !self.others_may_write()? {
            return Ok(());
        }
        // mesh leaves only files and symlinks at a file's scratch name: a directory,
        // a FIFO or a socket there is someone's
        if !matches!(entry.kind, EntryKind::File | EntryKind::Symlink) {
            return Err(foreign_scratch(name));
        }
        if entry.uid == 0 {
            return Ok(());
        }
        if let Some(shape) = shape
            && entry.uid == shape.uid
            && entry.gid == shape.gid
            && shape.mode.is_none_or(|mode| entry.mode & !mode == 0)
        {
            return Ok(());
        }
        Err(foreign_scratch(name))
    }

    /// Removes a leftover file temp `name` (absent is fine) when it is provably
    /// mesh's ([`Directory::check_scratch`]); a directory there never is. The removal
    /// is `unlinkat` without `AT_REMOVEDIR`, which fails on a directory swapped in
    /// after the check.
    pub fn remove_scratch_file(&self, name: &str, shape: Option<ScratchOwner>) -> io::Result<()> {
        match self.entry(name)? {
            None => Ok(()),
            Some(entry) if entry.kind == EntryKind::Directory => Err(foreign_scratch(name)),
            Some(_) => {
                self.check_scratch(name, shape)?;
                self.unlink_not_directory(name)
            }
        }
    }

    /// `unlinkat(name)` of a file or symlink; absent is fine; a directory (one swapped
    /// in since it was looked at) is [`ForeignScratch`] and left.
    fn unlink_not_directory(&self, name: &(impl AsRef<OsStr> + ?Sized)) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, c_name(name)?.as_c_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(Errno::ISDIR | Errno::PERM) => Err(foreign_scratch(name)),
            Err(error) => Err(error.into()),
        }
    }

    /// Removes a leftover scratch tree `name` (absent is fine) when it is provably
    /// mesh's ([`Directory::check_scratch`]). Where only root writes in this directory
    /// nobody else can put anything at the name, and the tree is removed through
    /// descriptors. Where someone else may write, a directory there is never mesh's,
    /// and a file or symlink is removed with [`Directory::remove_scratch_file`]: the
    /// check and the removal are not two lookups of a name someone may swap between.
    pub fn remove_scratch_tree(&self, name: &str, shape: Option<ScratchOwner>) -> io::Result<()> {
        if self.others_may_write()? {
            self.remove_scratch_file(name, shape)
        } else {
            self.remove_tree(name)
        }
    }

    /// Removes everything beneath this directory (mesh's own scratch tree, held by
    /// this descriptor) through descriptors, never by a path looked up twice. Where
    /// only root may write in a directory (root-owned, no group or other write bit),
    /// nobody else can have put anything in it, and all of it is removed. Where
    /// someone else may write, they may have moved their own directories in (a
    /// directory of theirs holding root's `0700` one, which they cannot empty), so a
    /// subdirectory there is removed only when it has `owner` (the owner and group
    /// mesh gives every directory of an archive), checked on its opened
    /// descriptor (`O_NOFOLLOW|O_DIRECTORY`); anything else stops the removal with
    /// [`ForeignScratch`] and is left. A subdirectory is removed, once emptied, by
    /// `unlinkat(AT_REMOVEDIR)`, which fails on a non-empty directory swapped in.
    pub fn empty_tree(&self, owner: (u32, u32)) -> io::Result<()> {
        let own = self.own_entry()?;
        let closed = own.uid == 0 && own.mode & 0o022 == 0;
        for child in self.names()? {
            let Some(entry) = self.entry(&child)? else {
                continue;
            };
            if entry.kind != EntryKind::Directory {
                self.unlink_not_directory(&child)?;
                continue;
            }
            let directory = match self.open_directory(&child) {
                Ok(directory) => directory,
                Err(error) if absent(&error) => continue,
                Err(error)
                    if error.raw_os_error() == Some(Errno::LOOP.raw_os_error())
                        || error.raw_os_error() == Some(Errno::NOTDIR.raw_os_error()) =>
                {
                    // swapped for something else since it was looked at
                    self.unlink_not_directory(&child)?;
                    continue;
                }
                Err(error) => return Err(error),
            };
            let found = directory.own_entry()?;
            if !closed && (found.uid, found.gid) != owner {
                return Err(foreign_scratch(&child));
            }
            directory.empty_tree(owner)?;
            self.remove_emptied_directory(&child)?;
        }
        Ok(())
    }

    /// `unlinkat(name, AT_REMOVEDIR)` of a directory just emptied through its
    /// descriptor; absent is fine; a non-empty one (swapped in since) is
    /// [`ForeignScratch`] and left.
    pub fn remove_emptied_directory(&self, name: &(impl AsRef<OsStr> + ?Sized)) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, c_name(name)?.as_c_str(), AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(Errno::NOTEMPTY | Errno::EXIST | Errno::NOTDIR) => Err(foreign_scratch(name)),
            Err(error) => Err(error.into()),
        }
    }

    /// Removes the directory `name` if it is empty; absent or not empty is fine.
    pub fn remove_empty_directory(&self, name: &str) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.fd, c_name(name)?.as_c_str(), AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT | Errno::NOTEMPTY | Errno::EXIST) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Removes `name` and, if it is a directory, everything beneath it, walking by
    /// descriptors (never through a symlink). Absent is fine.
    pub fn remove_tree(&self, name: &(impl AsRef<OsStr> + ?Sized)) -> io::Result<()> {
        let Some(entry) = self.entry(name)? else {
            return Ok(());
        };
        if entry.kind != EntryKind::Directory {
            return self.remove_file(name);
        }
        let child = self.open_directory(name)?;
        let names = child.names()?;
        for child_name in names {
            child.remove_tree(&child_name)?;
        }
        match rustix::fs::unlinkat(&self.fd, c_name(name)?.as_c_str(), AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// The names in this directory (without `.` and `..`), as the system's bytes:
    /// a name that is not UTF-8 is given as it is, so that it can be removed (made
    /// into text, it named nothing, and a tree holding one could never be emptied).
    pub fn names(&self) -> io::Result<Vec<std::ffi::OsString>> {
        let mut directory = rustix::fs::Dir::read_from(&self.fd)?;
        let mut names = Vec::new();
        while let Some(entry) = directory.read() {
            let entry = entry?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            names.push(OsStr::from_bytes(bytes).to_os_string());
        }
        Ok(names)
    }

    /// `symlinkat(target, name)`.
    pub fn symlink(&self, target: &str, name: &str) -> io::Result<()> {
        rustix::fs::symlinkat(target, &self.fd, c_name(name)?.as_c_str()).map_err(io::Error::from)
    }

    /// `readlinkat(name)`.
    pub fn read_link(&self, name: &str) -> io::Result<Vec<u8>> {
        Ok(rustix::fs::readlinkat(&self.fd, c_name(name)?.as_c_str(), Vec::new())?.into_bytes())
    }

    /// Sets the owner of the symlink `name` itself.
    pub fn set_link_owner(&self, name: &str, uid: u32, gid: u32) -> io::Result<()> {
        rustix::fs::chownat(
            &self.fd,
            c_name(name)?.as_c_str(),
            Some(Uid::from_raw(uid)),
            Some(Gid::from_raw(gid)),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .map_err(io::Error::from)
    }

    /// A hard link `name` here to the file `target` of `source` (never following it).
    pub fn hard_link(&self, source: &Directory, target: &str, name: &str) -> io::Result<()> {
        rustix::fs::linkat(
            &source.fd,
            c_name(target)?.as_c_str(),
            &self.fd,
            c_name(name)?.as_c_str(),
            AtFlags::empty(),
        )
        .map_err(io::Error::from)
    }

    /// Resolves a relative path of names beneath this directory, never through a
    /// symlink and never above it (`RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH`). For trees the
    /// applier builds itself (an archive's staging directory).
    pub fn beneath(&self, relative: &Path) -> io::Result<Directory> {
        let text = relative.as_os_str().as_bytes();
        let relative: &[u8] = if text.is_empty() { b"." } else { text };
        let fd = rustix::fs::openat2(
            &self.fd,
            relative,
            directory_flags(),
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS | ResolveFlags::BENEATH,
        )?;
        Ok(Directory { fd })
    }

    /// fsyncs this directory.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd).map_err(io::Error::from)
    }

    /// Flushes the whole filesystem this directory is on.
    pub fn sync_filesystem(&self) -> io::Result<()> {
        rustix::fs::syncfs(&self.fd).map_err(io::Error::from)
    }

    /// A second handle on the same directory.
    pub fn duplicate(&self) -> io::Result<Directory> {
        Ok(Directory {
            fd: self.fd.try_clone()?,
        })
    }
}

/// One change of an inode's owner or mode, in the order [`ownership_steps`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Mode(u32),
    Owner(u32, u32),
}

/// The changes that take an inode from `old` (mode, uid, gid) to `new`, in an order
/// whose every state in between grants no permission that neither `old` nor `new`
/// grants: the mode is first narrowed to the permission bits both share (no setuid,
/// setgid or sticky), then the owner changed, then the final mode set. A chown first
/// would let the new owner or group use the old mode's bits (a secret going from
/// `0640 root:staff` to `0600 root:app` was `0640 root:app` for a moment).
fn ownership_steps(old: (u32, u32, u32), new: (u32, u32, u32)) -> Vec<Step> {
    let (old_mode, old_uid, old_gid) = old;
    let (mode, uid, gid) = new;
    let mut steps = Vec::new();
    if (old_uid, old_gid) != (uid, gid) {
        let narrowed = old_mode & mode & 0o777;
        if narrowed != old_mode & 0o7777 {
            steps.push(Step::Mode(narrowed));
        }
        steps.push(Step::Owner(uid, gid));
    }
    // always set last: a chown may have cleared setuid and setgid
    steps.push(Step::Mode(mode));
    steps
}

fn set_owner_and_mode(fd: impl AsFd, mode: u32, uid: u32, gid: u32) -> io::Result<()> {
    let current = Entry::of(&rustix::fs::fstat(&fd)?);
    for step in ownership_steps((current.mode, current.uid, current.gid), (mode, uid, gid)) {
        match step {
            Step::Mode(mode) => rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))?,
            Step::Owner(uid, gid) => {
                rustix::fs::fchown(&fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let parent = tempfile::tempdir().unwrap();
        let root = parent.path().join("root");
        let outside = parent.path().join("outside");
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        (parent, root, outside)
    }

    /// A file larger than the reader's limit is refused from its size, before it is
    /// read (a sparse record, generation or `/etc/group` of gigabytes was read whole);
    /// one within it is read.
    #[test]
    fn a_file_over_the_limit_is_refused_before_it_is_read() {
        let (_parent, root, _outside) = sealed();
        std::fs::write(root.join("etc/group"), "root:x:0:\n").unwrap();
        let confined = Confined::open(&root, Resolution::InRoot).unwrap();
        assert_eq!(
            confined.read("/etc/group", 10).unwrap().as_deref(),
            Some(&b"root:x:0:\n"[..])
        );
        let error = confined.read("/etc/group", 9).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::FileTooLarge, "{error}");
        let sparse = std::fs::File::create(root.join("etc/passwd")).unwrap();
        sparse.set_len(20 << 30).unwrap();
        let error = confined.read("/etc/passwd", 64 << 20).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::FileTooLarge, "{error}");
    }

    #[test]
    fn in_root_reads_an_absolute_link_as_a_path_inside_the_root() {
        let (_parent, root, outside) = sealed();
        std::os::unix::fs::symlink(&outside, root.join("etc/away")).unwrap();
        std::os::unix::fs::symlink("../../../..", root.join("etc/up")).unwrap();
        let confined = Confined::open(&root, Resolution::InRoot).unwrap();
        // the absolute target names ROOT/<outside>, which does not exist
        let error = confined.write_now("/etc/away/x", b"x", 0o644).unwrap_err();
        assert!(absent(&error), "{error}");
        // `..` stops at the root
        confined.write_now("/etc/up/y", b"y", 0o644).unwrap();
        assert!(root.join("y").is_file());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }

    /// alice (uid 1000) owns `ROOT/home/alice`, which holds her `work` and root's
    /// `0700` `vault` with root's `notes`: what she can arrange with `mv` alone.
    fn users_home() -> (tempfile::TempDir, PathBuf) {
        let (parent, root, _outside) = sealed();
        let home = root.join("home/alice");
        std::fs::create_dir_all(home.join("work")).unwrap();
        std::fs::create_dir_all(home.join("vault")).unwrap();
        std::fs::write(home.join("vault/notes"), "root's\n").unwrap();
        for path in [&home, &home.join("work")] {
            std::os::unix::fs::chown(path, Some(1000), Some(1000)).unwrap();
        }
        std::os::unix::fs::chown(home.join("vault"), Some(0), Some(0)).unwrap();
        std::fs::set_permissions(
            home.join("vault"),
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        (parent, root)
    }

    fn ownership(error: &io::Error) -> &UnsafeOwnership {
        unsafe_ownership(error).unwrap_or_else(|| panic!("not an ownership refusal: {error}"))
    }

    #[test]
    fn a_walk_from_a_users_directory_goes_only_into_one_she_owns() {
        let (_parent, root) = users_home();
        for resolution in [Resolution::InRoot, Resolution::NoSymlinks] {
            let confined = Confined::open(&root, resolution).unwrap();
            // root's directories lead anywhere, hers lead into hers
            confined.directory("/home/alice/work").unwrap();
            let (work, _) = confined.parent("/home/alice/work/notes").unwrap();
            assert_eq!(work.own_entry().unwrap().uid, 1000);
            for path in ["/home/alice/vault", "/home/alice/vault/x"] {
                let error = confined.directory(path).unwrap_err();
                let refused = ownership(&error);
                assert_eq!(refused.path.as_deref(), Some("/home/alice/vault"), "{path}");
                assert_eq!((refused.directory_owner, refused.owner), (1000, 0));
                assert!(is_unsafe_path(&error) && !is_symlink_refusal(&error));
            }
            let error = confined.parent("/home/alice/vault/notes").unwrap_err();
            assert!(unsafe_ownership(&error).is_some(), "{error}");
            let error = confined
                .read("/home/alice/vault/notes", 1 << 20)
                .unwrap_err();
            assert!(unsafe_ownership(&error).is_some(), "{error}");
            let error = confined
                .directory_without_symlinks("/home/alice/vault")
                .unwrap_err();
            assert!(unsafe_ownership(&error).is_some(), "{error}");
        }
    }

    #[test]
    fn nothing_in_a_users_directory_is_changed_or_made_someone_elses() {
        let (_parent, root) = users_home();
        let confined = Confined::open(&root, Resolution::NoSymlinks).unwrap();
        let home = confined.directory("/home/alice").unwrap();
        // root's directory, moved into her home: not made hers, not changed
        let error = home
            .make_directory("vault", (0o755, 1000, 1000), None)
            .unwrap_err();
        let refused = ownership(&error);
        assert!(refused.found && refused.path.is_none(), "{error}");
        // nor when what inspection judged (her `work`) is not what is there now
        let work = identity(&root.join("home/alice/work"));
        let error = home
            .make_directory("vault", (0o755, 1000, 1000), Some(work))
            .unwrap_err();
        assert!(ownership(&error).found, "{error}");
        let vault = std::fs::metadata(root.join("home/alice/vault")).unwrap();
        assert_eq!(
            (
                std::os::unix::fs::MetadataExt::uid(&vault),
                std::os::unix::fs::MetadataExt::mode(&vault) & 0o7777
            ),
            (0, 0o700)
        );
        // hers stays changeable, for her, and is not made root's
        home.make_directory("work", (0o700, 1000, 1000), None)
            .unwrap();
        home.make_directory("new", (0o750, 1000, 1000), None)
            .unwrap();
        let new = root.join("home/alice/new");
        assert_eq!(owner(&new), (1000, 1000));
        let error = home
            .make_directory("work", (0o700, 0, 0), None)
            .unwrap_err();
        assert!(!ownership(&error).found, "{error}");
        // no new directory of root's there (nor an archive's tree), which the walk
        // would refuse after; a file of root's may be made, and is written anew
        let error = home.make_directory("x", (0o755, 0, 0), None).unwrap_err();
        assert_eq!(ownership(&error).owner, 0);
        assert!(!root.join("home/alice/x").exists());
        assert!(home.may_hold(0).is_err() && home.may_hold(1000).is_ok());
        home.create_fresh("y", 0o644, 0, 0).unwrap();
        // in root's directories anyone's may be made
        let etc = confined.directory("/etc").unwrap();
        etc.create_fresh("alices", 0o644, 1000, 1000).unwrap();
        // a file of someone else's found there is not changed in place (it is
        // written anew by the caller)
        std::fs::write(root.join("home/alice/roots"), "root's\n").unwrap();
        assert!(
            !home
                .set_owner_and_mode_of_sole_file("roots", 0o644, 1000, 1000)
                .unwrap()
        );
        let roots = std::fs::metadata(root.join("home/alice/roots")).unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&roots), 0);
    }

    /// Device and inode of what a path is.
    fn identity(path: &Path) -> (u64, u64) {
        let metadata = std::fs::metadata(path).unwrap();
        (
            std::os::unix::fs::MetadataExt::dev(&metadata),
            std::os::unix::fs::MetadataExt::ino(&metadata),
        )
    }

    fn identity_of(directory: &Directory) -> (u64, u64) {
        let stat = rustix::fs::fstat(&directory.fd).unwrap();
        (stat.st_dev, stat.st_ino)
    }

    #[test]
    fn in_root_follows_a_symlink_only_root_can_have_placed() {
        let (_parent, root, outside) = sealed();
        std::fs::create_dir_all(root.join("usr/lib/systemd")).unwrap();
        // a distro tree's links, in root-owned directories writable by root only
        std::os::unix::fs::symlink("usr/lib", root.join("lib")).unwrap();
        std::os::unix::fs::symlink("/usr/lib", root.join("etc/absolute")).unwrap();
        std::os::unix::fs::symlink("../../../../usr/./lib/", root.join("etc/climbing")).unwrap();
        std::os::unix::fs::symlink("/lib/systemd", root.join("etc/chained")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("etc/away")).unwrap();
        let confined = Confined::open(&root, Resolution::InRoot).unwrap();
        let library = identity(&root.join("usr/lib"));
        // `..` after a link steps back from where the link led (`/usr/lib/systemd`)
        std::os::unix::fs::symlink("/lib/systemd/..", root.join("etc/back")).unwrap();
        for path in ["/lib", "/etc/absolute", "/etc/climbing", "/etc/back"] {
            assert_eq!(
                identity_of(&confined.directory(path).unwrap()),
                library,
                "{path}"
            );
        }
        assert_eq!(
            identity_of(&confined.directory("/etc/chained").unwrap()),
            identity(&root.join("usr/lib/systemd"))
        );
        confined.write_now("/lib/x", b"x", 0o644).unwrap();
        confined.write_now("/etc/chained/y", b"y", 0o644).unwrap();
        assert_eq!(std::fs::read(root.join("usr/lib/x")).unwrap(), b"x");
        assert_eq!(std::fs::read(root.join("usr/lib/systemd/y")).unwrap(), b"y");
        // an absolute target still names a path inside the root
        let error = confined.write_now("/etc/away/z", b"z", 0o644).unwrap_err();
        assert!(absent(&error), "{error}");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }

    #[test]
    fn in_root_refuses_a_symlink_in_a_directory_others_own_or_may_write() {
        let (_parent, root, _outside) = sealed();
        std::fs::create_dir_all(root.join("usr/share")).unwrap();
        std::fs::create_dir_all(root.join("home/alice")).unwrap();
        std::os::unix::fs::chown(root.join("home/alice"), Some(1000), Some(1000)).unwrap();
        // alice swapped her directory for links to another directory of the root
        std::os::unix::fs::symlink("/usr", root.join("home/alice/data")).unwrap();
        std::os::unix::fs::symlink("../../usr", root.join("home/alice/relative")).unwrap();
        // root's directories others may write: group-writable, and sticky like `/tmp`
        for (directory, mode) in [("srv/shared", 0o775), ("tmp", 0o1777)] {
            std::fs::create_dir_all(root.join(directory)).unwrap();
            std::fs::set_permissions(
                root.join(directory),
                std::os::unix::fs::PermissionsExt::from_mode(mode),
            )
            .unwrap();
            std::os::unix::fs::symlink("/usr", root.join(directory).join("data")).unwrap();
        }
        // a link root placed, whose target runs through alice's
        std::os::unix::fs::symlink("/home/alice/data", root.join("etc/through")).unwrap();
        let share = identity(&root.join("usr/share"));
        let confined = Confined::open(&root, Resolution::InRoot).unwrap();
        for (path, link, holder) in [
            ("/home/alice/data/share", "/home/alice/data", "/home/alice"),
            (
                "/home/alice/relative/share",
                "/home/alice/relative",
                "/home/alice",
            ),
            ("/srv/shared/data/share", "/srv/shared/data", "/srv/shared"),
            ("/tmp/data/share", "/tmp/data", "/tmp"),
            ("/etc/through/share", "/home/alice/data", "/home/alice"),
        ] {
            let error = confined.create_directories(path, 0o755).unwrap_err();
            assert!(is_symlink_refusal(&error), "{path}: {error}");
            let refused = untrusted_symlink(&error).unwrap();
            assert_eq!(
                (refused.link.as_str(), refused.directory.as_str()),
                (link, holder)
            );
            let error = confined
                .write_now(&format!("{path}/x"), b"x", 0o644)
                .unwrap_err();
            assert!(is_symlink_refusal(&error), "{path}: {error}");
            let error = confined.parent(&format!("{path}/x")).unwrap_err();
            assert!(is_symlink_refusal(&error), "{path}: {error}");
        }
        // nothing reached the directory the links lead to
        assert_eq!(identity(&root.join("usr/share")), share);
        assert_eq!(
            std::fs::read_dir(root.join("usr/share")).unwrap().count(),
            0
        );
        assert_eq!(owner(&root.join("usr/share")), (0, 0));
        // a final symlink there is not followed either way, and plain paths still work
        let (directory, name) = confined.parent("/home/alice/data").unwrap();
        assert_eq!(
            directory.entry(&name).unwrap().map(|entry| entry.kind),
            Some(EntryKind::Symlink)
        );
        confined.create_directories("/srv/real", 0o755).unwrap();
        assert!(root.join("srv/real").is_dir());
        // and in alice's home, none of root's (E524): she could swap it at once
        let error = confined
            .create_directories("/home/alice/real", 0o755)
            .unwrap_err();
        assert!(unsafe_ownership(&error).is_some(), "{error}");
        assert!(!root.join("home/alice/real").exists());
    }

    fn owner(path: &Path) -> (u32, u32) {
        let metadata = std::fs::symlink_metadata(path).unwrap();
        (
            std::os::unix::fs::MetadataExt::uid(&metadata),
            std::os::unix::fs::MetadataExt::gid(&metadata),
        )
    }

    #[test]
    fn in_root_follows_at_most_forty_symlinks() {
        let (_parent, root, _outside) = sealed();
        std::fs::create_dir_all(root.join("end")).unwrap();
        // `/etc/l0` -> `l1` -> ... -> `l40` -> `/end`: 41 links
        for number in 0..=MAX_SYMLINKS {
            let target = if number == MAX_SYMLINKS {
                "/end".to_string()
            } else {
                format!("l{}", number + 1)
            };
            std::os::unix::fs::symlink(target, root.join(format!("etc/l{number}"))).unwrap();
        }
        std::os::unix::fs::symlink("loop-b", root.join("etc/loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", root.join("etc/loop-b")).unwrap();
        let confined = Confined::open(&root, Resolution::InRoot).unwrap();
        assert_eq!(
            identity_of(&confined.directory("/etc/l1").unwrap()),
            identity(&root.join("end"))
        );
        for path in ["/etc/l0", "/etc/loop-a"] {
            let error = confined.directory(path).unwrap_err();
            assert_eq!(
                error.raw_os_error(),
                Some(Errno::LOOP.raw_os_error()),
                "{path}"
            );
            assert!(is_symlink_refusal(&error));
        }
    }

    #[test]
    fn no_symlinks_refuses_any_link_on_the_way() {
        let (_parent, root, outside) = sealed();
        std::os::unix::fs::symlink(&outside, root.join("etc/away")).unwrap();
        std::os::unix::fs::symlink("away", root.join("etc/relative")).unwrap();
        let confined = Confined::open(&root, Resolution::NoSymlinks).unwrap();
        for path in ["/etc/away/x", "/etc/relative/x"] {
            let error = confined.write_now(path, b"x", 0o644).unwrap_err();
            assert!(is_symlink_refusal(&error), "{path}: {error}");
            let error = confined.create_directories(path, 0o755).unwrap_err();
            assert!(is_symlink_refusal(&error), "{path}: {error}");
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
        confined.write_now("/etc/plain", b"x", 0o644).unwrap();
        assert_eq!(std::fs::read(root.join("etc/plain")).unwrap(), b"x");
    }

    #[test]
    fn a_final_symlink_is_never_followed() {
        let (_parent, root, outside) = sealed();
        std::fs::write(outside.join("target"), "old").unwrap();
        std::os::unix::fs::symlink(outside.join("target"), root.join("etc/file")).unwrap();
        let confined = Confined::open(&root, Resolution::NoSymlinks).unwrap();
        let (directory, name) = confined.parent("/etc/file").unwrap();
        assert!(directory.open_regular(&name).is_err());
        assert!(
            directory
                .set_owner_and_mode_of_sole_file(&name, 0o600, 0, 0)
                .is_err()
        );
        assert!(
            directory
                .make_directory(&name, (0o700, 0, 0), None)
                .is_err()
        );
        assert_eq!(
            directory.entry(&name).unwrap().map(|entry| entry.kind),
            Some(EntryKind::Symlink)
        );
        confined.write_now("/etc/file", b"new", 0o644).unwrap();
        assert_eq!(std::fs::read(outside.join("target")).unwrap(), b"old");
        assert_eq!(std::fs::read(root.join("etc/file")).unwrap(), b"new");
    }

    /// The permission bits `state` (mode, uid, gid) grants to a principal: the owner
    /// class to `Some(uid)` as a user, the group class to `Some(gid)` as a group, the
    /// other class to everyone.
    fn granted(state: (u32, u32, u32), user: Option<u32>, group: Option<u32>) -> u32 {
        let (mode, uid, gid) = state;
        let mut bits = mode & 0o007;
        if user == Some(uid) {
            bits |= (mode >> 6) & 0o7;
        }
        if group == Some(gid) {
            bits |= (mode >> 3) & 0o7;
        }
        bits
    }

    fn shown((mode, uid, gid): (u32, u32, u32)) -> String {
        format!("{mode:o} {uid}:{gid}")
    }

    #[test]
    fn no_state_between_two_owners_and_modes_grants_more_than_both() {
        let modes = [
            0o000, 0o400, 0o440, 0o444, 0o600, 0o604, 0o640, 0o644, 0o660, 0o666, 0o700, 0o750,
            0o755, 0o777, 0o2750, 0o4755, 0o1777,
        ];
        let owners = [(0, 0), (0, 2000), (0, 3000), (1000, 2000), (1000, 3000)];
        for &old_mode in &modes {
            for &new_mode in &modes {
                for &(old_uid, old_gid) in &owners {
                    for &(uid, gid) in &owners {
                        let old = (old_mode, old_uid, old_gid);
                        let new = (new_mode, uid, gid);
                        let mut state = old;
                        let steps = ownership_steps(old, new);
                        for step in &steps {
                            state = match *step {
                                Step::Mode(mode) => (mode, state.1, state.2),
                                Step::Owner(uid, gid) => (state.0 & !0o6000, uid, gid),
                            };
                            for user in [None, Some(0), Some(1000)] {
                                for group in [None, Some(0), Some(2000), Some(3000)] {
                                    let now = granted(state, user, group);
                                    let allowed =
                                        granted(old, user, group) | granted(new, user, group);
                                    assert_eq!(
                                        now & !allowed,
                                        0,
                                        "{} -> {}: {steps:?} passes {}",
                                        shown(old),
                                        shown(new),
                                        shown(state)
                                    );
                                }
                            }
                            // no setuid or setgid between the two states
                            if Some(step) != steps.last() {
                                assert_eq!(state.0 & 0o7000, 0, "{}", shown(old));
                            }
                        }
                        assert_eq!(state, new, "{steps:?}");
                    }
                }
            }
        }
        // the red team's case: tightened before the group changes
        assert_eq!(
            ownership_steps((0o640, 0, 2000), (0o600, 0, 3000)),
            vec![Step::Mode(0o600), Step::Owner(0, 3000), Step::Mode(0o600)]
        );
    }

    #[test]
    fn owner_and_mode_end_as_asked_on_a_real_file() {
        let (_parent, root, _outside) = sealed();
        std::fs::write(root.join("etc/secret"), "s").unwrap();
        std::os::unix::fs::chown(root.join("etc/secret"), Some(0), Some(2000)).unwrap();
        std::fs::set_permissions(
            root.join("etc/secret"),
            std::os::unix::fs::PermissionsExt::from_mode(0o640),
        )
        .unwrap();
        let confined = Confined::open(&root, Resolution::InRoot).unwrap();
        let (directory, name) = confined.parent("/etc/secret").unwrap();
        assert!(
            directory
                .set_owner_and_mode_of_sole_file(&name, 0o600, 0, 3000)
                .unwrap()
        );
        let entry = directory.entry(&name).unwrap().unwrap();
        assert_eq!((entry.mode, entry.uid, entry.gid), (0o600, 0, 3000));
        // and a setgid directory keeps its bit after a change of group
        directory.create_directory("shared", 0o700).unwrap();
        directory
            .make_directory("shared", (0o2770, 0, 2000), None)
            .unwrap();
        let entry = directory.entry("shared").unwrap().unwrap();
        assert_eq!((entry.mode, entry.uid, entry.gid), (0o2770, 0, 2000));
    }

    #[test]
    fn names_that_step_are_refused() {
        let (_parent, root, _outside) = sealed();
        let confined = Confined::open(&root, Resolution::InRoot).unwrap();
        assert!(confined.parent("/etc/../x").is_err());
        assert!(confined.parent("/").is_err());
        let directory = confined.directory("/etc").unwrap();
        assert!(directory.create_fresh("..", 0o644, 0, 0).is_err());
        assert!(directory.create_fresh("a/b", 0o644, 0, 0).is_err());
    }
}
