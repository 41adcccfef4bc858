//! PostgreSQL SCRAM-SHA-256 verifiers (RFC 5802, RFC 7677), the form PostgreSQL
//! stores in `pg_authid.rolpassword`: `SCRAM-SHA-256$4096:SALT$STOREDKEY:SERVERKEY`.
//! Computed when a grant is made, so the database host never sees the password.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::secrets::StoreError;

/// PostgreSQL's default iteration count.
pub const ITERATIONS: u32 = 4096;

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    // new_from_slice fails only for MACs with a fixed key length; HMAC takes any
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// The verifier of `password` with a given salt.
pub fn verifier_with_salt(password: &[u8], salt: &[u8]) -> String {
    let mut salted = Zeroizing::new([0u8; 32]);
    pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, ITERATIONS, &mut salted[..]);
    let client_key = Zeroizing::new(hmac(&salted[..], b"Client Key"));
    let stored_key = Sha256::digest(&client_key[..]);
    let server_key = hmac(&salted[..], b"Server Key");
    let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    format!(
        "SCRAM-SHA-256${ITERATIONS}:{}${}:{}",
        encode(salt),
        encode(&stored_key),
        encode(&server_key)
    )
}

/// The verifier of `password` with a fresh random 16-byte salt.
pub fn verifier(password: &[u8]) -> Result<String, StoreError> {
    let mut salt = [0u8; 16];
    getrandom::getrandom(&mut salt).map_err(|error| StoreError::Io {
        path: "/dev/urandom".into(),
        reason: error.to_string(),
    })?;
    Ok(verifier_with_salt(password, &salt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_rfc_7677_test_vector() {
        // RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==
        let salt = base64::engine::general_purpose::STANDARD
            .decode("W22ZaJ0SNY7soEsUEjb6gQ==")
            .unwrap();
        let verifier = verifier_with_salt(b"pencil", &salt);
        let mut salted = [0u8; 32];
        pbkdf2::pbkdf2_hmac::<Sha256>(b"pencil", &salt, 4096, &mut salted);
        // the RFC's ClientProof and ServerSignature follow from these keys; check the
        // server signature of the RFC's exchange against our ServerKey
        let server_key = hmac(&salted, b"Server Key");
        let auth_message = b"n=user,r=rOprNGfwEbeRWgbNEkqO,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let signature = hmac(&server_key, auth_message);
        assert_eq!(
            base64::engine::general_purpose::STANDARD.encode(signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        assert!(verifier.starts_with("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$"));
    }
}
