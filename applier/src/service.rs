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

/// The unit file's text: a function of the digest-covered fields only, so moving the
/// declaration in its module does not restart anything.
pub fn unit_text(service: &Service) -> String {
    let mut text = format!(
        "# mesh service `{name}`: written by mesh-apply from the node's plan, do not edit\n\
         [Unit]\n\
         Description=mesh service {name}\n",
        name = service.name
    );
    if !service.after.is_empty() {
        let after: Vec<String> = service
            .after
            .iter()
            .map(|name| unit::unit_name(name))
            .collect();
        text.push_str(&format!("After={}\n", after.join(" ")));
        // After= only orders: a target nothing pulls in (`network-online.target`
        // on a host where nothing wants it) is never reached, and ordering against
        // it orders against nothing. Wanting the targets it names pulls them in.
        let targets: Vec<&str> = after
            .iter()
            .map(String::as_str)
            .filter(|unit| unit.ends_with(".target"))
            .collect();
        if !targets.is_empty() {
            text.push_str(&format!("Wants={}\n", targets.join(" ")));
        }
    }
    text.push_str("\n[Service]\n");
    text.push_str(&format!(
        "ExecStart={}\n",
        unit::command_line(&service.exec)
    ));
    text.push_str(&format!("User={}\n", service.user));
    for (key, value) in &service.environment {
        text.push_str(&format!(
            "Environment={}\n",
            unit::environment_assignment(key, value)
        ));
    }
    text.push_str(&format!("Restart={}\n", service.restart));
    text.push_str("\n[Install]\nWantedBy=multi-user.target\n");
    text
}

/// Compares the unit file and its enablement (and, live, whether it runs).
pub fn inspect(service: &Service, host: &Host) -> Result<Planned, Problem> {
    let path = unit_path(&service.name);
    let exists = unit::exists(host, &path)?;
    let same = unit::has_content(host, &path, &unit_text(service))?;
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
    let text = unit_text(service);
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
