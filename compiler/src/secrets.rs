//! The sealed store in the repository's `secrets/`: needs and grants, made once by
//! `meshc build`, sealed with age to the nodes that may read them, kept, and remade
//! only when a recipient's key changes. Plaintext exists only in memory while a
//! secret is made; it is never written, logged or returned.
//!
//! Layout (documented in the book, "Secrets"):
//!
//! ```text
//! secrets/needs/NODE/MODULE/NEED.age        the need, sealed to NODE
//! secrets/needs/NODE/MODULE/NEED.recipient  the key it was sealed to
//! secrets/needs/NODE/MODULE/NEED.value      the value's id (`crate::sealed_value`)
//! secrets/grants/PROVIDER/SERVICE/CONSUMER/MODULE/NAME/consumer.age  the password, sealed to CONSUMER
//! secrets/grants/PROVIDER/SERVICE/CONSUMER/MODULE/NAME/provider.age  what PROVIDER checks it with, sealed to PROVIDER
//! secrets/grants/PROVIDER/SERVICE/CONSUMER/MODULE/NAME/recipients    the two keys and the form
//! secrets/grants/PROVIDER/SERVICE/CONSUMER/MODULE/NAME/value         the grant's value id
//! ```
//!
//! A value id is written before the value it names and the recipients after it, so
//! an interrupted write can make a value look new, never a new value look the same.
//! What a compilation makes is kept in memory ([`Store::write_made`] writes it) and
//! written only when the compilation has no error: a build that fails changes
//! nothing in `secrets/` (a key rotated in the same edit as an unrelated mistake
//! would otherwise replace the node's values, with no build ever saying so).
//!
//! Every part of those paths is an identifier (`crate::names`), and every file is
//! read and written through `crate::confined`: beneath the repository, following
//! no symbolic link, so a linked `secrets/` or a planted `NEED.age` link is refused.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use base64::Engine;
use zeroize::Zeroizing;

use crate::confined::{self, Beneath};
use crate::names;
use crate::rabbit_hash;
use crate::scram;
use crate::sealed_value::{self, Identity, Of, SealedValue};

/// How a provider checks a consumer's password.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Form {
    /// A PostgreSQL SCRAM-SHA-256 verifier; the provider never sees the password.
    ScramSha256,
    /// A RabbitMQ `rabbit_password_hashing_sha256` hash; the broker never sees the
    /// password. Its grants carry a vhost and permissions (`link::Access`).
    RabbitSha256,
    /// The password itself, for services that can only compare plaintext.
    Plain,
}

impl Form {
    pub fn name(self) -> &'static str {
        match self {
            Form::ScramSha256 => "scram-sha-256",
            Form::RabbitSha256 => "rabbit_password_hashing_sha256",
            Form::Plain => "plain",
        }
    }

    /// Whether a grant of this form carries a vhost and permissions.
    pub fn takes_access(self) -> bool {
        match self {
            Form::RabbitSha256 => true,
            Form::ScramSha256 | Form::Plain => false,
        }
    }

    pub fn from_name(name: &str) -> Option<Form> {
        match name {
            "scram-sha-256" => Some(Form::ScramSha256),
            "rabbit_password_hashing_sha256" => Some(Form::RabbitSha256),
            "plain" => Some(Form::Plain),
            _ => None,
        }
    }
}

/// Why the store could not give a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// `--locked` and the secret has not been made (or must be remade).
    NotMade {
        reason: String,
    },
    /// A recipient key does not parse.
    BadRecipient {
        key: String,
        reason: String,
    },
    Io {
        path: PathBuf,
        reason: String,
    },
    /// `secrets/` or something in it is a symbolic link (or a name would leave it).
    Link {
        path: PathBuf,
        reason: String,
    },
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NotMade { reason } => write!(formatter, "{reason}"),
            StoreError::BadRecipient { key, reason } => {
                if crate::private_key::contains_private_key(key) {
                    write!(
                        formatter,
                        "a node's key is an age private key, not a recipient"
                    )
                } else {
                    write!(formatter, "`{key}` is not an age recipient: {reason}")
                }
            }
            StoreError::Io { path, reason } | StoreError::Link { path, reason } => {
                write!(formatter, "`{}`: {reason}", path.display())
            }
        }
    }
}

/// A grant's sealed material: the password for the consumer, the check for the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantMaterial {
    pub consumer: String,
    pub provider: String,
}

/// What a build made, for its summary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Made {
    pub needs: usize,
    pub grants: usize,
}

pub struct Store {
    /// The repository, opened once; `secrets/` is reached beneath it.
    repository: Result<Beneath, String>,
    /// `REPOSITORY/secrets`, for messages.
    root: PathBuf,
    locked: bool,
    made: std::cell::Cell<Made>,
    /// Every sealed value this store gave, by its ciphertext: what it is and its id.
    values: std::cell::RefCell<std::collections::BTreeMap<String, SealedValue>>,
    /// What was made and is not yet written, in the order it is to be written.
    pending: std::cell::RefCell<Vec<PendingFile>>,
}

/// A file of the store made by this compilation and not yet written:
/// `secrets/PARTS.../NAME`.
struct PendingFile {
    parts: Vec<String>,
    name: String,
    text: String,
}

fn store_error(path: &Path, error: std::io::Error) -> StoreError {
    if confined::is_link_refusal(&error) {
        StoreError::Link {
            path: path.to_path_buf(),
            reason: error.to_string(),
        }
    } else {
        io_error(path, error)
    }
}

pub(crate) fn io_error(path: &Path, error: impl std::fmt::Display) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        reason: error.to_string(),
    }
}

/// 32 random bytes as unpadded base64url: 43 characters, safe in any config file.
fn random_password() -> Result<Zeroizing<String>, StoreError> {
    let mut bytes = Zeroizing::new([0u8; 32]);
    getrandom::getrandom(&mut bytes[..])
        .map_err(|error| io_error(Path::new("/dev/urandom"), error))?;
    Ok(Zeroizing::new(
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes[..]),
    ))
}

fn recipient(key: &str) -> Result<age::x25519::Recipient, StoreError> {
    age::x25519::Recipient::from_str(key).map_err(|reason| StoreError::BadRecipient {
        key: key.to_string(),
        reason: reason.to_string(),
    })
}

/// Seals `plaintext` to `key` as an ASCII-armored age file.
pub fn seal(key: &str, plaintext: &[u8]) -> Result<String, StoreError> {
    let recipient = recipient(key)?;
    age::encrypt_and_armor(&recipient, plaintext)
        .map_err(|error| io_error(Path::new("<age>"), error))
}

/// Refuses a path part that is not an identifier (the declarations were checked
/// already; this keeps the store safe whoever calls it).
pub(crate) fn check_parts(parts: &[&str]) -> Result<(), StoreError> {
    match parts.iter().find(|part| !names::is_identifier(part)) {
        Some(part) => Err(StoreError::Link {
            path: PathBuf::from(part),
            reason: format!(
                "is not an identifier ({}), so it cannot name a file of the store",
                names::why_not_identifier(part)
            ),
        }),
        None => Ok(()),
    }
}

pub(crate) fn read_text(
    directory: Option<&Beneath>,
    name: &str,
) -> Result<Option<String>, StoreError> {
    let Some(directory) = directory else {
        return Ok(None);
    };
    match directory.read(Path::new(name)) {
        Ok(Some(bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| io_error(&directory.path().join(name), "not UTF-8 text")),
        Ok(None) => Ok(None),
        Err(error) => Err(store_error(&directory.path().join(name), error)),
    }
}

/// Writes `bytes` to `name` in `directory` durably: new file, fsync, rename, fsync
/// of the directory.
pub(crate) fn write_durably(
    directory: &Beneath,
    name: &str,
    bytes: &[u8],
) -> Result<(), StoreError> {
    directory
        .write(name, bytes, true, confined::Readers::Owner)
        .map_err(|error| store_error(&directory.path().join(name), error))
}

impl Store {
    /// The store of the repository at `repository_root`. `locked` makes nothing.
    pub fn new(repository_root: &Path, locked: bool) -> Store {
        let repository = Beneath::open(repository_root, false)
            .map_err(|error| format!("cannot open `{}`: {error}", repository_root.display()));
        Store {
            repository,
            root: repository_root.join("secrets"),
            locked,
            made: std::cell::Cell::new(Made::default()),
            values: Default::default(),
            pending: Default::default(),
        }
    }

    /// Keeps `text` to be written to `secrets/PARTS.../NAME` by [`Store::write_made`].
    fn make(&self, parts: &[&str], name: &str, text: String) {
        self.pending.borrow_mut().push(PendingFile {
            parts: parts.iter().map(|part| part.to_string()).collect(),
            name: name.to_string(),
            text,
        });
    }

    /// The text of `secrets/PARTS.../NAME`: as this compilation made it, or as
    /// the store holds it (`existing` is `secrets/PARTS...`, if it is there).
    fn text(
        &self,
        parts: &[&str],
        existing: Option<&Beneath>,
        name: &str,
    ) -> Result<Option<String>, StoreError> {
        let made = self.pending.borrow().iter().rev().find_map(|file| {
            (file.name == name && file.parts.iter().eq(parts.iter())).then(|| file.text.clone())
        });
        match made {
            Some(text) => Ok(Some(text)),
            None => read_text(existing, name),
        }
    }

    /// Writes what this compilation made, each file durably, in the order it was
    /// made (a value's id first, its recipients last). Called once the compilation
    /// is known to have no error; [`Store::discard_made`] otherwise.
    pub fn write_made(&self) -> Result<(), StoreError> {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for file in &pending {
            let parts: Vec<&str> = file.parts.iter().map(String::as_str).collect();
            let directory = self.directory(&parts, true)?;
            let directory = directory
                .as_ref()
                .ok_or_else(|| io_error(&self.root, "not made"))?;
            write_durably(directory, &file.name, file.text.as_bytes())?;
        }
        Ok(())
    }

    /// Forgets what this compilation made (it had errors): nothing is written, and
    /// the next build makes it again.
    pub fn discard_made(&self) {
        self.pending.borrow_mut().clear();
        self.made.set(Made::default());
    }

    /// What the sealed value `sealed` (given by this store) is, and its id.
    pub fn value_of(&self, sealed: &str) -> Option<SealedValue> {
        self.values.borrow().get(sealed).cloned()
    }

    fn remember(&self, sealed: &str, of: Of, id: Option<String>) {
        let identity = match id {
            Some(id) => Identity::Known(id),
            None => Identity::Unknown,
        };
        self.values.borrow_mut().insert(
            sealed.to_string(),
            SealedValue {
                of: Some(of),
                identity,
            },
        );
    }

    /// A new value id, as a store error when the system gives no randomness.
    fn new_id(&self) -> Result<String, StoreError> {
        sealed_value::new_id().map_err(|error| io_error(Path::new("/dev/urandom"), error))
    }

    pub fn made(&self) -> Made {
        self.made.get()
    }

    /// The store's directory `secrets/PARTS...`, made when `create`.
    pub(crate) fn directory(
        &self,
        parts: &[&str],
        create: bool,
    ) -> Result<Option<Beneath>, StoreError> {
        let relative: PathBuf = std::iter::once("secrets")
            .chain(parts.iter().copied())
            .collect();
        let shown = self.root.join(parts.iter().collect::<PathBuf>());
        let repository = self
            .repository
            .as_ref()
            .map_err(|reason| io_error(&self.root, reason))?;
        match repository.directory(&relative, create) {
            Ok(Some(directory)) => Ok(Some(directory)),
            Ok(None) if create => Err(io_error(&shown, "was not made")),
            Ok(None) => Ok(None),
            Err(error) => Err(store_error(&shown, error)),
        }
    }

    /// The sealed need `name` of `module` on `node`, made if missing or if the node's
    /// key changed since it was sealed.
    pub fn need(
        &self,
        node: &str,
        module: &str,
        name: &str,
        key: &str,
    ) -> Result<String, StoreError> {
        check_parts(&[node, module, name])?;
        let parts = ["needs", node, module];
        let sealed_name = format!("{name}.age");
        let recipient_name = format!("{name}.recipient");
        let value_name = format!("{name}.value");
        let existing = self.directory(&parts, false)?;
        let recorded = self.text(&parts, existing.as_ref(), &recipient_name)?;
        let sealed = self.text(&parts, existing.as_ref(), &sealed_name)?;
        if let (Some(recorded), Some(sealed)) = (&recorded, &sealed)
            && recorded.trim() == key
        {
            let id = self
                .text(&parts, existing.as_ref(), &value_name)?
                .and_then(|text| sealed_value::parse_kept(&text));
            self.remember(sealed, Of::Need, id);
            return Ok(sealed.clone());
        }
        if self.locked {
            let reason = if sealed.is_some() {
                "was sealed to an earlier key of the node and must be remade".to_string()
            } else {
                "has not been made".to_string()
            };
            return Err(StoreError::NotMade { reason });
        }
        let password = random_password()?;
        let sealed = seal(key, password.as_bytes())?;
        let id = self.new_id()?;
        self.make(&parts, &value_name, format!("{id}\n"));
        self.make(&parts, &sealed_name, sealed.clone());
        self.make(&parts, &recipient_name, format!("{key}\n"));
        self.remember(&sealed, Of::Need, Some(id));
        let mut made = self.made.get();
        made.needs += 1;
        self.made.set(made);
        Ok(sealed)
    }

    /// The sealed material of one grant, made if missing or if either key (or the
    /// form) changed since it was made.
    #[allow(clippy::too_many_arguments)]
    pub fn grant(
        &self,
        provider: &str,
        service: &str,
        consumer: &str,
        module: &str,
        name: &str,
        consumer_key: &str,
        provider_key: &str,
        form: Form,
    ) -> Result<GrantMaterial, StoreError> {
        check_parts(&[provider, service, consumer, module, name])?;
        let parts = ["grants", provider, service, consumer, module, name];
        let expected = format!(
            "consumer {consumer_key}\nprovider {provider_key}\nform {}\n",
            form.name()
        );
        let existing = self.directory(&parts, false)?;
        let recorded = self.text(&parts, existing.as_ref(), "recipients")?;
        let consumer_sealed = self.text(&parts, existing.as_ref(), "consumer.age")?;
        let provider_sealed = self.text(&parts, existing.as_ref(), "provider.age")?;
        if let (Some(recorded), Some(consumer_sealed), Some(provider_sealed)) =
            (&recorded, &consumer_sealed, &provider_sealed)
            && *recorded == expected
        {
            let id = self
                .text(&parts, existing.as_ref(), "value")?
                .and_then(|text| sealed_value::parse_kept(&text));
            self.remember(consumer_sealed, Of::Credential, id.clone());
            self.remember(provider_sealed, Of::Grant, id);
            return Ok(GrantMaterial {
                consumer: consumer_sealed.clone(),
                provider: provider_sealed.clone(),
            });
        }
        if self.locked {
            let reason = if recorded.is_some() {
                "must be remade: a key changed since it was made".to_string()
            } else {
                "has not been made".to_string()
            };
            return Err(StoreError::NotMade { reason });
        }
        let password = random_password()?;
        let check: Zeroizing<String> = match form {
            Form::ScramSha256 => Zeroizing::new(scram::verifier(password.as_bytes())?),
            Form::RabbitSha256 => Zeroizing::new(rabbit_hash::hash(password.as_bytes())?),
            Form::Plain => password.clone(),
        };
        let consumer_sealed = seal(consumer_key, password.as_bytes())?;
        let provider_sealed = seal(provider_key, check.as_bytes())?;
        let id = self.new_id()?;
        self.make(&parts, "value", format!("{id}\n"));
        self.make(&parts, "consumer.age", consumer_sealed.clone());
        self.make(&parts, "provider.age", provider_sealed.clone());
        self.make(&parts, "recipients", expected);
        self.remember(&consumer_sealed, Of::Credential, Some(id.clone()));
        self.remember(&provider_sealed, Of::Grant, Some(id));
        let mut made = self.made.get();
        made.grants += 1;
        self.made.set(made);
        Ok(GrantMaterial {
            consumer: consumer_sealed,
            provider: provider_sealed,
        })
    }
}
