//! The `secret` shape: an age-sealed value the node decrypts into a file. Fields and
//! value rules only; the plan never holds plaintext and this crate never decrypts.

use serde::{Deserialize, Serialize};

use crate::check;

pub const ARMOR_BEGIN: &str = "-----BEGIN AGE ENCRYPTED FILE-----";
pub const ARMOR_END: &str = "-----END AGE ENCRYPTED FILE-----";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Secret {
    pub path: String,
    /// The ASCII-armored age file, sealed to the node's recipient.
    pub sealed: String,
    pub owner: String,
    pub group: String,
    /// Four octal digits, `0400` by default, at most `0640`.
    pub mode: String,
}

impl Secret {
    pub const FIELDS: &'static [&'static str] = &["path", "sealed", "owner", "group", "mode"];

    pub fn identity(&self) -> &str {
        &self.path
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::shape_path(&self.path).map_err(|reason| ("path", reason))?;
        let sealed = self.sealed.trim();
        if !sealed.starts_with(ARMOR_BEGIN) || !sealed.ends_with(ARMOR_END) {
            return Err((
                "sealed",
                format!("not an ASCII-armored age file (`{ARMOR_BEGIN}`)"),
            ));
        }
        header_within_bounds(sealed).map_err(|reason| ("sealed", reason))?;
        check::account(&self.owner).map_err(|reason| ("owner", reason))?;
        check::account(&self.group).map_err(|reason| ("group", reason))?;
        check::secret_mode(&self.mode).map_err(|reason| ("mode", reason))?;
        Ok(())
    }

    /// The mode as bits; valid once `validate` passed.
    pub fn mode_bits(&self) -> u32 {
        check::secret_mode(&self.mode).unwrap_or(0o400)
    }
}

/// The most recipient stanzas a sealed value's header may hold: mesh seals each
/// value to one node's key. age's reader reads its header again from the start for
/// every line it needs, so a value sealed to thousands of recipients (or with one
/// stanza of thousands of lines) stalls an apply for hours; it is refused as the
/// plan is checked.
pub const MAX_STANZAS: usize = 16;

/// The most bytes a sealed value's header (up to its `---` line) may take.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Whether the age header of the armored `sealed` ends within [`MAX_HEADER_BYTES`]
/// and holds at most [`MAX_STANZAS`] stanzas. Only that much of the armor is
/// decoded; what is not age at all is for the decryption to say.
fn header_within_bounds(sealed: &str) -> Result<(), String> {
    use base64::Engine as _;
    // base64 characters enough for the largest header allowed, whole quanta
    let wanted = MAX_HEADER_BYTES.div_ceil(3) * 4 + 4;
    let mut encoded = String::with_capacity(wanted);
    for line in sealed.lines().skip(1) {
        let line = line.trim();
        if line.starts_with("-----") || encoded.len() >= wanted {
            break;
        }
        encoded.push_str(line);
    }
    let whole = encoded.len().min(wanted) / 4 * 4;
    let Ok(header) = base64::engine::general_purpose::STANDARD.decode(&encoded[..whole]) else {
        // padding within the part taken, or no base64: age says what is wrong
        return Ok(());
    };
    let mut stanzas = 0;
    let mut offset = 0;
    for line in header.split(|byte| *byte == b'\n') {
        if line.starts_with(b"---") {
            return Ok(());
        }
        offset += line.len() + 1;
        if line.starts_with(b"-> ") {
            stanzas += 1;
            if stanzas > MAX_STANZAS {
                return Err(format!(
                    "its age header has more than {MAX_STANZAS} recipient stanzas; a value is sealed to one node"
                ));
            }
        }
        if offset > MAX_HEADER_BYTES {
            break;
        }
    }
    if header.len() < MAX_HEADER_BYTES {
        // the whole armor was decoded and has no end of header: age says so
        return Ok(());
    }
    Err(format!(
        "its age header is longer than {MAX_HEADER_BYTES} bytes; a value is sealed to one node"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    /// An armored age file whose header holds `stanzas` X25519 stanzas, each with a
    /// body of `lines` lines.
    fn armored(stanzas: usize, lines: usize) -> String {
        let mut header = String::from("age-encryption.org/v1\n");
        for index in 0..stanzas {
            header.push_str(&format!("-> X25519 recipient{index}\n"));
            for _ in 0..lines {
                header.push_str(&"A".repeat(64));
                header.push('\n');
            }
            header.push_str("c2hvcnQ\n");
        }
        header.push_str("--- mac\n");
        let mut bytes = header.into_bytes();
        bytes.extend_from_slice(&[7u8; 64]);
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let mut text = format!("{ARMOR_BEGIN}\n");
        for chunk in encoded.as_bytes().chunks(64) {
            text.push_str(std::str::from_utf8(chunk).expect("base64"));
            text.push('\n');
        }
        text.push_str(ARMOR_END);
        text.push('\n');
        text
    }

    fn secret(sealed: String) -> Secret {
        Secret {
            path: "/etc/app/token".to_string(),
            sealed,
            owner: "root".to_string(),
            group: "root".to_string(),
            mode: "0400".to_string(),
        }
    }

    /// A value sealed to one node passes; one whose header holds more stanzas than
    /// any mesh seals, or one stanza of thousands of lines (age reads its header
    /// again for every line: an apply stalled for hours), is refused as the plan is
    /// checked (red team).
    #[test]
    fn a_header_of_many_stanzas_or_lines_is_refused() {
        assert_eq!(secret(armored(1, 0)).validate(), Ok(()));
        assert_eq!(secret(armored(MAX_STANZAS, 0)).validate(), Ok(()));
        let (field, reason) = secret(armored(MAX_STANZAS + 1, 0))
            .validate()
            .expect_err("too many stanzas");
        assert_eq!(field, "sealed");
        assert!(reason.contains("recipient stanzas"), "{reason}");
        let (field, reason) = secret(armored(1, 400)).validate().expect_err("too long");
        assert_eq!(field, "sealed");
        assert!(reason.contains("longer than"), "{reason}");
        // what is not age at all is for the decryption to say
        let garbled = format!("{ARMOR_BEGIN}\n!!!!\n{ARMOR_END}\n");
        assert_eq!(secret(garbled).validate(), Ok(()));
    }
}
