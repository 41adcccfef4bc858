//! RabbitMQ's `rabbit_password_hashing_sha256` password hashes, the form RabbitMQ
//! stores for a user: base64(4-byte salt ++ sha256(salt ++ utf8 password)). Computed
//! when a grant is made, so the broker never sees the password.

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::secrets::StoreError;

/// The hash of `password` with a given salt.
pub fn hash_with_salt(password: &[u8], salt: [u8; 4]) -> String {
    let mut salted = Vec::with_capacity(4 + 32);
    salted.extend_from_slice(&salt);
    let digest = Sha256::new()
        .chain_update(salt)
        .chain_update(password)
        .finalize();
    salted.extend_from_slice(&digest);
    base64::engine::general_purpose::STANDARD.encode(salted)
}

/// The hash of `password` with a fresh random salt.
pub fn hash(password: &[u8]) -> Result<String, StoreError> {
    let mut salt = [0u8; 4];
    getrandom::getrandom(&mut salt).map_err(|error| StoreError::Io {
        path: "/dev/urandom".into(),
        reason: error.to_string(),
    })?;
    Ok(hash_with_salt(password, salt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_rabbitmqs_documented_example() {
        // RabbitMQ's "Credentials and Passwords" guide computes the hash of
        // "test12" with the salt 0x908DC60A and gets this value
        assert_eq!(
            hash_with_salt(b"test12", [0x90, 0x8d, 0xc6, 0x0a]),
            "kI3GCqW5JLMJa4iX1lo7X4D6XbYqlLgxIs30+P6tENUV2POR"
        );
    }

    #[test]
    fn fresh_salts_differ() {
        assert_ne!(hash(b"same").unwrap(), hash(b"same").unwrap());
    }
}
