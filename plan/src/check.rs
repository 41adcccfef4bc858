//! Value rules shared by the shape kinds: names, node paths, modes, environment.
//! Each returns a lowercase reason on refusal; it must not know about any one kind.
//! Reasons show the refused text escaped, so a hostile plan cannot reach a terminal
//! through an error message.

use crate::display::escaped;

/// A user, group, service or container name: `[a-z0-9_][a-z0-9_.@-]*`, at most 64 bytes.
pub fn name(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let first_ok = matches!(bytes.first(), Some(first) if first.is_ascii_lowercase() || first.is_ascii_digit() || *first == b'_');
    let rest_ok = bytes.iter().all(|byte| {
        byte.is_ascii_lowercase()
            || byte.is_ascii_digit()
            || matches!(byte, b'_' | b'-' | b'.' | b'@')
    });
    if first_ok && rest_ok && bytes.len() <= 64 {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a valid name (lowercase letters, digits, `_`, `-`, `.`, `@`; at most 64 bytes)",
            escaped(text)
        ))
    }
}

/// An owner or group of a path: a [`name`] that is not all digits (`chown` and the
/// shadow tools would take `1000` for a uid, not a name).
pub fn account(text: &str) -> Result<(), String> {
    name(text)?;
    if text.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!(
            "`{text}` is all digits, which the host tools read as a numeric id, not a name"
        ));
    }
    Ok(())
}

/// A user or group the applier creates, as `useradd` and `groupadd` accept it:
/// `[a-z_][a-z0-9_-]*[$]?`, at most 32 bytes, not all digits.
pub fn user_name(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let body = bytes.strip_suffix(b"$").unwrap_or(bytes);
    let first_ok =
        matches!(body.first(), Some(first) if first.is_ascii_lowercase() || *first == b'_');
    let rest_ok = body.iter().all(|byte| {
        byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'-')
    });
    if bytes.is_empty() {
        return Err("the name is empty".to_string());
    }
    if bytes.iter().all(u8::is_ascii_digit) {
        return Err(format!(
            "`{text}` is all digits, which `useradd` refuses (it would read as a uid)"
        ));
    }
    if !(first_ok && rest_ok) {
        return Err(format!(
            "`{}` is not a name `useradd` accepts (`[a-z_][a-z0-9_-]*`, optionally ending in `$`)",
            escaped(text)
        ));
    }
    if bytes.len() > 32 {
        return Err(format!("`{text}` is longer than 32 bytes"));
    }
    Ok(())
}

/// Text shown to people and written into files and units: no control character
/// (C0, DEL, C1) and no bidirectional control (U+202A-U+202E, U+2066-U+2069, U+200E,
/// U+200F, U+061C), which would make it display as something else.
pub fn display_text(text: &str) -> Result<(), String> {
    // printable ASCII holds neither (every control and bidirectional character is
    // below 0x20, 0x7f, or not ASCII): most texts are answered by one pass over bytes
    if text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) {
        return Ok(());
    }
    if text.chars().any(char::is_control) {
        return Err(format!("{:?} contains a control character", escaped(text)));
    }
    if text.chars().any(crate::display::is_bidi_control) {
        return Err(format!(
            "\"{}\" contains a bidirectional control character, which makes it display as something else",
            escaped(text)
        ));
    }
    Ok(())
}

/// A user's home or login shell: a [`node_path`] without `:` (the field separator
/// of `/etc/passwd`).
pub fn account_path(text: &str) -> Result<(), String> {
    node_path(text)?;
    if text.contains(':') {
        return Err(format!(
            "`{text}` contains `:`, the field separator of `/etc/passwd`"
        ));
    }
    Ok(())
}

/// An absolute path on the node: starts with `/`, is not `/` itself, has no empty,
/// `.` or `..` component, no trailing `/`, and no control or bidirectional control
/// character ([`display_text`]).
pub fn node_path(text: &str) -> Result<(), String> {
    display_text(text)?;
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!("`{}` is not an absolute path", escaped(text)));
    };
    if rest.is_empty() {
        return Err("`/` itself cannot be a shape's path".to_string());
    }
    if text.len() > 4095 {
        return Err("the path is longer than 4095 bytes".to_string());
    }
    for component in rest.split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return Err(format!(
                "`{text}` is not canonical (no `.`, `..`, `//` or trailing `/`)"
            ));
        }
        if component.len() > 255 {
            return Err(format!("`{text}` has a component longer than 255 bytes"));
        }
    }
    Ok(())
}

/// The directory `mesh-apply` keeps its state in on every node, beside what modules
/// keep there (credentials, grants, their data): a shape may declare it, and the
/// directories on the way to it, only as root's and writable by root only
/// ([`state_directory`]), and nothing but a directory may stand there
/// ([`shape_path`]).
pub const STATE_DIRECTORY: &str = "/var/lib/mesh";

/// Where `mesh-apply` takes archives' artifacts from unless told otherwise
/// (`--artifacts`): held to the rules of [`STATE_DIRECTORY`], as whoever could write
/// it or put a link there could have every apply of an archive refused, or hashing a
/// sparse file of terabytes with the node's lock held.
pub const ARTIFACT_DIRECTORY: &str = "/var/lib/mesh/artifacts";

/// The entries of [`STATE_DIRECTORY`] that are `mesh-apply`'s own: its record, its
/// lock, the node's identity, the plans it received and its generations. No shape
/// may own them or anything in them.
pub const APPLIER_STATE: &[&str] = &[
    "/var/lib/mesh/applied.json",
    "/var/lib/mesh/lock",
    "/var/lib/mesh/identity",
    "/var/lib/mesh/received.json",
    "/var/lib/mesh/generations",
];

/// The account files of the shadow suite, which `mesh-apply` changes only through
/// `useradd` and `usermod` (for `user` shapes and their groups), and from
/// which it learns the ids it gives owners: no shape may stand at one, nor at their
/// backups (`-`), temp files (`+`) or locks (`.lock`). A file written there would
/// replace every account of the host (and an owner named in the plan would get the
/// uid the file gives that name, root's state directory a user's); a change the
/// tools made would be undone at the next apply.
pub const ACCOUNT_FILES: &[&str] = &[
    "/etc/passwd",
    "/etc/group",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/subuid",
    "/etc/subgid",
];

/// The directory holding [`ACCOUNT_FILES`]: only a directory may be declared there.
pub const ACCOUNT_DIRECTORY: &str = "/etc";

/// The account file (one of [`ACCOUNT_FILES`]) that `path` is, is the backup, temp
/// file or lock of, or lies beneath; `/etc/.pwd.lock` is the suite's lock.
pub fn account_file(path: &str) -> Option<&'static str> {
    if path == "/etc/.pwd.lock" {
        return Some("/etc/passwd");
    }
    // the file, its backup, temp file or lock, or a path beneath one (which would
    // make the file a directory)
    ACCOUNT_FILES.iter().copied().find(|file| {
        path.strip_prefix(file).is_some_and(|rest| {
            let (name, _) = rest.split_once('/').unwrap_or((rest, ""));
            matches!(name, "" | "-" | "+" | ".lock")
        })
    })
}

/// The path of a shape `mesh-apply` writes that is not a directory (a file, secret,
/// link or archive): a [`directory_path`] that is none of [`on_state_way`]'s. A file
/// or link there would stand where the applier's state or artifacts are, an archive
/// would replace the tree that holds them.
pub fn shape_path(text: &str) -> Result<(), String> {
    directory_path(text)?;
    if on_state_way(text) {
        return Err(format!(
            "{}: only a directory, root's, may stand there",
            what_stands_there(text)
        ));
    }
    if text == ACCOUNT_DIRECTORY {
        return Err(format!(
            "`{ACCOUNT_DIRECTORY}` holds the host's accounts (`/etc/passwd`, `/etc/group`, `/etc/shadow`): only a directory may stand there"
        ));
    }
    Ok(())
}

/// Is `path` [`ARTIFACT_DIRECTORY`], [`STATE_DIRECTORY`] or a directory on the way to
/// them (`/var`, `/var/lib`)?
pub fn on_state_way(path: &str) -> bool {
    ARTIFACT_DIRECTORY
        .strip_prefix(path)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// What mesh-apply keeps at `path`, one of [`on_state_way`]'s, for a message.
fn what_stands_there(path: &str) -> String {
    match path {
        STATE_DIRECTORY => format!("`{path}` is where mesh-apply keeps its state"),
        ARTIFACT_DIRECTORY => {
            format!("`{path}` is where mesh-apply takes archives' artifacts from")
        }
        _ => format!(
            "`{path}` is on the way to `{STATE_DIRECTORY}`, where mesh-apply keeps its state"
        ),
    }
}

/// The path of a directory shape: a [`node_path`] that is not one of the applier's
/// own files ([`APPLIER_STATE`]) or in one, and that has no component named as the
/// applier names its scratch beside a path (`.NAME.mesh-new`, `.NAME.mesh-unpack`,
/// `.NAME.mesh-old`), which it would take for its own leftover and replace or
/// remove.
pub fn directory_path(text: &str) -> Result<(), String> {
    node_path(text)?;
    let within = |owned: &str| {
        text == owned
            || text
                .strip_prefix(owned)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    if let Some(owned) = APPLIER_STATE.iter().find(|owned| within(owned)) {
        return Err(format!(
            "`{text}` is mesh-apply's own state (`{owned}`: its record, lock, identity, received plans and generations are its alone)"
        ));
    }
    if let Some(file) = account_file(text) {
        let what = if text == file {
            format!("`{text}` is one of the host's account files")
        } else if text.contains(&format!("{file}/")) || text.contains(&format!("{file}-/")) {
            format!(
                "`{text}` would make the host's account file `{file}` (or its backup) a directory"
            )
        } else {
            format!("`{text}` is the backup, temp file or lock of the host's account file `{file}`")
        };
        return Err(format!(
            "{what}, which mesh-apply changes only through `useradd` and `usermod`"
        ));
    }
    if let Some(component) = text.split('/').find(|component| is_scratch_name(component)) {
        return Err(format!(
            "`{}` in `{text}` is a name mesh-apply uses for its scratch beside a path (`.NAME.mesh-new`, `.NAME.mesh-unpack`, `.NAME.mesh-old`)",
            escaped(component)
        ));
    }
    Ok(())
}

/// A directory shape at [`STATE_DIRECTORY`] or on the way to it keeps it root's and
/// writable by root only: whoever else owned one or could write it could replace the
/// applier's record and identity, or put links in its way; and the applier, which
/// never passes from a user's directory into root's, could no longer reach its own
/// record, so that every later apply, even one giving the directory back, would be
/// refused.
pub fn state_directory(path: &str, owner: &str, group: &str, mode: u32) -> Result<(), String> {
    let roots_only = owner == "root" && group == "root" && mode & 0o022 == 0;
    // whoever else could write `/etc` could replace the account files the owners
    // of every shape are looked up in
    if path == ACCOUNT_DIRECTORY && !roots_only {
        return Err(format!(
            "`{ACCOUNT_DIRECTORY}` holds the host's accounts: it may only be root's (owner and group `root`) and writable by root only"
        ));
    }
    if !on_state_way(path) || roots_only {
        return Ok(());
    }
    if path == STATE_DIRECTORY {
        return Err(format!(
            "`{STATE_DIRECTORY}` holds mesh-apply's state: it may only be root's (owner and group `root`) and writable by root only"
        ));
    }
    Err(format!(
        "{}: it may only be root's (owner and group `root`) and writable by root only",
        what_stands_there(path)
    ))
}

/// Is `name` one `mesh-apply` gives its scratch beside a path: `.NAME.mesh-new` (a
/// temp file), `.NAME.mesh-unpack` or `.NAME.mesh-old` (an archive's trees)?
pub fn is_scratch_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    [".mesh-new", ".mesh-unpack", ".mesh-old"]
        .iter()
        .any(|suffix| {
            rest.strip_suffix(suffix)
                .is_some_and(|base| !base.is_empty())
        })
}

/// A mode string of exactly four octal digits.
pub fn mode(text: &str) -> Result<u32, String> {
    if text.len() == 4 && text.bytes().all(|byte| (b'0'..=b'7').contains(&byte)) {
        u32::from_str_radix(text, 8).map_err(|error| format!("`{text}`: {error}"))
    } else {
        Err(format!(
            "`{}` is not a mode of four octal digits such as \"0644\"",
            escaped(text)
        ))
    }
}

/// A mode for a regular file: no setuid or setgid bit (a plan must not be able to
/// hand out root).
pub fn file_mode(text: &str) -> Result<u32, String> {
    let bits = mode(text)?;
    if bits & 0o6000 != 0 {
        return Err(format!(
            "`{text}` sets the setuid or setgid bit, which a plan may not do"
        ));
    }
    Ok(bits)
}

/// A secret's mode: a [`file_mode`] of at most `0640` (owner read and write,
/// group read): no bit for others, no execute bit, no setuid, setgid or sticky bit.
pub fn secret_mode(text: &str) -> Result<u32, String> {
    let bits = mode(text)?;
    if bits & !0o640 != 0 {
        return Err(format!(
            "`{text}` gives more than `0640` allows (others, execute, setuid, setgid or sticky bits): a secret is readable by its owner and at most its group"
        ));
    }
    Ok(bits)
}

/// A command-line argument or environment value: no NUL, newline or carriage return
/// (they cannot be written into a unit file faithfully).
pub fn unit_text(text: &str) -> Result<(), String> {
    if text.bytes().any(|byte| matches!(byte, 0 | b'\n' | b'\r')) {
        Err(format!(
            "\"{}\" contains a NUL, newline or carriage return",
            escaped(text)
        ))
    } else {
        Ok(())
    }
}

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn environment_name(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let first_ok =
        matches!(bytes.first(), Some(first) if first.is_ascii_alphabetic() || *first == b'_');
    if first_ok
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'_')
    {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not a valid environment variable name",
            escaped(text)
        ))
    }
}

/// Environment entries: valid names, unit-safe values.
pub fn environment(entries: &std::collections::BTreeMap<String, String>) -> Result<(), String> {
    for (key, value) in entries {
        environment_name(key)?;
        unit_text(value).map_err(|reason| format!("`{key}`: {reason}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A shape's path may not be the applier's own state or its scratch: a plan
    /// that owned `.app.mesh-unpack` beside an archive lost it when the archive
    /// changed, and one at `/var/lib/mesh/identity` would replace the node's key.
    /// The state directory itself is declared by modules, as root's only.
    #[test]
    fn shape_paths_leave_the_applier_its_state_and_scratch() {
        for refused in [
            "/var/lib/mesh/identity",
            "/var/lib/mesh/applied.json",
            "/var/lib/mesh/lock",
            "/var/lib/mesh/received.json",
            "/var/lib/mesh/generations",
            "/var/lib/mesh/generations/1.json",
            "/srv/.app.mesh-unpack",
            "/srv/.app.mesh-unpack/data/precious.db",
            "/srv/.a.mesh-new",
            "/srv/.app.mesh-old",
        ] {
            assert!(super::shape_path(refused).is_err(), "{refused}");
            assert!(super::directory_path(refused).is_err(), "{refused}");
            assert!(super::node_path(refused).is_ok(), "{refused}");
        }
        // a file, link, secret or archive at the state directory or on the way to
        // it would stand in its place or replace the tree holding it; a directory
        // may be declared there (as root's only, below)
        for way in [
            "/var/lib/mesh/artifacts",
            "/var/lib/mesh",
            "/var/lib",
            "/var",
        ] {
            assert!(super::shape_path(way).is_err(), "{way}");
            assert!(super::directory_path(way).is_ok(), "{way}");
        }
        for allowed in [
            "/var/lib/mesh/grants/postgres",
            "/var/lib/mesh/identity.d",
            "/var/lib/mesh-data",
            "/var/lib/meshes/x",
            "/srv/.mesh-new",
            "/srv/app.mesh-new",
            "/srv/.app.mesh-newer",
            "/srv/app",
        ] {
            assert!(super::shape_path(allowed).is_ok(), "{allowed}");
        }
        // the account files are changed by the shadow suite's tools, for user and
        // group shapes; `/etc` holding them may be a directory only
        for account in [
            "/etc/passwd",
            "/etc/passwd-",
            "/etc/shadow",
            "/etc/shadow.lock",
            "/etc/group",
            "/etc/gshadow+",
            "/etc/subuid",
            "/etc/subgid",
            "/etc/.pwd.lock",
            "/etc/passwd/x",
            "/etc/shadow-/k",
        ] {
            assert!(super::shape_path(account).is_err(), "{account}");
            assert!(super::directory_path(account).is_err(), "{account}");
        }
        assert!(super::shape_path("/etc").is_err());
        assert!(super::directory_path("/etc").is_ok());
        assert!(super::state_directory("/etc", "root", "root", 0o755).is_ok());
        assert!(super::state_directory("/etc", "alice", "root", 0o755).is_err());
        assert!(super::state_directory("/etc", "root", "root", 0o777).is_err());
        assert!(super::state_directory("/etc/app", "alice", "alice", 0o777).is_ok());
        for beside in [
            "/etc/passwd.d",
            "/etc/groups",
            "/etc/shadow-utils",
            "/etc/app",
        ] {
            assert!(super::shape_path(beside).is_ok(), "{beside}");
        }
        assert!(super::state_directory("/var/lib/mesh", "root", "root", 0o755).is_ok());
        assert!(super::state_directory("/var/lib/mesh", "alice", "root", 0o755).is_err());
        assert!(super::state_directory("/var/lib/mesh", "root", "staff", 0o755).is_err());
        assert!(super::state_directory("/var/lib/mesh", "root", "root", 0o775).is_err());
        assert!(super::state_directory("/var/lib/mesh/x", "alice", "alice", 0o777).is_ok());
        // the directories on the way are held to the same rule: a user's `/var/lib`
        // left the applier unable to reach its record ever after
        for way in ["/var/lib/mesh/artifacts", "/var/lib", "/var"] {
            assert!(super::state_directory(way, "root", "root", 0o755).is_ok());
            assert!(super::state_directory(way, "alice", "root", 0o755).is_err());
            assert!(super::state_directory(way, "root", "staff", 0o755).is_err());
            assert!(super::state_directory(way, "root", "root", 0o777).is_err());
        }
        for beside in [
            "/var/lib/mesh-data",
            "/var/li",
            "/va",
            "/srv",
            "/var/lib/mesh/artifacts-old",
            "/var/lib/mesh/artifacts/x",
            "/var/lib/mesh/grants",
        ] {
            assert!(super::state_directory(beside, "alice", "alice", 0o777).is_ok());
        }
    }

    use proptest::prelude::*;

    proptest! {
        /// The ASCII fast path refuses exactly what the definition refuses: any
        /// control character or bidirectional control, ASCII or not.
        #[test]
        fn display_text_refuses_exactly_controls_and_bidi(
            text in "(\\PC|[\\x00-\\x1f\\x7f\\u{80}-\\u{9f}\\u{200e}\\u{200f}\\u{202a}-\\u{202e}\\u{2066}-\\u{2069}\\u{61c}]){0,12}"
        ) {
            let refused = text.chars().any(|c| c.is_control() || crate::display::is_bidi_control(c));
            prop_assert_eq!(super::display_text(&text).is_err(), refused);
        }
    }
}
