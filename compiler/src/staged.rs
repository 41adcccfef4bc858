//! A build written node by node (`meshc build`): each node's plan is serialized and
//! staged on disk the moment the node is compiled, then dropped, so no plan is kept
//! to the end and the build's memory does not grow with the fleet. Staged files are
//! invisible until [`StagedBuild::commit`]: a new output is staged in
//! `OUT/.mesh-staging` and renamed to `OUT/nodes` in one step; an existing
//! `OUT/nodes` gets hidden temporary files renamed over the old plans. A failed
//! build calls [`StagedBuild::abort`], which removes every staged file: as before,
//! a build with an error writes nothing. Everything goes through `crate::confined`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lang::Diagnostic;
use plan::Plan;

use crate::confined::{Beneath, Readers};
use crate::emit::{self, output_error};
use crate::sealed_value::NodeValues;

/// Where a compilation hands each node's plan when it is made.
pub trait PlanSink: Send + Sync + std::fmt::Debug {
    /// Takes `node`'s plan. `last` is the digest of the plan the output held for
    /// the node when the last build ended, as the build cache recorded it (None:
    /// not known): a hint only, never trusted for what is written.
    fn accept(&self, node: &str, plan: Plan, last: Option<&str>) -> Result<(), Diagnostic>;
    /// Keeps the plans the output already holds (the build cache checked their
    /// bytes), with their digests and shape counts, as if they had been accepted
    /// again: one worker's, at once, in name order.
    fn keep_all(&self, kept: Vec<KeptPlan>) -> Result<(), Diagnostic>;
    /// Called once before any plan is accepted or kept, while the link is made
    /// (when only one thread works): a sink may prepare its commit then.
    fn before_plans(&self) {}
}

/// A plan the output already holds, kept ([`PlanSink::keep_all`]).
#[derive(Debug)]
pub struct KeptPlan {
    pub node: String,
    pub digest: String,
    pub shapes: usize,
}

/// A sink that lets each plan go the moment it is made (`meshc check`, which only
/// reports): the compilation's memory then grows with the largest node, not with
/// the fleet, as a build's does.
#[derive(Debug, Default)]
pub struct Discard;

impl PlanSink for Discard {
    fn accept(&self, _node: &str, _plan: Plan, _last: Option<&str>) -> Result<(), Diagnostic> {
        Ok(())
    }

    fn keep_all(&self, _kept: Vec<KeptPlan>) -> Result<(), Diagnostic> {
        Ok(())
    }
}

const STAGING: &str = ".mesh-staging";
/// The manifest's name in the output.
pub const MANIFEST: &str = "manifest.json";

#[derive(Debug)]
enum Place {
    /// `OUT/nodes` does not exist: plans go to `OUT/.mesh-staging` under their names.
    Fresh(Beneath),
    /// `OUT/nodes` exists: plans go beside the old ones under temporary names.
    Existing(Beneath),
}

#[derive(Debug)]
struct Staged {
    digest: String,
    shapes: usize,
    /// The staged file's name, None when `OUT/nodes` already holds these bytes.
    temporary: Option<String>,
}

/// What a committed build wrote.
pub struct Written {
    pub nodes: usize,
    pub shapes: usize,
    /// What the manifest it wrote is, as the build cache names an output file
    /// (`cache::output_digest`, here its sha256): recorded without reading the
    /// file back.
    pub manifest: String,
    /// The names in `OUT/nodes` once the commit put its plans there and removed
    /// the stale ones, as it listed them: the build cache's walk of the output
    /// takes the directory's names from here instead of listing it again.
    pub nodes_listed: Vec<std::ffi::OsString>,
    /// How many plans were looked for in `OUT/nodes` to be compared with the
    /// bytes made (an unchanged plan is not written again; a missing file counts).
    pub compared: usize,
}

/// The output, held by one build from before its cache is read until it ends:
/// two builds into one output run one after the other. Before, two staged a new
/// output in the same `.mesh-staging`, and the first to fail or finish took the
/// other's plans with it; and a build that read the cache's record before waiting
/// could reuse plans the other build had since replaced. The lock is `flock` on
/// `OUT`, given back when the process ends, however it ends.
#[derive(Debug)]
pub struct OutputLock {
    out: PathBuf,
    output: Beneath,
    /// Whether `OUT` was made by this build (removed by [`OutputLock::give_up`]
    /// when empty).
    made_out: bool,
}

impl OutputLock {
    /// Opens the output `out` (made if missing) and waits for the builds into it
    /// before this one. If the build that held it removed the output it had made,
    /// it is made again.
    pub fn take(out: &Path) -> Result<OutputLock, Diagnostic> {
        loop {
            let made_out = !out.exists();
            let output = Beneath::open(out, true).map_err(|e| output_error(out, e))?;
            // whoever may change the names in `OUT` may swap its plans or manifest
            // between the build and `meshc publish` or `deploy`: root on the nodes
            if let Some(why) = output
                .others_may_change()
                .map_err(|e| output_error(out, e))?
            {
                if made_out {
                    let _ = std::fs::remove_dir(out);
                }
                return Err(Diagnostic::error(
                    lang::codes::OUTPUT_LINK,
                    format!(
                        "`{}` is not the builder's: {why}; whoever may change its names may replace the plans before they are published",
                        out.display()
                    ),
                )
                .with_help("build into a directory only you (and your group) may write in (`chmod o-w`, or one you made), or choose another output with `--out DIR`"));
            }
            if output.lock_exclusive().map_err(|e| output_error(out, e))? {
                return Ok(OutputLock {
                    out: out.to_path_buf(),
                    output,
                    made_out,
                });
            }
        }
    }

    /// The build failed: an output it made is removed again if nothing is in it
    /// (only then: the base is the user's choice, reached by its path).
    pub fn give_up(&self) {
        if self.made_out {
            let _ = std::fs::remove_dir(&self.out);
        }
    }
}

#[derive(Debug)]
pub struct StagedBuild {
    out: PathBuf,
    output: Beneath,
    place: Place,
    staged: Mutex<BTreeMap<String, Staged>>,
    /// The names in `OUT/nodes` before any plan of this build was staged there
    /// ([`PlanSink::before_plans`]), with the directory's identity: the commit
    /// takes them instead of listing the directory again (10,000 names: 5 ms).
    listed: Mutex<Option<Listed>>,
    /// See [`Written::compared`].
    compared: std::sync::atomic::AtomicUsize,
}

#[derive(Debug)]
struct Listed {
    directory: (u64, u64),
    names: Vec<std::ffi::OsString>,
}

impl StagedBuild {
    /// Prepares the staging place in the output `lock` holds.
    pub fn open(lock: &OutputLock) -> Result<StagedBuild, Diagnostic> {
        let out = lock.out.as_path();
        let output = lock.output.try_clone().map_err(|e| output_error(out, e))?;
        let nodes_path = out.join("nodes");
        let place = match emit::open_nodes(&output, out, false)? {
            Some(nodes) => {
                emit::check_owner(&nodes, &nodes_path)?;
                Place::Existing(nodes)
            }
            None => {
                // what an interrupted build left
                remove_staging(&output);
                let staging = output
                    .directory(Path::new(STAGING), true)
                    .map_err(|e| output_error(&out.join(STAGING), e))?
                    .ok_or_else(|| {
                        output_error(&out.join(STAGING), std::io::ErrorKind::NotFound.into())
                    })?;
                Place::Fresh(staging)
            }
        };
        Ok(StagedBuild {
            out: out.to_path_buf(),
            output,
            place,
            staged: Mutex::new(BTreeMap::new()),
            listed: Mutex::new(None),
            compared: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Puts every staged plan in place, removes the plans of nodes that are gone and
    /// writes the manifest.
    pub fn commit(
        &self,
        keys: &BTreeMap<String, String>,
        secrets: &NodeValues,
    ) -> Result<Written, Diagnostic> {
        let staged = std::mem::take(&mut *self.lock());
        let nodes_path = self.out.join("nodes");
        // the manifest is written before any plan is put in place: a write that
        // fails (a full disk, the file size limit) fails the build with the output
        // as it was, and only renames are left to make
        let manifest = emit::manifest_of(&staged, |entry| &entry.digest, keys, secrets);
        let manifest_staged = match emit::stage_if_changed(&self.output, MANIFEST, &manifest) {
            Ok(temporary) => temporary,
            Err(diagnostic) => {
                // nothing is in place yet: the caller's `abort` removes what was staged
                *self.lock() = staged;
                return Err(diagnostic);
            }
        };
        let drop_manifest = || {
            if let Some(temporary) = &manifest_staged {
                let _ = self.output.remove(temporary);
            }
        };
        let nodes = match &self.place {
            Place::Fresh(_) => {
                self.output.rename(STAGING, "nodes").map_err(|e| {
                    drop_manifest();
                    output_error(&nodes_path, e)
                })?;
                emit::open_nodes(&self.output, &self.out, false)?
                    .ok_or_else(|| output_error(&nodes_path, std::io::ErrorKind::NotFound.into()))?
            }
            Place::Existing(nodes) => {
                let temporaries: Vec<(String, &String)> = staged
                    .iter()
                    .filter_map(|(node, entry)| {
                        entry
                            .temporary
                            .as_ref()
                            .map(|t| (format!("{node}.json"), t))
                    })
                    .collect();
                // what no plan can be renamed over (a directory) fails the build
                // before any plan is put in place; a rename that fails all the same
                // leaves no temporary behind
                let drop_from = |from: usize| {
                    for (_, temporary) in &temporaries[from..] {
                        let _ = nodes.remove(temporary);
                    }
                    drop_manifest();
                };
                for (name, _) in &temporaries {
                    let blocked = match nodes.is_directory(name) {
                        Ok(true) => Err(std::io::Error::other(
                            "a directory is where the plan goes: remove it and build again",
                        )),
                        Ok(false) => Ok(()),
                        Err(error) => Err(error),
                    };
                    if let Err(error) = blocked {
                        drop_from(0);
                        return Err(output_error(&nodes_path.join(name), error));
                    }
                }
                for (index, (name, temporary)) in temporaries.iter().enumerate() {
                    if let Err(error) = nodes.rename(temporary, name) {
                        drop_from(index);
                        return Err(output_error(&nodes_path.join(name), error));
                    }
                }
                emit::open_nodes(&self.output, &self.out, false)?
                    .ok_or_else(|| output_error(&nodes_path, std::io::ErrorKind::NotFound.into()))?
            }
        };
        // from here on the plans are in place: a failure leaves the old manifest,
        // never the staged one beside it
        let names = match self.listed_before(&nodes, &staged) {
            Some(names) => names,
            None => nodes.names().map_err(|e| {
                drop_manifest();
                output_error(&nodes_path, e)
            })?,
        };
        // looked up by hash: once for each of the directory's names
        let planned: std::collections::HashSet<&str, rustc_hash::FxBuildHasher> =
            staged.keys().map(String::as_str).collect();
        let mut nodes_listed = Vec::with_capacity(names.len());
        for name in names {
            // a name that is not UTF-8 is no node's plan: left where it is
            if let Some(file_name) = name.to_str()
                && let Some(node) = file_name.strip_suffix(".json")
                && !planned.contains(node)
            {
                nodes.remove(file_name).map_err(|e| {
                    drop_manifest();
                    output_error(&nodes_path.join(file_name), e)
                })?;
            } else if let Some(file_name) = name.to_str()
                && Beneath::is_temporary_name(file_name)
            {
                // a temporary of a build that was killed before it ended (this
                // build's are all in place by now)
                let _ = nodes.remove(file_name);
            } else {
                nodes_listed.push(name);
            }
        }
        if let Some(temporary) = &manifest_staged {
            self.output.rename(temporary, MANIFEST).map_err(|error| {
                drop_manifest();
                output_error(&self.out.join(MANIFEST), error)
            })?;
        }
        Ok(Written {
            nodes: staged.len(),
            shapes: staged.values().map(|entry| entry.shapes).sum(),
            manifest: crate::cache::output_digest(&manifest),
            nodes_listed,
            compared: self.compared.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The names `nodes` holds now, from the listing made before any plan was
    /// staged: what was there, and the plans the commit renamed in (a node new to
    /// the output was not there). None when there is no such listing, or it was of
    /// another directory than `nodes`. A file another program put in `OUT/nodes`
    /// meanwhile is not in it: the next build's walk finds it, as it finds a file
    /// changed after its stamp was taken.
    fn listed_before(
        &self,
        nodes: &Beneath,
        staged: &BTreeMap<String, Staged>,
    ) -> Option<Vec<std::ffi::OsString>> {
        let listed = self
            .listed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()?;
        if nodes.identity().ok()? != listed.directory {
            return None;
        }
        let mut renamed: std::collections::BTreeSet<String> = staged
            .iter()
            .filter(|(_, entry)| entry.temporary.is_some())
            .map(|(node, _)| format!("{node}.json"))
            .collect();
        let mut names = listed.names;
        if !renamed.is_empty() {
            for name in &names {
                if let Some(name) = name.to_str() {
                    renamed.remove(name);
                }
            }
        }
        names.extend(renamed.into_iter().map(std::ffi::OsString::from));
        Some(names)
    }

    /// Removes every staged file (the build failed, or stages again): the output
    /// is as it was.
    pub fn abort(&self) {
        let staged = std::mem::take(&mut *self.lock());
        match &self.place {
            Place::Fresh(_) => remove_staging(&self.output),
            Place::Existing(nodes) => {
                for temporary in staged.values().filter_map(|entry| entry.temporary.as_ref()) {
                    let _ = nodes.remove(temporary);
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Staged>> {
        self.staged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `nodes` holds `bytes` as `name` (read back and compared; counted in
    /// [`Written::compared`]).
    fn holds(&self, nodes: &Beneath, name: &str, bytes: &[u8]) -> bool {
        self.compared
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        nodes
            .read(Path::new(name))
            .is_ok_and(|existing| existing.as_deref() == Some(bytes))
    }
}

impl PlanSink for StagedBuild {
    fn before_plans(&self) {
        let Place::Existing(nodes) = &self.place else {
            return;
        };
        let (Ok(directory), Ok(names)) = (nodes.identity(), nodes.names()) else {
            return;
        };
        *self
            .listed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Listed { directory, names });
    }

    fn accept(&self, node: &str, plan: Plan, last: Option<&str>) -> Result<(), Diagnostic> {
        let name = format!("{node}.json");
        let temporary = match &self.place {
            Place::Fresh(staging) => {
                // the file's parts in one vectored write: the plan is not copied
                // into one buffer first
                staging
                    .write_parts(&name, &plan.file_parts(), false, Readers::Owner)
                    .map_err(|e| output_error(&staging.path().join(&name), e))?;
                None
            }
            Place::Existing(nodes) => {
                let bytes = plan.to_json_bytes();
                // a plan the last build wrote with another digest is not read back
                // to be compared: the file holds other bytes (or, if someone wrote
                // these very bytes since, writing them again changes nothing but
                // the file's inode and times)
                let other_before = last.is_some_and(|last| last != plan.digest());
                if !other_before && self.holds(nodes, &name, &bytes) {
                    None
                } else {
                    Some(
                        nodes
                            .stage(&name, &bytes)
                            .map_err(|e| output_error(&nodes.path().join(&name), e))?,
                    )
                }
            }
        };
        let entry = Staged {
            digest: plan.digest().to_string(),
            shapes: plan.shapes().len(),
            temporary,
        };
        // the plan is dropped here, with its node
        self.lock().insert(node.to_string(), entry);
        Ok(())
    }

    fn keep_all(&self, kept: Vec<KeptPlan>) -> Result<(), Diagnostic> {
        if let (Place::Fresh(staging), Some(first)) = (&self.place, kept.first()) {
            // no `OUT/nodes`, so no plan to keep: the cache cannot have read one
            let path = staging.path().join(format!("{}.json", first.node));
            return Err(output_error(&path, std::io::ErrorKind::NotFound.into()));
        }
        // one lock, and a map built at once from a worker's sorted run
        let mut kept: BTreeMap<String, Staged> = kept
            .into_iter()
            .map(|plan| {
                let entry = Staged {
                    digest: plan.digest,
                    shapes: plan.shapes,
                    temporary: None,
                };
                (plan.node, entry)
            })
            .collect();
        self.lock().append(&mut kept);
        Ok(())
    }
}

/// Removes `OUT/.mesh-staging` and the files in it, if it exists.
fn remove_staging(output: &Beneath) {
    if let Ok(Some(staging)) = output.directory(Path::new(STAGING), false) {
        for name in staging.names().unwrap_or_default() {
            let _ = staging.remove(&name.to_string_lossy());
        }
        let _ = output.remove_directory(STAGING);
    }
}
