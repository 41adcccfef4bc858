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
use std::sync::{Arc, Mutex, OnceLock};

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
    /// What the last record's accesses answered when the cache asked them again
    /// ([`Recorder::answer_now`]), which decided what is reused.
    checked: Mutex<BTreeMap<(Question, PathBuf), String>>,
    /// The compilation was answered otherwise than the check was (a file changed
    /// on disk between the two): what it reused may not match what it read, and
    /// it keeps no record.
    moved: Mutex<Option<PathBuf>>,
    /// A read failed for the process's own limits (too many open files, no
    /// memory): its answer says nothing of the file, so the compilation keeps no
    /// record, and an answer like it is never taken for a change of the file.
    limited: std::sync::atomic::AtomicBool,
    /// Large files as this compilation first read them, with their sha256 once
    /// asked: a file read again (the cache reads the inventory, then a thread of its
    /// own parses it, then every worker imports it) is given the same bytes, not
    /// read from disk again, so every part of one compilation sees one version of it.
    kept: Mutex<BTreeMap<PathBuf, Arc<Kept>>>,
}

/// A large file's bytes as first read, and their sha256 once asked.
#[derive(Debug)]
struct Kept {
    bytes: Arc<[u8]>,
    digest: OnceLock<String>,
}

/// Files at least this large are kept ([`Recorder::source`]) and their digest
/// remembered; below it, reading and digesting again costs less than keeping them.
const KEPT: usize = 64 * 1024;

impl Recorder {
    fn lock_kept(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Arc<Kept>>> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The bytes this compilation kept of `path`, if it did.
    fn kept(&self, path: &Path) -> Option<Arc<[u8]>> {
        self.lock_kept().get(path).map(|kept| kept.bytes.clone())
    }

    /// The bytes of `path`: as this compilation first read them if it kept them,
    /// else read with `read` (and kept when large; a thread that read the file at
    /// the same time as another gets the bytes kept first).
    pub(crate) fn source(
        &self,
        path: &Path,
        max_len: u64,
        read: impl FnOnce() -> io::Result<Arc<[u8]>>,
    ) -> io::Result<Arc<[u8]>> {
        if let Some(bytes) = self.kept(path) {
            return lang::within(bytes, max_len);
        }
        let bytes = read()?;
        if bytes.len() < KEPT {
            return Ok(bytes);
        }
        let mut kept = self.lock_kept();
        let kept = kept.entry(path.to_path_buf()).or_insert_with(|| {
            Arc::new(Kept {
                bytes,
                digest: OnceLock::new(),
            })
        });
        Ok(kept.bytes.clone())
    }

    /// What reading `path` answered: the sha256 of `bytes`, digested once for the
    /// bytes this compilation kept of the file.
    fn digest(&self, path: &Path, bytes: &[u8]) -> String {
        if bytes.len() < KEPT {
            return plan::sha256_digest(bytes);
        }
        let kept = self.lock_kept().get(path).cloned();
        match kept {
            Some(kept) if same_bytes(&kept.bytes, bytes) => kept
                .digest
                .get_or_init(|| plan::sha256_digest(bytes))
                .clone(),
            _ => plan::sha256_digest(bytes),
        }
    }

    /// The bytes of `path` as a vector, read through `loader` as [`Recorder::source`]
    /// reads (`readFile`, `hashFile`): a large file is kept, a small one read as it is.
    fn source_vec(&self, path: &Path, max_len: u64, loader: &dyn Loader) -> io::Result<Vec<u8>> {
        if let Some(bytes) = self.kept(path) {
            return lang::within(bytes, max_len).map(|bytes| bytes.to_vec());
        }
        let bytes = loader.read(path, max_len)?;
        if bytes.len() < KEPT {
            return Ok(bytes);
        }
        let kept = self.source(path, max_len, || Ok(Arc::from(bytes)))?;
        Ok(kept.to_vec())
    }

    /// Remembers what `path` answered a part of this compilation that records no
    /// access (the check of the last record, the inventory's own thread): an
    /// answer that differs, to it or later to the compilation, is noticed.
    fn answered(&self, question: Question, path: &Path, answer: String) {
        if path.starts_with(stdlib::VIRTUAL_ROOT) {
            return;
        }
        self.notice_limits(&answer);
        let differs = match self
            .checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry((question, path.to_path_buf()))
        {
            std::collections::btree_map::Entry::Occupied(occupied) => {
                differs(occupied.get(), &answer)
            }
            std::collections::btree_map::Entry::Vacant(vacant) => {
                vacant.insert(answer);
                false
            }
        };
        if differs {
            self.answered_otherwise(path);
        }
    }

    /// [`Recorder::answered`] for a read; returns the answer.
    fn answered_read(&self, path: &Path, result: &io::Result<impl AsRef<[u8]>>) -> String {
        let answer = match result {
            Ok(bytes) => self.digest(path, bytes.as_ref()),
            Err(error) => error_answer(error),
        };
        self.answered(Question::Read, path, answer.clone());
        answer
    }

    /// The first file for which the compilation was answered otherwise than the
    /// check of the last record's accesses was, or than another part of it was
    /// (see `moved`).
    pub fn moved(&self) -> Option<PathBuf> {
        self.lock_moved().clone()
    }

    fn lock_moved(&self) -> std::sync::MutexGuard<'_, Option<PathBuf>> {
        self.moved
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn answered_otherwise(&self, path: &Path) {
        self.lock_moved().get_or_insert_with(|| path.to_path_buf());
    }

    /// Whether the compilation may keep a record: nothing it read was answered
    /// otherwise than the check was ([`Recorder::moved`]), and no read failed
    /// for the process's own limits.
    pub fn keeps_a_record(&self) -> bool {
        self.moved().is_none() && !self.limited.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn notice_limits(&self, answer: &str) {
        if answer == LIMITED {
            self.limited
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn record(&self, question: Question, path: &Path, owner: Owner, answer: String) {
        let key = (question, path.to_path_buf());
        self.notice_limits(&answer);
        if self
            .checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .is_some_and(|checked| differs(checked, &answer))
        {
            self.answered_otherwise(path);
        }
        let mut accesses = self
            .accesses
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match accesses.entry(key) {
            std::collections::btree_map::Entry::Occupied(mut occupied) => {
                let (existing, recorded) = occupied.get_mut();
                // charged to two parts: it may reach both, so it reaches everything
                if *existing != owner {
                    *existing = Owner::Shared;
                }
                // two parts were answered differently: the record could hold only one
                if differs(recorded, &answer) {
                    self.answered_otherwise(path);
                }
            }
            std::collections::btree_map::Entry::Vacant(vacant) => {
                vacant.insert((owner, answer));
            }
        }
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
    recorder: Arc<Recorder>,
    doing: Rc<RefCell<Doing>>,
}

impl RecordingLoader {
    pub fn new(
        inner: Rc<dyn Loader>,
        recorder: Arc<Recorder>,
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
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
        let result = self.recorder.source_vec(path, max_len, self.inner.as_ref());
        let answer = match &result {
            Ok(bytes) => self.recorder.digest(path, bytes),
            Err(error) => error_answer(error),
        };
        self.record(Question::Read, path, answer);
        result
    }

    fn read_source(&self, path: &Path, max_len: u64) -> io::Result<Arc<[u8]>> {
        let result = self
            .recorder
            .source(path, max_len, || self.inner.read_source(path, max_len));
        let answer = match &result {
            Ok(bytes) => self.recorder.digest(path, bytes),
            Err(error) => error_answer(error),
        };
        self.record(Question::Read, path, answer);
        result
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        let result = self.inner.kind(path);
        self.record(Question::Kind, path, kind_answer(result));
        result
    }

    fn list(&self, path: &Path) -> io::Result<lang::Entries> {
        let result = self.inner.list(path);
        self.record(Question::List, path, list_answer(&result));
        result
    }

    fn next_evaluation(&self) {
        self.inner.next_evaluation();
    }
}

/// A loader that answers as `inner` does, but gives a large file this compilation
/// read before as it was read (see [`Recorder::source`]); it records no access
/// (the cache's own reads: the check of the last record, the inventory's thread,
/// which the compilation reads again) but remembers each answer, so that the
/// compilation answered otherwise is noticed (see `moved`).
pub struct KeptLoader {
    inner: Rc<dyn Loader>,
    recorder: Arc<Recorder>,
}

impl KeptLoader {
    pub fn new(inner: Rc<dyn Loader>, recorder: Arc<Recorder>) -> KeptLoader {
        KeptLoader { inner, recorder }
    }

    /// What `access` (of the last record) answers now, asked of the files on
    /// disk, and remembered as every answer of this loader is: a large file is
    /// read once for this compilation, and its bytes kept for its reads.
    pub fn answer_now(&self, access: &Access) -> String {
        let path = &access.path;
        match access.question {
            Question::Read => {
                // bounded as an evaluation by default is: a file grown past that
                // answers otherwise than it did, and its readers are compiled again
                let max_len = lang::eval::DEFAULT_MAX_MEMORY;
                let result = self
                    .recorder
                    .source(path, max_len, || self.inner.read_source(path, max_len));
                self.recorder.answered_read(path, &result)
            }
            Question::Kind => self.kind_answered(path).1,
            Question::List => self.list_answered(path).1,
        }
    }

    fn kind_answered(&self, path: &Path) -> (Option<FileKind>, String) {
        let kind = self.inner.kind(path);
        let answer = kind_answer(kind);
        self.recorder.answered(Question::Kind, path, answer.clone());
        (kind, answer)
    }

    fn list_answered(&self, path: &Path) -> (io::Result<lang::Entries>, String) {
        let result = self.inner.list(path);
        let answer = list_answer(&result);
        self.recorder.answered(Question::List, path, answer.clone());
        (result, answer)
    }
}

impl Loader for KeptLoader {
    fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
        let result = self.recorder.source_vec(path, max_len, self.inner.as_ref());
        self.recorder.answered_read(path, &result);
        result
    }

    fn read_source(&self, path: &Path, max_len: u64) -> io::Result<Arc<[u8]>> {
        let result = self
            .recorder
            .source(path, max_len, || self.inner.read_source(path, max_len));
        self.recorder.answered_read(path, &result);
        result
    }

    fn kind(&self, path: &Path) -> Option<FileKind> {
        self.kind_answered(path).0
    }

    fn list(&self, path: &Path) -> io::Result<lang::Entries> {
        self.list_answered(path).0
    }

    fn next_evaluation(&self) {
        self.inner.next_evaluation();
    }
}

/// What a read that failed answered: [`LIMITED`] when it failed for the
/// process's own limits.
fn error_answer(error: &io::Error) -> String {
    let limits = [
        rustix::io::Errno::MFILE,
        rustix::io::Errno::NFILE,
        rustix::io::Errno::NOMEM,
    ];
    let limited = error.kind() == io::ErrorKind::OutOfMemory
        || error
            .raw_os_error()
            .is_some_and(|code| limits.iter().any(|limit| limit.raw_os_error() == code));
    if limited {
        LIMITED.to_string()
    } else {
        format!("error {:?}", error.kind())
    }
}

/// The answer of a read that failed for the process's own limits (too many open
/// files, no memory), which says nothing of the file read.
const LIMITED: &str = "error: the process's limits";

/// Whether two answers to one question say the file differs: an answer of the
/// process's limits ([`LIMITED`]) says nothing of the file.
fn differs(one: &str, other: &str) -> bool {
    one != other && one != LIMITED && other != LIMITED
}

/// Whether two byte strings are the same (the same bytes kept, mostly).
fn same_bytes(kept: &[u8], bytes: &[u8]) -> bool {
    std::ptr::eq(kept, bytes) || kept == bytes
}

fn kind_answer(kind: Option<FileKind>) -> String {
    match kind {
        Some(kind) => kind.nix_name().to_string(),
        None => "none".to_string(),
    }
}

fn list_answer(result: &io::Result<lang::Entries>) -> String {
    match result {
        Ok(entries) => {
            // each name's bytes, a NUL (which no name holds) and its kind, in byte
            // order, joined by \x01: the answer a listing of UTF-8 names always had
            let mut entries: Vec<Vec<u8>> = entries
                .iter()
                .map(|(name, kind)| [&name[..], b"\0", kind.nix_name().as_bytes()].concat())
                .collect();
            entries.sort();
            plan::sha256_digest(&entries.join(&b"\x01"[..]))
        }
        Err(error) => error_answer(error),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::io;
    use std::path::Path;
    use std::rc::Rc;
    use std::sync::Arc;

    use lang::{FileKind, Loader, MemoryLoader};

    use super::{Doing, KEPT, KeptLoader, Recorder, RecordingLoader};

    /// A listing is answered from its names' bytes: one of UTF-8 names gives the
    /// answer it gave when names were strings (so a record of a listing stays
    /// valid), and a name that is not UTF-8 is told from the lossy form it had.
    #[test]
    fn a_listing_is_answered_from_its_names_bytes() {
        use lang::FileKind;
        let listing = vec![
            (b"web".to_vec(), FileKind::Directory),
            (b"mesh.nix".to_vec(), FileKind::File),
            ("caf\u{e9}".as_bytes().to_vec(), FileKind::File),
        ];
        let mut as_strings: Vec<String> = listing
            .iter()
            .map(|(name, kind)| {
                let name = String::from_utf8(name.clone()).expect("UTF-8");
                format!("{name}\u{0}{}", kind.nix_name())
            })
            .collect();
        as_strings.sort();
        assert_eq!(
            super::list_answer(&Ok(listing)),
            plan::sha256_digest(as_strings.join("\u{1}").as_bytes())
        );
        let raw = vec![(b"d\xff".to_vec(), FileKind::Directory)];
        let lossy = vec![("d\u{fffd}".as_bytes().to_vec(), FileKind::Directory)];
        assert_ne!(super::list_answer(&Ok(raw)), super::list_answer(&Ok(lossy)));
    }

    /// The digest of a kept file is given only for its bytes: the same path read
    /// with other bytes is digested again, and a small file always is.
    #[test]
    fn a_kept_files_digest_is_given_only_for_its_bytes() {
        let recorder = Recorder::default();
        let path = Path::new("/repository/mesh.nix");
        let first: Arc<[u8]> = vec![b'a'; KEPT + 1].into();
        let mut second = first.to_vec();
        second[KEPT / 2] = b'b';
        let kept = recorder
            .source(path, u64::MAX, || Ok(first.clone()))
            .unwrap();
        assert!(Arc::ptr_eq(&kept, &first));
        assert_eq!(recorder.digest(path, &first), plan::sha256_digest(&first));
        assert_eq!(recorder.digest(path, &second), plan::sha256_digest(&second));
        // the same bytes elsewhere in memory
        let copy = first.to_vec();
        assert_eq!(recorder.digest(path, &copy), plan::sha256_digest(&first));
        let other = Path::new("/repository/other.nix");
        assert_eq!(
            recorder.digest(other, &second),
            plan::sha256_digest(&second)
        );
        let small = b"{ }";
        assert_eq!(recorder.digest(path, small), plan::sha256_digest(small));
    }

    /// Files in memory that count how often each is read from them.
    struct Counting {
        files: MemoryLoader,
        reads: Cell<usize>,
    }

    impl Loader for Counting {
        fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
            self.reads.set(self.reads.get() + 1);
            self.files.read(path, max_len)
        }

        fn kind(&self, path: &Path) -> Option<FileKind> {
            self.files.kind(path)
        }

        fn list(&self, path: &Path) -> io::Result<lang::Entries> {
            self.files.list(path)
        }
    }

    /// Files in memory that another program may change meanwhile.
    struct Changing(std::cell::RefCell<MemoryLoader>);

    impl Changing {
        fn write(&self, path: &Path, text: &[u8]) {
            self.0.borrow_mut().insert(path, text.to_vec());
        }
    }

    impl Loader for Changing {
        fn read(&self, path: &Path, max_len: u64) -> io::Result<Vec<u8>> {
            self.0.borrow().read(path, max_len)
        }

        fn kind(&self, path: &Path) -> Option<FileKind> {
            self.0.borrow().kind(path)
        }

        fn list(&self, path: &Path) -> io::Result<lang::Entries> {
            self.0.borrow().list(path)
        }
    }

    /// Files no read can open: the process has no descriptor left (`ulimit -n`).
    struct Exhausted;

    impl Loader for Exhausted {
        fn read(&self, _: &Path, _: u64) -> io::Result<Vec<u8>> {
            Err(io::Error::from_raw_os_error(
                rustix::io::Errno::MFILE.raw_os_error(),
            ))
        }

        fn kind(&self, _: &Path) -> Option<FileKind> {
            None
        }

        fn list(&self, _: &Path) -> io::Result<lang::Entries> {
            self.read(Path::new("/"), 0).map(|_| Vec::new())
        }
    }

    /// A read that fails for the process's own limits (too many open files) is
    /// not taken for a change of the file (no false E125), and the build keeps
    /// no record: what it read may have been shaped by the failure.
    #[test]
    fn a_read_the_process_limits_kept_from_opening_is_no_change_and_leaves_no_record() {
        let path = Path::new("/r/mesh.nix");
        let access = super::Access {
            question: super::Question::Read,
            path: path.to_path_buf(),
            owner: super::Owner::Shared,
            answer: "anything".to_string(),
        };
        let doing = Rc::new(std::cell::RefCell::new(Doing::Other));
        let files = Rc::new(Changing(Default::default()));
        files.write(path, b"{ nodes = { }; }");
        // the check read the file, a worker could not open it
        let recorder = Arc::new(Recorder::default());
        KeptLoader::new(files.clone(), recorder.clone()).answer_now(&access);
        assert!(recorder.keeps_a_record());
        let worker = RecordingLoader::new(Rc::new(Exhausted), recorder.clone(), doing.clone());
        assert!(worker.read_source(path, u64::MAX).is_err());
        assert_eq!(recorder.moved(), None);
        assert!(!recorder.keeps_a_record());
        // the check could not open it, a worker read it
        let recorder = Arc::new(Recorder::default());
        KeptLoader::new(Rc::new(Exhausted), recorder.clone()).answer_now(&access);
        let worker = RecordingLoader::new(files.clone(), recorder.clone(), doing.clone());
        worker.read(path, u64::MAX).unwrap();
        assert_eq!(recorder.moved(), None);
        assert!(!recorder.keeps_a_record());
        // two workers, one of them out of descriptors
        let recorder = Arc::new(Recorder::default());
        RecordingLoader::new(files.clone(), recorder.clone(), doing.clone())
            .read(path, u64::MAX)
            .unwrap();
        assert!(recorder.keeps_a_record());
        let _ = RecordingLoader::new(Rc::new(Exhausted), recorder.clone(), doing.clone())
            .read(path, u64::MAX);
        assert_eq!(recorder.moved(), None);
        assert!(!recorder.keeps_a_record());
    }

    /// A small file changed between the check of the last record's accesses and
    /// the compilation's read of it, or read differently by two workers, is
    /// noticed (the build then keeps no record); read the same, it is not.
    #[test]
    fn a_file_answered_otherwise_than_the_check_or_another_worker_is_noticed() {
        let path = Path::new("/r/modules/web/module.nix");
        let access = |answer: &str| super::Access {
            question: super::Question::Read,
            path: path.to_path_buf(),
            owner: super::Owner::Module("web".to_string()),
            answer: answer.to_string(),
        };
        let doing = Rc::new(std::cell::RefCell::new(Doing::Other));
        for (changed_after_check, expected) in [(false, None), (true, Some(path))] {
            let files = Rc::new(Changing(Default::default()));
            files.write(path, b"{ port = 8080; }");
            let recorder = Arc::new(Recorder::default());
            let checked =
                KeptLoader::new(files.clone(), recorder.clone()).answer_now(&access("anything"));
            assert_eq!(checked, plan::sha256_digest(b"{ port = 8080; }"));
            if changed_after_check {
                files.write(path, b"{ port = 8081; }");
            }
            let worker = RecordingLoader::new(files.clone(), recorder.clone(), doing.clone());
            worker.read_source(path, u64::MAX).unwrap();
            assert_eq!(recorder.moved().as_deref(), expected);
        }
        // the cache's own thread (the inventory's) read one version, a worker another
        let files = Rc::new(Changing(Default::default()));
        files.write(path, b"{ port = 8080; }");
        let recorder = Arc::new(Recorder::default());
        KeptLoader::new(files.clone(), recorder.clone())
            .read_source(path, u64::MAX)
            .unwrap();
        files.write(path, b"{ port = 8081; }");
        let worker = RecordingLoader::new(files.clone(), recorder.clone(), doing.clone());
        worker.read(path, u64::MAX).unwrap();
        assert_eq!(recorder.moved().as_deref(), Some(path));
        // without a check: two workers given two versions
        let files = Rc::new(Changing(Default::default()));
        files.write(path, b"{ port = 8080; }");
        let recorder = Arc::new(Recorder::default());
        let first = RecordingLoader::new(files.clone(), recorder.clone(), doing.clone());
        let second = RecordingLoader::new(files.clone(), recorder.clone(), doing.clone());
        first.read(path, u64::MAX).unwrap();
        second.read(path, u64::MAX).unwrap();
        assert_eq!(recorder.moved(), None);
        files.write(path, b"{ port = 8081; }");
        second.read(path, u64::MAX).unwrap();
        assert_eq!(recorder.moved().as_deref(), Some(path));
    }

    /// A large file is read from disk once in a compilation: the cache's reader
    /// (answering an access, or parsing the inventory) and every worker's get the
    /// bytes read first, so each part sees one version of it; a small file is read
    /// each time it is asked for, and a file changed on disk is not seen again
    /// until the next compilation.
    #[test]
    fn a_large_file_is_read_once_in_a_compilation_and_a_small_one_each_time() {
        let (large, small) = (Path::new("/r/mesh.nix"), Path::new("/r/module.nix"));
        let mut files = MemoryLoader::new();
        files.insert(large, vec![b' '; KEPT]);
        files.insert(small, b"{ }".to_vec());
        let counting = Rc::new(Counting {
            files,
            reads: Cell::new(0),
        });
        let recorder = Arc::new(Recorder::default());
        let cache_side = KeptLoader::new(counting.clone(), recorder.clone());
        let doing = Rc::new(std::cell::RefCell::new(Doing::Inventory));
        let workers =
            [0, 1].map(|_| RecordingLoader::new(counting.clone(), recorder.clone(), doing.clone()));
        let first = cache_side.read_source(large, u64::MAX).unwrap();
        for worker in &workers {
            assert!(Arc::ptr_eq(
                &worker.read_source(large, u64::MAX).unwrap(),
                &first
            ));
            assert_eq!(worker.read(large, u64::MAX).unwrap(), first.to_vec());
        }
        assert_eq!(counting.reads.get(), 1, "the large file was read again");
        // what the workers record is the digest of the bytes they were given
        let accesses = recorder.accesses();
        assert_eq!(accesses.len(), 1);
        assert_eq!(accesses[0].answer, plan::sha256_digest(&first));
        for worker in &workers {
            worker.read_source(small, u64::MAX).unwrap();
            worker.read(small, u64::MAX).unwrap();
        }
        assert_eq!(counting.reads.get(), 5);
        // the next compilation has a recorder of its own: it reads the file again
        let next = KeptLoader::new(counting.clone(), Arc::new(Recorder::default()));
        next.read_source(large, u64::MAX).unwrap();
        assert_eq!(counting.reads.get(), 6);
    }
}
