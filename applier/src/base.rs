//! Does a `--root` tree hold a base system? The applier adds users to the account
//! files with the host's `useradd --prefix` and looks owners up in them; a tree
//! without them (an empty directory) would fail once per shape with undeclared-need
//! errors that point at the modules. One problem instead, before anything changes,
//! that says how to make a base system. Reads through the confined layer only.

use plan::{Plan, Resource};

use crate::codes::Code;
use crate::host::Host;
use crate::problem::Problem;

/// The files a root must have: the account database `useradd --prefix` edits and
/// every owner and group is looked up in.
pub const REQUIRED_FILES: &[&str] = &["/etc/passwd", "/etc/group"];

/// Also written by `useradd`, listed in the help of the problem.
const ALSO_WRITTEN: &[&str] = &["/etc/shadow", "/etc/gshadow"];

/// Does the plan need the account files: a user, or an owner, group or service
/// user other than `root`? Or does it place shapes under an `/etc` the root lacks
/// and the plan does not declare?
fn needs_base(plan: &Plan, host: &Host) -> bool {
    let not_root = |name: &str| name != "root";
    let needs_accounts = plan.shapes().iter().any(|shape| match shape.resource() {
        Resource::User(_) => true,
        Resource::Directory(d) => not_root(&d.owner) || not_root(&d.group),
        Resource::File(f) => not_root(&f.owner) || not_root(&f.group),
        Resource::Secret(s) => not_root(&s.owner) || not_root(&s.group),
        Resource::Archive(a) => not_root(&a.owner) || not_root(&a.group),
        Resource::Service(s) => not_root(&s.user),
        Resource::Container(c) => c.user.as_deref().is_some_and(not_root),
        Resource::Link(_) => false,
    });
    let declares_etc = plan
        .shapes()
        .iter()
        .any(|shape| shape.kind().is_path_kind() && shape.identity() == "/etc");
    needs_accounts || (!declares_etc && matches!(host.fs().entry("/etc"), Ok(None)))
}

/// `None` on the live host, when the root has an `/etc` (or its account files), or
/// when the plan needs neither them nor `/etc`; otherwise the one problem that says
/// the root has no base system.
pub fn missing(plan: &Plan, host: &Host) -> Option<Problem> {
    let root = host.offline_root()?;
    if !needs_base(plan, host) {
        return None;
    }
    // Only a tree without `/etc` has no base system: under an `/etc` directory
    // `useradd --prefix` makes the account files itself (a bare tree applies, as the
    // tutorial shows), and an `/etc` that is a link or a file is the account files'
    // own refusal (E523).
    if !matches!(host.fs().entry("/etc"), Ok(None)) {
        return None;
    }
    let absent: Vec<&str> = REQUIRED_FILES
        .iter()
        .copied()
        // a link or a directory there is the account files' own refusal (E523)
        .filter(|path| matches!(host.fs().entry(path), Ok(None)))
        .collect();
    if absent.is_empty() {
        return None;
    }
    let root = root.display();
    Some(Problem::new(
        Code::NoBaseSystem,
        format!(
            "the root `{root}` has no base system: {} {} missing",
            absent
                .iter()
                .map(|path| format!("`{path}`"))
                .collect::<Vec<_>>()
                .join(" and "),
            if absent.len() == 1 { "is" } else { "are" }
        ),
        format!(
            "make one first, e.g. `debootstrap stable {root}` (or `mmdebstrap`), then apply again; for a bare tree, create at least {} with root's entries (`root:x:0:0:root:/root:/bin/sh`, `root:x:0:`) and {} for `useradd`, plus the directories the plan's shapes are placed in",
            all_listed(REQUIRED_FILES),
            all_listed(ALSO_WRITTEN)
        ),
    ))
}

fn all_listed(paths: &[&str]) -> String {
    paths
        .iter()
        .map(|path| format!("`ROOT{path}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
