//! Builds through the broker, from the operator's side: `meshc artifacts build
//! --remote` (ask the builder for every declared artifact, record the answers in
//! `mesh.lock`) and `meshc builds` (the builds view: the builder's record of every
//! result, failures included). The building and the record itself are
//! `transport::builder`'s.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use lang::{Diagnostic, codes};
use plan::display::escaped;
use transport::message::{BuildOutcome, BuildResult};
use transport::remote::Answer;

use crate::say;

/// How long `meshc artifacts build --remote` waits for results by default.
pub const DEFAULT_REMOTE_TIMEOUT: Duration = Duration::from_secs(300);

/// Asks the builder for each directory; prints one line per answer (and a failed
/// build's log); returns the digests of the built ones and whether all were built.
pub fn build_remotely(
    directories: &[String],
    url: &str,
    timeout: Duration,
) -> Result<(BTreeMap<String, String>, bool), Box<Diagnostic>> {
    let (answers, ignored) = transport::remote::build(url, directories, timeout)
        .map_err(|error| crate::publish::broker_unavailable(&error))?;
    let mut digests = BTreeMap::new();
    let mut all = true;
    for answer in answers {
        say!("{}", report(&answer));
        match (&answer.result.outcome, &answer.result.digest) {
            (BuildOutcome::Built, Some(digest)) => {
                digests.insert(answer.directory.clone(), digest.clone());
            }
            _ => all = false,
        }
    }
    if ignored > 0 {
        say!("({ignored} result(s) for other requests ignored)");
    }
    Ok((digests, all))
}

/// What `meshc artifacts build --remote` says of one answer: `built DIR -> DIGEST`,
/// or `failed: ...` with the builder's log under it. A failed build is a result
/// reported, as `built` is, and the command's exit status says that one failed: it is
/// not a diagnostic of this program, so it does not pose as an uncoded `error:`.
/// What the builder supplies (its name, the digest, the log) and the repository's
/// directory name are escaped: shown, never obeyed by the terminal.
fn report(answer: &Answer) -> String {
    let result = &answer.result;
    if let (BuildOutcome::Built, Some(digest)) = (&result.outcome, &result.digest) {
        return format!(
            "built {} -> {} on `{}` ({} bytes, request {})",
            escaped(&answer.directory),
            escaped(digest),
            escaped(&result.builder),
            result.size.unwrap_or_default(),
            answer.correlation_id
        );
    }
    let mut text = format!(
        "failed: the build of `{}` on `{}` (request {}):",
        escaped(&answer.directory),
        escaped(&result.builder),
        escaped(&answer.correlation_id)
    );
    for line in result.log.lines() {
        text.push_str("\n  ");
        text.push_str(&escaped(line));
    }
    text
}

/// The builds view: every result in the record of `store`, oldest first, as a
/// table or as JSON lines. The record holds what builders and requests supplied, so
/// both are escaped: the table with `escaped`, the JSON with `json_escaped`.
pub fn render(store: &Path, json: bool) -> Result<String, Box<Diagnostic>> {
    let transport::builder::RecordContents {
        results,
        unreadable,
    } = transport::builder::read_record(store).map_err(|error| {
        Box::new(
            Diagnostic::error(codes::BUILD_RECORD_UNREADABLE, error).with_help(format!(
                "pass `--store DIR`, the directory `mesh-build --store` keeps its archives and its `{}` in (run `meshc builds` on the builder's machine)",
                transport::builder::RECORD_FILE
            )),
        )
    })?;
    for (line, reason) in &unreadable {
        say!(
            "note: line {line} of `{}` cannot be read ({}); a build killed while writing it leaves such a line",
            store.join(transport::builder::RECORD_FILE).display(),
            escaped(reason)
        );
    }
    let mut out = String::new();
    if json {
        for result in &results {
            let line = serde_json::to_string(result).map_err(|error| {
                Box::new(Diagnostic::bug(format!(
                    "a build result cannot be written as JSON: {error}"
                )))
            })?;
            // serde_json escapes C0 controls; DEL, C1 and bidirectional controls too
            out.push_str(&plan::display::json_escaped(&line));
            out.push('\n');
        }
        return Ok(out);
    }
    if results.is_empty() {
        out.push_str(&format!("no builds recorded in `{}`\n", store.display()));
        return Ok(out);
    }
    // the cells are escaped before they are measured: a column is as wide as what
    // the terminal shows, `\u{1b}` and all
    let rows: Vec<[String; 6]> = results.iter().map(row).collect();
    let header = [
        "finished",
        "outcome",
        "directory",
        "result",
        "builder",
        "request",
    ]
    .map(str::to_string);
    let mut widths = header.clone().map(|title| title.len());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let failed = results
        .iter()
        .filter(|result| result.outcome == BuildOutcome::Failed)
        .count();
    out.push_str(&format!("{} build(s), {failed} failed\n", results.len()));
    Ok(out)
}

/// One result's cells, each as the terminal is to show it: what the builder and the
/// request supplied (every field but the outcome) escaped, shown and never obeyed.
fn row(result: &BuildResult) -> [String; 6] {
    let outcome = match &result.digest {
        Some(digest) => digest.as_str(),
        None => result.log.lines().next().unwrap_or_default(),
    };
    [
        escaped(&result.finished).into_owned(),
        result.outcome.name().to_string(),
        result.directory.as_deref().map_or_else(
            || "?".to_string(),
            |directory| escaped(directory).into_owned(),
        ),
        escaped(outcome).into_owned(),
        escaped(&result.builder).into_owned(),
        result
            .correlation_id
            .as_deref()
            .map_or_else(|| "-".to_string(), |id| escaped(id).into_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(outcome: BuildOutcome, digest: Option<&str>, log: &str) -> Answer {
        Answer {
            directory: "modules/web/site".to_string(),
            correlation_id: "c0ffee".to_string(),
            result: BuildResult {
                format: "mesh-build-result/1".to_string(),
                correlation_id: Some("c0ffee".to_string()),
                directory: Some("modules/web/site".to_string()),
                outcome,
                digest: digest.map(str::to_string),
                size: digest.map(|_| 10240),
                log: log.to_string(),
                builder: "b1\u{1b}[2J".to_string(),
                finished: "2026-11-29T21:48:28Z".to_string(),
                seconds: 0.01,
            },
        }
    }

    /// A failed remote build is reported as `built` is, not as a bare `error:` line
    /// (every error of meshc's own is a coded diagnostic), and the builder's name and
    /// log reach the terminal escaped.
    #[test]
    fn a_failed_remote_build_is_a_report_line_not_a_bare_error() {
        let failed = report(&answer(
            BuildOutcome::Failed,
            None,
            "cannot read `modules/web/site`\nerror: \u{1b}[31mno such file\r",
        ));
        assert_eq!(
            failed,
            "failed: the build of `modules/web/site` on `b1\\u{1b}[2J` (request c0ffee):\n  \
             cannot read `modules/web/site`\n  error: \\u{1b}[31mno such file\\u{d}"
        );
        assert!(
            !failed.lines().any(|line| line.starts_with("error")),
            "{failed}"
        );
        let built = report(&answer(BuildOutcome::Built, Some("sha256:ab"), "ok"));
        assert_eq!(
            built,
            "built modules/web/site -> sha256:ab on `b1\\u{1b}[2J` (10240 bytes, request c0ffee)"
        );
    }

    /// The directory comes from the repository, and a repository may name one with
    /// an escape sequence: both lines show it escaped. Before, it was printed raw.
    #[test]
    fn a_directory_named_with_an_escape_sequence_is_reported_escaped() {
        for (outcome, digest) in [
            (BuildOutcome::Built, Some("sha256:ab")),
            (BuildOutcome::Failed, None),
        ] {
            let mut answer = answer(outcome, digest, "log");
            answer.directory = "modules/web/s\u{1b}[2J\nite".to_string();
            let line = report(&answer);
            assert!(line.contains("modules/web/s\\u{1b}[2J\\u{a}ite"), "{line}");
            assert!(!line.contains('\u{1b}'), "{line:?}");
        }
    }

    /// What a hostile builder or request can put in a field: an escape sequence that
    /// clears the screen, a line break that fakes a line, a right-to-left override.
    const HOSTILE: &str = "\u{1b}[2J\n\u{202E}";

    fn hostile(field: &str) -> String {
        format!("{field}{HOSTILE}")
    }

    fn hostile_result(outcome: BuildOutcome) -> BuildResult {
        let built = outcome == BuildOutcome::Built;
        BuildResult {
            format: transport::message::BUILD_RESULT_FORMAT.to_string(),
            correlation_id: Some(hostile("c0ffee")),
            directory: Some(hostile("modules/web/site")),
            outcome,
            digest: built.then(|| hostile("sha256:ab")),
            size: built.then_some(10240),
            // the first line is shown: the break in `HOSTILE` ends it
            log: format!("\u{1b}[2J\u{202E}cannot build\r{HOSTILE}second line"),
            builder: hostile("b1"),
            finished: hostile("2026-11-29T21:48:28Z"),
            seconds: 0.01,
        }
    }

    /// `meshc builds` shows every field of the record escaped, as a table and as JSON:
    /// the builder's name, the directory, the request, the digest, the first log line
    /// and the time come from a builder or a request and must not reach the terminal
    /// as an escape sequence, a line break or a bidirectional override. The columns
    /// stay aligned on the escaped text.
    #[test]
    fn builds_shows_what_builders_and_requests_supplied_escaped() {
        let store = tempfile::tempdir().expect("temporary directory");
        let results = [
            hostile_result(BuildOutcome::Built),
            hostile_result(BuildOutcome::Failed),
        ];
        let mut record = String::new();
        for result in &results {
            record.push_str(&serde_json::to_string(result).expect("JSON"));
            record.push('\n');
        }
        std::fs::write(store.path().join(transport::builder::RECORD_FILE), record)
            .expect("record written");
        let raw = |text: &str| {
            text.chars()
                .any(|c| matches!(c, '\u{1b}' | '\u{202E}' | '\r'))
        };

        let table = render(store.path(), false).expect("table");
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "header, two rows, summary:\n{table}");
        assert!(!raw(&table), "{table:?}");
        let shown = "\\u{1b}[2J\\u{a}\\u{202e}";
        for field in [
            "2026-11-29T21:48:28Z",
            "modules/web/site",
            "sha256:ab",
            "b1",
            "c0ffee",
        ] {
            assert_eq!(
                table.matches(&format!("{field}{shown}")).count(),
                if field == "sha256:ab" { 1 } else { 2 },
                "`{field}` escaped in {table}"
            );
        }
        // the failed build's result is its log's first line, escaped
        assert!(
            lines[2].contains("  \\u{1b}[2J\\u{202e}cannot build\\u{d}\\u{1b}[2J  "),
            "{table}"
        );
        assert!(!table.contains("second line"), "{table}");
        // every column starts where its title does, however much escaping lengthened
        // the cells before it
        let column = |line: &str, text: &str| line.find(text).map(|at| line[..at].chars().count());
        for (title, text) in [
            ("outcome", "built"),
            ("directory", "modules/"),
            ("builder", "b1"),
            ("request", "c0ffee"),
        ] {
            let title_at = column(lines[0], title);
            assert_eq!(column(lines[1], text), title_at, "`{title}`:\n{table}");
            let text = if text == "built" { "failed" } else { text };
            assert_eq!(column(lines[2], text), title_at, "`{title}`:\n{table}");
        }

        let json = render(store.path(), true).expect("JSON");
        assert_eq!(json.lines().count(), 2, "{json}");
        assert!(!raw(&json), "{json:?}");
        for (line, result) in json.lines().zip(&results) {
            assert!(line.contains("\\u001b[2J\\n\\u202e"), "{line}");
            let read: BuildResult = serde_json::from_str(line).expect("the same JSON");
            assert_eq!(&read, result);
        }
    }
}
