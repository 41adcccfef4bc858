//! Finds a repository's files: the inventory `mesh.nix`, the modules under
//! `modules/NAME/module.nix`, and the standard modules a repository module may
//! shadow; where the repository is when none is named (the nearest `mesh.nix` above
//! the working directory); which repository a build output was made from. Reads
//! directory listings only; evaluation happens later.

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

/// The repository root for `start`: the nearest ancestor holding `mesh.nix`, as cargo
/// finds a workspace. `meshc` uses it for every command when `--repo` is not given.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    let mut current = Some(start);
    while let Some(directory) = current {
        if directory.join("mesh.nix").is_file() {
            return Some(directory.to_path_buf());
        }
        current = directory.parent();
    }
    None
}

/// The repository for a command given no `--repo`: the nearest ancestor of `start`
/// (the working directory) holding `mesh.nix`.
pub fn discover(start: &Path) -> Result<PathBuf, Box<Diagnostic>> {
    find_root(start).ok_or_else(|| {
        Diagnostic::error(
            codes::NOT_A_REPOSITORY,
            format!(
                "`{}` is not in a mesh repository: neither it nor a parent directory has `mesh.nix`",
                start.display()
            ),
        )
        .with_help("run meshc inside a repository (the directory with `mesh.nix` or below it) or pass `--repo DIR`")
        .into()
    })
}

/// The file of a build output that names the repository it was made from. Beside
/// the manifest, not in it: the plans and the manifest are the same bytes whichever
/// directory the repository is built from, and this file is the only part of the
/// output that depends on where the repository is. It is never published.
pub const REPOSITORY_FILE: &str = ".mesh-repository";

/// The format of [`REPOSITORY_FILE`].
const REPOSITORY_FORMAT: &str = "mesh-repository/1";

/// Records in the build output `out` that it was made from the repository whose
/// canonical root is `root`.
pub fn record_repository(out: &Path, root: &Path) -> Result<(), Box<Diagnostic>> {
    let value = serde_json::json!({
        "format": REPOSITORY_FORMAT,
        "root": root.to_string_lossy(),
    });
    let mut bytes = plan::canonical_json(&value);
    bytes.push(b'\n');
    // beneath the output without following links, as the plans are written
    let output = crate::confined::Beneath::open(out, true)
        .map_err(|error| Box::new(crate::emit::output_error(out, error)))?;
    crate::emit::write_atomically(
        &output,
        REPOSITORY_FILE,
        &bytes,
        crate::confined::Readers::Owner,
    )
    .map_err(Box::new)
}

/// The repository the build output `out` was made from, if it says (builds made
/// before meshc recorded it do not).
pub fn built_from(out: &Path) -> Option<PathBuf> {
    let bytes = read_beneath(out, REPOSITORY_FILE, 1 << 20)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    if value["format"] != REPOSITORY_FORMAT {
        return None;
    }
    value["root"].as_str().map(PathBuf::from)
}

/// Refuses to compare the repository at `root` (canonical) with the build output
/// `out` when that build was made from another repository.
pub fn check_built_from(out: &Path, root: &Path) -> Result<(), Box<Diagnostic>> {
    match built_from(out) {
        Some(recorded) if recorded != root => Err(another_repositorys_build(
            out,
            &recorded,
            root,
            format!(
                "build this repository first (`meshc build --repo {}`), or pass `--against DIR` with a build of it",
                root.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// E420: the build output `out` was made from the repository `recorded`, not from
/// the one at `root`; `help` says what the command that found it can do instead
/// (`meshc diff` compares with another build, `meshc build` writes elsewhere).
fn another_repositorys_build(
    out: &Path,
    recorded: &Path,
    root: &Path,
    help: impl Into<String>,
) -> Box<Diagnostic> {
    Diagnostic::error(
        codes::BUILD_OF_ANOTHER_REPOSITORY,
        format!(
            "the build in `{}` was made from the repository `{}`, not from `{}`",
            out.display(),
            // read from the output, which anyone who may write in it could have written
            plan::display::escaped(&recorded.to_string_lossy()),
            root.display()
        ),
    )
    .with_help(help)
    .into()
}

/// Refuses to build the repository at `root` (canonical) into `out` when `out`
/// holds something a build would destroy: a build replaces `OUT/nodes` and
/// `OUT/manifest.json`, and removes every `*.json` of `OUT/nodes` no node of this
/// fleet has. So `out` must be new, empty, a build of this repository, or a build
/// made before builds recorded their repository (its manifest says so); a build of
/// another repository is E420, anything else E421. The build cache is not opened
/// (nor removed, with `--no-cache`) before this is checked.
pub fn check_output_for(out: &Path, root: &Path) -> Result<(), Box<Diagnostic>> {
    if let Some(recorded) = built_from(out) {
        if recorded == root {
            return Ok(());
        }
        return Err(another_repositorys_build(
            out,
            &recorded,
            root,
            "build into another directory (`--out DIR`); this build would replace that repository's plans and remove those of nodes it does not have",
        ));
    }
    // a directory that cannot be listed is the build's to report, as it opens it
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(());
    };
    // what a build writes, and what an interrupted one leaves
    let own = [
        std::ffi::OsStr::new(REPOSITORY_FILE),
        std::ffi::OsStr::new(crate::cache::CACHE_FILE),
        std::ffi::OsStr::new(".mesh-staging"),
    ];
    let foreign: Vec<String> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.file_name()))
        .filter(|name| !own.contains(&name.as_os_str()))
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    if foreign.is_empty() || is_manifest(out) {
        return Ok(());
    }
    let mut shown = foreign;
    shown.sort();
    let more = shown.len().saturating_sub(3);
    shown.truncate(3);
    // names anyone who may write in `out` chose: shown, never obeyed by a terminal
    let mut listed = shown
        .iter()
        .map(|name| format!("`{}`", plan::display::escaped(name)))
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        listed.push_str(&format!(" and {more} more"));
    }
    Err(Diagnostic::error(
        codes::NOT_A_BUILD_OUTPUT,
        format!(
            "`{}` is not a build output: it holds {listed} and no build's manifest",
            out.display()
        ),
    )
    .with_help(
        "build into a new or empty directory (`--out DIR`): a build replaces `OUT/nodes` and `OUT/manifest.json`, and removes the files of `OUT/nodes` that are no node's plan",
    )
    .into())
}

/// Whether `path` is the manifest of a build (of any repository, any age).
fn is_manifest(out: &Path) -> bool {
    read_beneath(out, crate::staged::MANIFEST, 1 << 30)
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .is_some_and(|manifest| manifest["format"] == crate::emit::MANIFEST_FORMAT)
}

/// The bytes of the regular file `name` in the directory `out`, read beneath a
/// handle on it as everything in a build output is: None when there is no such
/// file, or it is a link, a FIFO or anything but a regular file (never followed,
/// never waited on), or it has more than `limit` bytes (not read).
fn read_beneath(out: &Path, name: &str, limit: u64) -> Option<Vec<u8>> {
    let output = crate::confined::Beneath::open(out, false).ok()?;
    let read = output.read_stamped_if(Path::new(name), |stamp| match stamp.2 > limit {
        true => Err(std::io::Error::other("larger than a build writes it")),
        false => Ok(()),
    });
    read.ok()?.map(|(bytes, _)| bytes)
}

/// The canonical root of the repository at `root`, or E100 when `root` is not one
/// (no `mesh.nix`): what every repository command checks of `--repo DIR` before
/// it reads or writes anything there.
pub fn check_root(root: &Path) -> Result<PathBuf, Box<Diagnostic>> {
    let root = root.canonicalize().map_err(|error| {
        Diagnostic::error(
            codes::NOT_A_REPOSITORY,
            format!("cannot open the repository `{}`: {error}", root.display()),
        )
        .with_help("pass the repository directory with `--repo DIR`")
    })?;
    let inventory = root.join("mesh.nix");
    if !inventory.is_file() {
        // something else at the name (a directory, a FIFO) is said as it is
        let what = match std::fs::metadata(&inventory) {
            Ok(_) => "its `mesh.nix` is not a regular file",
            Err(_) => "it has no `mesh.nix`",
        };
        return Err(Diagnostic::error(
            codes::NOT_A_REPOSITORY,
            format!("`{}` is not a mesh repository: {what}", root.display()),
        )
        .with_help(
            "run meshc in the repository (the directory with `mesh.nix`) or pass `--repo DIR`",
        )
        .into());
    }
    Ok(root)
}

pub fn load(root: &Path) -> Result<Repository, Box<Diagnostic>> {
    let root = check_root(root)?;
    let inventory = root.join("mesh.nix");
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
