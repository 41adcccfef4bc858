//! Plan-supplied text made safe to print: a plan may come from a hostile build
//! directory or control plane, and its names, paths, modules and contents must not
//! reach a terminal as escape sequences, fake lines or reordered (bidirectional)
//! text. The functions are `problems::escape`'s, which `mesh-provision` shares and
//! which may depend on no crate of ours; they are named here too, where the compiler
//! and the plan's own errors have always found them. Must not decide what is valid
//! (that is `check`).

pub use problems::escape::{Escape, escaped, is_bidi_control, is_unsafe_to_print, json_escaped};

#[cfg(test)]
mod tests {
    use super::*;

    /// What `json_escaped` writes is JSON that means what it meant (`problems` has no
    /// JSON reader to check it with).
    #[test]
    fn escaped_json_reads_back_as_the_same_value() {
        let json = json_escaped("{\n  \"a\":\"x\u{202E}y\u{7f}\u{9b}\"}");
        assert_eq!(json, "{\n  \"a\":\"x\\u202ey\\u007f\\u009b\"}");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["a"], "x\u{202E}y\u{7f}\u{9b}");
        assert_eq!(escaped("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }
}
