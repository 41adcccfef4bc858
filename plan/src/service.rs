//! The `service` shape: a long-running program as a systemd service. Fields and value
//! rules only; the applier writes the unit file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check;

/// The restart policies a service may ask for.
pub const RESTART_POLICIES: &[&str] = &["always", "on-failure", "no"];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub name: String,
    /// The program and its arguments; the program is an absolute path.
    pub exec: Vec<String>,
    /// The user it runs as.
    pub user: String,
    pub environment: BTreeMap<String, String>,
    /// Units it starts after: a plain name means that mesh service or container
    /// (`postgres` is `postgres.service`); a name with a dot is a systemd unit
    /// (`network-online.target`).
    pub after: Vec<String>,
    /// `always`, `on-failure` or `no`.
    pub restart: String,
}

impl Service {
    pub const FIELDS: &'static [&'static str] =
        &["name", "exec", "user", "environment", "after", "restart"];

    pub fn identity(&self) -> &str {
        &self.name
    }

    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        check::name(&self.name).map_err(|reason| ("name", reason))?;
        match self.exec.first() {
            Some(program) => check::node_path(program).map_err(|reason| {
                (
                    "exec",
                    format!("the program must be an absolute path: {reason}"),
                )
            })?,
            None => return Err(("exec", "the command is empty".to_string())),
        }
        for argument in &self.exec {
            check::unit_text(argument).map_err(|reason| ("exec", reason))?;
        }
        check::name(&self.user).map_err(|reason| ("user", reason))?;
        check::environment(&self.environment).map_err(|reason| ("environment", reason))?;
        for unit in &self.after {
            let unit_ok = !unit.is_empty()
                && unit.bytes().all(|byte| {
                    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b'@' | b':')
                });
            if !unit_ok {
                return Err(("after", format!("`{unit}` is not a unit name")));
            }
        }
        if !RESTART_POLICIES.contains(&self.restart.as_str()) {
            return Err((
                "restart",
                format!(
                    "`{}` is not one of `always`, `on-failure`, `no`",
                    self.restart
                ),
            ));
        }
        Ok(())
    }
}
