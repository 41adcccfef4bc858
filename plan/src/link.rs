//! The `link` shape: a symbolic link at `path` pointing at `target`. Fields and value
//! rules only; the applier replaces links atomically.

use serde::{Deserialize, Serialize};

use crate::check;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub path: String,
    /// What the link points at, written as given (absolute or relative).
    pub target: String,
}

impl Link {
    pub const FIELDS: &'static [&'static str] = &["path", "target"];

    pub fn identity(&self) -> &str {
        &self.path
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::shape_path(&self.path).map_err(|reason| ("path", reason))?;
        if self.target.is_empty() {
            return Err(("target", "the target is empty".to_string()));
        }
        check::display_text(&self.target).map_err(|reason| ("target", reason))?;
        if self.target.len() > 4095 {
            return Err(("target", "the target is longer than 4095 bytes".to_string()));
        }
        Ok(())
    }
}
