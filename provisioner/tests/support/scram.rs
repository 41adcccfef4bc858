//! PostgreSQL SCRAM-SHA-256 verifiers (RFC 5802, RFC 7677) computed the way the compiler
//! computes a grant's (`compiler::scram`), reimplemented here so that the provisioner's
//! tests do not depend on the compiler. PostgreSQL accepting a login made with one is
//! the check that both agree.
#![allow(dead_code)]

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// `SCRAM-SHA-256$4096:SALT$STOREDKEY:SERVERKEY` of `password` with `salt`.
pub fn verifier(password: &str, salt: &[u8]) -> String {
    let mut salted = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), salt, 4096, &mut salted);
    let stored_key = Sha256::digest(hmac(&salted, b"Client Key"));
    let server_key = hmac(&salted, b"Server Key");
    let encode = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    format!(
        "SCRAM-SHA-256$4096:{}${}:{}",
        encode(salt),
        encode(&stored_key),
        encode(&server_key)
    )
}
