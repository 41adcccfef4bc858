//! Artifacts: a module's directory built into a reproducible archive, named by the
//! sha256 of its bytes. The archive code lives in `transport::artifacts`, because the
//! builder (`mesh-build`) makes the same archives and must not depend on the compiler;
//! this module is the compiler's name for it. Must not grow a second archive format.

pub use transport::artifacts::{
    BuildError, Built, EscapingLink, TreeEntry, TreeEntryKind, build, build_checked, file_name,
    link_leaving_tree, store,
};
