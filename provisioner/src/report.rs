//! What one reconcile did, rendered for a person (one line per action, a summary line)
//! or as one JSON object, and its problems as the applier renders its own
//! (`error[E601]: ...`, then `  = help: ...`). Must not hold or print a credential:
//! actions carry names only. Must not print a character a terminal would act on
//! (control characters, escape sequences, bidirectional overrides): problems may
//! quote the server or a file name, so they are escaped as they are rendered.

use std::path::PathBuf;

use problems::{Escape, Severity, escaped, json_escaped};
use serde_json::{Value, json};

use crate::Problem;
use crate::reconcile::Action;

/// Why a reconcile ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Run once, without `--watch`.
    Once,
    /// The first poll of a watching provisioner.
    Start,
    /// The manifest or a credential file changed since the last reconcile.
    Changed,
    /// Nothing changed, but `--repair-every` polls have passed.
    Repair,
    /// The last reconcile could not reach the database or a statement failed.
    Retry,
}

impl Trigger {
    pub fn name(self) -> &'static str {
        match self {
            Trigger::Once => "once",
            Trigger::Start => "start",
            Trigger::Changed => "changed",
            Trigger::Repair => "repair",
            Trigger::Retry => "retry",
        }
    }
}

/// What kept a reconcile from completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The manifest or a credential file is unreadable or malformed: nothing was done.
    Input,
    /// The database could not be reached, or a statement failed.
    Database,
}

#[derive(Debug)]
pub struct Report {
    pub manifest: PathBuf,
    /// `sha256:HEX` of the manifest's bytes, when it could be read.
    pub manifest_digest: Option<String>,
    pub trigger: Trigger,
    pub actions: Vec<Action>,
    pub errors: Vec<Problem>,
    pub failure: Option<Failure>,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub created: usize,
    pub updated: usize,
    pub enabled: usize,
    pub disabled: usize,
    pub unchanged: usize,
    pub failed: usize,
    pub sessions_ended: u64,
    pub databases_created: usize,
    pub vhosts_created: usize,
}

impl Report {
    pub fn counts(&self) -> Counts {
        let mut counts = Counts {
            failed: self.errors.len(),
            ..Counts::default()
        };
        for action in &self.actions {
            match action {
                Action::MarkerCreated => {}
                Action::Created { .. } => counts.created += 1,
                Action::Updated { .. } | Action::PermissionsSet { .. } => counts.updated += 1,
                Action::VhostCreated { .. } => counts.vhosts_created += 1,
                Action::Enabled { .. } => counts.enabled += 1,
                Action::Disabled { .. } => counts.disabled += 1,
                Action::Unchanged { .. } => counts.unchanged += 1,
                Action::SessionsEnded { sessions, .. } => counts.sessions_ended += sessions,
                Action::DatabaseCreated { .. } => counts.databases_created += 1,
            }
        }
        counts
    }

    /// Whether the reconcile changed anything in the database.
    pub fn changed_anything(&self) -> bool {
        self.actions
            .iter()
            .any(|action| !matches!(action, Action::Unchanged { .. }))
    }

    /// One line per action that changed something, then the summary (stdout).
    pub fn render_human(&self) -> String {
        let mut text = String::new();
        for action in &self.actions {
            let line = match action {
                Action::MarkerCreated => {
                    "created   role `mesh_managed` (NOLOGIN; marks the roles mesh manages)"
                        .to_string()
                }
                Action::Created { login } => format!("created   login `{login}`"),
                Action::Updated { login } => format!("updated   login `{login}` (new verifier)"),
                Action::Enabled {
                    login,
                    verifier_changed: false,
                } => format!("enabled   login `{login}`"),
                Action::Enabled {
                    login,
                    verifier_changed: true,
                } => format!("enabled   login `{login}` (new verifier)"),
                Action::Disabled { login } => {
                    format!("disabled  login `{login}` (role and data kept)")
                }
                Action::SessionsEnded { login, sessions } => format!(
                    "ended     {sessions} session{} of `{login}`",
                    if *sessions == 1 { "" } else { "s" }
                ),
                Action::DatabaseCreated { database, owner } => {
                    format!("created   database `{database}` owned by `{owner}`")
                }
                Action::VhostCreated { vhost } => format!("created   vhost `{vhost}`"),
                Action::PermissionsSet { login, vhost } => {
                    format!("updated   login `{login}` (permissions in vhost `{vhost}`)")
                }
                Action::Unchanged { .. } => continue,
            };
            text.push_str(&line);
            text.push('\n');
        }
        let counts = self.counts();
        let digest = match &self.manifest_digest {
            Some(digest) => format!(" {}", short_digest(digest)),
            None => String::new(),
        };
        text.push_str(&format!(
            "`{}`{digest}: {} created, {} updated, {} enabled, {} disabled, {} unchanged, {} failed{}\n",
            escaped(&self.manifest.display().to_string()),
            counts.created,
            counts.updated,
            counts.enabled,
            counts.disabled,
            counts.unchanged,
            counts.failed,
            match self.failure {
                Some(Failure::Input) => " (nothing changed: keeping the last good state)",
                Some(Failure::Database) => " (not completed)",
                None => "",
            }
        ));
        text
    }

    /// The errors, each an `error[E6NN]: ` line and its help line (stderr).
    pub fn render_errors(&self) -> String {
        self.errors.iter().map(render_problem).collect()
    }

    /// One JSON object on one line.
    pub fn render_json(&self) -> String {
        let actions: Vec<Value> = self
            .actions
            .iter()
            .map(|action| match action {
                Action::MarkerCreated => json!({"action": "created", "role": "mesh_managed"}),
                Action::Created { login } => json!({"action": "created", "login": login}),
                Action::Updated { login } => json!({"action": "updated", "login": login}),
                Action::Enabled {
                    login,
                    verifier_changed,
                } => json!({"action": "enabled", "login": login, "verifier_changed": verifier_changed}),
                Action::Disabled { login } => json!({"action": "disabled", "login": login}),
                Action::Unchanged { login } => json!({"action": "unchanged", "login": login}),
                Action::SessionsEnded { login, sessions } => {
                    json!({"action": "sessions-ended", "login": login, "sessions": sessions})
                }
                Action::DatabaseCreated { database, owner } => {
                    json!({"action": "created", "database": database, "owner": owner})
                }
                Action::VhostCreated { vhost } => json!({"action": "created", "vhost": vhost}),
                Action::PermissionsSet { login, vhost } => {
                    json!({"action": "updated", "login": login, "permissions_in": vhost})
                }
            })
            .collect();
        let counts = self.counts();
        let object = json!({
            "manifest": self.manifest.display().to_string(),
            "digest": self.manifest_digest,
            "trigger": self.trigger.name(),
            "ok": self.errors.is_empty(),
            "failure": self.failure.map(|failure| match failure {
                Failure::Input => "input",
                Failure::Database => "database",
            }),
            "actions": actions,
            "counts": {
                "created": counts.created,
                "updated": counts.updated,
                "enabled": counts.enabled,
                "disabled": counts.disabled,
                "unchanged": counts.unchanged,
                "failed": counts.failed,
                "sessions_ended": counts.sessions_ended,
                "databases_created": counts.databases_created,
                "vhosts_created": counts.vhosts_created,
            },
            "errors": self.errors.iter().map(problem_json).collect::<Vec<_>>(),
        });
        format!("{}\n", json_escaped(&object.to_string()))
    }
}

/// `error[E601]: message`, then the help line, as `mesh-apply` prints a problem that
/// belongs to no shape (`problems::render`). Both are escaped.
pub fn render_problem(problem: &Problem) -> String {
    problems::render(problem, Severity::Error, Escape::Controls)
}

/// A problem in `--format json`: the fields of `mesh-apply`'s (`code`, `title`,
/// `message`, `help`) that a problem of the provisioner has.
fn problem_json(problem: &Problem) -> Value {
    json!({
        "code": problem.code.as_str(),
        "title": problem.code.title(),
        "message": problem.message,
        "help": problem.help,
    })
}

/// `sha256:` and the first twelve hex digits.
fn short_digest(digest: &str) -> &str {
    digest.get(..19).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::Code;

    fn report() -> Report {
        Report {
            manifest: PathBuf::from("/etc/mesh/grants/postgres.json"),
            manifest_digest: Some(format!("sha256:{}", "ab".repeat(32))),
            trigger: Trigger::Changed,
            actions: vec![
                Action::Created {
                    login: "app1_shop_db".into(),
                },
                Action::Unchanged {
                    login: "app2_shop_db".into(),
                },
                Action::Disabled {
                    login: "app3_shop_db".into(),
                },
                Action::SessionsEnded {
                    login: "app3_shop_db".into(),
                    sessions: 2,
                },
            ],
            errors: vec![],
            failure: None,
        }
    }

    #[test]
    fn human_output_is_one_line_per_change_and_a_summary() {
        assert_eq!(
            report().render_human(),
            "created   login `app1_shop_db`\n\
             disabled  login `app3_shop_db` (role and data kept)\n\
             ended     2 sessions of `app3_shop_db`\n\
             `/etc/mesh/grants/postgres.json` sha256:abababababab: 1 created, 0 updated, \
             0 enabled, 1 disabled, 1 unchanged, 0 failed\n"
        );
    }

    #[test]
    fn a_problem_is_rendered_as_the_applier_renders_one_escaped() {
        let problem = Problem::new(
            Code::ManifestUnreadable,
            "manifest `/m\u{1b}[2J\u{202e}`: cannot read it",
            "check \u{9b}31m",
        );
        assert_eq!(
            render_problem(&problem),
            "error[E600]: manifest `/m\\u{1b}[2J\\u{202e}`: cannot read it\n  \
             = help: check \\u{9b}31m\n"
        );
        let report = Report {
            manifest: PathBuf::from("/m\u{1b}\u{202e}"),
            errors: vec![problem],
            failure: Some(Failure::Input),
            ..report()
        };
        assert_eq!(report.render_errors(), render_problem(&report.errors[0]));
        assert!(
            report.render_human().contains("`/m\\u{1b}\\u{202e}`"),
            "{}",
            report.render_human()
        );
        let json = report.render_json();
        assert!(
            !json.contains('\u{202e}') && !json.contains('\u{9b}'),
            "{json:?}"
        );
        let value: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            value["errors"][0],
            json!({
                "code": "E600",
                "title": "the grants manifest cannot be read",
                "message": "manifest `/m\u{1b}[2J\u{202e}`: cannot read it",
                "help": "check \u{9b}31m",
            })
        );
        assert_eq!(value["counts"]["failed"], 1);
    }

    #[test]
    fn json_output_is_one_object_per_line() {
        let text = report().render_json();
        assert_eq!(text.lines().count(), 1);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["trigger"], "changed");
        assert_eq!(value["counts"]["sessions_ended"], 2);
        assert_eq!(
            value["actions"][0],
            json!({"action": "created", "login": "app1_shop_db"})
        );
    }
}
