//! One run of `mesh-apply`: read and check the plan, refuse before changing anything
//! (wrong node, a received plan older than the last applied, undeclared needs,
//! undecryptable secrets, bad artifacts, things in the way), then withdraw and apply
//! in dependency order, stop at the first failure, and record exactly what was done.
//! Knows the order of phases, not how a kind is applied.

use std::collections::{HashMap, HashSet};
use std::fs::File;

use plan::restart::named_change;
use plan::{Kind, Plan, PlanError, Resource, Shape};
use zeroize::Zeroizing;

use crate::accounts::Accounts;
use crate::codes::Code;
use crate::config::{Config, PlanSource};
use crate::confined::{self, EntryKind};
use crate::execute::{Executed, FailedAt, execute};
use crate::file::{FileInspection, WantedFile};
use crate::host::{Host, STATE_DIRECTORY};
use crate::problem::{Origin, Problem};
use crate::record::{Record, RecordEntry, RecordState};
use crate::report::{Report, ShapeResult, Status};
use crate::secret::Identities;
use crate::{
    Planned, archive, container, directory, file, generations, link, needs, service, user,
};

/// Applies (or, dry, inspects) the plan `config` names, and reports.
pub fn run(config: &Config) -> Report {
    match read_plan(config) {
        Ok(bytes) => run_with_plan(config, &bytes),
        Err(problem) => Report {
            dry_run: config.dry_run,
            problems: vec![problem],
            ..Report::default()
        },
    }
}

/// The most a plan file or standard input may hold. A plan carries its files'
/// contents but not its archives, and the broker refuses messages past 128 MiB, so
/// a real plan is far smaller; what is larger (`--plan /dev/zero`) is refused once
/// this much was read, instead of being read until memory runs out.
pub const MAX_PLAN_BYTES: u64 = 256 << 20;

/// The plan's bytes: the file the operator names, standard input, or a generation.
fn read_plan(config: &Config) -> Result<Vec<u8>, Problem> {
    let unreadable = |what: String, error: &std::io::Error| {
        Problem::new(
            Code::PlanUnreadable,
            format!("cannot read the plan {what}: {error}"),
            "give the plan `meshc build` wrote for this node (`OUT/nodes/NODE.json`)",
        )
    };
    match &config.plan {
        PlanSource::File(path) => std::fs::File::open(path)
            .and_then(read_bounded)
            .map_err(|error| unreadable(format!("`{}`", path.display()), &error)),
        PlanSource::Stdin => read_bounded(std::io::stdin().lock())
            .map_err(|error| unreadable("from standard input".to_string(), &error)),
        PlanSource::Generation(to) => {
            let host = Host::new(config.root.as_deref())?;
            let number = generations::rollback_target(&host, *to)?;
            generations::read(&host, number)
        }
    }
}

/// All of `reader`, if it holds at most [`MAX_PLAN_BYTES`].
fn read_bounded(reader: impl std::io::Read) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut reader.take(MAX_PLAN_BYTES + 1), &mut bytes)?;
    if bytes.len() as u64 > MAX_PLAN_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            "it is larger than 256 MiB, more than any plan holds",
        ));
    }
    Ok(bytes)
}

/// Applies the plan `bytes` (read by the caller) as `config` says.
pub fn run_with_plan(config: &Config, bytes: &[u8]) -> Report {
    let mut report = Report {
        dry_run: config.dry_run,
        ..Report::default()
    };
    if let Err(problems) = run_checked(config, bytes, &mut report) {
        report.problems.extend(problems);
    }
    report
}

fn run_checked(config: &Config, bytes: &[u8], report: &mut Report) -> Result<(), Vec<Problem>> {
    let plan = Plan::read(bytes).map_err(|error| vec![plan_problem(&error)])?;
    report.node = Some(plan.node().to_string());
    report.plan_digest = Some(plan.digest().to_string());
    let host = Host::new(config.root.as_deref()).map_err(|problem| vec![problem])?;
    // an existing lock is taken now; a host mesh never touched gets one with the first change
    let mut lock = if config.dry_run {
        None
    } else {
        Lock::acquire_existing(&host).map_err(|problem| vec![problem])?
    };
    let record = Record::load(&host).map_err(|problem| vec![problem])?;
    check_node(config, record.as_ref(), &plan).map_err(|problem| vec![problem])?;
    // checked on the record read under the node's lock (a host with a record has its
    // lock file), which is held until this run's own record is written: no other
    // apply comes between the check and its use
    crate::order::check(record.as_ref(), &plan, config.published_ms)
        .map_err(|problem| vec![problem])?;
    let identities = crate::identity::load(config.identity_path.as_deref(), &host)
        .map_err(|problem| vec![problem])?;
    let accounts = load_accounts(&host).map_err(|problem| vec![problem])?;
    let prepared = prepare(
        &plan,
        &host,
        &accounts,
        record.as_ref(),
        &identities,
        config,
    )?;
    report.warnings.extend(prepared.warnings.iter().cloned());
    // what inspection kept open for reading is never used to change anything
    host.fs().forget_reading();
    if config.dry_run {
        report.results = dry_results(&plan, &host, &prepared);
        return Ok(());
    }
    let nothing_to_do = prepared.withdrawals.is_empty()
        && prepared
            .inspections
            .iter()
            .all(|inspection| inspection.planned.is_unchanged());
    let already_recorded = record.as_ref().is_some_and(|record| {
        record.state == RecordState::Applied
            && record.plan == plan.digest()
            && record.node == plan.node()
    });
    if lock.is_none() {
        lock = Some(Lock::acquire(&host).map_err(|problem| vec![problem])?);
        // the record was read with no lock to take (a host mesh never touched):
        // another run may have made the lock and applied its plan since, and this
        // one, storing its record from what it read, would lose that run's shapes
        // from the record (never withdrawn after); it stops, having changed nothing
        let now = Record::load(&host).map_err(|problem| vec![problem])?;
        if now != record {
            return Err(vec![Problem::new(
                Code::Locked,
                format!(
                    "another mesh-apply applied a plan to this host while this one read it (`{}` changed)",
                    host.path(crate::record::RECORD_PATH).display()
                ),
                "apply again: nothing was changed by this run",
            )]);
        }
    }
    let _lock = lock;
    if nothing_to_do && already_recorded {
        report.results = dry_results(&plan, &host, &prepared);
        // a run killed after its record was stored and before its generation was kept
        // left the generation out: keep it now (nothing is written when it is there)
        return generations::remember(&host, &plan, bytes, config.keep_generations)
            .map_err(|problem| vec![problem]);
    }
    // in the record from its first write: a failed or killed apply still refuses older plans
    let newest_ms = crate::order::next_mark(
        record.as_ref().and_then(|record| record.newest_ms),
        config.published_ms,
        transport::message::now_ms(),
    );
    if !nothing_to_do {
        interrupted_record(&plan, record.as_ref(), &prepared, newest_ms)
            .store(&host)
            .map_err(|problem| vec![problem])?;
    }
    let executed = execute(&plan, &host, config, &prepared, accounts);
    let final_record = final_record(&plan, &prepared, &executed, newest_ms);
    let stored = final_record.store(&host);
    report.results = executed_results(&plan, &prepared, &executed);
    report.notes.extend(executed.notes.iter().cloned());
    report.not_reached = executed.not_reached(&plan);
    let mut problems = Vec::new();
    if let Some((_, problem)) = &executed.failure {
        problems.push(problem.clone());
    }
    if let Err(problem) = stored {
        problems.push(problem);
    }
    if problems.is_empty()
        && final_record.state == RecordState::Applied
        && let Err(problem) = generations::remember(&host, &plan, bytes, config.keep_generations)
    {
        problems.push(problem);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn plan_problem(error: &PlanError) -> Problem {
    let (code, help) = match error {
        PlanError::NotJson { .. } | PlanError::Malformed { .. } => (
            Code::PlanUnreadable,
            "the file is cut short or not a plan: copy it again from `meshc build`'s output",
        ),
        PlanError::UnknownFormat { .. } => (
            Code::UnknownPlanFormat,
            "this mesh-apply reads `mesh-plan/1`: update mesh-apply or build with a matching meshc",
        ),
        PlanError::DigestMismatch { .. } => (
            Code::PlanDigestMismatch,
            "the plan was changed after `meshc build` wrote it: never edit plans, rebuild them",
        ),
        PlanError::UnknownKind { .. }
        | PlanError::UnknownField { .. }
        | PlanError::MissingField { .. }
        | PlanError::InvalidField { .. } => (
            Code::InvalidShape,
            "the plan was written by a different meshc, or edited: rebuild it with a matching meshc",
        ),
        PlanError::ShapeDigestMismatch { .. } => (
            Code::ShapeDigestMismatch,
            "the shape was changed after `meshc build` wrote it: never edit plans, rebuild them",
        ),
        PlanError::Duplicate { .. }
        | PlanError::Conflict { .. }
        | PlanError::NotCanonicalOrder { .. } => (
            Code::ConflictingShapes,
            "two declarations claim the same thing: keep one of them in the repository and rebuild",
        ),
    };
    let mut problem = Problem::new(code, error.to_string(), help);
    if let Some(shape) = error.shape()
        && let Some(kind) = Kind::from_name(&shape.kind)
    {
        problem = problem.about(Origin {
            kind,
            identity: shape.identity.clone(),
            module: None,
            source: None,
        });
    }
    problem
}

fn check_node(config: &Config, record: Option<&Record>, plan: &Plan) -> Result<(), Problem> {
    let (expected, how) = match (&config.node, record) {
        (Some(node), _) => (node.as_str(), "`--node`"),
        (None, Some(record)) => (record.node.as_str(), "the applied record"),
        (None, None) => return Ok(()),
    };
    if plan.node() == expected {
        return Ok(());
    }
    Err(Problem::new(
        Code::WrongNode,
        format!(
            "the plan is for node `{}`, but this is node `{expected}` ({how})",
            plan.node()
        ),
        format!("apply the plan built for this node (`nodes/{expected}.json`)"),
    ))
}

pub(crate) fn load_accounts(host: &Host) -> Result<Accounts, Problem> {
    Accounts::load(host)
        .map_err(|error| Problem::filesystem("read", &host.path("/etc/passwd"), &error))
}

/// Holds `/var/lib/mesh/lock` for the run, so two applies never interleave.
struct Lock {
    _file: File,
}

impl Lock {
    /// Takes the lock if its file exists, creating nothing.
    fn acquire_existing(host: &Host) -> Result<Option<Lock>, Problem> {
        let exists = host
            .fs()
            .entry(LOCK_PATH)
            .map_err(|error| Problem::filesystem("inspect", &host.path(LOCK_PATH), &error))?
            .is_some();
        if exists {
            Lock::acquire(host).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Creates the state directory and the lock file through the confined layer (so a
    /// symlink in the root cannot send them outside), then takes the lock. The file
    /// is made 0600: `flock` needs only a descriptor, so a user who could open it for
    /// reading could hold it and stop every apply. One others may open (0644, made by
    /// an earlier mesh-apply) is replaced once, while held, by the run that holds the
    /// file at the path; a lock is kept only on the file still at the path once taken.
    fn acquire(host: &Host) -> Result<Lock, Problem> {
        let path = host.path(LOCK_PATH);
        let directory = host
            .fs()
            .create_directories(STATE_DIRECTORY, 0o755)
            .map_err(|error| {
                Problem::filesystem("create the directory", &host.state_directory(), &error)
            })?;
        let inspect = |error: &std::io::Error| Problem::filesystem("inspect", &path, error);
        // the file at the path is this one (not one another run put there since)
        let at_path = |held: &crate::confined::Entry| -> Result<bool, Problem> {
            let now = directory.entry("lock").map_err(|error| inspect(&error))?;
            Ok(now.is_some_and(|now| now.device == held.device && now.inode == held.inode))
        };
        let mut replaced = false;
        loop {
            let file = directory
                .open_or_create("lock", 0o600)
                .map_err(|error| Problem::filesystem("open", &path, &error))?;
            let held = crate::confined::Entry::of(
                &rustix::fs::fstat(&file).map_err(|error| inspect(&error.into()))?,
            );
            let readable = held.mode & 0o077 != 0;
            rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .map_err(|error| {
                    let help = if readable {
                        "wait for it to finish, then apply again; the lock file can be opened by \
                         other users (an earlier mesh-apply made it so), and one of them may \
                         hold it: if no mesh-apply runs, remove it and apply again"
                    } else {
                        "wait for it to finish, then apply again"
                    };
                    Problem::new(
                        Code::Locked,
                        format!("another mesh-apply holds `{}` ({error})", path.display()),
                        help,
                    )
                })?;
            if !at_path(&held)? {
                // replaced since it was opened: the run that did holds the new one
                continue;
            }
            // replaced once at most: a file system that makes every file readable
            // (a fixed `umask=` mount) would otherwise be looped on for ever
            if readable && !replaced {
                replaced = true;
                directory
                    .remove_file("lock")
                    .map_err(|error| Problem::filesystem("remove", &path, &error))?;
                continue;
            }
            return Ok(Lock { _file: file });
        }
    }
}

/// The lock's node path.
const LOCK_PATH: &str = "/var/lib/mesh/lock";

/// What inspection found for one shape of the plan.
pub(crate) struct Inspection {
    pub(crate) planned: Planned,
    /// For files and secrets: the content must be rewritten (else owner/mode only).
    pub(crate) rewrite: bool,
    /// For a directory found: its device and inode, judged here to be its holder's
    /// owner's or in root's directory (E524), so it may be changed once this run has
    /// changed the holder's owner (a tree given from one user to another).
    pub(crate) judged: Option<(u64, u64)>,
}

impl From<FileInspection> for Inspection {
    fn from(FileInspection { planned, rewrite }: FileInspection) -> Inspection {
        Inspection {
            planned,
            rewrite,
            judged: None,
        }
    }
}

/// A shape of the previous record that is gone from the plan.
pub(crate) struct Withdrawal {
    pub(crate) entry: RecordEntry,
    /// Removed (files, links, secrets, units); otherwise kept (directories, archives, users).
    pub(crate) removes: bool,
    /// Another shape of the new plan owns the path: the new shape replaces it in place.
    pub(crate) replaced: bool,
    /// The path is reached only through a link mesh did not make (one a local user
    /// put on the way since): what is there is no longer mesh's, and is kept.
    pub(crate) unreachable: bool,
}

pub(crate) struct Prepared {
    pub(crate) inspections: Vec<Inspection>,
    /// Decrypted secrets by shape index, wiped when the run drops them.
    pub(crate) plaintexts: HashMap<usize, Zeroizing<Vec<u8>>>,
    pub(crate) withdrawals: Vec<Withdrawal>,
    /// Record entries by kind and identity (what mesh may have on the host).
    pub(crate) claimed: HashMap<(Kind, String), RecordEntry>,
    /// What the report says besides the results (a check that could not run here).
    pub(crate) warnings: Vec<Problem>,
}

/// Everything that can be refused is refused here, before any change.
fn prepare(
    plan: &Plan,
    host: &Host,
    accounts: &Accounts,
    record: Option<&Record>,
    identities: &Identities,
    config: &Config,
) -> Result<Prepared, Vec<Problem>> {
    // a root without account files would fail at every shape: say so once
    if let Some(problem) = crate::base::missing(plan, host) {
        return Err(vec![problem]);
    }
    let claimed: HashMap<(Kind, String), RecordEntry> = record
        .map(|record| {
            record
                .shapes
                .iter()
                .map(|entry| ((entry.kind, entry.identity.clone()), entry.clone()))
                .collect()
        })
        .unwrap_or_default();
    let planned_paths: HashSet<&str> = plan
        .shapes()
        .iter()
        .filter(|shape| shape.kind().is_path_kind())
        .map(Shape::identity)
        .collect();
    let mut withdrawals: Vec<Withdrawal> = record
        .map(|record| {
            record
                .shapes
                .iter()
                .filter(|entry| plan.shape(entry.kind, &entry.identity).is_none())
                .map(|entry| Withdrawal {
                    entry: entry.clone(),
                    removes: matches!(
                        entry.kind,
                        Kind::File | Kind::Link | Kind::Secret | Kind::Service | Kind::Container
                    ),
                    replaced: entry.kind.is_path_kind()
                        && planned_paths.contains(entry.identity.as_str()),
                    unreachable: false,
                })
                .collect()
        })
        .unwrap_or_default();
    // a file, link or secret whose path now goes through a link mesh would not follow,
    // or from a user's directory into someone else's (she may have swapped it in), is
    // kept, found here before anything changes: what is there may not be what mesh
    // made, and its removal would fail this run, and every run after it, at the
    // withdrawal (E510, E524), keeping the rest of the plan from the host
    for withdrawal in &mut withdrawals {
        let entry = &withdrawal.entry;
        if matches!(entry.kind, Kind::File | Kind::Link | Kind::Secret)
            && !withdrawal.replaced
            && let Err(error) = host.fs().parent(&entry.identity)
            && confined::is_unsafe_path(&error)
        {
            withdrawal.removes = false;
            withdrawal.unreachable = true;
        }
    }
    // units first (stop before their files go), then links, files, secrets; kept last
    withdrawals.sort_by_key(|withdrawal| match withdrawal.entry.kind {
        Kind::Service | Kind::Container => 0,
        Kind::Link => 1,
        Kind::File | Kind::Secret => 2,
        Kind::Archive | Kind::Directory | Kind::User => 3,
    });
    let freed_paths: HashSet<String> = withdrawals
        .iter()
        .filter(|withdrawal| withdrawal.removes && withdrawal.entry.kind.is_path_kind())
        .map(|withdrawal| withdrawal.entry.identity.clone())
        .collect();

    let mut problems = needs::check(plan, host, accounts, &freed_paths);
    problems.extend(crate::ownership::check(plan, host, accounts));

    let mut plaintexts = HashMap::new();
    for (index, shape) in plan.shapes().iter().enumerate() {
        if let Resource::Secret(secret) = shape.resource() {
            match identities.decrypt(&secret.sealed) {
                Ok(plaintext) => {
                    plaintexts.insert(index, plaintext);
                }
                Err(problem) => problems.push(problem.about_shape(shape)),
            }
        }
    }
    let has_containers = plan
        .shapes()
        .iter()
        .any(|shape| shape.kind() == Kind::Container);
    let mut warnings = Vec::new();
    if has_containers && host.is_live() {
        if let Err(problem) = container::podman_present() {
            problems.push(problem);
        }
    } else if has_containers && !container::quadlet_installed() {
        warnings.push(container::quadlet_check_skipped());
    }
    for shape in plan.shapes() {
        if let Resource::Container(container) = shape.resource()
            && let Err(problem) = container::validate(container)
        {
            problems.push(problem.about_shape(shape));
        }
    }

    let mut inspections = Vec::with_capacity(plan.shapes().len());
    for (index, shape) in plan.shapes().iter().enumerate() {
        match inspect(
            shape,
            host,
            accounts,
            &claimed,
            plaintexts.get(&index).map(|plaintext| plaintext.as_slice()),
        ) {
            Ok(inspection) => inspections.push(inspection),
            Err(problem) => {
                problems.push(problem.about_shape(shape));
                inspections.push(Inspection {
                    planned: Planned::Unchanged,
                    rewrite: false,
                    judged: None,
                });
            }
        }
    }
    for (shape, inspection) in plan.shapes().iter().zip(&inspections) {
        if !inspection.planned.is_unchanged()
            && let Err(problem) = check_scratch_names(shape, host, accounts)
        {
            problems.push(problem.about_shape(shape));
        }
    }
    // `useradd` reads the tree's settings: refused before anything changes, once
    if let Some(shape) = plan
        .shapes()
        .iter()
        .zip(&inspections)
        .find(|(shape, inspection)| {
            shape.kind() == Kind::User && matches!(inspection.planned, Planned::Create)
        })
        .map(|(shape, _)| shape)
        && let Err(problem) = crate::accounts::prove_useradd_settings(host)
    {
        problems.push(problem.about_shape(shape));
    }
    for (shape, inspection) in plan.shapes().iter().zip(&inspections) {
        if let Resource::Archive(archive) = shape.resource()
            && !inspection.planned.is_unchanged()
            && let Err(problem) = archive::verify(
                host,
                &config.artifacts,
                &archive.artifact,
                &archive.artifact_digest,
            )
        {
            problems.push(problem.about_shape(shape));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Prepared {
        inspections,
        plaintexts,
        withdrawals,
        claimed,
        warnings,
    })
}

/// Refuses, before anything changes, a shape whose scratch names beside it (the temp
/// `.NAME.mesh-new` of a file, secret or link, the `.NAME.mesh-unpack` and
/// `.NAME.mesh-old` of an archive) are taken by something that cannot be a leftover of
/// mesh's ([`confined::Directory::check_scratch`]): it may be someone's data, which mesh
/// would otherwise replace or remove (E520).
fn check_scratch_names(shape: &Shape, host: &Host, accounts: &Accounts) -> Result<(), Problem> {
    let owner = |owner: &str, group: &str, mode: Option<u32>| {
        Some(confined::ScratchOwner {
            uid: accounts.uid(owner)?,
            gid: accounts.gid(group)?,
            mode,
        })
    };
    let (node_path, names, owner) = match shape.resource() {
        Resource::File(file) => (
            &file.path,
            vec![confined::temp_name as fn(&str) -> String],
            owner(&file.owner, &file.group, Some(file.mode_bits())),
        ),
        Resource::Secret(secret) => (
            &secret.path,
            vec![confined::temp_name as fn(&str) -> String],
            owner(&secret.owner, &secret.group, Some(secret.mode_bits())),
        ),
        Resource::Link(link) => (
            &link.path,
            vec![confined::temp_name as fn(&str) -> String],
            None,
        ),
        Resource::Archive(archive) => (
            &archive.path,
            vec![
                archive::staging_name_for as fn(&str) -> String,
                archive::aside_name_for,
            ],
            owner(&archive.owner, &archive.group, None),
        ),
        _ => return Ok(()),
    };
    // any other failure (a name too long, an unreadable directory) is the write's to report
    let Ok((directory, name)) = host.fs().parent_for_reading(node_path) else {
        return Ok(());
    };
    for scratch in names {
        if let Err(error) = directory.check_scratch(&scratch(&name), owner)
            && confined::is_foreign_scratch(&error)
        {
            return Err(Problem::filesystem("write", &host.path(node_path), &error));
        }
    }
    Ok(())
}

fn inspect(
    shape: &Shape,
    host: &Host,
    accounts: &Accounts,
    claimed: &HashMap<(Kind, String), RecordEntry>,
    plaintext: Option<&[u8]>,
) -> Result<Inspection, Problem> {
    let simple = |planned: Planned| Inspection {
        planned,
        rewrite: false,
        judged: None,
    };
    match shape.resource() {
        Resource::User(user) => Ok(simple(user::inspect(user, accounts))),
        Resource::Directory(directory) => {
            let (planned, judged) = directory::inspect(
                host,
                &directory.path,
                directory.mode_bits(),
                &directory.owner,
                &directory.group,
                accounts,
            )?;
            Ok(Inspection {
                planned,
                rewrite: false,
                judged,
            })
        }
        Resource::File(file) => {
            let content = file.content_bytes();
            let wanted = WantedFile {
                node_path: &file.path,
                content: &content,
                mode: file.mode_bits(),
                owner: &file.owner,
                group: &file.group,
            };
            Ok(file::inspect(host, &wanted, accounts, true)?.into())
        }
        Resource::Secret(secret) => {
            let wanted = WantedFile {
                node_path: &secret.path,
                content: plaintext.unwrap_or_default(),
                mode: secret.mode_bits(),
                owner: &secret.owner,
                group: &secret.group,
            };
            Ok(file::inspect(host, &wanted, accounts, false)?.into())
        }
        Resource::Link(link) => Ok(simple(link::inspect(host, &link.path, &link.target)?)),
        Resource::Archive(archive) => {
            let host_path = host.path(&archive.path);
            let metadata = match host.fs().entry(&archive.path) {
                Ok(Some(metadata)) => metadata,
                Ok(None) => return Ok(simple(Planned::Create)),
                Err(error) => return Err(Problem::filesystem("inspect", &host_path, &error)),
            };
            let entry = claimed.get(&(Kind::Archive, archive.path.clone()));
            if metadata.kind != EntryKind::Directory || entry.is_none() {
                return Err(Problem::new(
                    Code::InTheWay,
                    format!(
                        "`{}` exists and was not unpacked by mesh",
                        host_path.display()
                    ),
                    "unpacking replaces the whole directory: move it away by hand, then apply again",
                ));
            }
            let same_digest = entry.is_some_and(|entry| {
                entry.digest.as_deref() == Some(shape.digest())
                    && matches!(
                        entry.result.as_str(),
                        "created" | "changed" | "unchanged" | "previous"
                    )
            });
            let same_owner = accounts.uid(&archive.owner) == Some(metadata.uid)
                && accounts.gid(&archive.group) == Some(metadata.gid);
            Ok(simple(if same_digest && same_owner {
                Planned::Unchanged
            } else {
                Planned::change(vec!["unpack".to_string()])
            }))
        }
        Resource::Service(service) => Ok(simple(service::inspect(service, host)?)),
        Resource::Container(container) => Ok(simple(container::inspect(container, host)?)),
    }
}

pub(crate) fn planned_status(planned: &Planned) -> (Status, String) {
    match planned {
        Planned::Create => (Status::Created, String::new()),
        Planned::Change(details) => (Status::Changed, details.join(", ")),
        Planned::Unchanged => (Status::Unchanged, String::new()),
    }
}

fn withdrawal_result(withdrawal: &Withdrawal) -> ShapeResult {
    let (status, detail) = match (withdrawal.removes, withdrawal.replaced) {
        (true, true) => (
            Status::Withdrawn,
            "replaced by a new shape at the same path".to_string(),
        ),
        (true, false) => (Status::Withdrawn, String::new()),
        (false, _) if withdrawal.unreachable => (
            Status::Kept,
            "its path now goes through a link mesh did not make, or through someone else's directory in a user's: what is there is no longer mesh's"
                .to_string(),
        ),
        (false, _) => (Status::Kept, "no data is lost by withdrawal".to_string()),
    };
    ShapeResult {
        origin: withdrawal.entry.origin(),
        status,
        detail,
    }
}

/// Paths of path shapes that are (or would be) created or changed in this run.
pub(crate) fn changed_paths(plan: &Plan, statuses: impl Fn(usize) -> Option<Status>) -> Vec<&str> {
    plan.shapes()
        .iter()
        .enumerate()
        .filter(|(index, shape)| {
            shape.kind().is_path_kind()
                && matches!(statuses(*index), Some(Status::Created | Status::Changed))
        })
        .map(|(_, shape)| shape.identity())
        .collect()
}

fn dry_results(plan: &Plan, host: &Host, prepared: &Prepared) -> Vec<ShapeResult> {
    let mut results: Vec<ShapeResult> =
        prepared.withdrawals.iter().map(withdrawal_result).collect();
    let status_of = |index: usize| {
        prepared
            .inspections
            .get(index)
            .map(|inspection| planned_status(&inspection.planned).0)
    };
    let changed = changed_paths(plan, status_of);
    for (shape, inspection) in plan.shapes().iter().zip(&prepared.inspections) {
        let (mut status, mut detail) = planned_status(&inspection.planned);
        if status == Status::Unchanged
            && host.is_live()
            && let Some(path) = named_change(shape, &changed)
        {
            status = Status::Changed;
            detail = format!("restart: `{path}` changes");
        }
        results.push(ShapeResult {
            origin: Origin::of(shape),
            status,
            detail,
        });
    }
    results
}

fn executed_results(plan: &Plan, prepared: &Prepared, executed: &Executed) -> Vec<ShapeResult> {
    let mut results: Vec<ShapeResult> = prepared
        .withdrawals
        .iter()
        .take(executed.withdrawals_done)
        .map(withdrawal_result)
        .collect();
    if let Some((FailedAt::Withdrawal(position), problem)) = &executed.failure
        && let Some(withdrawal) = prepared.withdrawals.get(*position)
    {
        results.push(ShapeResult {
            origin: withdrawal.entry.origin(),
            status: Status::Failed,
            detail: problem.message.clone(),
        });
    }
    for (index, shape) in plan.shapes().iter().enumerate() {
        match executed.statuses.get(index) {
            Some(Some((status, detail))) => results.push(ShapeResult {
                origin: Origin::of(shape),
                status: *status,
                detail: detail.clone(),
            }),
            _ => {
                if let Some((FailedAt::Shape(failed), problem)) = &executed.failure
                    && *failed == index
                {
                    results.push(ShapeResult {
                        origin: Origin::of(shape),
                        status: Status::Failed,
                        detail: problem.message.clone(),
                    });
                }
            }
        }
    }
    results
}

fn entry_for(shape: &Shape, digest: Option<String>, result: &str) -> RecordEntry {
    RecordEntry {
        kind: shape.kind(),
        identity: shape.identity().to_string(),
        digest,
        module: Some(shape.module().to_string()),
        source: Some(shape.source().clone()),
        result: result.to_string(),
    }
}

/// Written before the first change: the plan's shapes as pending (or unchanged), what
/// the previous record had that this run may withdraw, and the run's mark.
fn interrupted_record(
    plan: &Plan,
    previous: Option<&Record>,
    prepared: &Prepared,
    newest_ms: u64,
) -> Record {
    let mut shapes: Vec<RecordEntry> = plan
        .shapes()
        .iter()
        .zip(&prepared.inspections)
        .map(|(shape, inspection)| {
            if inspection.planned.is_unchanged() {
                entry_for(shape, Some(shape.digest().to_string()), "unchanged")
            } else {
                entry_for(shape, None, "pending")
            }
        })
        .collect();
    shapes.extend(
        prepared
            .withdrawals
            .iter()
            .map(|withdrawal| previous_entry(&withdrawal.entry)),
    );
    Record {
        node: plan.node().to_string(),
        plan: plan.digest().to_string(),
        state: RecordState::Interrupted,
        shapes,
        withdrawn: previous
            .map(|record| record.withdrawn.clone())
            .unwrap_or_default(),
        failed_step: None,
        newest_ms: Some(newest_ms),
    }
}

fn previous_entry(entry: &RecordEntry) -> RecordEntry {
    let mut carried = entry.clone();
    carried.result = if carried.digest.is_some() {
        "previous".to_string()
    } else {
        "pending".to_string()
    };
    carried
}

/// Written after the run: exactly what was done, what may still be on the host, and
/// the run's mark (the one its interrupted record had).
fn final_record(plan: &Plan, prepared: &Prepared, executed: &Executed, newest_ms: u64) -> Record {
    let mut shapes = Vec::new();
    for (index, shape) in plan.shapes().iter().enumerate() {
        match executed.statuses.get(index) {
            Some(Some((status, _))) => shapes.push(entry_for(
                shape,
                Some(shape.digest().to_string()),
                status.name(),
            )),
            _ => {
                let failed_here = matches!(&executed.failure, Some((FailedAt::Shape(failed), _)) if *failed == index);
                if failed_here {
                    shapes.push(entry_for(shape, None, "failed"));
                } else if let Some(entry) = prepared
                    .claimed
                    .get(&(shape.kind(), shape.identity().to_string()))
                {
                    shapes.push(previous_entry(entry));
                }
            }
        }
    }
    // withdrawals not carried out (the run stopped first) are still on the host
    let failed_withdrawal = match &executed.failure {
        Some((FailedAt::Withdrawal(position), _)) => Some(*position),
        _ => None,
    };
    for (position, withdrawal) in prepared.withdrawals.iter().enumerate() {
        if position >= executed.withdrawals_done || failed_withdrawal == Some(position) {
            shapes.push(previous_entry(&withdrawal.entry));
        }
    }
    let withdrawn = prepared
        .withdrawals
        .iter()
        .take(executed.withdrawals_done)
        .map(|withdrawal| {
            let mut entry = withdrawal.entry.clone();
            entry.result = withdrawal_result(withdrawal).status.name().to_string();
            entry
        })
        .collect();
    Record {
        node: plan.node().to_string(),
        plan: plan.digest().to_string(),
        state: if executed.failure.is_some() {
            RecordState::Failed
        } else {
            RecordState::Applied
        },
        shapes,
        withdrawn,
        failed_step: match &executed.failure {
            Some((FailedAt::Step(step), _)) => Some(step.clone()),
            _ => None,
        },
        newest_ms: Some(newest_ms),
    }
}
