//! Reclaiming the frames of finished work. Values are reference counted, and a
//! recursive scope (`let`, `rec { }`, a function's formals) makes a cycle: its frame
//! holds thunks and closures that hold the frame, so counting never frees it, nor
//! anything it holds. A host that evaluates many independent pieces of work with
//! one machine (the compiler: node after node) switches recording on with
//! [`Machine::reclaim_start`]; from then on the machine keeps a weak reference to
//! every such frame it makes, and [`Machine::reclaim`] empties the slots of the
//! recorded frames that nothing reachable from the roots reaches, which breaks their
//! cycles and frees them.
//!
//! Invariant: a frame is emptied only when no value reachable from the roots (the
//! host's, plus the machine's own: imported files and the global scope) leads to
//! it, and only between evaluations (nothing is being forced). So a value the host
//! keeps and passes as a root never sees an emptied frame. Values held only inside
//! host functions (`PrimFunction::Host`) are not traced: a host must not capture a
//! value made after `reclaim_start` in one.

use std::collections::HashSet;
use std::rc::{Rc, Weak};

use super::Machine;
use crate::value::{Env, EnvFrame, Over, ThunkState, Value};

/// How many frames are made between two passes unless the host says otherwise (and
/// at least as many as survived the last pass), so that tracing the roots stays a
/// small part of the work.
pub const RECLAIM_BATCH: usize = 50_000;

/// The recorded frames of a machine.
#[derive(Default)]
pub(crate) struct Frames {
    enabled: bool,
    batch: usize,
    recorded: Vec<Weak<EnvFrame>>,
    /// Recorded frames that survived the last pass.
    survivors: usize,
}

impl Frames {
    /// Records `frame` if recording is on (one call at every recursive frame made).
    #[inline]
    pub(crate) fn record(&mut self, frame: &Env) {
        if self.enabled {
            self.recorded.push(Rc::downgrade(frame));
        }
    }
}

impl Machine {
    /// Frames of recursive scopes made from now on are recorded and may be emptied by
    /// [`Machine::reclaim`]; frames made before are never emptied. A pass is due
    /// when `batch` frames were made since the last one ([`RECLAIM_BATCH`] normally;
    /// tests use 1 for a pass between nearly all pieces of work).
    pub fn reclaim_start(&mut self, batch: usize) {
        self.reclaim.enabled = true;
        self.reclaim.batch = batch.max(1);
    }

    /// Whether enough frames were made since the last pass for another to pay.
    pub fn reclaim_due(&self) -> bool {
        let frames = &self.reclaim;
        let made = frames.recorded.len().saturating_sub(frames.survivors);
        frames.enabled && made >= frames.batch.max(frames.survivors)
    }

    /// Empties every recorded frame that neither `roots` nor the machine's own roots
    /// reach (see the module's invariant) and returns how many it emptied.
    pub fn reclaim(&mut self, roots: &[Value]) -> usize {
        let mut own: Vec<Value> = self.file_cache.values().cloned().collect();
        own.extend(self.globals.names.values().cloned());
        let reached = reachable_frames(roots.iter().chain(own.iter()));
        let mut emptied = Vec::new();
        let mut kept = Vec::new();
        for weak in std::mem::take(&mut self.reclaim.recorded) {
            let Some(frame) = weak.upgrade() else {
                continue;
            };
            if reached.contains(&(Rc::as_ptr(&frame) as usize)) {
                kept.push(weak);
            } else {
                emptied.push(frame);
            }
        }
        self.reclaim.survivors = kept.len();
        self.reclaim.recorded = kept;
        let count = emptied.len();
        // taken out first, dropped after: dropping a value may free other frames of
        // the batch, which must not be borrowed then
        let values: Vec<Vec<Value>> = emptied.iter().map(|frame| frame.slots.take()).collect();
        drop(emptied);
        drop(values);
        count
    }
}

/// The addresses of every frame reachable from `roots`.
fn reachable_frames<'a>(roots: impl Iterator<Item = &'a Value>) -> HashSet<usize> {
    let mut seen: HashSet<usize> = HashSet::new();
    let mut frames_seen: HashSet<usize> = HashSet::new();
    let mut values: Vec<Value> = roots.cloned().collect();
    let mut frames: Vec<Env> = Vec::new();
    loop {
        while let Some(value) = values.pop() {
            match &value {
                Value::Thunk(thunk) => {
                    if !seen.insert(Rc::as_ptr(thunk) as *const u8 as usize) {
                        continue;
                    }
                    let Ok(state) = thunk.state.try_borrow() else {
                        continue;
                    };
                    match &*state {
                        ThunkState::Suspended { env, .. } => frames.push(env.clone()),
                        ThunkState::Generated { call, .. } => {
                            values.push(call.function.clone());
                            match &call.over {
                                Over::Indices => {}
                                Over::List(list) => values.push(Value::List(list.clone())),
                                Over::Attrs(attrs) => values.push(Value::Attrs(attrs.clone())),
                                Over::Groups(groups) => {
                                    values.extend(groups.values.iter().cloned())
                                }
                            }
                        }
                        ThunkState::Apply(application) => {
                            values.push(application.function.clone());
                            values.extend(application.arguments.iter().cloned());
                        }
                        ThunkState::Done(done) => values.push(done.clone()),
                        ThunkState::Blackhole => {}
                    }
                }
                Value::Attrs(attrs) => {
                    if seen.insert(attrs.address()) {
                        values.extend(attrs.iter().map(|attr| attr.value.clone()));
                    }
                }
                Value::List(list) => {
                    if !list.is_empty() && seen.insert(list.address()) {
                        values.extend(list.iter().cloned());
                    }
                }
                Value::Lambda(closure) => {
                    if seen.insert(Rc::as_ptr(closure) as *const u8 as usize) {
                        frames.push(closure.env.clone());
                    }
                }
                Value::PrimOpApp(application) => {
                    if seen.insert(Rc::as_ptr(application) as *const u8 as usize) {
                        values.extend(application.arguments.iter().cloned());
                    }
                }
                Value::Null
                | Value::Bool(_)
                | Value::Int(_)
                | Value::Float(_)
                | Value::String(_)
                | Value::Path(_)
                | Value::PrimOp(_)
                | Value::Opaque(_) => {}
            }
        }
        let Some(frame) = frames.pop() else {
            break;
        };
        if frames_seen.insert(Rc::as_ptr(&frame) as usize) {
            if let Some(parent) = &frame.parent {
                frames.push(parent.clone());
            }
            values.extend(frame.slots.values());
        }
    }
    frames_seen
}
