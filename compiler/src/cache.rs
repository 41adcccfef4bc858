//! The build cache (`OUT/.mesh-cache`): what the last successful build into an
//! output read, so that the next build into it compiles again only what an edit
//! reaches. A node's plan is reused only when everything its compilation read is
//! unchanged: the compiler's sources and the standard library, the repository's
//! layout, every file the evaluation asked the loader about (charged to the
//! inventory, to one module, or to every node), the node's evaluated inventory entry
//! and the fleet-wide rest of the inventory, and the digest of the link it received
//! (which holds what it reads of other nodes, `secrets/`, `mesh.lock` and artifacts).
//! A node's declarations (what the link reads of it) are kept too, and taken back
//! without evaluating the node when the inputs of its first half are unchanged
//! (all of the above but the link).
//! A reused plan is read back from `OUT/nodes` and must have the digest recorded.
//! Nothing here decides a plan's content: a reused plan is the bytes a build from
//! nothing makes, or it is not reused. A cache that cannot be read, or was made by
//! another compiler or for another repository, is ignored with a note.
//! The same records are kept in memory by an editor's session (`meshc lsp`, see
//! [`open_in_memory`]): a node's shapes are reused (the plan kept with the record)
//! only when they said nothing (no diagnostic, no trace), and declarations and
//! unloaded module files are taken from a record only when nothing but nodes and
//! module files said anything and nothing traced, and then only the declarations of
//! nodes that said nothing (a module file that said something is loaded again
//! before any node), so what the compilation reports is what one from nothing reports
//! (`pipeline::compile_remembering` compiles again when it could differ).

mod checksum;
mod entries;
mod external;
mod reach;
mod reads;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use lang::{Diagnostic, codes};
use serde::{Deserialize, Serialize};

use crate::confined::{Beneath, Readers, Stamp};
use crate::link::NodeLink;
use crate::pipeline::Session;
use crate::repository::{self, Repository};
use crate::stdlib::{self, MeshLoader};

pub use entries::Digested;
pub use reads::{Doing, Recorder, RecordingLoader};

/// A map keyed by node name (FxHash: a name is a few bytes, looked up several
/// times for every node of a build; an inventory that collides its own names
/// slows only its own build).
pub(crate) type NodeMap<V> = std::collections::HashMap<String, V, rustc_hash::FxBuildHasher>;

/// The cache's file in the output.
pub const CACHE_FILE: &str = ".mesh-cache";
/// The cache's format: a cache of another format is foreign.
const FORMAT: u32 = 8;
/// The cache file's first line starts so; then the length of the record's
/// fleet-wide part and the checksums of its two parts ([`checksum`]). The fleet-wide part follows
/// the line, then the nodes' part (read, and its checksum checked, only when the
/// build is not a no-op). Both parts are postcard, serde's compact binary form:
/// a record is written and read by the program that made it, never by hand, and
/// JSON's text cost more to read and write than the rest of a one-node rebuild's
/// bookkeeping.
const HEADER: &str = "mesh-cache/8";

/// What the record says an output file is: `plan:` and the plan's digest when the
/// bytes are exactly the file of a plan ([`plan::Plan::digest_of_file`]), else
/// their sha256. Either names the bytes: a plan's digest is the sha256 of all of
/// its file but the digest itself. A plan file this build wrote or kept is named
/// from its plan's digest ([`plan_file`]), without hashing its bytes again, and
/// the record keeps no name of it beside that digest.
pub(crate) fn output_digest(bytes: &[u8]) -> String {
    match plan::Plan::digest_of_file(bytes) {
        Some(digest) => plan_file(digest),
        None => plan::sha256_digest(bytes),
    }
}

/// [`output_digest`] of the file of the plan whose digest is `digest`.
fn plan_file(digest: &str) -> String {
    // once for every plan file of every build: no formatting machinery
    let mut name = String::with_capacity("plan:".len() + digest.len());
    name.push_str("plan:");
    name.push_str(digest);
    name
}

mod sources {
    include!(concat!(env!("OUT_DIR"), "/sources.rs"));
}

/// What a cache must have been made by and for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Identity {
    format: u32,
    compiler: String,
    stdlib: String,
    root: PathBuf,
}

/// One node as the last build compiled it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct NodeRecord {
    entry: Option<String>,
    modules: ModuleList,
    /// What the node's first half gave the link: a node whose own inputs are
    /// unchanged takes it from here unevaluated.
    declared: Option<Arc<crate::link::Declarations>>,
    link: String,
    /// The plan's digest (as the manifest has it), its shape count and its secret
    /// shapes (path, sealed text): what the writer and the manifest need of a plan
    /// that is kept as it is on disk.
    plan: String,
    shapes: usize,
    sealed: Vec<(String, String)>,
    /// The plan itself, in a record kept in memory (never in the file): present
    /// only when making it said nothing (no diagnostic, no trace).
    #[serde(skip)]
    kept: Option<Arc<plan::Plan>>,
    /// In a record kept in memory (never in the file, whose build said nothing):
    /// the node's compilation reported something, so its declarations are not
    /// taken back; it is evaluated, and says it again.
    #[serde(skip)]
    loud: bool,
    /// In the last build's record: nothing this node's first half reads has changed
    /// since (see [`BuildCache::unchanged_inputs`]), decided once when the cache is
    /// opened.
    #[serde(skip)]
    unchanged: bool,
    /// The bytes of the cache file this record was read from: a record that is
    /// written again as it was read is copied from them instead of serialized.
    /// Only the fields skipped above are ever changed after a record is read, so
    /// they stay its serialization.
    #[serde(skip)]
    read_from: Option<ReadFrom>,
}

/// The modules a node ran, in a record: written as a list of names; read back,
/// one list shared by every record that has the same names (a fleet's nodes run
/// few different lists, and 10,000 records read 70,000 names, each its own
/// allocation). The nodes' part of a cache file is read on one thread, which
/// keeps the lists it has met while it reads ([`ModuleList::reading`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct ModuleList(Arc<[String]>);

/// The lists one thread's [`ModuleList::reading`] has read, by their names each
/// followed by a newline (never in a module's name), and room to join the next.
#[derive(Default)]
struct ModuleLists {
    lists: std::collections::HashMap<String, Arc<[String]>, rustc_hash::FxBuildHasher>,
    buffer: String,
}

thread_local! {
    static MODULE_LISTS: std::cell::RefCell<Option<ModuleLists>> =
        const { std::cell::RefCell::new(None) };
}

impl ModuleList {
    /// Runs `read` with the lists it reads shared, and forgets them after.
    fn reading<T>(read: impl FnOnce() -> T) -> T {
        MODULE_LISTS.with(|lists| *lists.borrow_mut() = Some(Default::default()));
        let result = read();
        MODULE_LISTS.with(|lists| *lists.borrow_mut() = None);
        result
    }
}

impl std::ops::Deref for ModuleList {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0
    }
}

impl Serialize for ModuleList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for ModuleList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Names;
        impl<'de> serde::de::Visitor<'de> for Names {
            type Value = ModuleList;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a list of module names")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut names: A,
            ) -> Result<ModuleList, A::Error> {
                // each name as the input has it (a cache file's bytes: not copied
                // on its own), followed by a newline, in room kept from list to list
                let mut joined = MODULE_LISTS.with(|lists| {
                    lists
                        .borrow_mut()
                        .as_mut()
                        .map(|lists| std::mem::take(&mut lists.buffer))
                        .unwrap_or_default()
                });
                joined.clear();
                while names.next_element_seed(Append(&mut joined))?.is_some() {}
                let list = MODULE_LISTS.with(|lists| {
                    let mut lists = lists.borrow_mut();
                    let lists = lists.as_mut()?;
                    let list = match lists.lists.get(joined.as_str()) {
                        Some(list) => list.clone(),
                        None => {
                            let list = split(&joined);
                            lists.lists.insert(joined.clone(), list.clone());
                            list
                        }
                    };
                    lists.buffer = std::mem::take(&mut joined);
                    Some(list)
                });
                Ok(ModuleList(list.unwrap_or_else(|| split(&joined))))
            }
        }
        /// Appends a name and a newline to a list's names.
        struct Append<'j>(&'j mut String);
        impl<'de> serde::de::DeserializeSeed<'de> for Append<'_> {
            type Value = ();

            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<(), D::Error> {
                deserializer.deserialize_str(self)
            }
        }
        impl serde::de::Visitor<'_> for Append<'_> {
            type Value = ();

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a module name")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<(), E> {
                if name.contains('\n') {
                    return Err(E::custom("a module name with a newline"));
                }
                self.0.push_str(name);
                self.0.push('\n');
                Ok(())
            }
        }
        /// The names of `joined`, each followed by a newline.
        fn split(joined: &str) -> Arc<[String]> {
            joined.split_terminator('\n').map(str::to_string).collect()
        }
        deserializer.deserialize_seq(Names)
    }
}

/// The modules a node ran in the last build, as its record has them (shared, not
/// copied: 10,000 nodes taken from the record copied 70,000 names).
#[derive(Clone, Debug)]
pub struct RecordedModules(ModuleList);

impl std::ops::Deref for RecordedModules {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.0
    }
}

/// Where in the bytes of a cache file a record was read from.
#[derive(Clone)]
struct ReadFrom {
    file: Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
}

impl std::fmt::Debug for ReadFrom {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "bytes {:?} of the cache file", self.range)
    }
}

/// The declarations a node's link was made from, as [`BuildCache::finished`]
/// records them.
#[derive(Clone, Copy)]
pub enum Declared<'a> {
    /// Taken from the cache ([`BuildCache::declarations`]): recorded again as they
    /// were read.
    Cached,
    /// Made by this build.
    Made(&'a crate::link::Declarations),
}

/// A node's record in this build, and where its plan came from. A node whose
/// plan and declarations were both taken from the last record has that record
/// itself, shared (and written as the bytes it was read from, [`nodes_part`]).
#[derive(Debug)]
struct Finished {
    record: Arc<NodeRecord>,
    origin: Origin,
}

/// One worker's finished nodes, in the order it finished them, added to the
/// cache's at once ([`BuildCache::finish`]): no lock taken a node (two workers
/// took one for each of 10,000 reused nodes, and waited on each other).
#[derive(Debug, Default)]
pub struct Finishing(Vec<(String, Finished)>);

/// What the cache records of a plan, and has of a plan the last build wrote that
/// this build keeps (its file in `OUT/nodes` is the bytes the cache recorded).
pub struct Reused {
    of: PlanOf,
    origin: Origin,
}

/// The plan's digest (as the manifest has it, and which names its file:
/// [`plan_file`]), its shape count and its secret shapes.
enum PlanOf {
    /// Made by this build.
    Made {
        digest: String,
        shapes: usize,
        sealed: Vec<(String, String)>,
    },
    /// The last record's, which has the plan itself when it is kept in memory.
    Recorded(Arc<NodeRecord>),
}

/// Where a build's plan for a node came from.
#[derive(Clone, Copy, Debug, Default)]
enum Origin {
    /// Made by this build.
    #[default]
    Made,
    /// Kept from the last compilation of an editor's session.
    Remembered,
    /// The plan file the last build wrote, with the stamp it had when it was found
    /// unchanged: the record is written with it without asking again (if the file
    /// changes before then, the next build reads it again).
    OnDisk(Stamp),
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Record {
    identity: Identity,
    layout: String,
    /// `mesh.lock` and `secrets/` (None when the fleet has artifacts, whose
    /// directories are read only by the link).
    external: Option<String>,
    fleet: Option<String>,
    accesses: Vec<reads::Access>,
    /// Kept in the cache file's part of its own, read by [`Record::read_nodes`].
    /// By node name: looked up several times for every node of a build.
    #[serde(skip)]
    nodes: NodeMap<Arc<NodeRecord>>,
    /// How many nodes the record has.
    node_count: usize,
    /// The cache file as read, until its nodes' part is parsed.
    #[serde(skip)]
    unread: Option<Unread>,
    /// Every file of the output but the cache, with what it is ([`output_digest`]).
    #[serde(deserialize_with = "sorted_map")]
    out: BTreeMap<String, String>,
    /// The stamp of each file of `out` as the record was written: a file whose
    /// stamp is the same and settled before the record's own write is not read
    /// again (see [`Stamp::settled_before`]).
    #[serde(deserialize_with = "sorted_map")]
    stamps: BTreeMap<String, Stamp>,
    shapes: usize,
    /// The build said what the repository's layout says (a repository module
    /// shadowing a standard one): every build says it again, so none is taken for
    /// one in which nothing changed.
    layout_said: bool,
    /// Every node's evaluated entry, in a record kept in memory (which keeps only
    /// the nodes whose shapes said nothing, but compares every node's entry).
    #[serde(skip)]
    entries: Option<NodeMap<Option<String>>>,
    /// When the record's file was written (its modification time, nanoseconds).
    #[serde(skip)]
    written: Option<i128>,
    /// In a record kept in memory: the module files whose loading reported
    /// something. Loaded before any node, unchanged or not, so that they say it
    /// again where a compilation from nothing says it.
    #[serde(skip)]
    loud_modules: BTreeSet<String>,
    /// The nodes whose plan files the build found unchanged before it compiled
    /// (while the inventory was digested), with the stamps that said so: their
    /// reuse asks for no stamp again. Empty when none were asked.
    #[serde(skip)]
    settled_plans: NodeMap<Stamp>,
}

/// The nodes' part of a cache file, not yet parsed: the file's bytes, where the
/// part starts, and the checksum its header gives it.
#[derive(Clone)]
struct Unread {
    bytes: Arc<Vec<u8>>,
    start: usize,
    digest: String,
}

impl Unread {
    /// The records of the `count` nodes (None: the part does not have the checksum
    /// the header gives it, or is not one whole map of `count` records). Each
    /// record keeps where it was read from ([`NodeRecord::read_from`]).
    fn parse(&self, count: usize) -> Option<NodeMap<Arc<NodeRecord>>> {
        let file = &self.bytes;
        let part = &file[self.start..];
        if checksum::checksum(part) != self.digest {
            return None;
        }
        // a map as postcard writes one: its length, then each name and record
        let (length, mut rest) = postcard::take_from_bytes::<usize>(part).ok()?;
        if length != count {
            return None;
        }
        // no room taken for more records than the part has bytes for
        let mut nodes =
            NodeMap::with_capacity_and_hasher(count.min(part.len() / 8), Default::default());
        for _ in 0..count {
            let (name, after_name) = postcard::take_from_bytes::<String>(rest).ok()?;
            let (mut record, after) = postcard::take_from_bytes::<NodeRecord>(after_name).ok()?;
            record.read_from = Some(ReadFrom {
                file: self.bytes.clone(),
                range: file.len() - after_name.len()..file.len() - after.len(),
            });
            nodes.insert(name, Arc::new(record));
            rest = after;
        }
        rest.is_empty().then_some(nodes)
    }
}

impl std::fmt::Debug for Unread {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "the nodes' part of a cache file, bytes {}..{}",
            self.start,
            self.bytes.len()
        )
    }
}

impl Record {
    /// Parses the nodes read with the record, if not yet (false: their part does
    /// not have the checksum the header gives it, or is not a whole record of
    /// `node_count` nodes).
    fn read_nodes(&mut self) -> bool {
        if let Some(unread) = self.unread.take() {
            match ModuleList::reading(|| unread.parse(self.node_count)) {
                Some(nodes) => self.nodes = nodes,
                None => return false,
            }
        }
        self.nodes.len() == self.node_count
    }

    /// [`Record::read_nodes`] while the plan files are stamped on a thread of their
    /// own ([`settled_plans`]): the two are independent, and each is work per node.
    fn read_nodes_and_settle_plans(&mut self, out: &Path) {
        // lent to the stamping thread while the nodes are read into the record
        let stamps = std::mem::take(&mut self.stamps);
        let written = self.written;
        let (settled, _) = beside(
            "mesh-stamps",
            || {
                let settled = settled_plans(&stamps, written, out);
                crate::phases::mark("plan files stamped");
                settled
            },
            || {
                self.read_nodes();
                crate::phases::mark("cache nodes read");
            },
        );
        self.stamps = stamps;
        self.settled_plans = settled;
    }

    /// Whether the output file `name` is the one this record digested, as its stamp
    /// `now` says (see [`settled`]).
    fn settled(&self, name: &str, now: &Stamp) -> bool {
        settled(&self.stamps, self.written, name, now)
    }

    /// The digest of the output file `name` when its stamp says it is the file
    /// this record digested: unchanged since, and settled before the record was
    /// written (None: read it).
    fn unchanged_file(&self, name: &str, now: Option<&Stamp>) -> Option<&String> {
        now.filter(|now| self.settled(name, now))
            .and_then(|_| self.out.get(name))
    }
}

/// Whether the output file `name` is the one a record digested, as its stamp `now`
/// says: the stamp it has in `stamps`, and settled before the record was written
/// (at `written`).
fn settled(
    stamps: &BTreeMap<String, Stamp>,
    written: Option<i128>,
    name: &str,
    now: &Stamp,
) -> bool {
    written.is_some_and(|written| {
        stamps
            .get(name)
            .is_some_and(|recorded| now == recorded && recorded.settled_before(written))
    })
}

/// Asks the stamp of every plan file a record digested (`stamps`, the record
/// written at `written`), beneath `out`: the nodes whose files are unchanged since
/// ([`settled`]), with the stamps. A file changed after this is found changed by
/// the next build (the stamp kept is the one taken here), as a file changed after
/// any stamp is.
fn settled_plans(
    stamps: &BTreeMap<String, Stamp>,
    written: Option<i128>,
    out: &Path,
) -> NodeMap<Stamp> {
    let Some(nodes) = Beneath::open(out, false)
        .and_then(|out| out.directory(Path::new("nodes"), false))
        .ok()
        .flatten()
    else {
        return NodeMap::default();
    };
    let plans = stamps.range::<str, _>((Bound::Included("nodes/"), Bound::Excluded("nodes0")));
    let mut settled = NodeMap::with_capacity_and_hasher(stamps.len(), Default::default());
    let Some(written) = written else {
        return settled;
    };
    // the recorded stamp is the one met in the walk: looked up again, each of
    // 10,000 names alike would cost a search of long common prefixes
    for (key, recorded) in plans {
        let Some(node) = key
            .strip_prefix("nodes/")
            .and_then(|name| name.strip_suffix(".json"))
        else {
            continue;
        };
        let Some(stamp) = nodes.stamp(&key["nodes/".len()..]).ok().flatten() else {
            continue;
        };
        if stamp == *recorded && recorded.settled_before(written) {
            settled.insert(node.to_string(), stamp);
        }
    }
    settled
}

/// Runs `background` on a thread named `name` while `here` runs on this one, and
/// returns what both return; when no thread can be started, `background` runs here
/// after `here`. For flat work only (stamps, digests of text, the record's bytes):
/// work that walks a syntax tree wants [`beside_evaluating`].
fn beside<A: Send, B>(
    name: &str,
    background: impl Fn() -> A + Sync,
    here: impl FnOnce() -> B,
) -> (A, B) {
    std::thread::scope(|scope| {
        let started = std::thread::Builder::new()
            .name(name.to_string())
            .spawn_scoped(scope, &background);
        let there = here();
        let back = match started {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => background(),
        };
        (back, there)
    })
}

/// [`beside`] for work that parses or evaluates: its thread has the evaluator's
/// stack, and when no such thread can be started `background` is not run (None).
/// This thread's stack may be too small for the tree it would walk: a deeply
/// nested inventory overflowed `meshc build`'s main thread under `ulimit -v`.
/// The cache then digests nothing and reuses nothing; the build's workers, which
/// need the same stack, say E059.
fn beside_evaluating<A: Send, B>(
    name: &str,
    background: impl FnOnce() -> A + Send,
    here: impl FnOnce() -> B,
) -> (Option<A>, B) {
    std::thread::scope(|scope| {
        let started = std::thread::Builder::new()
            .name(name.to_string())
            .stack_size(lang::eval::EVAL_STACK_SIZE)
            .spawn_scoped(scope, background);
        let there = here();
        let back = started.ok().map(|thread| {
            thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        (back, there)
    })
}

/// Runs `work` on a thread with the evaluator's stack and returns what it returns
/// (None when no such thread can be started; see [`beside_evaluating`]).
fn on_evaluation_stack<T: Send>(work: impl FnOnce() -> T + Send) -> Option<T> {
    beside_evaluating("mesh-inventory", work, || ()).0
}

/// A map of the record read as the sequence of its pairs, which is how postcard
/// writes a map: a `BTreeMap` wrote them in order, so the map is built at once
/// instead of by one search and insertion a pair (10,000 plan files: 32 M of the
/// 900 M instructions of a one-node build). A name written twice keeps its last
/// value, as a map read pair by pair does.
fn sorted_map<'de, D, V>(deserializer: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    let pairs = Vec::<(String, V)>::deserialize(deserializer)?;
    Ok(pairs.into_iter().collect())
}

/// Names noted by every worker of a build (the nodes evaluated, the module files
/// loaded), listed in order.
#[derive(Debug, Default)]
struct Names(Mutex<BTreeSet<String>>);

impl Names {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, name: &str) {
        self.lock().insert(name.to_string());
    }

    fn list(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// Which module files a worker loads before its nodes ([`BuildCache::modules_to_load`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModulesToLoad {
    All,
    /// These (they changed); the others as nodes ask for them.
    Changed(BTreeSet<String>),
}

/// What opening the cache found.
pub enum Start {
    /// Nothing the last build read has changed and the output is as it left it:
    /// there is nothing to do.
    /// `read` is how many of the output's files had to be read back (the others'
    /// stamps said they are the files the last build digested).
    Unchanged {
        nodes: usize,
        shapes: usize,
        read: usize,
    },
    /// Build, reusing what the cache allows.
    Build(Arc<BuildCache>),
}

/// Where a cache's record is kept between compilations.
#[derive(Debug)]
enum Store {
    /// `OUT/.mesh-cache` in this output; reused plans are read back from `OUT/nodes`.
    Output(PathBuf),
    /// An editor's memory ([`Remembered`]): reused plans are kept with the record.
    Memory,
}

/// The record of the last compilation of an editor's session, kept in memory
/// between edits (never written): what each node read and the plans whose making
/// said nothing. Made by [`BuildCache::remember`], given to [`open_in_memory`].
#[derive(Clone, Debug)]
pub struct Remembered {
    record: Record,
    /// The compilation reported nothing but what nodes said of themselves (no
    /// diagnostic of the repository, of the inventory, of a module file or of the
    /// link, no trace): the declarations of its nodes that said nothing may be taken
    /// back and its unchanged module files left unevaluated, as a build's are from
    /// the cache of a build that succeeded.
    silent: bool,
}

impl Remembered {
    /// How many nodes the record has a plan for.
    pub fn nodes(&self) -> usize {
        self.record.nodes.len()
    }

    /// The same record, trusted for plans only: every node's first half is
    /// evaluated and every module file loaded (what a compilation that took more
    /// from a record and reported something is made again with).
    pub fn for_plans_only(&self) -> Remembered {
        Remembered {
            record: self.record.clone(),
            silent: false,
        }
    }
}

impl Reused {
    /// Whether the plan is the last record's (not made by this build).
    pub fn is_recorded(&self) -> bool {
        matches!(self.of, PlanOf::Recorded(_))
    }

    /// What the cache records of a plan made by this build.
    pub fn of(plan: &plan::Plan) -> Reused {
        Reused {
            of: PlanOf::Made {
                digest: plan.digest().to_string(),
                shapes: plan.shapes().len(),
                sealed: crate::pipeline::sealed_texts(plan),
            },
            origin: Origin::Made,
        }
    }

    /// The last record's plan of a node, as this build keeps it.
    fn recorded(record: &Arc<NodeRecord>, origin: Origin) -> Reused {
        Reused {
            of: PlanOf::Recorded(record.clone()),
            origin,
        }
    }

    pub fn digest(&self) -> &str {
        match &self.of {
            PlanOf::Made { digest, .. } => digest,
            PlanOf::Recorded(record) => &record.plan,
        }
    }

    pub fn shapes(&self) -> usize {
        match &self.of {
            PlanOf::Made { shapes, .. } => *shapes,
            PlanOf::Recorded(record) => record.shapes,
        }
    }

    pub fn sealed(&self) -> &[(String, String)] {
        match &self.of {
            PlanOf::Made { sealed, .. } => sealed,
            PlanOf::Recorded(record) => &record.sealed,
        }
    }

    /// The plan, when the record is kept in memory.
    pub fn plan(&self) -> Option<&Arc<plan::Plan>> {
        match &self.of {
            PlanOf::Made { .. } => None,
            PlanOf::Recorded(record) => record.kept.as_ref(),
        }
    }
}

/// The cache of one build: the last build's record, what has changed since, and
/// what this build records.
#[derive(Debug)]
pub struct BuildCache {
    store: Store,
    identity: Identity,
    layout: Option<String>,
    previous: Option<Record>,
    /// Nodes may be reused at all (nothing charged to every node changed).
    reusable: bool,
    /// Beside plans, declarations (of nodes that said nothing) may be taken back
    /// and unchanged module files left unloaded: in the record's compilation
    /// nothing but nodes and module files reported anything, and nothing traced.
    trusted: bool,
    changed_modules: BTreeSet<String>,
    /// The module files whose loading reported something in the record's
    /// compilation (a memory's): loaded before any node.
    loud_modules: BTreeSet<String>,
    entries: entries::EntryDigests,
    pub recorder: Arc<Recorder>,
    /// The repository's layout as the cache read it (None if it could not be).
    repository: Option<Arc<Repository>>,
    /// The syntax trees the cache's own evaluation of the inventory parsed, for the
    /// build's workers (a tree is reused only for the same bytes as the same file).
    pub parses: Arc<lang::ParseCache>,
    finished: Mutex<BTreeMap<String, Finished>>,
    reused: AtomicUsize,
    /// Nodes whose declarations came from the cache, and nodes whose first half
    /// was evaluated.
    declared: AtomicUsize,
    evaluated: Names,
    /// The module files evaluated (by any worker).
    loaded_modules: Names,
    /// A worker loaded the module files only for a node that needed them (if none
    /// did, their accesses stay recorded from the build that loaded them).
    deferred_modules: std::sync::atomic::AtomicBool,
    /// A node evaluated after its declarations came from the cache declared
    /// something else: what the cache recorded cannot be trusted.
    disagreed: std::sync::atomic::AtomicBool,
    /// The nodes whose compilation reported something (a memory does not take
    /// their declarations back next time).
    loud: Names,
    /// The module files whose loading reported something in this compilation.
    loud_module_names: Names,
    /// Something was reported that no one node said of itself: of the repository,
    /// the inventory, a module file, or the link.
    said_beyond_nodes: std::sync::atomic::AtomicBool,
    /// The plan files a reuse read back (their stamps were not enough).
    read_back: AtomicUsize,
    /// `OUT/nodes`, opened by the first reuse.
    nodes: std::sync::OnceLock<Option<Beneath>>,
    notes: Mutex<Vec<Diagnostic>>,
}

fn identity(root: &Path) -> Identity {
    Identity {
        format: FORMAT,
        compiler: format!("{} {}", env!("CARGO_PKG_VERSION"), sources::FINGERPRINT),
        stdlib: stdlib::digest().to_string(),
        root: root.to_path_buf(),
    }
}

fn layout_of(repository: &Repository) -> String {
    plan::sha256_digest(format!("{repository:?}").as_bytes())
}

fn note(code: codes::Code, message: String, help: &str) -> Diagnostic {
    Diagnostic::note(code, message).with_help(help.to_string())
}

/// The note of a cache in `out` that cannot be read as a record.
fn damaged(out: &Path) -> Diagnostic {
    note(
        codes::CACHE_UNREADABLE,
        format!(
            "the build cache `{}` is damaged; building from nothing",
            out.join(CACHE_FILE).display()
        ),
        "nothing to do: the build writes a new cache; `meshc build --no-cache` removes it",
    )
}

/// Reads `OUT/.mesh-cache`: None (with a note when there was something) unless it is
/// whole and was made for `identity`.
fn read_record(
    out: &Path,
    identity: &Identity,
    accept: &dyn Fn(&Stamp) -> bool,
    notes: &mut Vec<Diagnostic>,
) -> Option<Record> {
    let path = out.join(CACHE_FILE);
    // beneath the output, never through a link (as everything mesh reads in OUT)
    // the file opened, not its path, is the one asked about, before it is read
    let mut refused = false;
    let read = Beneath::open(out, false).and_then(|output| {
        output.read_stamped_if(Path::new(CACHE_FILE), |stamp| {
            refused = !accept(stamp);
            match refused {
                true => Err(std::io::Error::other("not the cache asked for")),
                false => Ok(()),
            }
        })
    });
    let (bytes, stamp) = match read {
        Err(_) if refused => {
            notes.push(note(
                codes::CACHE_FOREIGN,
                format!(
                    "the build cache `{}` is not the one your last build into this output left; building from nothing",
                    path.display()
                ),
                "nothing to do: the build replaces it with one of its own",
            ));
            return None;
        }
        Ok(Some(read)) => read,
        Ok(None) => return None,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            notes.push(note(
                codes::CACHE_UNREADABLE,
                format!(
                    "the build cache `{}` cannot be read ({error}); building from nothing",
                    path.display()
                ),
                "nothing to do: the build writes a new cache; `meshc build --no-cache` removes it",
            ));
            return None;
        }
    };
    // a first line that names the format and the digest of the rest, then the record;
    // a cache of another format is another compiler's
    let family = HEADER.split_once('/').map_or(HEADER, |(family, _)| family);
    let other_format = bytes.starts_with(format!("{family}/").as_bytes())
        && !bytes.starts_with(format!("{HEADER} ").as_bytes());
    if other_format {
        notes.push(note(
            codes::CACHE_FOREIGN,
            format!(
                "the build cache `{}` was made by another compiler (another format); building from nothing",
                path.display()
            ),
            "nothing to do: the build replaces it with one of its own",
        ));
        return None;
    }
    // the fleet-wide part is checked and parsed now, the nodes when they are wanted
    let record = header_of(&bytes).and_then(|(start, length, fleet_digest, nodes_digest)| {
        let end = start
            .checked_add(length)
            .filter(|end| *end <= bytes.len())?;
        let fleet = &bytes[start..end];
        if checksum::checksum(fleet) != fleet_digest {
            return None;
        }
        let (mut record, rest) = postcard::take_from_bytes::<Record>(fleet).ok()?;
        if !rest.is_empty() {
            return None;
        }
        record.unread = Some(Unread {
            bytes: Arc::new(bytes),
            start: end,
            digest: nodes_digest,
        });
        Some(record)
    });
    let Some(mut record) = record else {
        notes.push(damaged(out));
        return None;
    };
    if record.identity != *identity {
        notes.push(note(
            codes::CACHE_FOREIGN,
            format!(
                "the build cache `{}` was made by another compiler or for another repository; building from nothing",
                path.display()
            ),
            "nothing to do: the build replaces it with one of its own",
        ));
        return None;
    }
    record.written = Some(stamp.modified());
    Some(record)
}

/// The nodes' part of a cache file: `finished` as postcard writes a map, with
/// each record read from the last cache file and kept as it was copied from the
/// bytes it was read from.
fn nodes_part(finished: &BTreeMap<String, Finished>) -> postcard::Result<Vec<u8>> {
    let copied: usize = finished
        .values()
        .filter_map(|finished| finished.record.read_from.as_ref())
        .map(|read_from| read_from.range.len())
        .sum();
    let mut part = postcard::to_extend(
        &finished.len(),
        Vec::with_capacity(copied + 64 * finished.len()),
    )?;
    for (name, Finished { record, .. }) in finished {
        part = postcard::to_extend(name, part)?;
        match &record.read_from {
            Some(ReadFrom { file, range }) => part.extend_from_slice(&file[range.clone()]),
            None => part = postcard::to_extend(&**record, part)?,
        }
    }
    Ok(part)
}

/// The fleet-wide part of a cache file: `record` serialized into room taken at
/// once for its files' names, digests and stamps (10,000 plan files: 2 MB, which a
/// vector grown by doubling copies about twice over).
fn fleet_part(record: &Record) -> postcard::Result<Vec<u8>> {
    let out: usize = record
        .out
        .iter()
        .map(|(name, digest)| name.len() + digest.len() + 4)
        .sum();
    let stamps: usize = record.stamps.keys().map(|name| name.len() + 64).sum();
    postcard::to_extend(record, Vec::with_capacity(out + stamps + 4096))
}

/// The first line of a cache file of this format: where the fleet-wide part
/// starts, its length, and the digests of the two parts (None: not such a line).
fn header_of(bytes: &[u8]) -> Option<(usize, usize, String, String)> {
    let end = bytes.iter().take(256).position(|byte| *byte == b'\n')?;
    let line = std::str::from_utf8(&bytes[..end]).ok()?;
    let mut words = line.split(' ');
    let (Some(HEADER), Some(length), Some(fleet), Some(nodes), None) = (
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
    ) else {
        return None;
    };
    Some((
        end + 1,
        length.parse().ok()?,
        fleet.to_string(),
        nodes.to_string(),
    ))
}

/// Digests and stamps of an output's files, by path relative to it.
type OutFiles = (BTreeMap<String, String>, BTreeMap<String, Stamp>);

/// What a build knows of an output file it wrote or reused (by its path in the
/// output): the file's digest, and the stamp reuse found.
type Built<'b> = dyn Fn(&str) -> (Option<String>, Option<Stamp>) + 'b;

/// What each file is ([`output_digest`]) and its stamp, for every file beneath
/// `out` but the cache and the staging area, by path relative to `out` (None if
/// one cannot be read, or is not a regular file). `built` gives, by that path,
/// the digest of a file this build wrote or reused itself, which is not read
/// back, and the stamp reuse found of it; a file whose stamp says it is the one `previous` digested is not read
/// either. A file's stamp is taken before it is read, so a file changed in between
/// has a stamp that does not match the next time. `read` counts the files read.
///
/// `nodes_listed` is what the commit found in `OUT/nodes` (None: list it): a
/// plan file this build wrote or reused is taken from there without listing the
/// directory again, and any other name is walked as the directory's entries are.
fn out_files<'b>(
    out: &Path,
    built: &Built<'b>,
    previous: Option<&Record>,
    nodes_listed: Option<&[std::ffi::OsString]>,
    read: &mut usize,
) -> Option<OutFiles> {
    let mut walk = OutWalk {
        out,
        // read beneath the output, never through a link (a file the walk saw could
        // be replaced by one before it is read)
        output: Beneath::open(out, false).ok()?,
        built,
        previous,
        read,
        files: Vec::new(),
    };
    let listed_nodes = |entry: &walkdir::DirEntry| {
        nodes_listed.is_some() && entry.depth() == 1 && entry.file_name() == "nodes"
    };
    let walker = walkdir::WalkDir::new(out).follow_links(false).into_iter();
    for entry in walker.filter_entry(|entry| !listed_nodes(entry)) {
        walk.entry(&entry.ok()?)?;
    }
    let mut nodes: Option<Beneath> = None;
    for name in nodes_listed.unwrap_or_default() {
        let relative = format!("nodes/{}", name.to_string_lossy());
        match built(&relative) {
            // written or reused by this build: a regular file it put or found there
            // (a node's name, so UTF-8)
            (Some(digest), seen) => {
                let stamp = match seen {
                    Some(stamp) => stamp,
                    None => {
                        if nodes.is_none() {
                            nodes = walk.output.directory(Path::new("nodes"), false).ok()?;
                        }
                        nodes.as_ref()?.stamp(name.to_str()?).ok()??
                    }
                };
                walk.files.push((relative, digest, stamp));
            }
            // anything else is walked as the whole output's walk would meet it: a
            // link there is not followed, and is no regular file
            (None, _) => {
                let beneath = walkdir::WalkDir::new(out.join("nodes").join(name))
                    .follow_links(false)
                    .follow_root_links(false);
                for entry in beneath {
                    walk.entry(&entry.ok()?)?;
                }
            }
        }
    }
    // gathered as met (a directory lists its entries in no order) and put in
    // order once: inserted one by one, 10,000 plan files named alike cost each
    // map a search of long common prefixes
    let mut files = walk.files;
    files.sort_unstable_by(|(left, ..), (right, ..)| left.cmp(right));
    let stamps = files
        .iter()
        .map(|(name, _, stamp)| (name.clone(), *stamp))
        .collect();
    let digests = files
        .into_iter()
        .map(|(name, digest, _)| (name, digest))
        .collect();
    Some((digests, stamps))
}

/// The state of [`out_files`]' walk.
struct OutWalk<'w, 'b> {
    out: &'w Path,
    output: Beneath,
    built: &'w Built<'b>,
    previous: Option<&'w Record>,
    read: &'w mut usize,
    /// Each file's path relative to the output, digest and stamp, as met.
    files: Vec<(String, String, Stamp)>,
}

impl OutWalk<'_, '_> {
    /// Digests and stamps the file `entry` (None: it cannot be read, or is not a
    /// regular file).
    fn entry(&mut self, entry: &walkdir::DirEntry) -> Option<()> {
        let relative = entry.path().strip_prefix(self.out).ok()?;
        let name = relative.to_string_lossy().into_owned();
        if name == CACHE_FILE || name.starts_with(".mesh-staging") {
            return Some(());
        }
        if entry.file_type().is_dir() {
            return Some(());
        }
        let (known, seen) = (self.built)(&name);
        // a link or a device in the output: never called unchanged
        let mut stamp = match seen {
            Some(stamp) if entry.file_type().is_file() => stamp,
            _ => Stamp::of_metadata(&entry.metadata().ok()?)?,
        };
        let unchanged = || {
            self.previous
                .and_then(|previous| previous.unchanged_file(&name, Some(&stamp)))
        };
        let digest = match known.or_else(|| unchanged().cloned()) {
            Some(digest) => digest,
            None => {
                *self.read += 1;
                // the stamp of the file read, taken before reading it
                let (bytes, read_stamp) = self.output.read_stamped(relative).ok().flatten()?;
                stamp = read_stamp;
                output_digest(&bytes)
            }
        };
        self.files.push((name, digest, stamp));
        Some(())
    }
}

/// Opens the cache of the output `out` for a build of the repository at `root`.
/// The notes say why a cache that was there is not used.
///
/// The secrets mode is not part of the key: `--locked` and a build that may make
/// secrets differ only where a secret is missing, which is an error in one (and no
/// cache is kept) and a change to `secrets/` in the other (which the cache sees).
///
/// `accept` is asked about the stamp of the cache file opened (its device, inode,
/// size and times): a file it refuses is not read (a default output's cache must
/// be the one the record of the user's last build names).
pub fn open(root: &Path, out: &Path, accept: &dyn Fn(&Stamp) -> bool) -> (Start, Vec<Diagnostic>) {
    let mut notes = Vec::new();
    // the repository as the compilation names it: `--repo .` and its absolute path
    // are one repository, and one cache
    let canonical = std::fs::canonicalize(root).ok();
    let root = canonical.as_deref().unwrap_or(root);
    let identity = identity(root);
    let parses = Arc::new(lang::ParseCache::skimming());
    let recorder = Arc::new(Recorder::default());
    let repository = repository::load(root).ok().map(Arc::new);
    // an inventory written since the record was is digested while the record is
    // read: whether the digests are used is decided, as always, by the record. A
    // large file it reads is kept in `recorder` for the workers: like theirs, its
    // session has no overlay of unsaved buffers (only the editor's has one, and
    // it opens its cache with `open_in_memory`, whose one session does both)
    let early = repository
        .as_ref()
        .filter(|repository| written_since_record(&repository.inventory, out));
    let (previous, digested) = std::thread::scope(|scope| {
        let digesting = early.and_then(|repository| {
            let (parses, recorder) = (parses.clone(), recorder.clone());
            std::thread::Builder::new()
                .name("mesh-inventory".to_string())
                .stack_size(lang::eval::EVAL_STACK_SIZE)
                .spawn_scoped(scope, move || {
                    digest_inventory(repository, &parses, &Session::default(), &recorder)
                })
                .ok()
        });
        let mut previous = read_record(out, &identity, accept, &mut notes);
        crate::phases::mark("cache record read");
        if digesting.is_some()
            && let Some(record) = &mut previous
        {
            // the inventory changed, so the build is not a no-op: its nodes' records
            // are wanted, and are parsed while the inventory is still being digested
            // and the plan files it digested are asked whether they changed, which
            // the build's reuse would otherwise ask one by one after the first halves
            record.read_nodes_and_settle_plans(out);
        }
        (
            previous,
            digesting.and_then(|digesting| digesting.join().ok()),
        )
    });
    let session = Session {
        parses: Some(parses),
        ..Session::default()
    };
    let store = Store::Output(out.to_path_buf());
    // a record in an output is of a build that reported nothing (one that did
    // keeps none)
    let previous = previous.map(|record| (record, true));
    let start = start(
        root,
        store,
        previous,
        &session,
        (repository, digested, recorder),
    );
    crate::phases::mark("cache opened");
    (start, notes)
}

/// Whether the inventory was written since the cache's record was (when both are
/// there): then it has likely changed.
fn written_since_record(inventory: &Path, out: &Path) -> bool {
    let record = Beneath::open(out, false)
        .ok()
        .and_then(|output| output.stamp(CACHE_FILE).ok().flatten());
    let inventory = std::fs::metadata(inventory)
        .ok()
        .and_then(|metadata| Stamp::of_metadata(&metadata));
    match (record, inventory) {
        (Some(record), Some(inventory)) => inventory.modified() >= record.modified(),
        _ => false,
    }
}

/// The digests of the repository's inventory, read with the session's overlay.
fn digest_inventory(
    repository: &Repository,
    parses: &Arc<lang::ParseCache>,
    session: &Session,
    recorder: &Arc<Recorder>,
) -> entries::EntryDigests {
    let loader = inventory_loader(repository, session, recorder);
    let digests = entries::digest_inventory(
        &repository.root,
        &repository.inventory,
        loader,
        session,
        parses,
    );
    crate::phases::mark("inventory digested");
    digests
}

/// Parses the repository's inventory into `parses` (read with the session's
/// overlay), where the workers' evaluators find its tree.
fn parse_inventory(
    repository: &Repository,
    parses: &Arc<lang::ParseCache>,
    session: &Session,
    recorder: &Arc<Recorder>,
) {
    let loader = inventory_loader(repository, session, recorder);
    let mut machine = entries::inventory_machine(&repository.root, loader, session, parses);
    // a syntax error is the workers' to report, as they meet it
    let _ = machine.parse_file(&repository.inventory);
    crate::phases::mark("inventory parsed");
}

/// The loader the inventory and the files of an access are read through: the
/// repository's files, under the session's overlay of unsaved buffers, a large
/// file given as the compilation first read it (`recorder`'s).
fn inventory_loader(
    repository: &Repository,
    session: &Session,
    recorder: &Arc<Recorder>,
) -> Rc<reads::KeptLoader> {
    let files = MeshLoader::with_overlay(repository.root.clone(), session.overlay.clone())
        .refusing_pipes(session.editor);
    Rc::new(reads::KeptLoader::new(Rc::new(files), recorder.clone()))
}

/// Opens a cache kept in memory (`meshc lsp`): `previous` is what the last
/// compilation of the session remembered; `session` is the one the compilation
/// runs with (its overlay of unsaved buffers, through which the recorded accesses
/// are asked again, its limits, cancel flag and syntax trees). Every node's first
/// half is evaluated; a node's plan is reused when nothing it read changed and
/// making it said nothing.
pub fn open_in_memory(
    root: &Path,
    previous: Option<&Remembered>,
    session: &Session,
) -> Arc<BuildCache> {
    let identity = identity(root);
    let previous = previous
        .filter(|remembered| remembered.record.identity == identity)
        .map(|remembered| (remembered.record.clone(), remembered.silent));
    let repository = repository::load(root).ok().map(Arc::new);
    let recorder = Arc::new(Recorder::default());
    match start(
        root,
        Store::Memory,
        previous,
        session,
        (repository, None, recorder),
    ) {
        Start::Build(cache) => cache,
        // never said of a memory (`start` calls only an output unchanged)
        Start::Unchanged { .. } => Arc::new(empty(
            root,
            Store::Memory,
            None,
            parses_of(session),
            Arc::default(),
        )),
    }
}

fn parses_of(session: &Session) -> Arc<lang::ParseCache> {
    session.parses.clone().unwrap_or_default()
}

fn empty(
    root: &Path,
    store: Store,
    layout: Option<String>,
    parses: Arc<lang::ParseCache>,
    recorder: Arc<Recorder>,
) -> BuildCache {
    BuildCache {
        repository: None,
        store,
        identity: identity(root),
        layout,
        previous: None,
        reusable: false,
        trusted: false,
        changed_modules: BTreeSet::new(),
        loud_modules: BTreeSet::new(),
        entries: entries::EntryDigests::default(),
        recorder,
        parses,
        finished: Mutex::new(BTreeMap::new()),
        reused: AtomicUsize::new(0),
        declared: AtomicUsize::new(0),
        evaluated: Names::default(),
        loaded_modules: Names::default(),
        deferred_modules: std::sync::atomic::AtomicBool::new(false),
        disagreed: std::sync::atomic::AtomicBool::new(false),
        loud: Names::default(),
        loud_module_names: Names::default(),
        said_beyond_nodes: std::sync::atomic::AtomicBool::new(false),
        read_back: AtomicUsize::new(0),
        nodes: std::sync::OnceLock::new(),
        notes: Mutex::new(Vec::new()),
    }
}

/// What a store's `previous` record allows for a compilation of `root` that reads
/// `overlay` in place of its files; the record comes with whether its compilation
/// said nothing (only then are more than plans taken from it). A memory is never
/// called unchanged: its compilation is wanted for what it reports.
fn start(
    root: &Path,
    store: Store,
    previous: Option<(Record, bool)>,
    session: &Session,
    (repository, mut digested, recorder): (
        Option<Arc<Repository>>,
        Option<entries::EntryDigests>,
        Arc<Recorder>,
    ),
) -> Start {
    let layout = repository.as_deref().map(layout_of);
    let out = match &store {
        Store::Output(out) => Some(out.clone()),
        Store::Memory => None,
    };
    let mut cache = empty(root, store, layout, parses_of(session), recorder);
    let Some(repository) = repository else {
        return Start::Build(Arc::new(cache));
    };
    cache.repository = Some(repository.clone());
    let loader = inventory_loader(&repository, session, &cache.recorder);
    // the digests made while the record was read, or made now
    let (parses, recorder) = (cache.parses.clone(), cache.recorder.clone());
    // on the evaluator's stack, as every parse and evaluation: `open`'s caller may be
    // on an ordinary thread (`meshc build` calls it on its main thread, whose stack a
    // deeply nested or deeply recursive inventory overflowed)
    let digests = |digested: &mut Option<entries::EntryDigests>| {
        digested.take().unwrap_or_else(|| {
            on_evaluation_stack(|| digest_inventory(&repository, &parses, session, &recorder))
                .unwrap_or_default()
        })
    };
    let Some((mut previous, said_nothing)) = previous else {
        cache.entries = digests(&mut digested);
        return Start::Build(Arc::new(cache));
    };
    let mut shared_changed = cache.layout.as_ref() != Some(&previous.layout);
    let mut inventory_changed = false;
    for access in &previous.accesses {
        if loader.answer_now(access) == access.answer {
            continue;
        }
        match &access.owner {
            reads::Owner::Shared => shared_changed = true,
            reads::Owner::Inventory => inventory_changed = true,
            reads::Owner::Module(name) => {
                cache.changed_modules.insert(name.clone());
            }
        }
    }
    let mut read = 0;
    let unchanged = out.as_ref().is_some_and(|out| {
        !shared_changed
            && !previous.layout_said
            && !inventory_changed
            && cache.changed_modules.is_empty()
            && previous.external.is_some()
            && previous.external == external::digest(&repository.root)
            && out_files(out, &|_| (None, None), Some(&previous), None, &mut read)
                .is_some_and(|(digests, _)| digests == previous.out)
    });
    if unchanged {
        return Start::Unchanged {
            nodes: previous.node_count,
            shapes: previous.shapes,
            read,
        };
    }
    // the build compiles: the workers will want the inventory's tree, which no
    // thread has parsed unless it was digested while the record was read. It is
    // parsed (and digested, if it changed) while the record's nodes are read,
    // instead of by each worker after
    let nodes_read = if out.is_some() && digested.is_none() {
        let (made, read) = beside_evaluating(
            "mesh-inventory",
            || {
                if inventory_changed {
                    Some(digest_inventory(&repository, &parses, session, &recorder))
                } else {
                    parse_inventory(&repository, &parses, session, &recorder);
                    None
                }
            },
            || previous.read_nodes(),
        );
        digested = made.flatten();
        read
    } else {
        previous.read_nodes()
    };
    if !nodes_read {
        cache
            .lock_notes()
            .push(damaged(out.as_deref().unwrap_or(root)));
        cache.entries = digests(&mut digested);
        return Start::Build(Arc::new(cache));
    }
    cache.entries = if inventory_changed {
        digests(&mut digested)
    } else {
        entries::EntryDigests {
            how: None,
            fleet: previous.fleet.clone(),
            nodes: previous.entries.clone().unwrap_or_else(|| {
                previous
                    .nodes
                    .iter()
                    .map(|(name, record)| (name.clone(), record.entry.clone()))
                    .collect()
            }),
        }
    };
    cache.reusable =
        !shared_changed && cache.entries.fleet.is_some() && cache.entries.fleet == previous.fleet;
    cache.trusted = cache.reusable && said_nothing;
    if cache.reusable {
        // its evaluated entry, and the files of the modules it ran
        for (node, record) in &mut previous.nodes {
            let entry = cache.entries.nodes.get(node).and_then(Option::as_ref);
            // not shared yet (but with an editor's session, which keeps its own)
            let record = Arc::make_mut(record);
            record.unchanged = entry.is_some()
                && record.entry.as_ref() == entry
                && !record
                    .modules
                    .iter()
                    .any(|module| cache.changed_modules.contains(module));
        }
    }
    cache.loud_modules = std::mem::take(&mut previous.loud_modules);
    cache.previous = Some(previous);
    Start::Build(Arc::new(cache))
}

/// What the cache knows of a node's link: a digest of all of it but its spans
/// (those of the shapes it places and of the grants' access). A span numbers files
/// as the worker that read them did, which depends on the order it loaded them,
/// and reaches only diagnostics (a placed shape's place in a plan is its
/// `source`): a compilation that reports any is not taken from a record.
pub fn link_digest(link: &NodeLink) -> String {
    // most nodes of a large fleet receive nothing: that digest is made once
    static NOTHING: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if link.is_empty() {
        return NOTHING
            .get_or_init(|| digest_of_link(&NodeLink::default()))
            .clone();
    }
    digest_of_link(link)
}

fn digest_of_link(link: &NodeLink) -> String {
    let NodeLink {
        placed,
        secrets,
        credentials,
        logins,
        grants,
        images,
        artifacts,
        diagnostics,
        provider_failed,
    } = link;
    let placed: Vec<_> = placed
        .iter()
        .map(|placed| (&placed.resource, &placed.module, &placed.source))
        .collect();
    let grants: Vec<_> = grants
        .iter()
        .map(|(key, grants)| {
            let grants: Vec<_> = grants
                .iter()
                .map(|grant| {
                    let access = grant
                        .access
                        .as_ref()
                        .map(|access| (&access.vhost, &access.permissions));
                    (
                        &grant.consumer,
                        &grant.login,
                        &grant.credential,
                        &grant.form,
                        access,
                    )
                })
                .collect();
            (key, grants)
        })
        .collect();
    let text = format!(
        "{placed:?} {secrets:?} {credentials:?} {logins:?} {grants:?} {images:?} {artifacts:?} {diagnostics:?}{}",
        if *provider_failed {
            " provider failed"
        } else {
            ""
        }
    );
    plan::sha256_digest(text.as_bytes())
}

impl BuildCache {
    /// The record of `node` in the last build when nothing its first half reads has
    /// changed: its evaluated entry, the fleet-wide inventory, everything charged to
    /// every node, and the files of the modules it ran (resolution is a function of
    /// these, so it runs the same modules). None means evaluate it.
    fn unchanged_inputs(&self, node: &str) -> Option<&Arc<NodeRecord>> {
        if !self.reusable {
            return None;
        }
        self.previous
            .as_ref()?
            .nodes
            .get(node)
            .filter(|previous| previous.unchanged)
    }

    /// The digest of the plan the output held for `node` when the last build
    /// ended, as its record says (None: no record of the node, or a memory's).
    /// A hint for the writer: never a reason to keep a file.
    pub fn last_plan(&self, node: &str) -> Option<&str> {
        match self.store {
            Store::Output(_) => self
                .previous
                .as_ref()?
                .nodes
                .get(node)
                .map(|record| record.plan.as_str()),
            Store::Memory => None,
        }
    }

    /// The repository at `root` as the cache read its layout, for the compilation
    /// to compile that same one.
    pub fn repository(&self, root: &Path) -> Option<Arc<Repository>> {
        self.repository
            .clone()
            .filter(|_| self.identity.root == root)
    }

    /// Whether [`BuildCache::declarations`] has the declarations of `node`: its
    /// inventory entry is then unchanged since the last build read it without a
    /// diagnostic.
    pub fn has_declarations(&self, node: &str) -> bool {
        self.trusted
            && self
                .unchanged_inputs(node)
                .is_some_and(|record| record.declared.is_some() && !record.loud)
    }

    /// The declarations the last build's link had of `node` and the modules it
    /// ran, when nothing its first half reads has changed (None: evaluate it).
    /// A memory has them only when its compilation reported nothing.
    pub fn declarations(
        &self,
        node: &str,
    ) -> Option<(Arc<crate::link::Declarations>, RecordedModules)> {
        if !self.trusted {
            return None;
        }
        let record = self.unchanged_inputs(node).filter(|record| !record.loud)?;
        let declared = record.declared.clone()?;
        self.declared.fetch_add(1, Ordering::Relaxed);
        Some((declared, RecordedModules(record.modules.clone())))
    }

    /// Which module files a worker loads before its nodes: all of them, or (when
    /// nothing charged to every node changed and the record is of a compilation
    /// that reported nothing) only those that changed since; then an unchanged
    /// one is loaded when a node asks for it, because loading it would report
    /// what the last compilation reported, which was nothing.
    pub fn modules_to_load(&self) -> ModulesToLoad {
        if self.trusted {
            ModulesToLoad::Changed(
                self.changed_modules
                    .union(&self.loud_modules)
                    .cloned()
                    .collect(),
            )
        } else {
            ModulesToLoad::All
        }
    }

    /// The modules `node` ran in the last build, if it has a record: the ones it
    /// most likely runs again.
    pub fn modules_before(&self, node: &str) -> Option<&[String]> {
        let previous = self.previous.as_ref()?.nodes.get(node)?;
        Some(&previous.modules)
    }

    /// Whether some node's plan may be reused: there is a last record and nothing
    /// charged to every node (nor the fleet-wide inventory) changed since.
    pub fn may_reuse(&self) -> bool {
        self.reusable
    }

    /// Whether the record is kept in memory (an editor's session), not in an output.
    pub fn in_memory(&self) -> bool {
        matches!(self.store, Store::Memory)
    }

    /// A node whose declarations came from the cache was evaluated and declared
    /// something else (a dependency the cache does not see): the build is made
    /// again from nothing and keeps no cache.
    pub fn disagreed(&self) {
        self.disagreed.store(true, Ordering::Relaxed);
    }

    /// `node`'s compilation reported something of it.
    pub fn said_something(&self, node: &str) {
        self.loud.add(node);
    }

    /// Whether what was reported is only what every compilation says again of the
    /// repository's layout (no node, module file, link or inventory said
    /// anything): a build that reported only that may keep its cache.
    pub fn said_only_of_the_layout(&self) -> bool {
        !self.said_beyond_nodes.load(Ordering::Relaxed)
            && self.loud.is_empty()
            && self.loud_module_names.is_empty()
    }

    /// Loading module `name`'s file reported something.
    pub fn module_said_something(&self, name: &str) {
        self.loud_module_names.add(name);
    }

    /// Something was reported that no one node or module file said of itself.
    pub fn said_beyond_nodes(&self) {
        self.said_beyond_nodes.store(true, Ordering::Relaxed);
    }

    /// Whether a node declared other than the cache had it.
    pub fn has_disagreed(&self) -> bool {
        self.disagreed.load(Ordering::Relaxed)
    }

    /// A worker loads the unchanged module files only as nodes need them.
    pub fn deferred_modules(&self) {
        self.deferred_modules.store(true, Ordering::Relaxed);
    }

    /// Whether this build took anything from the cache but plans: declarations, or
    /// the module files left unloaded. Its diagnostics and traces may then differ
    /// from a build from nothing in their places and order (a cached declaration's
    /// spans number the files of the build that read them), so a build that has any
    /// is made again from nothing.
    pub fn took_more_than_plans(&self) -> bool {
        self.declared_from_cache() > 0 || self.deferred_modules.load(Ordering::Relaxed)
    }

    /// `node`'s first half is evaluated.
    pub fn evaluating(&self, node: &str) {
        self.evaluated.add(node);
    }

    /// The nodes whose first halves were evaluated (resolved, their settings,
    /// contributions and declarations), in order.
    pub fn evaluated(&self) -> Vec<String> {
        self.evaluated.list()
    }

    /// Module `name`'s file is evaluated.
    pub fn loading_module(&self, name: &str) {
        self.loaded_modules.add(name);
    }

    /// The modules whose files were evaluated (by any worker), in order.
    pub fn loaded_modules(&self) -> Vec<String> {
        self.loaded_modules.list()
    }

    /// How many nodes' declarations came from the cache.
    pub fn declared_from_cache(&self) -> usize {
        self.declared.load(Ordering::Relaxed)
    }

    /// The plan `node` had in the last build, read back from the output, when
    /// nothing its compilation reads has changed; None means compile it.
    /// A memory's plan is the one it kept.
    pub fn reuse(&self, node: &str, modules: &[String], link: &str) -> Option<Reused> {
        let previous = self.unchanged_inputs(node)?;
        // the modules of a node taken from this record are its own: no compare
        let same_modules =
            std::ptr::eq(&*previous.modules, modules) || *previous.modules == *modules;
        if !same_modules || previous.link != link {
            return None;
        }
        let out = match &self.store {
            Store::Output(out) => out,
            Store::Memory => {
                previous.kept.as_ref()?;
                self.reused.fetch_add(1, Ordering::Relaxed);
                return Some(Reused::recorded(previous, Origin::Remembered));
            }
        };
        let previous_record = self.previous.as_ref()?;
        if let Some(stamp) = previous_record.settled_plans.get(node) {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Some(Reused::recorded(previous, Origin::OnDisk(*stamp)));
        }
        let key = format!("nodes/{node}.json");
        let name = &key["nodes/".len()..];
        let nodes = self.nodes.get_or_init(|| {
            Beneath::open(out, false)
                .and_then(|out| out.directory(Path::new("nodes"), false))
                .ok()
                .flatten()
        });
        // the file the last build wrote if its stamp says so; else read and digested
        let unchanged = nodes.as_ref().and_then(|nodes| {
            let stamp = nodes.stamp(name).ok().flatten()?;
            if previous_record.settled(&key, &stamp) {
                return Some(stamp);
            }
            self.read_back.fetch_add(1, Ordering::Relaxed);
            let (bytes, stamp) = nodes.read_stamped(Path::new(name)).ok().flatten()?;
            // the file of the very plan the record (and so the manifest) names
            (output_digest(&bytes) == plan_file(&previous.plan)).then_some(stamp)
        });
        if let Some(stamp) = unchanged {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Some(Reused::recorded(previous, Origin::OnDisk(stamp)));
        }
        self.lock_notes().push(note(
            codes::CACHE_PLAN_CHANGED,
            format!(
                "`{}` is not the plan the last build wrote for node `{node}`; compiling the node again",
                out.join("nodes").join(name).display()
            ),
            "nothing to do: the build writes the plan again; do not edit the files of a build",
        ));
        None
    }

    /// Records what `node`'s plan was made (or reused) from: its modules, the
    /// declarations its link was made from, and the link. Declarations that came
    /// from the cache (the link was made from them whether or not the node was
    /// evaluated again) are recorded as they were read. A node whose plan and
    /// declarations both came from the last record has that record again, shared:
    /// its entry, modules and link are the ones [`BuildCache::reuse`] found unchanged.
    /// `silent` is the plan when making it said nothing (no diagnostic, no trace):
    /// a memory keeps it, and reuses only what it kept.
    pub fn finished(
        &self,
        finishing: &mut Finishing,
        node: &str,
        (modules, declared): (Vec<String>, Declared<'_>),
        link: String,
        plan: Reused,
        silent: Option<&plan::Plan>,
    ) {
        let record = match (plan.of, declared) {
            (PlanOf::Recorded(last), Declared::Cached) => last,
            (of, declared) => {
                let declared = match declared {
                    Declared::Cached => self
                        .previous
                        .as_ref()
                        .and_then(|previous| previous.nodes.get(node))
                        .and_then(|record| record.declared.clone()),
                    Declared::Made(declared) => Some(Arc::new(declared.unfiled())),
                };
                let (digest, shapes, sealed, kept) = match of {
                    PlanOf::Made {
                        digest,
                        shapes,
                        sealed,
                    } => (digest, shapes, sealed, None),
                    PlanOf::Recorded(last) => (
                        last.plan.clone(),
                        last.shapes,
                        last.sealed.clone(),
                        last.kept.clone(),
                    ),
                };
                let kept = match self.store {
                    Store::Output(_) => None,
                    Store::Memory => kept.or_else(|| silent.map(|plan| Arc::new(plan.clone()))),
                };
                Arc::new(NodeRecord {
                    entry: self.entries.nodes.get(node).cloned().flatten(),
                    modules: ModuleList(modules.into()),
                    declared,
                    link,
                    plan: digest,
                    shapes,
                    sealed,
                    kept,
                    loud: false,
                    unchanged: false,
                    read_from: None,
                })
            }
        };
        finishing.0.push((
            node.to_string(),
            Finished {
                record,
                origin: plan.origin,
            },
        ));
    }

    /// Adds what a worker finished ([`BuildCache::finished`]) to what the build
    /// records. A worker's nodes come in name order, so its map is built at once.
    pub fn finish(&self, finishing: Finishing) {
        let mut finished: BTreeMap<String, Finished> = finishing.0.into_iter().collect();
        self.finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .append(&mut finished);
    }

    /// How this build digested the inventory's entries (None: it did not, they
    /// were unchanged).
    pub fn inventory_digested(&self) -> Option<entries::Digested> {
        self.entries.how
    }

    /// How many reused plans were read back to check them (the others' stamps
    /// said they are the files the last build wrote).
    pub fn read_back(&self) -> usize {
        self.read_back.load(Ordering::Relaxed)
    }

    /// How many nodes were reused.
    pub fn reused(&self) -> usize {
        self.reused.load(Ordering::Relaxed)
    }

    /// The nodes this build compiled (made a plan for) instead of reusing, in order.
    pub fn compiled_again(&self) -> Vec<String> {
        self.finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(_, finished)| matches!(finished.origin, Origin::Made))
            .map(|(node, _)| node.clone())
            .collect()
    }

    /// Why something in the cache was not used.
    pub fn notes(&self) -> Vec<Diagnostic> {
        let mut notes = self.lock_notes().clone();
        if let Some(path) = self.recorder.moved() {
            let shown = path.strip_prefix(&self.identity.root).unwrap_or(&path);
            notes.push(note(
                codes::CACHE_INPUT_MOVED,
                format!(
                    "`{}` changed while the build read it; the build keeps no cache",
                    shown.display()
                ),
                "build again when the files are saved: the next build compiles every node from nothing",
            ));
        }
        notes
    }

    fn lock_notes(&self) -> std::sync::MutexGuard<'_, Vec<Diagnostic>> {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes the cache of the build just committed (`written`: what the commit
    /// wrote; `artifacts`: whether the fleet declares any). A build whose every
    /// node was not recorded writes none and removes the last one.
    /// `layout_said`: the build said what the layout says (see
    /// [`BuildCache::said_only_of_the_layout`]).
    pub fn save(
        &self,
        written: &crate::staged::Written,
        artifacts: bool,
        layout_said: bool,
    ) -> Result<(), Diagnostic> {
        let Store::Output(out_directory) = &self.store else {
            return Ok(());
        };
        // what was reused was judged by other bytes than the ones evaluated, or
        // something was read that the process's limits kept it from reading
        if !self.recorder.keeps_a_record() {
            return remove(out_directory);
        }
        let finished = std::mem::take(
            &mut *self
                .finished
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        // a plan file this build wrote or reused has the digest its record has,
        // and a reused one the stamp it had when it was found unchanged (looked
        // up by hash: once for each of the output's plan files)
        let by_node: std::collections::HashMap<&str, &Finished, rustc_hash::FxBuildHasher> =
            finished
                .iter()
                .map(|(node, finished)| (node.as_str(), finished))
                .collect();
        let built = |name: &str| {
            let finished = name
                .strip_prefix("nodes/")
                .and_then(|name| name.strip_suffix(".json"))
                .and_then(|node| by_node.get(node).copied());
            match finished {
                Some(Finished { record, origin }) => {
                    let seen = match origin {
                        Origin::OnDisk(stamp) => Some(*stamp),
                        Origin::Made | Origin::Remembered => None,
                    };
                    (Some(plan_file(&record.plan)), seen)
                }
                // written by this build: its digest is known
                None if name == crate::staged::MANIFEST => (Some(written.manifest.clone()), None),
                None => (None, None),
            }
        };
        // the nodes' part is serialized and digested while the output is walked
        let (nodes_part, files) = beside(
            "mesh-cache",
            || {
                nodes_part(&finished).map(|part| {
                    let digest = checksum::checksum(&part);
                    (part, digest)
                })
            },
            || {
                let files = out_files(
                    out_directory,
                    &built,
                    self.previous.as_ref(),
                    Some(&written.nodes_listed),
                    &mut 0,
                );
                crate::phases::mark("output walked");
                files
            },
        );
        let (Some(layout), Some((out, stamps))) = (self.layout.clone(), files) else {
            return remove(out_directory);
        };
        if finished.len() != written.nodes {
            return remove(out_directory);
        }
        let external = if artifacts {
            None
        } else {
            external::digest(&self.identity.root)
        };
        let record = Record {
            identity: self.identity.clone(),
            layout,
            external,
            fleet: self.entries.fleet.clone(),
            accesses: self.accesses(),
            node_count: finished.len(),
            nodes: NodeMap::default(),
            unread: None,
            out,
            stamps,
            shapes: written.shapes,
            layout_said,
            entries: None,
            written: None,
            loud_modules: BTreeSet::new(),
            settled_plans: NodeMap::default(),
        };
        let parts = nodes_part.and_then(|nodes| Ok((fleet_part(&record)?, nodes)));
        let (fleet, (nodes, nodes_digest)) = parts.map_err(|error| {
            crate::emit::output_error(
                &out_directory.join(CACHE_FILE),
                std::io::Error::other(error),
            )
        })?;
        let header = format!(
            "{HEADER} {} {} {nodes_digest}\n",
            fleet.len(),
            checksum::checksum(&fleet)
        );
        let output = Beneath::open(out_directory, false)
            .map_err(|error| crate::emit::output_error(out_directory, error))?;
        // written even when it has the bytes the last build wrote: its time is the
        // one the stamps of the files written before it are measured against
        output
            .write_parts(
                CACHE_FILE,
                &[header.as_bytes(), &fleet, &nodes],
                false,
                Readers::Owner,
            )
            .map_err(|error| crate::emit::output_error(&out_directory.join(CACHE_FILE), error))
    }

    /// What a memory keeps of `compilation` (made with this cache) for the next
    /// (None for a cache in an output, or when the repository's layout could not be
    /// read). Unlike a file, a memory is kept when the compilation reported
    /// diagnostics: the nodes it records are the ones whose shapes said nothing,
    /// and only those are reused; the ones that said anything are marked loud.
    /// The caller must not keep it when the compilation was cancelled or ran out of
    /// its budget (its records are then incomplete).
    pub fn remember(&self, compilation: &crate::pipeline::Compilation) -> Option<Remembered> {
        if !self.in_memory() || !self.recorder.keeps_a_record() {
            return None;
        }
        let layout = self.layout.clone()?;
        let loud = self.loud.list();
        let nodes: NodeMap<Arc<NodeRecord>> = self
            .finished
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|(_, finished)| finished.record.kept.is_some())
            .map(|(node, finished)| {
                let mut record = finished.record.clone();
                let loud = loud.binary_search(node).is_ok();
                if record.loud != loud {
                    Arc::make_mut(&mut record).loud = loud;
                }
                (node.clone(), record)
            })
            .collect();
        // every diagnostic was noted as said by a node, a module file or the
        // layout, or beyond them: what no one of those said (or a trace) is said
        // at once by a compilation from nothing, so one that had any trusts the
        // record for plans only
        let silent =
            compilation.traces.is_empty() && !self.said_beyond_nodes.load(Ordering::Relaxed);
        Some(Remembered {
            silent,
            record: Record {
                identity: self.identity.clone(),
                layout,
                external: None,
                fleet: self.entries.fleet.clone(),
                accesses: self.accesses(),
                node_count: nodes.len(),
                unread: None,
                nodes,
                out: BTreeMap::new(),
                stamps: BTreeMap::new(),
                shapes: 0,
                layout_said: false,
                entries: Some(self.entries.nodes.clone()),
                written: None,
                loud_modules: self.loud_module_names.list().into_iter().collect(),
                settled_plans: NodeMap::default(),
            },
        })
    }

    /// What this build read, and, when it reused nodes or declarations or left the
    /// module files unloaded, what the last build read that this one did not ask
    /// again: what was not evaluated stays recorded from the build that did.
    fn accesses(&self) -> Vec<reads::Access> {
        let mut accesses = self.recorder.accesses();
        let skipped = self.reused() > 0
            || self.declared_from_cache() > 0
            || self.deferred_modules.load(Ordering::Relaxed);
        if skipped && let Some(previous) = &self.previous {
            // what was not evaluated may have asked too (an unread inventory entry
            // importing a module's file): an access charged to another part by the
            // last build is charged to both, which is every node
            let before: BTreeMap<(reads::Question, &Path), &reads::Owner> = previous
                .accesses
                .iter()
                .map(|access| ((access.question, access.path.as_path()), &access.owner))
                .collect();
            for access in &mut accesses {
                if before
                    .get(&(access.question, access.path.as_path()))
                    .is_some_and(|owner| **owner != access.owner)
                {
                    access.owner = reads::Owner::Shared;
                }
            }
            let asked: BTreeSet<(reads::Question, PathBuf)> = accesses
                .iter()
                .map(|access| (access.question, access.path.clone()))
                .collect();
            accesses.extend(
                previous
                    .accesses
                    .iter()
                    .filter(|access| !asked.contains(&(access.question, access.path.clone())))
                    .cloned(),
            );
            accesses.sort_by(|a, b| (a.question, &a.path).cmp(&(b.question, &b.path)));
        }
        accesses
    }
}

/// Removes the cache of the output `out` (`meshc build --no-cache`, or a build that
/// could not record everything).
pub fn remove(out: &Path) -> Result<(), Diagnostic> {
    match Beneath::open(out, false).and_then(|output| output.remove(CACHE_FILE)) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(crate::emit::output_error(&out.join(CACHE_FILE), error)),
    }
}

/// A recording loader over the repository's, for a worker of a cached build.
pub fn recording_loader(
    inner: Rc<dyn lang::Loader>,
    cache: &BuildCache,
) -> (Rc<dyn lang::Loader>, Rc<std::cell::RefCell<Doing>>) {
    let doing = Rc::new(std::cell::RefCell::new(Doing::Other));
    let loader = RecordingLoader::new(inner, cache.recorder.clone(), doing.clone());
    (Rc::new(loader), doing)
}

#[cfg(test)]
mod tests {
    use super::ModuleList;

    fn list(names: &[&str]) -> ModuleList {
        ModuleList(names.iter().map(|name| name.to_string()).collect())
    }

    /// Lists read back are the lists written; equal lists read on one thread share
    /// one allocation; no list, and a list of one empty name, stay apart.
    #[test]
    fn module_lists_read_back_as_written_and_shared() {
        let written = [
            list(&["m00", "m03"]),
            list(&[]),
            list(&[""]),
            list(&["m00", "m03"]),
            list(&["m00"]),
            list(&["m03", "m00"]),
        ];
        let bytes = postcard::to_allocvec(&written.to_vec()).expect("serialized");
        let read: Vec<ModuleList> =
            ModuleList::reading(|| postcard::from_bytes(&bytes).expect("read back"));
        assert_eq!(read, written);
        assert!(std::sync::Arc::ptr_eq(&read[0].0, &read[3].0));
        assert!(!std::sync::Arc::ptr_eq(&read[0].0, &read[5].0));
        assert_eq!(read[1].len(), 0);
        assert_eq!(&*read[2], [String::new()]);
        // read elsewhere than while reading a cache file: the same lists, unshared
        let alone: Vec<ModuleList> = postcard::from_bytes(&bytes).expect("read back");
        assert_eq!(alone, written);
        assert!(!std::sync::Arc::ptr_eq(&alone[0].0, &alone[3].0));
        // a name with a newline is no module's name
        let bad = postcard::to_allocvec(&vec!["a\nb".to_string()]).expect("serialized");
        assert!(postcard::from_bytes::<ModuleList>(&bad).is_err());
    }
}
