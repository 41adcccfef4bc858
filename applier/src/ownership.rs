//! The owners the plan leaves on the way to each of its paths, checked before anything
//! changes: after the plan, no directory a user other than root owns may hold a
//! directory someone else owns on the way to a shape's path, nor a directory shape
//! someone else owns (E524, the rule the confined layer's walk enforces). Without this
//! such a plan was refused halfway, after its first changes, on every run; or applied
//! once and refused ever after. Reads the host through the confined layer, never
//! changes it.

use std::collections::HashMap;

use plan::{Kind, Plan, Resource, Shape};

use crate::accounts::Accounts;
use crate::codes::Code;
use crate::confined;
use crate::host::Host;
use crate::problem::Problem;

/// One problem per shape whose path, after the plan, would pass from a directory a
/// user owns into one someone else owns (or that is such a directory itself).
pub fn check(plan: &Plan, host: &Host, accounts: &Accounts) -> Vec<Problem> {
    // each directory's and archive tree's owner after the plan (`None`: a user the
    // plan creates)
    let planned: HashMap<&str, Option<u32>> = plan
        .shapes()
        .iter()
        .filter_map(|shape| match shape.resource() {
            Resource::Directory(directory) => {
                Some((directory.path.as_str(), accounts.uid(&directory.owner)))
            }
            Resource::Archive(archive) => {
                Some((archive.path.as_str(), accounts.uid(&archive.owner)))
            }
            _ => None,
        })
        .collect();
    let mut found: HashMap<String, Option<u32>> = HashMap::new();
    let mut owner_after = |path: &str| -> Option<u32> {
        if let Some(owner) = planned.get(path) {
            return *owner;
        }
        *found.entry(path.to_string()).or_insert_with(|| {
            host.fs()
                .entry(path)
                .ok()
                .flatten()
                .filter(|entry| entry.kind == confined::EntryKind::Directory)
                .map(|entry| entry.uid)
        })
    };
    let mut problems = Vec::new();
    for shape in plan.shapes() {
        if !shape.kind().is_path_kind() {
            continue;
        }
        // the directories walked, from the root's child down: the shape's ancestors,
        // and the shape itself when it is a directory (or an archive's tree)
        let path = shape.identity();
        let mut chain: Vec<&str> = ancestors(path);
        if matches!(shape.kind(), Kind::Directory | Kind::Archive) {
            chain.push(path);
        }
        let owners: Vec<(&str, Option<u32>)> = chain
            .iter()
            .map(|step| (*step, owner_after(step)))
            .collect();
        for pair in owners.windows(2) {
            let [(holder, Some(holder_owner)), (inner, Some(owner))] = pair else {
                continue;
            };
            if !confined::may_own(*holder_owner, *owner) {
                problems.push(refused(shape, holder, *holder_owner, inner, *owner));
                break;
            }
        }
    }
    problems
}

/// `/a/b/c` -> `/a`, `/a/b` (the root itself is trusted and not walked from).
fn ancestors(path: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = path;
    while let Some((parent, _)) = confined::split(rest) {
        if parent.is_empty() || parent == "/" {
            break;
        }
        found.push(parent);
        rest = parent;
    }
    found.reverse();
    found
}

fn refused(shape: &Shape, holder: &str, holder_owner: u32, inner: &str, owner: u32) -> Problem {
    Problem::new(
        Code::UnsafeOwnership,
        format!(
            "after this plan `{inner}` would be owned by uid {owner} inside `{holder}`, which uid {holder_owner} owns: mesh does not go from a user's directory into someone else's, so nothing was changed"
        ),
        "give the directory the owner of the directory that holds it, or move it out of the user's directory; if an earlier apply that gave this tree to its new owner stopped halfway, change the owner of what it left by hand (`chown`)",
    )
    .about_shape(shape)
}

#[cfg(test)]
mod tests {
    use super::ancestors;

    #[test]
    fn ancestors_run_from_the_roots_child_down() {
        assert_eq!(ancestors("/a/b/c"), vec!["/a", "/a/b"]);
        assert_eq!(ancestors("/a"), Vec::<&str>::new());
    }
}
