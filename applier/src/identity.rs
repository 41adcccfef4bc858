//! The node's age identity, opened and checked as ssh checks a private key before it
//! reads it: a regular file, reached without any symlink, owned by the user mesh-apply
//! runs as and closed to group and others (E541). The checks are made on the opened
//! descriptor that is then read (`fstat`, never a second look-up of the path), and the
//! text read is wiped when it has been parsed. Must not print or keep the identity's text.

use std::io;
use std::path::Path;

use crate::codes::Code;
use crate::confined::{self, Entry, EntryKind};
use crate::host::Host;
use crate::problem::Problem;
use crate::secret::{Identities, read_wiped};

/// Where the node's identity is when `--identity` is not given (beneath the root).
pub const IDENTITY_PATH: &str = "/var/lib/mesh/identity";
const IDENTITY_DIRECTORY: &str = "/var/lib/mesh";
const IDENTITY_NAME: &str = "identity";

/// Permission bits an identity must not have: any for group or others (ssh's rule for
/// a private key). With POSIX ACLs the group bits are the mask, so a file without them
/// grants nothing to a named user or group either.
const GROUP_AND_OTHERS: u32 = 0o077;

/// The identities in `named` (`--identity`), or in `ROOT/var/lib/mesh/identity` read
/// through the confined layer. Refuses (E541) a file reached through a symlink, not a
/// regular file, owned by another user than the effective one, or open to group or
/// others; E512 when it is absent, unreadable or holds no identity.
pub fn load(named: Option<&Path>, host: &Host) -> Result<Identities, Problem> {
    let (shown, opened) = match named {
        Some(path) => (
            path.to_path_buf(),
            confined::open_named_without_symlinks(path),
        ),
        // no symlink on the way whatever the resolution (under `--root` too: a plan may
        // declare links, and none may lead mesh to another file as the node's key)
        None => (
            host.path(IDENTITY_PATH),
            host.fs()
                .directory_without_symlinks(IDENTITY_DIRECTORY)
                .and_then(|directory| directory.open_with_entry(IDENTITY_NAME)),
        ),
    };
    let (file, entry) = opened.map_err(|error| open_problem(&shown, named.is_none(), &error))?;
    check(&shown, &entry, rustix::process::geteuid().as_raw())?;
    // a few lines (`age-keygen` writes three): a larger file is no identity, and is
    // not read (a sparse one of 200 GB had the applier reserve all of it)
    if entry.size > IDENTITY_LIMIT {
        return Err(Identities::unreadable(
            &shown,
            &format!(
                "it has {} bytes; an identity file has at most {IDENTITY_LIMIT}",
                entry.size
            ),
        ));
    }
    let text = read_wiped(io::Read::take(file, IDENTITY_LIMIT + 1), entry.size)
        .map_err(|error| Identities::unreadable(&shown, &error.to_string()))?;
    Identities::from_bytes(&shown, &text)
}

/// The most an identity file may hold: it is a few lines of keys and comments.
const IDENTITY_LIMIT: u64 = 1 << 20;

fn open_problem(shown: &Path, is_default: bool, error: &io::Error) -> Problem {
    if confined::is_symlink_refusal(error) {
        return unprotected(
            shown,
            "is or goes through a symlink",
            format!(
                "name the file itself, reached without symlinks (`--identity \"$(readlink -f {0})\"`), or move the identity to {0}",
                shell_word(shown)
            ),
        );
    }
    if is_default && confined::absent(error) {
        return Identities::unreadable(
            shown,
            "it does not exist (give `--identity KEY`, or put the node's identity there)",
        );
    }
    Identities::unreadable(shown, &error.to_string())
}

/// Refuses what another user could read, write or swap: the checks are on `entry`,
/// the metadata of the descriptor that is read next.
fn check(shown: &Path, entry: &Entry, effective_uid: u32) -> Result<(), Problem> {
    if entry.kind != EntryKind::File {
        return Err(unprotected(
            shown,
            "is not a regular file (a directory, a FIFO, a device or a socket)",
            format!(
                "put the node's identity in a regular file there (`age-keygen -o {}`)",
                shell_word(shown)
            ),
        ));
    }
    let mut wrong = Vec::new();
    let mut fixes = Vec::new();
    if entry.uid != effective_uid {
        wrong.push(format!(
            "owned by uid {}, not by {} that mesh-apply runs as",
            entry.uid,
            user_name(effective_uid)
        ));
        fixes.push(format!(
            "chown {} {}",
            user_name(effective_uid),
            shell_word(shown)
        ));
    }
    if entry.mode & GROUP_AND_OTHERS != 0 {
        wrong.push(format!("open to group or others (mode {:04o})", entry.mode));
        fixes.push(format!("chmod 600 {}", shell_word(shown)));
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(unprotected(
        shown,
        &wrong.join(" and "),
        format!(
            "run `{}`, then apply again: the node's identity must be readable by the user mesh-apply runs as alone",
            fixes.join(" && ")
        ),
    ))
}

/// E541: whoever can read the identity can read every secret sealed to this node, and
/// whoever can change it chooses what mesh-apply decrypts.
fn unprotected(shown: &Path, what: &str, help: String) -> Problem {
    Problem::new(
        Code::UnprotectedIdentity,
        format!(
            "the age identity `{}` {what}: anyone who could read it could read every secret of this node, so mesh-apply does not use it",
            shown.display()
        ),
        help,
    )
}

/// `root`, or the uid (`chown` takes either).
fn user_name(uid: u32) -> String {
    if uid == 0 {
        "root".to_string()
    } else {
        uid.to_string()
    }
}

/// `path` as one word of a shell command: as it is when it holds only characters no
/// shell treats specially, else in single quotes.
fn shell_word(path: &Path) -> String {
    let text = path.to_string_lossy();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c));
    if plain {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(mode: u32, uid: u32) -> Entry {
        Entry {
            kind: EntryKind::File,
            mode,
            uid,
            gid: 0,
            size: 0,
            device: 0,
            inode: 0,
            links: 1,
        }
    }

    #[test]
    fn only_the_owner_s_own_file_is_accepted() {
        let path = Path::new("/var/lib/mesh/identity");
        assert!(check(path, &file(0o600, 0), 0).is_ok());
        assert!(check(path, &file(0o400, 1000), 1000).is_ok());
        for mode in [0o640, 0o604, 0o620, 0o602, 0o610, 0o644, 0o666] {
            let problem = check(path, &file(mode, 0), 0).unwrap_err();
            assert_eq!(problem.code, Code::UnprotectedIdentity);
            assert!(
                problem.help.contains("`chmod 600 /var/lib/mesh/identity`"),
                "{}",
                problem.help
            );
        }
        let problem = check(path, &file(0o600, 1000), 0).unwrap_err();
        assert!(
            problem.message.contains("owned by uid 1000"),
            "{}",
            problem.message
        );
        assert!(problem.help.contains("`chown root /var/lib/mesh/identity`"));
        let problem = check(path, &file(0o644, 0), 1000).unwrap_err();
        assert!(
            problem.help.contains(
                "`chown 1000 /var/lib/mesh/identity && chmod 600 /var/lib/mesh/identity`"
            ),
            "{}",
            problem.help
        );
        let mut directory = file(0o700, 0);
        directory.kind = EntryKind::Directory;
        assert!(check(path, &directory, 0).is_err());
    }

    #[test]
    fn the_default_path_is_its_directory_and_name() {
        assert_eq!(
            confined::split(IDENTITY_PATH),
            Some((IDENTITY_DIRECTORY, IDENTITY_NAME))
        );
    }

    #[test]
    fn a_path_is_quoted_for_the_shell_only_when_it_must_be() {
        assert_eq!(
            shell_word(Path::new("/etc/mesh/key.txt")),
            "/etc/mesh/key.txt"
        );
        assert_eq!(shell_word(Path::new("/srv/my key")), "'/srv/my key'");
        assert_eq!(shell_word(Path::new("/srv/it's")), "'/srv/it'\\''s'");
    }
}
