//! End-to-end tests live in `tests/tests/`; this library only holds shared helpers for them.
#![forbid(unsafe_code)]
