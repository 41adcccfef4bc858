//! Parsing ahead: when a file is compiled, the `.nix` files its path literals name
//! are read and parsed on a thread of their own, so that `import` finds their trees
//! ready (a module system imports hundreds of files, each named by a literal).
//! Invariants: a file read ahead is added to the sources then, under the id its
//! tree is parsed with, and `import` of its path takes that id and those bytes, so
//! the tree is exactly what parsing them there would give; what is parsed ahead and
//! never imported is never reported; the evaluating thread never waits for a file
//! the parsing thread has not started (it parses that one itself).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::diagnostic::Diagnostic;
use crate::name::Name;
use crate::span::FileId;
use crate::syntax::Expr;

/// How many files are read ahead and not imported yet at most: a window refilled
/// as they are imported. A module list is imported as it is written; a set naming
/// 5,000 packages of which a program imports a few (nixpkgs' `all-packages.nix`)
/// then costs a window of files read and parsed for nothing, and reading ahead
/// ends there (read all at naming, that program took five times as long).
const WINDOW: usize = 64;

/// How many bytes of files read ahead and not imported yet are kept at most: a
/// file named and never imported (`builtins.pathExists ./huge.nix`) costs nothing
/// without reading ahead, so what reading ahead may cost is bounded; a file that
/// does not fit is left to its import.
pub(crate) const AHEAD_BYTES: u64 = 64 << 20;

/// How many compiled trees are handed over at once to be dropped.
const DISCARDED: usize = 32;

/// A file's tree with its names in the order interning it meets them, or its
/// syntax errors.
pub(crate) type Parsed = Result<(Arc<Expr>, Arc<[Name]>), Vec<Diagnostic>>;

/// A file read ahead, as `import` takes it.
pub(crate) struct ReadAhead {
    /// The id it was added to the sources as.
    pub(crate) file: FileId,
    pub(crate) text: Arc<[u8]>,
    /// None when the parsing thread had not started on it (it will not now).
    pub(crate) parsed: Option<Parsed>,
}

/// One file given to the parsing thread; its state is locked by one thread at a
/// time only when both want the same file.
struct Slot {
    file: FileId,
    text: Arc<[u8]>,
    state: Mutex<State>,
    /// Signalled when the tree is done.
    done: Condvar,
}

enum State {
    Queued,
    Parsing,
    /// Being parsed, and the evaluating thread waits for it.
    Awaited,
    Done(Parsed),
    /// Taken by the evaluating thread (parsed there if it was still queued).
    Taken,
}

impl Slot {
    fn state(&self) -> MutexGuard<'_, State> {
        // nothing is left half-done under the lock: a panic cannot break it
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Trees compiled already, dropped by the parsing thread (freeing a large tree
/// takes as long as a fifth of parsing it); apart from the files, so that they are
/// dropped while files wait.
type Discarded = Vec<Arc<Expr>>;

/// The parsing thread and what it was given.
pub(crate) struct Prefetch {
    work: Option<Sender<Arc<Slot>>>,
    drops: Option<Sender<Discarded>>,
    /// Files named and not read yet: the last file compiled's first, in the order
    /// it names them (evaluation goes into a file before going on to its siblings).
    named: VecDeque<Vec<u8>>,
    /// Every path ever named (each is queued once).
    seen: HashSet<Vec<u8>>,
    /// Files read ahead and not imported yet, by canonical path.
    read: HashMap<Vec<u8>, Arc<Slot>>,
    /// The bytes of the files in `read` ([`AHEAD_BYTES`]).
    pending: u64,
    discarded: Vec<Arc<Expr>>,
    /// Set when the machine is dropped: what is still queued is not parsed.
    closed: Arc<AtomicBool>,
    /// No thread could be started: files are parsed when imported, as without it.
    stopped: bool,
}

impl Prefetch {
    pub(crate) fn new() -> Prefetch {
        Prefetch {
            work: None,
            drops: None,
            named: VecDeque::new(),
            seen: HashSet::new(),
            read: HashMap::new(),
            pending: 0,
            discarded: Vec::new(),
            closed: Arc::default(),
            stopped: false,
        }
    }

    /// Remembers `paths`, named by a file just compiled, to be read in turn.
    pub(crate) fn name(&mut self, paths: Vec<Vec<u8>>) {
        if self.stopped {
            return;
        }
        let new: Vec<Vec<u8>> = paths
            .into_iter()
            .filter(|path| self.seen.insert(path.clone()))
            .collect();
        for path in new.into_iter().rev() {
            self.named.push_front(path);
        }
    }

    /// The next file named to read ahead, while the window has room (and a
    /// parsing thread runs: started the first time).
    pub(crate) fn next_named(&mut self) -> Option<Vec<u8>> {
        if self.stopped || self.read.len() >= WINDOW || self.named.is_empty() {
            return None;
        }
        if self.work.is_none() {
            let (sender, receiver) = std::sync::mpsc::channel();
            let (drops, dropped) = std::sync::mpsc::channel();
            let closed = self.closed.clone();
            // deep trees are parsed and dropped there: the evaluator's stack
            let spawned = std::thread::Builder::new()
                .name("mesh-parse".into())
                .stack_size(super::EVAL_STACK_SIZE)
                .spawn(move || parse_given(&receiver, &dropped, &closed));
            if spawned.is_err() {
                self.stop();
                return None;
            }
            self.work = Some(sender);
            self.drops = Some(drops);
        }
        self.named.pop_front()
    }

    fn stop(&mut self) {
        self.stopped = true;
        self.named.clear();
        self.seen.clear();
    }

    /// Whether the window is down to half: refilled then, not after each import, so
    /// that the parsing thread is woken once for many files (a wake is a system
    /// call).
    pub(crate) fn low(&self) -> bool {
        self.read.len() <= WINDOW / 2
    }

    /// How many bytes more may be read ahead ([`AHEAD_BYTES`]).
    pub(crate) fn room(&self) -> u64 {
        AHEAD_BYTES.saturating_sub(self.pending)
    }

    /// Whether `path` was read ahead (and not imported yet).
    pub(crate) fn has(&self, path: &[u8]) -> bool {
        self.read.contains_key(path)
    }

    /// Hands the file `path`, added to the sources as `file` with `text`, to the
    /// parsing thread (see [`Prefetch::next_named`]).
    pub(crate) fn give(&mut self, path: Vec<u8>, file: FileId, text: Arc<[u8]>) {
        let Some(work) = &self.work else {
            return;
        };
        let slot = Arc::new(Slot {
            file,
            text,
            state: Mutex::new(State::Queued),
            done: Condvar::new(),
        });
        if work.send(slot.clone()).is_ok() {
            self.pending += slot.text.len() as u64;
            self.read.insert(path, slot);
        }
    }

    /// Gives `tree`, compiled, to the parsing thread to drop (a few at a time), or
    /// drops it here when there is none.
    pub(crate) fn discard(&mut self, tree: Arc<Expr>) {
        let Some(drops) = &self.drops else {
            return;
        };
        self.discarded.push(tree);
        if self.discarded.len() >= DISCARDED {
            let _gone = drops.send(std::mem::take(&mut self.discarded));
        }
    }

    /// The file `path` if it was read ahead, with its tree when the parsing
    /// thread made it (waiting if it is at it).
    pub(crate) fn take(&mut self, path: &[u8]) -> Option<ReadAhead> {
        let slot = self.read.remove(path)?;
        self.pending -= slot.text.len() as u64;
        let mut state = slot.state();
        let parsed = loop {
            match std::mem::replace(&mut *state, State::Taken) {
                State::Done(parsed) => break Some(parsed),
                State::Queued | State::Taken => break None,
                State::Parsing | State::Awaited => {
                    *state = State::Awaited;
                    state = slot
                        .done
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
        };
        drop(state);
        Some(ReadAhead {
            file: slot.file,
            text: slot.text.clone(),
            parsed,
        })
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// Puts a file back in the queue if parsing it panicked, so that its import parses
/// it (and meets the panic there) instead of waiting for ever.
struct Unfinished<'s>(&'s Slot);

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let before = std::mem::replace(&mut *self.0.state(), State::Queued);
            if matches!(before, State::Awaited) {
                self.0.done.notify_all();
            }
        }
    }
}

/// The parsing thread: the files given, in order, until the machine (and with it
/// the sender) is dropped.
fn parse_given(work: &Receiver<Arc<Slot>>, drops: &Receiver<Discarded>, closed: &AtomicBool) {
    use std::sync::mpsc::RecvTimeoutError;
    // woken now and then when idle, to drop what was compiled meanwhile
    const IDLE: std::time::Duration = std::time::Duration::from_millis(20);
    loop {
        while let Ok(trees) = drops.try_recv() {
            drop(trees);
        }
        if closed.load(Ordering::Acquire) {
            return;
        }
        let slot = match work.recv_timeout(IDLE) {
            Ok(slot) => slot,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        {
            let mut state = slot.state();
            if !matches!(*state, State::Queued) {
                continue;
            }
            *state = State::Parsing;
        }
        let unfinished = Unfinished(&slot);
        let parsed = crate::parser::parse(&slot.text, slot.file);
        let parsed = if parsed.errors.is_empty() {
            let names: Arc<[Name]> = crate::symbols::first_mentions(&parsed.expr).into();
            Ok((Arc::new(parsed.expr), names))
        } else {
            Err(parsed.errors)
        };
        drop(unfinished);
        // only this thread moves a file out of `Parsing` (the evaluating thread makes
        // it `Awaited`, and waits)
        let before = std::mem::replace(&mut *slot.state(), State::Done(parsed));
        // a wake is a system call: made only for a file waited for
        if matches!(before, State::Awaited) {
            slot.done.notify_all();
        }
    }
}
