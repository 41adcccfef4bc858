//! Users and groups as the host has them: parsed from `ROOT/etc/passwd` and
//! `ROOT/etc/group` (never the names of the machine running a `--root` apply), with
//! `getent` as a fallback on the live host. Must not change any account.

use std::collections::{BTreeSet, HashMap};
use std::io;

use crate::host::Host;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserEntry {
    pub uid: u32,
    pub gid: u32,
    pub home: String,
    pub shell: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupEntry {
    pub gid: u32,
    pub members: Vec<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Accounts {
    users: HashMap<String, UserEntry>,
    groups: HashMap<String, GroupEntry>,
    live: bool,
}

impl Accounts {
    pub fn load(host: &Host) -> io::Result<Accounts> {
        let mut accounts = Accounts {
            live: host.is_live(),
            ..Accounts::default()
        };
        for line in read_lines(&host.path("/etc/passwd"))? {
            if let Some((name, entry)) = parse_passwd(&line) {
                accounts.users.entry(name).or_insert(entry);
            }
        }
        for line in read_lines(&host.path("/etc/group"))? {
            if let Some((name, entry)) = parse_group(&line) {
                accounts.groups.entry(name).or_insert(entry);
            }
        }
        Ok(accounts)
    }

    /// A user by name; `root` always exists (uid 0), even in a bare `--root` tree.
    pub fn user(&self, name: &str) -> Option<UserEntry> {
        if let Some(entry) = self.users.get(name) {
            return Some(entry.clone());
        }
        if name == "root" {
            return Some(UserEntry {
                uid: 0,
                gid: 0,
                home: "/root".to_string(),
                shell: "/bin/sh".to_string(),
            });
        }
        if self.live {
            return getent("passwd", name)
                .and_then(|line| parse_passwd(&line))
                .map(|(_, entry)| entry);
        }
        None
    }

    /// A group by name; `root` always exists (gid 0).
    pub fn group(&self, name: &str) -> Option<GroupEntry> {
        if let Some(entry) = self.groups.get(name) {
            return Some(entry.clone());
        }
        if name == "root" {
            return Some(GroupEntry {
                gid: 0,
                members: Vec::new(),
            });
        }
        if self.live {
            return getent("group", name)
                .and_then(|line| parse_group(&line))
                .map(|(_, entry)| entry);
        }
        None
    }

    pub fn uid(&self, name: &str) -> Option<u32> {
        match self.users.get(name) {
            Some(entry) => Some(entry.uid),
            None => self.user(name).map(|entry| entry.uid),
        }
    }

    pub fn gid(&self, name: &str) -> Option<u32> {
        match self.groups.get(name) {
            Some(entry) => Some(entry.gid),
            None => self.group(name).map(|entry| entry.gid),
        }
    }

    /// The supplementary groups `user` is listed in.
    pub fn supplementary_groups(&self, user: &str) -> BTreeSet<String> {
        self.groups
            .iter()
            .filter(|(_, entry)| entry.members.iter().any(|member| member == user))
            .map(|(name, _)| name.clone())
            .collect()
    }
}

fn read_lines(path: &std::path::Path) -> io::Result<Vec<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.lines().map(str::to_string).collect()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(error) => Err(error),
    }
}

fn parse_passwd(line: &str) -> Option<(String, UserEntry)> {
    let fields: Vec<&str> = line.split(':').collect();
    match fields.as_slice() {
        [name, _, uid, gid, _, home, shell, ..]
            if !name.is_empty() && !name.starts_with(['+', '-']) =>
        {
            Some((
                name.to_string(),
                UserEntry {
                    uid: uid.parse().ok()?,
                    gid: gid.parse().ok()?,
                    home: home.to_string(),
                    shell: shell.to_string(),
                },
            ))
        }
        _ => None,
    }
}

fn parse_group(line: &str) -> Option<(String, GroupEntry)> {
    let fields: Vec<&str> = line.split(':').collect();
    match fields.as_slice() {
        [name, _, gid, members, ..] if !name.is_empty() && !name.starts_with(['+', '-']) => Some((
            name.to_string(),
            GroupEntry {
                gid: gid.parse().ok()?,
                members: members
                    .split(',')
                    .filter(|member| !member.is_empty())
                    .map(str::to_string)
                    .collect(),
            },
        )),
        _ => None,
    }
}

fn getent(database: &str, name: &str) -> Option<String> {
    let output = std::process::Command::new("getent")
        .arg(database)
        .arg(name)
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout)
        .ok()?
        .lines()
        .next()
        .map(str::to_string)
}
