//! Quoting for the statements that cannot take parameters (`CREATE ROLE`, `ALTER ROLE`,
//! `CREATE DATABASE`). Names and verifiers are checked before they get here; quoting is
//! the second wall, not the only one. Must not build any statement itself.

/// A double-quoted identifier: `"name"`, with `"` doubled. Quoted names keep their case
/// and cannot be keywords.
pub fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// An escape-string literal, `E'...'`, with `\` and `'` doubled: it means the same
/// whatever `standard_conforming_strings` says.
pub fn literal(value: &str) -> String {
    format!("E'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_double_their_quotes() {
        assert_eq!(identifier("app1_shop_db"), "\"app1_shop_db\"");
        assert_eq!(identifier("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn literals_double_quotes_and_backslashes() {
        assert_eq!(literal("SCRAM-SHA-256$1:a$b:c"), "E'SCRAM-SHA-256$1:a$b:c'");
        assert_eq!(literal("it's \\x"), "E'it''s \\\\x'");
    }
}
