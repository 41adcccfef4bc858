//! The `user` shape: a system user and its group of the same name. Fields and value
//! rules only; creating users is the applier's business.

use serde::{Deserialize, Serialize};

use crate::check;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    /// A system user (uid from the system range); only used when the user is created.
    pub system: bool,
    /// The home directory; `null` leaves it to the host tools.
    pub home: Option<String>,
    /// The login shell; `null` leaves it to the host tools.
    pub shell: Option<String>,
    /// Supplementary groups.
    pub groups: Vec<String>,
}

impl User {
    pub const FIELDS: &'static [&'static str] = &["name", "system", "home", "shell", "groups"];

    pub fn identity(&self) -> &str {
        &self.name
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::user_name(&self.name).map_err(|reason| ("name", reason))?;
        if let Some(home) = &self.home {
            check::account_path(home).map_err(|reason| ("home", reason))?;
        }
        if let Some(shell) = &self.shell {
            check::account_path(shell).map_err(|reason| ("shell", reason))?;
        }
        for group in &self.groups {
            check::user_name(group).map_err(|reason| ("groups", reason))?;
        }
        Ok(())
    }
}
