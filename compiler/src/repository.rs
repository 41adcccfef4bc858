//! Finds a repository's files: the inventory `mesh.nix`, the modules under
//! `modules/NAME/module.nix`, and the standard modules a repository module may
//! shadow. Reads directory listings only; evaluation happens later.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lang::{Diagnostic, codes};

use crate::stdlib;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    Repository,
    Standard,
}

#[derive(Clone, Debug)]
pub struct ModuleLocation {
    /// `module.nix`: absolute, or under the standard library's virtual root.
    pub path: PathBuf,
    pub origin: Origin,
}

#[derive(Debug)]
pub struct Repository {
    /// Absolute and canonical.
    pub root: PathBuf,
    pub inventory: PathBuf,
    pub modules: BTreeMap<String, ModuleLocation>,
    /// Repository modules with the name of a standard module.
    pub shadowed: Vec<String>,
    /// Directories under `modules/` whose names are not identifiers: left out (a
    /// module's name becomes part of paths under `secrets/` and is shown by `diff`).
    pub refused: Vec<String>,
}

/// Is `name` usable as a module or node name: `[a-z][a-z0-9-]*`?
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

pub fn load(root: &Path) -> Result<Repository, Box<Diagnostic>> {
    let root = root.canonicalize().map_err(|error| {
        Diagnostic::error(
            codes::NOT_A_REPOSITORY,
            format!("cannot open the repository `{}`: {error}", root.display()),
        )
        .with_help("pass the repository directory with `--repo DIR`")
    })?;
    let inventory = root.join("mesh.nix");
    if !inventory.is_file() {
        return Err(Diagnostic::error(
            codes::NOT_A_REPOSITORY,
            format!(
                "`{}` is not a mesh repository: it has no `mesh.nix`",
                root.display()
            ),
        )
        .with_help(
            "run meshc in the repository (the directory with `mesh.nix`) or pass `--repo DIR`",
        )
        .into());
    }
    let mut modules = BTreeMap::new();
    for name in stdlib::module_names() {
        modules.insert(
            name.clone(),
            ModuleLocation {
                path: PathBuf::from(format!("{}/{name}/module.nix", stdlib::VIRTUAL_ROOT)),
                origin: Origin::Standard,
            },
        );
    }
    let mut shadowed = Vec::new();
    let mut refused = Vec::new();
    let modules_directory = root.join("modules");
    if modules_directory.is_dir() {
        let walker = walkdir::WalkDir::new(&modules_directory)
            .min_depth(1)
            .max_depth(1)
            .sort_by_file_name();
        for entry in walker.into_iter().filter_map(Result::ok) {
            let module_file = entry.path().join("module.nix");
            if !entry.file_type().is_dir() || !module_file.is_file() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if !crate::names::is_identifier(&name) {
                refused.push(name);
                continue;
            }
            if modules
                .get(&name)
                .is_some_and(|m: &ModuleLocation| m.origin == Origin::Standard)
            {
                shadowed.push(name.clone());
            }
            modules.insert(
                name,
                ModuleLocation {
                    path: module_file,
                    origin: Origin::Repository,
                },
            );
        }
    }
    Ok(Repository {
        root,
        inventory,
        modules,
        shadowed,
        refused,
    })
}
