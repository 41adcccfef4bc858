//! The broker's names: the `mesh` exchange, the queues and the routing keys, in one
//! place, so the publisher, the consumers and the permissions agree. Must not touch
//! the network.
//!
//! | what | queue | routing key |
//! | --- | --- | --- |
//! | a node's plans | `mesh.node.NODE` | `plan.NODE` |
//! | a node's status reports | (observers bind their own) | `status.NODE` |
//! | build requests | `mesh.builds` | `build.request` |
//! | build results | (each asker binds its own) | `build.result` |
//!
//! Bindings never use wildcards, so a node named `a.b` (dots are allowed in node
//! names) gets exactly the keys `plan.a.b` and `status.a.b`, and no other node's.

/// The one exchange everything goes through: durable, of type topic.
pub const EXCHANGE: &str = "mesh";

/// The queue that carries build requests.
pub const BUILD_QUEUE: &str = "mesh.builds";

/// The routing key of build requests.
pub const BUILD_REQUEST_KEY: &str = "build.request";

/// The routing key of build results (answers go through the exchange, never the
/// default one).
pub const BUILD_RESULT_KEY: &str = "build.result";

/// The binding key an observer uses to see every node's status reports.
pub const ALL_STATUS_KEY: &str = "status.#";

/// The broker used when none is given: the local RabbitMQ's default vhost, as guest.
pub const DEFAULT_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// The environment variable that names the broker when `--amqp` is not given.
pub const URL_VARIABLE: &str = "MESH_AMQP_URL";

/// The queue of `node`'s plans.
pub fn node_queue(node: &str) -> String {
    format!("mesh.node.{node}")
}

/// The routing key of `node`'s plans.
pub fn plan_key(node: &str) -> String {
    format!("plan.{node}")
}

/// The routing key of `node`'s status reports.
pub fn status_key(node: &str) -> String {
    format!("status.{node}")
}

/// Checks a node name before it becomes part of a queue name, a routing key or a
/// permission pattern (the same rule as plans: lowercase letters, digits, `_`, `-`,
/// `.`, `@`).
pub fn check_node(node: &str) -> Result<(), String> {
    plan::check::name(node)
}

/// The broker URL from `--amqp`, else `MESH_AMQP_URL`, else the local default.
pub fn url_or_default(given: Option<String>) -> String {
    given
        .or_else(|| std::env::var(URL_VARIABLE).ok())
        .unwrap_or_else(|| DEFAULT_URL.to_string())
}

/// The URL with its password replaced by `***`, for messages and logs.
///
/// The credentials end at the last `@` before the path. A password may hold a `/`
/// (base64 does) that was not written `%2F`: a URL parser takes it for the start of
/// the path and refuses the URL, whose message must still not show the password. So
/// when the authority (up to the first `/`) has no `@`, the last `@` of the whole URL
/// ends the credentials, if there is one and a `:` before it: a `@` in a vhost
/// (`amqp://broker:5672/a@b`) then hides the host too, which is better than showing a
/// password. A URL mistyped without its `://` (`amqp:/u:p@host`, `amqps//u:p@host`)
/// has its credentials looked for after the scheme's `:` and slashes, or after the
/// last `/` before the first `:`: the message that it does not parse quotes it.
pub fn redact(url: &str) -> String {
    let start = match url.find("://") {
        Some(index) => index + 3,
        None => match url.find(':') {
            Some(colon) if url[colon + 1..].starts_with('/') => {
                url.len() - url[colon + 1..].trim_start_matches('/').len()
            }
            Some(colon) => url[..colon].rfind('/').map_or(0, |slash| slash + 1),
            None => return url.to_string(),
        },
    };
    let (scheme, rest) = url.split_at(start);
    let authority = rest.find('/').map_or(rest, |slash| &rest[..slash]);
    let Some(at) = authority.rfind('@').or_else(|| rest.rfind('@')) else {
        return without_host(scheme, rest, authority);
    };
    let (credentials, after) = (&rest[..at], &rest[at + 1..]);
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}{user}:***@{after}"),
        None => url.to_string(),
    }
}

/// A URL with no `@` whose authority is `NAME:WORD` where `WORD` is no port (not
/// all digits): the host was left out (`amqp://user:$PASSWORD` without `@$HOST`),
/// and `WORD` is taken for a password (hidden with the rest of the authority). A
/// host with a port, or an IPv6 host in brackets, is shown as it is.
fn without_host(scheme: &str, rest: &str, authority: &str) -> String {
    let port_or_nothing = |word: &str| word.bytes().all(|byte| byte.is_ascii_digit());
    match authority.split_once(':') {
        Some((user, word)) if !authority.starts_with('[') && !port_or_nothing(word) => {
            format!("{scheme}{user}:***{}", &rest[authority.len()..])
        }
        _ => format!("{scheme}{rest}"),
    }
}

/// Whether this process was given a broker URL with a password on its command line
/// (`--amqp URL`, `--amqp=URL`): every local user can read it there
/// (`/proc/PID/cmdline`, `ps`), for as long as a listener or builder runs.
pub fn password_on_command_line() -> bool {
    let arguments: Vec<String> = std::env::args_os()
        .map(|argument| argument.to_string_lossy().into_owned())
        .collect();
    let holds_password = |url: &str| redact(url) != url;
    arguments
        .iter()
        .enumerate()
        .any(|(index, argument)| match argument.strip_prefix("--amqp") {
            Some("") => arguments
                .get(index + 1)
                .is_some_and(|url| holds_password(url)),
            Some(rest) => rest.strip_prefix('=').is_some_and(holds_password),
            None => false,
        })
}

/// What a service says when [`password_on_command_line`].
pub const PASSWORD_ON_COMMAND_LINE: &str = "warning: the password in `--amqp` can be read by every local user (`ps`, /proc/PID/cmdline) for as long as this runs: give the URL in MESH_AMQP_URL instead, from a file only root may read (systemd's EnvironmentFile=)";

/// `value` as a RabbitMQ permission regex that matches exactly it.
pub fn exact_pattern(value: &str) -> String {
    let mut pattern = String::from("^");
    for character in value.chars() {
        if "\\.^$|?*+()[]{}".contains(character) {
            pattern.push('\\');
        }
        pattern.push(character);
    }
    pattern.push('$');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("amqp://node-a:s3cret@broker:5672/%2f"),
            "amqp://node-a:***@broker:5672/%2f"
        );
        assert_eq!(redact("amqp://broker/%2f"), "amqp://broker/%2f");
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn a_password_with_a_slash_or_an_at_is_redacted_whole() {
        // `openssl rand -base64` passwords hold `/`, `+` and `=`; written into the URL
        // as they are, the URL does not parse, and its message showed the password
        for (url, shown) in [
            (
                "amqp://operator:hunt/er2@broker:5672/%2f",
                "amqp://operator:***@broker:5672/%2f",
            ),
            (
                "amqp://operator:a/b+c=@broker",
                "amqp://operator:***@broker",
            ),
            (
                "amqp://operator:a/b@c@broker/%2f",
                "amqp://operator:***@broker/%2f",
            ),
            (
                "amqp://operator:p@ss@broker/%2f",
                "amqp://operator:***@broker/%2f",
            ),
            (
                "amqp://operator:p?s#s@broker/%2f",
                "amqp://operator:***@broker/%2f",
            ),
            // no credentials: a `@` in the vhost is left alone
            ("amqp://broker/a@b", "amqp://broker/a@b"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
        // mistyped without `://`: the URL does not parse, and its message quotes it
        for (url, shown) in [
            ("amqps//u:PASS@127.0.0.1/", "amqps//u:***@127.0.0.1/"),
            ("amqp:/u:PASS@127.0.0.1:1/", "amqp:/u:***@127.0.0.1:1/"),
            // read as user `amqp`: the password is hidden all the same
            ("amqp:u:PASS@broker/%2f", "amqp:***@broker/%2f"),
            ("u:PASS@broker", "u:***@broker"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
        // the host left out: what follows the user's `:` is no port, but a password
        for (url, shown) in [
            ("amqp://op:SecretPw", "amqp://op:***"),
            ("amqp://op:SecretPw/%2f", "amqp://op:***/%2f"),
            ("amqps://op:5ecret", "amqps://op:***"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
        for url in [
            "amqp://broker:5672",
            "amqp://broker:5672/%2f",
            "amqp://broker:/%2f",
            "amqp://[::1]:5672/%2f",
        ] {
            assert_eq!(redact(url), url, "a port is no password");
        }
        // a port and a `@` in the vhost: the host is hidden with what might be a password
        let shown = redact("amqp://broker:5672/a@b");
        assert!(!shown.contains("5672"), "{shown}");
    }

    #[test]
    fn patterns_match_exactly() {
        assert_eq!(exact_pattern("mesh.node.db1"), "^mesh\\.node\\.db1$");
        assert_eq!(exact_pattern("status.a@b"), "^status\\.a@b$");
    }

    #[test]
    fn keys_of_a_dotted_node() {
        assert_eq!(node_queue("a.b"), "mesh.node.a.b");
        assert_eq!(plan_key("a.b"), "plan.a.b");
        assert_eq!(status_key("a.b"), "status.a.b");
    }
}
