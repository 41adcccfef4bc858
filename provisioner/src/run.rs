//! Running the provisioner: once, or watching. A watch polls because the host replaces
//! the manifest by rename, and a file watch would go deaf after the first replacement.
//! Each poll digests the manifest and the credential files it names; a reconcile runs
//! when that digest changed, when the last one could not finish, and every
//! `--repair-every` polls anyway. Between reconciles only digests are kept, never a
//! credential. The server is PostgreSQL or RabbitMQ (`config::Target`); the loop is
//! the same. Must not exit on a bad input or an unreachable server while watching.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::Problem;
use crate::codes::Code;
use crate::config::{Config, Mode, OutputFormat, Target};
use crate::credential::{self, FileIdentity, Verifier};
use crate::manifest::{self, Kind, Manifest};
use crate::rabbitmq::{self, DesiredUser};
use crate::reconcile::{self, DesiredLogin, Outcome};
use crate::report::{Failure, Report, Trigger};

/// How long to wait for the server to answer a connection, unless the URL says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Said after every refusal of the inputs: nothing of the manifest is done.
const KEPT: &str = "; nothing changed, keeping the last good state";

/// The help of E600.
const MANIFEST_UNREADABLE_HELP: &str = "mesh-apply places the manifest with the node's plan: \
     check that `--manifest` names the file it placed (the provider's `manifest` path), that \
     the plan was applied, and that the provisioner's user may read it";

/// The help of E607.
const PASSWORD_FILE_HELP: &str = "`--password-file` names a file whose first line is the \
     superuser's (or the administrator's) password: the standard modules place it as the \
     node's `superuser` need; check the path and that the provisioner's user may read it";

/// The help of E608.
const POSTGRES_UNREACHABLE_HELP: &str = "check that PostgreSQL runs at the address \
     `--postgres` names, takes TCP connections from here, and lets its user in with the \
     password of `--password-file`; watching, the provisioner tries again at every poll";

/// One look at the inputs, taken at each poll.
struct Look {
    /// `sha256:HEX` of the manifest's bytes, when they could be read.
    manifest_digest: Option<String>,
    /// The manifest and the digest of every credential file it names (or why it could
    /// not be read): when this changes, something may need doing.
    inputs_digest: String,
    manifest: Result<Manifest, Problem>,
}

/// The provisioner between polls: the connection and the manifest last read,
/// nothing secret.
pub struct Provisioner<'a> {
    config: &'a Config,
    client: Option<Client>,
    /// The digest of the manifest last parsed and what parsing it gave: a poll that
    /// finds the same bytes takes it from here (a RabbitMQ grant's permissions are
    /// regular expressions that may take a tenth of a second to check).
    parsed: Option<(String, Result<Manifest, manifest::ManifestError>)>,
    /// How many times a manifest was parsed (for the tests).
    parses: u64,
}

impl<'a> Provisioner<'a> {
    pub fn new(config: &'a Config) -> Provisioner<'a> {
        Provisioner {
            config,
            client: None,
            parsed: None,
            parses: 0,
        }
    }

    fn look(&mut self) -> Look {
        let path = &self.config.manifest;
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) => {
                let reason = format!("manifest `{}`: cannot read it: {error}", path.display());
                return Look {
                    manifest_digest: None,
                    inputs_digest: format!("unreadable: {reason}"),
                    manifest: Err(Problem::new(
                        Code::ManifestUnreadable,
                        reason,
                        MANIFEST_UNREADABLE_HELP,
                    )),
                };
            }
        };
        let manifest_digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
        let parsed = match self.parsed.take() {
            Some((digest, parsed)) if digest == manifest_digest => parsed,
            _ => {
                self.parses += 1;
                manifest::parse(&bytes, self.config.root.as_deref(), self.kind())
            }
        };
        self.parsed = Some((manifest_digest.clone(), parsed.clone()));
        let manifest = parsed.map_err(|error| {
            Problem::new(
                error.code(),
                format!("manifest `{}`: {}", path.display(), error.reason()),
                error.help(),
            )
        });
        let mut inputs = Sha256::new();
        inputs.update(manifest_digest.as_bytes());
        if let Ok(manifest) = &manifest {
            for grant in &manifest.grants {
                inputs.update(b"\0");
                inputs.update(grant.login.as_bytes());
                inputs.update(b"\0");
                match credential::file_digest(&grant.credential_path) {
                    Ok(digest) => inputs.update(digest),
                    Err(error) => inputs.update(error.reason().as_bytes()),
                }
            }
        }
        Look {
            manifest_digest: Some(manifest_digest),
            inputs_digest: hex::encode(inputs.finalize()),
            manifest,
        }
    }

    fn reconcile(&mut self, look: Look, trigger: Trigger) -> Report {
        let mut report = Report {
            manifest: self.config.manifest.clone(),
            manifest_digest: look.manifest_digest,
            trigger,
            actions: Vec::new(),
            errors: Vec::new(),
            failure: None,
        };
        let manifest = match look.manifest {
            Ok(manifest) => manifest,
            Err(problem) => {
                report.errors.push(problem.then(KEPT));
                report.failure = Some(Failure::Input);
                return report;
            }
        };
        // every credential is read and checked before anything is changed
        let read = match self.kind() {
            Kind::Postgres => credential::read_verifier,
            Kind::Rabbitmq => credential::read_rabbit_hash,
        };
        let mut checks = Vec::with_capacity(manifest.grants.len());
        // the manifest names no path twice; a link could still lead two paths to one file
        let mut files: BTreeMap<FileIdentity, &str> = BTreeMap::new();
        for grant in &manifest.grants {
            let (code, reason, help) = match read(&grant.credential_path) {
                Ok(verifier) => match files.insert(verifier.file(), &grant.login) {
                    None => {
                        checks.push((grant, verifier));
                        continue;
                    }
                    Some(other) => {
                        let shared = manifest::ManifestError::SharedCredential(format!(
                            "the same file as the credential of login `{other}` (a link leads \
                             there); each grant has a file of its own"
                        ));
                        (shared.code(), shared.reason().to_string(), shared.help())
                    }
                },
                Err(error) => (error.code(), error.reason().to_string(), error.help()),
            };
            let message = format!(
                "credential `{}` of login `{}`: {reason}{KEPT}",
                grant.credential_path.display(),
                grant.login
            );
            report.errors.push(Problem::new(code, message, help));
        }
        if !report.errors.is_empty() {
            report.failure = Some(Failure::Input);
            return report;
        }
        let outcome = match &self.config.target {
            Target::Postgres(_) => self.reconcile_postgres(checks),
            Target::Rabbitmq(endpoint) => reconcile_rabbitmq(self.config, endpoint, checks),
        };
        if outcome.database_failed {
            report.failure = Some(Failure::Database);
        }
        report.actions = outcome.actions;
        report.errors.extend(outcome.errors);
        report
    }

    fn kind(&self) -> Kind {
        match self.config.target {
            Target::Postgres(_) => Kind::Postgres,
            Target::Rabbitmq(_) => Kind::Rabbitmq,
        }
    }

    fn reconcile_postgres(&mut self, checks: Vec<(&manifest::Grant, Verifier)>) -> Outcome {
        let desired: Vec<DesiredLogin> = checks
            .into_iter()
            .map(|(grant, verifier)| DesiredLogin {
                login: grant.login.clone(),
                verifier,
                database: grant.database.clone(),
            })
            .collect();
        let client = match self.connected() {
            Ok(client) => client,
            Err(problem) => {
                return Outcome {
                    errors: vec![problem.then("; nothing changed")],
                    database_failed: true,
                    ..Outcome::default()
                };
            }
        };
        let outcome = reconcile::reconcile(client, &desired);
        // the verifiers go here, wiped as they are dropped
        drop(desired);
        if outcome.database_failed {
            // start from a fresh session next time
            self.client = None;
        }
        outcome
    }

    /// The open session if it still answers (the server may have restarted since the
    /// last reconcile, and a blocking client only notices when it asks), or a new one.
    fn connected(&mut self) -> Result<&mut Client, Problem> {
        let answers = match &mut self.client {
            Some(client) => !client.is_closed() && client.is_valid(CONNECT_TIMEOUT).is_ok(),
            None => false,
        };
        if !answers {
            self.client = None;
        }
        match &mut self.client {
            Some(client) => Ok(client),
            slot @ None => Ok(slot.insert(connect(self.config)?)),
        }
    }
}

/// RabbitMQ keeps no session between reconciles: each one is a few requests.
fn reconcile_rabbitmq(
    config: &Config,
    endpoint: &rabbitmq::Endpoint,
    checks: Vec<(&manifest::Grant, Verifier)>,
) -> Outcome {
    let mut desired = Vec::with_capacity(checks.len());
    for (grant, hash) in checks {
        // the manifest's parser gives every RabbitMQ grant its access
        if let Some(access) = &grant.access {
            desired.push(DesiredUser {
                login: grant.login.clone(),
                hash,
                access: access.clone(),
            });
        }
    }
    let password = match &config.password_file {
        Some(path) => read_password(path),
        None => Err(Problem::new(
            Code::PasswordFileUnusable,
            "`--rabbitmq` needs `--password-file`",
            PASSWORD_FILE_HELP,
        )),
    };
    match password {
        Ok(password) => rabbitmq::reconcile(endpoint, &password, &desired),
        Err(problem) => Outcome {
            errors: vec![problem.then("; nothing changed")],
            database_failed: true,
            ..Outcome::default()
        },
    }
}

fn connect(config: &Config) -> Result<Client, Problem> {
    let unreachable = |message: String| {
        Problem::new(
            Code::PostgresUnreachable,
            message,
            POSTGRES_UNREACHABLE_HELP,
        )
    };
    // `parse_arguments` checked both: neither is met after it
    let Target::Postgres(url) = &config.target else {
        return Err(unreachable("not a PostgreSQL provisioner".to_string()));
    };
    let mut postgres = postgres::Config::from_str(url).map_err(|error| {
        unreachable(format!("`--postgres` is not a connection string: {error}"))
    })?;
    if let Some(path) = &config.password_file {
        let password = read_password(path)?;
        postgres.password(password.as_bytes());
    }
    if postgres.get_connect_timeout().is_none() {
        postgres.connect_timeout(CONNECT_TIMEOUT);
    }
    if postgres.get_application_name().is_none() {
        postgres.application_name("mesh-provision");
    }
    // where, without user or password: host:port for each host the string names
    let ports = postgres.get_ports();
    let target = postgres
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(index, host)| {
            let port = ports.get(index).or(ports.first()).copied().unwrap_or(5432);
            match host {
                postgres::config::Host::Tcp(name) => format!("{name}:{port}"),
                postgres::config::Host::Unix(path) => format!("{}:{port}", path.display()),
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    postgres.connect(NoTls).map_err(|error| {
        unreachable(format!(
            "cannot connect to PostgreSQL at `{target}`: {}",
            reconcile::describe(&error)
        ))
    })
}

/// The superuser's password: the file's first line. The reason never quotes the file.
fn read_password(path: &Path) -> Result<Zeroizing<String>, Problem> {
    let unusable =
        |message: String| Problem::new(Code::PasswordFileUnusable, message, PASSWORD_FILE_HELP);
    let bytes = Zeroizing::new(
        std::fs::read(path)
            .map_err(|error| unusable(format!("password file `{}`: {error}", path.display())))?,
    );
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| unusable(format!("password file `{}` is not text", path.display())))?;
    let line = text.lines().next().unwrap_or("");
    if line.is_empty() {
        return Err(unusable(format!(
            "password file `{}` is empty",
            path.display()
        )));
    }
    Ok(Zeroizing::new(line.to_string()))
}

/// Prints a report; a watch that cannot write keeps working.
fn emit(report: &Report, format: OutputFormat, output: &mut dyn Write, errors: &mut dyn Write) {
    let text = match format {
        OutputFormat::Human => report.render_human(),
        OutputFormat::Json => report.render_json(),
    };
    let written = errors
        .write_all(report.render_errors().as_bytes())
        .and_then(|()| errors.flush())
        .and_then(|()| output.write_all(text.as_bytes()))
        .and_then(|()| output.flush());
    // nowhere left to say that saying failed
    match written {
        Ok(()) | Err(_) => {}
    }
}

/// Runs as configured: returns the exit code once, never returns while watching.
pub fn run(config: &Config, output: &mut dyn Write, errors: &mut dyn Write) -> i32 {
    let mut provisioner = Provisioner::new(config);
    match config.mode {
        Mode::Once => {
            let look = provisioner.look();
            let report = provisioner.reconcile(look, Trigger::Once);
            emit(&report, config.format, output, errors);
            if report.errors.is_empty() { 0 } else { 1 }
        }
        Mode::Watch {
            interval,
            repair_every,
        } => provisioner.watch(interval, repair_every, output, errors),
    }
}

impl Provisioner<'_> {
    fn watch(
        &mut self,
        interval: Duration,
        repair_every: u32,
        output: &mut dyn Write,
        errors: &mut dyn Write,
    ) -> ! {
        let format = self.config.format;
        // the inputs digest of the last reconcile, whatever became of it
        let mut last_inputs: Option<String> = None;
        let mut retry = false;
        let mut polls_since_reconcile: u32 = 0;
        let mut polls_since_printed: u32 = 0;
        let mut last_errors: Vec<Problem> = Vec::new();
        loop {
            let started = Instant::now();
            let look = self.look();
            polls_since_reconcile = polls_since_reconcile.saturating_add(1);
            polls_since_printed = polls_since_printed.saturating_add(1);
            let trigger = match &last_inputs {
                None => Some(Trigger::Start),
                Some(last) if *last != look.inputs_digest => Some(Trigger::Changed),
                Some(_) if retry => Some(Trigger::Retry),
                Some(_) if polls_since_reconcile >= repair_every => Some(Trigger::Repair),
                Some(_) => None,
            };
            if let Some(trigger) = trigger {
                let inputs_digest = look.inputs_digest.clone();
                let report = self.reconcile(look, trigger);
                polls_since_reconcile = 0;
                last_inputs = Some(inputs_digest);
                retry = report.failure == Some(Failure::Database);
                // a repair that found nothing to do, and a retry that failed as the last
                // one did, stay quiet; a standing problem is said again now and then
                let say = match trigger {
                    Trigger::Once | Trigger::Start | Trigger::Changed => true,
                    Trigger::Repair => report.changed_anything() || !report.errors.is_empty(),
                    Trigger::Retry => {
                        report.changed_anything()
                            || report.errors != last_errors
                            || polls_since_printed >= repair_every
                    }
                };
                if say {
                    emit(&report, format, output, errors);
                    polls_since_printed = 0;
                }
                last_errors = report.errors;
            }
            std::thread::sleep(interval.saturating_sub(started.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Mode, OutputFormat, Target};

    fn config(manifest: &Path) -> Config {
        Config {
            manifest: manifest.to_path_buf(),
            target: Target::Postgres("host=127.0.0.1 user=postgres".to_string()),
            password_file: None,
            root: None,
            mode: Mode::Once,
            format: OutputFormat::Human,
        }
    }

    /// A poll that finds the manifest's bytes unchanged does not parse it again (a
    /// grant's permissions may cost a tenth of a second of CPU to check, at every
    /// poll); new bytes are parsed, and a manifest that was refused stays refused.
    #[test]
    fn an_unchanged_manifest_is_parsed_once() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = directory.path().join("grants.json");
        let manifest = |service: &str| {
            format!(
                r#"{{"format":"{}","service":"{service}","node":"db1","grants":[]}}"#,
                manifest::FORMAT
            )
        };
        std::fs::write(&path, manifest("postgres")).expect("write");
        let config = config(&path);
        let mut provisioner = Provisioner::new(&config);
        let first = provisioner.look();
        let second = provisioner.look();
        assert_eq!(provisioner.parses, 1);
        assert_eq!(first.inputs_digest, second.inputs_digest);
        assert_eq!(second.manifest.expect("a manifest").service, "postgres");
        std::fs::write(&path, manifest("other")).expect("write");
        let third = provisioner.look();
        assert_eq!(provisioner.parses, 2);
        assert_eq!(third.manifest.expect("a manifest").service, "other");
        std::fs::write(&path, "not json").expect("write");
        assert!(provisioner.look().manifest.is_err());
        assert!(provisioner.look().manifest.is_err());
        assert_eq!(provisioner.parses, 3);
    }
}
