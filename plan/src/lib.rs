//! The host vocabulary: the eight shape kinds, the plan format and its canonical digest.
//! Must not depend on any other crate of the workspace.
#![forbid(unsafe_code)]
