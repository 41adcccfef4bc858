//! The access a consumer asks of a provider whose grants carry one (RabbitMQ): a
//! `vhost` (E212 unless a vhost name this module allows) and `permissions` with
//! `configure`, `write` and `read` regular expressions (E213 unless each parses, E303
//! for a missing or unknown field). Must not decide whether the provider takes
//! access: that is known only once it is chosen (`super::super::grants`).

use lang::value::EvalResult;
use lang::{Diagnostic, Span, Value, codes};

use super::entry::{Entry, invalid};
use crate::link::{Access, Permissions};

/// The fields of `permissions`, in the order RabbitMQ takes them.
const PERMISSION_FIELDS: &[&str] = &["configure", "write", "read"];

/// The longest vhost name RabbitMQ's management API and our manifest take.
const LONGEST_VHOST: usize = 255;

/// The entry's `vhost` and `permissions`: `Ok(None)` when it declares neither (or
/// one is wrong, with its diagnostic); permissions default to all (`.*`) in the vhost.
pub(super) fn read(
    entry: &mut Entry<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Access>> {
    let declares_vhost = entry.attrs.get(b"vhost").is_some();
    let declares_permissions = entry.attrs.get(b"permissions").is_some();
    if !declares_vhost && !declares_permissions {
        return Ok(None);
    }
    let span = entry.field_span(if declares_vhost {
        "vhost"
    } else {
        "permissions"
    });
    let vhost = match entry.text("vhost", None, diagnostics)? {
        Some(vhost) => match why_not_vhost(&vhost) {
            None => Some(vhost),
            Some(reason) => {
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_VHOST,
                        format!(
                            "the `vhost` of {} is not a vhost name: \"{}\" ({reason})",
                            entry.what,
                            plan::display::escaped(&vhost)
                        ),
                    )
                    .with_primary(entry.field_span("vhost"), "not a vhost name")
                    .with_help("a vhost is 1 to 255 ASCII letters, digits, `_`, `-`, `.` and `/`, e.g. `vhost = \"shop\";` or the default `vhost = \"/\";`"),
                );
                None
            }
        },
        None => None,
    };
    let permissions = match entry.attrs.get(b"permissions").cloned() {
        None => Some(Permissions::all()),
        Some(value) => {
            let at = entry.field_span("permissions");
            permissions(entry, &value, at, diagnostics)?
        }
    };
    Ok(match (vhost, permissions) {
        (Some(vhost), Some(permissions)) => Some(Access {
            vhost,
            permissions,
            span,
        }),
        _ => None,
    })
}

/// Why `name` is not a vhost mesh grants, if it is not one.
fn why_not_vhost(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > LONGEST_VHOST {
        return Some("it is longer than 255 bytes");
    }
    let allowed = |byte: u8| byte.is_ascii_alphanumeric() || b"_-./".contains(&byte);
    if !name.bytes().all(allowed) {
        return Some("it has characters other than ASCII letters, digits, `_`, `-`, `.` and `/`");
    }
    // the provisioner's rule too: in the management API's URLs these are dot segments,
    // which an HTTP client resolves (`/api/permissions/../LOGIN` is `/api/LOGIN`)
    if name == "." || name == ".." {
        return Some("`.` and `..` are path segments in the URLs that manage a vhost");
    }
    None
}

/// `permissions = { configure = ...; write = ...; read = ...; }`, each a regular
/// expression RabbitMQ matches resource names against (`""` allows nothing).
fn permissions(
    entry: &mut Entry<'_>,
    value: &Value,
    span: Span,
    diagnostics: &mut Vec<Diagnostic>,
) -> EvalResult<Option<Permissions>> {
    let what = format!("`permissions` of {}", entry.what);
    let attrs = match entry.machine.force(value, span)? {
        Value::Attrs(attrs) => attrs,
        other => {
            diagnostics.push(invalid(
                format!("{what} must be a set, not {}", other.describe_type()),
                span,
                "write `permissions = { configure = \"^shop\\\\.\"; write = \".*\"; read = \".*\"; };`",
            ));
            return Ok(None);
        }
    };
    let mut permissions = Entry {
        machine: &mut *entry.machine,
        attrs,
        span,
        what,
    };
    permissions.check_keys(PERMISSION_FIELDS, diagnostics);
    let mut patterns = Vec::with_capacity(PERMISSION_FIELDS.len());
    for field in PERMISSION_FIELDS {
        let pattern = permissions.text(field, None, diagnostics)?;
        // why RabbitMQ would not take it: PCRE reads it otherwise, or it does not parse
        let refusal = pattern
            .as_deref()
            .and_then(|pattern| match unlike_in_pcre(pattern) {
                Some(reason) => Some((
                    " RabbitMQ reads alike",
                    "not read alike by RabbitMQ",
                    reason.to_string(),
                )),
                None => regex::Regex::new(pattern).err().map(|error| {
                    let reason = error.to_string();
                    let reason = reason.lines().last().unwrap_or("invalid").trim();
                    let reason = reason.trim_start_matches("error: ").to_string();
                    ("", "not a regular expression", reason)
                }),
            });
        patterns.push(match (pattern, refusal) {
            (Some(pattern), Some((alike, label, reason))) => {
                diagnostics.push(
                    Diagnostic::error(
                        codes::INVALID_PERMISSION,
                        format!(
                            "`{field}` of {} is not a regular expression{alike}: \"{}\" ({reason})",
                            permissions.what,
                            plan::display::escaped(&pattern)
                        ),
                    )
                    .with_primary(permissions.field_span(field), label)
                    .with_help("RabbitMQ matches resource names against it: write e.g. `\"^shop\\\\.\"`, `\".*\"` for all, or `\"\"` for none"),
                );
                None
            }
            (pattern, _) => pattern,
        });
    }
    Ok(match patterns.as_slice() {
        [Some(configure), Some(write), Some(read)] => Some(Permissions {
            configure: configure.clone(),
            write: write.clone(),
            read: read.clone(),
        }),
        _ => None,
    })
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

#[cfg(test)]
mod tests {
    use super::{unlike_in_pcre, why_not_vhost};

    /// `mesh-provision` refuses a manifest by this rule too: its test
    /// `permissions_follow_the_compilers_rule` holds the same patterns.
    #[test]
    fn permissions_rabbitmq_reads_alike() {
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
            assert!(unlike_in_pcre(pattern).is_some(), "{pattern}");
        }
        for pattern in taken {
            assert_eq!(unlike_in_pcre(pattern), None, "{pattern}");
            assert!(regex::Regex::new(pattern).is_ok(), "{pattern}");
        }
    }

    /// `mesh-provision` checks a manifest by this rule too: its test
    /// `vhost_names_follow_the_compilers_rule` holds the same names.
    #[test]
    fn vhost_names() {
        for good in ["/", "shop", "shop-1", "a.b_c/d", "...", ".shop", "shop/.."] {
            assert_eq!(why_not_vhost(good), None, "{good}");
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
            assert!(why_not_vhost(bad).is_some(), "{bad:?}");
        }
    }
}
