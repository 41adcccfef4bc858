//! The `archive` shape on the host: an artifact (uncompressed POSIX tar, named by its
//! digest) verified against the shape's digest, checked entry by entry, unpacked
//! beside the target and swapped in atomically. Refuses path traversal, absolute or
//! escaping links, hard links out of the archive and special files. Withdrawal keeps
//! the data.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::codes::Code;
use crate::durable::{self, Flusher};
use crate::problem::Problem;

/// Where an archive is unpacked before it is swapped in (`/srv/.app.mesh-unpack`).
pub fn staging_path_for(host_path: &Path) -> PathBuf {
    let name = host_path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    host_path.with_file_name(format!(".{name}.mesh-unpack"))
}

struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buffer)?;
        if let Some(read) = buffer.get(..count) {
            self.hasher.update(read);
        }
        Ok(count)
    }
}

impl<R: Read> HashingReader<R> {
    fn new(inner: R) -> HashingReader<R> {
        HashingReader {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// Reads to the end (trailing bytes count too) and returns `sha256:HEX`.
    fn finish(mut self) -> io::Result<String> {
        io::copy(&mut self, &mut io::sink())?;
        Ok(format!("sha256:{}", hex::encode(self.hasher.finalize())))
    }
}

fn open_artifact(artifact_path: &Path) -> Result<File, Problem> {
    File::open(artifact_path).map_err(|error| {
        Problem::new(
            Code::MissingArtifact,
            format!(
                "cannot open the artifact `{}`: {error}",
                artifact_path.display()
            ),
            "copy the built artifact into the artifact directory (`--artifacts`), then apply again",
        )
    })
}

fn digest_mismatch(artifact_path: &Path, expected: &str, found: &str) -> Problem {
    Problem::new(
        Code::ArtifactDigestMismatch,
        format!(
            "the artifact `{}` has digest `{found}`, the shape wants `{expected}`",
            artifact_path.display()
        ),
        "the artifact is damaged or not the one built for this plan: copy it again from the build",
    )
}

fn unsafe_entry(entry: &str, reason: &str) -> Problem {
    Problem::new(
        Code::UnsafeArchive,
        format!("the archive entry `{entry}` {reason}"),
        "an archive may hold only files, directories and links that stay inside it; rebuild the artifact",
    )
}

/// Checks the artifact's digest, then every entry, without writing anything.
pub fn verify(artifact_path: &Path, expected_digest: &str) -> Result<(), Problem> {
    let file = open_artifact(artifact_path)?;
    let found = HashingReader::new(io::BufReader::new(file))
        .finish()
        .map_err(|error| Problem::filesystem("read", artifact_path, &error))?;
    if found != expected_digest {
        return Err(digest_mismatch(artifact_path, expected_digest, &found));
    }
    let file = open_artifact(artifact_path)?;
    walk(io::BufReader::new(file), None).map(|_| ())
}

/// What was seen so far while walking an archive.
#[derive(Default)]
struct Seen {
    kinds: HashMap<PathBuf, EntryKind>,
    /// Directories that earlier entries lie in (declared or not).
    parents: HashSet<PathBuf>,
    directories: Vec<(PathBuf, u32)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    File,
    Directory,
    Symlink,
}

/// Where to unpack and as whom.
struct Unpack<'a> {
    staging: &'a Path,
    uid: u32,
    gid: u32,
}

/// Walks every entry, checking it; with `unpack`, also writes it under the staging
/// directory. Returns the reader's digest.
fn walk<R: Read>(reader: R, unpack: Option<&Unpack<'_>>) -> Result<String, Problem> {
    let mut archive = tar::Archive::new(HashingReader::new(reader));
    let mut seen = Seen::default();
    let entries = archive
        .entries()
        .map_err(|error| unsafe_entry("(header)", &format!("cannot be read: {error}")))?;
    for entry in entries {
        let mut entry =
            entry.map_err(|error| unsafe_entry("(header)", &format!("cannot be read: {error}")))?;
        let raw_path = entry
            .path()
            .map_err(|error| unsafe_entry("(path)", &format!("has an unreadable path: {error}")))?
            .into_owned();
        let shown = raw_path.display().to_string();
        let relative = normalize(&raw_path)
            .ok_or_else(|| unsafe_entry(&shown, "leaves the archive (`..` or an absolute path)"))?;
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        if relative.as_os_str().is_empty() {
            // the archive's own root (`./`): only its mode matters
            if entry.header().entry_type() != tar::EntryType::Directory {
                return Err(unsafe_entry(
                    &shown,
                    "is the archive root but not a directory",
                ));
            }
            seen.directories.push((PathBuf::new(), mode));
            continue;
        }
        if seen.kinds.contains_key(&relative) {
            return Err(unsafe_entry(&shown, "appears twice"));
        }
        for ancestor in relative.ancestors().skip(1) {
            match seen.kinds.get(ancestor) {
                Some(EntryKind::Symlink) => {
                    return Err(unsafe_entry(&shown, "lies under a symlink of the archive"));
                }
                Some(EntryKind::File) => {
                    return Err(unsafe_entry(&shown, "lies under a file of the archive"));
                }
                _ => {}
            }
        }
        let entry_type = entry.header().entry_type();
        if entry_type != tar::EntryType::Directory && seen.parents.contains(&relative) {
            return Err(unsafe_entry(
                &shown,
                "replaces a directory that earlier entries lie in",
            ));
        }
        let kind = match entry_type {
            tar::EntryType::Regular | tar::EntryType::Continuous => EntryKind::File,
            tar::EntryType::Directory => EntryKind::Directory,
            tar::EntryType::Symlink => {
                let target = link_target(&entry, &shown)?;
                if !symlink_stays_inside(&relative, &target) {
                    return Err(unsafe_entry(
                        &shown,
                        &format!("is a link to `{}` outside the archive", target.display()),
                    ));
                }
                EntryKind::Symlink
            }
            tar::EntryType::Link => {
                let target = link_target(&entry, &shown)?;
                let inside = normalize(&target)
                    .filter(|target| seen.kinds.get(target) == Some(&EntryKind::File));
                if inside.is_none() {
                    return Err(unsafe_entry(
                        &shown,
                        &format!(
                            "is a hard link to `{}`, which is not an earlier file of the archive",
                            target.display()
                        ),
                    ));
                }
                EntryKind::File
            }
            other => {
                return Err(unsafe_entry(
                    &shown,
                    &format!("is a special file ({other:?})"),
                ));
            }
        };
        if let Some(unpack) = unpack {
            let destination = unpack.staging.join(&relative);
            ensure_parents(unpack.staging, &relative)?;
            match entry_type {
                tar::EntryType::Directory => {
                    match std::fs::DirBuilder::new().mode(0o700).create(&destination) {
                        Ok(()) => {}
                        Err(error)
                            if error.kind() == io::ErrorKind::AlreadyExists
                                && destination.is_dir() => {}
                        Err(error) => {
                            return Err(Problem::filesystem(
                                "create the directory",
                                &destination,
                                &error,
                            ));
                        }
                    }
                    seen.directories.push((relative.clone(), mode));
                }
                tar::EntryType::Symlink => {
                    let target = link_target(&entry, &shown)?;
                    std::os::unix::fs::symlink(&target, &destination).map_err(|error| {
                        Problem::filesystem("create the link", &destination, &error)
                    })?;
                    std::os::unix::fs::lchown(&destination, Some(unpack.uid), Some(unpack.gid))
                        .map_err(|error| {
                            Problem::filesystem("set the owner of", &destination, &error)
                        })?;
                }
                tar::EntryType::Link => {
                    let target = normalize(&link_target(&entry, &shown)?).unwrap_or_default();
                    std::fs::hard_link(unpack.staging.join(target), &destination).map_err(
                        |error| Problem::filesystem("create the hard link", &destination, &error),
                    )?;
                }
                _ => {
                    let mut output = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .mode(0o600)
                        .open(&destination)
                        .map_err(|error| Problem::filesystem("create", &destination, &error))?;
                    std::os::unix::fs::fchown(&output, Some(unpack.uid), Some(unpack.gid))
                        .map_err(|error| {
                            Problem::filesystem("set the owner of", &destination, &error)
                        })?;
                    output
                        .set_permissions(std::fs::Permissions::from_mode(mode))
                        .map_err(|error| {
                            Problem::filesystem("set the mode of", &destination, &error)
                        })?;
                    io::copy(&mut entry, &mut output)
                        .map_err(|error| Problem::filesystem("write", &destination, &error))?;
                }
            }
        }
        for ancestor in relative.ancestors().skip(1) {
            if !ancestor.as_os_str().is_empty() {
                seen.parents.insert(ancestor.to_path_buf());
            }
        }
        seen.kinds.insert(relative, kind);
    }
    if let Some(unpack) = unpack {
        // directories last, deepest first, so a read-only one does not stop its children
        let mut directories = seen.directories.clone();
        if !directories
            .iter()
            .any(|(path, _)| path.as_os_str().is_empty())
        {
            directories.push((PathBuf::new(), 0o755));
        }
        for (path, _) in seen
            .kinds
            .iter()
            .filter(|(_, kind)| **kind == EntryKind::Directory)
        {
            if !directories.iter().any(|(known, _)| known == path) {
                directories.push((path.clone(), 0o755));
            }
        }
        for implicit in implicit_directories(&seen) {
            if !directories.iter().any(|(known, _)| *known == implicit) {
                directories.push((implicit, 0o755));
            }
        }
        directories.sort_by_key(|(path, _)| std::cmp::Reverse(path.components().count()));
        for (path, mode) in directories {
            let destination = unpack.staging.join(&path);
            durable::set_owner_and_mode(&destination, true, mode, unpack.uid, unpack.gid).map_err(
                |error| Problem::filesystem("set owner and mode of", &destination, &error),
            )?;
        }
    }
    archive
        .into_inner()
        .finish()
        .map_err(|error| unsafe_entry("(end)", &format!("cannot be read: {error}")))
}

fn implicit_directories(seen: &Seen) -> HashSet<PathBuf> {
    let mut implicit = HashSet::new();
    for path in seen.kinds.keys() {
        for ancestor in path.ancestors().skip(1) {
            if !ancestor.as_os_str().is_empty() && !seen.kinds.contains_key(ancestor) {
                implicit.insert(ancestor.to_path_buf());
            }
        }
    }
    implicit
}

fn link_target<R: Read>(entry: &tar::Entry<'_, R>, shown: &str) -> Result<PathBuf, Problem> {
    match entry.link_name() {
        Ok(Some(target)) if !target.as_os_str().is_empty() => Ok(target.into_owned()),
        Ok(_) => Err(unsafe_entry(shown, "is a link without a target")),
        Err(error) => Err(unsafe_entry(
            shown,
            &format!("has an unreadable link target: {error}"),
        )),
    }
}

/// The entry's path relative to the archive root, or `None` when it would leave it.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(normal)
}

/// Does a relative symlink at `link` (relative to the archive root) resolve, lexically,
/// to somewhere inside the archive? Absolute targets never do.
fn symlink_stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth: usize = link.components().count().saturating_sub(1);
    for component in target.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(shallower) => depth = shallower,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

fn ensure_parents(staging: &Path, relative: &Path) -> Result<(), Problem> {
    if let Some(parent) = relative.parent()
        && !parent.as_os_str().is_empty()
    {
        let directory = staging.join(parent);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&directory)
            .map_err(|error| Problem::filesystem("create the directory", &directory, &error))?;
    }
    Ok(())
}

/// Unpacks the artifact beside `host_path` and swaps it in: the new tree replaces the
/// old one in a single rename (`RENAME_EXCHANGE` where the filesystem has it), and the
/// old tree is removed afterwards.
pub fn apply(
    artifact_path: &Path,
    expected_digest: &str,
    host_path: &Path,
    uid: u32,
    gid: u32,
) -> Result<(), Problem> {
    let staging = staging_path_for(host_path);
    remove_tree_if_present(&staging)?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(|error| Problem::filesystem("create the directory", &staging, &error))?;
    let file = open_artifact(artifact_path)?;
    let unpack = Unpack {
        staging: &staging,
        uid,
        gid,
    };
    let found = match walk(io::BufReader::new(file), Some(&unpack)) {
        Ok(found) => found,
        Err(problem) => {
            remove_tree_if_present(&staging)?;
            return Err(problem);
        }
    };
    if found != expected_digest {
        remove_tree_if_present(&staging)?;
        return Err(digest_mismatch(artifact_path, expected_digest, &found));
    }
    // the staging directory is beside the target, on the same filesystem
    let mut flusher = Flusher::new();
    flusher.touched_file(host_path);
    flusher
        .flush()
        .map_err(|error| Problem::filesystem("flush", &staging, &error))?;
    let exists = std::fs::symlink_metadata(host_path).is_ok();
    if exists {
        let exchanged = rustix::fs::renameat_with(
            rustix::fs::CWD,
            &staging,
            rustix::fs::CWD,
            host_path,
            rustix::fs::RenameFlags::EXCHANGE,
        );
        match exchanged {
            Ok(()) => {}
            Err(
                rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::OPNOTSUPP,
            ) => {
                // no RENAME_EXCHANGE here: move the old tree aside, then the new one in
                let aside = host_path.with_file_name(format!(
                    ".{}.mesh-old",
                    host_path
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_default()
                ));
                remove_tree_if_present(&aside)?;
                std::fs::rename(host_path, &aside)
                    .map_err(|error| Problem::filesystem("move aside", host_path, &error))?;
                std::fs::rename(&staging, host_path)
                    .map_err(|error| Problem::filesystem("swap in", host_path, &error))?;
                std::fs::rename(&aside, &staging)
                    .map_err(|error| Problem::filesystem("move aside", &aside, &error))?;
            }
            Err(error) => {
                return Err(Problem::filesystem(
                    "swap in",
                    host_path,
                    &io::Error::from(error),
                ));
            }
        }
        remove_tree_if_present(&staging)?;
    } else {
        std::fs::rename(&staging, host_path)
            .map_err(|error| Problem::filesystem("swap in", host_path, &error))?;
    }
    flusher
        .flush()
        .map_err(|error| Problem::filesystem("flush", host_path, &error))
}

fn remove_tree_if_present(path: &Path) -> Result<(), Problem> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => std::fs::remove_dir_all(path)
            .map_err(|error| Problem::filesystem("remove", path, &error)),
        Ok(_) => {
            std::fs::remove_file(path).map_err(|error| Problem::filesystem("remove", path, &error))
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Problem::filesystem("inspect", path, &error)),
    }
}
