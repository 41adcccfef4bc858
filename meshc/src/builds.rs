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
/// What the builder supplies (its name, the digest, the log) is escaped: shown,
/// never obeyed by the terminal.
fn report(answer: &Answer) -> String {
    let result = &answer.result;
    if let (BuildOutcome::Built, Some(digest)) = (&result.outcome, &result.digest) {
        return format!(
            "built {} -> {} on `{}` ({} bytes, request {})",
            answer.directory,
            escaped(digest),
            escaped(&result.builder),
            result.size.unwrap_or_default(),
            answer.correlation_id
        );
    }
    let mut text = format!(
        "failed: the build of `{}` on `{}` (request {}):",
        answer.directory,
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
/// table or as JSON lines.
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
            "note: line {line} of `{}` cannot be read ({reason}); a build killed while writing it leaves such a line",
            store.join(transport::builder::RECORD_FILE).display()
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
            out.push_str(&line);
            out.push('\n');
        }
        return Ok(out);
    }
    if results.is_empty() {
        out.push_str(&format!("no builds recorded in `{}`\n", store.display()));
        return Ok(out);
    }
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

fn row(result: &BuildResult) -> [String; 6] {
    let outcome = match &result.digest {
        Some(digest) => digest.clone(),
        None => result.log.lines().next().unwrap_or_default().to_string(),
    };
    [
        result.finished.clone(),
        result.outcome.name().to_string(),
        result.directory.clone().unwrap_or_else(|| "?".to_string()),
        outcome,
        result.builder.clone(),
        result
            .correlation_id
            .clone()
            .unwrap_or_else(|| "-".to_string()),
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
}
