//! Why a plan was refused when it was read or checked. Plain values with lowercase
//! messages; codes and rendering belong to whoever reports them (the applier, meshc).

use std::fmt;

/// A shape named in an error: its kind and identity (`file` `/etc/motd`), or its
/// position when the identity itself could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeName {
    pub kind: String,
    pub identity: String,
}

impl fmt::Display for ShapeName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} `{}`",
            crate::display::escaped(&self.kind),
            crate::display::escaped(&self.identity)
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// Not JSON at all, or cut short.
    NotJson { reason: String },
    /// JSON, but not shaped like a plan (missing key, wrong type, unknown top-level key).
    Malformed { reason: String },
    /// `format` is not `mesh-plan/1`.
    UnknownFormat { found: String },
    /// The plan's `digest` does not match its content.
    DigestMismatch { recorded: String, computed: String },
    /// A shape whose `kind` is not one of the eight.
    UnknownKind { position: usize, kind: String },
    /// A shape with a field its kind does not have.
    UnknownField { shape: ShapeName, field: String },
    /// A shape without a field its kind requires.
    MissingField { shape: ShapeName, field: String },
    /// A field whose value is not allowed (wrong type, bad path, bad mode, ...).
    InvalidField {
        shape: ShapeName,
        field: String,
        reason: String,
    },
    /// A shape whose `digest` does not match its content: it was edited after emission.
    ShapeDigestMismatch {
        shape: ShapeName,
        recorded: String,
        computed: String,
    },
    /// Two shapes of one kind with the same identity.
    Duplicate { shape: ShapeName },
    /// Two shapes of different kinds that would own the same path or unit.
    Conflict {
        first: ShapeName,
        second: ShapeName,
        reason: String,
    },
    /// Shapes not in canonical order (kind, then identity).
    NotCanonicalOrder { shape: ShapeName },
}

impl PlanError {
    /// The shape the error is about, when there is one.
    pub fn shape(&self) -> Option<&ShapeName> {
        match self {
            PlanError::UnknownField { shape, .. }
            | PlanError::MissingField { shape, .. }
            | PlanError::InvalidField { shape, .. }
            | PlanError::ShapeDigestMismatch { shape, .. }
            | PlanError::Duplicate { shape }
            | PlanError::NotCanonicalOrder { shape } => Some(shape),
            PlanError::Conflict { second, .. } => Some(second),
            _ => None,
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::NotJson { reason } => {
                write!(formatter, "the plan is not valid JSON: {reason}")
            }
            PlanError::Malformed { reason } => write!(
                formatter,
                "the plan is malformed: {}",
                crate::display::escaped(reason)
            ),
            PlanError::UnknownFormat { found } => {
                write!(
                    formatter,
                    "unknown plan format `{}`, expected `{}`",
                    crate::display::escaped(found),
                    crate::FORMAT
                )
            }
            PlanError::DigestMismatch { recorded, computed } => write!(
                formatter,
                "the plan's digest `{recorded}` does not match its content (`{computed}`)"
            ),
            PlanError::UnknownKind { position, kind } => {
                write!(
                    formatter,
                    "shape {position} has unknown kind `{}`",
                    crate::display::escaped(kind)
                )
            }
            PlanError::UnknownField { shape, field } => {
                write!(
                    formatter,
                    "{shape} has unknown field `{}`",
                    crate::display::escaped(field)
                )
            }
            PlanError::MissingField { shape, field } => {
                write!(formatter, "{shape} has no field `{field}`")
            }
            PlanError::InvalidField {
                shape,
                field,
                reason,
            } => {
                write!(
                    formatter,
                    "{shape} has an invalid `{field}`: {}",
                    crate::display::escaped(reason)
                )
            }
            PlanError::ShapeDigestMismatch {
                shape,
                recorded,
                computed,
            } => write!(
                formatter,
                "{shape}: its digest `{recorded}` does not match its content (`{computed}`)"
            ),
            PlanError::Duplicate { shape } => write!(formatter, "{shape} is declared twice"),
            PlanError::Conflict {
                first,
                second,
                reason,
            } => {
                write!(formatter, "{second} conflicts with {first}: {reason}")
            }
            PlanError::NotCanonicalOrder { shape } => {
                write!(
                    formatter,
                    "{shape} is out of canonical order (kind, then identity)"
                )
            }
        }
    }
}

impl std::error::Error for PlanError {}
