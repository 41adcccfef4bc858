//! The `file` shape on the host, and the batch writer that `secret` shares: inspect a
//! regular file against its content, owner and mode; write changed ones atomically.
//! Must never replace a directory, and never write content before owner and mode.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::Path;
use std::rc::Rc;

use zeroize::Zeroizing;

use crate::Planned;
use crate::accounts::Accounts;
use crate::codes::Code;
use crate::confined::{self, Directory, EntryKind};
use crate::durable::Flusher;
use crate::host::Host;
use crate::problem::Problem;

/// Directories a batch holds open at most; a larger batch is written in parts.
const OPEN_DIRECTORIES: usize = 256;

/// A regular file as a shape wants it.
pub struct WantedFile<'a> {
    pub node_path: &'a str,
    pub content: &'a [u8],
    pub mode: u32,
    pub owner: &'a str,
    pub group: &'a str,
}

/// What inspection found, and whether the file must be written anew (any change of
/// its content, owner, group or mode; otherwise nothing changes).
pub struct FileInspection {
    pub planned: Planned,
    pub rewrite: bool,
}

fn create() -> FileInspection {
    FileInspection {
        planned: Planned::Create,
        rewrite: true,
    }
}

/// Compares the host with `wanted`, through the confined layer. A directory in the way
/// is E520.
pub fn inspect(
    host: &Host,
    wanted: &WantedFile<'_>,
    accounts: &Accounts,
    show_content: bool,
) -> Result<FileInspection, Problem> {
    let shown = host.path(wanted.node_path);
    let (directory, name) = match host.fs().parent_for_reading(wanted.node_path) {
        Ok(found) => found,
        Err(error) if confined::absent(&error) => return Ok(create()),
        Err(error) => return Err(Problem::filesystem("inspect", &shown, &error)),
    };
    let entry = match directory.entry(&name) {
        Ok(Some(entry)) => entry,
        Ok(None) => return Ok(create()),
        Err(error) => return Err(Problem::filesystem("inspect", &shown, &error)),
    };
    if entry.kind == EntryKind::Directory {
        return Err(Problem::new(
            Code::InTheWay,
            format!("a directory is in the way at `{}`", shown.display()),
            "mesh never removes a directory (it may hold data): move it away by hand, then apply again",
        ));
    }
    if entry.kind != EntryKind::File {
        return Ok(FileInspection {
            planned: Planned::change(vec!["replaces a symlink or special file".to_string()]),
            rewrite: true,
        });
    }
    let mut details = Vec::new();
    let same_content = entry.size == wanted.content.len() as u64
        && has_content(&directory, &name, wanted.content)
            .map_err(|error| Problem::filesystem("read", &shown, &error))?;
    if !same_content {
        details.push(if show_content {
            "content".to_string()
        } else {
            "content (not shown)".to_string()
        });
    }
    if entry.mode != wanted.mode {
        details.push(format!("mode {:04o} -> {:04o}", entry.mode, wanted.mode));
    }
    if accounts.uid(wanted.owner) != Some(entry.uid) {
        details.push(format!("owner -> `{}`", wanted.owner));
    }
    if accounts.gid(wanted.group) != Some(entry.gid) {
        details.push(format!("group -> `{}`", wanted.group));
    }
    // any change is a new file renamed over the old, owner, group and mode too: a
    // descriptor opened before (a user who owned it, writing) keeps the old inode
    // only, where changed in place it would write to the file now root's
    Ok(FileInspection {
        rewrite: !details.is_empty(),
        planned: if details.is_empty() {
            Planned::Unchanged
        } else {
            Planned::change(details)
        },
    })
}

/// Does the file `name` hold exactly `expected`? Compared in chunks, without reading it
/// into memory whole (the no-op apply reads every file of the plan). The chunk read is
/// wiped when done: the file may be a secret's.
pub fn has_content(directory: &Directory, name: &str, expected: &[u8]) -> io::Result<bool> {
    let mut file = directory.open_regular(name)?;
    let mut buffer = Zeroizing::new([0u8; 16 * 1024]);
    let mut offset = 0;
    loop {
        let count = match file.read(buffer.as_mut_slice()) {
            Ok(0) => return Ok(offset == expected.len()),
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        let (Some(read), Some(wanted)) =
            (buffer.get(..count), expected.get(offset..offset + count))
        else {
            return Ok(false);
        };
        if read != wanted {
            return Ok(false);
        }
        offset += count;
    }
}

/// One file to write in a batch.
pub struct FileJob {
    /// Index of the shape in the caller's list, to report on.
    pub index: usize,
    pub node_path: String,
    /// Wiped when the job is dropped: a secret's plaintext is cloned here.
    pub content: Zeroizing<Vec<u8>>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Write the file anew (renamed over the old); otherwise its owner and mode are
    /// only made sure of, in place.
    pub rewrite: bool,
}

/// Where a batch failed: at a shape, or at a step that belongs to none (a flush).
#[derive(Debug)]
pub enum BatchFailure {
    Shape(usize, Problem),
    Step(Problem),
}

/// How a batch ended: the indexes done, the failure with why, and non-fatal problems
/// met while cleaning up after it.
pub struct BatchOutcome {
    pub done: Vec<usize>,
    pub failed: Option<BatchFailure>,
    pub notes: Vec<Problem>,
}

/// A job whose temp file (or new owner and mode) is written, with its opened parent.
struct Written<'a> {
    job: &'a FileJob,
    directory: Rc<Directory>,
    name: String,
    /// A temp file was written, to be renamed over the target.
    rewrite: bool,
}

/// Writes a batch: every changed content into its temp file (owner and mode first),
/// flush, rename each over its target in the same opened directory, flush. Metadata-only
/// changes are applied in place. On a failure the jobs before it are completed, the rest
/// left untouched. Holds at most [`OPEN_DIRECTORIES`] directories open at a time.
pub fn write_batch(host: &Host, jobs: &[FileJob]) -> BatchOutcome {
    let mut outcome = BatchOutcome {
        done: Vec::with_capacity(jobs.len()),
        failed: None,
        notes: Vec::new(),
    };
    let mut rest = jobs;
    while !rest.is_empty() && outcome.failed.is_none() {
        let consumed = write_part(host, rest, &mut outcome);
        rest = rest.get(consumed.max(1)..).unwrap_or_default();
    }
    outcome
}

/// Writes the jobs of `jobs` that fit in [`OPEN_DIRECTORIES`] directories; returns how
/// many it took.
fn write_part(host: &Host, jobs: &[FileJob], outcome: &mut BatchOutcome) -> usize {
    let mut flusher = Flusher::new();
    let mut directories: HashMap<&str, Rc<Directory>> = HashMap::new();
    let mut written: Vec<Written<'_>> = Vec::with_capacity(jobs.len());
    let mut consumed = 0;
    for job in jobs {
        let Some((parent, name)) = confined::split(&job.node_path) else {
            outcome.failed = Some(BatchFailure::Shape(
                job.index,
                Problem::filesystem(
                    "write",
                    &host.path(&job.node_path),
                    &io::Error::from(io::ErrorKind::InvalidInput),
                ),
            ));
            break;
        };
        if !directories.contains_key(parent) && directories.len() >= OPEN_DIRECTORIES {
            break;
        }
        consumed += 1;
        match write_one(host, job, parent, name, &mut directories, &mut flusher) {
            Ok(entry) => written.push(entry),
            Err(problem) => {
                outcome.failed = Some(BatchFailure::Shape(job.index, problem));
                break;
            }
        }
    }
    if let Err(error) = flusher.flush() {
        outcome.failed = Some(BatchFailure::Step(Problem::filesystem(
            "flush",
            Path::new("the written files"),
            &error,
        )));
        outcome.notes.extend(cleanup_temps(host, &written));
        return consumed;
    }
    let mut renamed = 0;
    for entry in &written {
        if entry.rewrite
            && let Err(error) = entry
                .directory
                .rename(&confined::temp_name(&entry.name), &entry.name)
        {
            outcome.failed = Some(BatchFailure::Shape(
                entry.job.index,
                Problem::filesystem(
                    "rename into place",
                    &host.path(&entry.job.node_path),
                    &error,
                ),
            ));
            break;
        }
        outcome.done.push(entry.job.index);
        renamed += 1;
    }
    if let Some(rest) = written.get(renamed..) {
        outcome.notes.extend(cleanup_temps(host, rest));
    }
    if let Err(error) = flusher.flush()
        && outcome.failed.is_none()
    {
        outcome.failed = Some(BatchFailure::Step(Problem::filesystem(
            "flush",
            Path::new("the renamed files"),
            &error,
        )));
    }
    consumed
}

fn write_one<'a>(
    host: &Host,
    job: &'a FileJob,
    parent: &'a str,
    name: &str,
    directories: &mut HashMap<&'a str, Rc<Directory>>,
    flusher: &mut Flusher,
) -> Result<Written<'a>, Problem> {
    let shown = || host.path(&job.node_path);
    let directory = match directories.get(parent) {
        Some(directory) => Rc::clone(directory),
        None => {
            let opened = host
                .fs()
                .directory(parent)
                .map_err(|error| Problem::filesystem("open the directory of", &shown(), &error))?;
            flusher.touched(&opened).map_err(|error| {
                Problem::filesystem("inspect the directory of", &shown(), &error)
            })?;
            let opened = Rc::new(opened);
            directories.insert(parent, Rc::clone(&opened));
            opened
        }
    };
    // owner and mode alone are changed in place, unless the inode has other names
    let rewrite = job.rewrite
        || !directory
            .set_owner_and_mode_of_sole_file(name, job.mode, job.uid, job.gid)
            .map_err(|error| Problem::filesystem("set owner and mode of", &shown(), &error))?;
    if rewrite {
        let temp = confined::temp_name(name);
        let mut file = directory
            .create_fresh(&temp, job.mode, job.uid, job.gid)
            .map_err(|error| Problem::filesystem("write", &shown(), &error))?;
        if let Err(error) = file.write_all(&job.content) {
            // a temp half written (a full disk, the file size limit) is removed;
            // one that cannot be is replaced by the next write of the file
            drop(file);
            directory.remove_file(&temp).ok();
            return Err(Problem::filesystem("write", &shown(), &error));
        }
    }
    Ok(Written {
        job,
        directory,
        name: name.to_string(),
        rewrite,
    })
}

/// Removes the temp files of jobs that will not be renamed. A temp that cannot be
/// removed is harmless (the next write of that file replaces it) and is reported.
fn cleanup_temps(host: &Host, written: &[Written<'_>]) -> Vec<Problem> {
    let mut notes = Vec::new();
    for entry in written {
        if entry.rewrite
            && let Err(error) = entry
                .directory
                .remove_file(&confined::temp_name(&entry.name))
        {
            notes.push(Problem::filesystem(
                "remove the temp file of",
                &host.path(&entry.job.node_path),
                &error,
            ));
        }
    }
    notes
}

/// Removes a withdrawn file, unit or Quadlet unit (or whatever non-directory is at its
/// path) and its temp; absent is fine.
pub fn withdraw(host: &Host, node_path: &str) -> Result<(), Problem> {
    let shown = host.path(node_path);
    let (directory, name) = match host.fs().parent(node_path) {
        Ok(found) => found,
        Err(error) if confined::absent(&error) => return Ok(()),
        Err(error) => return Err(Problem::filesystem("remove", &shown, &error)),
    };
    // a temp that cannot be mesh's leftover is left where it is
    if let Err(error) = directory.remove_scratch_file(&confined::temp_name(&name), None)
        && !confined::is_foreign_scratch(&error)
    {
        return Err(Problem::filesystem("remove", &shown, &error));
    }
    match directory.entry(&name) {
        Ok(Some(entry)) if entry.kind == EntryKind::Directory => Ok(()),
        Ok(Some(_)) => directory
            .remove_file(&name)
            .map_err(|error| Problem::filesystem("remove", &shown, &error)),
        Ok(None) => Ok(()),
        Err(error) => Err(Problem::filesystem("inspect", &shown, &error)),
    }
}
