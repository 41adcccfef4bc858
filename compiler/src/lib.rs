//! meshc: compiles a mesh repository into one digest-addressed plan per node.
//! The only crate that knows the terminal, the real filesystem and the editor.
#![forbid(unsafe_code)]

pub mod evaluate;
pub mod fs;
pub mod render;
