//! Files beneath a directory handle, never through a symbolic link: what `meshc`
//! writes into the repository's `secrets/` and into the build output `OUT/`. Every
//! path is resolved by the kernel from an open directory with `openat2`
//! (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so a planted link, or `..`, cannot lead
//! a read, write or removal out of it; the check is the open itself. Files are
//! replaced by a new file and `renameat`, which replaces a planted link rather than
//! writing through it. Must not use path-based `std::fs` calls below the base.
//! Where `openat2` does not exist (a kernel before 5.6, or a tool that runs the
//! program, such as valgrind), the same resolution is made one component at a time,
//! each opened from the last with `O_NOFOLLOW`: the paths here go down only.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

/// Who may read a file [`Beneath::write`] puts in place: decides its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readers {
    /// Its owner only: mode 0600, whatever the file it replaces allowed (sealed
    /// secrets, plans, the build cache, archives).
    Owner,
    /// Whoever the file it replaces let read it: that file's permission bits are
    /// kept, as editors keep them; a new file is 0644 less the umask. For files the
    /// operator commits beside the modules (`mesh.lock`), which hold nothing secret.
    AsBefore,
}

/// A directory opened once; everything below it is reached through it.
#[derive(Debug)]
pub struct Beneath {
    directory: OwnedFd,
    /// Where it is, for messages only.
    path: PathBuf,
}

/// Resolution that stays below the directory and follows no link at all.
fn resolve_flags() -> ResolveFlags {
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
}

/// The kernel refused a symbolic link (or a way out) on a path: the message names it.
#[derive(Debug)]
struct LinkRefused(String);

impl std::fmt::Display for LinkRefused {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for LinkRefused {}

/// Is this error the kernel refusing a symbolic link (or a way out) on the path?
pub fn is_link_refusal(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<LinkRefused>())
        || matches!(
            rustix::io::Errno::from_io_error(error),
            Some(rustix::io::Errno::LOOP | rustix::io::Errno::XDEV)
        )
}

fn explain(path: &Path, errno: rustix::io::Errno) -> io::Error {
    let error = io::Error::from(errno);
    if matches!(errno, rustix::io::Errno::LOOP | rustix::io::Errno::XDEV) {
        let message = format!(
            "`{}` is a symbolic link or passes through one ({error})",
            path.display()
        );
        io::Error::new(error.kind(), LinkRefused(message))
    } else {
        error
    }
}

/// Opens `relative` (plain components only, see [`downward`]) below `base` with
/// `flags`, following no link and never leaving `base`: `openat2` with
/// [`resolve_flags`], or where the kernel has none, [`open_each`].
fn open_beneath(base: &OwnedFd, relative: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    match rustix::fs::openat2(base, relative, flags, Mode::empty(), resolve_flags()) {
        Err(rustix::io::Errno::NOSYS) => open_each(base, relative, flags),
        opened => opened,
    }
}

/// What `openat2` with [`resolve_flags`] does, one component of `relative` at a
/// time: each directory on the way is opened from the one before with `O_NOFOLLOW`,
/// then the last component with `flags` and `O_NOFOLLOW`. A link anywhere is
/// refused with `ELOOP`, as `RESOLVE_NO_SYMLINKS` refuses it; `relative` has no
/// `..` and is not absolute, so nothing leads above `base`.
fn open_each(base: &OwnedFd, relative: &Path, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    let components: Vec<&std::ffi::OsStr> = relative
        .components()
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(rustix::io::Errno::INVAL),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, on_the_way)) = components.split_last() else {
        return Err(rustix::io::Errno::INVAL);
    };
    // O_PATH: a directory on the way needs search permission only, as in `openat2`
    let through = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut current: Option<OwnedFd> = None;
    for name in on_the_way {
        let parent = current.as_ref().unwrap_or(base);
        let opened = rustix::fs::openat(parent, *name, through, Mode::empty())
            .map_err(|error| link_as_loop(parent, name, error))?;
        current = Some(opened);
    }
    let parent = current.as_ref().unwrap_or(base);
    rustix::fs::openat(parent, *last, flags | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|error| link_as_loop(parent, last, error))
}

/// `O_NOFOLLOW` with `O_DIRECTORY` refuses a link with `ENOTDIR`: said as `ELOOP`,
/// as `openat2` says it, when `name` is a link.
fn link_as_loop(
    parent: &OwnedFd,
    name: &std::ffi::OsStr,
    error: rustix::io::Errno,
) -> rustix::io::Errno {
    let is_link = || {
        rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|stat| {
            rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Symlink
        })
    };
    if error == rustix::io::Errno::NOTDIR && is_link() {
        rustix::io::Errno::LOOP
    } else {
        error
    }
}

/// The most mesh reads of one file beneath a directory (a plan, a manifest, the
/// build cache, a sealed secret, the lock): far more than any it writes, and a
/// bound on what a sparse or hostile file can make it hold in memory.
pub const READ_LIMIT: u64 = 1 << 30;

/// Refuses `..`, `/` and empty paths: everything here is relative and goes down.
fn downward(relative: &Path) -> io::Result<()> {
    let plain = relative
        .components()
        .all(|component| matches!(component, Component::Normal(_)));
    if plain && relative.components().next().is_some() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a plain relative path", relative.display()),
        ))
    }
}

/// A regular file's device, inode, size, and modification and change times in
/// nanoseconds: a file written again, or replaced, has another stamp (its change
/// time moves whatever else is restored). Two stamps are equal only when the file
/// was not touched between them, unless it was touched within the clock tick of
/// the first (see [`Stamp::settled_before`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp(pub u64, pub u64, pub u64, pub i128, pub i128);

/// Seconds and nanoseconds as nanoseconds (an `i128` holds any file time).
fn nanoseconds(seconds: i64, nanoseconds: i64) -> i128 {
    i128::from(seconds) * 1_000_000_000 + i128::from(nanoseconds)
}

impl Stamp {
    fn of(stat: &rustix::fs::Stat) -> Option<Stamp> {
        let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
        (kind == rustix::fs::FileType::RegularFile).then(|| {
            Stamp(
                stat.st_dev,
                stat.st_ino,
                stat.st_size as u64,
                nanoseconds(stat.st_mtime, stat.st_mtime_nsec as i64),
                nanoseconds(stat.st_ctime, stat.st_ctime_nsec as i64),
            )
        })
    }

    /// The stamp of what `metadata` (an `lstat`) describes, if a regular file.
    pub fn of_metadata(metadata: &std::fs::Metadata) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        metadata.file_type().is_file().then(|| {
            Stamp(
                metadata.dev(),
                metadata.ino(),
                metadata.size(),
                nanoseconds(metadata.mtime(), metadata.mtime_nsec()),
                nanoseconds(metadata.ctime(), metadata.ctime_nsec()),
            )
        })
    }

    /// The stamp's times are strictly before `instant` (nanoseconds, the same
    /// clock): a file changed again within the tick its stamp was taken in could
    /// keep the stamp, so a stamp is trusted only when it is older than a later
    /// write's time (the build cache's own), as git trusts its index.
    pub fn settled_before(&self, instant: i128) -> bool {
        self.3 < instant && self.4 < instant
    }

    /// The modification time, in nanoseconds.
    pub fn modified(&self) -> i128 {
        self.3
    }
}

static TEMPORARY_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Beneath {
    /// Opens `path` as the base (made first when `create`, each missing directory
    /// mode 0755: under umask 000 `create_dir_all` made them writable by every
    /// user). The base itself is the user's choice (`--repo`, `--out`) and may be
    /// reached through links; nothing below it may.
    pub fn open(path: &Path, create: bool) -> io::Result<Beneath> {
        if create {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(path)?;
        }
        let directory = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Beneath {
            directory,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle on the same open directory (it shares a lock taken on
    /// either).
    pub fn try_clone(&self) -> io::Result<Beneath> {
        Ok(Beneath {
            directory: self.directory.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// Takes the exclusive lock on the base for as long as this handle lives,
    /// waiting while another process holds it (`flock`: released when the process
    /// ends, however it ends). True when the base is still the directory at its
    /// path once locked (a build that held the lock may have removed it). Where the
    /// file system takes no such lock on a directory (NFS emulates `flock` with
    /// record locks, which want a file open for writing), the build goes on
    /// without one, as builds did before there was a lock.
    pub fn lock_exclusive(&self) -> io::Result<bool> {
        match rustix::fs::flock(&self.directory, rustix::fs::FlockOperation::LockExclusive) {
            Ok(()) => {}
            Err(
                rustix::io::Errno::BADF | rustix::io::Errno::NOLCK | rustix::io::Errno::OPNOTSUPP,
            ) => {
                return Ok(true);
            }
            Err(error) => return Err(error.into()),
        }
        let held = rustix::fs::fstat(&self.directory)?;
        Ok(std::fs::metadata(&self.path).is_ok_and(|now| {
            use std::os::unix::fs::MetadataExt;
            now.dev() == held.st_dev && now.ino() == held.st_ino
        }))
    }

    /// The directory `relative` below this one, made (mode 0755) when `create`;
    /// `None` when it does not exist and is not to be made. A link anywhere on the
    /// way is refused.
    pub fn directory(&self, relative: &Path, create: bool) -> io::Result<Option<Beneath>> {
        downward(relative)?;
        // no O_NOFOLLOW: with O_DIRECTORY it turns a link into ENOTDIR; RESOLVE_NO_SYMLINKS
        // refuses a link as the last component too, with ELOOP
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut current: Option<Beneath> = None;
        for component in relative.components() {
            let parent = current.as_ref().unwrap_or(self);
            let path = parent.path.join(component);
            let opened = match open_beneath(&parent.directory, Path::new(&component), flags) {
                Ok(opened) => opened,
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(
                        &parent.directory,
                        component.as_os_str(),
                        Mode::from_raw_mode(0o755),
                    ) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(error) => return Err(explain(&path, error)),
                    }
                    open_beneath(&parent.directory, Path::new(&component), flags)
                        .map_err(|error| explain(&path, error))?
                }
                Err(rustix::io::Errno::NOENT) => return Ok(None),
                Err(error) => return Err(explain(&path, error)),
            };
            current = Some(Beneath {
                directory: opened,
                path,
            });
        }
        Ok(current)
    }

    /// The bytes of the regular file `relative` below, `None` if there is none.
    pub fn read(&self, relative: &Path) -> io::Result<Option<Vec<u8>>> {
        Ok(self.read_stamped(relative)?.map(|(bytes, _)| bytes))
    }

    /// The bytes of the regular file `relative` below with its stamp, taken from
    /// the file that was read; `None` if there is none.
    pub fn read_stamped(&self, relative: &Path) -> io::Result<Option<(Vec<u8>, Stamp)>> {
        self.read_stamped_if(relative, |_| Ok(()))
    }

    /// [`Beneath::read_stamped`], the file opened first judged by its stamp
    /// (`judge`'s error is returned and nothing is read: a file refused by its
    /// size or identity costs no read).
    pub fn read_stamped_if(
        &self,
        relative: &Path,
        judge: impl FnOnce(&Stamp) -> io::Result<()>,
    ) -> io::Result<Option<(Vec<u8>, Stamp)>> {
        downward(relative)?;
        let path = self.path.join(relative);
        let opened = match open_beneath(
            &self.directory,
            relative,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        ) {
            Ok(opened) => opened,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(error) => return Err(explain(&path, error)),
        };
        let Some(stamp) = Stamp::of(&rustix::fs::fstat(&opened)?) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("`{}` is not a regular file", path.display()),
            ));
        };
        if stamp.2 > READ_LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "`{}` has {} bytes, more than the {READ_LIMIT} mesh reads of a file",
                    path.display(),
                    stamp.2
                ),
            ));
        }
        judge(&stamp)?;
        let file = std::fs::File::from(opened);
        // room for the judged size and the one byte that says the file grew, so
        // that the read does not grow the buffer by doubling (below READ_LIMIT; a
        // reservation that cannot be made is an error, not an abort)
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(usize::try_from(stamp.2).unwrap_or(0).saturating_add(1))
            .map_err(|_| {
                io::Error::new(
                    io::ErrorKind::OutOfMemory,
                    format!(
                        "`{}` is larger than the memory this process can have",
                        path.display()
                    ),
                )
            })?;
        // no more than the judged size: a file that grew since is not read past it
        file.take(stamp.2.saturating_add(1))
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > stamp.2 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("`{}` grew while it was read", path.display()),
            ));
        }
        Ok(Some((bytes, stamp)))
    }

    /// What identifies the present content of the regular file `name` of this
    /// directory without reading it (never through a link): `None` if there is no
    /// such file, or it is not a regular one.
    pub fn stamp(&self, name: &str) -> io::Result<Option<Stamp>> {
        downward(Path::new(name))?;
        // one component: `statat` would follow a link on the way to a deeper one
        if Path::new(name).components().count() != 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a name in this directory"),
            ));
        }
        match rustix::fs::statat(&self.directory, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Stamp::of(&stat)),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(error) => Err(explain(&self.path.join(name), error)),
        }
    }

    /// Replaces the file `name` of this directory with `bytes`, readable by
    /// `readers`: a new file, then `renameat` over the old name, which replaces a
    /// link planted there instead of writing through it. `durable` syncs the file
    /// and the directory.
    pub fn write(
        &self,
        name: &str,
        bytes: &[u8],
        durable: bool,
        readers: Readers,
    ) -> io::Result<()> {
        self.write_parts(name, &[bytes], durable, readers)
    }

    /// [`Beneath::write`] of the bytes of `parts` one after the other, without
    /// joining them first.
    pub fn write_parts(
        &self,
        name: &str,
        parts: &[&[u8]],
        durable: bool,
        readers: Readers,
    ) -> io::Result<()> {
        downward(Path::new(name))?;
        if Path::new(name).components().count() != 1 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a file name"),
            ));
        }
        let (new_mode, kept_mode) = match readers {
            Readers::Owner => (0o600, None),
            Readers::AsBefore => (0o644, self.permissions(name)?),
        };
        let (temporary, file) = self.new_file(name, new_mode)?;
        let written = (|| {
            let mut file = std::fs::File::from(file);
            // one vectored write for all the parts, as long as the kernel takes them
            let mut slices: Vec<io::IoSlice<'_>> =
                parts.iter().map(|part| io::IoSlice::new(part)).collect();
            let mut rest = &mut slices[..];
            while !rest.is_empty() {
                match file.write_vectored(rest) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(written) => io::IoSlice::advance_slices(&mut rest, written),
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(error),
                }
            }
            if let Some(mode) = kept_mode {
                // exactly the old bits, as the umask did not make them
                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            }
            if durable {
                file.sync_all()?;
            }
            rustix::fs::renameat(&self.directory, &temporary, &self.directory, name)?;
            if durable {
                rustix::fs::fsync(&self.directory)?;
            }
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.directory, &temporary, AtFlags::empty());
        }
        written.map_err(|error: io::Error| {
            io::Error::new(
                error.kind(),
                format!("`{}`: {error}", self.path.join(name).display()),
            )
        })
    }

    /// Writes `bytes` (mode 0600) to a new temporary file beside `name` and returns
    /// the temporary's name: [`Beneath::rename`] puts it in place later, or
    /// [`Beneath::remove`] drops it.
    pub fn stage(&self, name: &str, bytes: &[u8]) -> io::Result<String> {
        downward(Path::new(name))?;
        let (temporary, file) = self.new_file(name, 0o600)?;
        let mut file = std::fs::File::from(file);
        if let Err(error) = file.write_all(bytes) {
            let _ = rustix::fs::unlinkat(&self.directory, &temporary, AtFlags::empty());
            return Err(error);
        }
        Ok(temporary)
    }

    /// Renames the entry `from` of this directory to `to` (replacing what is there;
    /// a link at `to` is replaced, not followed).
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        downward(Path::new(from))?;
        downward(Path::new(to))?;
        rustix::fs::renameat(&self.directory, from, &self.directory, to)
            .map_err(|error| explain(&self.path.join(to), error))
    }

    /// Removes the empty directory `name` of this directory.
    pub fn remove_directory(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(&self.directory, name, AtFlags::REMOVEDIR)
            .map_err(|error| explain(&self.path.join(name), error))
    }

    /// The permission bits of the regular file `name` of this directory (never
    /// through a link: a link planted there is no file whose mode to keep); `None`
    /// when there is no such file.
    fn permissions(&self, name: &str) -> io::Result<Option<rustix::fs::RawMode>> {
        match rustix::fs::statat(&self.directory, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat)
                if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::RegularFile =>
            {
                Ok(Some(stat.st_mode & 0o777))
            }
            Ok(_) | Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(error) => Err(explain(&self.path.join(name), error)),
        }
    }

    /// A new, exclusively created temporary file beside `name`, of mode `mode`
    /// less the umask.
    fn new_file(&self, name: &str, mode: rustix::fs::RawMode) -> io::Result<(String, OwnedFd)> {
        loop {
            let counter = TEMPORARY_COUNTER.fetch_add(1, Ordering::Relaxed);
            let temporary = format!(".{name}.{}.{counter}.new", std::process::id());
            match rustix::fs::openat(
                &self.directory,
                temporary.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            ) {
                Ok(file) => return Ok((temporary, file)),
                Err(rustix::io::Errno::EXIST) => continue,
                Err(error) => return Err(explain(&self.path.join(temporary), error)),
            }
        }
    }

    /// Whether this directory holds an entry `name` of any kind (a link is not
    /// followed; an entry that cannot be asked about counts as held).
    pub fn holds(&self, name: &str) -> bool {
        downward(Path::new(name)).is_err()
            || !matches!(
                rustix::fs::statat(&self.directory, name, AtFlags::SYMLINK_NOFOLLOW),
                Err(rustix::io::Errno::NOENT)
            )
    }

    /// Whether the entry `name` of this directory is a directory (never through a
    /// link: a link to one is not).
    pub fn is_directory(&self, name: &str) -> io::Result<bool> {
        downward(Path::new(name))?;
        match rustix::fs::statat(&self.directory, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(rustix::fs::FileType::from_raw_mode(stat.st_mode)
                == rustix::fs::FileType::Directory),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(error) => Err(explain(&self.path.join(name), error)),
        }
    }

    /// Whether `name` is the name [`Beneath::stage`] gives a temporary file.
    pub fn is_temporary_name(name: &str) -> bool {
        let Some(inner) = name
            .strip_prefix('.')
            .and_then(|name| name.strip_suffix(".new"))
        else {
            return false;
        };
        // NAME.PID.COUNTER
        let mut parts = inner.rsplitn(3, '.');
        let (Some(counter), Some(pid), Some(base)) = (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        !base.is_empty()
            && [counter, pid]
                .iter()
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
    }

    /// Removes the entry `name` of this directory (a link is removed, never followed).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        rustix::fs::unlinkat(&self.directory, name, AtFlags::empty())
            .map_err(|error| explain(&self.path.join(name), error))
    }

    /// The names in this directory (not `.` and `..`).
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.directory)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name.to_vec()));
            }
        }
        Ok(names)
    }

    /// Which directory this is (device and inode): two handles with the same
    /// identity reach one directory.
    pub fn identity(&self) -> io::Result<(u64, u64)> {
        let stat = rustix::fs::fstat(self.directory.as_fd())?;
        Ok((stat.st_dev, stat.st_ino))
    }

    /// The uid owning this directory.
    pub fn owner(&self) -> io::Result<u32> {
        Ok(rustix::fs::fstat(self.directory.as_fd())?.st_uid)
    }

    /// Why users other than this one and its group may change the names in this
    /// directory, if they may: it belongs to another user (not root), or every user
    /// may write in it. Its group's members are the owner's to choose (a shared
    /// checkout with umask 002 and a setgid directory is a common setup).
    pub fn others_may_change(&self) -> io::Result<Option<String>> {
        let stat = rustix::fs::fstat(self.directory.as_fd())?;
        let own = rustix::process::geteuid().as_raw();
        let mode = stat.st_mode & 0o7777;
        Ok(if stat.st_uid != own && stat.st_uid != 0 {
            Some(format!(
                "it belongs to uid {}, not to this user (uid {own})",
                stat.st_uid
            ))
        } else if mode & 0o002 != 0 {
            Some(format!("every user may write in it (mode {mode:04o})"))
        } else {
            None
        })
    }
}

/// The effective uid of this process (the owner of the files it makes). Asked of
/// the kernel: it was the owner of a temporary file made for the question, and
/// with `TMPDIR` missing or full every build failed as if `OUT/nodes` could not
/// be written.
pub fn own_uid() -> io::Result<u32> {
    Ok(rustix::process::geteuid().as_raw())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The resolution made one component at a time answers as `openat2` does: the
    /// same file, or the same error, for every path of a tree with links planted
    /// on the way and at the end.
    #[test]
    fn opening_each_component_answers_as_openat2() {
        let temporary = tempfile::tempdir().unwrap();
        let root = temporary.path();
        let base = root.join("base");
        std::fs::create_dir_all(base.join("a/b")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(base.join("a/b/file"), "inside").unwrap();
        std::fs::write(root.join("outside/file"), "outside").unwrap();
        std::os::unix::fs::symlink(root.join("outside"), base.join("a/to-outside")).unwrap();
        std::os::unix::fs::symlink("b/file", base.join("a/to-file")).unwrap();
        std::os::unix::fs::symlink("a", base.join("to-a")).unwrap();
        std::os::unix::fs::symlink("missing", base.join("a/dangling")).unwrap();
        let directory =
            rustix::fs::open(&base, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let file = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let folder = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let cases = [
            ("a/b/file", file),
            ("a/b", folder),
            ("a", folder),
            ("a/to-outside/file", file),
            ("a/to-outside", folder),
            ("a/to-file", file),
            ("to-a/b/file", file),
            ("to-a", folder),
            ("a/dangling", file),
            ("a/b/missing", file),
            ("a/missing/file", file),
            ("a/b/file/deeper", file),
            ("a/b/file", folder),
        ];
        let mut refused = 0;
        for (relative, flags) in cases {
            let relative = Path::new(relative);
            let kernel =
                rustix::fs::openat2(&directory, relative, flags, Mode::empty(), resolve_flags());
            let each = open_each(&directory, relative, flags);
            match (&kernel, &each) {
                (Ok(kernel), Ok(each)) => {
                    let (kernel, each) = (
                        rustix::fs::fstat(kernel).unwrap(),
                        rustix::fs::fstat(each).unwrap(),
                    );
                    assert_eq!(
                        (kernel.st_dev, kernel.st_ino),
                        (each.st_dev, each.st_ino),
                        "{relative:?} opens another file"
                    );
                }
                (Err(kernel), Err(each)) => {
                    assert_eq!(kernel, each, "{relative:?} fails otherwise");
                    refused += usize::from(*each == rustix::io::Errno::LOOP);
                }
                _ => panic!("{relative:?}: openat2 {kernel:?}, one at a time {each:?}"),
            }
        }
        // every link on the way or at the end was refused
        assert_eq!(refused, 6);
    }

    #[test]
    fn a_link_on_the_way_is_refused_and_a_planted_link_is_replaced() {
        let temporary = tempfile::tempdir().unwrap();
        let base = temporary.path().join("base");
        let outside = temporary.path().join("outside");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(&outside, base.join("linked")).unwrap();
        let beneath = Beneath::open(&base, false).unwrap();
        let refused = beneath.directory(Path::new("linked"), true).unwrap_err();
        assert!(is_link_refusal(&refused), "{refused}");
        let refused = beneath.read(Path::new("linked/victim")).unwrap_err();
        assert!(is_link_refusal(&refused), "{refused}");
        assert!(beneath.directory(Path::new("../outside"), false).is_err());

        std::os::unix::fs::symlink(outside.join("victim"), base.join("planted")).unwrap();
        beneath
            .write("planted", b"new", false, Readers::Owner)
            .unwrap();
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep");
        assert!(
            std::fs::symlink_metadata(base.join("planted"))
                .unwrap()
                .is_file()
        );
        beneath.remove("linked").unwrap();
        assert!(outside.join("victim").exists());
    }
}
