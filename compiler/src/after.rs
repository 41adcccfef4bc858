//! The units a service's `after` names must exist: a plain name (`postgres`) is a
//! service or container of the same node, a `.target` is one of systemd's
//! well-known targets (systemd.special(7)). Other unit names with a dot
//! (`sshd.service`, `docker.socket`) belong to the host and are not checked. Must
//! not look beyond the node: ordering is per host.

use std::collections::BTreeSet;

use lang::{Diagnostic, codes};
use plan::{Kind, Resource};

use crate::shapes::ShapeDecl;

/// systemd's well-known targets, which every systemd host has.
pub const WELL_KNOWN_TARGETS: &[&str] = &[
    "basic.target",
    "bluetooth.target",
    "cryptsetup-pre.target",
    "cryptsetup.target",
    "default.target",
    "emergency.target",
    "final.target",
    "first-boot-complete.target",
    "getty-pre.target",
    "getty.target",
    "graphical.target",
    "halt.target",
    "hibernate.target",
    "hybrid-sleep.target",
    "initrd-fs.target",
    "initrd-root-device.target",
    "initrd-root-fs.target",
    "initrd.target",
    "integritysetup-pre.target",
    "integritysetup.target",
    "kexec.target",
    "local-fs-pre.target",
    "local-fs.target",
    "multi-user.target",
    "network-online.target",
    "network-pre.target",
    "network.target",
    "nss-lookup.target",
    "nss-user-lookup.target",
    "paths.target",
    "poweroff.target",
    "printer.target",
    "reboot.target",
    "remote-cryptsetup.target",
    "remote-fs-pre.target",
    "remote-fs.target",
    "rescue.target",
    "rpcbind.target",
    "shutdown.target",
    "sigpwr.target",
    "sleep.target",
    "slices.target",
    "smartcard.target",
    "sockets.target",
    "sound.target",
    "suspend-then-hibernate.target",
    "suspend.target",
    "swap.target",
    "sysinit.target",
    "system-update-pre.target",
    "system-update.target",
    "time-set.target",
    "time-sync.target",
    "timers.target",
    "umount.target",
    "usb-gadget.target",
    "veritysetup-pre.target",
    "veritysetup.target",
];

/// One diagnostic per name in a service's `after` that names nothing on the node.
pub fn check(node: &str, shapes: &[ShapeDecl], diagnostics: &mut Vec<Diagnostic>) {
    let units: BTreeSet<&str> = shapes
        .iter()
        .filter(|shape| matches!(shape.kind(), Kind::Service | Kind::Container))
        .map(|shape| shape.identity())
        .collect();
    for shape in shapes {
        let Resource::Service(service) = &shape.resource else {
            continue;
        };
        for name in &service.after {
            if names_a_unit(name, &units) {
                continue;
            }
            diagnostics.push(unknown(node, shape, name, &units));
        }
    }
}

fn names_a_unit(name: &str, units: &BTreeSet<&str>) -> bool {
    match name.rsplit_once('.') {
        None => units.contains(name),
        Some((_, "target")) => WELL_KNOWN_TARGETS.contains(&name),
        // another unit of the host (`sshd.service`, `docker.socket`)
        Some(_) => true,
    }
}

fn unknown(node: &str, shape: &ShapeDecl, name: &str, units: &BTreeSet<&str>) -> Diagnostic {
    let is_target = name.ends_with(".target");
    let candidates: Vec<&str> = if is_target {
        WELL_KNOWN_TARGETS.to_vec()
    } else {
        units
            .iter()
            .copied()
            .chain(WELL_KNOWN_TARGETS.iter().copied())
            .collect()
    };
    let message = if is_target {
        format!(
            "service `{}` starts after `{name}`, which is not one of systemd's targets",
            shape.identity()
        )
    } else {
        format!(
            "service `{}` starts after `{name}`, which is no service or container on node `{node}`",
            shape.identity()
        )
    };
    let help = lang::diagnostic::did_you_mean(name, candidates.iter().copied()).unwrap_or_else(|| {
        "name a service or container of this node (`postgres`), one of systemd's targets (`network-online.target`), or a unit of the host with its suffix (`sshd.service`)".to_string()
    });
    let span = shape.field_span("after").unwrap_or(shape.span);
    Diagnostic::error(codes::UNKNOWN_AFTER, message)
        .with_primary(span, format!("in `after` of module `{}`", shape.module))
        .with_help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_a_unit_of_the_node_a_known_target_or_a_host_unit() {
        let units = BTreeSet::from(["postgres", "web"]);
        assert!(names_a_unit("postgres", &units));
        assert!(names_a_unit("postgres.service", &units));
        assert!(names_a_unit("network-online.target", &units));
        assert!(names_a_unit("sshd.service", &units));
        assert!(!names_a_unit("postgress", &units));
        assert!(!names_a_unit("network-onlin.target", &units));
    }

    #[test]
    fn the_targets_are_sorted_and_unique() {
        assert!(WELL_KNOWN_TARGETS.windows(2).all(|pair| pair[0] < pair[1]));
    }
}
