//! Plan reading refuses what it must: bad JSON, unknown versions, digest mismatches,
//! unknown kinds and fields, tampered shapes, duplicates and conflicts.

mod common;

use plan::{Plan, PlanError};
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_slice(&Plan::new("db1", common::every_kind()).to_json_bytes()).expect("json")
}

/// Re-signs the plan digest after an edit, as an attacker with the plan but not the
/// shape digests' inputs would.
fn resign(mut value: Value) -> Vec<u8> {
    let object = value.as_object_mut().expect("object");
    object.remove("digest");
    let digest = plan::sha256_digest(&plan::canonical_json(&Value::Object(object.clone())));
    object.insert("digest".into(), Value::String(digest));
    plan::canonical_json(&value)
}

fn resign_shapes(mut value: Value) -> Vec<u8> {
    for shape in value["shapes"].as_array_mut().expect("shapes") {
        let object = shape.as_object_mut().expect("shape");
        let mut bare = object.clone();
        for key in ["digest", "module", "source"] {
            bare.remove(key);
        }
        let digest = plan::sha256_digest(&plan::canonical_json(&Value::Object(bare)));
        object.insert("digest".into(), Value::String(digest));
    }
    resign(value)
}

#[test]
fn reads_with_any_whitespace_and_key_order() {
    let pretty = serde_json::to_vec_pretty(&fixture()).expect("pretty");
    assert!(Plan::read(&pretty).is_ok());
}

#[test]
fn truncated_plan_is_refused() {
    let bytes = Plan::new("db1", common::every_kind()).to_json_bytes();
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 2] {
        let error = Plan::read(&bytes[..cut]).expect_err("truncated");
        assert!(matches!(error, PlanError::NotJson { .. }), "{error}");
    }
}

#[test]
fn wrong_plan_digest_is_refused() {
    let mut value = fixture();
    value["digest"] = Value::String(plan::sha256_digest(b"other"));
    let error = Plan::read(&plan::canonical_json(&value)).expect_err("wrong digest");
    assert!(matches!(error, PlanError::DigestMismatch { .. }), "{error}");
}

#[test]
fn edited_plan_without_new_digest_is_refused() {
    let mut value = fixture();
    value["node"] = Value::String("db2".into());
    let error = Plan::read(&plan::canonical_json(&value)).expect_err("edited");
    assert!(matches!(error, PlanError::DigestMismatch { .. }), "{error}");
}

#[test]
fn tampered_shape_is_refused_even_with_a_resigned_plan() {
    let mut value = fixture();
    value["shapes"][2]["content"] = Value::String("evil\n".into());
    let error = Plan::read(&resign(value)).expect_err("tampered");
    assert!(
        matches!(error, PlanError::ShapeDigestMismatch { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("file `/etc/app/app.conf`"),
        "{error}"
    );
}

#[test]
fn unknown_format_version_is_refused() {
    let mut value = fixture();
    value["format"] = Value::String("mesh-plan/2".into());
    let error = Plan::read(&resign(value)).expect_err("version");
    assert_eq!(
        error,
        PlanError::UnknownFormat {
            found: "mesh-plan/2".into()
        }
    );
}

#[test]
fn unknown_kind_is_refused() {
    let mut value = fixture();
    value["shapes"][0]["kind"] = Value::String("cronjob".into());
    let error = Plan::read(&resign(value)).expect_err("kind");
    assert!(
        matches!(error, PlanError::UnknownKind { ref kind, .. } if kind == "cronjob"),
        "{error}"
    );
}

#[test]
fn unknown_field_is_refused() {
    let mut value = fixture();
    value["shapes"][2]["setuid"] = Value::Bool(true);
    let error = Plan::read(&resign_shapes(value)).expect_err("field");
    assert!(
        matches!(error, PlanError::UnknownField { ref field, .. } if field == "setuid"),
        "{error}"
    );
}

#[test]
fn unknown_top_level_field_is_refused() {
    let mut value = fixture();
    value["extra"] = Value::Bool(true);
    let error = Plan::read(&resign(value)).expect_err("field");
    assert!(matches!(error, PlanError::Malformed { .. }), "{error}");
}

#[test]
fn missing_field_is_refused() {
    let mut value = fixture();
    value["shapes"][2]
        .as_object_mut()
        .expect("shape")
        .remove("content_base64");
    let error = Plan::read(&resign_shapes(value)).expect_err("missing");
    assert!(
        matches!(error, PlanError::MissingField { ref field, .. } if field == "content_base64"),
        "{error}"
    );
}

#[test]
fn invalid_values_are_refused() {
    let cases: Vec<(&str, &str, Value)> = vec![
        ("file", "path", Value::String("etc/relative".into())),
        ("file", "path", Value::String("/etc/../shadow".into())),
        ("file", "mode", Value::String("4755".into())),
        ("file", "mode", Value::String("644".into())),
        ("file", "content_base64", Value::String("aGk=".into())),
        ("link", "target", Value::String(String::new())),
        ("secret", "sealed", Value::String("plaintext".into())),
        ("archive", "artifact", Value::String("../x.tar".into())),
        (
            "archive",
            "artifact_digest",
            Value::String("sha256:abc".into()),
        ),
        ("service", "exec", serde_json::json!(["relative/bin"])),
        ("service", "restart", Value::String("sometimes".into())),
        ("service", "environment", serde_json::json!({"A": "x\ny"})),
        ("user", "name", Value::String("Root".into())),
        ("user", "shell", Value::Number(1.into())),
        (
            "container",
            "image",
            Value::String("docker.io/library/redis:7".into()),
        ),
        ("container", "ports", serde_json::json!(["99999:80"])),
        (
            "container",
            "mounts",
            serde_json::json!([{"source": "/a:b", "target": "/c", "read_only": false}]),
        ),
    ];
    for (kind, field, bad) in cases {
        let mut value = fixture();
        let shapes = value["shapes"].as_array_mut().expect("shapes");
        let shape = shapes
            .iter_mut()
            .find(|shape| shape["kind"] == kind)
            .expect("kind in fixture");
        shape[field] = bad.clone();
        let error = Plan::read(&resign_shapes(value)).expect_err("invalid value");
        let expected_field = if field == "content_base64" {
            "content"
        } else {
            field
        };
        assert!(
            matches!(error, PlanError::InvalidField { field: ref found, .. } if found == expected_field),
            "{kind} {field} = {bad}: {error}"
        );
    }
}

#[test]
fn duplicate_identity_is_refused() {
    let mut value = fixture();
    let shapes = value["shapes"].as_array_mut().expect("shapes");
    let copy = shapes[2].clone();
    shapes.insert(2, copy);
    let error = Plan::read(&resign(value)).expect_err("duplicate");
    assert!(matches!(error, PlanError::Duplicate { .. }), "{error}");
}

#[test]
fn out_of_order_shapes_are_refused() {
    let mut value = fixture();
    value["shapes"].as_array_mut().expect("shapes").swap(0, 1);
    let error = Plan::read(&resign(value)).expect_err("order");
    assert!(
        matches!(error, PlanError::NotCanonicalOrder { .. }),
        "{error}"
    );
}

#[test]
fn shapes_sharing_a_path_or_unit_conflict() {
    let mut shapes = common::every_kind();
    shapes.push(plan::Shape::new(
        plan::Resource::Link(plan::Link {
            path: "/etc/app/app.conf".into(),
            target: "/dev/null".into(),
        }),
        "other",
        common::source(1),
    ));
    let error = Plan::new("db1", shapes).validate().expect_err("conflict");
    assert!(matches!(error, PlanError::Conflict { .. }), "{error}");

    let mut shapes = common::every_kind();
    shapes.push(plan::Shape::new(
        plan::Resource::File(plan::File {
            path: "/srv/app/inside".into(),
            content: Some(String::new()),
            content_base64: None,
            owner: "root".into(),
            group: "root".into(),
            mode: "0644".into(),
        }),
        "other",
        common::source(1),
    ));
    let error = Plan::new("db1", shapes)
        .validate()
        .expect_err("inside archive");
    assert!(error.to_string().contains("archive"), "{error}");
}

#[test]
fn errors_are_lowercase_and_name_things_in_backticks() {
    let mut value = fixture();
    value["shapes"][2]["content"] = Value::String("evil\n".into());
    let error = Plan::read(&resign(value))
        .expect_err("tampered")
        .to_string();
    assert!(
        error.starts_with(|first: char| first.is_lowercase()),
        "{error}"
    );
    assert!(!error.ends_with('.'), "{error}");
}
