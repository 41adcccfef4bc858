//! The builder: answers build requests from the build queue, one at a time. It builds
//! the requested directory of its own checkout of the repository into the
//! reproducible archive (`artifacts`), stores it content-addressed, appends the result
//! (failures included) to the build record, and hands the result back to `consume`,
//! which publishes it to the `mesh` exchange with the request's correlation id,
//! waits for the confirm and only then acknowledges the request.
//!
//! The record (`STORE/builds.jsonl`, one `mesh-build-result/1` JSON object a line) is
//! append-only and synced before the result is sent. A request whose correlation id
//! is already in it was answered before the builder could acknowledge it (it was
//! killed, or the connection dropped): the recorded result is sent again and nothing
//! is built or recorded twice. Must not depend on the compiler: the builder has the
//! repository's files, not its meaning.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use crate::consume::{Handled, Handler, Log};
use crate::message::{BUILD_RESULT_FORMAT, BuildOutcome, BuildRequest, BuildResult, Incoming};
use archive as artifacts;

/// The record's file name in the store.
pub const RECORD_FILE: &str = "builds.jsonl";

/// The lock that keeps a second builder off the same store.
const LOCK_FILE: &str = "builds.lock";

/// The builder's default store, on the build node.
pub const DEFAULT_STORE: &str = "/var/lib/mesh/builds";

/// The append-only record of every build result, held open by one builder.
pub struct BuildRecord {
    path: PathBuf,
    file: File,
    /// The results by correlation id, to answer a redelivered request again.
    answered: HashMap<String, BuildResult>,
    _lock: File,
}

impl BuildRecord {
    /// Opens (creating) the record in `store`, taking the store's lock.
    pub fn open(store: &Path) -> Result<BuildRecord, String> {
        std::fs::create_dir_all(store)
            .map_err(|error| format!("cannot create the store `{}`: {error}", store.display()))?;
        let lock_path = store.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|error| format!("cannot open `{}`: {error}", lock_path.display()))?;
        lock.try_lock().map_err(|error| {
            format!(
                "the store `{}` is in use by another builder ({error}): one builder per store",
                store.display()
            )
        })?;
        let path = store.join(RECORD_FILE);
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|error| format!("cannot open the record `{}`: {error}", path.display()))?;
        let answered = read_record(store)?
            .results
            .into_iter()
            .filter_map(|result| Some((result.correlation_id.clone()?, result)))
            .collect();
        Ok(BuildRecord {
            path,
            file,
            answered,
            _lock: lock,
        })
    }

    /// The result already recorded for `correlation_id`.
    pub fn find(&self, correlation_id: &str) -> Option<&BuildResult> {
        self.answered.get(correlation_id)
    }

    /// Appends one result as one line and syncs it to disk. A line cut short by a
    /// crash is ended first, so it stays one unreadable line and this one is whole.
    pub fn append(&mut self, result: &BuildResult) -> Result<(), String> {
        let describe = |error: std::io::Error| {
            format!(
                "cannot append to the record `{}`: {error}",
                self.path.display()
            )
        };
        let mut line = serde_json::to_vec(result).map_err(|error| error.to_string())?;
        line.push(b'\n');
        let length = self.file.metadata().map_err(describe)?.len();
        if length > 0 {
            let mut last = [0u8; 1];
            self.file
                .seek(SeekFrom::Start(length - 1))
                .map_err(describe)?;
            self.file.read_exact(&mut last).map_err(describe)?;
            if last[0] != b'\n' {
                line.insert(0, b'\n');
            }
        }
        self.file.write_all(&line).map_err(describe)?;
        self.file.sync_data().map_err(describe)?;
        if let Some(correlation_id) = &result.correlation_id {
            self.answered.insert(correlation_id.clone(), result.clone());
        }
        Ok(())
    }
}

/// What a store's record holds.
#[derive(Clone, Debug, Default)]
pub struct RecordContents {
    /// Every result, oldest first.
    pub results: Vec<BuildResult>,
    /// The lines that could not be read (a line cut short by a crash): line number
    /// and why.
    pub unreadable: Vec<(usize, String)>,
}

/// Reads the record of `store` (empty when there is none yet).
pub fn read_record(store: &Path) -> Result<RecordContents, String> {
    let path = store.join(RECORD_FILE);
    let text = match std::fs::read(&path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(format!("cannot read `{}`: {error}", path.display())),
    };
    let mut results = Vec::new();
    let mut unreadable = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match BuildResult::parse(line.as_bytes()) {
            Ok(result) => results.push(result),
            Err(reason) => unreadable.push((index + 1, reason)),
        }
    }
    Ok(RecordContents {
        results,
        unreadable,
    })
}

/// What the builder needs to build.
#[derive(Clone, Debug)]
pub struct Builder {
    /// The builder's checkout of the repository.
    pub repository: PathBuf,
    pub store: PathBuf,
    /// Its name in results (`--name`, default the host name).
    pub name: String,
}

impl Builder {
    /// The handler `consume::serve` runs for the build queue.
    pub fn handler(self, mut record: BuildRecord, log: Log) -> Handler {
        Box::new(move |incoming: &Incoming| self.handle(&mut record, &log, incoming))
    }

    fn handle(&self, record: &mut BuildRecord, log: &Log, incoming: &Incoming) -> Handled {
        let correlation_id = incoming.correlation_id.clone();
        if let Some(id) = &correlation_id
            && let Some(result) = record.find(id)
        {
            log(&format!(
                "request {id} was answered before ({}): sending the recorded result again",
                result.outcome.name()
            ));
            return Handled::ack(vec![result.to_outgoing()]);
        }
        let started = Instant::now();
        let request = BuildRequest::parse(&incoming.body);
        let directory = request
            .as_ref()
            .ok()
            .map(|request| request.directory.clone());
        let label = correlation_id
            .as_deref()
            .unwrap_or("without a correlation id");
        let redelivered = if incoming.redelivered {
            ", redelivered"
        } else {
            ""
        };
        log(&format!(
            "building `{}` (request {label}{redelivered})",
            directory.as_deref().unwrap_or("?")
        ));
        let built = match (&correlation_id, request) {
            (None, _) => {
                Err("the request has no correlation id: nobody could be answered".to_string())
            }
            (Some(_), Err(reason)) => Err(reason),
            (Some(_), Ok(request)) => self.build(&request.directory),
        };
        let result = BuildResult {
            format: BUILD_RESULT_FORMAT.to_string(),
            correlation_id: correlation_id.clone(),
            directory,
            outcome: if built.is_ok() {
                BuildOutcome::Built
            } else {
                BuildOutcome::Failed
            },
            digest: built.as_ref().ok().map(|(digest, _, _)| digest.clone()),
            size: built.as_ref().ok().map(|(_, size, _)| *size),
            log: match &built {
                Ok((_, _, text)) => text.clone(),
                Err(reason) => reason.clone(),
            },
            builder: self.name.clone(),
            finished: crate::message::now_utc(),
            seconds: started.elapsed().as_secs_f64(),
        };
        if let Err(reason) = record.append(&result) {
            // unrecorded, it must not be answered: requeue it and slow down
            log(&format!("{reason}: request {label} goes back to the queue"));
            std::thread::sleep(Duration::from_secs(5));
            return Handled::requeue();
        }
        log(&match &result.digest {
            Some(digest) => format!(
                "built `{}` -> {digest} (request {label})",
                result.directory.as_deref().unwrap_or("?")
            ),
            None => format!("build failed (request {label}): {}", result.log),
        });
        if correlation_id.is_some() {
            Handled::ack(vec![result.to_outgoing()])
        } else {
            Handled::reject(Vec::new())
        }
    }

    /// Builds and stores `directory`: its digest, size and log.
    fn build(&self, directory: &str) -> Result<(String, u64, String), String> {
        let path = resolve(&self.repository, directory)?;
        let built = artifacts::build(&path)
            .map_err(|reason| format!("cannot archive `{directory}`: {reason}"))?;
        let stored = artifacts::store(&self.store, &built)
            .map_err(|reason| format!("cannot store the archive of `{directory}`: {reason}"))?;
        let size = built.bytes.len() as u64;
        let log = format!(
            "archived `{directory}`: {size} bytes, {}\nstored as {}\n",
            built.digest,
            stored.display()
        );
        Ok((built.digest, size, log))
    }
}

/// The directory a request names, inside the repository: relative, no `..`, and not
/// leading out through a symlink.
pub fn resolve(repository: &Path, directory: &str) -> Result<PathBuf, String> {
    let relative = Path::new(directory);
    let plain = !directory.is_empty()
        && relative
            .components()
            .all(|component| matches!(component, Component::Normal(_)));
    if !plain {
        return Err(format!(
            "`{directory}` is not a directory of the repository: give it relative to the repository, without `.` or `..`"
        ));
    }
    let repository = repository.canonicalize().map_err(|error| {
        format!(
            "the builder's repository `{}`: {error}",
            repository.display()
        )
    })?;
    let path = repository
        .join(relative)
        .canonicalize()
        .map_err(|error| format!("`{directory}`: {error}"))?;
    if !path.starts_with(&repository) {
        return Err(format!(
            "`{directory}` leads out of the repository (through a symlink)"
        ));
    }
    if !path.is_dir() {
        return Err(format!("`{directory}` is not a directory"));
    }
    Ok(path)
}

/// The host's name, for results.
pub fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "builder".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_stay_inside_the_repository() {
        let repository = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repository.path().join("modules/web/site")).unwrap();
        std::os::unix::fs::symlink("/etc", repository.path().join("modules/out")).unwrap();
        assert!(resolve(repository.path(), "modules/web/site").is_ok());
        for bad in [
            "",
            "/etc",
            "../x",
            "modules/../modules/web",
            "./modules",
            "modules/out",
        ] {
            assert!(resolve(repository.path(), bad).is_err(), "{bad}");
        }
        assert!(resolve(repository.path(), "modules/none").is_err());
    }

    #[test]
    fn the_record_survives_a_torn_line_and_finds_by_correlation() {
        let store = tempfile::tempdir().unwrap();
        let result = |id: &str| BuildResult {
            format: BUILD_RESULT_FORMAT.to_string(),
            correlation_id: Some(id.to_string()),
            directory: Some("d".to_string()),
            outcome: BuildOutcome::Failed,
            digest: None,
            size: None,
            log: "no".to_string(),
            builder: "b".to_string(),
            finished: "1970-01-01T00:00:00Z".to_string(),
            seconds: 0.0,
        };
        {
            let mut record = BuildRecord::open(store.path()).unwrap();
            assert!(
                BuildRecord::open(store.path()).is_err(),
                "one builder per store"
            );
            record.append(&result("a")).unwrap();
        }
        // a crash in the middle of a line
        let path = store.path().join(RECORD_FILE);
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"format\":\"mesh-bu").unwrap();
        drop(file);
        let mut record = BuildRecord::open(store.path()).unwrap();
        assert!(record.find("a").is_some());
        record.append(&result("b")).unwrap();
        let contents = read_record(store.path()).unwrap();
        assert_eq!(contents.results.len(), 2);
        assert_eq!(contents.unreadable.len(), 1);
        assert_eq!(contents.unreadable[0].0, 2);
        assert!(record.find("b").is_some());
    }
}
