//! Undeclared needs, checked before anything changes: every shape's parent directory,
//! owner and group, a user's groups, a service's user and a container's mount sources
//! must be declared in the plan or present on the host, and no path may run through a
//! symlink or a non-directory on the host. Reads the host through the confined layer,
//! never changes it.

use std::collections::{HashMap, HashSet};

use plan::{Kind, Plan, Resource, Shape};

use crate::accounts::Accounts;
use crate::codes::Code;
use crate::confined::EntryKind;
use crate::host::Host;
use crate::problem::Problem;

#[derive(Clone, Debug, PartialEq, Eq)]
enum HostPath {
    Directory,
    Missing,
    Symlink,
    NotDirectory,
}

struct Needs<'a> {
    host: &'a Host,
    accounts: &'a Accounts,
    declared_directories: HashSet<&'a str>,
    declared_paths: HashSet<&'a str>,
    declared_users: HashSet<&'a str>,
    /// Paths that withdrawal is about to free (withdrawn files, links, secrets).
    freed_paths: &'a HashSet<String>,
    cache: HashMap<String, HostPath>,
}

impl Needs<'_> {
    fn host_path(&mut self, node_path: &str) -> HostPath {
        if let Some(known) = self.cache.get(node_path) {
            return known.clone();
        }
        let state = match self.host.fs().entry(node_path) {
            Ok(Some(entry)) => match entry.kind {
                EntryKind::Symlink => HostPath::Symlink,
                EntryKind::Directory => HostPath::Directory,
                EntryKind::File | EntryKind::Other => HostPath::NotDirectory,
            },
            Ok(None) => HostPath::Missing,
            // a parent on the way that the layer refuses: reported at that parent
            Err(error) if crate::confined::is_symlink_refusal(&error) => HostPath::Symlink,
            // someone else's directory in a user's (E524): there, and the shape's own
            // inspection refuses it
            Err(error) if crate::confined::unsafe_ownership(&error).is_some() => {
                HostPath::Directory
            }
            Err(_) => HostPath::Missing,
        };
        self.cache.insert(node_path.to_string(), state.clone());
        state
    }

    fn has_user(&self, name: &str) -> bool {
        self.declared_users.contains(name) || self.accounts.user(name).is_some()
    }

    fn has_group(&self, name: &str) -> bool {
        self.declared_users.contains(name) || self.accounts.group(name).is_some()
    }

    fn check_path(&mut self, shape: &Shape, path: &str) -> Option<Problem> {
        let mut ancestors: Vec<&str> = plan::ancestors(path).collect();
        let parent = *ancestors.first()?;
        // nothing on the way may be a symlink or a file on the host; looked at from the
        // root down, so the first one found is the one on the way (a path beneath a
        // refused symlink is refused too, and would be blamed otherwise)
        ancestors.reverse();
        for ancestor in ancestors {
            match self.host_path(ancestor) {
                HostPath::Symlink => {
                    let real = self
                        .host
                        .fs()
                        .parent(ancestor)
                        .and_then(|(directory, name)| directory.read_link(&name))
                        .map(|target| String::from_utf8_lossy(&target).into_owned())
                        .unwrap_or_else(|_| "its target".to_string());
                    return Some(Problem::new(
                        Code::UnsafeHostPath,
                        format!(
                            "{} goes through `{ancestor}`, which is a symlink on the host (to `{real}`)",
                            shape_label(shape)
                        ),
                        "write the path without the symlink; mesh does not write through links it does not manage",
                    ));
                }
                HostPath::NotDirectory if !self.freed_paths.contains(ancestor) => {
                    return Some(Problem::new(
                        Code::UnsafeHostPath,
                        format!(
                            "{} needs `{ancestor}` to be a directory, but it is a file on the host",
                            shape_label(shape)
                        ),
                        format!("move `{ancestor}` away on the host, or choose another path"),
                    ));
                }
                _ => {}
            }
        }
        if self.declared_directories.contains(parent) {
            return None;
        }
        match self.host_path(parent) {
            HostPath::Directory => None,
            _ => Some(Problem::new(
                Code::UndeclaredParentDirectory,
                format!(
                    "{} needs the directory `{parent}`, which the plan does not declare and the host does not have",
                    shape_label(shape)
                ),
                format!(
                    "declare `mesh.directory {{ path = \"{parent}\"; }}` in module `{}` (or a module it requires), or create it on the host",
                    shape.module()
                ),
            )),
        }
    }

    fn check_owner(&self, shape: &Shape, owner: &str, group: &str) -> Option<Problem> {
        if !self.has_user(owner) {
            return Some(undeclared_account(shape, "user", owner));
        }
        if !self.has_group(group) {
            return Some(undeclared_account(shape, "group", group));
        }
        None
    }
}

fn shape_label(shape: &Shape) -> String {
    format!("{} `{}`", shape.kind().name(), shape.identity())
}

fn undeclared_account(shape: &Shape, what: &str, name: &str) -> Problem {
    Problem::new(
        Code::UndeclaredAccount,
        format!(
            "{} needs the {what} `{name}`, which the plan does not declare and the host does not have",
            shape_label(shape)
        ),
        format!(
            "declare `mesh.user {{ name = \"{name}\"; }}` in module `{}` (a user brings its group), or create it on the host",
            shape.module()
        ),
    )
}

/// Every undeclared need of every shape, as problems (empty when all is well).
pub fn check(
    plan: &Plan,
    host: &Host,
    accounts: &Accounts,
    freed_paths: &HashSet<String>,
) -> Vec<Problem> {
    let mut needs = Needs {
        host,
        accounts,
        declared_directories: plan
            .shapes()
            .iter()
            .filter(|shape| shape.kind() == Kind::Directory)
            .map(|shape| shape.identity())
            .collect(),
        declared_paths: plan
            .shapes()
            .iter()
            .filter(|shape| shape.kind().is_path_kind())
            .map(|shape| shape.identity())
            .collect(),
        declared_users: plan
            .shapes()
            .iter()
            .filter(|shape| shape.kind() == Kind::User)
            .map(|shape| shape.identity())
            .collect(),
        freed_paths,
        cache: HashMap::new(),
    };
    let mut problems = Vec::new();
    for shape in plan.shapes() {
        let mut found: Vec<Problem> = Vec::new();
        if shape.kind().is_path_kind() {
            found.extend(needs.check_path(shape, shape.identity()));
        }
        match shape.resource() {
            Resource::User(user) => {
                for group in &user.groups {
                    if !needs.has_group(group) {
                        found.push(undeclared_account(shape, "group", group));
                    }
                }
            }
            Resource::Directory(directory) => {
                found.extend(needs.check_owner(shape, &directory.owner, &directory.group))
            }
            Resource::File(file) => {
                found.extend(needs.check_owner(shape, &file.owner, &file.group))
            }
            Resource::Secret(secret) => {
                found.extend(needs.check_owner(shape, &secret.owner, &secret.group))
            }
            Resource::Archive(archive) => {
                found.extend(needs.check_owner(shape, &archive.owner, &archive.group))
            }
            Resource::Link(_) => {}
            Resource::Service(service) => {
                if !needs.has_user(&service.user) {
                    found.push(undeclared_account(shape, "user", &service.user));
                }
            }
            Resource::Container(container) => {
                for mount in &container.mounts {
                    let declared = needs.declared_paths.contains(mount.source.as_str());
                    if !declared && needs.host_path(&mount.source) == HostPath::Missing {
                        found.push(Problem::new(
                            Code::UndeclaredMountSource,
                            format!(
                                "container `{}` mounts `{}`, which the plan does not declare and the host does not have",
                                container.name, mount.source
                            ),
                            format!(
                                "declare `mesh.directory {{ path = \"{}\"; }}` (or the file) in module `{}`, or create it on the host",
                                mount.source,
                                shape.module()
                            ),
                        ));
                    }
                }
            }
        }
        problems.extend(found.into_iter().map(|problem| problem.about_shape(shape)));
    }
    problems
}
