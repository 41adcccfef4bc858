//! A grant's credential file: a PostgreSQL SCRAM-SHA-256 verifier or a RabbitMQ
//! `rabbit_password_hashing_sha256` hash, read, checked to be exactly that and
//! nothing else, and digested. Must never put a verifier (or any
//! byte of a credential file) into an error message, and must not keep one longer than
//! the reconcile that reads it.

use std::io::Read;
use std::path::Path;

use base64::Engine;
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::codes::Code;

/// A credential file larger than this is not a verifier (a real one is 133 bytes).
const LARGEST_CREDENTIAL: u64 = 1024;

/// Which file a credential was read from: its device and inode, taken from the open
/// file, so that two paths leading to one file (a link) are told apart from two files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileIdentity {
    device: u64,
    inode: u64,
}

/// A verifier read for one reconcile, and the digest it is compared by.
pub struct Verifier {
    text: Zeroizing<String>,
    digest: String,
    file: FileIdentity,
}

impl Verifier {
    /// `SCRAM-SHA-256$...`: only for the statement that sets it.
    pub fn expose(&self) -> &str {
        &self.text
    }

    /// Hex SHA-256 of the verifier, as PostgreSQL's `sha256()` of `rolpassword` gives it.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The file it was read from.
    pub fn file(&self) -> FileIdentity {
        self.file
    }
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "Verifier(sha256:{})", self.digest)
    }
}

/// Why a credential file is not taken. The reason never quotes the file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialError {
    /// Missing, not readable by this user, or the read failed (E605).
    Unreadable(String),
    /// Read, but not exactly a verifier or hash (E606).
    NotAVerifier(String),
}

impl CredentialError {
    pub fn reason(&self) -> &str {
        match self {
            CredentialError::Unreadable(reason) | CredentialError::NotAVerifier(reason) => reason,
        }
    }

    pub fn code(&self) -> Code {
        match self {
            CredentialError::Unreadable(_) => Code::CredentialUnreadable,
            CredentialError::NotAVerifier(_) => Code::NotAVerifier,
        }
    }

    /// What to do about it.
    pub fn help(&self) -> &'static str {
        match self {
            CredentialError::Unreadable(_) => {
                "mesh-apply places each grant's credential file with the plan that placed the \
                 manifest: apply the node's plan again, give the provisioner the same `--root` \
                 as `mesh-apply --root`, and let its user read the credentials directory"
            }
            CredentialError::NotAVerifier(_) => {
                "the file must hold exactly what meshc made for the grant (a SCRAM-SHA-256 \
                 verifier for PostgreSQL, a password hash for RabbitMQ), never a password: \
                 apply the node's plan again, so that mesh-apply writes it back"
            }
        }
    }
}

impl std::fmt::Display for CredentialError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.reason())
    }
}

/// Reads a credential file whole (it is small), into memory that is wiped when dropped.
/// Only a regular file is read, opened without waiting: a named pipe opened for
/// reading waits for a writer, and the reconcile (with every later poll) with it.
fn read_small(path: &Path) -> Result<(Zeroizing<Vec<u8>>, FileIdentity), CredentialError> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let unreadable = |error: std::io::Error| CredentialError::Unreadable(describe_io(&error));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(unreadable)?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(CredentialError::Unreadable(
            "not a regular file (a named pipe, device or socket is not read)".to_string(),
        ));
    }
    let identity = FileIdentity {
        device: metadata.dev(),
        inode: metadata.ino(),
    };
    let mut bytes = Zeroizing::new(Vec::with_capacity(256));
    // one byte more than allowed tells a file that is too large
    file.take(LARGEST_CREDENTIAL + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > LARGEST_CREDENTIAL {
        return Err(CredentialError::NotAVerifier(format!(
            "larger than {LARGEST_CREDENTIAL} bytes, so not a verifier"
        )));
    }
    Ok((bytes, identity))
}

fn describe_io(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => error.to_string(),
    }
}

/// The SHA-256 of a credential file's bytes, for noticing that it changed.
pub fn file_digest(path: &Path) -> Result<[u8; 32], CredentialError> {
    let (bytes, _) = read_small(path)?;
    Ok(Sha256::digest(&bytes[..]).into())
}

/// Reads and checks a credential file: one verifier, optionally followed by one newline.
pub fn read_verifier(path: &Path) -> Result<Verifier, CredentialError> {
    read_checked(path, check_verifier)
}

/// Reads and checks a credential file: one RabbitMQ password hash, optionally
/// followed by one newline.
pub fn read_rabbit_hash(path: &Path) -> Result<Verifier, CredentialError> {
    read_checked(path, check_rabbit_hash)
}

fn read_checked(
    path: &Path,
    check: fn(&str) -> Result<(), String>,
) -> Result<Verifier, CredentialError> {
    let (bytes, file) = read_small(path)?;
    let content = bytes.strip_suffix(b"\n").unwrap_or(&bytes[..]);
    let text = std::str::from_utf8(content)
        .map_err(|_| CredentialError::NotAVerifier("not text, so not a verifier".to_string()))?;
    check(text).map_err(CredentialError::NotAVerifier)?;
    Ok(Verifier {
        text: Zeroizing::new(text.to_string()),
        digest: hex::encode(Sha256::digest(text.as_bytes())),
        file,
    })
}

/// The shape PostgreSQL stores and accepts as an already-computed secret:
/// `SCRAM-SHA-256$ITERATIONS:SALT$STOREDKEY:SERVERKEY`, the three parts canonical base64,
/// both keys 32 bytes. Anything that passes is made of `A-Z a-z 0-9 + / = $ : -` only,
/// so it cannot end a string literal. The reason never quotes the text.
pub fn check_verifier(text: &str) -> Result<(), String> {
    const EXPECTED: &str = "expected `SCRAM-SHA-256$ITERATIONS:SALT$STOREDKEY:SERVERKEY`";
    let rest = text
        .strip_prefix("SCRAM-SHA-256$")
        .ok_or_else(|| format!("not a SCRAM-SHA-256 verifier ({EXPECTED})"))?;
    let malformed = |what: &str| format!("not a SCRAM-SHA-256 verifier: {what} ({EXPECTED})");
    let (iterations_and_salt, keys) = rest
        .split_once('$')
        .ok_or_else(|| malformed("no `$` before the keys"))?;
    let (iterations, salt) = iterations_and_salt
        .split_once(':')
        .ok_or_else(|| malformed("no `:` after the iteration count"))?;
    let (stored_key, server_key) = keys
        .split_once(':')
        .ok_or_else(|| malformed("no `:` between the keys"))?;
    let iterations_are_digits = !iterations.is_empty()
        && iterations.len() <= 10
        && iterations.bytes().all(|byte| byte.is_ascii_digit())
        && !iterations.starts_with('0');
    match iterations.parse::<u32>() {
        Ok(count) if iterations_are_digits && count >= 1 => {}
        _ => {
            return Err(malformed(
                "the iteration count is not a whole number from 1",
            ));
        }
    }
    let decode = |part: &str, what: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(part)
            .map_err(|_| malformed(&format!("the {what} is not canonical base64")))
    };
    if decode(salt, "salt")?.is_empty() {
        return Err(malformed("the salt is empty"));
    }
    for (part, what) in [(stored_key, "stored key"), (server_key, "server key")] {
        if decode(part, what)?.len() != 32 {
            return Err(malformed(&format!("the {what} is not 32 bytes")));
        }
    }
    Ok(())
}

/// What RabbitMQ stores for `rabbit_password_hashing_sha256`: canonical base64 of a
/// 4-byte salt and a 32-byte SHA-256, so made of `A-Z a-z 0-9 + / =` only. The reason
/// never quotes the text.
pub fn check_rabbit_hash(text: &str) -> Result<(), String> {
    const EXPECTED: &str = "expected base64 of a 4-byte salt and a SHA-256";
    match base64::engine::general_purpose::STANDARD.decode(text) {
        Ok(bytes) if bytes.len() == 36 => Ok(()),
        Ok(_) => Err(format!(
            "not a RabbitMQ password hash: not 36 bytes ({EXPECTED})"
        )),
        Err(_) => Err(format!(
            "not a RabbitMQ password hash: not canonical base64 ({EXPECTED})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=";

    #[test]
    fn a_verifier_as_postgres_stores_it_passes() {
        assert_eq!(check_verifier(GOOD), Ok(()));
    }

    #[test]
    fn anything_else_is_refused_without_being_quoted() {
        let cases = [
            "",
            "hunter2",
            "md5e8a48653851e28c69d0506508fb27fc5",
            "SCRAM-SHA-256$",
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==",
            "SCRAM-SHA-256$0:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
            "SCRAM-SHA-256$04096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
            "SCRAM-SHA-256$4096:$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
            // a key one byte short
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4g==:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
            // an injection attempt after a valid prefix
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU='; DROP ROLE postgres; --",
            "SCRAM-SHA-256$4096:W22Z'aJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
            // two newlines, a trailing space, a leading space
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=\n",
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU= ",
            " SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
            // not canonical: unpadded
            "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
            "SCRAM-SHA-256$99999999999:W22ZaJ0SNY7soEsUEjb6gQ==$WG5d8oPm3OtcPnkdi4Uo7BkeZkBFzpcXkuLmtbsT4qY=:wfPLwcE6nTWhTAmQ7tl2KeoiWGPlZqQxSrmfPwDl2dU=",
        ];
        for case in cases {
            let reason = check_verifier(case).expect_err(case);
            assert!(
                reason.starts_with("not a SCRAM-SHA-256 verifier"),
                "{reason}"
            );
            assert!(
                !reason.contains("W22Z"),
                "the reason quotes the input: {reason}"
            );
            assert!(!reason.contains("hunter2"), "{reason}");
        }
    }

    #[test]
    fn a_rabbit_hash_is_36_bytes_of_canonical_base64() {
        // RabbitMQ's documented hash of "test12"
        let good = "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR";
        assert_eq!(check_rabbit_hash(good), Ok(()));
        for bad in [
            "",
            "test12",
            "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2PO",
            "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR\n",
            "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2PORAAAA",
            "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2PO\"",
        ] {
            let reason = check_rabbit_hash(bad).expect_err(bad);
            assert!(
                reason.starts_with("not a RabbitMQ password hash"),
                "{reason}"
            );
            assert!(!reason.contains("kI3G"), "{reason}");
        }
    }

    #[test]
    fn a_file_may_end_in_one_newline() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("login");
        std::fs::write(&path, format!("{GOOD}\n")).unwrap();
        let verifier = read_verifier(&path).unwrap();
        assert_eq!(verifier.expose(), GOOD);
        assert_eq!(
            verifier.digest(),
            hex::encode(Sha256::digest(GOOD.as_bytes()))
        );
        assert!(!format!("{verifier:?}").contains("W22Z"));
        std::fs::write(&path, format!("{GOOD}\n\n")).unwrap();
        assert_eq!(read_verifier(&path).unwrap_err().code(), Code::NotAVerifier);
    }

    #[test]
    fn a_link_reads_as_the_file_it_leads_to() {
        let directory = tempfile::tempdir().unwrap();
        let (first, second, link) = (
            directory.path().join("first"),
            directory.path().join("second"),
            directory.path().join("link"),
        );
        std::fs::write(&first, GOOD).unwrap();
        std::fs::write(&second, GOOD).unwrap();
        std::os::unix::fs::symlink(&first, &link).unwrap();
        let file = |path: &Path| read_verifier(path).unwrap().file();
        assert_eq!(file(&first), file(&link));
        assert_ne!(file(&first), file(&second));
    }

    #[test]
    fn missing_and_oversized_files_say_why() {
        let directory = tempfile::tempdir().unwrap();
        let missing = directory.path().join("missing");
        let error = read_verifier(&missing).unwrap_err();
        assert_eq!(error.reason(), "no such file");
        assert_eq!(error.code(), Code::CredentialUnreadable);
        assert!(error.help().contains("apply the node's plan again"));
        let large = directory.path().join("large");
        std::fs::write(&large, vec![b'a'; 5000]).unwrap();
        let error = read_verifier(&large).unwrap_err();
        assert!(error.reason().contains("larger than"), "{error}");
        assert_eq!(error.code(), Code::NotAVerifier);
        assert!(file_digest(&large).is_err());
        let hash = directory.path().join("hash");
        std::fs::write(&hash, "hunter2\n").unwrap();
        let error = read_rabbit_hash(&hash).unwrap_err();
        assert_eq!(error.code(), Code::NotAVerifier);
        assert!(!error.reason().contains("hunter2"), "{error}");
        assert!(error.help().contains("never a password"));
    }

    /// A named pipe, a device or a directory is refused at once (E605), never read:
    /// opening a pipe for reading waited for a writer, and the provisioner (with
    /// every later poll of `--watch`) waited for ever.
    #[test]
    fn what_is_not_a_regular_file_is_refused_without_waiting() {
        let directory = tempfile::tempdir().unwrap();
        let pipe = directory.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &pipe,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        for path in [pipe.as_path(), Path::new("/dev/zero"), directory.path()] {
            let error = read_verifier(path).unwrap_err();
            assert_eq!(error.code(), Code::CredentialUnreadable, "{path:?}");
            assert!(
                error.reason().contains("not a regular file"),
                "{path:?}: {error}"
            );
            assert!(file_digest(path).is_err(), "{path:?}");
        }
    }
}
