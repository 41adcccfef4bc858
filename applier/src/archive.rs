//! The `archive` shape on the host: an artifact (uncompressed POSIX tar, named by its
//! digest) verified against the shape's digest, checked entry by entry, unpacked
//! beneath a directory handle beside the target and swapped in atomically. Refuses path
//! traversal, absolute links, links that leave the archive's own tree once its other
//! links are followed, hard links out of the archive and special files. Withdrawal
//! keeps the data. Must never open a path of the host by name.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::codes::Code;
use crate::confined::{self, Directory, ScratchOwner, absent, is_symlink_refusal};
use crate::durable::Flusher;
use crate::host::Host;
use crate::problem::Problem;

/// Symlinks followed at most while resolving one link (the kernel's own limit).
const LINKS_FOLLOWED: usize = 40;

/// Directories an entry may be nested in, counted from the archive's root. The
/// trees are made and removed through one descriptor a level: a red team's 10 KB
/// artifact one file 3,000 directories deep ran out of descriptors (`ulimit -n
/// 1024`) removing the old tree, which no later apply could then remove, and one
/// 15,000 deep took 80 s an apply. Real trees (a `node_modules`) stay far below.
const DEEPEST_ENTRY: usize = 256;

/// The longest path (or link target) of an entry, in bytes: `PATH_MAX` less its
/// terminating zero. Nothing longer can be made on the host.
const LONGEST_PATH: usize = 4095;

/// The most steps following the archive's links may take in all (each a name
/// looked up): far more than any real tree's links need, and a bound on an archive
/// whose links lead through one another at length.
const RESOLUTION_STEPS: usize = 1 << 22;

/// The name an archive is unpacked under before it is swapped in (`.app.mesh-unpack`).
pub fn staging_name_for(name: &str) -> String {
    format!(".{name}.mesh-unpack")
}

/// Where the old tree is moved aside without `RENAME_EXCHANGE` (`.app.mesh-old`).
pub fn aside_name_for(name: &str) -> String {
    format!(".{name}.mesh-old")
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

/// The artifact directory, opened. Beneath the root (the default
/// `ROOT/var/lib/mesh/artifacts`, which a plan can make a link or a directory of its
/// own, or any `--artifacts` inside the tree) it is reached through the confined layer
/// with no symlink on the way, under `--root` too: a plan that links it to `/etc` or
/// `/dev` would otherwise have the host's files read as artifacts. It must be root's
/// and writable by root only, judged on the directory opened: a user who could write
/// it could have an apply hash a sparse file of terabytes with the node's lock held.
/// Elsewhere it is the operator's own path, trusted like the root itself.
fn artifact_directory(host: &Host, artifacts: &Path) -> Result<Directory, Problem> {
    let absolute = std::path::absolute(artifacts)
        .map_err(|error| Problem::filesystem("open", artifacts, &error))?;
    let opened = match absolute.strip_prefix(host.root()) {
        Ok(inside) => {
            let node_path = format!("/{}", inside.to_string_lossy());
            let directory = host.fs().directory_without_symlinks(&node_path);
            if let Ok(opened) = &directory {
                let entry = opened
                    .own_entry()
                    .map_err(|error| Problem::filesystem("inspect", artifacts, &error))?;
                if entry.uid != 0 || entry.mode & 0o022 != 0 {
                    return Err(Problem::new(
                        Code::UnsafeArtifact,
                        format!(
                            "the artifact directory `{}` is owned by uid {} with mode {:04o}: mesh reads artifacts only from a directory root owns and only root may write",
                            artifacts.display(),
                            entry.uid,
                            entry.mode
                        ),
                        "make it root's and writable by root only (`chown root: DIR && chmod go-w DIR`, or declare it as a root `directory`), or name another with `--artifacts`",
                    ));
                }
            }
            directory
        }
        Err(_) => Directory::open_path(&absolute),
    };
    opened.map_err(|error| {
        let errno = error.raw_os_error().map(rustix::io::Errno::from_raw_os_error);
        if errno == Some(rustix::io::Errno::NOENT) {
            Problem::new(
                Code::MissingArtifact,
                format!(
                    "the artifact directory `{}` does not exist",
                    artifacts.display()
                ),
                "copy the built artifacts into the artifact directory (`--artifacts`, default `/var/lib/mesh/artifacts`), then apply again",
            )
        } else if is_symlink_refusal(&error) || errno == Some(rustix::io::Errno::NOTDIR) {
            Problem::new(
                Code::UnsafeArtifact,
                format!(
                    "the artifact directory `{}` is or goes through a symlink, or is not a directory: mesh reads artifacts only from a directory reached without symlinks",
                    artifacts.display()
                ),
                "make the artifact directory a plain directory reached without symlinks (do not declare it as a `link`), or name another with `--artifacts`",
            )
        } else {
            Problem::filesystem("open the artifact directory", artifacts, &error)
        }
    })
}

/// Opens the artifact `name` in the artifact directory: never through a symlink, never
/// a FIFO, a device or anything but a regular file (opened non-blocking, checked on the
/// descriptor), and read no further than the size it had when opened.
fn open_artifact(
    host: &Host,
    artifacts: &Path,
    name: &str,
) -> Result<(io::Take<File>, PathBuf), Problem> {
    let shown = artifacts.join(name);
    let directory = artifact_directory(host, artifacts)?;
    let file = directory.open_regular(name).map_err(|error| {
        if absent(&error) {
            Problem::new(
                Code::MissingArtifact,
                format!("cannot open the artifact `{}`: {error}", shown.display()),
                "copy the built artifact into the artifact directory (`--artifacts`), then apply again",
            )
        } else if is_symlink_refusal(&error) || is_invalid(&error) {
            Problem::new(
                Code::UnsafeArtifact,
                format!(
                    "the artifact `{}` is a symlink or not a regular file (a FIFO, a device, a socket or a directory): mesh reads only regular files as artifacts",
                    shown.display()
                ),
                "copy the built artifact itself (a regular file, not a link) into the artifact directory, then apply again",
            )
        } else {
            Problem::filesystem("open the artifact", &shown, &error)
        }
    })?;
    let size = file
        .metadata()
        .map_err(|error| Problem::filesystem("inspect", &shown, &error))?
        .len();
    Ok((file.take(size), shown))
}

fn is_invalid(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::InvalidInput
}

/// The digest found is not shown: the file may not be the artifact at all, and its
/// digest is nobody's business.
fn digest_mismatch(artifact_path: &Path, expected: &str) -> Problem {
    Problem::new(
        Code::ArtifactDigestMismatch,
        format!(
            "the artifact `{}` does not have the digest the shape wants, `{expected}`",
            artifact_path.display()
        ),
        "the artifact is damaged or not the one built for this plan: copy it again from the build (`sha256sum` shows its digest)",
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
pub fn verify(
    host: &Host,
    artifacts: &Path,
    artifact: &str,
    expected_digest: &str,
) -> Result<(), Problem> {
    let (file, shown) = open_artifact(host, artifacts, artifact)?;
    let found = HashingReader::new(io::BufReader::new(file))
        .finish()
        .map_err(|error| Problem::filesystem("read", &shown, &error))?;
    if found != expected_digest {
        return Err(digest_mismatch(&shown, expected_digest));
    }
    let (file, _) = open_artifact(host, artifacts, artifact)?;
    walk(io::BufReader::new(file), None).map(|_| ())
}

/// The archive's paths as a tree of names: a path is its parent's node and its own
/// name, so each directory is kept as its name, not as its whole path, however many
/// entries lie beneath it (a red team's 8.5 MB archive of deep, long paths took 1 GB
/// when every ancestor of every entry was kept whole). Node [`ROOT`] is the
/// archive's root.
struct Names {
    /// Each distinct name once, by number: looked up by the name borrowed, so a
    /// step of link resolution makes nothing.
    words: HashMap<OsString, usize>,
    spelled: Vec<OsString>,
    /// A node's children, by its number and the child's name's number.
    children: HashMap<(usize, usize), usize>,
    /// Each node's parent (the root's is itself), name and depth, by number.
    nodes: Vec<Node>,
}

struct Node {
    parent: usize,
    word: usize,
    depth: usize,
}

const ROOT: usize = 0;

impl Default for Names {
    fn default() -> Names {
        Names {
            words: HashMap::new(),
            spelled: Vec::new(),
            children: HashMap::new(),
            nodes: vec![Node {
                parent: ROOT,
                word: 0,
                depth: 0,
            }],
        }
    }
}

impl Names {
    /// The node of a normalized relative path, made with its ancestors where missing.
    fn intern(&mut self, path: &Path) -> usize {
        let mut node = ROOT;
        for component in path.components() {
            let name = component.as_os_str();
            let word = match self.words.get(name) {
                Some(word) => *word,
                None => {
                    let word = self.spelled.len();
                    self.spelled.push(name.to_os_string());
                    self.words.insert(name.to_os_string(), word);
                    word
                }
            };
            node = match self.children.get(&(node, word)) {
                Some(child) => *child,
                None => {
                    let child = self.nodes.len();
                    self.nodes.push(Node {
                        parent: node,
                        word,
                        depth: self.depth(node) + 1,
                    });
                    self.children.insert((node, word), child);
                    child
                }
            };
        }
        node
    }

    /// The node of a normalized relative path, if the archive has it.
    fn find(&self, path: &Path) -> Option<usize> {
        path.components().try_fold(ROOT, |node, component| {
            self.child(node, component.as_os_str())
        })
    }

    /// The node `name` in `node`, if the archive has it.
    fn child(&self, node: usize, name: &OsStr) -> Option<usize> {
        let word = self.words.get(name)?;
        self.children.get(&(node, *word)).copied()
    }

    /// A node's parent (the root for the root, or a node not made here).
    fn parent(&self, node: usize) -> usize {
        self.nodes.get(node).map_or(ROOT, |data| data.parent)
    }

    fn depth(&self, node: usize) -> usize {
        self.nodes.get(node).map_or(0, |data| data.depth)
    }

    /// Every node but the root.
    fn nodes(&self) -> std::ops::Range<usize> {
        1..self.nodes.len()
    }

    /// A node's path relative to the archive's root, made when it is needed.
    fn path(&self, node: usize) -> PathBuf {
        let mut names = Vec::with_capacity(self.depth(node));
        let mut at = node;
        while at != ROOT
            && let Some(data) = self.nodes.get(at)
        {
            if let Some(name) = self.spelled.get(data.word) {
                names.push(name);
            }
            at = data.parent;
        }
        names.into_iter().rev().collect()
    }
}

/// What was seen so far while walking an archive.
#[derive(Default)]
struct Seen {
    names: Names,
    /// What each entry is, by its node.
    kinds: HashMap<usize, EntryKind>,
    /// Every symlink of the archive, by node, and its target.
    symlinks: HashMap<usize, PathBuf>,
    /// The nodes earlier entries lie in (declared or not), the root aside: with a
    /// node, every node above it.
    parents: HashSet<usize>,
    /// The directories the archive declares, by node, with their modes.
    directories: Vec<(usize, u32)>,
}

impl Seen {
    fn kind_of(&self, path: &Path) -> Option<EntryKind> {
        self.names
            .find(path)
            .and_then(|node| self.kinds.get(&node).copied())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    File,
    Directory,
    Symlink,
}

/// Where to unpack and as whom.
struct Unpack<'a> {
    staging: &'a Directory,
    /// The staging directory's host path, for messages.
    shown: &'a Path,
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
        // refused as it is checked, not halfway through unpacking: the tree is made
        // one UTF-8 name at a time
        if relative.to_str().is_none() {
            return Err(unsafe_entry(&shown, "has a path that is not UTF-8"));
        }
        // no longer than a path the kernel takes (nor what keeping its ancestors costs)
        if relative.as_os_str().len() > LONGEST_PATH {
            return Err(unsafe_entry(
                &format!("{}…", shown.chars().take(64).collect::<String>()),
                &format!("has a path of more than {LONGEST_PATH} bytes, which cannot be made"),
            ));
        }
        // the directories it is in: its path's components but its own name
        if relative.components().count().saturating_sub(1) > DEEPEST_ENTRY {
            return Err(unsafe_entry(
                &format!("{}…", shown.chars().take(64).collect::<String>()),
                &format!("is nested in more than {DEEPEST_ENTRY} directories"),
            ));
        }
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        if relative.as_os_str().is_empty() {
            // the archive's own root (`./`): only its mode matters
            if entry.header().entry_type() != tar::EntryType::Directory {
                return Err(unsafe_entry(
                    &shown,
                    "is the archive root but not a directory",
                ));
            }
            seen.directories.push((ROOT, mode));
            continue;
        }
        let entry_type = entry.header().entry_type();
        let node = seen.names.intern(&relative);
        check_placement(&seen, node, &shown, entry_type)?;
        let kind = classify(&entry, &mut seen, node, &relative, &shown)?;
        if let Some(unpack) = unpack {
            unpack_entry(unpack, &mut entry, entry_type, &relative, &shown, mode)?;
            if entry_type == tar::EntryType::Directory {
                seen.directories.push((node, mode));
            }
        }
        // up to the first one already noted: those above it are too
        let mut ancestor = seen.names.parent(node);
        while ancestor != ROOT && seen.parents.insert(ancestor) {
            ancestor = seen.names.parent(ancestor);
        }
        seen.kinds.insert(node, kind);
    }
    // in the archive's order
    let mut symlinks: Vec<(&usize, &PathBuf)> = seen.symlinks.iter().collect();
    symlinks.sort();
    let mut steps = 0;
    for (link, target) in symlinks {
        if let Err(reason) = resolve_in_archive(&seen, *link, target, &mut steps) {
            return Err(unsafe_entry(
                &seen.names.path(*link).display().to_string(),
                &reason,
            ));
        }
    }
    if let Some(unpack) = unpack {
        finish_directories(unpack, &seen)?;
    }
    archive
        .into_inner()
        .finish()
        .map_err(|error| unsafe_entry("(end)", &format!("cannot be read: {error}")))
}

/// Refuses an entry that repeats one, lies under a file or symlink of the archive, or
/// replaces a directory earlier entries lie in.
fn check_placement(
    seen: &Seen,
    node: usize,
    shown: &str,
    entry_type: tar::EntryType,
) -> Result<(), Problem> {
    if seen.kinds.contains_key(&node) {
        return Err(unsafe_entry(shown, "appears twice"));
    }
    let mut ancestor = node;
    while ancestor != ROOT {
        ancestor = seen.names.parent(ancestor);
        match seen.kinds.get(&ancestor) {
            Some(EntryKind::Symlink) => {
                return Err(unsafe_entry(shown, "lies under a symlink of the archive"));
            }
            Some(EntryKind::File) => {
                return Err(unsafe_entry(shown, "lies under a file of the archive"));
            }
            _ => {}
        }
        // an earlier entry lies there: it and every directory above it were
        // checked then, and none can have become a file or link since
        if seen.parents.contains(&ancestor) {
            break;
        }
    }
    if entry_type != tar::EntryType::Directory && seen.parents.contains(&node) {
        return Err(unsafe_entry(
            shown,
            "replaces a directory that earlier entries lie in",
        ));
    }
    Ok(())
}

/// What the entry is; refuses special files, absolute or lexically escaping symlinks and
/// hard links to anything but an earlier file. Symlinks are noted for the check of where
/// they lead once every entry is known.
fn classify<R: Read>(
    entry: &tar::Entry<'_, R>,
    seen: &mut Seen,
    node: usize,
    relative: &Path,
    shown: &str,
) -> Result<EntryKind, Problem> {
    Ok(match entry.header().entry_type() {
        tar::EntryType::Regular | tar::EntryType::Continuous => EntryKind::File,
        tar::EntryType::Directory => EntryKind::Directory,
        tar::EntryType::Symlink => {
            let target = link_target(entry, shown)?;
            if target.as_os_str().len() > LONGEST_PATH {
                return Err(unsafe_entry(
                    shown,
                    &format!(
                        "is a link whose target has more than {LONGEST_PATH} bytes, which cannot be made"
                    ),
                ));
            }
            if !symlink_stays_inside(relative, &target) {
                return Err(unsafe_entry(
                    shown,
                    &format!("is a link to `{}` outside the archive", target.display()),
                ));
            }
            if target.to_str().is_none() {
                return Err(unsafe_entry(shown, "has a link target that is not UTF-8"));
            }
            seen.symlinks.insert(node, target);
            EntryKind::Symlink
        }
        tar::EntryType::Link => {
            let target = link_target(entry, shown)?;
            let inside =
                normalize(&target).filter(|target| seen.kind_of(target) == Some(EntryKind::File));
            if inside.is_none() {
                return Err(unsafe_entry(
                    shown,
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
                shown,
                &format!("is a special file ({other:?})"),
            ));
        }
    })
}

/// The directories entries lie in that the archive does not declare: every node
/// that is not an entry.
fn implicit_directories(seen: &Seen) -> impl Iterator<Item = usize> + '_ {
    seen.names
        .nodes()
        .filter(|node| !seen.kinds.contains_key(node))
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

/// Resolves the symlink at node `link` to `target` against the archive's own tree,
/// following its other symlinks as the kernel would. Refuses a target that, once
/// followed, leaves the tree (`up -> .` then `esc -> up/up/up/../..` passes a lexical
/// check and points outside), an absolute one, and a loop. A name the archive does not
/// have cannot be a link in the unpacked tree, so it is a plain step. Each step is one
/// lookup of a name in a node (a red team's links of `x/../` repeated took 21 s when
/// every step built and looked up a whole path).
fn resolve_in_archive(
    seen: &Seen,
    link: usize,
    target: &Path,
    steps: &mut usize,
) -> Result<(), String> {
    // where resolution stands: a node of the archive's tree, and how many names
    // deeper than that it has gone where the archive has nothing
    let mut position = seen.names.parent(link);
    let mut beyond: usize = 0;
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    push_components(&mut pending, target)?;
    let mut followed = 0;
    while let Some(part) = pending.pop() {
        if part == ".." {
            if beyond > 0 {
                beyond -= 1;
            } else if position == ROOT {
                return Err(format!(
                    "is a link to `{}`, which leaves the archive once its links are followed",
                    target.display()
                ));
            } else {
                position = seen.names.parent(position);
            }
            continue;
        }
        *steps += 1;
        if *steps > RESOLUTION_STEPS {
            return Err(format!(
                "is a link to `{}`, and the archive's links take more than {RESOLUTION_STEPS} steps to follow",
                target.display()
            ));
        }
        if seen.names.depth(position) + beyond > LONGEST_PATH {
            return Err(format!(
                "is a link to `{}`, which leads deeper than any path that can be made",
                target.display()
            ));
        }
        // beneath a name the archive does not have, nothing is one of its links
        let child = if beyond == 0 {
            seen.names.child(position, &part)
        } else {
            None
        };
        let Some(child) = child else {
            beyond += 1;
            continue;
        };
        match seen.symlinks.get(&child) {
            Some(next) => {
                followed += 1;
                if followed > LINKS_FOLLOWED {
                    return Err(format!(
                        "is a link to `{}`, which loops through the archive's links",
                        target.display()
                    ));
                }
                push_components(&mut pending, next)?;
            }
            None => position = child,
        }
    }
    Ok(())
}

/// Pushes a relative target's components so that the first is popped first.
fn push_components(pending: &mut Vec<std::ffi::OsString>, target: &Path) -> Result<(), String> {
    let mut parts = Vec::new();
    for component in target.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_os_string()),
            Component::ParentDir => parts.push(std::ffi::OsString::from("..")),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "is a link to the absolute path `{}`",
                    target.display()
                ));
            }
        }
    }
    pending.extend(parts.into_iter().rev());
    Ok(())
}

/// A name of the archive as the confined layer takes it.
fn entry_name(relative: &Path, shown: &str) -> Result<String, Problem> {
    relative
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_string)
        .ok_or_else(|| unsafe_entry(shown, "has a name that is not UTF-8"))
}

/// The directory an entry goes in, created (0700 until the end) beneath the staging
/// handle one name at a time, never through a symlink.
fn entry_parent(unpack: &Unpack<'_>, relative: &Path) -> Result<Directory, Problem> {
    let mut directory = unpack
        .staging
        .duplicate()
        .map_err(|error| Problem::filesystem("open", unpack.shown, &error))?;
    let Some(parent) = relative.parent() else {
        return Ok(directory);
    };
    for component in parent.components() {
        let name = component.as_os_str().to_string_lossy().into_owned();
        let shown = unpack.shown.join(parent);
        directory
            .create_directory(&name, 0o700)
            .map_err(|error| Problem::filesystem("create the directory", &shown, &error))?;
        directory = directory
            .open_directory(&name)
            .map_err(|error| Problem::filesystem("open the directory", &shown, &error))?;
    }
    Ok(directory)
}

fn unpack_entry<R: Read>(
    unpack: &Unpack<'_>,
    entry: &mut tar::Entry<'_, R>,
    entry_type: tar::EntryType,
    relative: &Path,
    shown: &str,
    mode: u32,
) -> Result<(), Problem> {
    let destination = unpack.shown.join(relative);
    let parent = entry_parent(unpack, relative)?;
    let name = entry_name(relative, shown)?;
    match entry_type {
        tar::EntryType::Directory => parent
            .create_directory(&name, 0o700)
            .map_err(|error| Problem::filesystem("create the directory", &destination, &error)),
        tar::EntryType::Symlink => {
            let target = link_target(entry, shown)?;
            let target = target
                .to_str()
                .ok_or_else(|| unsafe_entry(shown, "has a link target that is not UTF-8"))?;
            parent
                .symlink(target, &name)
                .map_err(|error| Problem::filesystem("create the link", &destination, &error))?;
            parent
                .set_link_owner(&name, unpack.uid, unpack.gid)
                .map_err(|error| Problem::filesystem("set the owner of", &destination, &error))
        }
        tar::EntryType::Link => {
            let target = normalize(&link_target(entry, shown)?).unwrap_or_default();
            let source = unpack
                .staging
                .beneath(target.parent().unwrap_or(Path::new("")))
                .map_err(|error| Problem::filesystem("open", &destination, &error))?;
            let target_name = entry_name(&target, shown)?;
            parent
                .hard_link(&source, &target_name, &name)
                .map_err(|error| Problem::filesystem("create the hard link", &destination, &error))
        }
        _ => {
            let mut output = parent
                .create_fresh(&name, mode, unpack.uid, unpack.gid)
                .map_err(|error| Problem::filesystem("create", &destination, &error))?;
            io::copy(entry, &mut output)
                .map(|_| ())
                .map_err(|error| Problem::filesystem("write", &destination, &error))
        }
    }
}

/// Sets owner and mode of every directory last, deepest first, so a read-only one does
/// not stop its children.
fn finish_directories(unpack: &Unpack<'_>, seen: &Seen) -> Result<(), Problem> {
    let mut directories = ordered_directories(seen);
    directories.sort_by_key(|(node, _)| std::cmp::Reverse(seen.names.depth(*node)));
    for (node, mode) in directories {
        let path = seen.names.path(node);
        let destination = unpack.shown.join(&path);
        let directory = unpack
            .staging
            .beneath(&path)
            .map_err(|error| Problem::filesystem("open", &destination, &error))?;
        directory
            .set_own_owner_and_mode(mode, unpack.uid, unpack.gid)
            .map_err(|error| Problem::filesystem("set owner and mode of", &destination, &error))?;
    }
    Ok(())
}

/// Every directory of the unpacked tree once, with its mode: those the archive
/// declares (the root's, which alone may be declared twice, set in turn: the last
/// declaration's mode stays, as with tar), then the root, the declared ones not yet
/// listed and the implicit ones at 0755. Looked up in a set, not searched in the list
/// (an archive of 20,000 directories made 400 million comparisons).
fn ordered_directories(seen: &Seen) -> Vec<(usize, u32)> {
    let mut known: HashSet<usize> = HashSet::with_capacity(seen.directories.len());
    let mut directories = Vec::with_capacity(seen.directories.len() + 1);
    for (node, mode) in &seen.directories {
        // only the root (`./`) can be declared twice; every declaration is kept
        directories.push((*node, *mode));
        known.insert(*node);
    }
    let mut add = |node: usize, mode: u32, directories: &mut Vec<(usize, u32)>| {
        if known.insert(node) {
            directories.push((node, mode));
        }
    };
    add(ROOT, 0o755, &mut directories);
    for (node, _) in seen
        .kinds
        .iter()
        .filter(|(_, kind)| **kind == EntryKind::Directory)
    {
        add(*node, 0o755, &mut directories);
    }
    for implicit in implicit_directories(seen) {
        add(implicit, 0o755, &mut directories);
    }
    directories
}

/// Unpacks the artifact beside the node path `node_path` and swaps it in: the new tree
/// replaces the old one in a single rename (`RENAME_EXCHANGE` where the filesystem has
/// it), and the old tree is removed afterwards. Everything happens in the target's
/// parent, opened once through the confined layer.
pub fn apply(
    host: &Host,
    artifacts: &Path,
    artifact: &str,
    expected_digest: &str,
    node_path: &str,
    uid: u32,
    gid: u32,
) -> Result<(), Problem> {
    let host_path = host.path(node_path);
    let (parent, name) = host
        .fs()
        .parent(node_path)
        .map_err(|error| Problem::filesystem("open the directory of", &host_path, &error))?;
    parent
        .may_hold(uid)
        .map_err(|error| Problem::filesystem("unpack into", &host_path, &error))?;
    let staging_name = staging_name_for(&name);
    // what a killed run leaves: the staging tree, or the old tree moved aside, the
    // shape's owner's once its directories were finished
    let shape = ScratchOwner {
        uid,
        gid,
        mode: None,
    };
    let staging_path = host_path.with_file_name(&staging_name);
    parent
        .remove_scratch_tree(&staging_name, Some(shape))
        .map_err(|error| Problem::filesystem("remove", &staging_path, &error))?;
    parent
        .create_new_directory(&staging_name, 0o700)
        .map_err(|error| Problem::filesystem("create the directory", &staging_path, &error))?;
    let staging = parent
        .open_directory(&staging_name)
        .map_err(|error| Problem::filesystem("open the directory", &staging_path, &error))?;
    // what was opened is what mesh just made (root's, empty), not something renamed to
    // the name in between; from here on the tree is reached through this descriptor
    let made = staging
        .own_entry()
        .and_then(|entry| Ok(entry.uid == 0 && staging.names()?.is_empty()))
        .map_err(|error| Problem::filesystem("inspect", &staging_path, &error))?;
    if !made {
        return Err(Problem::filesystem(
            "unpack into",
            &staging_path,
            &confined::foreign_scratch(&staging_name),
        ));
    }
    let (file, artifact_path) = open_artifact(host, artifacts, artifact)?;
    let unpack = Unpack {
        staging: &staging,
        shown: &staging_path,
        uid,
        gid,
    };
    let found = match walk(io::BufReader::new(file), Some(&unpack)) {
        Ok(found) => found,
        Err(problem) => {
            discard(&parent, &staging, &staging_name, &staging_path, (uid, gid))?;
            return Err(problem);
        }
    };
    if found != expected_digest {
        discard(&parent, &staging, &staging_name, &staging_path, (uid, gid))?;
        return Err(digest_mismatch(&artifact_path, expected_digest));
    }
    // the staging directory is beside the target, on the same filesystem
    let mut flusher = Flusher::new();
    flusher
        .touched(&parent)
        .and_then(|()| flusher.flush())
        .map_err(|error| Problem::filesystem("flush", &staging_path, &error))?;
    swap_in(&parent, &name, &staging_name, &host_path, shape)?;
    flusher
        .flush()
        .map_err(|error| Problem::filesystem("flush", &host_path, &error))
}

/// Puts the staging tree at `name` in `parent` and removes the old tree, if any.
fn swap_in(
    parent: &Directory,
    name: &str,
    staging_name: &str,
    host_path: &Path,
    shape: ScratchOwner,
) -> Result<(), Problem> {
    let staging_path = host_path.with_file_name(staging_name);
    let exists = parent
        .entry(name)
        .map_err(|error| Problem::filesystem("inspect", host_path, &error))?
        .is_some();
    if !exists {
        return parent
            .rename(staging_name, name)
            .map_err(|error| Problem::filesystem("swap in", host_path, &error));
    }
    match parent.exchange(staging_name, name) {
        Ok(()) => {}
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::OPNOTSUPP) => {
            // no RENAME_EXCHANGE here: move the old tree aside, then the new one in
            let aside = aside_name_for(name);
            let aside_path = host_path.with_file_name(&aside);
            parent
                .remove_scratch_tree(&aside, Some(shape))
                .map_err(|error| Problem::filesystem("remove", &aside_path, &error))?;
            parent
                .rename(name, &aside)
                .map_err(|error| Problem::filesystem("move aside", host_path, &error))?;
            parent
                .rename(staging_name, name)
                .map_err(|error| Problem::filesystem("swap in", host_path, &error))?;
            parent
                .rename(&aside, staging_name)
                .map_err(|error| Problem::filesystem("move aside", &aside_path, &error))?;
        }
        Err(error) => {
            return Err(Problem::filesystem(
                "swap in",
                host_path,
                &io::Error::from(error),
            ));
        }
    }
    // the old tree is now at the staging name: opened without following a link, it
    // is removed through that descriptor. Where someone else may write in the parent,
    // they could have renamed any directory of theirs (or root's) to that name since
    // the exchange, so it is removed only with the shape's owner and group
    let old = parent
        .open_directory(staging_name)
        .map_err(|error| Problem::filesystem("open", &staging_path, &error))?;
    if parent
        .others_may_write()
        .map_err(|error| Problem::filesystem("inspect", &staging_path, &error))?
    {
        let found = old
            .own_entry()
            .map_err(|error| Problem::filesystem("inspect", &staging_path, &error))?;
        if (found.uid, found.gid) != (shape.uid, shape.gid) {
            return Err(Problem::filesystem(
                "remove",
                &staging_path,
                &confined::foreign_scratch(staging_name),
            ));
        }
    }
    // mesh gives every directory of an archive the owner and group of its top
    let found = old
        .own_entry()
        .map_err(|error| Problem::filesystem("inspect", &staging_path, &error))?;
    discard(
        parent,
        &old,
        staging_name,
        &staging_path,
        (found.uid, found.gid),
    )
}

/// Removes the tree `tree` (held open) at `name` in `parent`: emptied through its
/// descriptor ([`Directory::empty_tree`]), then `unlinkat(AT_REMOVEDIR)` by name, which
/// fails on a non-empty directory someone swapped in.
fn discard(
    parent: &Directory,
    tree: &Directory,
    name: &str,
    shown: &Path,
    owner: (u32, u32),
) -> Result<(), Problem> {
    tree.empty_tree(owner)
        .and_then(|()| parent.remove_emptied_directory(name))
        .map_err(|error| Problem::filesystem("remove", shown, &error))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An archive of the directory `a`, the symlinks `links` (path, target; long
    /// names and targets as GNU tar writes them) and a file at `path`, if given.
    fn archive_of(links: &[(&str, &str)], path: Option<&str>) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        builder
            .append_data(&mut header, "a/", std::io::empty())
            .expect("directory");
        for (link, target) in links {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            builder
                .append_link(&mut header, link, target)
                .expect("link");
        }
        if let Some(path) = path {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(2);
            builder
                .append_data(&mut header, path, &b"hi"[..])
                .expect("file");
        }
        builder.into_inner().expect("archive")
    }

    /// An archive of the directory `a` and one link `l` to `target`, or of one file
    /// at `path`.
    fn archive_with(link: Option<&str>, path: Option<&str>) -> Vec<u8> {
        let links: Vec<(&str, &str)> = link.map(|target| ("l", target)).into_iter().collect();
        archive_of(&links, path)
    }

    /// A link whose target, or an entry whose path, is longer than the kernel takes
    /// is refused as the archive is checked: no such thing can be made, and following
    /// a link of 80,000 names took the check minutes (red team).
    #[test]
    fn a_link_target_or_a_path_longer_than_the_kernel_takes_is_refused() {
        let within = "a/".repeat(1000) + "x";
        assert!(walk(&archive_with(Some(&within), None)[..], None).is_ok());
        let beyond = "a/".repeat(2048) + "x";
        let refused =
            walk(&archive_with(Some(&beyond), None)[..], None).expect_err("too long a target");
        assert!(
            refused.message.contains("more than 4095 bytes"),
            "{refused:?}"
        );
        let deep = "b/".repeat(2048) + "file";
        let refused =
            walk(&archive_with(None, Some(&deep))[..], None).expect_err("too long a path");
        assert!(
            refused.message.contains("more than 4095 bytes"),
            "{refused:?}"
        );
    }

    /// A link is followed through names the archive does not have and back out of
    /// them with `..`, as the kernel would: it stays inside or leaves by where it
    /// ends, not by the names on the way.
    #[test]
    fn links_are_followed_through_names_the_archive_does_not_have() {
        let inside = [
            ("a/l", "nothere/deeper/../../../b"),
            ("a/m", "l/../a"),
            ("a/n", "../a/./nothere/.."),
        ];
        for link in inside {
            assert!(
                walk(&archive_of(&[link], None)[..], None).is_ok(),
                "{link:?} stays inside"
            );
        }
        // each stays inside read lexically, and leaves through the archive's own
        // link `up`, which is `.`
        let leaving = [
            ("a/l", "up/nothere/../../.."),
            ("a/l", "up/nothere/deeper/../../../.."),
            ("a/esc", "up/up/../.."),
        ];
        for link in leaving {
            let links = [("a/up", "."), link];
            let refused = walk(&archive_of(&links, None)[..], None).expect_err("leaves");
            assert!(
                refused.message.contains("leaves the archive"),
                "{refused:?}"
            );
        }
    }

    /// A path that is not UTF-8 is refused as the archive is checked, before
    /// anything changes (red team: `\xff/a` passed the check, then failed halfway
    /// through unpacking, as the tree is made one UTF-8 name at a time).
    #[test]
    fn a_path_or_link_target_that_is_not_utf8_is_refused_as_it_is_checked() {
        use std::os::unix::ffi::OsStrExt;
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(1);
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(b"\xff/a"));
        builder
            .append_data(&mut header, path, &b"x"[..])
            .expect("file");
        let archive = builder.into_inner().expect("archive");
        let refused = walk(&archive[..], None).expect_err("not UTF-8");
        assert!(refused.message.contains("not UTF-8"), "{refused:?}");
        let target = std::ffi::OsStr::from_bytes(b"a/\xfe");
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_mode(0o777);
        header.set_size(0);
        builder.append_link(&mut header, "l", target).expect("link");
        let archive = builder.into_inner().expect("archive");
        let refused = walk(&archive[..], None).expect_err("not UTF-8");
        assert!(refused.message.contains("not UTF-8"), "{refused:?}");
    }

    /// The process's peak resident memory since it was last reset, in bytes.
    fn peak_resident() -> usize {
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        let line = status
            .lines()
            .find(|line| line.starts_with("VmHWM:"))
            .expect("VmHWM");
        let kib: usize = line
            .split_whitespace()
            .nth(1)
            .and_then(|kib| kib.parse().ok())
            .expect("a number of KiB");
        kib * 1024
    }

    /// An archive of many files each 200 directories deep under a top directory of
    /// its own (paths of about 4,000 bytes) is checked in memory in proportion to
    /// its size: keeping every ancestor of every entry whole took 400 MB for this
    /// 5.6 MB archive (a red team's 8.5 MB one took 1 GB).
    #[test]
    fn deep_long_paths_are_kept_in_memory_in_proportion_to_the_archive() {
        let mut builder = tar::Builder::new(Vec::new());
        let level = "n".repeat(19);
        for index in 0..1000 {
            let path = format!("t{index:018}/") + &format!("{level}/").repeat(199) + "f";
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(0o644);
            header.set_size(1);
            builder
                .append_data(&mut header, &path, &b"x"[..])
                .expect("file");
        }
        let archive = builder.into_inner().expect("archive");
        assert!(archive.len() < 6 << 20, "{}", archive.len());
        // the peak is the process's: reset it (Linux), then walk
        std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak");
        let before = peak_resident();
        walk(&archive[..], None).expect("a plain archive");
        let grown = peak_resident().saturating_sub(before);
        assert!(
            grown < 96 << 20,
            "checking a {} byte archive took {grown} bytes more",
            archive.len()
        );
    }

    #[test]
    fn every_directory_is_finished_once_with_its_declared_mode() {
        let mut seen = Seen::default();
        seen.directories.push((ROOT, 0o750));
        for index in 0..20_000 {
            let node = seen.names.intern(Path::new(&format!("d{index}")));
            seen.directories.push((node, 0o700));
            seen.kinds.insert(node, EntryKind::Directory);
        }
        let file = seen.names.intern(Path::new("implicit/deeper/file"));
        seen.kinds.insert(file, EntryKind::File);
        let directories = ordered_directories(&seen);
        assert_eq!(directories.len(), 20_003);
        let modes: HashMap<PathBuf, u32> = directories
            .iter()
            .map(|(node, mode)| (seen.names.path(*node), *mode))
            .collect();
        assert_eq!(modes.len(), 20_003, "each directory once");
        assert_eq!(modes.get(Path::new("")), Some(&0o750));
        assert_eq!(modes.get(Path::new("d19999")), Some(&0o700));
        assert_eq!(modes.get(Path::new("implicit")), Some(&0o755));
        assert_eq!(modes.get(Path::new("implicit/deeper")), Some(&0o755));
    }
}
