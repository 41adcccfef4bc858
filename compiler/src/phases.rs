//! Where a build's time goes, for `meshc build --timings`: the stages mark the
//! moment each phase ends. Nothing is recorded unless the binary asked for it
//! ([`record`]), and what is recorded is times only: it never reaches a plan, the
//! cache or a diagnostic.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

struct Recording {
    started: Instant,
    marks: Mutex<Vec<(&'static str, Duration)>>,
}

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
        recording
            .marks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((phase, elapsed));
    }
}

/// The phases marked so far with when each ended, in the order they ended.
pub fn marks() -> Vec<(&'static str, Duration)> {
    let Some(recording) = RECORDING.get() else {
        return Vec::new();
    };
    let mut marks = recording
        .marks
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    marks.sort_by_key(|(_, elapsed)| *elapsed);
    marks
}
