//! The applier's error codes (E5xx) in one table: code, title and the book page each
//! one has. Codes are never reused; this file must not grow anything but the table.

/// One applier error code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    PlanUnreadable,
    PlanDigestMismatch,
    UnknownPlanFormat,
    InvalidShape,
    ShapeDigestMismatch,
    ConflictingShapes,
    WrongNode,
    UndeclaredParentDirectory,
    UndeclaredAccount,
    UndeclaredMountSource,
    UnsafeHostPath,
    UndecryptableSecret,
    UnreadableIdentity,
    MissingArtifact,
    ArtifactDigestMismatch,
    UnsafeArchive,
    HostToolFailed,
    FilesystemFailed,
    InvalidContainerUnit,
    RecordFailed,
    InTheWay,
    Locked,
    ConfinementUnavailable,
    UnsafeAccountFile,
}

/// Every code with its number and title, in number order.
pub const TABLE: &[(Code, &str, &str)] = &[
    (Code::PlanUnreadable, "E500", "the plan cannot be read"),
    (
        Code::PlanDigestMismatch,
        "E501",
        "the plan's digest does not match its content",
    ),
    (
        Code::UnknownPlanFormat,
        "E502",
        "unknown plan format version",
    ),
    (Code::InvalidShape, "E503", "a shape is invalid"),
    (
        Code::ShapeDigestMismatch,
        "E504",
        "a shape's digest does not match its content",
    ),
    (
        Code::ConflictingShapes,
        "E505",
        "shapes are duplicated, conflict or are out of order",
    ),
    (Code::WrongNode, "E506", "the plan is for another node"),
    (
        Code::UndeclaredParentDirectory,
        "E507",
        "undeclared need: a parent directory",
    ),
    (
        Code::UndeclaredAccount,
        "E508",
        "undeclared need: a user or group",
    ),
    (
        Code::UndeclaredMountSource,
        "E509",
        "undeclared need: a container mount source",
    ),
    (
        Code::UnsafeHostPath,
        "E510",
        "a path on the host goes through a symlink or a non-directory",
    ),
    (
        Code::UndecryptableSecret,
        "E511",
        "a secret cannot be decrypted",
    ),
    (
        Code::UnreadableIdentity,
        "E512",
        "the node's age identity cannot be read",
    ),
    (
        Code::MissingArtifact,
        "E513",
        "an archive's artifact is missing",
    ),
    (
        Code::ArtifactDigestMismatch,
        "E514",
        "an artifact's digest does not match the shape",
    ),
    (
        Code::UnsafeArchive,
        "E515",
        "an archive has an unsafe entry",
    ),
    (Code::HostToolFailed, "E516", "a host tool failed"),
    (
        Code::FilesystemFailed,
        "E517",
        "a filesystem operation failed",
    ),
    (
        Code::InvalidContainerUnit,
        "E518",
        "a container's Quadlet unit is invalid",
    ),
    (
        Code::RecordFailed,
        "E519",
        "the applied record cannot be read or written",
    ),
    (
        Code::InTheWay,
        "E520",
        "something the applier will not replace is in the way",
    ),
    (Code::Locked, "E521", "another mesh-apply is running"),
    (
        Code::ConfinementUnavailable,
        "E522",
        "paths cannot be confined beneath the root on this kernel",
    ),
    (
        Code::UnsafeAccountFile,
        "E523",
        "an account file is not a plain file reached without symlinks",
    ),
];

impl Code {
    /// `E5NN`.
    pub fn as_str(self) -> &'static str {
        TABLE
            .iter()
            .find(|(code, _, _)| *code == self)
            .map(|(_, number, _)| *number)
            .unwrap_or("E599")
    }

    pub fn title(self) -> &'static str {
        TABLE
            .iter()
            .find(|(code, _, _)| *code == self)
            .map(|(_, _, title)| *title)
            .unwrap_or("unknown")
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}
