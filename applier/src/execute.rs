//! Carrying out a prepared run, one function per phase in dependency order: withdraw,
//! users, directories, files and secrets, archives, links, units, then (live) reload and
//! start. Stops at the first failure and says where: at a shape, at a withdrawal, or at
//! a step that belongs to no shape (a flush, an account reload). Knows the order of
//! phases, not how a kind is applied; must not touch the host but through the kinds'
//! modules and the confined layer.

use plan::restart::named_change;
use plan::{Plan, Resource, Shape};
use zeroize::Zeroizing;

use crate::Planned;
use crate::accounts::Accounts;
use crate::codes::Code;
use crate::config::Config;
use crate::confined::Directory;
use crate::durable::Flusher;
use crate::file::{self, BatchFailure, FileJob};
use crate::host::Host;
use crate::problem::Problem;
use crate::report::Status;
use crate::run::{Prepared, changed_paths, load_accounts, planned_status};
use crate::{archive, container, directory, link, service, unit, user};

use plan::Kind;

/// Files written per durability batch (two `syncfs` each).
const FILE_BATCH: usize = 4096;

/// Where a run stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailedAt {
    Withdrawal(usize),
    Shape(usize),
    /// A step that belongs to no shape (`flush the written files`, `reload the accounts`).
    Step(String),
}

pub struct Executed {
    /// Per plan shape: what was done, if it was reached and succeeded.
    pub statuses: Vec<Option<(Status, String)>>,
    /// How many withdrawals (in `Prepared::withdrawals` order) were carried out.
    pub withdrawals_done: usize,
    pub failure: Option<(FailedAt, Problem)>,
    pub notes: Vec<Problem>,
}

impl Executed {
    pub fn not_reached(&self, plan: &Plan) -> usize {
        let failed_shape = matches!(self.failure, Some((FailedAt::Shape(_), _)));
        let missing = self
            .statuses
            .iter()
            .filter(|status| status.is_none())
            .count();
        if failed_shape {
            missing.saturating_sub(1)
        } else {
            missing.min(plan.shapes().len())
        }
    }
}

type Failure = (FailedAt, Problem);

/// What every phase reads.
struct Run<'a> {
    plan: &'a Plan,
    host: &'a Host,
    config: &'a Config,
    prepared: &'a Prepared,
}

impl Run<'_> {
    fn shapes(&self) -> &[Shape] {
        self.plan.shapes()
    }

    fn planned(&self, index: usize) -> Option<&Planned> {
        self.prepared
            .inspections
            .get(index)
            .map(|inspection| &inspection.planned)
    }

    fn changes(&self, index: usize) -> bool {
        !self.planned(index).is_some_and(Planned::is_unchanged)
    }

    /// Records the shape as done, as inspection planned it.
    fn mark(&self, executed: &mut Executed, index: usize) {
        if let (Some(slot), Some(planned)) = (executed.statuses.get_mut(index), self.planned(index))
        {
            *slot = Some(planned_status(planned));
        }
    }
}

/// Turns a shape's problem into the run's failure at that shape.
fn fail_at(index: usize, shape: &Shape) -> impl Fn(Problem) -> Failure + '_ {
    move |problem: Problem| (FailedAt::Shape(index), problem.about_shape(shape))
}

/// A failure of a step that belongs to no shape.
fn step_failure(step: &str, problem: Problem) -> Failure {
    (FailedAt::Step(step.to_string()), problem.during(step))
}

pub fn execute(
    plan: &Plan,
    host: &Host,
    config: &Config,
    prepared: &Prepared,
    accounts: Accounts,
) -> Executed {
    let mut executed = Executed {
        statuses: vec![None; plan.shapes().len()],
        withdrawals_done: 0,
        failure: None,
        notes: Vec::new(),
    };
    let run = Run {
        plan,
        host,
        config,
        prepared,
    };
    if let Err(failure) = execute_phases(&run, accounts, &mut executed) {
        executed.failure = Some(failure);
    }
    executed
}

fn execute_phases(
    run: &Run<'_>,
    accounts: Accounts,
    executed: &mut Executed,
) -> Result<(), Failure> {
    let withdrew_units = withdraw(run, executed)?;
    let accounts = users(run, accounts, executed)?;
    directories(run, &accounts, executed)?;
    files(run, &accounts, executed)?;
    archives(run, &accounts, executed)?;
    links(run, executed)?;
    let (unit_shapes, wrote_units) = units(run)?;
    if run.host.is_live() {
        start_units(run, &unit_shapes, withdrew_units || wrote_units, executed)
    } else {
        for index in unit_shapes {
            run.mark(executed, index);
        }
        Ok(())
    }
}

/// Withdraws what the previous record has and the plan has not. Returns whether a unit
/// was withdrawn (systemd must reload).
fn withdraw(run: &Run<'_>, executed: &mut Executed) -> Result<bool, Failure> {
    let mut units_changed = false;
    for (position, withdrawal) in run.prepared.withdrawals.iter().enumerate() {
        let entry = &withdrawal.entry;
        let result = match entry.kind {
            Kind::Service => {
                units_changed = true;
                service::withdraw(&entry.identity, run.host)
            }
            Kind::Container => {
                units_changed = true;
                container::withdraw(&entry.identity, run.host)
            }
            Kind::File | Kind::Secret | Kind::Link
                if withdrawal.removes && !withdrawal.replaced =>
            {
                file::withdraw(run.host, &entry.identity)
            }
            _ => Ok(()),
        };
        result.map_err(|problem| {
            (
                FailedAt::Withdrawal(position),
                problem.about(entry.origin()),
            )
        })?;
        executed.withdrawals_done = position + 1;
    }
    Ok(units_changed)
}

/// Users: create or change, then supplementary groups once all exist; returns the
/// accounts as they are afterwards.
fn users(
    run: &Run<'_>,
    mut accounts: Accounts,
    executed: &mut Executed,
) -> Result<Accounts, Failure> {
    let shapes = run.shapes();
    for (index, shape) in shapes.iter().enumerate() {
        if let Resource::User(wanted) = shape.resource() {
            match run.planned(index) {
                Some(Planned::Create) => {
                    user::create(wanted, run.host, &accounts).map_err(fail_at(index, shape))?;
                    accounts = load_accounts(run.host).map_err(fail_at(index, shape))?;
                }
                Some(Planned::Change(_)) => {
                    user::change(wanted, run.host, &accounts).map_err(fail_at(index, shape))?
                }
                _ => {}
            }
        }
    }
    for (index, shape) in shapes.iter().enumerate() {
        if let Resource::User(wanted) = shape.resource() {
            user::set_groups(wanted, run.host, &accounts).map_err(fail_at(index, shape))?;
            run.mark(executed, index);
        }
    }
    load_accounts(run.host).map_err(|problem| step_failure("reload the accounts", problem))
}

fn flush(flusher: &Flusher, run: &Run<'_>, step: &str) -> Result<(), Failure> {
    if flusher.is_empty() {
        return Ok(());
    }
    flusher
        .flush()
        .map_err(|error| step_failure(step, Problem::filesystem("flush", run.host.root(), &error)))
}

fn touched(
    flusher: &mut Flusher,
    run: &Run<'_>,
    parent: &Directory,
    step: &str,
) -> Result<(), Failure> {
    flusher.touched(parent).map_err(|error| {
        step_failure(
            step,
            Problem::filesystem("inspect the directories of", run.host.root(), &error),
        )
    })
}

/// Directories, parents first (canonical order sorts a parent before its children).
fn directories(run: &Run<'_>, accounts: &Accounts, executed: &mut Executed) -> Result<(), Failure> {
    const STEP: &str = "flush the directories";
    let mut flusher = Flusher::new();
    for (index, shape) in run.shapes().iter().enumerate() {
        if let Resource::Directory(wanted) = shape.resource() {
            if run.changes(index) {
                let (uid, gid) = owner_ids(shape, accounts, &wanted.owner, &wanted.group)
                    .map_err(|problem| (FailedAt::Shape(index), problem))?;
                let judged = run
                    .prepared
                    .inspections
                    .get(index)
                    .and_then(|inspection| inspection.judged);
                let parent = directory::apply(
                    run.host,
                    &wanted.path,
                    (wanted.mode_bits(), uid, gid),
                    judged,
                )
                .map_err(fail_at(index, shape))?;
                touched(&mut flusher, run, &parent, STEP)?;
            }
            run.mark(executed, index);
        }
    }
    flush(&flusher, run, STEP)
}

/// Files and secrets, in durable batches.
fn files(run: &Run<'_>, accounts: &Accounts, executed: &mut Executed) -> Result<(), Failure> {
    let mut jobs: Vec<FileJob> = Vec::new();
    for (index, shape) in run.shapes().iter().enumerate() {
        let (content, mode, owner, group, path) = match shape.resource() {
            Resource::File(wanted) => (
                Zeroizing::new(wanted.content_bytes()),
                wanted.mode_bits(),
                &wanted.owner,
                &wanted.group,
                &wanted.path,
            ),
            Resource::Secret(wanted) => (
                run.prepared
                    .plaintexts
                    .get(&index)
                    .cloned()
                    .unwrap_or_default(),
                wanted.mode_bits(),
                &wanted.owner,
                &wanted.group,
                &wanted.path,
            ),
            _ => continue,
        };
        let Some(inspection) = run.prepared.inspections.get(index) else {
            continue;
        };
        if inspection.planned.is_unchanged() {
            run.mark(executed, index);
            continue;
        }
        let (uid, gid) = owner_ids(shape, accounts, owner, group)
            .map_err(|problem| (FailedAt::Shape(index), problem))?;
        jobs.push(FileJob {
            index,
            node_path: path.clone(),
            content,
            mode,
            uid,
            gid,
            rewrite: inspection.rewrite,
        });
        if jobs.len() >= FILE_BATCH {
            write_jobs(run, &mut jobs, executed)?;
        }
    }
    write_jobs(run, &mut jobs, executed)
}

fn write_jobs(
    run: &Run<'_>,
    jobs: &mut Vec<FileJob>,
    executed: &mut Executed,
) -> Result<(), Failure> {
    if jobs.is_empty() {
        return Ok(());
    }
    let outcome = file::write_batch(run.host, jobs);
    jobs.clear();
    for index in &outcome.done {
        run.mark(executed, *index);
    }
    executed.notes.extend(outcome.notes);
    match outcome.failed {
        Some(BatchFailure::Shape(index, problem)) => {
            let problem = match run.shapes().get(index) {
                Some(shape) => problem.about_shape(shape),
                None => problem,
            };
            Err((FailedAt::Shape(index), problem))
        }
        Some(BatchFailure::Step(problem)) => Err(step_failure("flush the written files", problem)),
        None => Ok(()),
    }
}

fn archives(run: &Run<'_>, accounts: &Accounts, executed: &mut Executed) -> Result<(), Failure> {
    for (index, shape) in run.shapes().iter().enumerate() {
        if let Resource::Archive(wanted) = shape.resource() {
            if run.changes(index) {
                let (uid, gid) = owner_ids(shape, accounts, &wanted.owner, &wanted.group)
                    .map_err(|problem| (FailedAt::Shape(index), problem))?;
                archive::apply(
                    run.host,
                    &run.config.artifacts,
                    &wanted.artifact,
                    &wanted.artifact_digest,
                    &wanted.path,
                    uid,
                    gid,
                )
                .map_err(fail_at(index, shape))?;
            }
            run.mark(executed, index);
        }
    }
    Ok(())
}

fn links(run: &Run<'_>, executed: &mut Executed) -> Result<(), Failure> {
    const STEP: &str = "flush the links";
    let mut flusher = Flusher::new();
    for (index, shape) in run.shapes().iter().enumerate() {
        if let Resource::Link(wanted) = shape.resource() {
            if run.changes(index) {
                let parent = link::apply(run.host, &wanted.path, &wanted.target)
                    .map_err(fail_at(index, shape))?;
                touched(&mut flusher, run, &parent, STEP)?;
            }
            run.mark(executed, index);
        }
    }
    flush(&flusher, run, STEP)
}

/// Writes (and enables) the units of services and containers. Returns the unit shapes
/// in plan order and whether any changed.
fn units(run: &Run<'_>) -> Result<(Vec<usize>, bool), Failure> {
    let mut unit_shapes = Vec::new();
    let mut changed = false;
    for (index, shape) in run.shapes().iter().enumerate() {
        if !matches!(
            shape.resource(),
            Resource::Service(_) | Resource::Container(_)
        ) {
            continue;
        }
        if run.changes(index) {
            let result = match shape.resource() {
                Resource::Service(wanted) => service::apply(wanted, run.host),
                Resource::Container(wanted) => container::apply(wanted, run.host),
                _ => Ok(()),
            };
            result.map_err(fail_at(index, shape))?;
            changed = true;
        }
        unit_shapes.push(index);
    }
    Ok((unit_shapes, changed))
}

/// On the live host: one `daemon-reload` when a unit changed, then start new units,
/// restart changed ones and those naming a path that changed in this run.
fn start_units(
    run: &Run<'_>,
    unit_shapes: &[usize],
    units_changed: bool,
    executed: &mut Executed,
) -> Result<(), Failure> {
    if units_changed {
        unit::systemctl(&["daemon-reload"]).map_err(|problem| {
            step_failure("reload systemd (`systemctl daemon-reload`)", problem)
        })?;
    }
    let statuses = executed.statuses.clone();
    let changed = changed_paths(run.plan, |index| {
        statuses
            .get(index)
            .and_then(|status| status.as_ref().map(|(status, _)| *status))
    });
    for &index in unit_shapes {
        let Some(shape) = run.shapes().get(index) else {
            continue;
        };
        let unit_name = match shape.resource() {
            Resource::Service(wanted) => service::unit_file_name(&wanted.name),
            Resource::Container(wanted) => container::service_name(&wanted.name),
            _ => continue,
        };
        match (run.planned(index), named_change(shape, &changed)) {
            (Some(Planned::Create), _) => {
                unit::systemctl(&["start", &unit_name]).map_err(fail_at(index, shape))?;
            }
            (Some(Planned::Change(_)), _) => {
                unit::systemctl(&["restart", &unit_name]).map_err(fail_at(index, shape))?;
            }
            (Some(Planned::Unchanged), Some(path)) => {
                unit::systemctl(&["restart", &unit_name]).map_err(fail_at(index, shape))?;
                if let Some(slot) = executed.statuses.get_mut(index) {
                    *slot = Some((Status::Changed, format!("restarted: `{path}` changed")));
                }
                continue;
            }
            _ => {}
        }
        run.mark(executed, index);
    }
    Ok(())
}

pub fn owner_ids(
    shape: &Shape,
    accounts: &Accounts,
    owner: &str,
    group: &str,
) -> Result<(u32, u32), Problem> {
    let uid = accounts.uid(owner).ok_or_else(|| {
        Problem::new(
            Code::UndeclaredAccount,
            format!("the user `{owner}` does not exist on the host"),
            format!("declare `mesh.user {{ name = \"{owner}\"; }}`"),
        )
        .about_shape(shape)
    })?;
    let gid = accounts.gid(group).ok_or_else(|| {
        Problem::new(
            Code::UndeclaredAccount,
            format!("the group `{group}` does not exist on the host"),
            format!("declare `mesh.user {{ name = \"{group}\"; }}`"),
        )
        .about_shape(shape)
    })?;
    Ok((uid, gid))
}
