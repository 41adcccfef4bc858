//! Which default builds (`REPO/build`) this user's `meshc` made: a record per
//! output, under `$XDG_STATE_HOME/mesh/builds` (else `~/.local/state/mesh/builds`),
//! of the digest of the manifest the last build wrote there. `meshc diff` and
//! `meshc publish` read `REPO/build` when no directory is named, and the
//! repository could hold one of its own (a `build/` committed beside `mesh.nix`):
//! its plans would be the diff's baseline, so a change made to look like no change,
//! or would be published. Such a build was not written by this user's `meshc`, and
//! is refused (E422) unless it is named (`--against DIR`, `--out DIR`).
//! Records only digests. Where there is no state directory (neither
//! `XDG_STATE_HOME` nor `HOME` names one), no build can be known as the user's:
//! a default output holding a build is refused, and `meshc build` says so.

use std::path::{Path, PathBuf};

use crate::cli::ColorWhen;
use crate::terminal::{self, Failure};

/// The record of the output `out`: one file named for the digest of its path.
fn record_of(out: &Path) -> Option<PathBuf> {
    let state = crate::cli::state_directory()?;
    let out = std::fs::canonicalize(out).ok()?;
    let name = plan::sha256_digest(out.as_os_str().as_encoded_bytes());
    let name = name.strip_prefix("sha256:").unwrap_or(&name).to_string();
    Some(state.join("mesh").join("builds").join(name))
}

/// Whether `out` is the repository `root`'s default output.
pub fn is_default_output(root: &Path, out: &Path) -> bool {
    match (std::fs::canonicalize(root), std::fs::canonicalize(out)) {
        (Ok(root), Ok(out)) => out == root.join("build"),
        _ => false,
    }
}

/// Records that this user's build wrote the manifest whose digest is `manifest`
/// into `out`, a repository's default output. False when the record could not be
/// written, or there is no state directory to write it in (the next `diff` would
/// then refuse the build: the caller says so).
pub fn remember(out: &Path, manifest: &str) -> bool {
    let Some(record) = record_of(out) else {
        return false;
    };
    if std::fs::read(&record).is_ok_and(|recorded| recorded == manifest.as_bytes()) {
        return true;
    }
    record.parent().is_some_and(|directory| {
        std::fs::create_dir_all(directory).is_ok()
            && tempfile::NamedTempFile::new_in(directory)
                .and_then(|mut file| {
                    std::io::Write::write_all(&mut file, manifest.as_bytes())?;
                    file.persist(&record).map_err(|error| error.error)
                })
                .is_ok()
    })
}

/// The largest manifest read to be digested (a 100,000-node fleet's is some tens
/// of megabytes): a bigger file, or one that is not a regular file, is no build
/// this user made.
const MANIFEST_LIMIT: u64 = 1 << 30;

/// Whether `out` holds a build, and it is the one this user's last build into it
/// recorded (true when there is no build; false when there is one and no state
/// directory to ask). The record is looked up first; the manifest is read without
/// following a link and only up to [`MANIFEST_LIMIT`].
pub fn recorded(out: &Path) -> bool {
    let path = out.join("manifest.json");
    let Ok(metadata) = std::fs::symlink_metadata(&path) else {
        return true;
    };
    let Some(record) = record_of(out) else {
        return false;
    };
    let Ok(recorded) = std::fs::read(&record) else {
        return false;
    };
    if !metadata.is_file() || metadata.len() > MANIFEST_LIMIT {
        return false;
    }
    let manifest = std::fs::File::open(&path).and_then(|file| {
        use std::io::Read;
        let mut bytes = Vec::new();
        file.take(MANIFEST_LIMIT).read_to_end(&mut bytes)?;
        Ok(bytes)
    });
    manifest.is_ok_and(|manifest| plan::sha256_digest(&manifest).as_bytes() == recorded)
}

/// E422 when `out`, the default output of the repository, holds a build whose
/// manifest is not the one this user's last build of it wrote (a build there that
/// no one made here, or made by another user, or any build when there is no state
/// directory to tell). Nothing to check when it holds no build.
pub fn check(out: &Path, color: ColorWhen) -> Result<(), Failure> {
    if recorded(out) {
        return Ok(());
    }
    let diagnostic = lang::Diagnostic::error(
        lang::codes::BUILD_NOT_MADE_HERE,
        format!(
            "the build in `{}` was not made by your `meshc build`: it may have come with the repository",
            out.display()
        ),
    )
    .with_help(
        "run `meshc build` to make the repository's build yourself (a `build/` committed to the repository is not to be trusted: remove it from version control); to use a build you trust, name it (`meshc diff --against DIR`, `meshc publish --out DIR`). Builds are recorded in `$XDG_STATE_HOME/mesh/builds` (else `~/.local/state/mesh/builds`), which must be writable",
    );
    Err(terminal::fail_alone(&diagnostic, color))
}
