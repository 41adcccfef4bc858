//! Artifacts: a module's directory built into a reproducible archive (uncompressed
//! ustar: entries sorted by path, times zero, owner and group 0 with no names,
//! modes normalised, no pax records), named by the sha256 of its bytes. The same
//! directory gives byte-identical archives on any machine, whatever the files'
//! mtimes, owners or the umask they were made with. A crate of its own, because both
//! the compiler (`meshc artifacts build`, the plans' artifact digests) and the builder
//! (`mesh-build`) make these archives and must make them byte for byte alike; it
//! depends on `plan` only (for the digest and the escaping of names), never on the
//! compiler or the transport. A link whose target leaves the directory (resolved
//! against the directory's own links, not lexically) is refused before anything is
//! packed.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// An artifact's archive bytes and digest.
pub struct Built {
    pub bytes: Vec<u8>,
    pub digest: String,
}

impl Built {
    /// The file name the node's artifact store keeps it under.
    pub fn file_name(&self) -> String {
        file_name(&self.digest)
    }
}

/// `sha256:HEX` -> `sha256-HEX.tar`.
pub fn file_name(digest: &str) -> String {
    format!("{}.tar", digest.replacen(':', "-", 1))
}

fn collect(root: &Path, directory: &Path, entries: &mut Vec<PathBuf>) -> Result<(), String> {
    let listing =
        std::fs::read_dir(directory).map_err(|e| format!("`{}`: {e}", directory.display()))?;
    for entry in listing {
        let entry = entry.map_err(|e| format!("`{}`: {e}", directory.display()))?;
        let path = entry.path();
        let relative = path
            .strip_prefix(root)
            .map_err(|e| e.to_string())?
            .to_path_buf();
        let file_type = entry
            .file_type()
            .map_err(|e| format!("`{}`: {e}", path.display()))?;
        entries.push(relative);
        if file_type.is_dir() {
            collect(root, &path, entries)?;
        }
    }
    Ok(())
}

/// What one entry of an archive's tree is, for [`link_leaving_tree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeEntryKind<'a> {
    Directory,
    File,
    Symlink { target: &'a Path },
}

/// One entry of an archive's tree: its path relative to the tree's root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeEntry<'a> {
    pub path: &'a Path,
    pub kind: TreeEntryKind<'a>,
}

/// A link whose target, resolved inside the tree, leaves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EscapingLink {
    /// The link (or, for a path that is not plain, the entry), relative to the root.
    pub path: PathBuf,
    pub target: PathBuf,
    pub reason: &'static str,
}

impl std::fmt::Display for EscapingLink {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "the link `{}` -> `{}` {}",
            plan::display::escaped(&self.path.to_string_lossy()),
            plan::display::escaped(&self.target.to_string_lossy()),
            self.reason
        )
    }
}

/// Links followed while resolving one target before it counts as a loop (the
/// kernel's own limit).
const MAXIMUM_LINKS_FOLLOWED: u32 = 40;

type Components<'a> = Vec<&'a std::ffi::OsStr>;

/// The plain components of an entry's path (`.` skipped); `None` for `..`, `/` or
/// an empty path.
fn plain_components(path: &Path) -> Option<Components<'_>> {
    let mut components = Vec::new();
    for component in path.components() {
        match component {
            std::path::Component::Normal(part) => components.push(part),
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    (!components.is_empty()).then_some(components)
}

/// Resolves `target`, written in the directory `start`, against the tree as the
/// kernel would: every component that is a link of the tree is followed, so
/// `up -> .` then `esc -> up/up/../..` is seen to leave it.
fn resolve_in_tree<'a>(
    tree: &std::collections::HashMap<Components<'a>, TreeEntryKind<'a>>,
    start: Components<'a>,
    target: &'a Path,
    followed: &mut u32,
) -> Result<Components<'a>, &'static str> {
    if target.as_os_str().is_empty() {
        return Err("has an empty target");
    }
    let mut current = start;
    for component in target.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if current.pop().is_none() {
                    return Err("leads out of the archive's directory");
                }
            }
            std::path::Component::Normal(part) => {
                current.push(part);
                if let Some(TreeEntryKind::Symlink { target }) = tree.get(&current) {
                    *followed += 1;
                    if *followed > MAXIMUM_LINKS_FOLLOWED {
                        return Err("is part of a loop of links");
                    }
                    current.pop();
                    current = resolve_in_tree(tree, current, target, followed)?;
                }
            }
            std::path::Component::RootDir | std::path::Component::Prefix(_) => {
                return Err("is absolute: a link of an archive points inside it");
            }
        }
    }
    Ok(current)
}

/// The first link (in entry order) whose target, resolved against the tree's own
/// entries and links, leaves the tree; or an entry whose path is not plain. Pure:
/// the packer (`build`) and the unpacker can both run it over their entry list.
pub fn link_leaving_tree(entries: &[TreeEntry<'_>]) -> Option<EscapingLink> {
    let mut tree = std::collections::HashMap::with_capacity(entries.len());
    for entry in entries {
        let Some(components) = plain_components(entry.path) else {
            return Some(EscapingLink {
                path: entry.path.to_path_buf(),
                target: PathBuf::new(),
                reason: "has a path that is not plain and relative",
            });
        };
        tree.insert(components, entry.kind);
    }
    for entry in entries {
        let TreeEntryKind::Symlink { target } = entry.kind else {
            continue;
        };
        let mut start = plain_components(entry.path).unwrap_or_default();
        start.pop();
        let mut followed = 0;
        if let Err(reason) = resolve_in_tree(&tree, start, target, &mut followed) {
            return Some(EscapingLink {
                path: entry.path.to_path_buf(),
                target: target.to_path_buf(),
                reason,
            });
        }
    }
    None
}

/// Why a directory could not be archived.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// A link of the directory points outside it.
    EscapingLink(EscapingLink),
    /// Anything else (unreadable, a special file, a name tar cannot hold).
    Other(String),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::EscapingLink(link) => write!(formatter, "{link}"),
            BuildError::Other(reason) => formatter.write_str(reason),
        }
    }
}

/// One entry found in the directory, before it is packed.
struct Found {
    relative: PathBuf,
    metadata: std::fs::Metadata,
    target: Option<PathBuf>,
}

/// The directory's entries in archive order, with their metadata and link targets.
fn found_entries(directory: &Path) -> Result<Vec<Found>, String> {
    let mut entries = Vec::new();
    collect(directory, directory, &mut entries)?;
    entries.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    let mut found = Vec::with_capacity(entries.len());
    for relative in entries {
        let path = directory.join(&relative);
        let metadata =
            std::fs::symlink_metadata(&path).map_err(|e| format!("`{}`: {e}", path.display()))?;
        let target = if metadata.file_type().is_symlink() {
            Some(std::fs::read_link(&path).map_err(|e| format!("`{}`: {e}", path.display()))?)
        } else {
            None
        };
        found.push(Found {
            relative,
            metadata,
            target,
        });
    }
    Ok(found)
}

/// Builds the archive of `directory`.
pub fn build(directory: &Path) -> Result<Built, String> {
    build_checked(directory).map_err(|error| error.to_string())
}

/// Builds the archive of `directory`, refusing a link that leaves it
/// ([`link_leaving_tree`]) before anything is packed.
pub fn build_checked(directory: &Path) -> Result<Built, BuildError> {
    let found = found_entries(directory).map_err(BuildError::Other)?;
    let tree: Vec<TreeEntry<'_>> = found
        .iter()
        .map(|entry| TreeEntry {
            path: &entry.relative,
            kind: match &entry.target {
                Some(target) => TreeEntryKind::Symlink { target },
                None if entry.metadata.is_dir() => TreeEntryKind::Directory,
                None => TreeEntryKind::File,
            },
        })
        .collect();
    if let Some(escaping) = link_leaving_tree(&tree) {
        return Err(BuildError::EscapingLink(escaping));
    }
    pack(directory, &found).map_err(BuildError::Other)
}

/// The most an artifact directory's files may hold in all: its archive is made in
/// memory.
pub const PACK_LIMIT: u64 = 2 << 30;

/// The bytes of the file at `path`, of which there must be at most `size` (it was
/// found with that many; one that grew is refused).
fn read_at_most(path: &Path, size: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut content = Vec::new();
    std::fs::File::open(path)?
        .take(size.saturating_add(1))
        .read_to_end(&mut content)?;
    if content.len() as u64 > size {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it grew while the artifact was made",
        ));
    }
    Ok(content)
}

/// The reproducible archive of the entries found.
fn pack(directory: &Path, found: &[Found]) -> Result<Built, String> {
    pack_within(directory, found, PACK_LIMIT)
}

/// [`pack`], refusing before anything is read a directory whose files hold more
/// than `limit` bytes in all.
fn pack_within(directory: &Path, found: &[Found], limit: u64) -> Result<Built, String> {
    use std::os::unix::fs::PermissionsExt;
    // the archive is made in memory: a directory of more than that is refused before
    // anything is read (a sparse file of 20 GB would have the kernel kill the build)
    let total = found
        .iter()
        .filter(|entry| entry.target.is_none() && entry.metadata.is_file())
        .fold(0u64, |total, entry| {
            total.saturating_add(entry.metadata.len())
        });
    if total > limit {
        return Err(format!(
            "`{}` holds {total} bytes of files, more than the {limit} an artifact may hold",
            directory.display()
        ));
    }
    let mut builder = tar::Builder::new(Vec::new());
    for entry in found {
        let relative = &entry.relative;
        let metadata = &entry.metadata;
        let path = directory.join(relative);
        let mut header = tar::Header::new_ustar();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let _ = header.set_username("");
        let _ = header.set_groupname("");
        let file_type = metadata.file_type();
        let name = relative.to_string_lossy().into_owned();
        if file_type.is_dir() {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_mode(0o755);
            header.set_size(0);
            header
                .set_path(format!("{name}/"))
                .map_err(|e| format!("`{name}`: {e}"))?;
            header.set_cksum();
            builder
                .append(&header, std::io::empty())
                .map_err(|e| e.to_string())?;
        } else if let Some(target) = &entry.target {
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            header
                .set_path(&name)
                .map_err(|e| format!("`{name}`: {e}"))?;
            header
                .set_link_name(target)
                .map_err(|e| format!("`{name}` -> `{}`: {e}", target.display()))?;
            header.set_cksum();
            builder
                .append(&header, std::io::empty())
                .map_err(|e| e.to_string())?;
        } else if file_type.is_file() {
            // no more than the size it was found with: a file that grew since is
            // not read past it
            let content = read_at_most(&path, metadata.len())
                .map_err(|e| format!("`{}`: {e}", path.display()))?;
            let executable = metadata.permissions().mode() & 0o111 != 0;
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if executable { 0o755 } else { 0o644 });
            header.set_size(content.len() as u64);
            header
                .set_path(&name)
                .map_err(|e| format!("`{name}`: {e}"))?;
            header.set_cksum();
            builder
                .append(&header, content.as_slice())
                .map_err(|e| e.to_string())?;
        } else {
            return Err(format!(
                "`{}` is neither a file, a directory nor a link",
                path.display()
            ));
        }
    }
    let bytes = builder.into_inner().map_err(|e| e.to_string())?;
    let digest = plan::sha256_digest(&bytes);
    Ok(Built { bytes, digest })
}

/// Stores an archive content-addressed in `store` (written once, atomically and
/// durably: temp file, fsync, rename, fsync of the directory).
pub fn store(store: &Path, built: &Built) -> Result<PathBuf, String> {
    std::fs::create_dir_all(store).map_err(|e| format!("`{}`: {e}", store.display()))?;
    let path = store.join(built.file_name());
    if std::fs::read(&path).is_ok_and(|existing| plan::sha256_digest(&existing) == built.digest) {
        return Ok(path);
    }
    write_durably(&path, &built.bytes).map_err(|e| format!("`{}`: {e}", path.display()))?;
    Ok(path)
}

/// Writes `bytes` to `path` through a new temp file beside it that is synced and
/// renamed (replacing a link at `path` rather than writing through it), then syncs
/// the directory, so `path` is either absent or complete after a crash.
pub fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let directory = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = directory.join(format!(".{name}.{}.new", std::process::id()));
    let written = (|| {
        // a new file only (O_EXCL): a link planted at the temporary name is removed,
        // never followed
        let create = || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temporary)
        };
        let mut file = match create() {
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                std::fs::remove_file(&temporary)?;
                create()?
            }
            other => other?,
        };
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)?;
        std::fs::File::open(directory)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An artifact is packed in memory: a directory whose files hold more than the
    /// limit is refused from their sizes, before any is read (a sparse file of 20 GB
    /// had the kernel kill the build), and one within it is packed.
    #[test]
    fn a_directory_over_the_limit_is_refused_before_it_is_read() {
        let directory = tempfile::tempdir().expect("tempdir");
        std::fs::write(directory.path().join("a"), "12345").expect("write");
        std::fs::write(directory.path().join("b"), "678901").expect("write");
        let found = found_entries(directory.path()).expect("found");
        let refused = pack_within(directory.path(), &found, 10)
            .err()
            .expect("refused");
        assert!(
            refused.contains("holds 11 bytes of files, more than the 10"),
            "{refused}"
        );
        assert!(pack_within(directory.path(), &found, 11).is_ok());
    }

    fn link<'a>(path: &'a str, target: &'a str) -> TreeEntry<'a> {
        TreeEntry {
            path: Path::new(path),
            kind: TreeEntryKind::Symlink {
                target: Path::new(target),
            },
        }
    }

    fn directory(path: &str) -> TreeEntry<'_> {
        TreeEntry {
            path: Path::new(path),
            kind: TreeEntryKind::Directory,
        }
    }

    #[test]
    fn archive_link_escaping_through_link_refused() {
        // lexically `esc` stays inside (three names, three `..` back up); through
        // `up -> .` every `up` is the root, so it leaves by three levels
        let entries = [link("esc", "up/up/up/../../.."), link("up", ".")];
        let escaping = link_leaving_tree(&entries).expect("refused");
        assert_eq!(escaping.path, Path::new("esc"));
        assert_eq!(escaping.reason, "leads out of the archive's directory");
    }

    #[test]
    fn links_that_stay_inside_pass_and_plain_escapes_are_refused() {
        let inside = [
            directory("a"),
            directory("a/b"),
            link("a/b/c", "../../d"),
            link("d", "a/b"),
            link("e", "d/../.."),
            link("dangling", "nowhere/x"),
        ];
        // `e` -> `d/../..`: `d` is `a/b`, `..` is `a`, `..` is the root: inside
        assert_eq!(link_leaving_tree(&inside), None);
        for (path, target) in [("x", "../y"), ("x", "/etc"), ("a/x", "../../y"), ("x", "")] {
            let entries = [directory("a"), link(path, target)];
            assert!(link_leaving_tree(&entries).is_some(), "{path} -> {target}");
        }
        let inner = [directory("a"), link("a/up", ".."), link("a/x", "up/..")];
        assert_eq!(
            link_leaving_tree(&inner).map(|link| link.path),
            Some(PathBuf::from("a/x"))
        );
    }

    #[test]
    fn a_loop_of_links_is_refused_not_followed_forever() {
        let entries = [link("a", "b/x"), link("b", "a")];
        let escaping = link_leaving_tree(&entries).expect("refused");
        assert_eq!(escaping.reason, "is part of a loop of links");
    }

    #[test]
    fn a_link_planted_at_the_temporary_name_is_not_written_through() {
        let directory = tempfile::tempdir().unwrap();
        let victim = directory.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let path = directory.path().join("archive.tar");
        let temporary = directory
            .path()
            .join(format!(".archive.tar.{}.new", std::process::id()));
        std::os::unix::fs::symlink(&victim, &temporary).unwrap();
        write_durably(&path, b"archive").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(&path).unwrap(), b"archive");
    }

    #[test]
    fn an_entry_path_that_is_not_plain_is_refused() {
        let entries = [directory("../x")];
        assert!(link_leaving_tree(&entries).is_some());
    }
}
