//! What linking makes of the sealed store's answers: the sealed text, a placeholder
//! where nothing may be made and nothing missing is reported (`meshc check`), or the
//! diagnostic at the declaration. Must not make or read secrets itself: the store does.

use lang::{Diagnostic, Span, codes};

use super::SecretMode;
use crate::secrets::StoreError;

/// What the store gives when it may not make anything and has nothing (`check`).
pub(crate) const NOT_YET_MADE: &str = "-----BEGIN AGE ENCRYPTED FILE-----\nnot yet made: run `meshc build`\n-----END AGE ENCRYPTED FILE-----\n";

/// The store's answer for the declaration at `span`: `placeholder` stands in for a
/// secret not yet made when `mode` reports nothing missing; any other error is the
/// diagnostic that names `what`.
pub(super) fn sealed<T>(
    result: Result<T, StoreError>,
    mode: SecretMode,
    placeholder: impl FnOnce() -> T,
    what: impl FnOnce() -> String,
    span: Span,
) -> Result<T, Diagnostic> {
    match result {
        Ok(sealed) => Ok(sealed),
        Err(StoreError::NotMade { .. }) if mode == SecretMode::Inspect => Ok(placeholder()),
        Err(error) => Err(store_diagnostic(error, what(), span)),
    }
}

/// `error` of writing what a compilation made to the store, once every node
/// compiled (see [`crate::secrets::Store::write_made`]): it has no one place.
pub(crate) fn store_write_diagnostic(error: StoreError) -> Diagnostic {
    let code = match error {
        StoreError::Link { .. } => codes::SECRET_STORE_LINK,
        _ => codes::SECRET_STORE,
    };
    Diagnostic::error(code, format!("cannot write the secrets this build made: {error}"))
        .with_help("`secrets/` and everything in it must be real, writable directories and files of the repository; no plan was written, and building again makes the secrets again")
}

fn store_diagnostic(error: StoreError, what: String, span: Span) -> Diagnostic {
    match error {
        StoreError::NotMade { reason } => {
            Diagnostic::error(codes::SECRET_NOT_MADE, format!("{what} {reason}"))
                .with_primary(span, "declared here")
                .with_help(
                    "run `meshc build` without `--locked` to make it, then commit `secrets/`",
                )
        }
        StoreError::Link { .. } => {
            Diagnostic::error(codes::SECRET_STORE_LINK, format!("{what}: {error}"))
                .with_primary(span, "declared here")
                .with_help(
                    "`secrets/` and everything in it must be real directories and files of the repository: replace the symbolic link with what it points at, or remove it and build again",
                )
        }
        other => Diagnostic::error(codes::SECRET_STORE, format!("{what}: {other}"))
            .with_primary(span, "declared here")
            .with_help(
                "check the node's `key` in mesh.nix and that `secrets/` is readable and writable",
            ),
    }
}
