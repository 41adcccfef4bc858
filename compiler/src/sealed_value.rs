//! The identity of a sealed value: a random id made together with the value, kept
//! beside it in `secrets/` and recorded per secret shape in the build's manifest, so
//! that `meshc diff` can tell "the same value, sealed to a new key" from "a new value".
//! An id is never computed from the plaintext (or the ciphertext): it says which value,
//! nothing about it. Values made before ids were kept have none and are of unknown
//! identity, which is never taken for "the same".

use std::collections::BTreeMap;

/// What a sealed value is to the mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Of {
    /// A need: made for its node and read there by the module that needs it.
    Need,
    /// A grant's password, at its consumer.
    Credential,
    /// What a provider checks a grant's password with (a SCRAM verifier, or the
    /// password for `form = "plain"`).
    Grant,
}

impl Of {
    pub fn name(self) -> &'static str {
        match self {
            Of::Need => "need",
            Of::Credential => "credential",
            Of::Grant => "grant",
        }
    }

    fn from_name(name: &str) -> Option<Of> {
        [Of::Need, Of::Credential, Of::Grant]
            .into_iter()
            .find(|of| of.name() == name)
    }
}

/// Which value a sealed value holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The value's id.
    Known(String),
    /// Made before ids were kept (or recorded by a meshc that kept none).
    Unknown,
    /// Not made yet: the next `meshc build` makes a new value (a diff compiled in
    /// memory makes nothing).
    NotYetMade,
}

/// A secret shape's value as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedValue {
    /// `None` when the compiler did not say (a value not made yet).
    pub of: Option<Of>,
    pub identity: Identity,
}

/// Each node's secret shapes by path.
pub type NodeValues = BTreeMap<String, BTreeMap<String, SealedValue>>;

/// A new value id: 16 random bytes as 32 lowercase hex digits.
pub fn new_id() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).map_err(std::io::Error::other)?;
    Ok(hex::encode(bytes))
}

/// Is `text` a value id (what `new_id` makes)?
pub fn is_id(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The id kept in a store file (`NEED.value`, a grant's `value`), if it holds one.
pub fn parse_kept(text: &str) -> Option<String> {
    let id = text.trim();
    is_id(id).then(|| id.to_string())
}

/// The manifest's `secrets` member: `{ NODE: { PATH: { "of": KIND, "value": ID|null } } }`.
pub fn to_manifest(values: &NodeValues) -> serde_json::Value {
    let nodes: serde_json::Map<String, serde_json::Value> = values
        .iter()
        .map(|(node, paths)| {
            let paths: serde_json::Map<String, serde_json::Value> = paths
                .iter()
                .map(|(path, value)| {
                    let id = match &value.identity {
                        Identity::Known(id) => serde_json::Value::String(id.clone()),
                        Identity::Unknown | Identity::NotYetMade => serde_json::Value::Null,
                    };
                    let of = value
                        .of
                        .map(|of| serde_json::Value::String(of.name().to_string()))
                        .unwrap_or(serde_json::Value::Null);
                    (path.clone(), serde_json::json!({ "of": of, "value": id }))
                })
                .collect();
            (node.clone(), serde_json::Value::Object(paths))
        })
        .collect();
    serde_json::Value::Object(nodes)
}

/// The manifest's `secrets` member read back; anything malformed (or a manifest
/// from before ids were kept) reads as unknown identity.
pub fn from_manifest(value: &serde_json::Value) -> NodeValues {
    let Some(nodes) = value.as_object() else {
        return NodeValues::new();
    };
    nodes
        .iter()
        .filter_map(|(node, paths)| {
            let paths = paths.as_object()?;
            let read = paths
                .iter()
                .map(|(path, entry)| {
                    let identity = match entry["value"].as_str() {
                        Some(id) if is_id(id) => Identity::Known(id.to_string()),
                        _ => Identity::Unknown,
                    };
                    let of = entry["of"].as_str().and_then(Of::from_name);
                    (path.clone(), SealedValue { of, identity })
                })
                .collect();
            Some((node.clone(), read))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_and_round_trip_through_the_manifest() {
        let first = new_id().expect("random");
        let second = new_id().expect("random");
        assert!(is_id(&first) && is_id(&second));
        assert_ne!(first, second);
        let mut values = NodeValues::new();
        values.entry("db1".into()).or_default().insert(
            "/a".into(),
            SealedValue {
                of: Some(Of::Need),
                identity: Identity::Known(first.clone()),
            },
        );
        values.entry("db1".into()).or_default().insert(
            "/b".into(),
            SealedValue {
                of: Some(Of::Grant),
                identity: Identity::Unknown,
            },
        );
        assert_eq!(from_manifest(&to_manifest(&values)), values);
        assert_eq!(parse_kept(&format!("{first}\n")), Some(first));
        assert_eq!(parse_kept("not an id"), None);
    }
}
