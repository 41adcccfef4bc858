//! `meshc secrets reseal NODE --identity OLD`: the node's needs and its sides of
//! grants, sealed to an earlier key of the node, opened with that key's identity and
//! sealed to the node's current key: the same values, with the same value ids, so
//! the next `meshc build` keeps them. Plaintext exists only in memory (zeroed when
//! dropped); every value is opened and sealed anew before any file is written, so a
//! wrong identity, or one value it cannot open, changes nothing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use lang::{Diagnostic, codes};
use zeroize::Zeroizing;

use crate::confined::Beneath;
use crate::sealed_value;
use crate::secrets::{self, Store, StoreError};

/// What a reseal did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Resealed {
    /// Needs sealed anew to the current key.
    pub needs: usize,
    /// Sides of grants (a password at the consumer, a check at the provider).
    pub grants: usize,
    /// Values that had no id (made before ids were kept) and were given one now.
    pub given_ids: usize,
    /// Values already sealed to the current key, left as they are.
    pub current: usize,
    /// Values sealed to a key that is neither the current one nor the identity's:
    /// left as they are (the next build makes them anew), by store path.
    pub other_key: Vec<String>,
}

/// An old identity: its X25519 keys and their public keys.
struct OldIdentity {
    keys: Vec<age::x25519::Identity>,
    publics: Vec<String>,
}

fn unreadable(path: &Path, reason: &str) -> Diagnostic {
    Diagnostic::error(
        codes::RESEAL_IDENTITY_UNREADABLE,
        format!(
            "cannot read the old identity `{}`: {reason}",
            path.display()
        ),
    )
    .with_help("give the node's previous identity file, as `age-keygen` wrote it (a line that starts `AGE-SECRET-KEY-`, and `#` comments)")
}

/// The X25519 identities of an `age-keygen` file. No line of it is ever printed.
fn read_identity(path: &Path, bytes: &[u8]) -> Result<OldIdentity, Diagnostic> {
    let text = std::str::from_utf8(bytes).map_err(|_| unreadable(path, "it is not text"))?;
    let mut keys = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = age::x25519::Identity::from_str(line).map_err(|_| {
            unreadable(
                path,
                &format!("line {} is not an age X25519 identity", index + 1),
            )
        })?;
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(unreadable(path, "it holds no identity"));
    }
    let publics = keys.iter().map(|key| key.to_public().to_string()).collect();
    Ok(OldIdentity { keys, publics })
}

fn store_failure(error: StoreError) -> Diagnostic {
    Diagnostic::error(
        codes::SECRET_STORE,
        format!("cannot reseal: the sealed store: {error}"),
    )
    .with_help("check that `secrets/` is readable and writable and holds no symbolic link")
}

/// One value to reseal: where it is kept, what it is sealed to now, and its id.
struct Kept {
    /// Store path parts of its directory below `secrets/`.
    parts: Vec<String>,
    /// The sealed file's name in that directory.
    sealed_name: String,
    sealed: String,
    id: Option<String>,
    /// The file holding the id.
    value_name: String,
    /// A need, or a side of a grant (`consumer` or `provider`).
    side: Side,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Need,
    Consumer,
    Provider,
}

/// The names in `secrets/PARTS`, sorted; none when it does not exist.
fn names(store: &Store, parts: &[&str]) -> Result<Vec<String>, Diagnostic> {
    let Some(directory) = store.directory(parts, false).map_err(store_failure)? else {
        return Ok(Vec::new());
    };
    let mut names: Vec<String> = directory
        .names()
        .map_err(|error| store_failure(secrets::io_error(directory.path(), error)))?
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .filter(|name| crate::names::is_identifier(name) || name.ends_with(".age"))
        .collect();
    names.sort();
    Ok(names)
}

fn text(directory: Option<&Beneath>, name: &str) -> Result<Option<String>, Diagnostic> {
    secrets::read_text(directory, name).map_err(store_failure)
}

/// Every value of `node` in the store, with the key each was sealed to.
fn kept_values(store: &Store, node: &str) -> Result<Vec<(Kept, String)>, Diagnostic> {
    let mut found = Vec::new();
    for module in names(store, &["needs", node])? {
        let parts = ["needs", node, module.as_str()];
        let directory = store.directory(&parts, false).map_err(store_failure)?;
        for file in names(store, &parts)? {
            let Some(need) = file
                .strip_suffix(".age")
                .filter(|need| crate::names::is_identifier(need))
            else {
                continue;
            };
            let (Some(sealed), Some(recipient)) = (
                text(directory.as_ref(), &file)?,
                text(directory.as_ref(), &format!("{need}.recipient"))?,
            ) else {
                continue;
            };
            let value_name = format!("{need}.value");
            let id = text(directory.as_ref(), &value_name)?
                .and_then(|text| sealed_value::parse_kept(&text));
            found.push((
                Kept {
                    parts: parts.iter().map(|p| p.to_string()).collect(),
                    sealed_name: file.clone(),
                    sealed,
                    id,
                    value_name,
                    side: Side::Need,
                },
                recipient.trim().to_string(),
            ));
        }
    }
    for provider in names(store, &["grants"])? {
        for service in names(store, &["grants", &provider])? {
            for consumer in names(store, &["grants", &provider, &service])? {
                if provider != node && consumer != node {
                    continue;
                }
                for module in names(store, &["grants", &provider, &service, &consumer])? {
                    let grant_names =
                        names(store, &["grants", &provider, &service, &consumer, &module])?;
                    for name in grant_names {
                        let parts = [
                            "grants",
                            provider.as_str(),
                            service.as_str(),
                            consumer.as_str(),
                            module.as_str(),
                            name.as_str(),
                        ];
                        let directory = store.directory(&parts, false).map_err(store_failure)?;
                        let Some(recipients) = text(directory.as_ref(), "recipients")? else {
                            continue;
                        };
                        let id = text(directory.as_ref(), "value")?
                            .and_then(|text| sealed_value::parse_kept(&text));
                        let sides = [
                            (consumer == node, Side::Consumer, "consumer"),
                            (provider == node, Side::Provider, "provider"),
                        ];
                        for (mine, side, word) in sides {
                            let file = format!("{word}.age");
                            let recorded = recipient_line(&recipients, word);
                            if !mine {
                                continue;
                            }
                            let (Some(sealed), Some(recorded)) =
                                (text(directory.as_ref(), &file)?, recorded)
                            else {
                                continue;
                            };
                            found.push((
                                Kept {
                                    parts: parts.iter().map(|p| p.to_string()).collect(),
                                    sealed_name: file,
                                    sealed,
                                    id: id.clone(),
                                    value_name: "value".to_string(),
                                    side,
                                },
                                recorded,
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(found)
}

/// The key after `consumer ` or `provider ` in a grant's `recipients`.
fn recipient_line(recipients: &str, word: &str) -> Option<String> {
    recipients.lines().find_map(|line| {
        line.strip_prefix(word)
            .and_then(|rest| rest.strip_prefix(' '))
            .map(|key| key.trim().to_string())
    })
}

/// `recipients` with the `word` line's key replaced by `key`.
fn with_recipient(recipients: &str, word: &str, key: &str) -> String {
    recipients
        .lines()
        .map(|line| match line.strip_prefix(word) {
            Some(rest) if rest.starts_with(' ') => format!("{word} {key}\n"),
            _ => format!("{line}\n"),
        })
        .collect()
}

/// Opens an ASCII-armored age file with the old identity, entirely or not at all.
fn open(sealed: &str, identity: &OldIdentity) -> Result<Zeroizing<Vec<u8>>, String> {
    let armored = age::armor::ArmoredReader::new(sealed.as_bytes());
    let decryptor = age::Decryptor::new(armored).map_err(|error| error.to_string())?;
    let mut reader = decryptor
        .decrypt(identity.keys.iter().map(|key| key as &dyn age::Identity))
        .map_err(|error| match error {
            age::DecryptError::NoMatchingKeys => {
                "it is not sealed to the given identity".to_string()
            }
            other => other.to_string(),
        })?;
    let mut plaintext = Zeroizing::new(Vec::new());
    reader
        .read_to_end(&mut plaintext)
        .map_err(|error| error.to_string())?;
    Ok(plaintext)
}

/// An identity file is a few lines (`age-keygen` writes three); more than this is
/// not one, and is not read further.
const IDENTITY_FILE_LIMIT: u64 = 64 * 1024;

/// The bytes of the identity file at `path`: a regular file of at most
/// [`IDENTITY_FILE_LIMIT`] bytes (`/dev/zero` or a pipe given by mistake is refused
/// at once, not read for ever).
fn read_identity_file(path: &Path) -> Result<Zeroizing<Vec<u8>>, Diagnostic> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // opened without waiting for a writer: a FIFO is refused below, not read
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(|error| unreadable(path, &error.to_string()))?;
    let metadata = file
        .metadata()
        .map_err(|error| unreadable(path, &error.to_string()))?;
    if !metadata.is_file() {
        return Err(unreadable(path, "it is not a regular file"));
    }
    let mut bytes = Zeroizing::new(Vec::new());
    file.take(IDENTITY_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| unreadable(path, &error.to_string()))?;
    if bytes.len() as u64 > IDENTITY_FILE_LIMIT {
        return Err(unreadable(
            path,
            &format!("it is larger than {IDENTITY_FILE_LIMIT} bytes, which no identity file is"),
        ));
    }
    Ok(bytes)
}

/// Reseals `node`'s values sealed to the old identity's key to `current_key`.
pub fn reseal(
    repository_root: &Path,
    node: &str,
    current_key: &str,
    identity_path: &Path,
) -> Result<Resealed, Diagnostic> {
    let bytes = read_identity_file(identity_path)?;
    let identity = read_identity(identity_path, &bytes)?;
    secrets::check_parts(&[node]).map_err(store_failure)?;
    let store = Store::new(repository_root, false);
    let shown = |kept: &Kept| -> String {
        std::iter::once("secrets")
            .chain(kept.parts.iter().map(String::as_str))
            .chain(std::iter::once(kept.sealed_name.as_str()))
            .collect::<PathBuf>()
            .display()
            .to_string()
    };
    let mut report = Resealed::default();
    let mut to_reseal = Vec::new();
    let mut other_keys: Vec<String> = Vec::new();
    for (kept, recorded) in kept_values(&store, node)? {
        if recorded == current_key {
            report.current += 1;
        } else if identity.publics.contains(&recorded) {
            to_reseal.push(kept);
        } else {
            report.other_key.push(shown(&kept));
            if !other_keys.contains(&recorded) {
                other_keys.push(recorded);
            }
        }
    }
    // the identity opens none of what is left, and nothing was resealed before it
    // (a node with values already sealed to its current key has been resealed,
    // and a second run is harmless)
    if to_reseal.is_empty() && report.current == 0 && !report.other_key.is_empty() {
        return Err(Diagnostic::error(
            codes::RESEAL_WRONG_IDENTITY,
            format!(
                "the identity `{}` (public key {}) opens none of node `{node}`'s values: they are sealed to {}",
                identity_path.display(),
                lang::diagnostic::quoted(identity.publics.iter().map(String::as_str)),
                lang::diagnostic::quoted(other_keys.iter().map(String::as_str)),
            ),
        )
        .with_help("give the identity whose public key was the node's `key` when its values were made; nothing was changed"));
    }
    // every value opened and sealed anew before any file is written
    let mut sealed_anew = Vec::new();
    for kept in &to_reseal {
        let plaintext = open(&kept.sealed, &identity).map_err(|reason| {
            Diagnostic::error(
                codes::RESEAL_WRONG_IDENTITY,
                format!(
                    "`{}` cannot be opened with the identity `{}`: {reason}",
                    shown(kept),
                    identity_path.display()
                ),
            )
            .with_help("give the node's previous identity; nothing was changed")
        })?;
        let sealed = secrets::seal(current_key, &plaintext).map_err(store_failure)?;
        let id = match &kept.id {
            Some(id) => (id.clone(), false),
            None => (
                sealed_value::new_id().map_err(|error| {
                    store_failure(secrets::io_error(Path::new("/dev/urandom"), error))
                })?,
                true,
            ),
        };
        sealed_anew.push((sealed, id));
    }
    let mut given: Vec<Vec<String>> = Vec::new();
    for (kept, (sealed, (id, new_id))) in to_reseal.iter().zip(sealed_anew) {
        let parts: Vec<&str> = kept.parts.iter().map(String::as_str).collect();
        let directory = store
            .directory(&parts, false)
            .map_err(store_failure)?
            .ok_or_else(|| store_failure(secrets::io_error(Path::new(&shown(kept)), "is gone")))?;
        let write = |name: &str, bytes: &[u8]| {
            secrets::write_durably(&directory, name, bytes).map_err(store_failure)
        };
        // the id first (a grant's two sides share one), the value, the recipients last
        if new_id && !given.contains(&kept.parts) {
            write(&kept.value_name, format!("{id}\n").as_bytes())?;
            given.push(kept.parts.clone());
            report.given_ids += 1;
        }
        write(&kept.sealed_name, sealed.as_bytes())?;
        match kept.side {
            Side::Need => {
                let need = kept.sealed_name.strip_suffix(".age").unwrap_or_default();
                let recipient = format!("{need}.recipient");
                write(&recipient, format!("{current_key}\n").as_bytes())?;
                report.needs += 1;
            }
            Side::Consumer | Side::Provider => {
                let word = if kept.side == Side::Consumer {
                    "consumer"
                } else {
                    "provider"
                };
                let recipients = text(Some(&directory), "recipients")?.unwrap_or_default();
                write(
                    "recipients",
                    with_recipient(&recipients, word, current_key).as_bytes(),
                )?;
                report.grants += 1;
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grants_recipients_line_is_read_and_replaced() {
        let recipients = "consumer age1old\nprovider age1other\nform scram-sha-256\n";
        assert_eq!(
            recipient_line(recipients, "consumer").as_deref(),
            Some("age1old")
        );
        assert_eq!(
            with_recipient(recipients, "consumer", "age1new"),
            "consumer age1new\nprovider age1other\nform scram-sha-256\n"
        );
    }
}
