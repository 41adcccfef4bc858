//! Users and groups as the host has them: parsed from `ROOT/etc/passwd` and
//! `ROOT/etc/group` (never the names of the machine running a `--root` apply), with
//! `getent` as a fallback on the live host; and the proof, before a host tool edits
//! them, that the account files are plain files reached without symlinks. Must not
//! change any account.

use std::collections::{BTreeSet, HashMap};
use std::io;

use crate::codes::Code;
use crate::confined::{self, Directory, Entry, EntryKind};
use crate::host::Host;
use crate::problem::Problem;

/// The most mesh reads of an account file (`/etc/passwd`, `/etc/group`): far more
/// than any host's, and a bound on what a sparse one makes it read.
const ACCOUNTS_LIMIT: u64 = 64 << 20;

/// The shadow suite's files in `/etc`: each may be absent, or must be a regular file (or
/// a directory, which the tools fail on by themselves), never a symlink or a device.
/// `useradd`/`usermod` open them by name (following symlinks), with their backups
/// (`-`), temp files (`+`) and lock files (`.lock`, `.pwd.lock`).
const ACCOUNT_FILES: &[&str] = &["passwd", "group", "shadow", "gshadow", "subuid", "subgid"];

/// Files the tools update in `/var/log` when they are there.
const LOG_FILES: &[&str] = &["lastlog", "faillog"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserEntry {
    pub uid: u32,
    pub gid: u32,
    pub home: String,
    pub shell: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEntry {
    pub gid: u32,
    pub members: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Accounts {
    users: HashMap<String, UserEntry>,
    groups: HashMap<String, GroupEntry>,
    live: bool,
}

impl Accounts {
    pub fn load(host: &Host) -> io::Result<Accounts> {
        let mut accounts = Accounts {
            live: host.is_live(),
            ..Accounts::default()
        };
        for line in read_lines(host, "/etc/passwd")? {
            if let Some((name, entry)) = parse_passwd(&line) {
                accounts.users.entry(name).or_insert(entry);
            }
        }
        for line in read_lines(host, "/etc/group")? {
            if let Some((name, entry)) = parse_group(&line) {
                accounts.groups.entry(name).or_insert(entry);
            }
        }
        Ok(accounts)
    }

    /// A user by name; `root` always exists (uid 0), even in a bare `--root` tree.
    pub fn user(&self, name: &str) -> Option<UserEntry> {
        if let Some(entry) = self.users.get(name) {
            return Some(entry.clone());
        }
        if name == "root" {
            return Some(UserEntry {
                uid: 0,
                gid: 0,
                home: "/root".to_string(),
                shell: "/bin/sh".to_string(),
            });
        }
        if self.live {
            return getent("passwd", name)
                .and_then(|line| parse_passwd(&line))
                .map(|(_, entry)| entry);
        }
        None
    }

    /// A group by name; `root` always exists (gid 0).
    pub fn group(&self, name: &str) -> Option<GroupEntry> {
        if let Some(entry) = self.groups.get(name) {
            return Some(entry.clone());
        }
        if name == "root" {
            return Some(GroupEntry {
                gid: 0,
                members: Vec::new(),
            });
        }
        if self.live {
            return getent("group", name)
                .and_then(|line| parse_group(&line))
                .map(|(_, entry)| entry);
        }
        None
    }

    pub fn uid(&self, name: &str) -> Option<u32> {
        match self.users.get(name) {
            Some(entry) => Some(entry.uid),
            None => self.user(name).map(|entry| entry.uid),
        }
    }

    pub fn gid(&self, name: &str) -> Option<u32> {
        match self.groups.get(name) {
            Some(entry) => Some(entry.gid),
            None => self.group(name).map(|entry| entry.gid),
        }
    }

    /// The supplementary groups `user` is listed in.
    pub fn supplementary_groups(&self, user: &str) -> BTreeSet<String> {
        self.groups
            .iter()
            .filter(|(_, entry)| entry.members.iter().any(|member| member == user))
            .map(|(name, _)| name.clone())
            .collect()
    }
}

fn read_lines(host: &Host, node_path: &str) -> io::Result<Vec<String>> {
    match host.fs().read(node_path, ACCOUNTS_LIMIT)? {
        Some(bytes) => Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()),
        None => Ok(Vec::new()),
    }
}

fn unsafe_account_file(host: &Host, node_path: &str, reason: &str) -> Problem {
    Problem::new(
        Code::UnsafeAccountFile,
        format!(
            "`{}` {reason}, so `useradd`/`usermod` could write outside the root",
            host.path(node_path).display()
        ),
        "make it a plain file (or remove the leftover) in a root-owned directory reached without symlinks, then apply again",
    )
}

/// Proves, through the confined layer and before any host tool runs, that what
/// `useradd`/`usermod` will open by name is inside the root: `/etc` (and `/var/log`
/// when present) reached without a symlink, `/` and `/etc` root-owned and writable by
/// root only, and
/// each account file, backup, temp and lock file there, and `lastlog` and `faillog`,
/// absent or a regular file. `/` and `/etc` being writable by root only, nobody else can
/// swap an entry there between this proof and the tool's open.
pub fn prove_account_files(host: &Host) -> Result<(), Problem> {
    let root = host
        .fs()
        .directory("/")
        .map_err(|error| Problem::filesystem("open", host.root(), &error))?;
    check_directory(host, "/", &root)?;
    let etc = host
        .fs()
        .directory_without_symlinks("/etc")
        .map_err(|error| unsafe_account_file(host, "/etc", &directory_reason(&error)))?;
    check_directory(host, "/etc", &etc)?;
    let mut names: Vec<String> = vec![".pwd.lock".to_string()];
    for base in ACCOUNT_FILES {
        for suffix in ["", "-", "+", ".lock"] {
            names.push(format!("{base}{suffix}"));
        }
    }
    check_files(host, "/etc", &etc, &names)?;
    match host.fs().directory_without_symlinks("/var/log") {
        // `/var/log` may be group-writable (`root:syslog 0775` on Ubuntu): only reached
        // without symlinks, and its two files not symlinks
        Ok(log) => {
            let names: Vec<String> = LOG_FILES.iter().map(|name| name.to_string()).collect();
            check_files(host, "/var/log", &log, &names)
        }
        Err(error) if confined::absent(&error) => Ok(()),
        Err(error) => Err(unsafe_account_file(
            host,
            "/var/log",
            &directory_reason(&error),
        )),
    }
}

/// The longest line of `/etc/default/useradd` read whole by `useradd` (`fgets` into a
/// 1,024-byte buffer splits a longer one, and its tail is read as a line of its own).
const USERADD_LINE: usize = 1000;

/// How much of `/etc/default/useradd` is read: the file is a few lines.
const USERADD_DEFAULTS_BYTES: u64 = 64 * 1024;

/// Under `--root`, proves that `useradd --prefix ROOT` will create nothing but the
/// account entries. It reads `ROOT/etc/login.defs` and `ROOT/etc/default/useradd`,
/// which a plan can write; with `--no-create-home` (always passed) the one setting left
/// that creates a file is `CREATE_MAIL_SPOOL` in the defaults file, and the spool's path
/// is `ROOT` + `MAIL_DIR` from `login.defs` + the user's name: `MAIL_DIR
/// /../../../../tmp/x` creates a file outside the root, owned by the new user. No
/// option turns the spool off, so a defaults file that may turn it on is refused
/// (E540): any line naming `CREATE_MAIL_SPOOL` must be a comment or set it to `no`, and
/// be short enough for `useradd` to read it whole. Both files must be absent or regular
/// files that are root-owned, not writable by group or others and their inode's only
/// name (checked on the opened descriptor, E540), in `/etc` and an `/etc/default` that
/// are root-owned directories reached without a symlink and writable by root only, so
/// nobody can change them between this proof and the tool's read. The live host is its own root: nothing there can lead outside it, and its
/// administrator's defaults are left as they are.
pub fn prove_useradd_settings(host: &Host) -> Result<(), Problem> {
    if host.offline_root().is_none() {
        return Ok(());
    }
    let etc = host
        .fs()
        .directory_without_symlinks("/etc")
        .map_err(|error| unsafe_account_file(host, "/etc", &directory_reason(&error)))?;
    check_directory(host, "/etc", &etc)?;
    check_files(host, "/etc", &etc, &["login.defs".to_string()])?;
    // opened (never through a symlink), then checked on the descriptor: only root can
    // change it between this proof and `useradd`'s read
    match etc.open_regular_with_entry("login.defs") {
        Ok((_, entry)) => check_settings_file(host, "/etc/login.defs", &entry)?,
        Err(error) if confined::absent(&error) => {}
        Err(_) => {
            return Err(unsafe_account_file(
                host,
                "/etc/login.defs",
                "is a symlink, a device, a FIFO, a socket or a directory",
            ));
        }
    }
    let default = match etc.open_directory("default") {
        Ok(default) => default,
        Err(error) if error.raw_os_error() == Some(rustix::io::Errno::NOENT.raw_os_error()) => {
            return Ok(());
        }
        Err(error) => {
            let reason = if confined::is_symlink_refusal(&error)
                || error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error())
            {
                "is a symlink or not a directory".to_string()
            } else {
                format!("cannot be opened ({error})")
            };
            return Err(unsafe_account_file(host, "/etc/default", &reason));
        }
    };
    check_directory(host, "/etc/default", &default)?;
    const DEFAULTS: &str = "/etc/default/useradd";
    let file = match default.open_regular_with_entry("useradd") {
        Ok((file, entry)) => {
            check_settings_file(host, DEFAULTS, &entry)?;
            file
        }
        Err(error) if confined::absent(&error) => return Ok(()),
        Err(_) => {
            return Err(unsafe_account_file(
                host,
                DEFAULTS,
                "is a symlink, a device, a FIFO, a socket or a directory",
            ));
        }
    };
    let mut text = Vec::new();
    io::Read::read_to_end(
        &mut io::Read::take(file, USERADD_DEFAULTS_BYTES + 1),
        &mut text,
    )
    .map_err(|error| Problem::filesystem("read", &host.path(DEFAULTS), &error))?;
    let text = String::from_utf8_lossy(&text);
    let refused = if text.len() as u64 > USERADD_DEFAULTS_BYTES {
        Some(format!(
            "is longer than {} KiB, more than mesh reads to check it",
            USERADD_DEFAULTS_BYTES / 1024
        ))
    } else {
        text.split('\n')
            .find(|line| line.contains("CREATE_MAIL_SPOOL") && !spool_stays_off(line))
            .map(|line| {
                let shown = if line.len() >= USERADD_LINE {
                    format!(
                        "a line of {} bytes naming `CREATE_MAIL_SPOOL` (`useradd` reads it in pieces, and one may turn the spool on)",
                        line.len()
                    )
                } else {
                    format!("`{line}`")
                };
                format!(
                    "has {shown}, which makes `useradd --prefix` create a mail spool at the path the tree's `login.defs` names (`MAIL_DIR`), possibly outside the root"
                )
            })
    };
    match refused {
        None => Ok(()),
        Some(reason) => Err(Problem::new(
            Code::UseraddCreatesFiles,
            format!("`{}` {reason}", host.path(DEFAULTS).display()),
            "remove `CREATE_MAIL_SPOOL` from the tree's `/etc/default/useradd` (or set it to `no`): mesh creates a user's files only as the plan's own shapes",
        )),
    }
}

/// A settings file `useradd` reads (checked on its opened descriptor) that nobody but
/// root can change before `useradd` reads it: owned by root, not writable by its group
/// or others, and its inode's only name (another name could be in a directory a user
/// writes, or be a user's file linked here). Otherwise E540: a user who may write it
/// could turn the spool on between this check and `useradd`'s read.
fn check_settings_file(host: &Host, node_path: &str, entry: &Entry) -> Result<(), Problem> {
    let reason = if entry.uid != 0 {
        Some(format!("is owned by uid {}, not root", entry.uid))
    } else if entry.mode & 0o022 != 0 {
        Some(format!(
            "has mode {:04o}: its group or others may write it",
            entry.mode
        ))
    } else if entry.links != 1 {
        Some(format!("has {} hard links, not one", entry.links))
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(Problem::new(
            Code::UseraddCreatesFiles,
            format!(
                "`{}` {reason}, so it could be changed to turn the mail spool on between mesh's check and `useradd`'s read",
                host.path(node_path).display()
            ),
            "make it a root-owned file with a single name, writable by root only (for example `0644 root:root`; declare it so in the plan if the plan writes it), then apply again",
        )),
    }
}

/// A line of `/etc/default/useradd` that names `CREATE_MAIL_SPOOL` and leaves it off:
/// a comment, or the setting `no`, read whole.
fn spool_stays_off(line: &str) -> bool {
    if line.len() >= USERADD_LINE {
        return false;
    }
    if line.starts_with('#') {
        return true;
    }
    match line.split_once('=') {
        None => true,
        Some((_, value)) => value.eq_ignore_ascii_case("no"),
    }
}

fn directory_reason(error: &io::Error) -> String {
    if confined::is_symlink_refusal(error) {
        "is reached through a symlink".to_string()
    } else {
        format!("cannot be opened ({error})")
    }
}

fn check_directory(host: &Host, node_path: &str, directory: &Directory) -> Result<(), Problem> {
    let entry = directory
        .own_entry()
        .map_err(|error| Problem::filesystem("inspect", &host.path(node_path), &error))?;
    if entry.uid != 0 || entry.mode & 0o022 != 0 {
        return Err(unsafe_account_file(
            host,
            node_path,
            &format!(
                "is owned by uid {} with mode {:04o}, not root-owned and writable by root only",
                entry.uid, entry.mode
            ),
        ));
    }
    Ok(())
}

fn check_files(
    host: &Host,
    directory_path: &str,
    directory: &Directory,
    names: &[String],
) -> Result<(), Problem> {
    for name in names {
        let node_path = format!("{directory_path}/{name}");
        match directory.entry(name) {
            Ok(None) => {}
            // a directory cannot be written through: the tool fails on it by itself (E516)
            Ok(Some(entry)) if matches!(entry.kind, EntryKind::File | EntryKind::Directory) => {}
            Ok(Some(entry)) => {
                let what = if entry.kind == EntryKind::Symlink {
                    "is a symlink"
                } else {
                    "is a device, FIFO or socket"
                };
                return Err(unsafe_account_file(host, &node_path, what));
            }
            Err(error) => {
                return Err(Problem::filesystem(
                    "inspect",
                    &host.path(&node_path),
                    &error,
                ));
            }
        }
    }
    Ok(())
}

fn parse_passwd(line: &str) -> Option<(String, UserEntry)> {
    let fields: Vec<&str> = line.split(':').collect();
    match fields.as_slice() {
        [name, _, uid, gid, _, home, shell, ..]
            if !name.is_empty() && !name.starts_with(['+', '-']) =>
        {
            Some((
                name.to_string(),
                UserEntry {
                    uid: uid.parse().ok()?,
                    gid: gid.parse().ok()?,
                    home: home.to_string(),
                    shell: shell.to_string(),
                },
            ))
        }
        _ => None,
    }
}

fn parse_group(line: &str) -> Option<(String, GroupEntry)> {
    let fields: Vec<&str> = line.split(':').collect();
    match fields.as_slice() {
        [name, _, gid, members, ..] if !name.is_empty() && !name.starts_with(['+', '-']) => Some((
            name.to_string(),
            GroupEntry {
                gid: gid.parse().ok()?,
                members: members
                    .split(',')
                    .filter(|member| !member.is_empty())
                    .map(str::to_string)
                    .collect(),
            },
        )),
        _ => None,
    }
}

fn getent(database: &str, name: &str) -> Option<String> {
    let output = std::process::Command::new("getent")
        .arg(database)
        .arg(name)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout)
        .ok()?
        .lines()
        .next()
        .map(str::to_string)
}
