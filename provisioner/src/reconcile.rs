//! One reconcile against PostgreSQL: make the managed logins match the desired ones,
//! disable the managed logins nobody is granted and end their sessions, create the
//! databases grants ask for. Must never alter, disable or drop a role that is not a
//! direct member of `mesh_managed`, never drop anything, and never let a verifier reach
//! the server's log, its statistics views or an error message. It runs as a superuser,
//! so it must never run what another role defined: every function and catalog relation
//! it names is `pg_catalog.`-qualified, and its session searches `pg_catalog` alone
//! (`SEARCH_PATH`), for the operators and types it cannot qualify readably.

use std::collections::{BTreeMap, BTreeSet};

use postgres::{Client, Transaction};

use crate::Problem;
use crate::codes::Code;
use crate::credential::Verifier;
use crate::manifest::MARKER_ROLE;
use crate::sql::{identifier, literal};

/// Serialises provisioners that share a server (`"mesh_pro"` as a number).
const LOCK_KEY: i64 = 0x6d65_7368_5f70_726f;

/// The session's search_path: a function or operator a login creates in `public` (which
/// PUBLIC may create in before PostgreSQL 15) would otherwise be chosen over the
/// catalog's whenever its argument types match better, and run as the superuser.
/// `pg_temp` last, so that not even a temporary object is found before the catalog's.
const SEARCH_PATH: &str = "SET search_path TO pg_catalog, pg_temp";

/// How long `pg_terminate_backend` waits for a session to be gone, in milliseconds.
const TERMINATE_WAIT_MILLISECONDS: i64 = 5_000;

/// Settings a superuser may change for one transaction so that the statement after them
/// is not logged, sampled, shown in `pg_stat_activity` or kept by `pg_stat_statements`.
const QUIET: &str = "SET LOCAL log_statement = 'none'; \
     SET LOCAL log_min_error_statement = 'panic'; \
     SET LOCAL log_min_duration_statement = -1; \
     SET LOCAL log_min_duration_sample = -1; \
     SET LOCAL track_activities = off; \
     SET LOCAL pg_stat_statements.track_utility = off";

/// Back to the server's own settings for the rest of the transaction.
const UNQUIET: &str = "SET LOCAL log_statement = DEFAULT; \
     SET LOCAL log_min_error_statement = DEFAULT; \
     SET LOCAL log_min_duration_statement = DEFAULT; \
     SET LOCAL log_min_duration_sample = DEFAULT; \
     SET LOCAL track_activities = DEFAULT; \
     SET LOCAL pg_stat_statements.track_utility = DEFAULT";

/// A login the manifest grants, with its verifier read for this reconcile only.
pub struct DesiredLogin {
    pub login: String,
    pub verifier: Verifier,
    pub database: Option<String>,
}

/// The help of E609: a statement failed, or the session broke.
pub const STATEMENT_HELP: &str = "read PostgreSQL's message: the provisioner must act as a \
     superuser (reading `pg_authid` needs one; the standard module connects as `postgres`); \
     what was not committed did not happen, and the next reconcile tries again";

/// What a reconcile did; each is one line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `mesh_managed` did not exist and was created (NOLOGIN).
    MarkerCreated,
    Created {
        login: String,
    },
    /// The verifier in PostgreSQL differed from the credential file's.
    Updated {
        login: String,
    },
    /// A withdrawn login granted again; with its verifier set if that changed too.
    Enabled {
        login: String,
        verifier_changed: bool,
    },
    Disabled {
        login: String,
    },
    Unchanged {
        login: String,
    },
    SessionsEnded {
        login: String,
        sessions: u64,
    },
    DatabaseCreated {
        database: String,
        owner: String,
    },
    /// RabbitMQ: a vhost a grant names did not exist and was created.
    VhostCreated {
        vhost: String,
    },
    /// RabbitMQ: a user's permissions were set to its grant's (its hash unchanged).
    PermissionsSet {
        login: String,
        vhost: String,
    },
}

/// The actions that took effect and the problems met. `database_failed` means a
/// statement or the connection failed: what was not committed did not happen.
#[derive(Debug, Default)]
pub struct Outcome {
    pub actions: Vec<Action>,
    pub errors: Vec<Problem>,
    pub database_failed: bool,
}

impl Outcome {
    fn fail(&mut self, problem: Problem) {
        self.errors.push(problem);
        self.database_failed = true;
    }

    /// E609: a statement failed, or the session broke.
    fn statement_failed(&mut self, message: String) {
        self.fail(Problem::new(Code::StatementFailed, message, STATEMENT_HELP));
    }
}

/// A role as the catalog has it.
struct ExistingRole {
    oid: u32,
    can_login: bool,
    /// Hex SHA-256 of `rolpassword` (of `''` when it has none): the verifier itself
    /// never leaves the server.
    verifier_digest: String,
    managed: bool,
    /// A role mesh never makes: one the provisioner connects as, or a member (itself
    /// included) of a superuser, of a CREATEROLE, REPLICATION or BYPASSRLS role, or of a
    /// predefined `pg_` role. Such a role is never altered, even if it is a member of the
    /// marker role: that membership is a mistake, or the work of someone with CREATEROLE.
    privileged: bool,
}

/// A PostgreSQL error as one line: severity and message (and detail) for an error the
/// server sent, the client's description otherwise. Statements are never part of it.
pub fn describe(error: &postgres::Error) -> String {
    let text = match error.as_db_error() {
        Some(database_error) => {
            let mut text = format!(
                "{}: {}",
                database_error.severity().to_lowercase(),
                database_error.message()
            );
            if let Some(detail) = database_error.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            text
        }
        None => error.to_string(),
    };
    text.replace(['\n', '\r'], " ")
}

/// Reconciles the server with the desired logins. Never panics on what the server says;
/// a failure is in the outcome.
pub fn reconcile(client: &mut Client, desired: &[DesiredLogin]) -> Outcome {
    let mut outcome = Outcome::default();
    // before any other statement: every reconcile, whoever opened the session
    if let Err(error) = client.batch_execute(SEARCH_PATH) {
        outcome.statement_failed(format!(
            "cannot set the session's search_path to `pg_catalog`: {}",
            describe(&error)
        ));
        return outcome;
    }
    if let Err(error) = client.execute("SELECT pg_catalog.pg_advisory_lock($1)", &[&LOCK_KEY]) {
        outcome.statement_failed(format!(
            "cannot take the provisioner's advisory lock: {}",
            describe(&error)
        ));
        return outcome;
    }
    if let Err(error) = reconcile_locked(client, desired, &mut outcome) {
        outcome.statement_failed(describe(&error));
    }
    let unlocked = client.execute("SELECT pg_catalog.pg_advisory_unlock($1)", &[&LOCK_KEY]);
    match unlocked {
        Err(error) if !outcome.database_failed => outcome.statement_failed(format!(
            "cannot release the provisioner's advisory lock: {}",
            describe(&error)
        )),
        // after a failure the session may be gone, and its lock with it
        Err(_) | Ok(_) => {}
    }
    outcome
}

fn reconcile_locked(
    client: &mut Client,
    desired: &[DesiredLogin],
    outcome: &mut Outcome,
) -> Result<(), postgres::Error> {
    let mut transaction = client.transaction()?;
    // actions count only once committed
    let mut pending = Vec::new();

    let marker_exists = transaction
        .query_opt(
            "SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1",
            &[&MARKER_ROLE],
        )?
        .is_some();
    if !marker_exists {
        transaction.batch_execute(&format!("CREATE ROLE {} NOLOGIN", identifier(MARKER_ROLE)))?;
        pending.push(Action::MarkerCreated);
    }

    let logins: Vec<&str> = desired.iter().map(|login| login.login.as_str()).collect();
    let existing = read_roles(&mut transaction, &logins)?;

    let mut refused = BTreeSet::new();
    let mut verifiers_set = Vec::new();
    for login in desired {
        let name = identifier(&login.login);
        let verifier = literal(login.verifier.expose());
        match existing.get(&login.login) {
            None => {
                execute_quietly(
                    &mut transaction,
                    &format!(
                        "CREATE ROLE {name} WITH LOGIN PASSWORD {verifier} IN ROLE {}",
                        identifier(MARKER_ROLE)
                    ),
                )?;
                verifiers_set.push(login);
                pending.push(Action::Created {
                    login: login.login.clone(),
                });
            }
            Some(role) if role.managed && role.privileged => {
                refused.insert(login.login.as_str());
                outcome.errors.push(privileged_error(&login.login));
            }
            Some(role) if !role.managed => {
                refused.insert(login.login.as_str());
                outcome.errors.push(unmanaged_error(&login.login));
            }
            Some(role) => {
                let verifier_changed = role.verifier_digest != login.verifier.digest();
                match (role.can_login, verifier_changed) {
                    (false, true) => {
                        execute_quietly(
                            &mut transaction,
                            &format!("ALTER ROLE {name} WITH LOGIN PASSWORD {verifier}"),
                        )?;
                        verifiers_set.push(login);
                    }
                    (false, false) => {
                        transaction.batch_execute(&format!("ALTER ROLE {name} WITH LOGIN"))?
                    }
                    (true, true) => {
                        execute_quietly(
                            &mut transaction,
                            &format!("ALTER ROLE {name} WITH PASSWORD {verifier}"),
                        )?;
                        verifiers_set.push(login);
                    }
                    (true, false) => {}
                }
                let login = login.login.clone();
                pending.push(match (role.can_login, verifier_changed) {
                    (false, verifier_changed) => Action::Enabled {
                        login,
                        verifier_changed,
                    },
                    (true, true) => Action::Updated { login },
                    (true, false) => Action::Unchanged { login },
                });
            }
        }
    }

    // managed roles nobody is granted: no new sessions; their sessions are ended below
    let granted: BTreeSet<&str> = logins.iter().copied().collect();
    let mut withdrawn = Vec::new();
    for (name, role) in &existing {
        if role.managed && !granted.contains(name.as_str()) {
            if role.privileged {
                outcome.errors.push(privileged_error(name));
                continue;
            }
            withdrawn.push(role.oid);
            if role.can_login {
                transaction
                    .batch_execute(&format!("ALTER ROLE {} WITH NOLOGIN", identifier(name)))?;
                pending.push(Action::Disabled {
                    login: name.clone(),
                });
            }
        }
    }

    // PostgreSQL takes a string that is not a verifier it knows as a password and hashes
    // it: check that what it stored is what was given, before committing
    let mismatched = stored_differently(&mut transaction, &verifiers_set)?;
    if !mismatched.is_empty() {
        transaction.rollback()?;
        outcome.fail(not_stored_error(&mismatched));
        return Ok(());
    }
    transaction.commit()?;
    outcome.actions.extend(pending);

    end_sessions(client, &withdrawn, outcome)?;
    create_databases(client, desired, &refused, outcome)?;
    Ok(())
}

/// E612: why a member of the marker role that mesh would never have made is left alone.
fn privileged_error(login: &str) -> Problem {
    Problem::new(
        Code::PrivilegedLogin,
        format!(
            "login `{login}`: a member of `{MARKER_ROLE}` with more than mesh gives (the \
             provisioner's own role, a superuser, CREATEROLE, REPLICATION, BYPASSRLS, or a \
             member of such a role or of a predefined `pg_` role); left alone"
        ),
        format!(
            "mesh never alters such a role: if it is not a consumer's login, take it out of \
             the marker role (`REVOKE {MARKER_ROLE} FROM {}`); if it is, take away what \
             mesh does not give it",
            identifier(login)
        ),
    )
}

/// E611: why a grant whose login is a role mesh does not manage is left alone.
fn unmanaged_error(login: &str) -> Problem {
    Problem::new(
        Code::LoginTaken,
        format!(
            "login `{login}`: a role of that name exists and mesh does not manage it (it is \
             not a member of `{MARKER_ROLE}`); left alone"
        ),
        format!(
            "if the role is the consumer's from before mesh, hand it to mesh with `GRANT \
             {MARKER_ROLE} TO {}`; if it is someone else's, rename it or give the consumer \
             another name (the login is NODE_MODULE_NAME); the other grants went ahead",
            identifier(login)
        ),
    )
}

/// E610: PostgreSQL hashed what it was given as a password instead of storing it.
fn not_stored_error(logins: &[String]) -> Problem {
    Problem::new(
        Code::VerifierNotStored,
        format!(
            "PostgreSQL did not store the verifier of {} as given (does it support \
             SCRAM-SHA-256?); nothing changed",
            logins
                .iter()
                .map(|login| format!("`{login}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "run PostgreSQL 14 or later, which stores a SCRAM-SHA-256 verifier as it is given; \
         the transaction was rolled back",
    )
}

/// E613: a withdrawn login's session outlived `pg_terminate_backend`'s wait.
fn session_error(login: &str) -> Problem {
    Problem::new(
        Code::SessionNotEnded,
        format!(
            "a session of `{login}` was still there {TERMINATE_WAIT_MILLISECONDS} ms after it \
             was told to end"
        ),
        "the login is NOLOGIN already, so it opens no new session; look in \
         `pg_stat_activity` for what that backend is doing (a long statement ends at its \
         next check for interrupts); the next reconcile tries to end it again",
    )
}

/// The roles named by the grants and every direct member of the marker role.
fn read_roles(
    transaction: &mut Transaction<'_>,
    logins: &[&str],
) -> Result<BTreeMap<String, ExistingRole>, postgres::Error> {
    let rows = transaction.query(
        "SELECT role.oid, role.rolname::text, role.rolcanlogin,
                pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(
                    coalesce(role.rolpassword, ''), 'UTF8')), 'hex'),
                EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS membership
                          JOIN pg_catalog.pg_roles AS marker ON marker.oid = membership.roleid
                         WHERE membership.member = role.oid AND marker.rolname = $2),
                role.rolname = session_user OR role.rolname = current_user
                  OR EXISTS (SELECT 1 FROM pg_catalog.pg_roles AS powerful
                              WHERE (powerful.rolsuper OR powerful.rolcreaterole
                                     OR powerful.rolreplication OR powerful.rolbypassrls
                                     OR (pg_catalog.starts_with(powerful.rolname::text, 'pg_')
                                         AND powerful.rolname <> 'pg_database_owner'))
                                AND pg_catalog.pg_has_role(role.oid, powerful.oid, 'MEMBER'))
           FROM pg_catalog.pg_authid AS role
          WHERE role.rolname::text = ANY($1::text[])
             OR EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members AS membership
                          JOIN pg_catalog.pg_roles AS marker ON marker.oid = membership.roleid
                         WHERE membership.member = role.oid AND marker.rolname = $2)",
        &[&logins, &MARKER_ROLE],
    )?;
    let mut roles = BTreeMap::new();
    for row in rows {
        roles.insert(
            row.try_get::<_, String>(1)?,
            ExistingRole {
                oid: row.try_get(0)?,
                can_login: row.try_get(2)?,
                verifier_digest: row.try_get(3)?,
                managed: row.try_get(4)?,
                privileged: row.try_get(5)?,
            },
        );
    }
    Ok(roles)
}

/// Runs a statement that carries a verifier with logging, activity tracking and
/// statement statistics off for it alone.
fn execute_quietly(
    transaction: &mut Transaction<'_>,
    statement: &str,
) -> Result<(), postgres::Error> {
    transaction.batch_execute(QUIET)?;
    transaction.batch_execute(statement)?;
    transaction.batch_execute(UNQUIET)
}

/// The logins whose stored verifier is not, byte for byte, the one given.
fn stored_differently(
    transaction: &mut Transaction<'_>,
    logins: &[&DesiredLogin],
) -> Result<Vec<String>, postgres::Error> {
    let mut mismatched = Vec::new();
    for login in logins {
        let stored: Option<String> = transaction
            .query_opt(
                "SELECT pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(
                            coalesce(rolpassword, ''), 'UTF8')), 'hex')
                   FROM pg_catalog.pg_authid WHERE rolname::text = $1",
                &[&login.login],
            )?
            .map(|row| row.try_get(0))
            .transpose()?;
        if stored.as_deref() != Some(login.verifier.digest()) {
            mismatched.push(login.login.clone());
        }
    }
    Ok(mismatched)
}

/// Ends every session of a withdrawn role, waiting for each to be gone.
fn end_sessions(
    client: &mut Client,
    withdrawn: &[u32],
    outcome: &mut Outcome,
) -> Result<(), postgres::Error> {
    if withdrawn.is_empty() {
        return Ok(());
    }
    let rows = client.query(
        "SELECT activity.usename::text, pg_catalog.pg_terminate_backend(activity.pid, $2)
           FROM pg_catalog.pg_stat_activity AS activity
          WHERE activity.usesysid = ANY($1::oid[])
            AND activity.pid <> pg_catalog.pg_backend_pid()",
        &[&withdrawn, &TERMINATE_WAIT_MILLISECONDS],
    )?;
    let mut ended: BTreeMap<String, u64> = BTreeMap::new();
    for row in rows {
        let login: String = row.try_get(0)?;
        let terminated: bool = row.try_get(1)?;
        if terminated {
            *ended.entry(login).or_default() += 1;
        } else {
            outcome.errors.push(session_error(&login));
        }
    }
    for (login, sessions) in ended {
        outcome
            .actions
            .push(Action::SessionsEnded { login, sessions });
    }
    Ok(())
}

/// Creates each database a grant asks for that does not exist, owned by its login. An
/// existing database is left as it is, whoever owns it.
fn create_databases(
    client: &mut Client,
    desired: &[DesiredLogin],
    refused: &BTreeSet<&str>,
    outcome: &mut Outcome,
) -> Result<(), postgres::Error> {
    for login in desired {
        let Some(database) = &login.database else {
            continue;
        };
        if refused.contains(login.login.as_str()) {
            continue;
        }
        let exists = client
            .query_opt(
                "SELECT 1 FROM pg_catalog.pg_database WHERE datname::text = $1",
                &[database],
            )?
            .is_some();
        if !exists {
            client.batch_execute(&format!(
                "CREATE DATABASE {} OWNER {}",
                identifier(database),
                identifier(&login.login)
            ))?;
            outcome.actions.push(Action::DatabaseCreated {
                database: database.clone(),
                owner: login.login.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// E610 and E613 need a server that stores a verifier as a password, or a session
    /// that outlives `pg_terminate_backend`, which no test server gives: their problems
    /// are checked here; E609, E611 and E612 also on a real server (`tests/postgres.rs`).
    #[test]
    fn each_refusal_has_its_code_the_login_and_a_help_line() {
        let cases = [
            (
                privileged_error("hand_super"),
                Code::PrivilegedLogin,
                "login `hand_super`",
                "REVOKE mesh_managed FROM \"hand_super\"",
            ),
            (
                unmanaged_error("app3_shop_db"),
                Code::LoginTaken,
                "login `app3_shop_db`",
                "GRANT mesh_managed TO \"app3_shop_db\"",
            ),
            (
                not_stored_error(&["a".to_string(), "b".to_string()]),
                Code::VerifierNotStored,
                "verifier of `a`, `b` as given",
                "PostgreSQL 14",
            ),
            (
                session_error("app2_shop_db"),
                Code::SessionNotEnded,
                "a session of `app2_shop_db`",
                "pg_stat_activity",
            ),
        ];
        for (problem, code, message, help) in cases {
            assert_eq!(problem.code, code);
            assert!(problem.message.contains(message), "{problem:?}");
            assert!(problem.help.contains(help), "{problem:?}");
        }
        let mut outcome = Outcome::default();
        outcome.statement_failed("error: permission denied for table pg_authid".to_string());
        assert!(outcome.database_failed);
        assert_eq!(outcome.errors[0].code, Code::StatementFailed);
        assert!(outcome.errors[0].help.contains("superuser"));
    }
}
