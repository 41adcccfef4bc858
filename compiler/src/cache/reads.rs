//! What a compilation read through the loader, each access with its outcome and the
//! part of the compilation it is charged to. Every access goes through
//! [`RecordingLoader`], including the ones whose result the evaluator then caches
//! (an `import` asks the loader what the path is each time), so the record is
//! complete; the standard library is left out (its digest is recorded whole).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;

use lang::{FileKind, Loader};
use serde::{Deserialize, Serialize};

use crate::stdlib;

/// The loader's three questions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Question {
    Read,
    Kind,
    List,
}

/// Which part of the compilation an access is charged to: a change to what it
/// answered rebuilds the nodes of that part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Owner {
    /// Read while the inventory was evaluated: its changes are seen in the
    /// inventory's evaluated entries, compared node by node.
    Inventory,
    /// A file beneath a module's own directory, read while that module was loaded:
    /// it can reach only the nodes that run the module.
    Module(String),
    /// Anything else (read by a node's evaluation, the prelude, or one module
    /// reading another's files): it may reach every node.
    Shared,
}

/// One access and what it answered (a digest, a kind, or an error's kind).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    pub question: Question,
    pub path: PathBuf,
    pub owner: Owner,
    pub answer: String,
}

/// The accesses of every worker of one compilation.
#[derive(Debug, Default)]
pub struct Recorder {
    accesses: Mutex<BTreeMap<(Question, PathBuf), (Owner, String)>>,
    /// Large files read, with their bytes and sha256: the same bytes read again
    /// (every worker reads the inventory, and the cache read it first) are compared,
    /// not digested again.
    digested: Mutex<BTreeMap<PathBuf, Digested>>,
}

/// A large file's bytes as read, and their sha256.
type Digested = (std::sync::Arc<Vec<u8>>, String);

/// Files at least this large have their digest remembered ([`Recorder::digest`]);
/// below it, digesting costs less than keeping the bytes.
const REMEMBERED: usize = 64 * 1024;

impl Recorder {
    /// What reading `path` answered: the sha256 of `bytes`, taken from an earlier
    /// read of the same path that gave the same bytes when there was one. `bytes`
    /// is kept when it is remembered (a copy, unless it is given owned).
    fn digest(&self, path: &Path, bytes: std::borrow::Cow<'_, [u8]>) -> String {
        if bytes.len() < REMEMBERED {
            return plan::sha256_digest(&bytes);
        }
        let lock = || {
            self.digested
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some((_, digest)) = lock()
            .get(path)
            .filter(|(earlier, _)| earlier.as_slice() == &*bytes)
        {
            return digest.clone();
        }
        let digest = plan::sha256_digest(&bytes);
        lock().insert(
            path.to_path_buf(),
            (std::sync::Arc::new(bytes.into_owned()), digest.clone()),
        );
        digest
    }

    /// What `access` answers now, asked of `loader` (the files on disk); a large
    /// file's digest is remembered for this compilation's reads of it.
    pub fn answer_now(&self, loader: &dyn Loader, access: &Access) -> String {
        match access.question {
            Question::Read => match loader.read(&access.path) {
                Ok(bytes) => self.digest(&access.path, bytes.into()),
                Err(error) => read_answer(&Err(error)),
            },
            Question::Kind => kind_answer(loader.kind(&access.path)),
            Question::List => list_answer(&loader.list(&access.path)),
        }
    }

    fn record(&self, question: Question, path: &Path, owner: Owner, answer: String) {
        let mut accesses = self
            .accesses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        accesses
            .entry((question, path.to_path_buf()))
            .and_modify(|(existing, _)| {
                // charged to two parts: it may reach both, so it reaches everything
                if *existing != owner {
                    *existing = Owner::Shared;
                }
            })
            .or_insert((owner, answer));
    }

    /// The accesses in path order.
    pub fn accesses(&self) -> Vec<Access> {
        let accesses = self
            .accesses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        accesses
            .iter()
            .map(|((question, path), (owner, answer))| Access {
                question: *question,
                path: path.clone(),
                owner: owner.clone(),
                answer: answer.clone(),
            })
            .collect()
    }
}

/// What a worker is doing, for charging its accesses.
#[derive(Clone, Debug)]
pub enum Doing {
    Inventory,
    /// Loading the module whose directory is given.
    Module(String, PathBuf),
    Other,
}

/// A loader that answers as `inner` does and records each answer.
pub struct RecordingLoader {
    inner: Rc<dyn Loader>,
    recorder: std::sync::Arc<Recorder>,
    doing: Rc<RefCell<Doing>>,
}

impl RecordingLoader {
    pub fn new(
        inner: Rc<dyn Loader>,
        recorder: std::sync::Arc<Recorder>,
        doing: Rc<RefCell<Doing>>,
    ) -> RecordingLoader {
        RecordingLoader {
            inner,
            recorder,
            doing,
        }
    }

    fn record(&self, question: Question, path: &Path, answer: String) {
        if path.starts_with(stdlib::VIRTUAL_ROOT) {
            return;
        }
        let owner = match &*self.doing.borrow() {
            Doing::Inventory => Owner::Inventory,
            Doing::Module(name, directory) if path.starts_with(directory) => {
                Owner::Module(name.clone())
            }
            Doing::Module(..) | Doing::Other => Owner::Shared,
        };
        self.recorder.record(question, path, owner, answer);
    }
}

impl Loader for RecordingLoader {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let result = self.inner.read(path);
        let answer = match &result {
            Ok(bytes) => self.recorder.digest(path, bytes.as_slice().into()),
            Err(_) => read_answer(&result),
        };
        self.record(Question::Read, path, answer);
        result
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let result = self.inner.kind(path);
        self.record(Question::Kind, path, kind_answer(result));
        result
    }

    fn list(&self, path: &Path) -> io::Result<Vec<(String, FileKind)>> {
        let result = self.inner.list(path);
        self.record(Question::List, path, list_answer(&result));
        result
    }

    fn next_evaluation(&self) {
        self.inner.next_evaluation();
    }
}

fn read_answer(result: &io::Result<Vec<u8>>) -> String {
    match result {
        Ok(bytes) => plan::sha256_digest(bytes),
        Err(error) => format!("error {:?}", error.kind()),
    }
}

fn kind_answer(kind: Option<FileKind>) -> String {
    match kind {
        Some(kind) => kind.nix_name().to_string(),
        None => "none".to_string(),
    }
}

fn list_answer(result: &io::Result<Vec<(String, FileKind)>>) -> String {
    match result {
        Ok(entries) => {
            let mut entries: Vec<String> = entries
                .iter()
                .map(|(name, kind)| format!("{name}\u{0}{}", kind.nix_name()))
                .collect();
            entries.sort();
            plan::sha256_digest(entries.join("\u{1}").as_bytes())
        }
        Err(error) => format!("error {:?}", error.kind()),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{REMEMBERED, Recorder};

    /// A large file's digest is remembered with its bytes, and only the same bytes
    /// get it back: the same path read with other bytes (the file changed during
    /// the build) is digested again, and a small file always is.
    #[test]
    fn a_remembered_digest_is_given_only_for_the_same_bytes() {
        let recorder = Recorder::default();
        let path = Path::new("/repository/mesh.nix");
        let first = vec![b'a'; REMEMBERED + 1];
        let mut second = first.clone();
        second[REMEMBERED / 2] = b'b';
        assert_eq!(
            recorder.digest(path, first.as_slice().into()),
            plan::sha256_digest(&first)
        );
        assert_eq!(
            recorder.digest(path, second.as_slice().into()),
            plan::sha256_digest(&second)
        );
        assert_eq!(
            recorder.digest(path, first.clone().into()),
            plan::sha256_digest(&first)
        );
        let other = Path::new("/repository/other.nix");
        assert_eq!(
            recorder.digest(other, second.as_slice().into()),
            plan::sha256_digest(&second)
        );
        let small = b"{ }";
        assert_eq!(
            recorder.digest(path, small.as_slice().into()),
            plan::sha256_digest(small)
        );
    }
}
