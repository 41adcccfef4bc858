//! The shape writer that builds canonical JSON straight from the typed fields must
//! write exactly what `canonical_json` writes for the shape's JSON value: checked on
//! random shapes of every kind, with strings holding quotes, backslashes, control
//! characters and non-ASCII text.

use std::collections::BTreeMap;

use plan::{
    Archive, Container, Directory, File, Link, Mount, Plan, Resource, Secret, Service, Shape,
    Source, User, canonical_json, sha256_digest,
};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z\"\\\\\\n\\t\\u{1}\\u{7f}é€/ .-]{0,12}").expect("regex")
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(text(), 0..4)
}

fn map() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(text(), text(), 0..4)
}

fn resource() -> impl Strategy<Value = Resource> {
    prop_oneof![
        (
            text(),
            any::<bool>(),
            proptest::option::of(text()),
            proptest::option::of(text()),
            texts()
        )
            .prop_map(|(name, system, home, shell, groups)| Resource::User(User {
                name,
                system,
                home,
                shell,
                groups
            })),
        (text(), text(), text(), text()).prop_map(
            |(path, owner, group, mode)| Resource::Directory(Directory {
                path,
                owner,
                group,
                mode
            })
        ),
        (
            text(),
            proptest::option::of(text()),
            proptest::option::of(text()),
            text(),
            text(),
            text()
        )
            .prop_map(
                |(path, content, content_base64, owner, group, mode)| Resource::File(File {
                    path,
                    content,
                    content_base64,
                    owner,
                    group,
                    mode
                })
            ),
        (text(), text()).prop_map(|(path, target)| Resource::Link(Link { path, target })),
        (text(), text(), text(), text(), text()).prop_map(|(path, sealed, owner, group, mode)| {
            Resource::Secret(Secret {
                path,
                sealed,
                owner,
                group,
                mode,
            })
        }),
        (text(), text(), text(), text(), text()).prop_map(
            |(path, artifact, artifact_digest, owner, group)| {
                Resource::Archive(Archive {
                    path,
                    artifact,
                    artifact_digest,
                    owner,
                    group,
                })
            }
        ),
        (text(), texts(), text(), map(), texts(), text()).prop_map(
            |(name, exec, user, environment, after, restart)| {
                Resource::Service(Service {
                    name,
                    exec,
                    user,
                    environment,
                    after,
                    restart,
                })
            }
        ),
        (
            text(),
            text(),
            texts(),
            map(),
            proptest::collection::vec((text(), text(), any::<bool>()), 0..3),
            texts(),
            proptest::option::of(text())
        )
            .prop_map(|(name, image, command, environment, mounts, ports, user)| {
                Resource::Container(Container {
                    name,
                    image,
                    command,
                    environment,
                    mounts: mounts
                        .into_iter()
                        .map(|(source, target, read_only)| Mount {
                            source,
                            target,
                            read_only,
                        })
                        .collect(),
                    ports,
                    user,
                })
            }),
    ]
}

proptest! {
    #[test]
    fn the_shape_writer_writes_canonical_json(resource in resource(), module in text(), file in text(), line in any::<u32>(), column in any::<u32>()) {
        let shape = Shape::new(resource.clone(), module, Source { file, line, column });
        let expected_shape = canonical_json(&shape.to_json());
        prop_assert_eq!(shape.canonical_bytes(), expected_shape.as_slice());
        prop_assert_eq!(shape.digest(), sha256_digest(&canonical_json(&resource.to_json())));
        prop_assert_eq!(resource.digest(), shape.digest().to_string());
        let plan = Plan::new("node", vec![shape]);
        let mut expected = canonical_json(&plan.to_json());
        expected.push(b'\n');
        prop_assert_eq!(plan.to_json_bytes(), expected);
    }
}
