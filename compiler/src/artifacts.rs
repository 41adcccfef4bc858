//! Artifacts: a module's directory built into a reproducible archive, named by the
//! sha256 of its bytes. The archive format is the `archive` crate's, because the
//! builder (`mesh-build`) makes the same archives and must not depend on the compiler;
//! this module is the compiler's name for it. Must not grow a second archive format.

pub(crate) use archive::{build, file_name};
