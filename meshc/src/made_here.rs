//! Which default builds (`REPO/build`) this user's `meshc` made: a record per
//! output, under `$XDG_STATE_HOME/mesh/builds` (else `~/.local/state/mesh/builds`),
//! of the digest of the manifest the last build wrote there and the stamp of the
//! build cache it left. `meshc diff` and `meshc publish` read `REPO/build` when no
//! directory is named, and the repository could hold one of its own (a `build/`
//! committed beside `mesh.nix`): its plans would be the diff's baseline, so a
//! change made to look like no change, or would be published; its cache could have
//! `meshc build` keep plans it did not make. Such a build was not written by this
//! user's `meshc`: it is refused (E422) unless it is named (`--against DIR`, `--out
//! DIR`), and built from nothing. Where there is no state directory (neither
//! `XDG_STATE_HOME` nor `HOME` names one), no build can be known as the user's.
//!
//! Invariant: a default output's cache is used only when the record names both its
//! manifest's bytes and the very cache file the user's build left (its device,
//! inode, size and times: a manifest is reproducible by anyone who has the
//! sources, and a cache the checkout brought is another file). What is judged is
//! what is used: the manifest is read once, judged and kept for the reading
//! command ([`open`]), and the cache's stamp is asked of the file the build opens,
//! so a file put in the place of the judged one after the judgement is not read.

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

/// The stamp of `out`'s build cache as the record keeps it: `none` when there is
/// none; `None` when it cannot be a cache of this user's build (not a regular
/// file). Not followed if a link.
fn cache_stamp(out: &Path) -> Option<String> {
    match std::fs::symlink_metadata(out.join(compiler::cache::CACHE_FILE)) {
        Ok(metadata) => compiler::Stamp::of_metadata(&metadata).map(|stamp| described(&stamp)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Some("none".to_string()),
        Err(_) => None,
    }
}

/// A cache file's stamp as the record keeps it: its device, inode, size, and
/// modification and change times.
fn described(stamp: &compiler::Stamp) -> String {
    let time = |nanoseconds: i128| {
        format!(
            "{}.{:09}",
            nanoseconds.div_euclid(1_000_000_000),
            nanoseconds.rem_euclid(1_000_000_000)
        )
    };
    format!(
        "cache {} {} {} {} {}",
        stamp.0,
        stamp.1,
        stamp.2,
        time(stamp.3),
        time(stamp.4)
    )
}

/// Records that this user's build wrote the manifest whose digest is `manifest`
/// into `out`, a repository's default output, and left the cache `out` holds now
/// (called once the cache is saved or removed). False when the record could not
/// be written, or there is no state directory to write it in (the next `diff`
/// would then refuse the build: the caller says so).
pub fn remember(out: &Path, manifest: &str) -> bool {
    let (Some(record), Some(cache)) = (record_of(out), cache_stamp(out)) else {
        return false;
    };
    let text = format!("{manifest}\n{cache}\n");
    if read_record(&record).is_some_and(|recorded| recorded == text) {
        return true;
    }
    record.parent().is_some_and(|directory| {
        std::fs::create_dir_all(directory).is_ok()
            && tempfile::NamedTempFile::new_in(directory)
                .and_then(|mut file| {
                    std::io::Write::write_all(&mut file, text.as_bytes())?;
                    file.persist(&record).map_err(|error| error.error)
                })
                .is_ok()
    })
}

/// After `meshc build --no-cache` removed the cache of a build the record names:
/// the record keeps the manifest and names no cache. Without this, a build that
/// then failed (and so wrote no manifest) left a record naming a cache that is no
/// longer there, and the next build took the user's own output for one that came
/// with the repository.
pub fn cache_removed(out: &Path) {
    let Some(recorded) = record_of(out).and_then(|record| read_record(&record)) else {
        return;
    };
    if let Some(manifest) = recorded.lines().next() {
        remember(out, manifest);
    }
}

/// The record at `path`: a regular file of a few lines, read without following a
/// link or waiting on a FIFO (None for anything else, or when there is none).
fn read_record(path: &Path) -> Option<String> {
    let bytes = compiler::read_regular(path, RECORD_LIMIT).ok()??;
    String::from_utf8(bytes).ok()
}

/// A record is two lines: a digest and a cache's stamp.
const RECORD_LIMIT: u64 = 4096;

/// The largest manifest read to be digested (a 100,000-node fleet's is some tens
/// of megabytes): a bigger file, or one that is not a regular file, is no build
/// this user made.
const MANIFEST_LIMIT: u64 = 1 << 30;

/// Whether `out`'s build is this user's, its cache included: what `meshc build`
/// asks before it uses anything the output holds. None when it is not; else the
/// test the stamp of the cache file the build opens must pass for the cache to be
/// used: the file the record names (none when the output holds no build, or the
/// record no cache). The test is asked of the file opened, not of its path: a cache
/// put in the recorded one's place after this is another file.
pub fn recorded_with_cache(out: &Path) -> Option<impl Fn(&compiler::Stamp) -> bool + use<>> {
    let cache = match record_matches(out)? {
        Found::Nothing => None,
        Found::Recorded { cache } => {
            let cache = cache?;
            if cache_stamp(out).as_ref() != Some(&cache) {
                return None;
            }
            Some(cache)
        }
    };
    Some(move |stamp: &compiler::Stamp| cache.as_deref() == Some(described(stamp).as_str()))
}

/// What an output holds, to its record.
enum Found {
    /// No build: nothing to trust or distrust.
    Nothing,
    /// The manifest the record names, and the cache's stamp the record keeps
    /// (`None` in a record of a `meshc` that kept none: the cache is not trusted).
    Recorded { cache: Option<String> },
}

/// What `out` holds when it is nothing or the build the record names by its
/// manifest; `None` otherwise (or when it cannot be opened).
fn record_matches(out: &Path) -> Option<Found> {
    let mut output = compiler::BuildOutput::open(out, "").ok()?;
    judged(&mut output, out)
}

/// What the open output `output` (at `out`) holds, judged by its manifest, which
/// it keeps: the bytes judged are the bytes read later (see
/// [`compiler::BuildOutput::keep_manifest`]).
fn judged(output: &mut compiler::BuildOutput, out: &Path) -> Option<Found> {
    let manifest = match output.keep_manifest(MANIFEST_LIMIT) {
        Ok(None) => return holds_nothing_built(output).then_some(Found::Nothing),
        Ok(Some(manifest)) => manifest,
        Err(_) => return None,
    };
    let recorded = read_record(&record_of(out)?)?;
    let mut lines = recorded.lines();
    let manifest_digest = lines.next()?;
    (plan::sha256_digest(manifest) == manifest_digest).then(|| Found::Recorded {
        cache: lines.next().map(str::to_string),
    })
}

/// An output with neither plans nor a cache (a new one, or one a build never
/// finished in: plans and cache appear only with the manifest).
fn holds_nothing_built(output: &compiler::BuildOutput) -> bool {
    ["nodes", compiler::cache::CACHE_FILE]
        .iter()
        .all(|name| !output.holds(name))
}

/// The default output `out` of the repository opened for reading, its manifest
/// kept as it was judged (see [`judged`]); when there is no such directory, the
/// E408 that says so (with the help line `help`), for the caller to report or to
/// take as no build: the path is not opened again, so a build put there after this
/// is never read unjudged. E422 when it holds a build whose manifest is not the one
/// this user's last build of it wrote (a build there that no one made here, or
/// made by another user, or any build when there is no state directory to tell).
/// Nothing to check when it holds no build. Any other failure to open it is E408.
pub fn open(
    out: &Path,
    help: &str,
    color: ColorWhen,
) -> Result<Result<compiler::BuildOutput, lang::Diagnostic>, Failure> {
    let mut output = match compiler::BuildOutput::open(out, help) {
        Ok(output) => output,
        Err(missing) if std::fs::symlink_metadata(out).is_err() => return Ok(Err(missing)),
        Err(diagnostic) => return Err(terminal::fail_alone(&diagnostic, color)),
    };
    if judged(&mut output, out).is_some() {
        return Ok(Ok(output));
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
