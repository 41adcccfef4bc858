//! How mesh's binaries report a problem, shared by `mesh-apply` and `mesh-provision`
//! (and `plan`, for the escaping): `codes!`, the macro that declares a binary's
//! registry of error codes; [`Problem`], a coded problem with its message and help
//! line, and [`render`], the text every coded problem is printed as; [`Escape`], text
//! made safe to print. Only the mechanism: each binary keeps its own codes (E5xx the
//! applier's, E6xx the provisioner's) and its own JSON. Must depend on no crate at
//! all, ours or anyone's, and know nothing of plans, shapes, grants or the terminal.
#![forbid(unsafe_code)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::let_underscore_must_use
)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod codes;
pub mod escape;
mod problem;

pub use codes::Code;
pub use escape::{
    Escape, escaped, is_bidi_control, is_invisible, is_unsafe_to_print, json_escaped,
};
pub use problem::{Coded, Problem, Severity, render};

/// A registry for the tests of the mechanism.
#[cfg(test)]
mod test_codes {
    crate::codes! {
        /// A code of the tests.
        Unreadable = "E700", "the input cannot be read";
        Malformed = "E701", "the input is not what the tool reads";
    }
}
