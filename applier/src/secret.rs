//! The `secret` shape on the host: decrypt the sealed value with the node's age
//! identity; the plaintext is then written like a file (owner and mode before content,
//! atomically). Plaintext must never reach the output, the record or an error message.

use std::io::Read;
use std::path::Path;

use crate::codes::Code;
use crate::problem::Problem;

/// The node's age identities, read from an `age-keygen` identity file.
pub struct Identities {
    identities: Vec<Box<dyn age::Identity + Send + Sync>>,
}

impl Identities {
    pub fn load(path: &Path) -> Result<Identities, Problem> {
        let bytes = std::fs::read(path)
            .map_err(|error| Identities::unreadable(path, &error.to_string()))?;
        Identities::from_bytes(path, &bytes)
    }

    /// The identities in `bytes`, read from `path` (named in messages).
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Identities, Problem> {
        let unreadable = |reason: String| Identities::unreadable(path, &reason);
        let file =
            age::IdentityFile::from_buffer(bytes).map_err(|error| unreadable(error.to_string()))?;
        let identities = file
            .into_identities()
            .map_err(|error| unreadable(error.to_string()))?;
        if identities.is_empty() {
            return Err(unreadable("it holds no identity".to_string()));
        }
        Ok(Identities { identities })
    }

    /// E512 for the identity at `path`.
    pub fn unreadable(path: &Path, reason: &str) -> Problem {
        Problem::new(
            Code::UnreadableIdentity,
            format!(
                "cannot read the age identity `{}`: {reason}",
                path.display()
            ),
            "give the node's identity file as written by `age-keygen` with `--identity`, or put it at `/var/lib/mesh/identity`",
        )
    }

    /// Decrypts an ASCII-armored age file. Refuses anything it cannot decrypt
    /// completely; never returns partial plaintext.
    pub fn decrypt(&self, sealed: &str) -> Result<Vec<u8>, Problem> {
        let refuse = |reason: String| {
            Problem::new(
                Code::UndecryptableSecret,
                format!("the secret cannot be decrypted: {reason}"),
                "seal it to this node's recipient (`meshc build` reseals when a node's key changes), or give this node's identity",
            )
        };
        let armored = age::armor::ArmoredReader::new(sealed.as_bytes());
        let decryptor = age::Decryptor::new(armored).map_err(|error| refuse(error.to_string()))?;
        let mut reader = decryptor
            .decrypt(
                self.identities
                    .iter()
                    .map(|identity| identity.as_ref() as &dyn age::Identity),
            )
            .map_err(|error| match error {
                age::DecryptError::NoMatchingKeys => refuse(
                    "it is not sealed to this node's identity (sealed for another node?)"
                        .to_string(),
                ),
                other => refuse(other.to_string()),
            })?;
        let mut plaintext = Vec::new();
        reader
            .read_to_end(&mut plaintext)
            .map_err(|error| refuse(error.to_string()))?;
        Ok(plaintext)
    }
}
