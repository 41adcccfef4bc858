//! The grants manifest (`mesh-grants/1`), parsed strictly and checked whole: a manifest
//! with one bad grant is refused entirely, so that a provisioner never acts on half of
//! what the mesh meant. Must not read credential files or touch the database.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::codes::Code;

pub const FORMAT: &str = "mesh-grants/1";

/// The role whose direct members are the roles mesh manages; it never logs in.
pub const MARKER_ROLE: &str = "mesh_managed";

/// Which server the manifest is read for: each takes one form of grant, and only
/// RabbitMQ's grants carry a vhost and permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Postgres,
    Rabbitmq,
}

impl Kind {
    /// The form this server checks logins with; it never receives a password.
    pub fn form(self) -> &'static str {
        match self {
            Kind::Postgres => "scram-sha-256",
            Kind::Rabbitmq => "rabbit_password_hashing_sha256",
        }
    }

    fn server(self) -> &'static str {
        match self {
            Kind::Postgres => "PostgreSQL",
            Kind::Rabbitmq => "RabbitMQ",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    format: String,
    service: String,
    node: String,
    grants: Vec<RawGrant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    consumer: String,
    login: String,
    credential: String,
    form: String,
    #[serde(default)]
    database: Option<String>,
    #[serde(default)]
    vhost: Option<String>,
    #[serde(default)]
    permissions: Option<RawPermissions>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPermissions {
    configure: String,
    write: String,
    read: String,
}

/// A manifest that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    pub service: String,
    pub node: String,
    /// Sorted by login, logins unique.
    pub grants: Vec<Grant>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// `NODE/MODULE/NAME`, for messages.
    pub consumer: String,
    /// The role or user name: `a-z 0-9 _`, by the rule of its server (`check_login`).
    pub login: String,
    /// The credential file as the manifest names it (absolute, on the node).
    pub credential: String,
    /// Where that file is read from: `credential` inside `--root`; no two grants have
    /// the same.
    pub credential_path: PathBuf,
    /// A database the login owns, created if missing; unique across grants.
    pub database: Option<String>,
    /// RabbitMQ only: the vhost and the permissions in it.
    pub access: Option<Access>,
}

/// A RabbitMQ grant's vhost and its configure, write and read regular expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub vhost: String,
    pub configure: String,
    pub write: String,
    pub read: String,
}

/// Why a manifest is refused, by what is wrong with it: each kind has its code and its
/// help line (exhaustive matches, so a new kind cannot go without either). The reason
/// is one line, names the grant at fault, and shows manifest text only through
/// [`printable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestError {
    /// Not JSON, not an object with a list of grant objects, a field missing, unknown
    /// or of the wrong type.
    Malformed(String),
    /// A `format` other than [`FORMAT`].
    UnknownFormat(String),
    /// A grant in the form of the other server: the manifest is another provider's.
    WrongForm(String),
    /// A grant the compiler's rules or the server refuse (its login, database, vhost,
    /// permissions or credential path), or a login or database granted twice.
    InvalidGrant(String),
    /// Two grants name one credential file.
    SharedCredential(String),
}

impl ManifestError {
    /// The one-line reason.
    pub fn reason(&self) -> &str {
        match self {
            ManifestError::Malformed(reason)
            | ManifestError::UnknownFormat(reason)
            | ManifestError::WrongForm(reason)
            | ManifestError::InvalidGrant(reason)
            | ManifestError::SharedCredential(reason) => reason,
        }
    }

    pub fn code(&self) -> Code {
        match self {
            ManifestError::Malformed(_) => Code::ManifestMalformed,
            ManifestError::UnknownFormat(_) => Code::UnknownManifestFormat,
            ManifestError::WrongForm(_) | ManifestError::InvalidGrant(_) => Code::InvalidGrant,
            ManifestError::SharedCredential(_) => Code::SharedCredential,
        }
    }

    /// What to do about it.
    pub fn help(&self) -> &'static str {
        match self {
            ManifestError::Malformed(_) => {
                "the file is not what meshc writes (cut short, or edited by hand): apply the \
                 node's plan again, so that mesh-apply puts back the manifest meshc built"
            }
            ManifestError::UnknownFormat(_) => {
                "run a mesh-provision of the same release as the meshc that built the node's \
                 plan (the standard modules pin its image as a mirror in `mesh.lock`)"
            }
            ManifestError::WrongForm(_) => {
                "a PostgreSQL provider's manifest (`scram-sha-256`) takes `--postgres`, a \
                 RabbitMQ provider's (`rabbit_password_hashing_sha256`) takes `--rabbitmq`: \
                 point the provisioner at the server of the manifest's service"
            }
            ManifestError::InvalidGrant(_) => {
                "meshc refuses such a grant (E318 for a login, E212 and E213 for a vhost or a \
                 permission), so meshc did not write this manifest as it is: build with meshc \
                 and apply the node's plan again"
            }
            ManifestError::SharedCredential(_) => {
                "give each grant a credential file of its own, as meshc does \
                 (`CREDENTIALS/LOGIN`): remove the link that leads to another grant's file, \
                 or build with meshc and apply the node's plan again"
            }
        }
    }
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.reason())
    }
}

/// Parses and checks a manifest. The reason is one line and names the grant at fault.
pub fn parse(bytes: &[u8], root: Option<&Path>, kind: Kind) -> Result<Manifest, ManifestError> {
    // serde_json's messages are one line; keep it so even if that changes
    let one_line = |error: serde_json::Error| {
        let text = error.to_string();
        ManifestError::Malformed(text.lines().next().unwrap_or("not JSON").to_string())
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(one_line)?;
    // serde would also take a struct written as an array: only objects are manifests
    let grants_are_objects = value
        .get("grants")
        .and_then(serde_json::Value::as_array)
        .is_none_or(|grants| grants.iter().all(serde_json::Value::is_object));
    if !value.is_object() || !grants_are_objects {
        return Err(ManifestError::Malformed(
            "not a JSON object with a list of grant objects".to_string(),
        ));
    }
    let raw: RawManifest = serde_json::from_value(value).map_err(one_line)?;
    if raw.format != FORMAT {
        return Err(ManifestError::UnknownFormat(format!(
            "format is `{}`, this provisioner reads `{FORMAT}`",
            printable(&raw.format)
        )));
    }
    let mut logins = BTreeSet::new();
    let mut databases = BTreeSet::new();
    // credential path (as read, plain components) -> the login it is the file of
    let mut credentials: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut grants = Vec::with_capacity(raw.grants.len());
    for grant in raw.grants {
        let consumer = printable(&grant.consumer);
        let at = |reason: String| format!("grant of `{consumer}`: {reason}");
        let invalid = |reason: String| ManifestError::InvalidGrant(at(reason));
        if grant.form != kind.form() {
            return Err(ManifestError::WrongForm(at(format!(
                "form `{}` is not `{}`: {} would receive what a consumer presents",
                printable(&grant.form),
                kind.form(),
                kind.server()
            ))));
        }
        check_login(&grant.login, kind).map_err(invalid)?;
        let access = access_of(kind, grant.vhost, grant.permissions).map_err(invalid)?;
        if kind == Kind::Rabbitmq && grant.database.is_some() {
            return Err(invalid("a RabbitMQ grant has no `database`".to_string()));
        }
        if !logins.insert(grant.login.clone()) {
            return Err(invalid(format!("login `{}` is granted twice", grant.login)));
        }
        if let Some(database) = &grant.database {
            check_name(database).map_err(|reason| invalid(format!("database {reason}")))?;
            if !databases.insert(database.clone()) {
                return Err(invalid(format!(
                    "database `{database}` is asked for by two grants; a database has one owner"
                )));
            }
        }
        let credential_path = resolve_credential(&grant.credential, root)
            .map_err(|reason| invalid(format!("credential {reason}")))?;
        // two logins with one verifier: one consumer's password would open the other's
        if let Some(other) = credentials.get(&credential_path) {
            return Err(ManifestError::SharedCredential(at(format!(
                "credential `{}` is also the credential of login `{other}`; each grant \
                 has a file of its own",
                printable(&grant.credential)
            ))));
        }
        credentials.insert(credential_path.clone(), grant.login.clone());
        grants.push(Grant {
            consumer: grant.consumer,
            login: grant.login,
            credential: grant.credential,
            credential_path,
            database: grant.database,
            access,
        });
    }
    grants.sort_by(|left, right| left.login.cmp(&right.login));
    Ok(Manifest {
        service: raw.service,
        node: raw.node,
        grants,
    })
}

/// A grant's access: a vhost and permissions exactly for RabbitMQ, by the compiler's
/// rules (`compiler/src/link/declarations/access.rs`, E212 and E213; this crate may
/// depend on none of ours, so the two are kept alike by a test on each side). The
/// vhost: ASCII letters, digits, `_ - . /`, 1 to 255 bytes, not `.` or `..`. Each
/// permission: a regular expression in Rust's `regex` syntax, which RabbitMQ's PCRE
/// accepts too. RabbitMQ checks a pattern only when it is set, and a refusal then
/// would stop the reconcile after some grants and before every withdrawal.
fn access_of(
    kind: Kind,
    vhost: Option<String>,
    permissions: Option<RawPermissions>,
) -> Result<Option<Access>, String> {
    match (kind, vhost, permissions) {
        (Kind::Postgres, None, None) => Ok(None),
        (Kind::Postgres, _, _) => {
            Err("a PostgreSQL grant has no `vhost` or `permissions`".to_string())
        }
        (Kind::Rabbitmq, Some(vhost), Some(permissions)) => {
            let allowed = |byte: u8| byte.is_ascii_alphanumeric() || b"_-./".contains(&byte);
            // `.` and `..` are dot segments: the HTTP client resolves them, so
            // `PUT /api/permissions/../LOGIN` would reach `/api/LOGIN`
            if vhost.is_empty()
                || vhost.len() > 255
                || !vhost.bytes().all(allowed)
                || vhost == "."
                || vhost == ".."
            {
                return Err(format!("vhost `{}` is not a vhost name", printable(&vhost)));
            }
            for (field, pattern) in [
                ("configure", &permissions.configure),
                ("write", &permissions.write),
                ("read", &permissions.read),
            ] {
                check_pattern(field, pattern)?;
            }
            Ok(Some(Access {
                vhost,
                configure: permissions.configure,
                write: permissions.write,
                read: permissions.read,
            }))
        }
        (Kind::Rabbitmq, _, _) => {
            Err("a RabbitMQ grant needs a `vhost` and `permissions`".to_string())
        }
    }
}

/// A permission RabbitMQ will take: the compiler's check, with its wording (E213).
fn check_pattern(field: &str, pattern: &str) -> Result<(), String> {
    if let Some(reason) = unlike_in_pcre(pattern) {
        return Err(format!(
            "permission `{field}` is not a regular expression RabbitMQ reads alike: \"{}\" ({reason})",
            printable(pattern)
        ));
    }
    match regex::Regex::new(pattern) {
        Ok(_) => Ok(()),
        Err(error) => {
            // the last line of `regex`'s message says what is wrong, without the pattern
            let reason = error.to_string();
            let reason = reason.lines().last().unwrap_or("invalid").trim();
            let reason = reason.trim_start_matches("error: ");
            Err(format!(
                "permission `{field}` is not a regular expression: \"{}\" ({})",
                printable(pattern),
                printable(reason)
            ))
        }
    }
}

/// Why RabbitMQ (Erlang's `re`, PCRE) might read `pattern` otherwise than Rust's
/// `regex` does, or refuse it when it is set: `\u`, `\U`, `\p`, `\P`, `\<`, `\>`,
/// `\b{...}` escapes and `\x{...}` above FF, nested classes and class set operations
/// (`[a-z&&[^q]]`, `--`, `~~`; a POSIX class such as `[[:alpha:]]` is fine), flag
/// groups (`(?i)`, `(?-u:...)`; `(?:...)` and named groups are fine), a repetition
/// count over 1,000 (PCRE's bound is 65,535, and large counts cost every match), and
/// more than 1,024 bytes. None when it is of the syntax both read alike.
fn unlike_in_pcre(pattern: &str) -> Option<&'static str> {
    const ESCAPES: &str =
        "`\\u`, `\\U`, `\\p`, `\\P`, `\\<`, `\\>` and `\\b{...}` are not read alike by RabbitMQ";
    const CLASSES: &str =
        "a class within a class, or `&&`, `--` or `~~` in one, is not read alike by RabbitMQ";
    if pattern.len() > 1024 {
        return Some("longer than 1,024 bytes");
    }
    let bytes = pattern.as_bytes();
    let mut in_class = false;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let next = bytes.get(index + 1).copied();
        if byte == b'\\' {
            let braced = bytes.get(index + 2) == Some(&b'{');
            match next {
                Some(b'u' | b'U' | b'p' | b'P' | b'<' | b'>') => return Some(ESCAPES),
                Some(b'b' | b'B') if braced => return Some(ESCAPES),
                Some(b'x') if braced => {
                    let digits = &bytes[index + 3..];
                    let end = digits
                        .iter()
                        .position(|b| *b == b'}')
                        .unwrap_or(digits.len());
                    let value = std::str::from_utf8(&digits[..end])
                        .ok()
                        .and_then(|hex| u32::from_str_radix(hex.trim(), 16).ok());
                    if value.is_none_or(|value| value > 0xff) {
                        return Some("`\\x{...}` above FF is not read alike by RabbitMQ");
                    }
                }
                _ => {}
            }
            index += 2;
            continue;
        }
        if in_class {
            match byte {
                b']' => in_class = false,
                // a POSIX class, `[:alpha:]`, read alike
                b'[' if next == Some(b':') => {
                    let rest = &bytes[index + 2..];
                    match rest.windows(2).position(|pair| pair == b":]") {
                        Some(close) => index += 2 + close + 1,
                        None => return Some(CLASSES),
                    }
                }
                b'[' => return Some(CLASSES),
                b'&' | b'-' | b'~' if next == Some(byte) => return Some(CLASSES),
                _ => {}
            }
        } else {
            match byte {
                b'[' => {
                    in_class = true;
                    // a `]` first in a class (after a `^`) is the character itself
                    if next == Some(b'^') {
                        index += 1;
                    }
                    if bytes.get(index + 1) == Some(&b']') {
                        index += 1;
                    }
                }
                b'(' if next == Some(b'?') => {
                    let rest = &bytes[index + 2..];
                    let named = rest.starts_with(b"P<")
                        || (rest.starts_with(b"<")
                            && !rest.starts_with(b"<=")
                            && !rest.starts_with(b"<!"));
                    if !rest.starts_with(b":") && !named {
                        return Some(
                            "flag groups such as `(?i)` are not read alike by RabbitMQ; `(?:...)` is",
                        );
                    }
                }
                // `{N}`, `{N,}`, `{N,M}` (spaces allowed, as Rust allows them): each
                // count at most 1,000
                b'{' => {
                    let rest = &bytes[index + 1..];
                    let end = rest.iter().position(|byte| *byte == b'}').unwrap_or(0);
                    let counts = &rest[..end];
                    let repetition = end > 0
                        && counts
                            .iter()
                            .all(|b| b.is_ascii_digit() || *b == b',' || *b == b' ');
                    let large = |count: &[u8]| {
                        count
                            .iter()
                            .filter(|byte| byte.is_ascii_digit())
                            .fold(0u64, |n, digit| {
                                (n * 10 + u64::from(digit - b'0')).min(u64::from(u32::MAX))
                            })
                            > 1000
                    };
                    if repetition && counts.split(|byte| *byte == b',').any(large) {
                        return Some("a repetition count over 1,000");
                    }
                }
                _ => {}
            }
        }
        index += 1;
    }
    None
}

/// Role names PostgreSQL refuses (`public`, `none`) or reads as another role when
/// unquoted (`current_user`, `session_user`, `current_role`).
const RESERVED_ROLE_NAMES: [&str; 5] = [
    "public",
    "none",
    "current_user",
    "session_user",
    "current_role",
];

/// The longest PostgreSQL name (NAMEDATALEN - 1): a longer one is cut short without a
/// word, so two logins could become one role.
const LONGEST_POSTGRES_NAME: usize = 63;

/// The longest RabbitMQ user name mesh grants: RabbitMQ sets no bound, but the name is
/// a segment of the management API's URLs (as a vhost is, at most 255 too).
const LONGEST_RABBITMQ_LOGIN: usize = 255;

/// A grant's login as its server takes it, by the compiler's rule (E318 in
/// `compiler/src/link/grants.rs`; this crate may depend on none of ours, so a test on
/// each side holds the same names). PostgreSQL: a name `check_name` takes that is not
/// reserved for roles. RabbitMQ reserves none of PostgreSQL's names (`pg_`, `public`,
/// the marker role): 1 to 255 bytes of `a-z 0-9 _`.
fn check_login(login: &str, kind: Kind) -> Result<(), String> {
    match kind {
        Kind::Postgres => {
            check_name(login).map_err(|reason| format!("login {reason}"))?;
            if RESERVED_ROLE_NAMES.contains(&login) {
                // `public` and `none` fail CREATE ROLE, and that would fail the whole
                // reconcile (every other grant and withdrawal with it); the others name
                // another role wherever SQL takes them unquoted
                return Err(format!(
                    "login `{login}` is a name PostgreSQL reserves for roles"
                ));
            }
            Ok(())
        }
        Kind::Rabbitmq => check_characters(login, LONGEST_RABBITMQ_LOGIN)
            .map_err(|reason| format!("login {reason}")),
    }
}

/// 1 to `longest` bytes of `a-z 0-9 _`.
fn check_characters(name: &str, longest: usize) -> Result<(), String> {
    let shown = printable(name);
    if name.is_empty() || name.len() > longest {
        return Err(format!("`{shown}` is not 1 to {longest} characters"));
    }
    if !name
        .bytes()
        .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_')
    {
        return Err(format!(
            "`{shown}` has characters other than `a-z`, `0-9` and `_`"
        ));
    }
    Ok(())
}

/// A PostgreSQL name mesh creates: 1 to 63 bytes of `a-z 0-9 _`, not a reserved `pg_`
/// name and not the marker role. It is still always quoted.
fn check_name(name: &str) -> Result<(), String> {
    let shown = printable(name);
    check_characters(name, LONGEST_POSTGRES_NAME)?;
    if name.starts_with("pg_") {
        return Err(format!(
            "`{shown}` starts with `pg_`, which PostgreSQL reserves"
        ));
    }
    if name == MARKER_ROLE {
        return Err(format!("`{shown}` is the role that marks managed roles"));
    }
    Ok(())
}

/// An absolute path of plain components, placed inside `root` when there is one.
fn resolve_credential(credential: &str, root: Option<&Path>) -> Result<PathBuf, String> {
    let path = Path::new(credential);
    let shown = printable(credential);
    if !path.is_absolute() {
        return Err(format!("`{shown}` is not an absolute path"));
    }
    let mut relative = PathBuf::new();
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(part) => relative.push(part),
            Component::CurDir | Component::ParentDir | Component::Prefix(_) => {
                return Err(format!("`{shown}` has `.` or `..` in it"));
            }
        }
    }
    if relative.as_os_str().is_empty() {
        return Err(format!("`{shown}` names no file"));
    }
    Ok(match root {
        Some(root) => root.join(relative),
        None => Path::new("/").join(relative),
    })
}

/// A manifest string for a one-line message: control characters escaped, long text cut.
pub fn printable(text: &str) -> String {
    let escaped: String = text.chars().flat_map(char::escape_default).collect();
    if escaped.chars().count() > 80 {
        let cut: String = escaped.chars().take(77).collect();
        format!("{cut}...")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compiler refuses a permission by this rule too (E213): its test
    /// `permissions_rabbitmq_reads_alike` holds the same patterns. Each of the
    /// refused ones passed Rust's `regex` and was refused by RabbitMQ when set, which
    /// stopped the reconcile before every withdrawal.
    #[test]
    fn permissions_follow_the_compilers_rule() {
        let refused = [
            "\\u0041",
            "\\U00000041",
            "\\p{L}",
            "(?-u:\\w)",
            "(?i)shop",
            "a{65536}",
            "a{1001}",
            "a{2,5000}",
            "a{ 65536 }",
            "a{2, 5000}",
            "[a-z&&[^q]]",
            "[[a]b]",
            "[a--b]",
            "\\<word",
            "\\b{start}",
            "\\x{100}",
        ];
        let long = "a".repeat(1025);
        let taken = [
            "",
            ".*",
            "^mesh\\.node\\.db1$",
            "^(?:shop|bus)\\.",
            "a{2,1000}",
            "\\\\u",
            "(?P<name>a)",
            "(?<name>a)",
            "[(?]",
            "[{]",
            "a{01000}",
            "[[:alpha:]_]",
            "\\x{41}",
            "[]a]",
            "[^]a]",
            "^amq\\.gen.*",
        ];
        for pattern in refused.iter().copied().chain([long.as_str()]) {
            let error = check_pattern("configure", pattern).expect_err(pattern);
            assert!(error.contains("RabbitMQ reads alike"), "{error}");
        }
        for pattern in taken {
            assert_eq!(check_pattern("configure", pattern), Ok(()), "{pattern}");
        }
    }

    fn manifest_with(grants: &str) -> String {
        format!(
            r#"{{"format": "mesh-grants/1", "service": "postgres", "node": "db1", "grants": [{grants}]}}"#
        )
    }

    fn grant(login: &str) -> String {
        format!(
            r#"{{"consumer": "app/shop/db", "login": "{login}", "credential": "/var/lib/mesh/grants/postgres/{login}", "form": "scram-sha-256"}}"#
        )
    }

    #[test]
    fn the_documented_manifest_parses_and_sorts_by_login() {
        let text = manifest_with(&format!("{}, {}", grant("b_login"), grant("a_login")));
        let manifest = parse(text.as_bytes(), None, Kind::Postgres).unwrap();
        assert_eq!(manifest.service, "postgres");
        assert_eq!(manifest.node, "db1");
        let logins: Vec<&str> = manifest.grants.iter().map(|g| g.login.as_str()).collect();
        assert_eq!(logins, ["a_login", "b_login"]);
        assert_eq!(
            manifest.grants[0].credential_path,
            Path::new("/var/lib/mesh/grants/postgres/a_login")
        );
    }

    #[test]
    fn root_places_credentials_inside_it() {
        let text = manifest_with(&grant("app1_shop_db"));
        let manifest = parse(
            text.as_bytes(),
            Some(Path::new("/tmp/root")),
            Kind::Postgres,
        )
        .unwrap();
        assert_eq!(
            manifest.grants[0].credential_path,
            Path::new("/tmp/root/var/lib/mesh/grants/postgres/app1_shop_db")
        );
    }

    #[test]
    fn a_database_is_optional_and_one_owner_each() {
        let with_database = |login: &str, database: &str| {
            format!(
                r#"{{"consumer": "c", "login": "{login}", "credential": "/c/{login}", "form": "scram-sha-256", "database": "{database}"}}"#
            )
        };
        let text = manifest_with(&with_database("a", "shop"));
        assert_eq!(
            parse(text.as_bytes(), None, Kind::Postgres).unwrap().grants[0]
                .database
                .as_deref(),
            Some("shop")
        );
        let text = manifest_with(&format!(
            "{}, {}",
            with_database("a", "shop"),
            with_database("b", "shop")
        ));
        let error = parse(text.as_bytes(), None, Kind::Postgres).unwrap_err();
        assert!(
            error
                .reason()
                .contains("database `shop` is asked for by two grants"),
            "{error}"
        );
        assert_eq!(error.code(), Code::InvalidGrant);
    }

    #[test]
    fn two_grants_naming_one_credential_file_are_refused() {
        let at = |login: &str, credential: &str| {
            format!(
                r#"{{"consumer": "c/{login}", "login": "{login}", "credential": "{credential}", "form": "scram-sha-256"}}"#
            )
        };
        for second in ["/c/a", "/c//a", "/c/a/", "//c/./a"] {
            let text = manifest_with(&format!("{}, {}", at("a", "/c/a"), at("b", second)));
            let error = parse(text.as_bytes(), None, Kind::Postgres).unwrap_err();
            // `Path::components` reads `//c/./a` as `/c/a`, as the kernel does
            let expected = format!(
                "grant of `c/b`: credential `{second}` is also the credential of login `a`"
            );
            assert!(error.reason().contains(&expected), "{second}: {error}");
            assert_eq!(error.code(), Code::SharedCredential);
        }
        let text = manifest_with(&format!("{}, {}", at("a", "/c/a"), at("b", "/c/b")));
        assert!(parse(text.as_bytes(), None, Kind::Postgres).is_ok());
    }

    #[test]
    fn bad_manifests_are_refused_whole_with_a_reason() {
        let cases: Vec<(String, Code, &str)> = vec![
            ("{".to_string(), Code::ManifestMalformed, "EOF"),
            ("[]".to_string(), Code::ManifestMalformed, "not a JSON object"),
            (r#"["mesh-grants/1", "postgres", "db1", []]"#.to_string(), Code::ManifestMalformed, "not a JSON object"),
            (manifest_with(r#"["c", "a", "/c/a", "scram-sha-256"]"#), Code::ManifestMalformed, "grant objects"),
            (r#"{"format": "mesh-grants/1", "service": "postgres", "node": "db1", "grants": {}}"#.to_string(), Code::ManifestMalformed, "invalid type"),
            (
                r#"{"format": "mesh-grants/2", "service": "postgres", "node": "db1", "grants": []}"#.to_string(),
                Code::UnknownManifestFormat,
                "format is `mesh-grants/2`",
            ),
            (
                r#"{"format": "mesh-grants/1", "service": "postgres", "node": "db1", "grants": [], "extra": 1}"#.to_string(),
                Code::ManifestMalformed,
                "unknown field `extra`",
            ),
            (
                manifest_with(r#"{"consumer": "c", "login": "a", "credential": "/c/a"}"#),
                Code::ManifestMalformed,
                "missing field `form`",
            ),
            (
                manifest_with(r#"{"consumer": "c", "login": "a", "credential": "/c/a", "form": "plain"}"#),
                Code::InvalidGrant,
                "form `plain`",
            ),
            (manifest_with(&format!("{}, {}", grant("a"), grant("a"))), Code::InvalidGrant, "granted twice"),
            (manifest_with(&grant("Robert")), Code::InvalidGrant, "characters other than"),
            (manifest_with(&grant("a\\\"; DROP ROLE postgres; --")), Code::InvalidGrant, "characters other than"),
            (manifest_with(&grant("pg_signal_backend")), Code::InvalidGrant, "starts with `pg_`"),
            (manifest_with(&grant("mesh_managed")), Code::InvalidGrant, "marks managed roles"),
            (manifest_with(&grant("public")), Code::InvalidGrant, "reserves for roles"),
            (manifest_with(&grant("none")), Code::InvalidGrant, "reserves for roles"),
            (manifest_with(&grant("current_user")), Code::InvalidGrant, "reserves for roles"),
            (manifest_with(&grant("session_user")), Code::InvalidGrant, "reserves for roles"),
            (manifest_with(&grant("current_role")), Code::InvalidGrant, "reserves for roles"),
            (manifest_with(&grant("")), Code::InvalidGrant, "1 to 63"),
            (manifest_with(&grant(&"a".repeat(64))), Code::InvalidGrant, "1 to 63"),
            (
                manifest_with(r#"{"consumer": "c", "login": "a", "credential": "relative/a", "form": "scram-sha-256"}"#),
                Code::InvalidGrant,
                "not an absolute path",
            ),
            (
                manifest_with(r#"{"consumer": "c", "login": "a", "credential": "/var/lib/../../etc/shadow", "form": "scram-sha-256"}"#),
                Code::InvalidGrant,
                "`..`",
            ),
            (
                manifest_with(r#"{"consumer": "c", "login": "a", "credential": "/", "form": "scram-sha-256"}"#),
                Code::InvalidGrant,
                "names no file",
            ),
        ];
        for (text, code, expected) in cases {
            let error = parse(text.as_bytes(), None, Kind::Postgres).expect_err(&text);
            assert!(error.reason().contains(expected), "{text}: {error}");
            assert!(!error.reason().contains('\n'), "{error}");
            assert_eq!(error.code(), code, "{text}: {error}");
        }
    }

    #[test]
    fn a_rabbitmq_grant_carries_its_vhost_and_permissions() {
        let grant = |extra: &str| {
            format!(
                r#"{{"format": "mesh-grants/1", "service": "amqp", "node": "mq1", "grants": [{{"consumer": "c", "login": "app_shop_bus", "credential": "/c/a", "form": "rabbit_password_hashing_sha256"{extra}}}]}}"#
            )
        };
        let good = grant(
            r#", "vhost": "shop", "permissions": {"configure": "", "write": "^shop\\.", "read": ".*"}"#,
        );
        let manifest = parse(good.as_bytes(), None, Kind::Rabbitmq).unwrap();
        assert_eq!(
            manifest.grants[0].access,
            Some(Access {
                vhost: "shop".to_string(),
                configure: String::new(),
                write: "^shop\\.".to_string(),
                read: ".*".to_string(),
            })
        );
        let refused = parse(good.as_bytes(), None, Kind::Postgres).unwrap_err();
        assert!(
            refused
                .reason()
                .contains("form `rabbit_password_hashing_sha256`"),
            "{refused}"
        );
        // the other server's manifest: E603, with the help that names the flags
        assert!(
            matches!(refused, ManifestError::WrongForm(_)),
            "{refused:?}"
        );
        assert_eq!(refused.code(), Code::InvalidGrant);
        assert!(refused.help().contains("`--rabbitmq`"));
        for (extra, expected) in [
            ("", "needs a `vhost` and `permissions`"),
            (r#", "vhost": "shop""#, "needs a `vhost` and `permissions`"),
            (
                r#", "vhost": "a b", "permissions": {"configure": "", "write": "", "read": ""}"#,
                "not a vhost name",
            ),
            (
                r#", "vhost": "..", "permissions": {"configure": "", "write": "", "read": ""}"#,
                "not a vhost name",
            ),
            (
                r#", "vhost": ".", "permissions": {"configure": "", "write": "", "read": ""}"#,
                "not a vhost name",
            ),
            (
                r#", "vhost": "shop", "permissions": {"configure": "", "write": ""}"#,
                "missing field `read`",
            ),
            (
                r#", "vhost": "shop", "permissions": {"configure": "^shop(", "write": "", "read": ""}"#,
                "permission `configure` is not a regular expression: \"^shop(\" (unclosed group)",
            ),
            (
                r#", "vhost": "shop", "permissions": {"configure": "", "write": "[z-a]", "read": ""}"#,
                "permission `write` is not a regular expression",
            ),
            (
                // look-behind: PCRE has it, the compiler's rule does not
                r#", "vhost": "shop", "permissions": {"configure": "", "write": "", "read": "(?<=a)b"}"#,
                "permission `read` is not a regular expression",
            ),
            (
                r#", "vhost": "shop", "permissions": {"configure": "", "write": "", "read": "", "admin": ""}"#,
                "unknown field `admin`",
            ),
        ] {
            let error = parse(grant(extra).as_bytes(), None, Kind::Rabbitmq).unwrap_err();
            assert!(error.reason().contains(expected), "{extra}: {error}");
        }
    }

    /// The same names as the compiler's test of its rule (`vhost_names` in
    /// `compiler/src/link/declarations/access.rs`): what one refuses, so does the other.
    #[test]
    fn vhost_names_follow_the_compilers_rule() {
        let manifest = |vhost: &str| {
            let grant = serde_json::json!({
                "consumer": "c", "login": "a", "credential": "/c/a",
                "form": "rabbit_password_hashing_sha256", "vhost": vhost,
                "permissions": {"configure": "", "write": "", "read": ""},
            });
            manifest_with(&grant.to_string())
        };
        for good in ["/", "shop", "shop-1", "a.b_c/d", "...", ".shop", "shop/.."] {
            assert!(
                parse(manifest(good).as_bytes(), None, Kind::Rabbitmq).is_ok(),
                "{good}"
            );
        }
        for bad in [
            "",
            "shop vhost",
            "caf\u{e9}",
            "a\nb",
            &"a".repeat(256),
            ".",
            "..",
        ] {
            let error = parse(manifest(bad).as_bytes(), None, Kind::Rabbitmq).unwrap_err();
            assert!(
                error.reason().contains("not a vhost name"),
                "{bad:?}: {error}"
            );
        }
    }

    /// The same names as the compiler's test of its rule (`login_names` in
    /// `compiler/src/link/grants.rs`): what one refuses, so does the other.
    #[test]
    fn login_names_follow_the_compilers_rule() {
        let manifest = |login: &str, kind: Kind| {
            let mut grant = serde_json::json!({
                "consumer": "c", "login": login, "credential": "/c/a", "form": kind.form(),
            });
            if kind == Kind::Rabbitmq {
                grant["vhost"] = "/".into();
                grant["permissions"] =
                    serde_json::json!({"configure": "", "write": "", "read": ""});
            }
            manifest_with(&grant.to_string())
        };
        let taken = |login: &str, kind: Kind| parse(manifest(login, kind).as_bytes(), None, kind);
        let long = |bytes: usize| "a".repeat(bytes);
        let taken_by_both = [
            "app1_shop_db".to_string(),
            "a".to_string(),
            "pg".to_string(),
            "pgx_app_bus".to_string(),
            "app_pg_bus".to_string(),
            "public_x".to_string(),
            "mesh_managed_x".to_string(),
            long(63),
        ];
        // RabbitMQ reserves none of PostgreSQL's names
        let rabbitmq_only = [
            "pg_app_bus".to_string(),
            "pg_".to_string(),
            "pg_signal_backend".to_string(),
            "public".to_string(),
            "none".to_string(),
            "current_user".to_string(),
            "session_user".to_string(),
            "current_role".to_string(),
            "mesh_managed".to_string(),
            long(64),
            long(255),
        ];
        let taken_by_neither = [
            String::new(),
            long(256),
            "Robert".to_string(),
            "app-1_shop_db".to_string(),
            "caf\u{e9}".to_string(),
            "a b".to_string(),
        ];
        for login in &taken_by_both {
            assert!(taken(login, Kind::Postgres).is_ok(), "{login}");
            assert!(taken(login, Kind::Rabbitmq).is_ok(), "{login}");
        }
        for login in &rabbitmq_only {
            let error = taken(login, Kind::Postgres).unwrap_err();
            assert!(
                error.reason().starts_with("grant of `c`: login"),
                "{login}: {error}"
            );
            assert!(taken(login, Kind::Rabbitmq).is_ok(), "{login}");
        }
        for login in &taken_by_neither {
            for kind in [Kind::Postgres, Kind::Rabbitmq] {
                let error = taken(login, kind).unwrap_err();
                assert!(
                    error.reason().starts_with("grant of `c`: login"),
                    "{login:?} {kind:?}: {error}"
                );
            }
        }
    }

    #[test]
    fn printable_escapes_and_cuts() {
        assert_eq!(printable("a\nb"), "a\\nb");
        assert_eq!(printable(&"x".repeat(100)).len(), 80);
    }
}
