//! The `secret` shape on the host: decrypt the sealed value with the node's age
//! identity; the plaintext is then written like a file (owner and mode before content,
//! atomically). Plaintext must never reach the output, the record or an error message,
//! and is held only in buffers wiped when dropped ([`Zeroizing`]), never regrown
//! without wiping the old allocation.

use std::io::{self, Read};
use std::path::Path;

use zeroize::Zeroizing;

use crate::codes::Code;
use crate::problem::Problem;

/// The node's age identities, read from an `age-keygen` identity file (see
/// [`crate::identity::load`], which checks the file before reading it).
pub struct Identities {
    identities: Vec<Box<dyn age::Identity + Send + Sync>>,
}

impl Identities {
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
    pub fn decrypt(&self, sealed: &str) -> Result<Zeroizing<Vec<u8>>, Problem> {
        let refuse = |reason: String| {
            Problem::new(
                Code::UndecryptableSecret,
                format!("the secret cannot be decrypted: {reason}"),
                "seal it to this node's recipient (`meshc build` reseals when a node's key changes), or give this node's identity",
            )
        };
        let armored = age::armor::ArmoredReader::new(sealed.as_bytes());
        let decryptor = age::Decryptor::new(armored).map_err(|error| refuse(error.to_string()))?;
        let reader = decryptor
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
        // the plaintext is shorter than its armored ciphertext: one allocation
        read_wiped(reader, sealed.len() as u64).map_err(|error| refuse(error.to_string()))
    }
}

/// Reads `reader` to its end into a buffer wiped when dropped. `expected` (the size
/// known beforehand) is reserved at once; should more come, the buffer grows into a new
/// wiped one and the old is wiped, so no copy of the bytes is left behind in freed
/// memory (`read_to_end` would leave one at each reallocation).
pub fn read_wiped(mut reader: impl Read, expected: u64) -> io::Result<Zeroizing<Vec<u8>>> {
    let reserved = usize::try_from(expected).unwrap_or(0).saturating_add(1);
    let mut bytes = Zeroizing::new(Vec::with_capacity(reserved));
    let mut chunk = Zeroizing::new([0u8; 8 * 1024]);
    loop {
        let count = match reader.read(chunk.as_mut_slice()) {
            Ok(0) => return Ok(bytes),
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        let read = chunk.get(..count).unwrap_or_default();
        let needed = bytes.len().saturating_add(count);
        if needed > bytes.capacity() {
            let doubled = bytes.capacity().saturating_mul(2);
            let mut grown = Zeroizing::new(Vec::with_capacity(needed.max(doubled)));
            grown.extend_from_slice(&bytes);
            // the old allocation is wiped as it is dropped here
            bytes = grown;
        }
        bytes.extend_from_slice(read);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_wiped_reads_everything_whether_the_size_was_known_or_not() {
        let text: Vec<u8> = (0..50_000u32).map(|n| (n % 251) as u8).collect();
        for expected in [0, 10, 49_999, 50_000, 1 << 20] {
            let read = read_wiped(text.as_slice(), expected).unwrap();
            assert_eq!(read.as_slice(), text.as_slice());
        }
        assert!(read_wiped(&b""[..], 0).unwrap().is_empty());
    }
}
