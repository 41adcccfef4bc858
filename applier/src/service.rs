//! The `service` shape on the host: a systemd unit at `/etc/systemd/system/NAME.service`,
//! enabled (offline with `systemctl --root` under `--root`), and on a live host started,
//! or restarted when the unit or a path it names changed. Withdrawal stops, disables
//! and removes it.

use plan::Service;

use crate::Planned;
use crate::host::Host;
use crate::problem::Problem;
use crate::unit;

pub fn unit_file_name(name: &str) -> String {
    format!("{name}.service")
}

/// The unit's node path (`/etc/systemd/system/NAME.service`).
pub fn unit_path(name: &str) -> String {
    format!("{}/{}", unit::SYSTEM_UNIT_DIRECTORY, unit_file_name(name))
}

/// Compares the unit file and its enablement (and, live, whether it runs).
pub fn inspect(service: &Service, host: &Host) -> Result<Planned, Problem> {
    let path = unit_path(&service.name);
    let exists = unit::exists(host, &path)?;
    let same = unit::has_content(host, &path, &plan::unit::service_unit(service))?;
    let enabled = unit::is_enabled(host, &unit_file_name(&service.name));
    Ok(match (exists, same, enabled) {
        (false, _, _) => Planned::Create,
        (true, false, _) => Planned::change(vec!["unit".to_string()]),
        (true, true, false) => Planned::change(vec!["enable".to_string()]),
        (true, true, true)
            if host.is_live() && !unit::is_active(&unit_file_name(&service.name)) =>
        {
            Planned::change(vec!["start".to_string()])
        }
        (true, true, true) => Planned::Unchanged,
    })
}

/// Writes the unit (if it differs) and enables it. Starting happens after every unit
/// is written and systemd reloaded (see `run`).
pub fn apply(service: &Service, host: &Host) -> Result<(), Problem> {
    let path = unit_path(&service.name);
    let text = plan::unit::service_unit(service);
    if !unit::has_content(host, &path, &text)? {
        unit::write_unit(host, &path, &text)?;
    }
    let name = unit_file_name(&service.name);
    if !unit::is_enabled(host, &name) {
        unit::enable(host, &name)?;
    }
    Ok(())
}

/// Stops (live), disables and removes the unit.
pub fn withdraw(name: &str, host: &Host) -> Result<(), Problem> {
    let unit_name = unit_file_name(name);
    if host.is_live() && unit::is_active(&unit_name) {
        unit::systemctl(&["stop", &unit_name])?;
    }
    unit::disable(host, &unit_name)?;
    crate::file::withdraw(host, &unit_path(name))
}

#[cfg(test)]
mod tests {
    /// The files the applier writes for a service and a container are the ones the
    /// plan's rules keep every path shape away from (`plan::unit_files`): a shape
    /// there was written twice on every run, never settling.
    #[test]
    fn the_files_written_for_units_are_the_ones_plans_reserve() {
        assert_eq!(
            plan::unit_files(plan::Kind::Service, "web"),
            vec![
                super::unit_path("web"),
                crate::unit::wants_link(&super::unit_file_name("web"))
            ]
        );
        assert_eq!(
            plan::unit_files(plan::Kind::Container, "cache"),
            vec![crate::container::quadlet_path("cache")]
        );
    }
}
