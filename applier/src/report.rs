//! What a run reports: one result per shape (created, changed, unchanged, withdrawn,
//! kept, failed), the problems, and a summary; rendered for people or as JSON. Must
//! never print secret content, and never a plan-supplied character raw that a terminal
//! would act on (control characters, escape sequences, bidirectional overrides).

use std::borrow::Cow;

use problems::{Escape, Severity};
use serde_json::{Value, json};

use crate::problem::{Origin, Problem};

/// The characters `mesh-apply` prints as escapes: those that would change what a
/// terminal shows (a control character, the start of an escape sequence, a line
/// break, a bidirectional control) and the invisible ones (zero-width, word joiner,
/// byte order mark), so a hostile plan can neither drive the terminal, fake a line of
/// the report, nor hide a character in a name.
pub const ESCAPE: Escape = Escape::ControlsAndInvisible;

/// `text` with every character [`ESCAPE`] covers shown as `\u{..}`.
pub fn escaped(text: &str) -> Cow<'_, str> {
    ESCAPE.text(text)
}

/// JSON text with every character [`ESCAPE`] covers that serde_json leaves raw (DEL,
/// C1 controls, format characters) written as a `\uXXXX` escape; the data is unchanged.
pub fn json_escaped(text: &str) -> String {
    ESCAPE.json(text).into_owned()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Created,
    Changed,
    Unchanged,
    Withdrawn,
    Kept,
    Failed,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Created,
        Status::Changed,
        Status::Unchanged,
        Status::Withdrawn,
        Status::Kept,
        Status::Failed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Status::Created => "created",
            Status::Changed => "changed",
            Status::Unchanged => "unchanged",
            Status::Withdrawn => "withdrawn",
            Status::Kept => "kept",
            Status::Failed => "failed",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeResult {
    pub origin: Origin,
    pub status: Status,
    /// What changed or why it failed; empty when there is nothing to say.
    pub detail: String,
}

#[derive(Clone, Debug, Default)]
pub struct Report {
    pub node: Option<String>,
    pub plan_digest: Option<String>,
    pub dry_run: bool,
    pub results: Vec<ShapeResult>,
    /// Why the run failed: before anything changed (refusals) or at a shape.
    pub problems: Vec<Problem>,
    /// Non-fatal problems; they still make the exit status 1.
    pub notes: Vec<Problem>,
    /// What the operator should know that is not a problem (a check that could not
    /// run here); the exit status does not change.
    pub warnings: Vec<Problem>,
    /// Shapes of the plan not reached because the run stopped.
    pub not_reached: usize,
}

impl Report {
    pub fn succeeded(&self) -> bool {
        self.problems.is_empty() && self.notes.is_empty()
    }

    pub fn exit_code(&self) -> i32 {
        if self.succeeded() { 0 } else { 1 }
    }

    pub fn count(&self, status: Status) -> usize {
        self.results
            .iter()
            .filter(|result| result.status == status)
            .count()
    }

    /// Did this run change (or, dry, would it change) anything?
    pub fn changes(&self) -> usize {
        self.results
            .iter()
            .filter(|result| result.status != Status::Unchanged)
            .count()
    }

    pub fn summary_line(&self) -> String {
        let mut parts: Vec<String> = Status::ALL
            .iter()
            .map(|status| format!("{} {}", self.count(*status), status.name()))
            .collect();
        if self.not_reached > 0 {
            parts.push(format!("{} not reached", self.not_reached));
        }
        let prefix = if self.dry_run {
            "dry run, nothing changed: "
        } else {
            ""
        };
        format!("{prefix}{}", parts.join(", "))
    }

    pub fn render_human(&self) -> String {
        let mut out = String::new();
        for result in &self.results {
            let verb = if self.dry_run {
                match result.status {
                    Status::Created => "create",
                    Status::Changed => "change",
                    Status::Unchanged => "unchanged",
                    Status::Withdrawn => "withdraw",
                    Status::Kept => "keep",
                    Status::Failed => "failed",
                }
            } else {
                result.status.name()
            };
            out.push_str(&format!("{verb:<10} {}", escaped(&result.origin.name())));
            if !result.detail.is_empty() {
                out.push_str(&format!(" ({})", escaped(&result.detail)));
            }
            out.push('\n');
        }
        for problem in self.problems.iter().chain(&self.notes) {
            out.push_str(&render_problem(problem));
        }
        for warning in &self.warnings {
            out.push_str(&render_problem_as(Severity::Warning, warning));
        }
        out.push_str(&self.summary_line());
        out.push('\n');
        out
    }

    pub fn to_json(&self) -> Value {
        let summary = self.summary_json();
        json!({
            "format": "mesh-apply-report/1",
            "node": self.node,
            "plan": self.plan_digest,
            "dry_run": self.dry_run,
            "results": self.results.iter().map(|result| {
                let mut value = origin_json(&result.origin);
                if let Value::Object(object) = &mut value {
                    object.insert("status".to_string(), json!(result.status.name()));
                    object.insert("detail".to_string(), json!(result.detail));
                }
                value
            }).collect::<Vec<_>>(),
            "summary": summary,
            "errors": self.problems.iter().map(problem_json).collect::<Vec<_>>(),
            "notes": self.notes.iter().map(problem_json).collect::<Vec<_>>(),
            "warnings": self.warnings.iter().map(problem_json).collect::<Vec<_>>(),
        })
    }

    /// [`Report::to_json`] printed pretty, escaped for the terminal. The results (one
    /// per shape) are written directly rather than built as a tree first; the text is
    /// the same (a test compares).
    pub fn render_json(&self) -> String {
        let mut out = String::with_capacity(256 * (self.results.len() + 4));
        out.push_str("{\n");
        let small = [
            ("dry_run", json!(self.dry_run)),
            (
                "errors",
                json!(self.problems.iter().map(problem_json).collect::<Vec<_>>()),
            ),
            ("format", json!("mesh-apply-report/1")),
            ("node", json!(self.node)),
            (
                "notes",
                json!(self.notes.iter().map(problem_json).collect::<Vec<_>>()),
            ),
            ("plan", json!(self.plan_digest)),
        ];
        for (key, value) in &small {
            write_member(&mut out, key, value);
            out.push_str(",\n");
        }
        out.push_str("  \"results\": ");
        write_results(&mut out, &self.results);
        out.push_str(",\n");
        write_member(&mut out, "summary", &self.summary_json());
        out.push_str(",\n");
        let warnings = json!(self.warnings.iter().map(problem_json).collect::<Vec<_>>());
        write_member(&mut out, "warnings", &warnings);
        out.push_str("\n}");
        let mut text = json_escaped(&out);
        text.push('\n');
        text
    }

    fn summary_json(&self) -> Value {
        let mut summary = serde_json::Map::new();
        for status in Status::ALL {
            summary.insert(status.name().to_string(), json!(self.count(status)));
        }
        summary.insert("not_reached".to_string(), json!(self.not_reached));
        Value::Object(summary)
    }
}

/// `  "key": VALUE` with VALUE pretty-printed at the members' depth.
fn write_member(out: &mut String, key: &str, value: &Value) {
    out.push_str("  ");
    out.push_str(&Value::from(key).to_string());
    out.push_str(": ");
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    out.push_str(&pretty.replace('\n', "\n  "));
}

/// The results array, each result as `serde_json` prints its object (keys sorted).
fn write_results(out: &mut String, results: &[ShapeResult]) {
    if results.is_empty() {
        out.push_str("[]");
        return;
    }
    let text = |value: &str| Value::from(value).to_string();
    out.push_str("[\n");
    for (position, result) in results.iter().enumerate() {
        if position > 0 {
            out.push_str(",\n");
        }
        let origin = &result.origin;
        out.push_str("    {\n      \"detail\": ");
        out.push_str(&text(&result.detail));
        out.push_str(",\n      \"identity\": ");
        out.push_str(&text(&origin.identity));
        out.push_str(",\n      \"kind\": ");
        out.push_str(&text(origin.kind.name()));
        out.push_str(",\n      \"module\": ");
        out.push_str(&origin.module.as_deref().map_or("null".to_string(), text));
        out.push_str(",\n      \"source\": ");
        match &origin.source {
            Some(source) => out.push_str(&format!(
                "{{\n        \"column\": {},\n        \"file\": {},\n        \"line\": {}\n      }}",
                source.column,
                text(&source.file),
                source.line
            )),
            None => out.push_str("null"),
        }
        out.push_str(",\n      \"status\": ");
        out.push_str(&text(result.status.name()));
        out.push_str("\n    }");
    }
    out.push_str("\n  ]");
}

fn origin_json(origin: &Origin) -> Value {
    json!({
        "kind": origin.kind.name(),
        "identity": origin.identity,
        "module": origin.module,
        "source": origin.source.as_ref().map(|source| json!({"file": source.file, "line": source.line, "column": source.column})),
    })
}

fn problem_json(problem: &Problem) -> Value {
    let mut value = json!({
        "code": problem.code.as_str(),
        "title": problem.code.title(),
        "message": problem.message,
        "help": problem.help,
        "shape": Value::Null,
        "step": problem.step,
    });
    if let (Some(origin), Value::Object(object)) = (&problem.origin, &mut value) {
        object.insert("shape".to_string(), origin_json(origin));
    }
    value
}

/// `error[E507]: message`, then where the shape was declared (or the step that failed,
/// when it belongs to no shape), then the help line. Every part is escaped.
pub fn render_problem(problem: &Problem) -> String {
    render_problem_as(Severity::Error, problem)
}

/// A problem printed at a severity (`error`, `warning`): `problems::render`.
pub fn render_problem_as(severity: Severity, problem: &Problem) -> String {
    problems::render(problem, severity, ESCAPE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::Code;

    const HOSTILE: &str = "app\u{1b}[2J\u{7}\r\n0 created\u{9b}31m\u{202e}\u{7f}";

    fn hostile_origin() -> Origin {
        Origin {
            kind: plan::Kind::File,
            identity: format!("/srv/{HOSTILE}"),
            module: Some(HOSTILE.to_string()),
            source: Some(plan::Source {
                file: format!("modules/{HOSTILE}.nix"),
                line: 1,
                column: 1,
            }),
        }
    }

    fn raw_controls(text: &str) -> Vec<char> {
        text.chars()
            .filter(|character| *character != '\n' && ESCAPE.covers(*character))
            .collect()
    }

    #[test]
    fn plan_text_reaches_the_terminal_escaped() {
        let report = Report {
            results: vec![ShapeResult {
                origin: hostile_origin(),
                status: Status::Changed,
                detail: HOSTILE.to_string(),
            }],
            problems: vec![
                Problem::new(Code::InTheWay, format!("in the way at `{HOSTILE}`"), "help")
                    .about(hostile_origin()),
            ],
            ..Report::default()
        };
        let human = report.render_human();
        assert_eq!(raw_controls(&human), Vec::<char>::new(), "{human}");
        assert!(!human.lines().any(|line| line.starts_with("0 created\\")));
        assert!(human.contains("app\\u{1b}[2J\\u{7}\\u{d}\\u{a}0 created\\u{9b}31m\\u{202e}"));
        // the summary is the only line that starts like one
        assert_eq!(
            human
                .lines()
                .filter(|line| line.contains(" created, "))
                .count(),
            1
        );
        let json = report.render_json();
        assert_eq!(raw_controls(&json), Vec::<char>::new(), "{json}");
        let parsed: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["results"][0]["module"], HOSTILE);
        assert_eq!(parsed["errors"][0]["shape"]["module"], HOSTILE);
    }

    #[test]
    fn the_json_report_is_written_as_its_tree_prints() {
        let bare = Origin {
            module: None,
            source: None,
            ..hostile_origin()
        };
        let problem = Problem::new(Code::InTheWay, "in the way", "help").about(hostile_origin());
        for (results, problems, node) in [
            (vec![], vec![], None),
            (
                vec![
                    ShapeResult {
                        origin: hostile_origin(),
                        status: Status::Created,
                        detail: String::new(),
                    },
                    ShapeResult {
                        origin: bare,
                        status: Status::Failed,
                        detail: "why \"quoted\"".to_string(),
                    },
                ],
                vec![problem.clone(), problem.during("flush the written files")],
                Some("db1".to_string()),
            ),
        ] {
            let report = Report {
                node,
                plan_digest: Some("sha256:ab".to_string()),
                results,
                notes: problems.clone(),
                problems,
                not_reached: 2,
                ..Report::default()
            };
            let mut tree = json_escaped(&serde_json::to_string_pretty(&report.to_json()).unwrap());
            tree.push('\n');
            assert_eq!(report.render_json(), tree);
        }
    }

    #[test]
    fn a_step_failure_names_the_step_not_a_shape() {
        let report = Report {
            problems: vec![
                Problem::new(Code::FilesystemFailed, "cannot flush", "help")
                    .during("flush the written files"),
            ],
            ..Report::default()
        };
        let human = report.render_human();
        assert!(
            human.contains("  --> step `flush the written files` (no shape)"),
            "{human}"
        );
        assert_eq!(
            report.to_json()["errors"][0]["step"],
            "flush the written files"
        );
    }
}
