//! `Plan::validate`'s checks across shapes (one owner per path and per unit name,
//! nothing under a file, link, secret or archive) give the refusal a walk over the
//! shapes in canonical order meets first: the same as the plain definition below,
//! written with maps, on plans of many paths that nest, repeat and collide.

mod common;

use std::collections::HashMap;

use plan::{
    Archive, Container, Directory, File, Kind, Link, Plan, PlanError, Resource, Service, Shape,
};
use proptest::prelude::*;

/// The definition: each shape in order is checked on its own, then against the
/// owners of its path or unit name met before it; then every path against the
/// holders of its ancestors, nearest first.
fn reference(shapes: &[Shape]) -> Result<(), PlanError> {
    let mut by_path: HashMap<&str, &Shape> = HashMap::new();
    let mut by_unit: HashMap<&str, &Shape> = HashMap::new();
    let mut seen: HashMap<(Kind, &str), &Shape> = HashMap::new();
    for shape in shapes {
        shape.resource().validate()?;
        shape.validate_origin()?;
        if seen
            .insert((shape.kind(), shape.identity()), shape)
            .is_some()
        {
            return Err(PlanError::Duplicate {
                shape: shape.shape_name(),
            });
        }
        let owners = match shape.kind() {
            Kind::User => None,
            Kind::Service | Kind::Container => Some(&mut by_unit),
            _ => Some(&mut by_path),
        };
        if let Some(owners) = owners
            && let Some(first) = owners.insert(shape.identity(), shape)
        {
            let reason = if shape.kind().is_path_kind() {
                "both own the same path"
            } else {
                "both would be the unit `NAME.service`"
            };
            return Err(PlanError::Conflict {
                first: first.shape_name(),
                second: shape.shape_name(),
                reason: reason.to_string(),
            });
        }
    }
    for shape in shapes.iter().filter(|shape| shape.kind().is_path_kind()) {
        for ancestor in plan::ancestors(shape.identity()) {
            if let Some(holder) = by_path.get(ancestor) {
                let reason = match holder.kind() {
                    Kind::Directory => continue,
                    Kind::Archive => {
                        "it lies inside the archive's directory, which unpacking replaces whole"
                    }
                    _ => "its parent is not a directory",
                };
                return Err(PlanError::Conflict {
                    first: holder.shape_name(),
                    second: shape.shape_name(),
                    reason: reason.to_string(),
                });
            }
        }
    }
    // no path is a file mesh-apply writes for a unit, or lies beneath one
    for shape in shapes.iter().filter(|shape| shape.kind().is_path_kind()) {
        for unit in shapes {
            for file in plan::unit_files(unit.kind(), unit.identity()) {
                let path = shape.identity();
                if path == file || plan::ancestors(path).any(|ancestor| ancestor == file) {
                    return Err(PlanError::Conflict {
                        first: unit.shape_name(),
                        second: shape.shape_name(),
                        reason: format!(
                            "mesh-apply writes `{file}` for the {}",
                            unit.kind().name()
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

fn resource(kind: u8, identity: String, valid: bool) -> Resource {
    let mode = if valid { "0644" } else { "644" };
    match kind % 6 {
        0 => Resource::Directory(Directory {
            path: identity,
            owner: "root".into(),
            group: "root".into(),
            mode: mode.into(),
        }),
        1 => Resource::File(File {
            path: identity,
            content: Some("x".into()),
            content_base64: None,
            owner: "root".into(),
            group: "root".into(),
            mode: mode.into(),
        }),
        2 => Resource::Link(Link {
            path: identity,
            target: "/srv".into(),
        }),
        3 => Resource::Archive(Archive {
            path: identity,
            artifact: "site".into(),
            artifact_digest: format!("sha256:{}", "0".repeat(64)),
            owner: "root".into(),
            group: "root".into(),
        }),
        4 => Resource::Service(Service {
            name: identity.trim_start_matches('/').replace('/', "."),
            exec: vec!["/usr/bin/app".into()],
            user: "root".into(),
            environment: Default::default(),
            after: vec![],
            restart: if valid { "always" } else { "never" }.into(),
        }),
        _ => Resource::Container(Container {
            name: identity.trim_start_matches('/').replace('/', "."),
            image: format!("registry.example/app@sha256:{}", "0".repeat(64)),
            command: vec![],
            environment: Default::default(),
            mounts: vec![],
            ports: vec![],
            user: None,
        }),
    }
}

/// Paths over a small alphabet, so that they nest (`/a`, `/a/b`), sort between
/// one another (`/a-b` between `/a` and `/a/b`) and repeat; and paths at or
/// beneath the files mesh-apply writes for the units of those names (a service
/// or container at `/a.b` is named `a.b`).
fn path() -> impl Strategy<Value = String> {
    let name = || prop_oneof![Just("a"), Just("b"), Just("a.b"), Just("c")];
    let plain = proptest::collection::vec(prop_oneof!["a", "b", "a-b", "a.b", "c"], 1..4)
        .prop_map(|components| format!("/{}", components.join("/")));
    let unit = (
        prop_oneof![
            Just("/etc/systemd/system/{}.service"),
            Just("/etc/systemd/system/multi-user.target.wants/{}.service"),
            Just("/etc/containers/systemd/{}.container"),
            Just("/etc/systemd/system/{}.service.d"),
        ],
        name(),
        prop_oneof![Just(""), Just("/x")],
    )
        .prop_map(|(pattern, name, below)| pattern.replace("{}", name) + below);
    prop_oneof![3 => plain, 1 => unit]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_first_refusal_is_the_one_the_definition_meets_first(
        declared in proptest::collection::vec((any::<u8>(), path(), proptest::bool::weighted(0.97)), 0..24)
    ) {
        let shapes: Vec<Shape> = declared
            .into_iter()
            .enumerate()
            .map(|(line, (kind, path, valid))| {
                Shape::new(resource(kind, path, valid), "app", common::source(line as u32))
            })
            .collect();
        let plan = Plan::new("node", shapes);
        let expected = reference(plan.shapes());
        prop_assert_eq!(plan.validate(), expected.clone());
        // with every shape valid on its own, the checks across shapes alone agree
        let each_valid = plan
            .shapes()
            .iter()
            .all(|shape| shape.resource().validate().is_ok() && shape.validate_origin().is_ok());
        if each_valid {
            prop_assert_eq!(plan.validate_together(), expected);
        }
    }
}
