//! The `directory` shape: a directory with owner, group and mode. Fields and value
//! rules only; the applier creates it and never deletes what it holds.

use serde::{Deserialize, Serialize};

use crate::check;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Directory {
    pub path: String,
    pub owner: String,
    pub group: String,
    /// Four octal digits, `0755` by default.
    pub mode: String,
}

impl Directory {
    pub const FIELDS: &'static [&'static str] = &["path", "owner", "group", "mode"];

    pub fn identity(&self) -> &str {
        &self.path
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::directory_path(&self.path).map_err(|reason| ("path", reason))?;
        check::account(&self.owner).map_err(|reason| ("owner", reason))?;
        check::account(&self.group).map_err(|reason| ("group", reason))?;
        let mode = check::mode(&self.mode).map_err(|reason| ("mode", reason))?;
        check::state_directory(&self.path, &self.owner, &self.group, mode)
            .map_err(|reason| ("owner", reason))?;
        Ok(())
    }

    /// The mode as bits; valid once `validate` passed.
    pub fn mode_bits(&self) -> u32 {
        check::mode(&self.mode).unwrap_or(0o755)
    }
}
