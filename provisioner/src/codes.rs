//! The provisioner's error codes (E6xx) in one registry, declared with `problems`'s
//! `codes!` as the applier declares its own: each code's number and title come from
//! one exhaustive `match` each (tvix's `ErrorKind::code`), so a code cannot exist
//! without both, and each has a book page (`tests/tests/error_pages.rs` reads
//! `TABLE`). Codes are never reused; this file must not grow anything but the
//! registry.

problems::codes! {
    /// One provisioner error code.
    ManifestUnreadable = "E600", "the grants manifest cannot be read";
    ManifestMalformed = "E601", "the grants manifest is not a grants manifest";
    UnknownManifestFormat = "E602", "unknown grants manifest format";
    InvalidGrant = "E603", "a grant is invalid";
    SharedCredential = "E604", "two grants share one credential file";
    CredentialUnreadable = "E605", "a credential file cannot be read";
    NotAVerifier = "E606", "a credential file does not hold what the server checks logins with";
    PasswordFileUnusable = "E607", "the password file cannot be used";
    PostgresUnreachable = "E608", "PostgreSQL cannot be reached";
    StatementFailed = "E609", "a PostgreSQL statement failed";
    VerifierNotStored = "E610", "PostgreSQL did not store a verifier as given";
    LoginTaken = "E611", "a login's name is taken by a role or user mesh does not manage";
    PrivilegedLogin = "E612", "a managed role or user has more than mesh gives";
    SessionNotEnded = "E613", "a withdrawn login's session did not end";
    RabbitmqUnreachable = "E614", "RabbitMQ's management API cannot be reached";
    RabbitmqRefused = "E615", "RabbitMQ's management API refused a request";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_e6xx_in_order_each_once() {
        let numbers: Vec<&str> = TABLE.iter().map(|(_, number, _)| *number).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(numbers, sorted);
        for (code, number, title) in TABLE {
            assert!(number.starts_with("E6") && number.len() == 4, "{number}");
            assert_eq!(code.as_str(), *number);
            assert_eq!(code.title(), *title);
            assert_eq!(code.to_string(), *number);
        }
    }
}
