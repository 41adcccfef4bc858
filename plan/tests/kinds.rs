//! The vocabulary has exactly eight kinds, and each round-trips through plan JSON.

mod common;

use plan::{Kind, Plan};

#[test]
fn there_are_exactly_eight_kinds() {
    assert_eq!(Kind::ALL.len(), 8);
    let names: Vec<&str> = Kind::ALL.iter().map(|kind| kind.name()).collect();
    assert_eq!(
        names,
        [
            "user",
            "directory",
            "file",
            "link",
            "secret",
            "archive",
            "service",
            "container"
        ]
    );
    for kind in Kind::ALL {
        assert_eq!(Kind::from_name(kind.name()), Some(kind));
    }
}

#[test]
fn every_kind_round_trips_through_plan_json() {
    let plan = Plan::new("db1", common::every_kind());
    plan.validate().expect("the fixture is valid");
    let bytes = plan.to_json_bytes();
    assert!(bytes.ends_with(b"}\n"));
    let read = Plan::read(&bytes).expect("reads back");
    assert_eq!(read, plan);
    assert_eq!(read.to_json_bytes(), bytes);
    let kinds: Vec<Kind> = read.shapes().iter().map(|shape| shape.kind()).collect();
    assert_eq!(
        kinds,
        Kind::ALL.to_vec(),
        "canonical order is the kind order"
    );
}

#[test]
fn plan_new_sorts_and_is_independent_of_input_order() {
    let mut shapes = common::every_kind();
    let forward = Plan::new("db1", shapes.clone());
    shapes.reverse();
    let backward = Plan::new("db1", shapes);
    assert_eq!(forward.to_json_bytes(), backward.to_json_bytes());
    assert_eq!(forward.digest(), backward.digest());
}

#[test]
fn shape_digest_ignores_module_and_source_but_plan_digest_does_not() {
    let shapes = common::every_kind();
    let moved: Vec<plan::Shape> = shapes
        .iter()
        .map(|shape| plan::Shape::new(shape.resource().clone(), "elsewhere", common::source(99)))
        .collect();
    for (original, moved) in shapes.iter().zip(&moved) {
        assert_eq!(original.digest(), moved.digest());
    }
    assert_ne!(
        Plan::new("db1", shapes).digest(),
        Plan::new("db1", moved).digest()
    );
}

#[test]
fn the_plan_json_has_the_documented_layout() {
    let plan = Plan::new("db1", common::every_kind());
    let value: serde_json::Value = serde_json::from_slice(&plan.to_json_bytes()).expect("json");
    assert_eq!(value["format"], "mesh-plan/1");
    assert_eq!(value["node"], "db1");
    assert!(value["digest"].as_str().is_some_and(plan::is_sha256_digest));
    let file = &value["shapes"][2];
    assert_eq!(file["kind"], "file");
    assert_eq!(file["path"], "/etc/app/app.conf");
    assert_eq!(file["content_base64"], serde_json::Value::Null);
    assert_eq!(file["module"], "app");
    assert_eq!(file["source"]["line"], 5);
    // the shape digest is over the shape without digest, module and source
    let mut bare = file.clone();
    for key in ["digest", "module", "source"] {
        bare.as_object_mut().expect("object").remove(key);
    }
    assert_eq!(
        file["digest"],
        plan::sha256_digest(&plan::canonical_json(&bare))
    );
    // the plan digest is over the plan without digest
    let mut without = value.clone();
    without.as_object_mut().expect("object").remove("digest");
    assert_eq!(
        value["digest"],
        plan::sha256_digest(&plan::canonical_json(&without))
    );
}

#[test]
fn lookup_by_kind_and_identity() {
    let plan = Plan::new("db1", common::every_kind());
    assert!(plan.shape(Kind::File, "/etc/app/app.conf").is_some());
    assert!(plan.shape(Kind::File, "/etc/app/nope").is_none());
    assert!(plan.shape(Kind::Service, "app").is_some());
}
