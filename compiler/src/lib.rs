//! The mesh compiler as a library: a repository compiled into one digest-addressed
//! plan per node, the difference between two builds, and what an editor's analysis
//! reads. It knows the real filesystem but not the terminal, the command line, the
//! editor's protocol or the transport: those are the `meshc` crate's, which also
//! chooses the allocator. The public API is the items re-exported here; the stages
//! are private modules.
#![forbid(unsafe_code)]
// `lang::Diagnostic` is the error of every stage; it is made on the error path only,
// so its size costs nothing on the path that succeeds
#![allow(clippy::result_large_err)]

mod after;
mod artifacts;
mod build_output;
/// The build cache (`OUT/.mesh-cache`).
pub mod cache;
mod confined;
mod contribute;
mod diff;
mod emit;
mod explain;
mod fs;
mod inspect;
mod interactive;
mod inventory;
mod link;
mod lock;
mod module;
mod names;
mod node_view;
pub mod phases;
mod pipeline;
mod prelude;
mod private_key;
mod rabbit_hash;
mod repository;
mod reseal;
mod resolve;
mod retained;
mod scram;
mod sealed_value;
mod secrets;
mod settings;
mod shape;
mod shapes;
mod source;
mod staged;
mod stdlib;
mod traces;
mod types;

/// A node's `tags` and `deploy`, for `meshc deploy`.
pub mod deployment;
/// The evaluation limits as the command line gives them (`--max-steps`, `--max-memory`).
pub mod limits;

pub use artifacts::store_in_repository;
pub use build_output::{BuildOutput, Manifest, unreadable as build_unreadable};
pub use confined::Stamp;
pub use diff::{
    Changed, FleetDiff, Snapshot, diff, render_human as render_diff,
    render_json as render_diff_json,
};
pub use emit::{MANIFEST_FORMAT, write as write_build};
pub use explain::{error_page, error_page_codes, unknown_code_help};
pub use fs::{Overlay, RealFs, read_regular, read_regular_following};
pub use inspect::{
    ModuleDeclaration, ModuleListing, SettingDeclaration, list_modules, render_modules_markdown,
};
pub use interactive::{InteractiveScope, ScopeFailure, interactive_scope};
pub use link::SecretMode;
pub use lock::{Lock, is_upstream_reference, read as read_lock, write as write_lock};
pub use pipeline::{
    Compilation, Options, Session, compile, compile_remembering, compile_session, compile_with,
    inspect_node, must_compile_again,
};
pub use staged::{Discard, OutputLock, PlanSink, StagedBuild, Written};

/// `meshc show`'s view of one node (see [`inspect_node`]).
pub mod view {
    pub use crate::node_view::{
        CollectionView, ConsumeView, EffectiveSetting, ModuleOnNode, NeedView, NodeView,
        ProvideView, Requirement, SECRET, ShapeView,
    };
}
pub use prelude::display_path;
pub use private_key::{contains_private_key, redact_private_keys};
pub use repository::{
    ModuleLocation, Origin, REPOSITORY_FILE, Repository, built_from, check_built_from,
    check_output_for, check_root, discover, find_root, load as load_repository, record_repository,
};
pub use reseal::{Resealed, reseal};
pub use scram::verifier_with_salt;

/// What an editor reads beyond a compilation: one module file loaded alone, for the
/// hover and completion index (`meshc lsp`).
pub mod analysis {
    pub use crate::module::{Module, OptionDecl, load as load_module};
    pub use crate::prelude::prelude;
    pub use crate::stdlib::{MeshLoader, VIRTUAL_ROOT};
    pub use crate::types::{CheckContext, Type};
}
