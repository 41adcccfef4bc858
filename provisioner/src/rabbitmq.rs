//! One reconcile against RabbitMQ, through its management HTTP API: make the users
//! mesh manages (tagged `mesh-managed`) match the grants: each with its password hash
//! and exactly its permissions in its vhost (created if missing, never deleted); a
//! managed user nobody is granted may open no connection (its `max-connections`
//! limit is 0: PostgreSQL's NOLOGIN, whatever the mechanism, x509 included), loses
//! every permission, gets a hash no password matches and its connections closed, and
//! is kept with whatever it owns. Must never change a user without the tag, and never
//! put a hash into an error or a URL.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use zeroize::Zeroizing;

use crate::Problem;
use crate::codes::Code;
use crate::credential::Verifier;
use crate::manifest::Access;
use crate::reconcile::{Action, Outcome};

/// The tag that marks the users mesh manages; no other user is ever changed.
pub const MANAGED_TAG: &str = "mesh-managed";

/// The hashing algorithm of every hash mesh sets.
const HASHING_ALGORITHM: &str = "rabbit_password_hashing_sha256";

/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Where the management API is and whom to act as (`--rabbitmq`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// `http://HOST:PORT`, without a trailing slash.
    pub base: String,
    pub user: String,
}

impl Endpoint {
    /// `http://USER@HOST:PORT`: plain HTTP (the API is reached on the node itself),
    /// an administrator's name and no password (that is `--password-file`'s). The
    /// reason never quotes the URL, which might carry a password.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let shape = "`--rabbitmq` is not http://USER@HOST:PORT";
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("{shape}: it must start with `http://` (this provisioner speaks no TLS)")
        })?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, host) = rest
            .split_once('@')
            .ok_or_else(|| format!("{shape}: it names no administrator"))?;
        if user.contains(':') {
            return Err(format!(
                "{shape}: it holds a password; give it with `--password-file`"
            ));
        }
        let printable = |text: &str| text.bytes().all(|byte| byte.is_ascii_graphic());
        if user.is_empty() || !printable(user) || user.contains('/') {
            return Err(format!(
                "{shape}: the administrator's name is empty or not printable"
            ));
        }
        if host.is_empty() || !printable(host) || host.contains(['/', '@', '?', '#']) {
            return Err(format!("{shape}: no HOST:PORT after `@`"));
        }
        Ok(Endpoint {
            base: format!("http://{host}"),
            user: user.to_string(),
        })
    }
}

/// A user the manifest grants, with its hash read for this reconcile only.
pub struct DesiredUser {
    pub login: String,
    pub hash: Verifier,
    pub access: Access,
}

/// A user as RabbitMQ has it.
struct ExistingUser {
    /// Empty when the user has no password.
    password_hash: Zeroizing<String>,
    managed: bool,
    /// A user mesh never makes: it has a tag besides `mesh-managed` (mesh gives that
    /// one only: `administrator`, `management`, `policymaker`, `monitoring` reach
    /// other users' queues or the broker's settings), or it is the administrator the
    /// provisioner acts as. Never given a password or withdrawn, even if tagged
    /// `mesh-managed`: that tag is then a mistake, or the work of another administrator.
    privileged: bool,
}

/// One user's permissions in one vhost.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Granted {
    configure: String,
    write: String,
    read: String,
}

/// A session with the management API.
struct Api {
    agent: ureq::Agent,
    base: String,
    authorization: Zeroizing<String>,
    /// The administrator the requests are made as.
    user: String,
}

/// Why a request failed, as one line; a failed request stops the reconcile.
#[derive(Debug)]
enum Failed {
    /// No answer: nothing listens there, or the connection broke (E614).
    Unreachable(String),
    /// An answer that refuses (an HTTP error status) or is not JSON (E615).
    Refused { status: Option<u16>, reason: String },
}

impl Failed {
    /// The problem it is, with the rest of the reconcile put off.
    fn problem(self) -> Problem {
        let later = "; the rest waits for the next reconcile";
        match self {
            Failed::Unreachable(reason) => Problem::new(
                Code::RabbitmqUnreachable,
                format!("{reason}{later}"),
                "check that RabbitMQ runs with its management plugin \
                 (`rabbitmq-plugins enable rabbitmq_management`) at the address `--rabbitmq` \
                 names; watching, the provisioner tries again at every poll",
            ),
            Failed::Refused { status, reason } => Problem::new(
                Code::RabbitmqRefused,
                format!("{reason}{later}"),
                match status {
                    Some(401) => {
                        "RabbitMQ did not let the administrator in: check the user `--rabbitmq` \
                         names and the password in `--password-file` (its first line)"
                    }
                    Some(403) => {
                        "the user `--rabbitmq` names is not allowed this: give it the \
                         `administrator` tag, which managing users, vhosts and permissions needs"
                    }
                    _ => {
                        "read RabbitMQ's answer and its log; watching, the provisioner tries \
                         again at every poll"
                    }
                },
            ),
        }
    }
}

impl Api {
    fn new(endpoint: &Endpoint, password: &str) -> Api {
        let credentials = Zeroizing::new(format!("{}:{password}", endpoint.user));
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials.as_bytes());
        Api {
            agent: ureq::AgentBuilder::new().timeout(TIMEOUT).build(),
            base: endpoint.base.clone(),
            authorization: Zeroizing::new(format!("Basic {encoded}")),
            user: endpoint.user.clone(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/api/{path}", self.base)
    }

    fn get(&self, path: &str) -> Result<Value, Failed> {
        let response = self
            .agent
            .get(&self.url(path))
            .set("Authorization", &self.authorization)
            .call()
            .map_err(|error| describe("GET", path, error, true))?;
        response.into_json().map_err(|error| Failed::Refused {
            status: None,
            reason: format!("GET /api/{path}: the answer is not JSON: {error}"),
        })
    }

    /// A PUT; `quote_answer` is false when the body holds a hash, so that nothing
    /// RabbitMQ says back about it reaches a message.
    fn put(&self, path: &str, body: &Value, quote_answer: bool) -> Result<(), Failed> {
        self.agent
            .put(&self.url(path))
            .set("Authorization", &self.authorization)
            .send_json(body)
            .map(drop)
            .map_err(|error| describe("PUT", path, error, quote_answer))
    }

    fn delete(&self, path: &str, reason: &str) -> Result<(), Failed> {
        self.agent
            .delete(&self.url(path))
            .set("Authorization", &self.authorization)
            .set("X-Reason", reason)
            .call()
            .map(drop)
            .map_err(|error| describe("DELETE", path, error, true))
    }
}

fn describe(method: &str, path: &str, error: ureq::Error, quote_answer: bool) -> Failed {
    let what = format!("{method} /api/{path}");
    match error {
        ureq::Error::Status(status, response) => {
            let reason = if quote_answer {
                response
                    .into_json::<Value>()
                    .ok()
                    .and_then(|body| {
                        body.get("reason")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .map(|reason| format!(": {}", crate::manifest::printable(&reason)))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            Failed::Refused {
                status: Some(status),
                reason: format!("{what}: RabbitMQ answered {status}{reason}"),
            }
        }
        ureq::Error::Transport(transport) => Failed::Unreachable(format!(
            "cannot reach RabbitMQ's management API for {what}: {transport}"
        )),
    }
}

/// A path segment of the API: every byte but the unreserved ones percent-encoded
/// (the default vhost `/` is `%2F`).
fn segment(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Reconciles the broker with the desired users. Never panics on what the broker
/// says; a failure is in the outcome.
pub fn reconcile(endpoint: &Endpoint, password: &str, desired: &[DesiredUser]) -> Outcome {
    let api = Api::new(endpoint, password);
    let mut outcome = Outcome::default();
    if let Err(failed) = reconcile_with(&api, desired, &mut outcome) {
        outcome.errors.push(failed.problem());
        outcome.database_failed = true;
    }
    outcome
}

/// What the broker holds, read at the start of a reconcile and kept up to date by it.
struct Held {
    users: BTreeMap<String, ExistingUser>,
    /// user -> vhost -> permissions.
    permissions: BTreeMap<String, BTreeMap<String, Granted>>,
    vhosts: BTreeSet<String>,
    /// Users whose `max-connections` limit is 0: no connection is opened as them.
    blocked: BTreeSet<String>,
    /// `GET /api/connections`, listed once, when someone is withdrawn.
    connections: Option<Value>,
}

fn reconcile_with(api: &Api, desired: &[DesiredUser], outcome: &mut Outcome) -> Result<(), Failed> {
    let mut held = Held {
        users: existing_users(&api.get("users")?, &api.user),
        permissions: existing_permissions(&api.get("permissions")?),
        vhosts: names(&api.get("vhosts")?),
        blocked: blocked_users(&api.get("user-limits")?),
        connections: None,
    };
    let wanted: BTreeSet<&str> = desired.iter().map(|user| user.login.as_str()).collect();
    let mut withdrawn = Vec::new();
    for (login, existing) in &held.users {
        if existing.managed && !wanted.contains(login.as_str()) {
            if existing.privileged {
                outcome.errors.push(privileged_error(login));
            } else {
                withdrawn.push(login.clone());
            }
        }
    }
    // withdrawals first: a grant the broker refuses (E615) ends the reconcile, and
    // must not leave a user who should be gone with its password and connections
    for login in withdrawn {
        withdraw(api, &login, &mut held, outcome)?;
    }
    for user in desired {
        grant(api, user, &mut held, outcome)?;
    }
    Ok(())
}

/// Makes one granted user what its grant says: its vhost, hash and permissions.
fn grant(
    api: &Api,
    user: &DesiredUser,
    held: &mut Held,
    outcome: &mut Outcome,
) -> Result<(), Failed> {
    let login = &user.login;
    let existing = held.users.get(login);
    if existing.is_some_and(|existing| !existing.managed) {
        outcome.errors.push(unmanaged_error(login));
        return Ok(());
    }
    if existing.is_some_and(|existing| existing.privileged) {
        outcome.errors.push(privileged_error(login));
        return Ok(());
    }
    let vhost = &user.access.vhost;
    if !held.vhosts.contains(vhost) {
        api.put(&format!("vhosts/{}", segment(vhost)), &json!({}), true)?;
        held.vhosts.insert(vhost.clone());
        outcome.actions.push(Action::VhostCreated {
            vhost: vhost.clone(),
        });
    }
    let hash = user.hash.expose();
    let login_owned = || login.clone();
    let blocked = held.blocked.contains(login);
    let hash_changed = existing.is_none_or(|existing| existing.password_hash.as_str() != hash);
    let hash_action = match existing {
        None => Some(Action::Created {
            login: login_owned(),
        }),
        // withdrawn, or limited to no connection by hand (drift, as a role set NOLOGIN)
        Some(existing) if existing.password_hash.is_empty() || blocked => Some(Action::Enabled {
            login: login_owned(),
            verifier_changed: hash_changed,
        }),
        Some(_) if hash_changed => Some(Action::Updated {
            login: login_owned(),
        }),
        Some(_) => None,
    };
    if hash_changed {
        set_user(api, login, hash)?;
    }
    let permissions_changed = permit(api, user, held)?;
    // last: it may connect once its hash and permissions are the grant's
    if blocked {
        api.delete(
            &format!("user-limits/{}/max-connections", segment(login)),
            "mesh: login granted",
        )?;
        held.blocked.remove(login);
    }
    outcome.actions.push(match hash_action {
        Some(action) => action,
        None if permissions_changed => Action::PermissionsSet {
            login: login_owned(),
            vhost: vhost.clone(),
        },
        None => Action::Unchanged {
            login: login_owned(),
        },
    });
    Ok(())
}

/// Gives a granted user exactly its grant's permissions, in its vhost and no other;
/// whether anything changed.
fn permit(api: &Api, user: &DesiredUser, held: &mut Held) -> Result<bool, Failed> {
    let login = &user.login;
    let vhost = &user.access.vhost;
    let before = held.permissions.remove(login).unwrap_or_default();
    let wanted = Granted {
        configure: user.access.configure.clone(),
        write: user.access.write.clone(),
        read: user.access.read.clone(),
    };
    let mut changed = false;
    for other in before.keys().filter(|held_vhost| *held_vhost != vhost) {
        api.delete(
            &format!("permissions/{}/{}", segment(other), segment(login)),
            "mesh: not granted in this vhost",
        )?;
        changed = true;
    }
    if before.get(vhost) != Some(&wanted) {
        api.put(
            &format!("permissions/{}/{}", segment(vhost), segment(login)),
            &json!({
                "configure": wanted.configure,
                "write": wanted.write,
                "read": wanted.read,
            }),
            true,
        )?;
        changed = true;
    }
    Ok(changed)
}

/// Withdraws a managed user nobody is granted (once: a user already limited to no
/// connection, without password and permissions, is left as it is): no new
/// connection, permissions in every vhost removed, a hash no password matches, its
/// connections closed; the user kept.
fn withdraw(api: &Api, login: &str, held: &mut Held, outcome: &mut Outcome) -> Result<(), Failed> {
    let before = held.permissions.remove(login).unwrap_or_default();
    let has_password = held
        .users
        .get(login)
        .is_some_and(|existing| !existing.password_hash.is_empty());
    let blocked = held.blocked.contains(login);
    if !has_password && before.is_empty() && blocked {
        return Ok(());
    }
    // first, and in one request: no connection opens as it from now on, whatever the
    // mechanism (EXTERNAL, with a client certificate, needs no password) and whatever
    // the rest of this withdrawal manages to do before a request fails
    if !blocked {
        api.put(
            &format!("user-limits/{}/max-connections", segment(login)),
            &json!({ "value": 0 }),
            true,
        )?;
        held.blocked.insert(login.to_string());
    }
    for vhost in before.keys() {
        api.delete(
            &format!("permissions/{}/{}", segment(vhost), segment(login)),
            "mesh: login withdrawn",
        )?;
    }
    set_user(api, login, "")?;
    outcome.actions.push(Action::Disabled {
        login: login.to_string(),
    });
    if held.connections.is_none() {
        held.connections = Some(api.get("connections")?);
    }
    let closed = close_connections(api, held.connections.as_ref(), login)?;
    if closed > 0 {
        outcome.actions.push(Action::SessionsEnded {
            login: login.to_string(),
            sessions: closed,
        });
    }
    Ok(())
}

/// Sets a managed user's hash (`""`: no password logs in) and its tag.
fn set_user(api: &Api, login: &str, hash: &str) -> Result<(), Failed> {
    let body = json!({
        "password_hash": hash,
        "hashing_algorithm": HASHING_ALGORITHM,
        "tags": MANAGED_TAG,
    });
    api.put(&format!("users/{}", segment(login)), &body, false)
}

/// Closes the connections `login` has open among those listed; how many there were.
fn close_connections(api: &Api, connections: Option<&Value>, login: &str) -> Result<u64, Failed> {
    let mut closed = 0;
    for connection in connections.and_then(Value::as_array).into_iter().flatten() {
        let user = connection.get("user").and_then(Value::as_str);
        let name = connection.get("name").and_then(Value::as_str);
        if let (Some(user), Some(name)) = (user, name)
            && user == login
        {
            api.delete(
                &format!("connections/{}", segment(name)),
                "mesh: login withdrawn",
            )?;
            closed += 1;
        }
    }
    Ok(closed)
}

/// E612: why a user tagged `mesh-managed` that mesh would never have made is left alone.
fn privileged_error(login: &str) -> Problem {
    Problem::new(
        Code::PrivilegedLogin,
        format!(
            "user `{login}` is tagged `{MANAGED_TAG}` but has more than mesh gives (another \
             tag, or it is the administrator the provisioner acts as); left alone"
        ),
        format!(
            "mesh never changes such a user: if it is not a consumer's login, remove its tag \
             `{MANAGED_TAG}`; if it is, remove its other tags (and act as another \
             administrator)"
        ),
    )
}

/// E611: why a grant whose login is a user mesh does not manage is left alone.
fn unmanaged_error(login: &str) -> Problem {
    Problem::new(
        Code::LoginTaken,
        format!(
            "user `{login}` exists and is not tagged `{MANAGED_TAG}`: mesh does not manage it, \
             so it was not touched"
        ),
        format!(
            "if the user is the consumer's from before mesh, hand it to mesh by giving it the \
             tag `{MANAGED_TAG}` (and no other); if it is someone else's, delete it or give \
             the consumer another name (the login is NODE_MODULE_NAME); the other grants went \
             ahead"
        ),
    )
}

/// `GET /api/users`: by name; tags are a list (3.9 and later) or a comma-separated
/// string (before). `acting` is the administrator the provisioner acts as.
fn existing_users(answer: &Value, acting: &str) -> BTreeMap<String, ExistingUser> {
    let mut users = BTreeMap::new();
    for user in answer.as_array().into_iter().flatten() {
        let Some(name) = user.get("name").and_then(Value::as_str) else {
            continue;
        };
        let tags: Vec<String> = match user.get("tags") {
            Some(Value::Array(tags)) => tags
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(Value::String(tags)) => {
                tags.split(',').map(|tag| tag.trim().to_string()).collect()
            }
            _ => Vec::new(),
        };
        let password_hash = user
            .get("password_hash")
            .and_then(Value::as_str)
            .unwrap_or_default();
        users.insert(
            name.to_string(),
            ExistingUser {
                password_hash: Zeroizing::new(password_hash.to_string()),
                managed: tags.iter().any(|tag| tag == MANAGED_TAG),
                privileged: name == acting
                    || tags.iter().any(|tag| !tag.is_empty() && tag != MANAGED_TAG),
            },
        );
    }
    users
}

/// `GET /api/permissions`: user -> vhost -> permissions.
fn existing_permissions(answer: &Value) -> BTreeMap<String, BTreeMap<String, Granted>> {
    let mut permissions: BTreeMap<String, BTreeMap<String, Granted>> = BTreeMap::new();
    for entry in answer.as_array().into_iter().flatten() {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
        if let (Some(user), Some(vhost), Some(configure), Some(write), Some(read)) = (
            text("user"),
            text("vhost"),
            text("configure"),
            text("write"),
            text("read"),
        ) {
            permissions.entry(user).or_default().insert(
                vhost,
                Granted {
                    configure,
                    write,
                    read,
                },
            );
        }
    }
    permissions
}

/// `GET /api/user-limits`: the users whose `max-connections` limit is 0.
fn blocked_users(answer: &Value) -> BTreeSet<String> {
    answer
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| {
            entry
                .get("value")
                .and_then(|limits| limits.get("max-connections"))
                .and_then(Value::as_i64)
                == Some(0)
        })
        .filter_map(|entry| entry.get("user").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// The `name` of each object of a list (`GET /api/vhosts`).
fn names(answer: &Value) -> BTreeSet<String> {
    answer
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("name").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_with_an_administrator_and_no_password() {
        assert_eq!(
            Endpoint::parse("http://admin@127.0.0.1:15672/"),
            Ok(Endpoint {
                base: "http://127.0.0.1:15672".to_string(),
                user: "admin".to_string()
            })
        );
        for (bad, expected) in [
            ("https://admin@host:15672", "speaks no TLS"),
            ("http://host:15672", "no administrator"),
            ("http://admin:hunter2@host:15672", "holds a password"),
            ("http://admin@", "no HOST:PORT"),
            ("http://admin@host:15672/api", "no HOST:PORT"),
        ] {
            let error = Endpoint::parse(bad).unwrap_err();
            assert!(error.contains(expected), "{bad}: {error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
    }

    #[test]
    fn a_refused_request_is_e615_and_a_401_names_the_password_file() {
        let answer = |status: u16| {
            let response = ureq::Response::new(status, "no", r#"{"reason": "Not\u001b[2J"}"#)
                .expect("a response");
            describe("GET", "users", ureq::Error::Status(status, response), true).problem()
        };
        let refused = answer(401);
        assert_eq!(refused.code, Code::RabbitmqRefused);
        assert!(
            refused
                .message
                .starts_with("GET /api/users: RabbitMQ answered 401: Not\\u{1b}[2J;"),
            "{refused:?}"
        );
        assert!(refused.help.contains("`--password-file`"), "{refused:?}");
        assert!(answer(403).help.contains("`administrator` tag"));
        assert!(answer(500).help.contains("every poll"));
        let unreachable = Failed::Unreachable("cannot reach".to_string()).problem();
        assert_eq!(unreachable.code, Code::RabbitmqUnreachable);
        assert!(unreachable.help.contains("rabbitmq_management"));
    }

    #[test]
    fn users_mesh_does_not_manage_or_would_never_make_are_e611_and_e612() {
        let taken = unmanaged_error("app_bus");
        assert_eq!(taken.code, Code::LoginTaken);
        assert!(taken.message.starts_with("user `app_bus` exists"));
        assert!(taken.help.contains("tag `mesh-managed`"));
        let privileged = privileged_error("admin");
        assert_eq!(privileged.code, Code::PrivilegedLogin);
        assert!(privileged.help.contains("remove its tag `mesh-managed`"));
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("/"), "%2F");
        assert_eq!(segment("shop.v1"), "shop.v1");
        assert_eq!(
            segment("127.0.0.1:5 -> 1:2"),
            "127.0.0.1%3A5%20-%3E%201%3A2"
        );
    }

    #[test]
    fn only_a_limit_of_no_connection_blocks() {
        let blocked = blocked_users(&json!([
            {"user": "a", "value": {"max-connections": 0}},
            {"user": "b", "value": {"max-connections": 5}},
            {"user": "c", "value": {"max-channels": 0}},
            {"user": "d", "value": {"max-connections": 0, "max-channels": 10}},
            {"value": {"max-connections": 0}},
        ]));
        assert_eq!(blocked, BTreeSet::from(["a".to_string(), "d".to_string()]));
    }

    #[test]
    fn tags_are_read_in_both_spellings() {
        let users = existing_users(
            &json!([
                {"name": "a", "password_hash": "h", "tags": ["mesh-managed"]},
                {"name": "b", "password_hash": "", "tags": "administrator,mesh-managed"},
                {"name": "guest", "password_hash": "g", "tags": ["administrator"]},
                {"name": "c", "password_hash": "h", "tags": "mesh-managed"},
            ]),
            "c",
        );
        assert!(users["a"].managed && users["b"].managed && !users["guest"].managed);
        // another tag, or the acting administrator: never mesh's to change
        assert!(!users["a"].privileged && users["b"].privileged && users["c"].privileged);
    }
}
