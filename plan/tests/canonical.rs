//! Canonical JSON and digests: one definition, stable under key order and whitespace.

use proptest::prelude::*;

#[test]
fn canonical_json_sorts_keys_and_drops_whitespace() {
    let value: serde_json::Value = serde_json::from_str(
        "{ \"b\": [1, 2, {\"z\": null, \"a\": true}], \"a\": \"x\\ny\", \"é\": 1.5 }",
    )
    .expect("json");
    assert_eq!(
        String::from_utf8(plan::canonical_json(&value)).expect("utf8"),
        "{\"a\":\"x\\ny\",\"b\":[1,2,{\"a\":true,\"z\":null}],\"é\":1.5}"
    );
}

#[test]
fn sha256_digest_has_the_documented_form() {
    assert_eq!(
        plan::sha256_digest(b""),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert!(plan::is_sha256_digest(&plan::sha256_digest(b"mesh")));
    assert!(!plan::is_sha256_digest("sha256:ABC"));
}

proptest! {
    #[test]
    fn strings_are_escaped_exactly_as_serde_json_does(text in any::<String>()) {
        let value = serde_json::Value::String(text.clone());
        prop_assert_eq!(plan::canonical_json(&value), serde_json::to_vec(&text).expect("serializes"));
    }

    /// Escapes anywhere in long runs: the writer checks eight bytes at a time.
    #[test]
    fn escapes_at_every_offset_of_a_run_are_written_as_serde_json_does(
        text in "([a-z/ .é]{0,11}[\"\\\\\n\t\u{1}\u{1f}\u{7f}]?){0,6}"
    ) {
        let value = serde_json::Value::String(text.clone());
        prop_assert_eq!(plan::canonical_json(&value), serde_json::to_vec(&text).expect("serializes"));
    }

    #[test]
    fn canonical_json_is_a_fixed_point_and_parses_back(
        entries in proptest::collection::btree_map("[a-zA-Z0-9_é\\\\\"\n]{0,8}", "[ -~\n\t]{0,12}", 0..8)
    ) {
        let value = serde_json::to_value(&entries).expect("map");
        let canonical = plan::canonical_json(&value);
        let reparsed: serde_json::Value = serde_json::from_slice(&canonical).expect("parses");
        prop_assert_eq!(&reparsed, &value);
        prop_assert_eq!(plan::canonical_json(&reparsed), canonical);
    }

    #[test]
    fn file_digests_are_stable_and_separate_content(content in ".{0,40}", other in ".{0,40}") {
        let make = |text: &str| plan::Resource::File(plan::File {
            path: "/etc/x".into(),
            content: Some(text.to_string()),
            content_base64: None,
            owner: "root".into(),
            group: "root".into(),
            mode: "0644".into(),
        });
        prop_assert_eq!(make(&content).digest(), make(&content).digest());
        if content != other {
            prop_assert_ne!(make(&content).digest(), make(&other).digest());
        }
    }
}
