//! Where a build's time and memory go, for `meshc build --timings`: the stages
//! mark the moment each phase ends, with the process's resident memory then.
//! Nothing is recorded unless the binary asked for it ([`record`]), and what is
//! recorded is times and sizes only: it never reaches a plan, the cache or a
//! diagnostic.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

struct Recording {
    started: Instant,
    marks: Mutex<Vec<Mark>>,
}

/// A phase, when it ended, and the process's resident memory then (bytes; None
/// where `/proc` does not say).
pub type Mark = (&'static str, Duration, Option<u64>);

static RECORDING: OnceLock<Recording> = OnceLock::new();

/// Starts recording, counting from now (the first call counts).
pub fn record() {
    let _ = RECORDING.set(Recording {
        started: Instant::now(),
        marks: Mutex::new(Vec::new()),
    });
}

/// `phase` ended now (from any thread); nothing when not recording.
pub fn mark(phase: &'static str) {
    if let Some(recording) = RECORDING.get() {
        let elapsed = recording.started.elapsed();
        let resident = resident();
        recording
            .marks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((phase, elapsed, resident));
    }
}

/// The process's resident memory in bytes, from `/proc/self/statm` (its second
/// field counts pages).
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let page = u64::try_from(rustix::param::page_size()).ok()?;
    pages.checked_mul(page)
}

/// The phases marked so far with when each ended, in the order they ended.
pub fn marks() -> Vec<Mark> {
    let Some(recording) = RECORDING.get() else {
        return Vec::new();
    };
    let mut marks = recording
        .marks
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    marks.sort_by_key(|(_, elapsed, _)| *elapsed);
    marks
}
