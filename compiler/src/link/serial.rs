//! How the build cache keeps the parts of a node's declarations that have no
//! serde form of their own: a span as its file id and byte range (as the worker
//! that read it numbered its files: only the link's diagnostics show spans, and a
//! build with diagnostics is never made from cached declarations), a float by its
//! bits (JSON has no NaN or infinities), so that a value read back is the value
//! written.

pub mod span {
    use lang::{FileId, Span};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(span: &Span, serializer: S) -> Result<S::Ok, S::Error> {
        (span.file.0, span.start, span.end).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Span, D::Error> {
        let (file, start, end) = <(u32, u32, u32)>::deserialize(deserializer)?;
        Ok(Span {
            file: FileId(file),
            start,
            end,
        })
    }
}

pub mod float {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(number: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        number.to_bits().serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        u64::deserialize(deserializer).map(f64::from_bits)
    }
}
