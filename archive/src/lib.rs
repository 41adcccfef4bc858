//! Artifacts: a module's directory built into a reproducible archive (uncompressed
//! ustar: entries sorted by path, times zero, owner and group 0 with no names,
//! modes normalised, no pax records), named by the sha256 of its bytes. The same
//! directory gives byte-identical archives on any machine, whatever the files'
//! mtimes, owners or the umask they were made with. A crate of its own, because both
//! the compiler (`meshc artifacts build`, the plans' artifact digests) and the builder
//! (`mesh-build`) make these archives and must make them byte for byte alike; it
//! depends on `plan` only (for the digest), never on the compiler or the transport.
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

/// Builds the archive of `directory`.
pub fn build(directory: &Path) -> Result<Built, String> {
    use std::os::unix::fs::PermissionsExt;
    let mut entries = Vec::new();
    collect(directory, directory, &mut entries)?;
    entries.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    let mut builder = tar::Builder::new(Vec::new());
    for relative in entries {
        let path = directory.join(&relative);
        let metadata =
            std::fs::symlink_metadata(&path).map_err(|e| format!("`{}`: {e}", path.display()))?;
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
        } else if file_type.is_symlink() {
            let target =
                std::fs::read_link(&path).map_err(|e| format!("`{}`: {e}", path.display()))?;
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_mode(0o777);
            header.set_size(0);
            header
                .set_path(&name)
                .map_err(|e| format!("`{name}`: {e}"))?;
            header
                .set_link_name(&target)
                .map_err(|e| format!("`{name}` -> `{}`: {e}", target.display()))?;
            header.set_cksum();
            builder
                .append(&header, std::io::empty())
                .map_err(|e| e.to_string())?;
        } else if file_type.is_file() {
            let content = std::fs::read(&path).map_err(|e| format!("`{}`: {e}", path.display()))?;
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

/// Writes `bytes` to `path` through a temp file beside it that is synced and renamed,
/// then syncs the directory, so `path` is either absent or complete after a crash.
pub fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let directory = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = directory.join(format!(".{name}.{}.new", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&temporary)?;
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
