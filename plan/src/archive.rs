//! The `archive` shape: a built artifact (uncompressed POSIX tar, named by digest)
//! unpacked as the directory at `path`. Fields and value rules only.
//!
//! The design's `digest` and `source` fields are spelled `artifact_digest` and
//! `artifact` here, because every shape already carries `digest` (its own) and `source`
//! (where it was declared) at the same level of the JSON object.

use serde::{Deserialize, Serialize};

use crate::canonical::is_sha256_digest;
use crate::check;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Archive {
    pub path: String,
    /// The artifact's file name in the node's artifact store, e.g. `sha256-HEX.tar`.
    pub artifact: String,
    /// `sha256:HEX` of the archive's bytes, verified before unpacking.
    pub artifact_digest: String,
    pub owner: String,
    pub group: String,
}

impl Archive {
    pub const FIELDS: &'static [&'static str] =
        &["path", "artifact", "artifact_digest", "owner", "group"];

    pub fn identity(&self) -> &str {
        &self.path
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::shape_path(&self.path).map_err(|reason| ("path", reason))?;
        let plain_name = !self.artifact.is_empty()
            && self.artifact != "."
            && self.artifact != ".."
            && self
                .artifact
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'));
        if !plain_name {
            return Err((
                "artifact",
                format!(
                    "`{}` is not a plain artifact file name such as `sha256-HEX.tar`",
                    self.artifact
                ),
            ));
        }
        if !is_sha256_digest(&self.artifact_digest) {
            return Err((
                "artifact_digest",
                format!(
                    "`{}` is not `sha256:` and 64 lowercase hex digits",
                    self.artifact_digest
                ),
            ));
        }
        check::account(&self.owner).map_err(|reason| ("owner", reason))?;
        check::account(&self.group).map_err(|reason| ("group", reason))?;
        Ok(())
    }
}
