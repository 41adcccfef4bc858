//! Filesystem operations that keep the host consistent when the applier is killed or
//! the power fails: new content goes to a temp file beside its target, is made durable,
//! then renamed over it; renames are made durable before the record says they happened.
//! Never follows a symlink when changing ownership or mode.
//!
//! Durability is batched: instead of fsync per file and per directory (about 3 ms each
//! on a virtual disk, 30 s for 10,000 files), a batch of temp files is written, the
//! filesystems are flushed with `syncfs`, the batch is renamed, and they are flushed
//! again. The guarantee is the same: no rename is issued before its content is on disk,
//! and the record is written only after the renames are.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

/// The temp name beside `path` (`/etc/.motd.mesh-new`). Deterministic, so a temp file
/// left by a killed run is found and replaced by the next one.
pub fn temp_path_for(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.mesh-new"))
}

/// Opens without following a final symlink.
pub fn open_no_follow(path: &Path, directory: bool) -> io::Result<File> {
    let mut flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if directory {
        flags |= OFlags::DIRECTORY;
    }
    let descriptor = rustix::fs::open(path, flags, Mode::empty())?;
    Ok(File::from(descriptor))
}

/// Removes a file or symlink; absent is fine.
pub fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}

/// Writes `content` to a fresh file at `temp` whose owner and mode are set before any
/// byte of content is written. Not durable yet: see [`Flusher`].
pub fn write_fresh_file(
    temp: &Path,
    content: &[u8],
    mode: u32,
    uid: u32,
    gid: u32,
) -> io::Result<()> {
    remove_if_present(temp)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(OFlags::NOFOLLOW.bits() as i32 | OFlags::CLOEXEC.bits() as i32)
        .open(temp)?;
    std::os::unix::fs::fchown(&file, Some(uid), Some(gid))?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.write_all(content)?;
    Ok(())
}

/// Sets owner and mode of an existing file or directory, never through a symlink.
pub fn set_owner_and_mode(
    path: &Path,
    directory: bool,
    mode: u32,
    uid: u32,
    gid: u32,
) -> io::Result<()> {
    let file = open_no_follow(path, directory)?;
    std::os::unix::fs::fchown(&file, Some(uid), Some(gid))?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Writes a small file atomically and durably right away: temp, fsync, rename, fsync
/// the directory. For the record and unit files.
pub fn write_file_now(path: &Path, content: &[u8], mode: u32) -> io::Result<()> {
    let temp = temp_path_for(path);
    write_fresh_file(&temp, content, mode, 0, 0)?;
    File::open(&temp)?.sync_all()?;
    std::fs::rename(&temp, path)?;
    sync_directory_of(path)
}

/// fsyncs the directory holding `path`.
pub fn sync_directory_of(path: &Path) -> io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("/"));
    open_no_follow(parent, true)?.sync_all()
}

/// Replaces `path` with a symlink to `target`: a temp link beside it, renamed over it.
pub fn replace_with_symlink(path: &Path, target: &str) -> io::Result<()> {
    let temp = temp_path_for(path);
    remove_if_present(&temp)?;
    std::os::unix::fs::symlink(target, &temp)?;
    std::fs::rename(&temp, path)
}

/// Collects the directories a batch touched and flushes each of their filesystems once.
#[derive(Default)]
pub struct Flusher {
    /// device -> one directory on it
    devices: HashMap<u64, PathBuf>,
    seen: HashMap<PathBuf, ()>,
}

impl Flusher {
    pub fn new() -> Flusher {
        Flusher::default()
    }

    /// Notes that something in `directory` changed.
    pub fn touched(&mut self, directory: &Path) {
        if self.seen.contains_key(directory) {
            return;
        }
        self.seen.insert(directory.to_path_buf(), ());
        if let Ok(metadata) = std::fs::symlink_metadata(directory) {
            self.devices
                .entry(metadata.dev())
                .or_insert_with(|| directory.to_path_buf());
        }
    }

    /// Notes that the file at `path` changed (its directory is touched).
    pub fn touched_file(&mut self, path: &Path) {
        if let Some(parent) = path.parent() {
            self.touched(parent);
        }
    }

    /// Makes everything written on the touched filesystems durable.
    pub fn flush(&self) -> io::Result<()> {
        for directory in self.devices.values() {
            let handle = open_no_follow(directory, true)?;
            rustix::fs::syncfs(&handle)?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }
}
