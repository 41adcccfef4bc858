//! The mesh language: a pure subset of the Nix expression language.
//!
//! Source bytes -> [`lexer`] -> [`parser`] (syntax tree with spans) -> [`compile`]
//! (names resolved) -> [`eval`] (lazy values) -> [`print`]. This crate does no I/O:
//! files arrive through a [`loader::Loader`] the host provides.
#![forbid(unsafe_code)]

pub mod builtins;
pub mod codes;
pub mod compile;
pub mod diagnostic;
pub mod eval;
pub mod lexer;
pub mod loader;
pub mod name;
pub mod navigate;
pub mod parse_cache;
pub mod parser;
pub mod print;
pub mod skim;
pub mod span;
pub mod symbols;
pub mod syntax;
#[cfg(test)]
mod test_files;
pub mod value;

pub use builtins::{TraceKind, Traced};
pub use diagnostic::{Diagnostic, Label, Severity, error_count};
pub use eval::{Limits, Machine};
pub use loader::{Entries, FileKind, Loader, MemoryLoader, too_large, within};
pub use name::Name;
pub use parse_cache::ParseCache;
pub use span::{FileId, SourceFile, Sources, Span};
pub use value::Value;
