//! The `file` shape: a regular file's content, owner, group and mode. Fields and value
//! rules only; the applier writes it atomically.

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::check;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub path: String,
    /// The content as UTF-8 text; exactly one of `content` and `content_base64` is set.
    pub content: Option<String>,
    /// The content as standard base64 (for bytes that are not UTF-8).
    pub content_base64: Option<String>,
    pub owner: String,
    pub group: String,
    /// Four octal digits, `0644` by default; setuid and setgid are refused.
    pub mode: String,
}

impl File {
    pub const FIELDS: &'static [&'static str] = &[
        "path",
        "content",
        "content_base64",
        "owner",
        "group",
        "mode",
    ];

    pub fn identity(&self) -> &str {
        &self.path
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::shape_path(&self.path).map_err(|reason| ("path", reason))?;
        match (&self.content, &self.content_base64) {
            (Some(_), None) => {}
            (None, Some(encoded)) => {
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|error| ("content_base64", format!("not standard base64: {error}")))?;
            }
            (Some(_), Some(_)) => {
                return Err((
                    "content",
                    "both `content` and `content_base64` are set".to_string(),
                ));
            }
            (None, None) => {
                return Err((
                    "content",
                    "neither `content` nor `content_base64` is set".to_string(),
                ));
            }
        }
        check::account(&self.owner).map_err(|reason| ("owner", reason))?;
        check::account(&self.group).map_err(|reason| ("group", reason))?;
        check::file_mode(&self.mode).map_err(|reason| ("mode", reason))?;
        Ok(())
    }

    /// The bytes to write; empty when the shape is invalid (call `validate` first).
    pub fn content_bytes(&self) -> Vec<u8> {
        match (&self.content, &self.content_base64) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .unwrap_or_default(),
            (None, None) => Vec::new(),
        }
    }

    /// The mode as bits; valid once `validate` passed.
    pub fn mode_bits(&self) -> u32 {
        check::file_mode(&self.mode).unwrap_or(0o644)
    }
}
