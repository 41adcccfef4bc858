//! How the build cache keeps the parts of a node's declarations that have no
//! serde form of their own: a span as its byte range only (its file is numbered by
//! the order in which one worker happened to read its files, which an incremental
//! build changes; only the link's diagnostics show spans, and a build with
//! diagnostics is never made from cached declarations, so a span read back points
//! into no file), a float by its bits (JSON has no NaN or infinities), so that a
//! value read back is the value written.

pub mod span {
    use lang::{FileId, Span};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// The file of a span read back: none of the compilation's.
    pub const NO_FILE: FileId = FileId(u32::MAX);

    pub fn serialize<S: Serializer>(span: &Span, serializer: S) -> Result<S::Ok, S::Error> {
        (span.start, span.end).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Span, D::Error> {
        let (start, end) = <(u32, u32)>::deserialize(deserializer)?;
        Ok(Span {
            file: NO_FILE,
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
