//! The applier's error codes (E5xx) in one registry, declared with `problems`'s
//! `codes!` as the provisioner declares its own: each code's number and title come
//! from one exhaustive `match` each (tvix's `ErrorKind::code`), so a code cannot exist
//! without both, and each has a book page (`tests/architecture.rs` reads `TABLE`).
//! Codes are never reused; this file must not grow anything but the registry.

problems::codes! {
    /// One applier error code.
    PlanUnreadable = "E500", "the plan cannot be read";
    PlanDigestMismatch = "E501", "the plan's digest does not match its content";
    UnknownPlanFormat = "E502", "unknown plan format version";
    InvalidShape = "E503", "a shape is invalid";
    ShapeDigestMismatch = "E504", "a shape's digest does not match its content";
    ConflictingShapes = "E505", "shapes are duplicated, conflict or are out of order";
    WrongNode = "E506", "the plan is for another node";
    UndeclaredParentDirectory = "E507", "undeclared need: a parent directory";
    UndeclaredAccount = "E508", "undeclared need: a user or group";
    UndeclaredMountSource = "E509", "undeclared need: a container mount source";
    UnsafeHostPath = "E510", "a path on the host goes through a symlink or a non-directory";
    UndecryptableSecret = "E511", "a secret cannot be decrypted";
    UnreadableIdentity = "E512", "the node's age identity cannot be read";
    MissingArtifact = "E513", "an archive's artifact is missing";
    ArtifactDigestMismatch = "E514", "an artifact's digest does not match the shape";
    UnsafeArchive = "E515", "an archive has an unsafe entry";
    HostToolFailed = "E516", "a host tool failed";
    FilesystemFailed = "E517", "a filesystem operation failed";
    InvalidContainerUnit = "E518", "a container's Quadlet unit is invalid";
    RecordFailed = "E519", "the applied record cannot be read or written";
    InTheWay = "E520", "something the applier will not replace is in the way";
    Locked = "E521", "another mesh-apply is running";
    ConfinementUnavailable = "E522", "paths cannot be confined beneath the root on this kernel";
    UnsafeAccountFile = "E523", "an account file is not a plain file reached without symlinks";
    UnsafeOwnership = "E524", "a path in a user's directory is someone else's";
    GenerationFailed = "E535", "the kept generations cannot be read or written";
    NoSuchGeneration = "E536", "there is no such generation";
    NoBaseSystem = "E537", "the root has no base system";
    NoQuadlet = "E538", "no Quadlet (Podman 4.4 or later) where mesh-apply runs";
    UnsafeArtifact = "E539", "an artifact is not a regular file reached without symlinks";
    UseraddCreatesFiles = "E540", "the root's useradd defaults would create files outside the plan";
    UnprotectedIdentity = "E541", "the node's age identity is not a private file of the user running mesh-apply";
    ListenerCannotStart = "E542", "the listener cannot start";
    BrokerUnreachable = "E543", "the broker cannot be reached";
    QueueUnusable = "E544", "the node's queue cannot be used";
    ReceivedPlanUnanswered = "E545", "a received plan was given up without an answer";
    PublishedBeforeLastApply = "E546", "a received plan was published before the plan this node applied last";
}
