//! The `file` shape on the host, and the batch writer that `secret` shares: inspect a
//! regular file against its content, owner and mode; write changed ones atomically.
//! Must never replace a directory, and never write content before owner and mode.

use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::Planned;
use crate::accounts::Accounts;
use crate::codes::Code;
use crate::durable::{self, Flusher};
use crate::problem::Problem;

/// A regular file as a shape wants it.
pub struct WantedFile<'a> {
    pub host_path: PathBuf,
    pub content: &'a [u8],
    pub mode: u32,
    pub owner: &'a str,
    pub group: &'a str,
}

/// What inspection found, and whether the content must be rewritten (otherwise only
/// owner and mode are fixed in place).
pub struct FileInspection {
    pub planned: Planned,
    pub rewrite: bool,
}

/// Compares the host with `wanted`. A directory in the way is E520.
pub fn inspect(
    wanted: &WantedFile<'_>,
    accounts: &Accounts,
    show_content: bool,
) -> Result<FileInspection, Problem> {
    let metadata = match std::fs::symlink_metadata(&wanted.host_path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok(FileInspection {
                planned: Planned::Create,
                rewrite: true,
            });
        }
        Err(error) => return Err(Problem::filesystem("inspect", &wanted.host_path, &error)),
    };
    if metadata.is_dir() {
        return Err(Problem::new(
            Code::InTheWay,
            format!(
                "a directory is in the way at `{}`",
                wanted.host_path.display()
            ),
            "mesh never removes a directory (it may hold data): move it away by hand, then apply again",
        ));
    }
    if !metadata.is_file() {
        return Ok(FileInspection {
            planned: Planned::change(vec!["replaces a symlink or special file".to_string()]),
            rewrite: true,
        });
    }
    let mut details = Vec::new();
    let same_content = metadata.len() == wanted.content.len() as u64
        && has_content(&wanted.host_path, wanted.content)
            .map_err(|error| Problem::filesystem("read", &wanted.host_path, &error))?;
    if !same_content {
        details.push(if show_content {
            "content".to_string()
        } else {
            "content (not shown)".to_string()
        });
    }
    let current_mode = metadata.permissions().mode() & 0o7777;
    if current_mode != wanted.mode {
        details.push(format!("mode {current_mode:04o} -> {:04o}", wanted.mode));
    }
    if accounts.uid(wanted.owner) != Some(metadata.uid()) {
        details.push(format!("owner -> `{}`", wanted.owner));
    }
    if accounts.gid(wanted.group) != Some(metadata.gid()) {
        details.push(format!("group -> `{}`", wanted.group));
    }
    Ok(FileInspection {
        planned: if details.is_empty() {
            Planned::Unchanged
        } else {
            Planned::change(details)
        },
        rewrite: !same_content,
    })
}

/// Does the file hold exactly `expected`? Compared in chunks, without reading it
/// into memory whole (the no-op apply reads every file of the plan).
fn has_content(path: &Path, expected: &[u8]) -> io::Result<bool> {
    let mut file = durable::open_no_follow(path, false)?;
    let mut buffer = [0u8; 16 * 1024];
    let mut offset = 0;
    loop {
        let count = match file.read(&mut buffer) {
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
    pub host_path: PathBuf,
    pub content: Vec<u8>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Rewrite the content; otherwise fix owner and mode in place.
    pub rewrite: bool,
}

/// How a batch ended: the indexes done, the failed one with why, and non-fatal
/// problems met while cleaning up after it.
pub struct BatchOutcome {
    pub done: Vec<usize>,
    pub failed: Option<(usize, Problem)>,
    pub notes: Vec<Problem>,
}

/// Writes a batch: every changed content into its temp file (owner and mode first),
/// flush, rename each over its target, flush. Metadata-only changes are applied in
/// place. On a failure the jobs before it are completed, the rest left untouched.
pub fn write_batch(jobs: &[FileJob]) -> BatchOutcome {
    let mut flusher = Flusher::new();
    let mut written: Vec<&FileJob> = Vec::with_capacity(jobs.len());
    let mut done = Vec::with_capacity(jobs.len());
    let mut failed = None;
    for job in jobs {
        let result = if job.rewrite {
            let temp = durable::temp_path_for(&job.host_path);
            durable::write_fresh_file(&temp, &job.content, job.mode, job.uid, job.gid)
                .map_err(|error| Problem::filesystem("write", &temp, &error))
        } else {
            durable::set_owner_and_mode(&job.host_path, false, job.mode, job.uid, job.gid).map_err(
                |error| Problem::filesystem("set owner and mode of", &job.host_path, &error),
            )
        };
        match result {
            Ok(()) => {
                flusher.touched_file(&job.host_path);
                written.push(job);
            }
            Err(problem) => {
                failed = Some((job.index, problem));
                break;
            }
        }
    }
    if let Err(error) = flusher.flush() {
        let problem = Problem::filesystem("flush", Path::new("the written files"), &error);
        let notes = cleanup_temps(&written);
        let index = written.first().map(|job| job.index).unwrap_or(0);
        return BatchOutcome {
            done,
            failed: Some((index, problem)),
            notes,
        };
    }
    let mut renamed = 0;
    for job in &written {
        if job.rewrite {
            let temp = durable::temp_path_for(&job.host_path);
            if let Err(error) = std::fs::rename(&temp, &job.host_path) {
                failed = Some((
                    job.index,
                    Problem::filesystem("rename into place", &job.host_path, &error),
                ));
                break;
            }
        }
        done.push(job.index);
        renamed += 1;
    }
    let notes = written
        .get(renamed..)
        .map(cleanup_temps)
        .unwrap_or_default();
    if let Err(error) = flusher.flush() {
        failed = failed.or(Some((
            written.last().map(|job| job.index).unwrap_or(0),
            Problem::filesystem("flush", Path::new("the renamed files"), &error),
        )));
    }
    BatchOutcome {
        done,
        failed,
        notes,
    }
}

/// Removes the temp files of jobs that will not be renamed. A temp that cannot be
/// removed is harmless (the next write of that file replaces it) and is reported.
fn cleanup_temps(jobs: &[&FileJob]) -> Vec<Problem> {
    let mut notes = Vec::new();
    for job in jobs {
        if job.rewrite {
            let temp = durable::temp_path_for(&job.host_path);
            if let Err(error) = durable::remove_if_present(&temp) {
                notes.push(Problem::filesystem("remove the temp file", &temp, &error));
            }
        }
    }
    notes
}

/// Removes a withdrawn file (or whatever non-directory is at its path) and its temp.
pub fn withdraw(host_path: &Path) -> Result<(), Problem> {
    durable::remove_if_present(&durable::temp_path_for(host_path))
        .map_err(|error| Problem::filesystem("remove", host_path, &error))?;
    match std::fs::symlink_metadata(host_path) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => std::fs::remove_file(host_path)
            .map_err(|error| Problem::filesystem("remove", host_path, &error)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Problem::filesystem("inspect", host_path, &error)),
    }
}
