//! Shapes of every kind for the plan crate's tests; no assertions of its own.
#![allow(dead_code)]

use std::collections::BTreeMap;

use plan::{
    Archive, Container, Directory, File, Link, Mount, Resource, Secret, Service, Shape, Source,
    User,
};

pub const SEALED: &str = "-----BEGIN AGE ENCRYPTED FILE-----\nYWdlLWVuY3J5cHRpb24ub3JnL3YxCg==\n-----END AGE ENCRYPTED FILE-----\n";

pub fn source(line: u32) -> Source {
    Source {
        file: "modules/app/module.nix".to_string(),
        line,
        column: 5,
    }
}

pub fn every_kind() -> Vec<Shape> {
    let hex = "0".repeat(64);
    vec![
        Shape::new(
            Resource::Service(Service {
                name: "app".into(),
                exec: vec![
                    "/usr/bin/app".into(),
                    "--config".into(),
                    "/etc/app/app.conf".into(),
                ],
                user: "app".into(),
                environment: BTreeMap::from([("RUST_LOG".to_string(), "info".to_string())]),
                after: vec!["network-online.target".into()],
                restart: "on-failure".into(),
            }),
            "app",
            source(30),
        ),
        Shape::new(
            Resource::User(User {
                name: "app".into(),
                system: true,
                home: Some("/var/lib/app".into()),
                shell: None,
                groups: vec![],
            }),
            "app",
            source(3),
        ),
        Shape::new(
            Resource::Directory(Directory {
                path: "/etc/app".into(),
                owner: "root".into(),
                group: "root".into(),
                mode: "0755".into(),
            }),
            "app",
            source(4),
        ),
        Shape::new(
            Resource::File(File {
                path: "/etc/app/app.conf".into(),
                content: Some("port = 8080\n".into()),
                content_base64: None,
                owner: "root".into(),
                group: "app".into(),
                mode: "0640".into(),
            }),
            "app",
            source(5),
        ),
        Shape::new(
            Resource::Link(Link {
                path: "/etc/app/current".into(),
                target: "app.conf".into(),
            }),
            "app",
            source(6),
        ),
        Shape::new(
            Resource::Secret(Secret {
                path: "/etc/app/token".into(),
                sealed: SEALED.into(),
                owner: "app".into(),
                group: "app".into(),
                mode: "0400".into(),
            }),
            "app",
            source(7),
        ),
        Shape::new(
            Resource::Archive(Archive {
                path: "/srv/app".into(),
                artifact: format!("sha256-{hex}.tar"),
                artifact_digest: format!("sha256:{hex}"),
                owner: "root".into(),
                group: "root".into(),
            }),
            "app",
            source(8),
        ),
        Shape::new(
            Resource::Container(Container {
                name: "cache".into(),
                image: format!("registry.mesh.internal:5000/library/redis@sha256:{hex}"),
                command: vec![],
                environment: BTreeMap::new(),
                mounts: vec![Mount {
                    source: "/srv/app".into(),
                    target: "/data".into(),
                    read_only: true,
                }],
                ports: vec!["6379:6379/tcp".into()],
                user: None,
            }),
            "cache",
            source(9),
        ),
    ]
}
