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
