//! The `user` shape on the host: a system user and its group, created and changed with
//! the host's own `useradd`/`usermod` (`--prefix ROOT` under `--root`), each run only
//! after the account files are proven to be inside the root. Never removes a user or a
//! group: withdrawn users are kept.

use std::collections::BTreeSet;

use plan::User;

use crate::Planned;
use crate::accounts::{self, Accounts};
use crate::host::{Host, run_tool};
use crate::problem::Problem;

pub fn inspect(user: &User, accounts: &Accounts) -> Planned {
    let Some(entry) = accounts.user(&user.name) else {
        return Planned::Create;
    };
    let mut details = Vec::new();
    if let Some(home) = &user.home
        && &entry.home != home
    {
        details.push(format!("home `{}` -> `{home}`", entry.home));
    }
    if let Some(shell) = &user.shell
        && &entry.shell != shell
    {
        details.push(format!("shell `{}` -> `{shell}`", entry.shell));
    }
    if groups_differ(user, accounts) {
        details.push(format!("groups -> [{}]", user.groups.join(", ")));
    }
    if details.is_empty() {
        Planned::Unchanged
    } else {
        Planned::change(details)
    }
}

fn groups_differ(user: &User, accounts: &Accounts) -> bool {
    let wanted: BTreeSet<String> = user.groups.iter().cloned().collect();
    accounts.supplementary_groups(&user.name) != wanted
}

fn prefix_arguments(host: &Host) -> Vec<String> {
    match host.offline_root() {
        Some(root) => vec!["--prefix".to_string(), root.display().to_string()],
        None => Vec::new(),
    }
}

/// Creates the user and, unless it exists already, its group of the same name. The
/// home directory is not created (declare a `directory` for it). Supplementary groups
/// are set afterwards by [`set_groups`], once every user of the plan exists.
pub fn create(user: &User, host: &Host, accounts: &Accounts) -> Result<(), Problem> {
    accounts::prove_account_files(host)?;
    accounts::prove_useradd_settings(host)?;
    let mut arguments = prefix_arguments(host);
    if user.system {
        arguments.push("--system".to_string());
    }
    arguments.push("--no-create-home".to_string());
    if let Some(home) = &user.home {
        arguments.extend(["--home-dir".to_string(), home.clone()]);
    }
    if let Some(shell) = &user.shell {
        arguments.extend(["--shell".to_string(), shell.clone()]);
    }
    if accounts.group(&user.name).is_some() {
        arguments.extend(["--gid".to_string(), user.name.clone()]);
    } else {
        arguments.push("--user-group".to_string());
    }
    arguments.push(user.name.clone());
    run_tool("useradd", &arguments).map(|_| ())
}

/// Changes home and shell of an existing user where the plan sets them.
pub fn change(user: &User, host: &Host, accounts: &Accounts) -> Result<(), Problem> {
    let Some(entry) = accounts.user(&user.name) else {
        return Ok(());
    };
    let mut arguments = prefix_arguments(host);
    let before = arguments.len();
    if let Some(home) = &user.home
        && &entry.home != home
    {
        arguments.extend(["--home".to_string(), home.clone()]);
    }
    if let Some(shell) = &user.shell
        && &entry.shell != shell
    {
        arguments.extend(["--shell".to_string(), shell.clone()]);
    }
    if arguments.len() == before {
        return Ok(());
    }
    accounts::prove_account_files(host)?;
    arguments.push(user.name.clone());
    run_tool("usermod", &arguments).map(|_| ())
}

/// Makes the user's supplementary groups exactly the plan's.
pub fn set_groups(user: &User, host: &Host, accounts: &Accounts) -> Result<bool, Problem> {
    if !groups_differ(user, accounts) {
        return Ok(false);
    }
    accounts::prove_account_files(host)?;
    let mut arguments = prefix_arguments(host);
    arguments.extend([
        "--groups".to_string(),
        user.groups.join(","),
        user.name.clone(),
    ]);
    run_tool("usermod", &arguments).map(|_| true)
}
